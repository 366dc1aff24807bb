//! `segcut batch`: many segmentation, stereo and max-flow jobs in one process, so the CUDA
//! context and compiled kernels are set up once, not once per file.
//!
//! - [`manifest`]: where jobs come from (CSV or JSON-lines manifests with per-job options, a
//!   folder laid out by convention, globs);
//! - [`jobs`]: the job kinds, each as decode → solve → encode;
//! - [`exec`]: the pipeline (bounded queues between decode, solver and write workers; one or
//!   more solver workers per device), failure isolation and resume;
//! - [`pack`]: many small grids solved as one packed grid;
//! - [`shard`]: `--shard i/n` and `auto` (Slurm arrays, Kubernetes Indexed Jobs);
//! - [`summary`]: the per-job summary (CSV and JSON lines) and the merge of shards' summaries.
//!
//! ```
//! use segcut::batch::{run_batch, BatchOptions, Device, Quiet};
//! use segcut::batch::manifest::parse_manifest;
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.max"), "p max 3 2\nn 1 s\nn 2 t\na 1 3 4\na 3 2 5\n").unwrap();
//! let jobs = parse_manifest("max\na.max\nmissing.max\n", "jobs.csv", dir.path()).unwrap();
//! let mut opts = BatchOptions::new(dir.path().join("out"));
//! opts.devices = vec![Device::Cpu];
//! let report = run_batch(jobs, &opts, &Quiet).unwrap();
//! assert_eq!((report.ok, report.failed), (1, 1));
//! assert!(std::fs::read_to_string(dir.path().join("out/a.cut")).unwrap().contains("s 4"));
//! ```

pub mod exec;
pub mod jobs;
pub mod manifest;
pub mod pack;
pub mod shard;
pub mod summary;

pub use exec::{
    run_batch, BatchOptions, BatchReport, Device, Observer, Quiet, DEFAULT_SEGMENT_PACK,
    DEFAULT_STEREO_PACK,
};
pub use manifest::{Job, JobKind};
pub use shard::Shard;
