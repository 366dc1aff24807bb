//! `segcut batch`: flags, device selection, and progress (a bar on a terminal, plain periodic
//! lines otherwise) around the library's `batch::run_batch`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use segcut::batch::manifest::{self, Job};
use segcut::batch::summary::{merge_files, Row, Status};
use segcut::batch::{run_batch, BatchOptions, Device, Observer, Shard};

/// `--workers-per-gpu`'s help, its default range taken from the library.
fn workers_help() -> String {
    let r = BatchOptions::WORKERS_PER_GPU;
    format!(
        "Solver workers per GPU, each with its own streams and kept buffers, so that several \
         jobs are in flight on every GPU (default: the cores shared out over the GPUs, {} to {} \
         each)",
        r.start(),
        r.end()
    )
}

/// `--pack`'s help, its defaults taken from the library.
fn pack_help() -> String {
    format!(
        "Jobs packed into one solve (1: none): max-flow grids, stereo pairs of one size and \
         segmentation photos of one width, with the same options, on a GPU (their α-expansions \
         or GrabCut rounds in lockstep) [default: {} stereo pairs and {} photos on a GPU, \
         max-flow grids unpacked]",
        segcut::batch::DEFAULT_STEREO_PACK,
        segcut::batch::DEFAULT_SEGMENT_PACK
    )
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Jobs: a manifest (`.csv`, `.jsonl`), a folder (`images/` + `seeds/`, `left/` + `right/`,
    /// or `.max` files), or `.max` files and globs (`data/*.max`).
    #[arg(required_unless_present = "merge_summaries")]
    inputs: Vec<PathBuf>,
    /// Output folder (with --merge-summaries: the merged summary's path without extension).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    out: PathBuf,
    /// Output name template: `{id}` (job id), `{kind}`; default `{id}.png` for masks, `{id}.cut`
    /// for max-flow.
    #[arg(long, value_name = "TEMPLATE")]
    name: Option<String>,
    /// The seed folder beside `images/` in a folder of jobs.
    #[arg(long, value_name = "NAME", default_value = "seeds")]
    seeds_dir: String,
    /// GPUs for the solver workers: `all` (every visible one; the CPU when there is none),
    /// `none`, ordinals (`1` is the second GPU, `0,2`), or `first:N` (the first N).
    #[arg(long, default_value = "all")]
    gpus: String,
    /// Solver workers per GPU, each with its own streams and kept buffers, so that several jobs
    /// are in flight on every GPU.
    #[arg(long, value_name = "N", help = workers_help())]
    workers_per_gpu: Option<usize>,
    /// CPU solver workers when no GPU is used (default: one per core).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Decode and write workers (each).
    #[arg(long, value_name = "N")]
    io_threads: Option<usize>,
    /// Jobs packed into one solve (1: none): max-flow grids, stereo pairs of one size and
    /// segmentation photos of one width, with the same options, on a GPU.
    #[arg(long, value_name = "N", help = pack_help())]
    pack: Option<usize>,
    /// This process's share: `I/N` (0-based, strided by job order) or `auto` (Slurm array,
    /// Kubernetes Indexed Job).
    #[arg(long, value_name = "I/N|auto")]
    shard: Option<String>,
    /// Redo jobs whose outputs exist.
    #[arg(long)]
    force: bool,
    /// Stop starting jobs after the first failure.
    #[arg(long)]
    fail_fast: bool,
    /// No progress output.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    log_every: f64,
    /// The summary's path without extension (default OUT/summary, OUT/summary.I-of-N).
    #[arg(long, value_name = "PATH")]
    summary: Option<PathBuf>,
    /// Merge these summaries (CSV or JSONL) into `-o PATH`.csv/.jsonl and exit.
    #[arg(long, value_name = "FILES", num_args = 1..)]
    merge_summaries: Vec<PathBuf>,
    /// Stereo: disparities searched per pair (a manifest's `disparities` column overrides it).
    #[arg(long, value_name = "N", default_value_t = segcut::stereo::StereoOptions::default().num_disparities)]
    disparities: usize,
    /// Skip the certificate check of each cut.
    #[arg(long)]
    no_verify: bool,
    /// Testing hook: N stand-in devices that run the CPU solvers (`fake:i` in the summary).
    #[arg(long, value_name = "N", hide = true)]
    fake_devices: Option<usize>,
    #[command(flatten)]
    energy: super::segment::EnergyArgs,
}

/// `auto`'s GPU threshold in a batch on GPUs (see `run`).
pub(crate) const BATCH_MIN_GPU_NODES: usize = 1 << 14;

/// The devices `--gpus` names.
fn devices(spec: &str) -> Result<Vec<usize>> {
    let visible = segcut::cuda::device_count();
    let usable = || segcut::cuda::gpu_unavailable_reason().is_none();
    match spec.trim() {
        "none" | "cpu" => Ok(vec![]),
        "all" => Ok(if usable() {
            (0..visible).collect()
        } else {
            vec![]
        }),
        s if s.starts_with("first:") => {
            let n: usize = s["first:".len()..]
                .parse()
                .with_context(|| format!("--gpus {s}: expected first:N"))?;
            if n > visible {
                bail!("--gpus {s}: only {visible} GPU(s) visible");
            }
            Ok((0..n).collect())
        }
        s => s
            .split(',')
            .map(|t| {
                let i: usize = t
                    .trim()
                    .parse()
                    .with_context(|| format!("--gpus: '{t}' is not a device ordinal"))?;
                if i >= visible {
                    bail!("--gpus: no GPU {i} ({visible} visible after CUDA_VISIBLE_DEVICES)");
                }
                Ok(i)
            })
            .collect(),
    }
}

fn collect_jobs(args: &Args) -> Result<Vec<Job>> {
    let mut jobs = Vec::new();
    let mut loose = Vec::new();
    for input in &args.inputs {
        let name = input.to_string_lossy();
        if input.is_dir() {
            jobs.extend(manifest::from_dir(input, Some(&args.seeds_dir))?);
        } else if [".csv", ".jsonl", ".ndjson"]
            .iter()
            .any(|e| name.to_ascii_lowercase().ends_with(e))
        {
            jobs.extend(manifest::read_manifest(input)?);
        } else {
            let files = manifest::glob(input)?;
            if files.is_empty() {
                bail!("{name}: matches no file");
            }
            loose.extend(files);
        }
    }
    if !loose.is_empty() {
        jobs.extend(manifest::max_jobs(loose)?);
    }
    let mut seen = std::collections::HashMap::new();
    for j in &jobs {
        if let Some(o) = seen.insert(j.id.clone(), j.origin.clone()) {
            bail!(
                "job id '{}' comes from both {o} and {}; outputs would collide",
                j.id,
                j.origin
            );
        }
    }
    Ok(jobs)
}

/// Progress: a bar on a terminal, a line every `every` otherwise, nothing with `--quiet`.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    every: Duration,
    state: Mutex<(usize, usize, Instant, Instant)>, // done, failed, start, last line
    total: Mutex<usize>,
    quiet: bool,
}

impl Observer for Progress {
    fn start(&self, total: usize, skipped: usize) {
        *self.total.lock().unwrap() = total;
        if let Some(b) = &self.bar {
            b.set_length(total as u64);
        }
        if !self.quiet && skipped > 0 {
            self.say(&format!(
                "segcut batch: {skipped} of {total} jobs already done (outputs exist; --force redoes them)"
            ));
        }
    }

    fn finished(&self, row: &Row) {
        let mut s = self.state.lock().unwrap();
        s.0 += 1;
        if row.status == Status::Failed {
            s.1 += 1;
            if !self.quiet {
                self.say(&format!(
                    "segcut batch: job {} failed: {}",
                    row.job, row.error
                ));
            }
        }
        if let Some(b) = &self.bar {
            b.inc(1);
            b.set_message(format!("{} failed", s.1));
        } else if !self.quiet && s.3.elapsed() >= self.every {
            s.3 = Instant::now();
            let total = *self.total.lock().unwrap();
            let secs = s.2.elapsed().as_secs_f64();
            let rate = s.0 as f64 / secs.max(1e-9);
            let eta = (total - s.0) as f64 / rate.max(1e-9);
            eprintln!(
                "segcut batch: {}/{total} jobs, {} failed, {rate:.1} jobs/s, ETA {eta:.0} s",
                s.0, s.1
            );
        }
    }
}

impl Progress {
    fn say(&self, text: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{text}")),
            None => eprintln!("{text}"),
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    if !args.merge_summaries.is_empty() {
        let rows = merge_files(&args.merge_summaries, &args.out)?;
        let failed = rows.iter().filter(|r| r.status == Status::Failed).count();
        if !args.quiet {
            eprintln!(
                "segcut batch: merged {} summaries: {} jobs, {failed} failed → {}.csv, .jsonl",
                args.merge_summaries.len(),
                rows.len(),
                args.out.display()
            );
        }
        return Ok(if failed > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    let jobs = collect_jobs(&args)?;
    let mut opts = BatchOptions::new(&args.out);
    // The manifests are read too: no output may replace one.
    opts.inputs = args
        .inputs
        .iter()
        .filter(|p| p.is_file())
        .cloned()
        .collect();
    opts.template = args.name.clone();
    opts.defaults.segment = args.energy.options()?;
    opts.defaults.seeds = args.energy.0.seed_options();
    opts.defaults.segment.verify = !args.no_verify;
    opts.defaults.solve.solver = opts.defaults.segment.solver;
    opts.defaults.solve.auto = opts.defaults.segment.auto;
    opts.defaults.solve.verify = !args.no_verify;
    // Stereo keeps its own λ (the segmentation flags' λ is in other units); solver and checks
    // are shared.
    opts.defaults.stereo.num_disparities = args.disparities.max(1);
    opts.defaults.stereo.expansion.solve.solver = opts.defaults.segment.solver;
    opts.defaults.stereo.expansion.solve.auto = opts.defaults.segment.auto;
    opts.defaults.stereo.expansion.solve.verify = !args.no_verify;
    opts.pack = args.pack.map(|n| n.max(1));
    opts.force = args.force;
    opts.fail_fast = args.fail_fast;
    opts.summary = args.summary.clone();
    if let Some(n) = args.io_threads {
        opts.io_threads = n.max(1);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(n) = args.fake_devices {
        opts.devices = (0..n).map(Device::Fake).collect();
        opts.workers_per_device = args.workers_per_gpu.unwrap_or(2);
    } else {
        let gpus = devices(&args.gpus)?;
        if gpus.is_empty() {
            opts.devices = vec![Device::Cpu; args.threads.unwrap_or(cores).max(1)];
            opts.workers_per_device = 1;
            opts.defaults.segment.auto.use_gpu = false;
            opts.defaults.solve.auto.use_gpu = false;
            opts.defaults.stereo.expansion.solve.auto.use_gpu = false;
        } else {
            let share = BatchOptions::workers_per_gpu(gpus.len());
            opts.devices = gpus.into_iter().map(Device::Cuda).collect();
            opts.workers_per_device = args.workers_per_gpu.unwrap_or(share).max(1);
            // A batch pays the GPU's start-up once, so `auto` may send smaller graphs to it:
            // down to the measured crossover with BK (16 K nodes, docs/benchmarks.md), unless
            // --gpu-min-nodes was given.
            // (Given, it is kept even when it equals the single-image default.)
            if !args.energy.0.is_given("gpu-min-nodes") {
                for auto in [
                    &mut opts.defaults.segment.auto,
                    &mut opts.defaults.solve.auto,
                    &mut opts.defaults.stereo.expansion.solve.auto,
                ] {
                    auto.min_gpu_nodes = BATCH_MIN_GPU_NODES;
                }
            }
        }
    }
    opts.shard = match args.shard.as_deref() {
        None => Shard::default(),
        Some("auto") => Shard::from_env(|k| std::env::var(k).ok())?,
        Some(s) => s.parse()?,
    };
    let tty = std::io::stderr().is_terminal();
    let progress = Progress {
        bar: (tty && !args.quiet).then(|| {
            super::bar(
                0,
                "{elapsed_precise} [{bar:30}] {pos}/{len} jobs {per_sec} ETA {eta} {msg}",
            )
        }),
        every: Duration::from_secs_f64(args.log_every.max(0.0)),
        state: Mutex::new((0, 0, Instant::now(), Instant::now())),
        total: Mutex::new(0),
        quiet: args.quiet,
    };
    if !args.quiet {
        let devs: Vec<String> = opts.devices.iter().map(|d| d.to_string()).collect();
        let shard = if opts.shard.count > 1 {
            format!(", shard {}/{}", opts.shard.index, opts.shard.count)
        } else {
            String::new()
        };
        let each = if opts.devices.iter().all(|d| *d == Device::Cpu) {
            String::new()
        } else {
            format!(" ({} solver workers each)", opts.workers_per_device)
        };
        eprintln!(
            "segcut batch: {} jobs{shard} on {}{each}",
            jobs.len(),
            summarise_devices(&devs),
        );
    }
    let report = run_batch(jobs, &opts, &progress)?;
    if let Some(b) = &progress.bar {
        b.finish_and_clear();
    }
    if !args.quiet {
        let secs = report.elapsed.as_secs_f64();
        let ran = report.ok + report.failed;
        eprintln!(
            "segcut batch: {} ok, {} failed, {} skipped{} in {secs:.2} s ({:.1} jobs/s); summary {}",
            report.ok,
            report.failed,
            report.skipped,
            if report.not_started > 0 {
                format!(", {} not started (--fail-fast)", report.not_started)
            } else {
                String::new()
            },
            ran as f64 / secs.max(1e-9),
            report
                .summary
                .first()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
    }
    Ok(if report.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn summarise_devices(devs: &[String]) -> String {
    let cpu = devs.iter().filter(|d| *d == "cpu").count();
    if cpu == devs.len() {
        format!("the CPU ({cpu} workers)")
    } else {
        devs.join(", ")
    }
}
