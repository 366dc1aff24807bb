//! `segcut batch` on real GPUs: two solver workers on two devices give the same outputs as one
//! device, and both devices take jobs. Needs two visible GPUs: skipped with fewer, unless
//! `SEGCUT_REQUIRE_GPUS=2` (then fewer fails); with one GPU and `SEGCUT_REQUIRE_GPU=1`, the
//! one-device half still runs (the batch on `cuda:0` against the CPU).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use segcut::batch::manifest::parse_manifest;
use segcut::batch::summary::{read_summary, Row, Status};
use segcut::batch::{run_batch, BatchOptions, BatchReport, Device, Quiet};
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

/// Runs `jobs` with one worker on GPU 0 packing up to `pack` jobs, `set` applied to the options:
/// the report and the summary's rows.
fn run_packed(
    jobs: &[segcut::batch::Job],
    pack: usize,
    out: &Path,
    set: impl Fn(&mut BatchOptions),
) -> (BatchReport, Vec<Row>) {
    let mut opts = BatchOptions::new(out);
    opts.devices = vec![Device::Cuda(0)];
    opts.workers_per_device = 1;
    opts.io_threads = 2;
    opts.pack = Some(pack);
    set(&mut opts);
    let report = run_batch(jobs.to_vec(), &opts, &Quiet).unwrap();
    let rows = read_summary(&out.join("summary.csv")).unwrap();
    (report, rows)
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

/// `--pack 4` with stereo jobs on one GPU: pairs of one size and the same options run packed
/// (`cuda-grid+packed`), the others alone; every map is the one `--pack 1` writes, byte for byte;
/// a job whose left view is missing fails alone, and a pair of another size or with options of
/// its own runs alone.
#[test]
fn packed_stereo_jobs_write_what_single_runs_write() {
    if !common::gpu_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut csv = String::from("id,left,right,disparities\n");
    for i in 0..9u32 {
        let (l, r) = common::stereo_pair(d, &format!("p{i}"), 1 + i % 5);
        // Job 7 has a count of its own; job 8's left view is missing.
        let count = if i == 7 { 6 } else { 8 };
        let left = if i == 8 {
            d.join("missing.png")
        } else {
            l.clone()
        };
        csv.push_str(&format!(
            "p{i},{},{},{count}\n",
            left.display(),
            r.display()
        ));
    }
    // A pair of another size.
    let img =
        image::GrayImage::from_fn(40, 30, |x, y| image::Luma([((x * 7 + y * 13) % 251) as u8]));
    img.save(d.join("small_l.png")).unwrap();
    img.save(d.join("small_r.png")).unwrap();
    csv.push_str(&format!(
        "small,{},{},8\n",
        d.join("small_l.png").display(),
        d.join("small_r.png").display()
    ));
    let jobs = parse_manifest(&csv, "stereo-jobs.csv", d).unwrap();
    let run_with = |pack: usize, out: &Path| {
        run_packed(&jobs, pack, out, |o| {
            o.defaults.stereo.expansion.solve.solver = SolverKind::CudaGrid
        })
    };
    let (one, d1) = (d.join("one"), d.join("packed"));
    let (r1, rows1) = run_with(1, &one);
    let (r4, rows4) = run_with(4, &d1);
    assert_eq!((r1.ok, r1.failed), (9, 1));
    assert_eq!((r4.ok, r4.failed), (9, 1));
    for r in &rows4 {
        assert_eq!(
            r.status == Status::Failed,
            r.job == "p8",
            "{}: {}",
            r.job,
            r.error
        );
        if ["p7", "small"].contains(&r.job.as_str()) {
            assert!(
                !r.solver.contains("packed"),
                "{} ran alone: {}",
                r.job,
                r.solver
            );
        }
    }
    assert!(
        rows4.iter().any(|r| r.solver == "cuda-grid+packed"),
        "no job ran packed: {:?}",
        rows4.iter().map(|r| &r.solver).collect::<Vec<_>>()
    );
    assert!(rows1.iter().all(|r| !r.solver.contains("packed")));
    assert_eq!(outputs(&one), outputs(&d1));
}

#[test]
fn packed_segmentation_jobs_write_what_single_runs_write() {
    if !common::gpu_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let samples = common::repo_root().join("samples");
    std::fs::copy(samples.join("balloon.png"), d.join("balloon.png")).unwrap();
    std::fs::copy(samples.join("balloon-seeds.png"), d.join("seeds.png")).unwrap();
    let mut csv = String::from("id,image,seeds,lambda,connectivity\n");
    for i in 0..9u32 {
        // Job 7 has options of its own (runs alone); job 8's seeds are missing (fails alone).
        let (lambda, conn) = if i == 7 { (70, 4) } else { (100, 8) };
        let seeds = if i == 8 { "missing.png" } else { "seeds.png" };
        csv.push_str(&format!("s{i},balloon.png,{seeds},{lambda},{conn}\n"));
    }
    let jobs = parse_manifest(&csv, "segment-jobs.csv", d).unwrap();
    let run_with = |pack: usize, out: &Path| {
        run_packed(&jobs, pack, out, |o| {
            o.defaults.segment.solver = SolverKind::CudaGrid
        })
    };
    let (one, packed) = (d.join("one"), d.join("packed"));
    let (r1, rows1) = run_with(1, &one);
    let (r4, rows4) = run_with(4, &packed);
    assert_eq!((r1.ok, r1.failed), (8, 1));
    assert_eq!((r4.ok, r4.failed), (8, 1));
    for r in &rows4 {
        assert_eq!(
            r.status == Status::Failed,
            r.job == "s8",
            "{}: {}",
            r.job,
            r.error
        );
        if r.job == "s7" {
            assert!(!r.solver.contains("packed"), "s7 ran alone: {}", r.solver);
        }
    }
    assert!(
        rows4.iter().any(|r| r.solver.ends_with("+packed")),
        "no job ran packed: {:?}",
        rows4.iter().map(|r| &r.solver).collect::<Vec<_>>()
    );
    assert!(rows1.iter().all(|r| !r.solver.contains("packed")));
    // Flows per job agree too (the summary's column).
    let flows = |rows: &[segcut::batch::summary::Row]| {
        let mut v: Vec<_> = rows.iter().map(|r| (r.job.clone(), r.flow)).collect();
        v.sort();
        v
    };
    assert_eq!(flows(&rows1), flows(&rows4));
    assert_eq!(outputs(&one), outputs(&packed));
}
