//! The `segcut` command line: a thin front end over the library (see `src/cli/`).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
