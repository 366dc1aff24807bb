//! `segcut bench --startup`: what a fresh `segcut` process pays before its first kernel runs,
//! with an empty kernel cache (NVRTC compiles) and with a filled one (the cubin is loaded).
//!
//! Each measurement is a child process (`segcut bench --startup-child`) that sets up the GPU,
//! loads `grid_pr` and launches one kernel (`segcut::cuda::first_kernel`), then reports its
//! steps and the wall-clock time at which the kernel had finished. The parent notes the clock
//! before spawning the child, so "start → first kernel" covers exec, dynamic loading, the Rust
//! runtime and argument parsing too.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One child's report.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Child {
    context_ms: f64,
    module_ms: f64,
    origin: String,
    launch_ms: f64,
    first_kernel_ms: f64,
    /// Wall clock when the kernel had finished, nanoseconds since the epoch.
    done_ns: u128,
}

/// One measured process, as the parent saw it.
#[derive(Clone, Debug, serde::Serialize)]
struct Record {
    cache: &'static str,
    /// From just before the spawn to the end of the first kernel.
    start_to_kernel_ms: f64,
    /// From just before the spawn to the child's exit.
    process_ms: f64,
    child: Child,
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The child's side: one first kernel, reported as a JSON line on stdout.
pub fn child() -> Result<ExitCode> {
    let t = segcut::cuda::first_kernel(segcut::cuda::Device::default())?;
    let done_ns = now_ns();
    let origin = match t.origin {
        segcut::cuda::ModuleOrigin::Process => "process",
        segcut::cuda::ModuleOrigin::DiskCache => "disk cache",
        segcut::cuda::ModuleOrigin::Compiled => "NVRTC",
    };
    let report = Child {
        context_ms: ms(t.context),
        module_ms: ms(t.module),
        origin: origin.into(),
        launch_ms: ms(t.launch),
        first_kernel_ms: ms(t.total),
        done_ns,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

/// Runs one child with the kernel cache in `dir`.
fn measure(cache: &'static str, dir: &Path) -> Result<Record> {
    let exe = std::env::current_exe().context("finding the segcut executable")?;
    let start_ns = now_ns();
    let t = Instant::now();
    let out = Command::new(exe)
        .args(["bench", "--startup-child"])
        .env(segcut::cuda::CACHE_DIR_VAR, dir)
        .env_remove(segcut::cuda::CACHE_SWITCH_VAR)
        .output()
        .context("running a startup child")?;
    let process_ms = ms(t.elapsed());
    if !out.status.success() {
        bail!(
            "the startup child failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let child: Child = serde_json::from_str(line.trim())
        .with_context(|| format!("reading the startup child's report '{}'", line.trim()))?;
    Ok(Record {
        cache,
        start_to_kernel_ms: child.done_ns.saturating_sub(start_ns) as f64 / 1e6,
        process_ms,
        child,
    })
}

/// A fresh, empty folder for a kernel cache.
fn fresh_dir(tag: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("segcut-startup-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The parent's side: `runs` cold and `runs` warm processes, a table, and optionally the records
/// as JSON.
pub fn run(runs: usize, json: Option<&Path>) -> Result<ExitCode> {
    let runs = runs.max(1);
    let mut records = Vec::new();
    for i in 0..runs {
        let dir = fresh_dir(&format!("cold{i}"))?;
        let r = measure("cold", &dir);
        let _ = std::fs::remove_dir_all(&dir);
        records.push(r?);
    }
    let warm = fresh_dir("warm")?;
    let filled = measure("fill", &warm);
    for _ in 0..runs {
        if filled.is_err() {
            break;
        }
        records.push(measure("warm", &warm)?);
    }
    let _ = std::fs::remove_dir_all(&warm);
    filled?;
    println!(
        "{:<6} {:>16} {:>12} {:>10} {:>10} {:>10} {:>10}  module from",
        "cache", "start→kernel ms", "process ms", "before ms", "context", "module", "launch"
    );
    for r in &records {
        let c = &r.child;
        println!(
            "{:<6} {:>16.1} {:>12.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}  {}",
            r.cache,
            r.start_to_kernel_ms,
            r.process_ms,
            r.start_to_kernel_ms - c.first_kernel_ms,
            c.context_ms,
            c.module_ms,
            c.launch_ms,
            c.origin
        );
    }
    for cache in ["cold", "warm"] {
        let mut v: Vec<f64> = records
            .iter()
            .filter(|r| r.cache == cache)
            .map(|r| r.start_to_kernel_ms)
            .collect();
        v.sort_by(f64::total_cmp);
        if let Some(m) = v.get(v.len() / 2) {
            println!(
                "{cache}: median start → first kernel {m:.1} ms over {} processes",
                v.len()
            );
        }
    }
    println!(
        "(before: exec, loading, runtime and argument parsing; context: driver and primary \
         context; module: grid_pr's module; launch: kernel lookup, stream, buffers, one launch)"
    );
    if let Some(path) = json {
        segcut::io::write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &records).map_err(std::io::Error::other)
        })?;
    }
    Ok(ExitCode::SUCCESS)
}
