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
//! Resume: outputs are written atomically (a temporary file renamed into place), so an output
//! that exists is complete; a job whose output exists is skipped unless `force`.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::jobs::{
    decode, default_template, encode, fill_template, solve, solve_maxflow_packed, Decoded,
    Defaults, Done, SolveReport,
};
use super::manifest::{Job, JobKind};
use super::shard::Shard;
use super::summary::{Row, Status, SummaryWriter};
use crate::maxflow::MaxFlow;
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
    /// Max-flow jobs a solver worker packs into one solve (1: none packed).
    pub pack: usize,
    /// Redo jobs whose outputs exist.
    pub force: bool,
    /// Stop starting jobs after the first failure.
    pub fail_fast: bool,
    /// This process's share of the jobs.
    pub shard: Shard,
    /// The summary's path without extension; `None`: `OUT/summary` (`OUT/summary.I-of-N` for a
    /// shard).
    pub summary: Option<PathBuf>,
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
            pack: 1,
            force: false,
            fail_fast: false,
            shard: Shard::default(),
            summary: None,
        }
    }

    /// The summary's path without extension.
    pub fn summary_stem(&self) -> PathBuf {
        self.summary
            .clone()
            .unwrap_or_else(|| self.out_dir.join(format!("summary{}", self.shard.suffix())))
    }

    /// Where `job` writes its output.
    pub fn output_of(&self, job: &Job) -> PathBuf {
        match &job.output {
            Some(p) => self.out_dir.join(p),
            None => {
                let t = self
                    .template
                    .as_deref()
                    .unwrap_or(default_template(job.kind));
                self.out_dir.join(fill_template(t, &job.id, job.kind))
            }
        }
    }
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
    std::fs::create_dir_all(&opts.out_dir).map_err(|e| Error::io(&opts.out_dir, e))?;
    let mine: Vec<Job> = jobs
        .into_iter()
        .enumerate()
        .filter(|(i, _)| opts.shard.contains(*i))
        .map(|(_, j)| j)
        .collect();
    // Every output once, and its folder made before any work starts.
    let mut outputs = HashSet::new();
    let mut todo = Vec::new();
    let mut skipped_rows = Vec::new();
    for job in mine {
        let output = opts.output_of(&job);
        if !outputs.insert(output.clone()) {
            return Err(Error::Input {
                file: job.origin.clone(),
                msg: format!(
                    "job '{}' writes {}, which another job writes too",
                    job.id,
                    output.display()
                ),
            });
        }
        if job.inputs().iter().any(|p| same_file(p, &output)) {
            return Err(Error::Input {
                file: job.origin.clone(),
                msg: format!(
                    "job '{}' would overwrite its own input {}",
                    job.id,
                    output.display()
                ),
            });
        }
        if let Some(dir) = output.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let row = Row {
            job: job.id.clone(),
            kind: job.kind.name().into(),
            output: output.display().to_string(),
            ..Row::default()
        };
        if !opts.force && output.is_file() {
            skipped_rows.push(row);
        } else {
            todo.push(Item { job, output, row });
        }
    }
    let mut summary = SummaryWriter::open(&opts.summary_stem())?;
    let mut report = BatchReport {
        total: todo.len() + skipped_rows.len(),
        skipped: skipped_rows.len(),
        summary: summary.paths().to_vec(),
        ..BatchReport::default()
    };
    observer.start(report.total, report.skipped);
    for row in &skipped_rows {
        summary.append(row)?;
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

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
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
fn defaults_for(device: Device, defaults: &Defaults) -> Defaults {
    let mut d = defaults.clone();
    if let Device::Cuda(i) = device {
        let gpu = crate::cuda::Device::new(i);
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
    let defaults = defaults_for(device, &opts.defaults);
    let mut mf = MaxFlow::new(defaults.solve.clone());
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
    while let Some(first) = recv(&rx) {
        let mut group = vec![first];
        // Packing: take more decoded max-flow jobs, waiting a little for each: a solve of a
        // small graph is shorter than its decode, so an empty queue is usually a moment early.
        if opts.pack > 1 && packable(&group[0], &defaults) {
            while group.len() < opts.pack {
                let next = rx.lock().ok().and_then(|r| r.recv_timeout(PACK_WAIT).ok());
                match next {
                    Some(x) => group.push(x),
                    None => break,
                }
            }
        }
        let (pack, single): (Vec<_>, Vec<_>) = group
            .into_iter()
            .partition(|x| opts.pack > 1 && packable(x, &defaults));
        for (item, decoded) in single {
            let t = Instant::now();
            let r = decoded
                .and_then(|d| guarded("solving", || solve(&item.job, d, &defaults, &mut mf)));
            if !finish(item, t, r) {
                return;
            }
        }
        if pack.len() == 1 {
            let (item, decoded) = pack.into_iter().next().expect("one");
            let t = Instant::now();
            let r = decoded
                .and_then(|d| guarded("solving", || solve(&item.job, d, &defaults, &mut mf)));
            if !finish(item, t, r) {
                return;
            }
        } else if !pack.is_empty() {
            let t = Instant::now();
            let (items, inputs): (Vec<Item>, Vec<_>) = pack
                .into_iter()
                .map(|(item, d)| match d {
                    Ok(Decoded::MaxFlow(insts)) => (item, (insts, None)),
                    _ => unreachable!("packable jobs are decoded max-flow jobs"),
                })
                .unzip();
            let n = items.len();
            let results = catch_unwind(AssertUnwindSafe(|| solve_maxflow_packed(inputs, &mut mf)))
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

/// How long a solver worker waits for one more job to pack before solving what it has.
const PACK_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

fn packable(x: &(Item, Result<Decoded>), defaults: &Defaults) -> bool {
    x.0.job.kind == JobKind::MaxFlow
        && matches!(x.1, Ok(Decoded::MaxFlow(_)))
        && defaults.solve_for(&x.0.job.overrides).ok().as_ref() == Some(&defaults.solve)
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
