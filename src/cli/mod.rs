//! Argument parsing: clap turns the command line into typed options, and each subcommand's module
//! hands them to the library. Nothing below `src/cli/` is used by the library.

mod batch;
mod bench;
mod convert;
mod cv;
mod eval;
mod gen;
mod maxflow;
mod options;
mod pipeline_bench;
mod segment;
mod serve;
mod startup;
mod stereo;

use anyhow::Context;
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
    #[command(after_help = SEGMENT_EXAMPLES)]
    Segment(segment::Args),
    /// Score masks against ground truth, or segment and score a whole dataset.
    #[command(after_help = EVAL_EXAMPLES)]
    Eval(eval::Args),
    /// Solve DIMACS / Waterloo `.max` max-flow instances (plain, .gz, .bz2, or .tbz2/.tar.* archives).
    #[command(after_help = MAXFLOW_EXAMPLES)]
    Maxflow(maxflow::Args),
    /// Generate deterministic instances (vision grids, genrmf, Washington RLG) as `.max` files.
    #[command(subcommand, after_help = GEN_EXAMPLES)]
    Gen(gen::Command),
    /// Run many segmentation, stereo and max-flow jobs: manifests, folders, resume, shards.
    #[command(after_help = BATCH_EXAMPLES)]
    Batch(batch::Args),
    /// Time solvers on a named suite of generated instances, verifying every result.
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(bench::Args),
    /// Disparity map of a rectified stereo pair by α-expansion graph cuts.
    #[command(after_help = STEREO_EXAMPLES)]
    Stereo(stereo::Args),
    /// Score disparity maps (Middlebury v2 bad pixels), or run and score scene folders.
    #[command(name = "stereo-eval", after_help = STEREO_EXAMPLES)]
    StereoEval(stereo::EvalArgs),
    /// Multi-label segmentation: an image and scribbles in several colours → a label map.
    #[command(after_help = STEREO_EXAMPLES)]
    Multilabel(stereo::MultilabelArgs),
    /// Convert a graph between `.max` (plain, .gz, .bz2) and the binary `.sgb` (docs/dimacs.md).
    #[command(after_help = CONVERT_EXAMPLES)]
    Convert(convert::Args),
    /// A resident HTTP server: segmentations, interactive sessions and a scribble page at /.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(serve::Args),
}

const SERVE_EXAMPLES: &str = "Examples:
  segcut serve                                   # http://127.0.0.1:8080/ (loopback only)
  segcut serve --addr 0.0.0.0:8080 --token \"$(openssl rand -hex 16)\" --solver bk
  curl -F image=@photo.png -F seeds=@seeds.png http://127.0.0.1:8080/api/segment -o mask.png";

const STEREO_EXAMPLES: &str = "Examples:
  segcut stereo imL.png imR.png -n 16 -o disp.png --color disp-color.png
  segcut stereo imL.png imR.png --max-disparity 59 -o disp.pfm --stats-json stats.json --solver cuda-grid
  segcut stereo imL.png imR.png -n 16 -o d.png --export-graphs graphs/ --export-name BVZ-tsukuba
  segcut stereo-eval ../shared/data/stereo --runs 5 --json scores.json --solver bk
  segcut stereo-eval --gt ../shared/data/stereo/tsukuba disp.png --scale 16
  segcut multilabel photo.png --seeds scribbles.png --colors ff0000,00ff00,0000ff -o labels.png";

const CONVERT_EXAMPLES: &str = "Examples:
  segcut convert big.max big.sgb       # then: segcut maxflow big.sgb (loads at disk speed)
  segcut convert big.sgb big.max.gz";

const SEGMENT_EXAMPLES: &str = "Examples:
  segcut photo.jpg --seeds scribbles.png -o mask.png
  segcut photo.jpg --rect 40,30,200,150 -o mask.png --overlay overlay.png
  segcut scan.nii.gz --seeds labels.nii.gz --seed-format labels -o mask.nii.gz
  segcut photo.jpg --seeds s.png -o m.png --stats-json stats.json --solver bk
  segcut segment ./eval --seeds s.png -o m.png   # a file named like a subcommand";

const EVAL_EXAMPLES: &str = "Examples:
  segcut eval --gt gt.png mask.png
  segcut eval --gt ground-truth/ masks/
  segcut eval --dataset ../shared/data/segmentation/grabcut-bsds-dev --json scores.json";

const MAXFLOW_EXAMPLES: &str = "Examples:
  segcut maxflow BVZ-tsukuba.tbz2 --verify
  segcut maxflow graph.max --solver bk --json
  segcut maxflow graph.max --cut graph.cut --flows graph.flow
  segcut maxflow big.max --explain        # how the file was read and which solver ran, and why";

const GEN_EXAMPLES: &str = "Examples:
  segcut gen grid 2d:1024x1024:n4:c10:s1 -o grid.max
  segcut gen grid 3d:128x128x128:n6:c100:s7 -o vol.max.gz
  segcut gen genrmf --a 16 --b 64 -o rmf.max
  segcut gen washington --width 512 --levels 1024 -o rlg.max";

const BATCH_EXAMPLES: &str = "Examples:
  segcut batch photos/ -o masks/                  # photos/images/*.jpg with photos/seeds/*.png
  segcut batch jobs.csv -o out/ --gpus all        # a manifest; one solver worker set per GPU
  segcut batch 'graphs/*.max' -o cuts/ --pack 8   # max-flow, 8 grids per packed solve
  segcut batch jobs.csv -o out/ --shard auto      # a Slurm array task / Kubernetes Indexed Job
  segcut batch --merge-summaries out/summary.*.csv -o out/summary";

const BENCH_EXAMPLES: &str = "Examples:
  segcut bench --suite quick
  segcut bench --suite cpu --solvers bk,dinic --runs 3 --json bench.json
  segcut bench --suite standard --solvers bk,cuda-grid     # needs a GPU for cuda-grid
  segcut bench --instances 2d:2048x2048:n4:c100:s1 --solvers bk,auto
  segcut bench --startup --runs 5     # process start to first GPU kernel, cold and warm cache";

/// Runs the command line; errors are printed with their causes and give exit code 2, wrong or
/// unverified answers exit code 1.
/// When `main` began: the origin of `--stats-json`'s per-phase times (`startup` is the time
/// from here to the subcommand's start).
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// When the process's `main` began (now, if it was never recorded).
fn started() -> std::time::Instant {
    *STARTED.get_or_init(std::time::Instant::now)
}

pub fn main() -> ExitCode {
    started();
    exit_on_stdout_errors();
    let args = match with_default_subcommand(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("segcut: error: {msg}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Segment(args) => segment::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Maxflow(args) => maxflow::run(args),
        Command::Gen(cmd) => gen::run(cmd),
        Command::Batch(args) => batch::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Stereo(args) => stereo::run(args),
        Command::StereoEval(args) => stereo::run_eval(args),
        Command::Multilabel(args) => stereo::run_multilabel(args),
        Command::Convert(args) => convert::run(args),
        Command::Serve(args) => serve::run(args),
    };
    // Printed results still in the buffer: a full disk or a closed pipe is a failure too.
    let result = result.and_then(|code| {
        std::io::Write::flush(&mut std::io::stdout())
            .context("cannot write the standard output")?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("segcut: error: {}", error_chain(&e));
            ExitCode::from(2)
        }
    }
}

/// `println!` panics when the standard output fails (a full disk, `> /dev/full`): that is an
/// error of the run, exit status 2 with the message, not a panic.
fn exit_on_stdout_errors() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if msg.starts_with("failed printing to stdout") {
            eprintln!("segcut: error: {msg}");
            std::process::exit(2);
        }
        default(info)
    }));
}

/// The error and its causes, `: `-separated, leaving out a cause whose text the message already
/// shows (segcut's I/O errors include their OS error, which is also their source).
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if text.contains(&c) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&c);
    }
    text
}

/// `segcut IMAGE ...` means `segcut segment IMAGE ...`: insert the subcommand when the first
/// argument is neither a subcommand nor a top-level flag (help, version). A first argument that
/// is no file and looks like a mistyped subcommand is an error that names the subcommand meant.
/// Subcommand names win over files of the same name: `segcut ./eval ...` or `segcut segment eval`
/// segments a file called `eval`.
fn with_default_subcommand(
    mut args: Vec<std::ffi::OsString>,
) -> Result<Vec<std::ffi::OsString>, String> {
    use clap::CommandFactory;
    let Some(first) = args.get(1).and_then(|a| a.to_str()) else {
        return Ok(args);
    };
    let cmd = Cli::command();
    let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
    let is_subcommand = first == "help" || names.contains(&first);
    if is_subcommand || first.starts_with('-') {
        return Ok(args);
    }
    let is_file = std::path::Path::new(first).exists();
    if !is_file && !first.contains(['.', '/', '\\']) {
        if let Some(near) = names.iter().find(|n| edit_distance(first, n) <= 2) {
            return Err(format!(
                "unknown subcommand '{first}'; did you mean '{near}'? (to segment a file of \
                 that name, write ./{first})"
            ));
        }
    }
    args.insert(1, "segment".into());
    Ok(args)
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != cb) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
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

/// The library's progress reports shown on an indicatif bar.
struct Bar(indicatif::ProgressBar);

impl segcut::progress::Progress for Bar {
    fn start(&self, total: Option<u64>) {
        if let Some(t) = total {
            self.0.set_length(t);
        }
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
    fn note(&self, text: &str) {
        self.0.suspend(|| eprintln!("segcut: {text}"));
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
