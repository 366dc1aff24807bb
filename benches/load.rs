//! Loading speed of each format segcut reads, the same table as `segcut bench --suite load`
//! (see `segcut::bench::load`): `cargo bench --bench load` times the load suite's graphs, or
//! `SEGCUT_LOAD_SPEC=2d:4096x4096:n4:c10:s1 cargo bench --bench load` the graphs named
//! (comma-separated). `SEGCUT_LOAD_RUNS` runs each (default 3; the median is reported); files go
//! to `SEGCUT_LOAD_DIR` (default: a temporary folder). The page cache is warm after writing, so
//! this measures the readers, not the disk.

use segcut::bench::{load, suite, BenchInstance, SuiteOptions};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let instances: Vec<BenchInstance> = match std::env::var("SEGCUT_LOAD_SPEC") {
        Ok(specs) => specs.split(',').map(|s| s.parse().unwrap()).collect(),
        Err(_) => suite("load", &SuiteOptions::default()).unwrap().instances,
    };
    let runs: usize = std::env::var("SEGCUT_LOAD_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("SEGCUT_LOAD_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    println!("| instance | input | file MB | text MB | s | file MB/s | text MB/s | same graph |");
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    let records = load::run(&instances, &dir, runs, |ev| {
        if let load::LoadEvent::Done(r) = ev {
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0} | {} |",
                r.instance,
                r.what,
                r.file_bytes as f64 / 1e6,
                r.text_bytes as f64 / 1e6,
                r.seconds,
                r.file_mb_s,
                r.text_mb_s,
                r.same_graph
            );
        }
    })
    .unwrap();
    assert!(records.iter().all(|r| r.same_graph));
}
