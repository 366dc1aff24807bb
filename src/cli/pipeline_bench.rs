//! `segcut bench --pipeline`: what a user waits for around the cut (issue 22), per phase, for
//! each solver given (default `auto` then `bk`, so the GPU path and the CPU path side by side):
//!
//! 1. `file`: 4K JPEG + seed PNG → mask PNG, one fresh `segcut segment` process per photo (its
//!    `--stats-json` phases, and the wall time the parent saw);
//! 2. `memory`: the same 4K image in memory → mask in memory on a warm
//!    [`Segmenter`](segcut::segment::session::Segmenter), default settings and `--iterations 1`;
//! 3. `small`: the native 481×321 photos in memory on a warm segmenter;
//! 4. `batch`: the dev photo + scribble pairs repeated to `--batch-jobs` jobs, steady-state
//!    jobs/s (finished after the first 2 s), on one GPU, on two (when there are), and on the CPU.
//!
//! The 4K inputs are made from the dev photos (Catmull–Rom upscale, JPEG quality 92; seeds
//! nearest, as a palette PNG) in a temporary folder.

use anyhow::{bail, Context, Result};
use segcut::batch::manifest::parse_manifest;
use segcut::batch::summary::{Row, Status};
use segcut::batch::{run_batch, BatchOptions, Device, Observer};
use segcut::bench::{load_photo, PhotoSpec};
use segcut::maxflow::SolverKind;
use segcut::options::Values;
use segcut::segment::report::Report;
use segcut::segment::session::{warm_up, Segmenter};
use segcut::segment::{Seed, Seeds, SegmentOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The photos of the table.
const PHOTOS: [&str; 3] = ["124084", "65019", "153077"];

/// What the command is told (from `segcut bench`'s flags).
pub struct PipelineArgs<'a> {
    pub data: &'a Path,
    pub solvers: Vec<SolverKind>,
    pub runs: usize,
    pub width: usize,
    pub batch_jobs: usize,
    /// `--set KEY=VALUE`: segmentation options for every case.
    pub set: &'a [String],
    pub only: &'a [String],
    pub json: Option<&'a Path>,
}

/// One line of the table.
#[derive(Clone, Debug, serde::Serialize)]
struct Line {
    case: String,
    solver: String,
    photo: String,
    /// Median wall time, ms (file: the process as the parent saw it).
    ms: f64,
    /// Jobs per second (batch only).
    #[serde(skip_serializing_if = "Option::is_none")]
    jobs_per_s: Option<f64>,
    /// The run's phases (the median run's), ms.
    phases: serde_json::Value,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn spec(data: &Path, name: &str, width: Option<usize>) -> PhotoSpec {
    PhotoSpec {
        name: name.into(),
        image: data.join("images").join(format!("{name}.jpg")),
        seeds: data.join("scribbles-1").join(format!("{name}-anno.png")),
        width,
    }
}

/// Writes `seeds` as a palette PNG (index 1 foreground, 2 background, 0 the rest).
fn write_seeds(path: &Path, seeds: &Seeds) -> Result<()> {
    let [w, h, _] = seeds.dims;
    let idx: Vec<u8> = seeds
        .labels
        .iter()
        .map(|s| match s {
            Seed::Foreground | Seed::ProbablyForeground => 1,
            Seed::Background | Seed::ProbablyBackground => 2,
            Seed::Unknown => 0,
        })
        .collect();
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w as u32, h as u32);
    enc.set_color(png::ColorType::Indexed);
    enc.set_depth(png::BitDepth::Eight);
    // Greys that no scribble colour option means, so the palette reads one way only.
    enc.set_palette(vec![0, 0, 0, 200, 200, 200, 100, 100, 100]);
    let mut wr = enc.write_header()?;
    wr.write_image_data(&idx)?;
    wr.finish()?;
    Ok(())
}

/// The 4K JPEG and seed PNG of `name` in `dir`.
fn make_4k(data: &Path, name: &str, width: usize, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let (image, seeds) = load_photo(&spec(data, name, Some(width)))?;
    let [w, h, _] = image.dims;
    let bytes: Vec<u8> = image
        .data
        .iter()
        .map(|&v| v.round().clamp(0.0, 255.0) as u8)
        .collect();
    let (img_path, seed_path) = (
        dir.join(format!("{name}.jpg")),
        dir.join(format!("{name}.png")),
    );
    let file = std::fs::File::create(&img_path)?;
    image::codecs::jpeg::JpegEncoder::new_with_quality(std::io::BufWriter::new(file), 92).encode(
        &bytes,
        w as u32,
        h as u32,
        image::ExtendedColorType::Rgb8,
    )?;
    write_seeds(&seed_path, &seeds)?;
    Ok((img_path, seed_path))
}

/// One `segcut segment` process: its wall time and `phases_ms`.
fn one_process(
    img: &Path,
    seeds: &Path,
    solver: SolverKind,
    flags: &[String],
    dir: &Path,
) -> Result<(f64, serde_json::Value)> {
    let (out, stats) = (dir.join("mask.png"), dir.join("stats.json"));
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&stats);
    let exe = std::env::current_exe().context("finding the segcut executable")?;
    let t = Instant::now();
    let r = Command::new(exe)
        .arg("segment")
        .arg(img)
        .arg("--seeds")
        .arg(seeds)
        .args(flags)
        .args(["--solver", solver.name(), "-o"])
        .arg(&out)
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .context("running segcut segment")?;
    let wall = ms(t.elapsed());
    if !r.status.success() {
        bail!(
            "segcut segment failed: {}",
            String::from_utf8_lossy(&r.stderr).trim()
        );
    }
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats)?)?;
    let mut p = s["phases_ms"].clone();
    with_prior(&mut p, &s["prior"]);
    for k in ["host_waits", "device_allocations"] {
        if let Some(t) = s[k].get("total") {
            p[k] = t.clone();
        }
    }
    Ok((wall, p))
}

/// Adds the stroke prior's share of `prepare` and its device passes (from the report's
/// `prior`) to a phases object, for the table.
fn with_prior(phases: &mut serde_json::Value, prior: &serde_json::Value) {
    if let Some(ms) = prior.get("ms") {
        phases["prior_of_prepare"] = ms.clone();
    }
    if let Some(passes) = prior.get("passes") {
        phases["prior_passes"] = passes.clone();
    }
}

/// Adds the run's host waits and device allocations (totals, and the waits per phase as
/// `prepare; round: models+graph+solve+verify; ...`) to a phases object, for the table.
fn with_counts(phases: &mut serde_json::Value, r: &Report) {
    phases["host_waits"] = serde_json::json!(r.host_waits.total);
    phases["device_allocations"] = serde_json::json!(r.device_allocations.total);
    let mut per = vec![format!("prepare {}", r.host_waits.prepare)];
    for (i, it) in r.iterations.iter().enumerate() {
        let w = it.host_waits;
        per.push(format!(
            "r{} {}+{}+{}+{}",
            i + 1,
            w.models,
            w.graph,
            w.solve,
            w.verify
        ));
    }
    per.push(format!("post {}", r.host_waits.post));
    phases["waits"] = serde_json::json!(per.join("; "));
}

/// `runs` segmentations of one image in memory on a warm segmenter (one untimed run first).
fn in_memory(
    opts: &SegmentOptions,
    image: &segcut::segment::Image,
    seeds: &Seeds,
    runs: usize,
) -> Result<(f64, serde_json::Value)> {
    let mut s = Segmenter::new(opts.clone());
    s.segment(image, seeds)?;
    let mut times = Vec::new();
    let mut phases = Vec::new();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let seg = s.segment(image, seeds)?;
        let wall = ms(t.elapsed());
        let r = Report::new(&seg, opts);
        let mut p = serde_json::to_value(&r.phases_ms)?;
        p["other"] = serde_json::json!(wall - r.phases_ms.total());
        with_counts(&mut p, &r);
        with_prior(&mut p, &serde_json::to_value(&r.prior)?);
        times.push(wall);
        phases.push((wall, p));
    }
    let m = median(times);
    let p = phases
        .into_iter()
        .min_by(|a, b| (a.0 - m).abs().total_cmp(&(b.0 - m).abs()))
        .map(|x| x.1)
        .unwrap_or_default();
    Ok((m, p))
}

/// Finish times of a batch's jobs.
struct Clock {
    start: Instant,
    done: Mutex<Vec<f64>>,
}

impl Observer for Clock {
    fn finished(&self, row: &Row) {
        if matches!(row.status, Status::Ok) {
            if let Ok(mut d) = self.done.lock() {
                d.push(self.start.elapsed().as_secs_f64());
            }
        }
    }
}

/// Steady-state jobs/s of a batch of the dev pairs repeated to `jobs` jobs on `devices`.
fn batch_rate(
    data: &Path,
    jobs: usize,
    (devices, workers): (Vec<Device>, usize),
    (solver, base): (SolverKind, &SegmentOptions),
    dir: &Path,
) -> Result<(f64, usize)> {
    // The manifest's paths are resolved against its folder (`data`): make them absolute, or a
    // relative --data would be joined twice and every job would fail.
    let data = &std::fs::canonicalize(data).with_context(|| data.display().to_string())?;
    let mut names: Vec<String> = std::fs::read_dir(data.join("images"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.path()
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .filter(|n| {
            data.join("scribbles-1")
                .join(format!("{n}-anno.png"))
                .exists()
        })
        .collect();
    names.sort();
    if names.is_empty() {
        bail!("no photo + scribble pairs in {}", data.display());
    }
    let mut csv = String::from("id,image,seeds\n");
    for k in 0..jobs {
        let n = &names[k % names.len()];
        let img = data.join("images").join(format!("{n}.jpg"));
        let seeds = data.join("scribbles-1").join(format!("{n}-anno.png"));
        csv.push_str(&format!("r{k}-{n},{},{}\n", img.display(), seeds.display()));
    }
    let list = parse_manifest(&csv, "bench.csv", data)?;
    let out = dir.join(format!("batch-{}", devices.len()));
    let _ = std::fs::remove_dir_all(&out);
    let mut opts = BatchOptions::new(&out);
    opts.devices = devices;
    opts.workers_per_device = workers;
    opts.defaults.segment = base.clone();
    opts.defaults.segment.solver = solver;
    if solver == SolverKind::Bk {
        opts.defaults.segment.auto.use_gpu = false;
    } else {
        opts.defaults.segment.auto.min_gpu_nodes = super::batch::BATCH_MIN_GPU_NODES;
    }
    let clock = Clock {
        start: Instant::now(),
        done: Mutex::new(Vec::new()),
    };
    let report = run_batch(list, &opts, &clock)?;
    let _ = std::fs::remove_dir_all(&out);
    let done = clock.done.into_inner().unwrap_or_default();
    let (first, last) = (2.0, done.iter().copied().fold(0.0, f64::max));
    let steady = done.iter().filter(|&&d| d > first).count();
    let rate = if last > first {
        steady as f64 / (last - first)
    } else {
        f64::NAN
    };
    Ok((rate, report.failed))
}

/// The cases `--only` may name; anything else in it names photos.
const CASES: [&str; 4] = ["file", "memory", "small", "batch"];

/// Whether `--only` keeps `name` among `among` (all of them when it names none of `among`).
fn keep_of(only: &[String], among: &[&str], name: &str) -> bool {
    let named: Vec<&String> = only
        .iter()
        .filter(|o| among.iter().any(|a| a.contains(o.as_str())))
        .collect();
    named.is_empty() || named.iter().any(|o| name.contains(o.as_str()))
}

pub fn run(a: PipelineArgs) -> Result<ExitCode> {
    // The options model checks the settings and makes the options, the child processes get
    // them as flags.
    let mut given = Values::segment();
    let mut flags = Vec::new();
    for spec in a.set {
        let Some((key, value)) = spec.split_once('=') else {
            bail!("--set expects KEY=VALUE, got '{spec}'");
        };
        let key = key.trim().trim_start_matches("--");
        given
            .set(key, value.trim())
            .map_err(|e| anyhow::anyhow!("--set {e}"))?;
        // `--key=value`: one argument, whatever the value starts with.
        flags.push(format!("--{key}={}", value.trim()));
    }
    let base = given
        .segment_options(SegmentOptions::default())
        .map_err(|e| anyhow::anyhow!("--set: {e}"))?;
    let solvers = if a.solvers.is_empty() {
        vec![SolverKind::Auto, SolverKind::Bk]
    } else {
        a.solvers.clone()
    };
    // Set up in the parent too, so that the in-memory cases start warm.
    let gpu = warm_up(SegmentOptions::default().device).is_ok();
    let dir = std::env::temp_dir().join(format!("segcut-pipeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut lines: Vec<Line> = Vec::new();
    let photos: Vec<&str> = PHOTOS
        .iter()
        .copied()
        .filter(|p| keep_of(a.only, &PHOTOS, p))
        .collect();
    let keep = |case: &str| keep_of(a.only, &CASES, case);
    let mut add = |l: Line| {
        println!(
            "{:<14} {:<9} {:<8} {:>9.1} {:>9}  {}",
            l.case,
            l.solver,
            l.photo,
            l.ms,
            l.jobs_per_s.map_or(String::new(), |r| format!("{r:.1}")),
            phases_text(&l.phases)
        );
        lines.push(l);
    };
    println!(
        "{:<14} {:<9} {:<8} {:>9} {:>9}  phases (ms)",
        "case", "solver", "photo", "ms", "jobs/s"
    );
    for name in &photos {
        if keep("file") || keep("memory") {
            let (img, seeds) = make_4k(a.data, name, a.width, &dir)?;
            for &solver in &solvers {
                if keep("file") {
                    let mut runs = Vec::new();
                    for _ in 0..a.runs.max(1) {
                        runs.push(one_process(&img, &seeds, solver, &flags, &dir)?);
                    }
                    let m = median(runs.iter().map(|r| r.0).collect());
                    let p = runs
                        .into_iter()
                        .min_by(|x, y| (x.0 - m).abs().total_cmp(&(y.0 - m).abs()))
                        .map(|r| r.1)
                        .unwrap_or_default();
                    add(Line {
                        case: "file 4K".into(),
                        solver: solver.name().into(),
                        photo: name.to_string(),
                        ms: m,
                        jobs_per_s: None,
                        phases: p,
                    });
                }
                if keep("memory") {
                    let image = segcut::io::load_image(&img)?;
                    let s = segcut::io::load_seeds(&seeds, image.dims, &Default::default())?;
                    for iterations in [base.iterations, 1] {
                        let opts = SegmentOptions {
                            solver,
                            iterations,
                            ..base.clone()
                        };
                        let (m, p) = in_memory(&opts, &image, &s, a.runs)?;
                        add(Line {
                            case: format!("memory 4K i{iterations}"),
                            solver: solver.name().into(),
                            photo: name.to_string(),
                            ms: m,
                            jobs_per_s: None,
                            phases: p,
                        });
                    }
                }
            }
        }
        if keep("small") {
            let (image, s) = load_photo(&spec(a.data, name, None))?;
            for &solver in &solvers {
                let opts = SegmentOptions {
                    solver,
                    ..base.clone()
                };
                let (m, p) = in_memory(&opts, &image, &s, a.runs.max(5))?;
                add(Line {
                    case: "memory small".into(),
                    solver: solver.name().into(),
                    photo: name.to_string(),
                    ms: m,
                    jobs_per_s: None,
                    phases: p,
                });
            }
        }
    }
    if keep("batch") {
        let gpus = if gpu { segcut::cuda::device_count() } else { 0 };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut setups: Vec<(String, Vec<Device>, usize, SolverKind)> = Vec::new();
        for n in [1, 2].into_iter().filter(|&n| n <= gpus) {
            setups.push((
                format!("batch {n} GPU"),
                (0..n).map(Device::Cuda).collect(),
                BatchOptions::workers_per_gpu(n),
                SolverKind::Auto,
            ));
        }
        setups.push((
            "batch CPU".into(),
            vec![Device::Cpu; cores],
            1,
            SolverKind::Bk,
        ));
        for (case, devices, workers, solver) in setups {
            let (rate, failed) = batch_rate(
                a.data,
                a.batch_jobs,
                (devices, workers),
                (solver, &base),
                &dir,
            )?;
            let phases = serde_json::json!({ "jobs": a.batch_jobs, "workers_per_device": workers, "failed": failed });
            add(Line {
                case,
                solver: solver.name().into(),
                photo: "dev set".into(),
                ms: 1e3 / rate,
                jobs_per_s: Some(rate),
                phases,
            });
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("(file: one process each, wall as the parent saw it; memory: a warm Segmenter, median of --runs; batch: jobs finished after the first 2 s per second)");
    if let Some(path) = a.json {
        segcut::io::write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &lines).map_err(std::io::Error::other)
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `key value` pairs of a phases object, rounds summed.
fn phases_text(p: &serde_json::Value) -> String {
    let Some(o) = p.as_object() else {
        return String::new();
    };
    o.iter()
        .filter_map(|(k, v)| {
            let x = match v {
                serde_json::Value::Array(r) => r.iter().filter_map(|x| x.as_f64()).sum(),
                // Counts as they are, the per-phase waits as written.
                serde_json::Value::Number(c) if c.is_u64() => return Some(format!("{k} {c}")),
                serde_json::Value::String(t) => return Some(format!("{k} [{t}]")),
                other => other.as_f64()?,
            };
            Some(format!("{k} {x:.1}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}
