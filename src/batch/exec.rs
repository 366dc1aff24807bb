//! The batch pipeline: three stages joined by bounded queues, so memory stays flat however many
//! jobs there are (at most `queue` jobs wait between two stages):
//!
//! 1. decode workers (`io_threads`) read each job's inputs;
//! 2. solver workers, `workers_per_device` per device, fit the models, build the graphs and cut
//!    them: a worker on `cuda:i` solves with options that name that [`Device`](crate::cuda::Device)
//!    (its context and kernels set up once per process); jobs go to whichever worker is free, so
//!    faster devices take more;
//! 3. write workers (`io_threads`) encode each result and write it atomically.
//!
//! The calling thread appends each finished job to the summary as it arrives and tells the
//! [`Observer`]. A job's failure (an unreadable file, bad seeds, a GPU out of memory, even a
//! panic) is recorded in its row and the batch goes on, unless `fail_fast`.
//!
//! Before the first job: every job's output is planned ([`crate::io::OutputPlan`]: inside the
//! output folder, no input, no other output, a name of the format written) and a GPU solver
//! without a GPU is refused; both are errors of the batch, not of its jobs.
//!
//! Resume: outputs are written atomically (a temporary file renamed into place), so an output
//! that exists is complete; a job whose output exists is skipped unless `force`. The summary
//! keeps one row per job across reruns ([`SummaryWriter::resume`]).

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::jobs::{
    decode, default_template, encode, fill_template, segment_pack_options, solve,
    solve_maxflow_packed, solve_segment_packed, solve_stereo_packed, stereo_pack_options, Decoded,
    Defaults, Done, SolveReport,
};
use super::manifest::{Job, JobKind};
use super::shard::Shard;
use super::summary::{summary_paths, Row, Status, SummaryWriter};
use crate::maxflow::MaxFlow;
use crate::segment::session::Segmenter;
use crate::{Error, Result};

/// Where a solver worker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The CPU solvers only (`auto` never picks a GPU).
    Cpu,
    /// CUDA device ordinal `i` (after `CUDA_VISIBLE_DEVICES`).
    Cuda(usize),
    /// A stand-in device for testing the scheduling without GPUs: runs the CPU solvers, and is
    /// named `fake:i` in the summary.
    Fake(usize),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
            Device::Fake(i) => write!(f, "fake:{i}"),
        }
    }
}

/// Stereo pairs a GPU worker packs by default. Measured on an H200 (docs/batch.md, "Packed
/// stereo pairs"): 300 tsukuba pairs, 4 workers, go from 14.1 pairs/s alone to 42.6 packed by 4
/// and 55.0 by 8; a packed run of 8 takes 2.4× one pair's time, so a pair waits longer but
/// the GPU does 3.3–3.5× the work. Every output is the one its pair gets alone.
pub const DEFAULT_STEREO_PACK: usize = 8;

/// Segmentation jobs a GPU worker packs by default (photos of one width and the same options,
/// their GrabCut rounds in lockstep, each round's cuts one stacked solve on the device).
/// Measured on an H200 (docs/batch.md, "Packed segmentation jobs"): 1014 dev-photo jobs, 4
/// workers, 33.3–34.4 jobs/s alone, 38.2–39.8 packed by 4 and 40.2–42.1 by 8 in the same calls
/// (the photos of each width that arrive together make their own pack). Every mask is the one
/// its photo gets alone.
pub const DEFAULT_SEGMENT_PACK: usize = 8;

/// How to run a batch.
#[derive(Clone, Debug)]
pub struct BatchOptions {
    /// The output folder.
    pub out_dir: PathBuf,
    /// Output name template (`{id}`, `{kind}`); `None`: `{id}.png` for masks, `{id}.cut` for
    /// max-flow. A manifest's `output` column overrides it per job.
    pub template: Option<String>,
    /// Options every job starts from.
    pub defaults: Defaults,
    /// The solver workers' devices (one entry per device).
    pub devices: Vec<Device>,
    /// Solver workers per device (more than one overlaps one job's CPU work with another's
    /// GPU solve).
    pub workers_per_device: usize,
    /// Decode workers, and as many write workers.
    pub io_threads: usize,
    /// Jobs waiting between two stages, at most.
    pub queue: usize,
    /// Jobs a solver worker packs into one solve: max-flow jobs' grids, and stereo pairs of one
    /// size and segmentation photos of one width, with the same options, on a GPU
    /// (docs/batch.md). `None` chooses per kind
    /// ([`BatchOptions::pack_limit`]); `Some(1)` packs nothing.
    pub pack: Option<usize>,
    /// Redo jobs whose outputs exist.
    pub force: bool,
    /// Stop starting jobs after the first failure.
    pub fail_fast: bool,
    /// This process's share of the jobs.
    pub shard: Shard,
    /// The summary's path without extension; `None`: `OUT/summary` (`OUT/summary.I-of-N` for a
    /// shard).
    pub summary: Option<PathBuf>,
    /// Files the batch reads besides its jobs' inputs (the manifests): no output may be one.
    pub inputs: Vec<PathBuf>,
}

impl BatchOptions {
    /// Defaults writing to `out_dir`: CPU workers, one per core.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        BatchOptions {
            out_dir: out_dir.into(),
            template: None,
            defaults: Defaults::default(),
            devices: vec![Device::Cpu; cores],
            workers_per_device: 1,
            io_threads: cores.clamp(1, 4),
            queue: 2 * cores.max(2),
            pack: None,
            force: false,
            fail_fast: false,
            shard: Shard::default(),
            summary: None,
            inputs: Vec::new(),
        }
    }

    /// Jobs of `kind` a solver worker packs into one solve: [`BatchOptions::pack`] when set,
    /// else [`DEFAULT_STEREO_PACK`] stereo pairs, [`DEFAULT_SEGMENT_PACK`] segmentation jobs and
    /// no packing of max-flow grids. Stereo pairs and segmentation jobs pack only on a GPU, so
    /// on the CPU the default changes nothing.
    ///
    /// ```
    /// use segcut::batch::{BatchOptions, JobKind, DEFAULT_SEGMENT_PACK, DEFAULT_STEREO_PACK};
    /// let mut o = BatchOptions::new("out");
    /// assert_eq!(o.pack_limit(JobKind::Stereo), DEFAULT_STEREO_PACK);
    /// assert_eq!(o.pack_limit(JobKind::Segment), DEFAULT_SEGMENT_PACK);
    /// assert_eq!(o.pack_limit(JobKind::MaxFlow), 1);
    /// o.pack = Some(4);
    /// assert_eq!(o.pack_limit(JobKind::MaxFlow), 4);
    /// ```
    pub fn pack_limit(&self, kind: JobKind) -> usize {
        match (self.pack, kind) {
            (Some(n), _) => n.max(1),
            (None, JobKind::Stereo) => DEFAULT_STEREO_PACK,
            (None, JobKind::Segment) => DEFAULT_SEGMENT_PACK,
            (None, JobKind::MaxFlow) => 1,
        }
    }

    /// Solver workers per GPU when `gpus` GPUs share this host's cores: a job's CPU work
    /// overlaps another's solve, so several jobs are kept in flight on each GPU (2 to 8).
    ///
    /// Why at most 8: measured on an H200 with 16 cores (docs/batch.md, "Workers per GPU"),
    /// packed stereo runs at 67.9 pairs/s with 4 workers and 78.9 with 8, packed segmentation
    /// at 48.1–48.8 jobs/s with 4, 49.5 with 6 and 48.8 with 8; each worker holds its own
    /// device buffers and decoded jobs, and more were not found to help. (Before the tile
    /// kernels kept every resident block on a shared GPU, 8 workers were slower than 4.)
    ///
    /// ```
    /// use segcut::batch::BatchOptions;
    /// let n = BatchOptions::workers_per_gpu(2);
    /// assert!(BatchOptions::WORKERS_PER_GPU.contains(&n));
    /// ```
    pub fn workers_per_gpu(gpus: usize) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let r = Self::WORKERS_PER_GPU;
        (cores / gpus.max(1)).clamp(*r.start(), *r.end())
    }

    /// The range [`BatchOptions::workers_per_gpu`] keeps to (why: there).
    pub const WORKERS_PER_GPU: std::ops::RangeInclusive<usize> = 2..=8;

    /// The summary's path without extension.
    pub fn summary_stem(&self) -> PathBuf {
        self.summary
            .clone()
            .unwrap_or_else(|| self.out_dir.join(format!("summary{}", self.shard.suffix())))
    }

    /// Where `job` writes its output: the manifest's `output` or the name template, inside the
    /// output folder. A name that leaves the folder (an absolute path, `..` above it) is an
    /// error naming the job; `sub/../x.png` is `x.png`.
    ///
    /// ```
    /// use segcut::batch::{manifest::parse_manifest, BatchOptions};
    /// let jobs = parse_manifest("max,output\na.max,sub/../a.cut\nb.max,../../b.cut\n", "m.csv", ".".as_ref()).unwrap();
    /// let opts = BatchOptions::new("out");
    /// assert_eq!(opts.output_of(&jobs[0]).unwrap(), std::path::Path::new("out/a.cut"));
    /// assert!(opts.output_of(&jobs[1]).unwrap_err().to_string().contains("outside"));
    /// ```
    pub fn output_of(&self, job: &Job) -> Result<PathBuf> {
        let rel = match &job.output {
            Some(p) => p.clone(),
            None => {
                let t = self
                    .template
                    .as_deref()
                    .unwrap_or(default_template(job.kind));
                PathBuf::from(fill_template(t, &job.id, job.kind))
            }
        };
        match within(&rel) {
            Some(inside) => Ok(self.out_dir.join(inside)),
            None => Err(Error::Input {
                file: job.origin.clone(),
                msg: format!(
                    "job '{}' writes {}, which is outside the output folder {}; outputs are \
                     named relative to it",
                    job.id,
                    rel.display(),
                    self.out_dir.display()
                ),
            }),
        }
    }
}

/// `rel` with `.` and `..` taken out, when it names a file inside the folder it is relative to
/// (no root, no `..` above the start); `None` otherwise.
fn within(rel: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.iter().collect())
}

/// Checks that the existing part of `out_dir/rel` stays in the output folder (`root`, resolved)
/// once links are followed, before any folder of it is made: a link inside the folder must not
/// lead a job's output elsewhere.
fn stays_inside(root: &Path, out_dir: &Path, rel: &Path) -> std::result::Result<(), PathBuf> {
    let mut p = out_dir.to_path_buf();
    for c in rel.components() {
        p.push(c);
        match std::fs::canonicalize(&p) {
            Ok(real) if !real.starts_with(root) => return Err(real),
            Ok(_) => {}
            // Not made yet: what follows is made inside.
            Err(_) if std::fs::symlink_metadata(&p).is_err() => break,
            // A link to nowhere: where it would lead cannot be told.
            Err(_) => return Err(p),
        }
    }
    Ok(())
}

/// What the caller is told as the batch runs (a progress bar, log lines, a test's counter).
pub trait Observer: Send + Sync {
    /// The batch starts: `total` jobs in this shard, of which `skipped` are already done.
    fn start(&self, total: usize, skipped: usize) {
        let _ = (total, skipped);
    }
    /// A job finished (or was skipped).
    fn finished(&self, row: &Row) {
        let _ = row;
    }
}

/// Observes nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// How a batch went.
#[derive(Clone, Debug, Default)]
pub struct BatchReport {
    /// Jobs in this shard.
    pub total: usize,
    /// Jobs that ran and wrote their output.
    pub ok: usize,
    /// Jobs that failed.
    pub failed: usize,
    /// Jobs skipped because their output existed.
    pub skipped: usize,
    /// Jobs not started because of `fail_fast`.
    pub not_started: usize,
    /// The summary files (CSV, JSON lines).
    pub summary: Vec<PathBuf>,
    /// Wall time.
    pub elapsed: Duration,
}

/// A job moving through the stages.
struct Item {
    job: Job,
    output: PathBuf,
    row: Row,
}

type Stage<T> = Arc<Mutex<Receiver<T>>>;

fn recv<T>(rx: &Stage<T>) -> Option<T> {
    rx.lock().ok()?.recv().ok()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `f`, turning a panic into an error: one bad job must not end the batch.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Err(Error::Unsupported(format!(
            "internal error while {what}: {msg}"
        )))
    })
}

/// Runs `jobs` (this shard's share of them) as `opts` say, appending to the summary as jobs
/// finish. Errors are for the batch as a whole (an unwritable summary, two jobs with one output);
/// a job's failure is in its summary row and in [`BatchReport::failed`].
pub fn run_batch(
    jobs: Vec<Job>,
    opts: &BatchOptions,
    observer: &dyn Observer,
) -> Result<BatchReport> {
    let t0 = Instant::now();
    if opts.devices.is_empty() {
        return Err(Error::Unsupported(
            "a batch needs at least one device".into(),
        ));
    }
    let mine: Vec<bool> = (0..jobs.len()).map(|i| opts.shard.contains(i)).collect();
    check_devices(&jobs, &mine, opts)?;
    let plan = plan_outputs(&jobs, &mine, opts)?;
    let mut todo = Vec::new();
    let mut skipped_rows = Vec::new();
    for ((job, output), _) in jobs.into_iter().zip(plan).zip(&mine).filter(|(_, m)| **m) {
        let row = Row {
            job: job.id.clone(),
            kind: job.kind.name().into(),
            output: output.display().to_string(),
            ..Row::default()
        };
        if !opts.force && output.is_file() {
            skipped_rows.push((row, job.kind));
        } else {
            todo.push(Item { job, output, row });
        }
    }
    // A rerun keeps one row per job: the earlier rows of the jobs that run again are dropped
    // (they get new ones), and a skipped job keeps its earlier row.
    let redo: HashSet<&str> = todo.iter().map(|i| i.job.id.as_str()).collect();
    let (mut summary, earlier) =
        SummaryWriter::resume(&opts.summary_stem(), |job| redo.contains(job))?;
    drop(redo);
    let mut report = BatchReport {
        total: todo.len() + skipped_rows.len(),
        skipped: skipped_rows.len(),
        summary: summary.paths().to_vec(),
        ..BatchReport::default()
    };
    observer.start(report.total, report.skipped);
    for (row, kind) in &skipped_rows {
        // A job killed between its output and its row has none: it gets one from its output.
        if !earlier.contains(&row.job) {
            summary.append(&recovered_row(row, *kind))?;
        }
        observer.finished(row);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let queue = opts.queue.max(1);
    let (feed_tx, feed_rx) = sync_channel::<Item>(queue);
    let (dec_tx, dec_rx) = sync_channel::<(Item, Result<Decoded>)>(queue);
    let (sol_tx, sol_rx) = sync_channel::<(Item, Result<Done>)>(queue);
    let (row_tx, row_rx) = std::sync::mpsc::channel::<Row>();
    let (feed_rx, dec_rx, sol_rx) = (
        Arc::new(Mutex::new(feed_rx)),
        Arc::new(Mutex::new(dec_rx)),
        Arc::new(Mutex::new(sol_rx)),
    );
    let started = std::thread::scope(|s| -> Result<usize> {
        let feeder = {
            let stop = stop.clone();
            s.spawn(move || {
                let mut n = 0;
                for item in todo {
                    if stop.load(Ordering::Relaxed) || feed_tx.send(item).is_err() {
                        break;
                    }
                    n += 1;
                }
                n
            })
        };
        for _ in 0..opts.io_threads.max(1) {
            let (rx, tx) = (feed_rx.clone(), dec_tx.clone());
            s.spawn(move || decode_worker(rx, tx, &opts.defaults));
        }
        drop(dec_tx);
        for &device in &opts.devices {
            for _ in 0..opts.workers_per_device.max(1) {
                let (rx, tx) = (dec_rx.clone(), sol_tx.clone());
                s.spawn(move || solve_worker(device, rx, tx, opts));
            }
        }
        drop(sol_tx);
        for _ in 0..opts.io_threads.max(1) {
            let (rx, tx) = (sol_rx.clone(), row_tx.clone());
            s.spawn(move || write_worker(rx, tx, &opts.defaults));
        }
        drop(row_tx);
        let mut result = Ok(());
        for row in row_rx {
            match row.status {
                Status::Ok => report.ok += 1,
                Status::Failed => {
                    report.failed += 1;
                    if opts.fail_fast {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                Status::Skipped => report.skipped += 1,
            }
            if result.is_ok() {
                result = summary.append(&row);
                if result.is_err() {
                    // Without a summary the batch cannot report: stop starting jobs.
                    stop.store(true, Ordering::Relaxed);
                }
            }
            observer.finished(&row);
        }
        result?;
        Ok(feeder.join().unwrap_or(0))
    })?;
    report.not_started = report.total - report.skipped - started;
    report.elapsed = t0.elapsed();
    Ok(report)
}

/// A set-up error before any job: a job that asks for a GPU solver in a batch without a GPU
/// would fail (each job, with exit status 1) where the batch as a whole cannot run as asked.
fn check_devices(jobs: &[Job], mine: &[bool], opts: &BatchOptions) -> Result<()> {
    if opts.devices.iter().any(|d| matches!(d, Device::Cuda(_))) {
        return Ok(());
    }
    let d = &opts.defaults;
    for job in jobs.iter().zip(mine).filter(|(_, m)| **m).map(|(j, _)| j) {
        // A job whose options do not parse fails on its own with its own message.
        let solver = match job.kind {
            JobKind::Segment => d.segment_for(&job.overrides).map(|o| o.solver),
            JobKind::Stereo => d
                .stereo_for(&job.overrides)
                .map(|o| o.expansion.solve.solver),
            JobKind::MaxFlow => d.solve_for(&job.overrides).map(|o| o.solver),
        };
        let Ok(solver) = solver else { continue };
        if solver.is_gpu() {
            let why = crate::cuda::gpu_unavailable_reason()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let devices: Vec<String> = opts.devices.iter().map(|d| d.to_string()).collect();
            return Err(Error::Unsupported(format!(
                "job '{}' ({}) asks for the {solver} solver, but this batch runs on {} with no \
                 GPU{why}; choose a CPU solver or auto",
                job.id,
                job.origin,
                devices.first().map_or("no device".into(), |d| d.clone())
            )));
        }
    }
    Ok(())
}

/// Every job's output, checked before the first job starts, across the whole run: inside the
/// output folder (links followed), not any job's input or a manifest, not another job's output
/// (`x.png` and `sub/../x.png` are one file), not the summary, and of a format the job writes.
/// Folders are made for this shard's jobs; other shards' outputs are checked but left to them.
fn plan_outputs(jobs: &[Job], mine: &[bool], opts: &BatchOptions) -> Result<Vec<PathBuf>> {
    use crate::io::output_format;
    let mut plan = crate::io::OutputPlan::default();
    for p in &opts.inputs {
        plan.input(p, "manifest")?;
    }
    for job in jobs {
        for p in job.inputs() {
            plan.input(p, &format!("job '{}'", job.id))?;
        }
    }
    let [csv, jsonl] = summary_paths(&opts.summary_stem());
    let outputs = jobs
        .iter()
        .map(|job| opts.output_of(job))
        .collect::<Result<Vec<_>>>()?;
    std::fs::create_dir_all(&opts.out_dir).map_err(|e| Error::io(&opts.out_dir, e))?;
    let root = opts
        .out_dir
        .canonicalize()
        .map_err(|e| Error::io(&opts.out_dir, e))?;
    for p in [&csv, &jsonl] {
        plan.output_as(p, "summary", &output_format::SUMMARY)?;
    }
    for ((job, output), mine) in jobs.iter().zip(&outputs).zip(mine) {
        let role = format!("job '{}'", job.id);
        if !mine {
            plan.claim(output, &role)?;
            continue;
        }
        let rel = output.strip_prefix(&opts.out_dir).unwrap_or(output);
        if let Err(real) = stays_inside(&root, &opts.out_dir, rel) {
            return Err(Error::Input {
                file: job.origin.clone(),
                msg: format!(
                    "job '{}' writes {}, which leads to {} outside the output folder (a link)",
                    job.id,
                    output.display(),
                    real.display()
                ),
            });
        }
        if let Some(dir) = output.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        match job.kind {
            JobKind::Segment => {
                // The mask's shape is known once decoded; the name's format is checked now.
                crate::io::check_mask_path(output, [1, 1, 1])?;
                plan.output(output, &role)?;
            }
            JobKind::Stereo => plan.output_as(output, &role, &output_format::DISPARITY)?,
            JobKind::MaxFlow => plan.output_as(output, &role, &output_format::CUT)?,
        }
    }
    Ok(outputs)
}

/// The summary row of a job skipped because its output exists but which no earlier row
/// records (a run killed between the output and its row): `skipped`, with what the output tells
/// (a max-flow job's flow, the sum of its `s` lines).
fn recovered_row(row: &Row, kind: JobKind) -> Row {
    let mut row = row.clone();
    if kind == JobKind::MaxFlow {
        let text = std::fs::read_to_string(&row.output).unwrap_or_default();
        let flows: Option<Vec<i64>> = text
            .lines()
            .filter_map(|l| l.strip_prefix("s "))
            .map(|v| v.trim().parse().ok())
            .collect();
        row.flow = flows.filter(|f| !f.is_empty()).map(|f| f.iter().sum());
    }
    row
}

fn decode_worker(rx: Stage<Item>, tx: SyncSender<(Item, Result<Decoded>)>, defaults: &Defaults) {
    while let Some(mut item) = recv(&rx) {
        let t = Instant::now();
        let d = guarded("reading the inputs", || decode(&item.job, defaults));
        item.row.read_ms = ms(t.elapsed());
        if tx.send((item, d)).is_err() {
            return;
        }
    }
}

/// The options a worker on `device` solves with: its GPU named in every option set, and a CPU or
/// fake device never lets `auto` touch a GPU.
fn defaults_for(device: Device, workers: usize, defaults: &Defaults) -> Defaults {
    let mut d = defaults.clone();
    if let Device::Cuda(i) = device {
        // The device's workers share it: each sizes its launches to its part of the GPU.
        let gpu = crate::cuda::Device::new(i).shared_by(workers.min(u32::MAX as usize) as u32);
        d.segment.device = gpu;
        d.solve.device = gpu;
        d.stereo.expansion.solve.device = gpu;
    }
    if matches!(device, Device::Cpu | Device::Fake(_)) {
        d.segment.auto.use_gpu = false;
        d.solve.auto.use_gpu = false;
        d.stereo.expansion.solve.auto.use_gpu = false;
    }
    d
}

fn solve_worker(
    device: Device,
    rx: Stage<(Item, Result<Decoded>)>,
    tx: SyncSender<(Item, Result<Done>)>,
    opts: &BatchOptions,
) {
    let defaults = defaults_for(device, opts.workers_per_device.max(1), &opts.defaults);
    // Photos pack only where their graphs stack on a GPU: on the CPU it gains nothing.
    let gpu = matches!(device, Device::Cuda(_));
    // The GPU's context and kernels are set up while the decoders read the first jobs (once
    // per device: the other workers of the device wait for the first). A device that is not
    // usable is the jobs' business: each says why.
    if let Device::Cuda(i) = device {
        let _ = crate::segment::session::warm_up(crate::cuda::Device::new(i));
    }
    let mut mf = MaxFlow::new(defaults.solve.clone());
    let mut segmenter = Segmenter::new(defaults.segment.clone());
    let finish = |mut item: Item, t: Instant, r: Result<(Done, SolveReport)>| {
        item.row.solve_ms = ms(t.elapsed());
        item.row.device = device.to_string();
        let r = r.map(|(done, rep)| {
            item.row.solver = rep.solver;
            item.row.flow = rep.flow;
            item.row.verified = rep.verified;
            done
        });
        tx.send((item, r)).is_ok()
    };
    let alone = |item: Item, decoded: Result<Decoded>, mf: &mut MaxFlow, seg: &mut Segmenter| {
        let t = Instant::now();
        let r =
            decoded.and_then(|d| guarded("solving", || solve(&item.job, d, &defaults, mf, seg)));
        finish(item, t, r)
    };
    while let Some(first) = recv(&rx) {
        let limit = opts.pack_limit(first.0.job.kind);
        let mut group = vec![first];
        // Packing: take more decoded jobs, waiting a little for each: a solve of a small graph
        // is shorter than its decode, so an empty queue is usually a moment early.
        if pack_key(&group[0], &defaults, limit, gpu).is_some() {
            while group.len() < limit {
                let next = rx.lock().ok().and_then(|r| r.recv_timeout(PACK_WAIT).ok());
                match next {
                    Some(x) => group.push(x),
                    None => break,
                }
            }
        }
        for (key, members) in buckets(group, |x| {
            let limit = opts.pack_limit(x.0.job.kind);
            (pack_key(x, &defaults, limit, gpu), limit)
        }) {
            let key = match key {
                Some(key) if members.len() > 1 => key,
                _ => {
                    for (item, decoded) in members {
                        if !alone(item, decoded, &mut mf, &mut segmenter) {
                            return;
                        }
                    }
                    continue;
                }
            };
            let t = Instant::now();
            let (items, decoded): (Vec<Item>, Vec<Decoded>) = members
                .into_iter()
                .map(|(item, d)| match d {
                    Ok(d) => (item, d),
                    Err(_) => unreachable!("packable jobs are decoded"),
                })
                .unzip();
            let n = items.len();
            let results = catch_unwind(AssertUnwindSafe(|| match key {
                PackKey::MaxFlow => {
                    let inputs = decoded
                        .into_iter()
                        .map(|d| match d {
                            Decoded::MaxFlow(insts) => (insts, None),
                            _ => unreachable!("max-flow packs hold max-flow jobs"),
                        })
                        .collect();
                    solve_maxflow_packed(inputs, &mut mf)
                }
                PackKey::Stereo { opts, .. } => solve_stereo_packed(decoded, &opts),
                PackKey::Segment { opts, .. } => {
                    solve_segment_packed(decoded, &opts, &mut segmenter)
                }
            }))
            .unwrap_or_else(|_| {
                (0..n)
                    .map(|_| {
                        Err(Error::Unsupported(
                            "internal error while solving packed".into(),
                        ))
                    })
                    .collect()
            });
            // The packed solve's time is shared: each job is charged its share.
            let share = t.elapsed() / n as u32;
            for (item, r) in items.into_iter().zip(results) {
                let t = Instant::now() - share;
                if !finish(item, t, r) {
                    return;
                }
            }
        }
    }
}

/// Splits `group` into packs, in arrival order: each member joins the first earlier bucket of
/// its key that is not yet full (`key_of` gives its key and its kind's pack limit), else opens
/// one; a member without a key is a bucket of its own. So the photos of two widths that arrive
/// together make two packs, where only the first one's width used to pack.
fn buckets<T, K: PartialEq>(
    group: Vec<T>,
    key_of: impl Fn(&T) -> (Option<K>, usize),
) -> Vec<(Option<K>, Vec<T>)> {
    let mut out: Vec<(Option<K>, Vec<T>)> = Vec::new();
    for x in group {
        let (key, limit) = key_of(&x);
        let open = key.as_ref().and_then(|k| {
            out.iter()
                .position(|(b, m)| b.as_ref() == Some(k) && m.len() < limit)
        });
        match open {
            Some(i) => out[i].1.push(x),
            None => out.push((key, vec![x])),
        }
    }
    out
}

/// How long a solver worker waits for one more job to pack before solving what it has.
const PACK_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

/// What decoded jobs must share to be packed into one solve.
#[derive(Debug, PartialEq)]
enum PackKey {
    /// Max-flow jobs with the batch's own solve options (their grids packed per connectivity).
    MaxFlow,
    /// Stereo pairs of one size and channel count, with the same effective options, on the
    /// device engine (`stereo::gpu::stereo_packed_on_device`).
    Stereo {
        dims: [usize; 3],
        channels: usize,
        opts: Box<crate::stereo::StereoOptions>,
    },
    /// Photos of one width with the same effective options whose graphs are built and cut on
    /// the GPU (`Segmenter::segment_packed`).
    Segment {
        width: usize,
        connectivity: crate::graph::Connectivity,
        opts: Box<crate::segment::SegmentOptions>,
    },
}

/// The job's pack key, or `None` when it runs alone (packing off, a failed decode, options of
/// its own, a stereo pair off the GPU or with the left–right check, a photo off the GPU).
fn pack_key(
    x: &(Item, Result<Decoded>),
    defaults: &Defaults,
    pack: usize,
    gpu: bool,
) -> Option<PackKey> {
    let (item, Ok(decoded)) = x else { return None };
    if pack <= 1 {
        return None;
    }
    match (item.job.kind, decoded) {
        (JobKind::MaxFlow, Decoded::MaxFlow(_)) => {
            (defaults.solve_for(&item.job.overrides).ok().as_ref() == Some(&defaults.solve))
                .then_some(PackKey::MaxFlow)
        }
        (JobKind::Stereo, Decoded::Stereo { left, .. }) => {
            let opts = stereo_pack_options(&item.job, decoded, defaults)?;
            Some(PackKey::Stereo {
                dims: left.dims,
                channels: left.channels,
                opts: Box::new(opts),
            })
        }
        // Volumes do not stack on the device (along y only): they run alone.
        (JobKind::Segment, Decoded::Segment { image, .. }) if gpu && image.dims[2] == 1 => {
            let opts = segment_pack_options(&item.job, decoded, defaults)?;
            Some(PackKey::Segment {
                width: image.dims[0],
                connectivity: opts.connectivity_for(image),
                opts: Box::new(opts),
            })
        }
        _ => None,
    }
}

fn write_worker(
    rx: Stage<(Item, Result<Done>)>,
    tx: std::sync::mpsc::Sender<Row>,
    defaults: &Defaults,
) {
    while let Some((mut item, done)) = recv(&rx) {
        let t = Instant::now();
        let r = done.and_then(|d| {
            guarded("writing the output", || {
                let bytes = encode(&d, &item.output, defaults)?;
                crate::io::write_atomic(&item.output, |w| std::io::Write::write_all(w, &bytes))
            })
        });
        item.row.write_ms = ms(t.elapsed());
        match r {
            Ok(()) => item.row.status = Status::Ok,
            Err(e) => {
                item.row.status = Status::Failed;
                item.row.error = e.to_string();
            }
        }
        if tx.send(item.row).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::buckets;

    #[test]
    fn buckets_pack_each_key_in_arrival_order_up_to_its_limit() {
        // (name, key, limit): widths 481 and 321 interleaved, one job that packs with nothing.
        let group = vec![
            ("a", Some(481), 2),
            ("b", Some(321), 2),
            ("c", None, 4),
            ("d", Some(481), 2),
            ("e", Some(481), 2),
            ("f", Some(321), 2),
        ];
        let got: Vec<(Option<i32>, Vec<&str>)> = buckets(group, |x| (x.1, x.2))
            .into_iter()
            .map(|(k, m)| (k, m.into_iter().map(|x| x.0).collect()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(481), vec!["a", "d"]),
                (Some(321), vec!["b", "f"]),
                (None, vec!["c"]),
                (Some(481), vec!["e"]),
            ]
        );
    }
}
