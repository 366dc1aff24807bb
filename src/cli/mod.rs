//! Argument parsing: clap turns the command line into typed options, and each subcommand's module
//! hands them to the library. Nothing below `src/cli/` is used by the library.

mod bench;
mod eval;
mod gen;
mod maxflow;
mod segment;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exact graph cuts for images, volumes and max-flow benchmarks.
#[derive(Parser, Debug)]
#[command(name = "segcut", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Segment an image or volume from seeds (the default: `segcut IMAGE --seeds S -o MASK`).
    Segment(segment::Args),
    /// Score masks against ground truth, or segment and score a whole dataset.
    Eval(eval::Args),
    /// Solve DIMACS / Waterloo `.max` max-flow instances (plain, .gz, .bz2, or .tbz2/.tar.* archives).
    Maxflow(maxflow::Args),
    /// Generate deterministic instances (vision grids, genrmf, Washington RLG) as `.max` files.
    #[command(subcommand)]
    Gen(gen::Command),
    /// Time solvers on a named suite of generated instances, verifying every result.
    Bench(bench::Args),
}

/// Runs the command line; errors are printed with their causes and give exit code 2, wrong or
/// unverified answers exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse_from(with_default_subcommand(std::env::args_os().collect()));
    let result = match cli.command {
        Command::Segment(args) => segment::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Maxflow(args) => maxflow::run(args),
        Command::Gen(cmd) => gen::run(cmd),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("segcut: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `segcut IMAGE ...` means `segcut segment IMAGE ...`: insert the subcommand when the first
/// argument is neither a subcommand nor a top-level flag (help, version).
fn with_default_subcommand(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let Some(first) = args.get(1).and_then(|a| a.to_str()) else {
        return args;
    };
    let cmd = Cli::command();
    let is_subcommand = first == "help"
        || cmd
            .get_subcommands()
            .any(|s| s.get_name() == first || s.get_all_aliases().any(|a| a == first));
    let top_flag = matches!(first, "-h" | "--help" | "-V" | "--version");
    if !is_subcommand && !top_flag {
        args.insert(1, "segment".into());
    }
    args
}

/// A progress bar on stderr that stays hidden when stderr is not a terminal.
fn bar(len: u64, template: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr_with_hz(8),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        pb.set_style(style);
    }
    pb
}

/// A clap parser for solver names (`auto`, `bk`, ...), listing them in the help.
fn solver_parser() -> impl clap::builder::TypedValueParser<Value = segcut::maxflow::SolverKind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(segcut::maxflow::SolverKind::names())
        .map(|s| s.parse().expect("a listed name"))
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
