//! `segcut bench`: a table of solve times on a named suite, every result verified.

use anyhow::Result;
use segcut::bench::{self, BenchInstance, BenchOptions, BenchRecord, Event, SuiteOptions};
use segcut::maxflow::cuda::GridTuning;
use segcut::maxflow::{AutoPolicy, SolverKind};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Named suite: tiny, quick, cpu, standard, generic, generic-large, photo, product or crossover (see
    /// docs/benchmarks.md).
    #[arg(long, default_value = "quick", value_parser = clap::builder::PossibleValuesParser::new(bench::SUITES))]
    suite: String,
    /// Instances to run instead of a suite, as spec texts (e.g. `2d:1024x1024:n4:c10:s1`,
    /// `genrmf-long:20:s1`, `rlg:64x64:s2`, `sparse:1048576:d6`; see docs/generators.md);
    /// `csr:SPEC` solves a grid as a general graph.
    #[arg(long, value_delimiter = ',', value_name = "SPEC")]
    instances: Vec<BenchInstance>,
    /// Solvers, comma-separated; speed-ups are relative to the first. Default: bk; for the
    /// generic suite bk,cuda-csr,cuda-grid; for generic-large cuda-csr,cuda-grid (BK would take
    /// hours on its GENRMF and RLG graphs).
    #[arg(long, value_delimiter = ',', value_parser = super::solver_parser())]
    solvers: Vec<SolverKind>,
    /// With `auto` among the solvers: graphs with fewer nodes are solved on the CPU.
    #[arg(long, value_name = "NODES", default_value_t = segcut::maxflow::AUTO_MIN_GPU_NODES)]
    gpu_min_nodes: usize,
    /// The GrabCut-BSDS dev set, for the photo suite and the 4K photos of the standard suite
    /// (the default is relative to the working directory: run from the repository's root).
    #[arg(long, value_name = "DIR", default_value = bench::DEFAULT_PHOTO_DATA)]
    data: PathBuf,
    /// Timed runs per solver and instance (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Skip instances with more nodes than this.
    #[arg(long)]
    max_nodes: Option<usize>,
    /// Run only the suite's instances whose name contains one of these texts (comma-separated),
    /// e.g. `--only photo:124084,n26`.
    #[arg(long, value_delimiter = ',', value_name = "TEXT")]
    only: Vec<String>,
    /// Also write every instance as a DIMACS .max file into this folder (to run other solvers on
    /// the same graphs).
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
    /// Also write every record as a JSON array to this file.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// The tuning of cuda-grid, for experiments: KEY=VALUE pairs, the keys as the default below
    /// shows them (docs/gpu.md, "Tuning"); unnamed keys keep their defaults.
    #[arg(long, value_name = "KEY=VALUE,...", default_value_t = GridTuning::default())]
    grid_tune: GridTuning,
    /// Instead of a suite: time fresh processes from start to their first GPU kernel, --runs of
    /// them with an empty kernel cache and as many with a filled one.
    #[arg(long)]
    startup: bool,
    /// Instead of a suite: GrabCut rounds 1..5 from scratch against warm-started rounds on the
    /// dev photos (--data, --only, --runs; --solvers, default bk), with the time of every
    /// segmentation phase, cold and warm.
    #[arg(long)]
    warm: bool,
    /// With --warm: upscale the photos (Catmull–Rom) to this width first, e.g. 3840 for 4K;
    /// with --pipeline the width of its "4K" photos (default 3840).
    #[arg(long, value_name = "WIDTH")]
    upscale: Option<usize>,
    /// Instead of a suite: what a user waits for around the cut (issue 22), per phase: 4K file
    /// → file per process, 4K and 481×321 in memory on a warm session, batch jobs/s on one and
    /// two GPUs and on the CPU; --solvers (default auto,bk), --runs, --data, --only (file,
    /// memory, small, batch, or a photo).
    #[arg(long)]
    pipeline: bool,
    /// With --pipeline: jobs in each batch (the dev pairs repeated).
    #[arg(long, value_name = "N", default_value_t = 1014)]
    batch_jobs: usize,
    /// With --pipeline: a segmentation option for every case, as KEY=VALUE (any segmentation
    /// flag, docs/options.md, e.g. `--set refit-steps=0`); repeat for more. Compares a setting
    /// with the defaults in the same call.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "pipeline")]
    set: Vec<String>,
    /// With --warm: instead of whole segmentations, each round's graph solved by cuda-grid
    /// from scratch and warm-started, with the solver's profile, for the default tuning, for
    /// --grid-tune's, and for both with the local warm relabel switched.
    #[arg(long, requires = "warm")]
    gpu_rounds: bool,
    /// With --suite load: also time the large graph, an 8-connected grid of a 3840×2560
    /// photo's size (about 2 GB of DIMACS text; its files take about 5 GB of disk).
    #[arg(long)]
    large: bool,
    /// With --suite load: write the files into this folder and keep them (default: a temporary
    /// folder, removed at the end).
    #[arg(long, value_name = "DIR")]
    load_dir: Option<PathBuf>,
    /// One process of --startup (internal).
    #[arg(long, hide = true)]
    startup_child: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.startup_child {
        return super::startup::child();
    }
    // Checked before the (long) runs, not after them.
    if let Some(p) = &args.json {
        segcut::io::OutputPlan::default().output_as(
            p,
            "--json",
            &segcut::io::output_format::JSON,
        )?;
    }
    if args.startup {
        return super::startup::run(args.runs, args.json.as_deref());
    }
    if args.pipeline {
        return super::pipeline_bench::run(super::pipeline_bench::PipelineArgs {
            data: &args.data,
            solvers: args.solvers.clone(),
            runs: args.runs,
            width: args.upscale.unwrap_or(3840),
            batch_jobs: args.batch_jobs,
            set: &args.set,
            only: &args.only,
            json: args.json.as_deref(),
        });
    }
    if args.warm && args.gpu_rounds {
        return run_gpu_rounds(&args);
    }
    if args.warm {
        return run_warm(&args);
    }
    if args.suite == "load" {
        return run_load(&args);
    }
    let instances = if args.instances.is_empty() {
        let suite = bench::suite(
            &args.suite,
            &SuiteOptions {
                photo_data: args.data.clone(),
            },
        )?;
        for note in &suite.notes {
            eprintln!("segcut: {note}");
        }
        suite.instances
    } else {
        args.instances.clone()
    };
    let instances: Vec<BenchInstance> = instances
        .into_iter()
        .filter(|i| {
            let name = i.to_string();
            args.only.is_empty() || args.only.iter().any(|o| name.contains(o.as_str()))
        })
        .collect();
    anyhow::ensure!(
        !instances.is_empty(),
        "no instance left to run (see --only and --suite)"
    );
    use SolverKind::{Bk, CudaCsr, CudaGrid};
    let solvers: Vec<SolverKind> = if !args.solvers.is_empty() {
        args.solvers.clone()
    } else if args.instances.is_empty() && args.suite == "generic" {
        vec![Bk, CudaCsr, CudaGrid]
    } else if args.instances.is_empty() && args.suite == "generic-large" {
        vec![CudaCsr, CudaGrid]
    } else {
        vec![Bk]
    };
    let opts = BenchOptions {
        runs: args.runs,
        max_nodes: args.max_nodes,
        dump: args.dump.clone(),
        auto: AutoPolicy {
            min_gpu_nodes: args.gpu_min_nodes,
            ..Default::default()
        },
        grid: args.grid_tune.clone(),
        ..BenchOptions::default()
    };
    let total = (instances.len() * solvers.len() * opts.runs.max(1)) as u64;
    let pb = super::bar(total, "{spinner} [{bar:30}] {pos}/{len} {msg}");
    let mut out = std::io::stdout().lock();
    print_header(&mut out, solvers[0].name())?;
    let mut failed = false;
    let records = bench::run(&instances, &solvers, &opts, |ev| match ev {
        Event::Generating(name) => pb.set_message(format!("generating {name}")),
        Event::Skipped(name, why) => {
            pb.inc((solvers.len() * opts.runs.max(1)) as u64);
            pb.suspend(|| eprintln!("skipped {name}: {why}"));
        }
        Event::Solving(name, solver, run) => {
            pb.set_message(format!("{solver} on {name} (run {})", run + 1));
            pb.inc(1);
        }
        Event::Done(rec) => {
            failed |= !rec.verified || !rec.agrees;
            pb.suspend(|| {
                let mut out = std::io::stdout().lock();
                let _ = print_row(&mut out, rec);
                if let Some(p) = &rec.gpu_profile {
                    let _ = writeln!(out, "    {}: {p}", rec.solver);
                }
            });
        }
    })?;
    pb.finish_and_clear();
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&records)?;
        segcut::io::write_atomic(path, |w| w.write_all(text.as_bytes()))?;
    }
    writeln!(out, "{} records; machine: {}", records.len(), machine())?;
    Ok(if failed {
        eprintln!("segcut: a result failed verification or disagreed with the first solver");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_header(out: &mut impl Write, first: &str) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<32} {:>10} {:>11} {:>9} {:>14} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "instance",
        "nodes",
        "arcs",
        "solver",
        "flow",
        "build ms",
        "solve ms",
        "total ms",
        format!("vs {first}"),
        "verified"
    )
}

fn print_row(out: &mut impl Write, r: &BenchRecord) -> std::io::Result<()> {
    if let Some(why) = &r.not_run {
        return writeln!(
            out,
            "{:<32} {:>10} {:>11} {:>9} {:>14} {:>10} {:>10} {:>10} {:>10} {:>8}  ({why})",
            r.instance, r.nodes, r.arcs, r.solver, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"
        );
    }
    writeln!(
        out,
        "{:<32} {:>10} {:>11} {:>9} {:>14} {:>10.1} {:>10.1} {:>10.1} {:>9.2}x {:>8}",
        r.instance,
        r.nodes,
        r.arcs,
        if r.solver == SolverKind::Auto {
            format!("auto:{}", r.ran)
        } else {
            r.solver.to_string()
        },
        r.flow,
        r.build_ms,
        r.solve_ms,
        r.total_ms,
        r.speedup_vs_first,
        match (r.verified, r.agrees) {
            (true, true) => "yes",
            (false, _) => "FAILED",
            (true, false) => "DIFFERS",
        }
    )
}

/// The CPU model and core count, for the table's caption.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    // Device 0, the one the benchmarks solve on, when it is usable.
    let gpu = segcut::cuda::Device::default()
        .gpu()
        .map(|g| format!("; GPU: {} ({})", g.name, g.arch))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores{gpu}")
}

/// `--warm --gpu-rounds`: each round's graph on cuda-grid, scratch against warm, per tuning.
fn run_gpu_rounds(args: &Args) -> Result<ExitCode> {
    use segcut::bench::warm;
    use segcut::maxflow::cuda::GridTuning;
    let photos = warm_photos(args)?;
    let mut tunings = vec![GridTuning::default(), args.grid_tune.clone()];
    for t in tunings.clone() {
        tunings.push(GridTuning {
            warm_local: !t.warm_local,
            ..t
        });
    }
    tunings.dedup();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "| photo | tuning | round | scratch ms | warm ms | warm/scratch | same cut |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---|")?;
    let mut all_agree = true;
    let mut profiles = Vec::new();
    for p in &photos {
        let rows = warm::gpu_rounds(p, segcut::cuda::Device::default(), 5, &tunings)?;
        let mut sums: Vec<(String, f64, f64)> = Vec::new();
        for r in &rows {
            all_agree &= r.agrees;
            writeln!(
                out,
                "| {} | {} | {} | {:.1} | {:.1}{} | {:.2} | {} |",
                p.name,
                r.tuning,
                r.round,
                r.scratch_ms,
                r.warm_ms,
                if r.warm { "" } else { " (cold)" },
                r.warm_ms / r.scratch_ms.max(1e-9),
                if r.agrees { "yes" } else { "NO" }
            )?;
            profiles.push(format!(
                "{} {} round {}\n  scratch: {}\n  warm:    {}",
                p.name, r.tuning, r.round, r.scratch_profile, r.warm_profile
            ));
            if r.round > 1 {
                match sums.iter_mut().find(|s| s.0 == r.tuning) {
                    Some(s) => {
                        s.1 += r.scratch_ms;
                        s.2 += r.warm_ms;
                    }
                    None => sums.push((r.tuning.clone(), r.scratch_ms, r.warm_ms)),
                }
            }
        }
        for (t, a, b) in sums {
            writeln!(
                out,
                "| {} | {t} | 2.. | {a:.1} | {b:.1} | {:.2} | |",
                p.name,
                b / a.max(1e-9)
            )?;
        }
    }
    writeln!(out, "\nProfiles\n")?;
    for p in profiles {
        writeln!(out, "{p}")?;
    }
    writeln!(out, "machine: {}", machine())?;
    Ok(if all_agree {
        ExitCode::SUCCESS
    } else {
        eprintln!("segcut: a warm round's cut differs from the scratch solve's");
        ExitCode::FAILURE
    })
}

/// The photos `--warm` runs on: the dev set's (at `--upscale`'s width), those `--only` names.
fn warm_photos(args: &Args) -> Result<Vec<segcut::bench::PhotoSpec>> {
    use segcut::bench::{photo_instances, Source};
    let photos: Vec<_> = photo_instances(&args.data, &[args.upscale])?
        .into_iter()
        .filter_map(|i| match i.source {
            Source::Photo(p) => Some(p),
            Source::Gen(_) => None,
        })
        .filter(|p| args.only.is_empty() || args.only.iter().any(|o| p.name.contains(o.as_str())))
        .collect();
    anyhow::ensure!(
        !photos.is_empty(),
        "no photo left to run (see --only and --data)"
    );
    Ok(photos)
}

/// `--warm`: the warm-start table (per round) and the phase table (per photo), cold and warm.
fn run_warm(args: &Args) -> Result<ExitCode> {
    use segcut::bench::warm;
    let photos = warm_photos(args)?;
    let solvers = if args.solvers.is_empty() {
        vec![SolverKind::Bk]
    } else {
        args.solvers.clone()
    };
    let pb = super::bar(
        (photos.len() * solvers.len()) as u64,
        "{spinner} [{bar:30}] {pos}/{len} {msg}",
    );
    let mut records = Vec::new();
    for p in &photos {
        for &solver in &solvers {
            pb.set_message(format!("{solver} on {}", p.name));
            records.push(warm::warm_start(p, solver, args.runs)?);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Warm-started GrabCut rounds (solve ms, median of {} runs)\n",
        args.runs.max(1)
    )?;
    writeln!(out, "| photo | size | solver | round | flow | changed px | scratch ms | warm ms | warm/scratch |")?;
    writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|")?;
    for r in &records {
        for round in &r.rounds {
            let tag = if round.warm { "" } else { " (cold)" };
            writeln!(
                out,
                "| {} | {}x{} | {} | {} | {} | {} | {:.1} | {:.1}{tag} | {:.2} |",
                r.photo,
                r.dims[0],
                r.dims[1],
                r.ran,
                round.round,
                round.flow,
                round.changed,
                round.scratch_ms,
                round.warm_ms,
                round.warm_ms / round.scratch_ms.max(1e-9)
            )?;
        }
    }
    writeln!(
        out,
        "\nPhases of `segment` (ms, median; other = wall time less the named phases)\n"
    )?;
    writeln!(out, "| photo | size | solver | rounds | mode | prepare | models | graph | solve | verify | other | total |")?;
    writeln!(
        out,
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    for r in &records {
        for (mode, p) in [("scratch", &r.scratch), ("warm", &r.warm)] {
            writeln!(
                out,
                "| {} | {}x{} | {} | {} | {mode} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                r.photo, r.dims[0], r.dims[1], r.ran, r.rounds.len(),
                p.prepare, p.models, p.graph, p.solve, p.verify, p.other, p.total
            )?;
        }
    }
    let sum = |warm: bool| -> f64 {
        let ms = |r: &warm::WarmRound| if warm { r.warm_ms } else { r.scratch_ms };
        records
            .iter()
            .flat_map(|r| r.rounds.iter().skip(1).map(ms))
            .sum()
    };
    writeln!(
        out,
        "\nRounds 2.. summed over the photos: scratch {:.1} ms, warm {:.1} ms ({:.2}x); machine: {}",
        sum(false),
        sum(true),
        sum(true) / sum(false).max(1e-9),
        machine()
    )?;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&records)?;
        segcut::io::write_atomic(path, |w| w.write_all(text.as_bytes()))?;
    }
    let failed: Vec<&str> = records
        .iter()
        .filter(|r| !r.agrees)
        .map(|r| r.photo.as_str())
        .collect();
    if !failed.is_empty() {
        eprintln!(
            "segcut: warm and scratch rounds disagree on {}",
            failed.join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--suite load`: MB/s of loading each file format (see `segcut::bench::load`).
fn run_load(args: &Args) -> Result<ExitCode> {
    crate::fix_mmap_threshold();
    use segcut::bench::load::{self, LoadEvent};
    let mut instances = if args.instances.is_empty() {
        bench::suite("load", &SuiteOptions::default())?.instances
    } else {
        args.instances.clone()
    };
    if args.large {
        instances.push(bench::LOAD_LARGE.parse()?);
    }
    instances.retain(|i| {
        let name = i.to_string();
        args.only.is_empty() || args.only.iter().any(|o| name.contains(o.as_str()))
    });
    anyhow::ensure!(
        !instances.is_empty(),
        "no instance left to run (see --only and --suite)"
    );
    // A folder of our own under the temporary directory unless told where.
    let (dir, remove) = match &args.load_dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("segcut-load-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir)?;
    let pb = super::bar(0, "{spinner} {msg}");
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "| instance | input | file MB | text MB | s | file MB/s | text MB/s | same graph | graph MB | peak / graph |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---|---:|---:|")?;
    let result = load::run(&instances, &dir, args.runs, |ev| match ev {
        LoadEvent::Writing(p) => pb.set_message(format!("writing {}", p.display())),
        LoadEvent::Timing(i, what) => pb.set_message(format!("{what} of {i}")),
        LoadEvent::Missing(i, what) => pb.suspend(|| println!("| {i} | {what} | | | | | | | | |")),
        LoadEvent::Done(r) => pb.suspend(|| {
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0} | {} | {} | {} |",
                r.instance,
                r.what,
                r.file_bytes as f64 / 1e6,
                r.text_bytes as f64 / 1e6,
                r.seconds,
                r.file_mb_s,
                r.text_mb_s,
                if r.same_graph { "yes" } else { "DIFFERS" },
                if r.graph_bytes > 0 {
                    format!("{:.0}", r.graph_bytes as f64 / 1e6)
                } else {
                    String::new()
                },
                match r.peak_bytes {
                    Some(p) => format!("{:.2}", p as f64 / r.graph_bytes as f64),
                    None => String::new(),
                }
            )
        }),
    });
    pb.finish_and_clear();
    if remove {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let records = result?;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&records)?;
        segcut::io::write_atomic(path, |w| w.write_all(text.as_bytes()))?;
    }
    // Where the text rows' time went: which stage stops scaling on a many-core machine.
    let staged: Vec<_> = records.iter().filter(|r| !r.phases.is_empty()).collect();
    if !staged.is_empty() {
        writeln!(
            out,
            "\nStages of the median run, ms (the reading thread runs beside the parser: they overlap)\n"
        )?;
        for r in staged {
            let stages: Vec<String> = r
                .phases
                .iter()
                .map(|(name, ms)| format!("{name} {ms:.1}"))
                .collect();
            writeln!(out, "- {} {}: {}", r.instance, r.what, stages.join(", "))?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "median of {} runs from the page cache; machine: {}",
        args.runs.max(1),
        machine()
    )?;
    Ok(if records.iter().all(|r| r.same_graph) {
        ExitCode::SUCCESS
    } else {
        eprintln!("segcut: a format loaded a different graph than the .max file");
        ExitCode::from(1)
    })
}
