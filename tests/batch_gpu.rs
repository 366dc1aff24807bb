//! `segcut batch` on real GPUs: two solver workers on two devices give the same outputs as one
//! device, and both devices take jobs. Needs two visible GPUs: skipped with fewer, unless
//! `SEGCUT_REQUIRE_GPUS=2` (then fewer fails); with one GPU and `SEGCUT_REQUIRE_GPU=1`, the
//! one-device half still runs (the batch on `cuda:0` against the CPU).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use segcut::batch::manifest::parse_manifest;
use segcut::batch::summary::{read_summary, Status};
use segcut::batch::{run_batch, BatchOptions, Device, Quiet};
use segcut::maxflow::SolverKind;

fn jobs(d: &Path) -> Vec<segcut::batch::Job> {
    let samples = common::repo_root().join("samples");
    std::fs::copy(samples.join("balloon.png"), d.join("balloon.png")).unwrap();
    std::fs::copy(samples.join("balloon-seeds.png"), d.join("seeds.png")).unwrap();
    std::fs::copy(samples.join("vision-2d-64x64.max"), d.join("grid.max")).unwrap();
    let mut csv = String::from("id,image,seeds,max,lambda\n");
    for i in 0..16 {
        csv.push_str(&format!("s{i},balloon.png,seeds.png,,{}\n", 40 + 10 * i));
        csv.push_str(&format!("m{i},,,grid.max,\n"));
    }
    parse_manifest(&csv, "gpu-jobs.csv", d).unwrap()
}

fn run(jobs: &[segcut::batch::Job], devices: Vec<Device>, out: &Path, solver: SolverKind) {
    let mut opts = BatchOptions::new(out);
    opts.devices = devices;
    opts.workers_per_device = 2;
    opts.defaults.segment.solver = solver;
    opts.defaults.solve.solver = solver;
    let report = run_batch(jobs.to_vec(), &opts, &Quiet).unwrap();
    let rows = read_summary(&out.join("summary.csv")).unwrap();
    for r in &rows {
        assert_eq!(r.status, Status::Ok, "{}: {}", r.job, r.error);
    }
    assert_eq!(report.ok, jobs.len());
}

fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| !p.to_string_lossy().contains("summary"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .map(|(n, b)| (n.rsplit('/').next().unwrap().to_string(), b))
        .collect();
    v.sort();
    v
}

#[test]
fn two_gpus_give_the_results_of_one() {
    if !common::gpu_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let jobs = jobs(d);
    run(&jobs, vec![Device::Cpu], &d.join("cpu"), SolverKind::Bk);
    run(
        &jobs,
        vec![Device::Cuda(0)],
        &d.join("gpu0"),
        SolverKind::CudaGrid,
    );
    assert_eq!(
        outputs(&d.join("cpu")),
        outputs(&d.join("gpu0")),
        "cuda:0 against bk"
    );

    let count = segcut::cuda::device_count();
    if count < 2 {
        if std::env::var("SEGCUT_REQUIRE_GPUS").is_ok_and(|v| v.trim() == "2") {
            panic!("SEGCUT_REQUIRE_GPUS=2 but {count} GPU(s) are visible");
        }
        common::skipped(&format!(
            "two-GPU half: {count} GPU(s) visible (set SEGCUT_REQUIRE_GPUS=2 to require two)"
        ));
        return;
    }
    segcut::cuda::gpu_at(1).expect("GPU 1 usable");
    run(
        &jobs,
        vec![Device::Cuda(1)],
        &d.join("gpu1"),
        SolverKind::CudaGrid,
    );
    assert_eq!(
        outputs(&d.join("gpu0")),
        outputs(&d.join("gpu1")),
        "cuda:1 against cuda:0"
    );
    let both = d.join("both");
    run(
        &jobs,
        vec![Device::Cuda(0), Device::Cuda(1)],
        &both,
        SolverKind::CudaGrid,
    );
    assert_eq!(
        outputs(&d.join("gpu0")),
        outputs(&both),
        "two GPUs against one"
    );
    let rows = read_summary(&both.join("summary.csv")).unwrap();
    let used: BTreeSet<String> = rows.iter().map(|r| r.device.clone()).collect();
    assert_eq!(
        used,
        ["cuda:0", "cuda:1"].map(String::from).into_iter().collect(),
        "both GPUs took jobs"
    );
    assert!(
        rows.iter().all(|r| r.solver.contains("cuda-grid")),
        "ran on the GPU"
    );
}
