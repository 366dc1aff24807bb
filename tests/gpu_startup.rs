//! The kernel cache across processes, on the GPU: a fresh process with an empty cache compiles
//! with NVRTC and fills it, the next one loads the cubin, and damaged entries are compiled again
//! without an error. Each process is `segcut bench --startup-child` (one first kernel, reported
//! as JSON). Without a usable GPU each test says so and returns, unless `SEGCUT_REQUIRE_GPU=1`.

mod common;

use std::path::Path;
use std::process::Command;

use common::{gpu_or_skip, segcut_bin};

/// Runs one startup child with the kernel cache in `dir`; returns where its module came from.
fn child(dir: &Path) -> String {
    let out = Command::new(segcut_bin())
        .args(["bench", "--startup-child"])
        .env("SEGCUT_CACHE_DIR", dir)
        .env_remove("SEGCUT_KERNEL_CACHE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    for key in ["context_ms", "module_ms", "launch_ms", "first_kernel_ms"] {
        let ms = v[key].as_f64().unwrap_or(-1.0);
        assert!(ms >= 0.0, "{key} missing or negative: {stdout}");
    }
    v["origin"].as_str().unwrap().to_string()
}

fn cubins(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cubin"))
        .collect()
}

#[test]
fn a_second_process_loads_the_cubin_the_first_compiled() {
    if !gpu_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(child(dir.path()), "NVRTC");
    let files = cubins(dir.path());
    assert_eq!(files.len(), 1, "one entry for grid_pr: {files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("grid_pr-sm_"), "{name}");
    assert_eq!(child(dir.path()), "disk cache");
    assert_eq!(cubins(dir.path()), files, "a hit writes nothing");
}

#[test]
fn damaged_entries_are_compiled_again_without_an_error() {
    if !gpu_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(child(dir.path()), "NVRTC");
    let entry = cubins(dir.path()).pop().unwrap();
    let good = std::fs::read(&entry).unwrap();
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x55;
    for (what, bytes) in [
        ("flipped byte", flipped),
        ("truncated", good[..good.len() / 3].to_vec()),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&entry, &bytes).unwrap();
        assert_eq!(child(dir.path()), "NVRTC", "{what}");
        // The compile rewrote the entry: the next process hits it.
        assert_eq!(child(dir.path()), "disk cache", "{what}: not rewritten");
    }
}

#[test]
fn startup_bench_reports_cold_and_warm_processes() {
    if !gpu_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("startup.json");
    let out = Command::new(segcut_bin())
        .args(["bench", "--startup", "--runs", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("cold: median"), "{stdout}");
    assert!(stdout.contains("warm: median"), "{stdout}");
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let of = |cache: &str| records.iter().filter(|r| r["cache"] == cache).count();
    assert_eq!((of("cold"), of("warm")), (2, 2), "{records:?}");
    for r in &records {
        let origin = r["child"]["origin"].as_str().unwrap();
        let want = if r["cache"] == "cold" {
            "NVRTC"
        } else {
            "disk cache"
        };
        assert_eq!(origin, want, "{r}");
        let total = r["start_to_kernel_ms"].as_f64().unwrap();
        let inside = r["child"]["first_kernel_ms"].as_f64().unwrap();
        assert!(
            total >= inside,
            "start → kernel {total} < in-process {inside}: {r}"
        );
        assert!(r["process_ms"].as_f64().unwrap() >= total - 1.0, "{r}");
    }
}

#[test]
fn without_a_gpu_the_startup_bench_fails_with_the_reason() {
    if segcut::cuda::gpu_available() {
        return; // covered by the tests above
    }
    let out = Command::new(segcut_bin())
        .args(["bench", "--startup", "--runs", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("startup child failed"), "{err}");
}
