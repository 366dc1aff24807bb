//! How much memory this process may still use, so that inputs too large for it are refused with
//! a message before anything is allocated, instead of aborting halfway.
//!
//! The budget is the smallest of: the machine's available memory (`MemAvailable`), the headroom
//! under the address-space limit (`ulimit -v`, `RLIMIT_AS`) and the headroom under the cgroup's
//! memory limit (containers, Slurm jobs). Each is read from `/proc` and `/sys` on Linux; where
//! none can be read there is no budget and no check.

/// A memory budget and where it comes from (for the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Bytes that may still be allocated.
    pub bytes: u64,
    /// Which limit this is: `available memory`, `the address-space limit (ulimit -v)` or `the
    /// cgroup memory limit`.
    pub source: &'static str,
}

/// The tightest memory budget of this process now; `None` where no limit can be read.
pub fn memory_budget() -> Option<Budget> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    budget_from(
        read("/proc/meminfo").as_deref(),
        read("/proc/self/limits").as_deref(),
        read("/proc/self/status").as_deref(),
        cgroup_files()
            .as_ref()
            .map(|(m, c)| (m.as_str(), c.as_str())),
    )
}

/// [`memory_budget`] from the texts of `/proc/meminfo`, `/proc/self/limits`, `/proc/self/status`
/// and the cgroup's `memory.max` and `memory.current` (so that it can be tested).
///
/// ```
/// use segcut::io::budget_from;
/// let meminfo = "MemTotal: 100 kB\nMemAvailable: 8000 kB\n";
/// let limits = "Max address space         1048576              1048576              bytes\n";
/// let status = "VmSize:\t  512 kB\n";
/// let b = budget_from(Some(meminfo), Some(limits), Some(status), None).unwrap();
/// assert_eq!(b.bytes, 1048576 - 512 * 1024);
/// assert!(b.source.contains("ulimit"));
/// let b = budget_from(Some(meminfo), None, None, Some(("4096000\n", "96000\n"))).unwrap();
/// assert_eq!((b.bytes, b.source), (4_000_000, "the cgroup memory limit"));
/// ```
pub fn budget_from(
    meminfo: Option<&str>,
    limits: Option<&str>,
    status: Option<&str>,
    cgroup: Option<(&str, &str)>,
) -> Option<Budget> {
    let mut best: Option<Budget> = None;
    let mut offer = |bytes: u64, source: &'static str| {
        if best.is_none_or(|b| bytes < b.bytes) {
            best = Some(Budget { bytes, source });
        }
    };
    if let Some(kib) = meminfo.and_then(|t| field_kib(t, "MemAvailable:")) {
        offer(kib.saturating_mul(1024), "available memory");
    }
    let as_limit = limits.and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("Max address space"))?;
        line.split_whitespace().nth(3)?.parse::<u64>().ok()
    });
    if let Some(limit) = as_limit {
        let used = status
            .and_then(|t| field_kib(t, "VmSize:"))
            .unwrap_or(0)
            .saturating_mul(1024);
        offer(
            limit.saturating_sub(used),
            "the address-space limit (ulimit -v)",
        );
    }
    if let Some((max, current)) = cgroup {
        if let (Ok(max), Ok(cur)) = (max.trim().parse::<u64>(), current.trim().parse::<u64>()) {
            offer(max.saturating_sub(cur), "the cgroup memory limit");
        }
    }
    best
}

/// A `Name:   123 kB` field of a `/proc` file.
fn field_kib(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `memory.max` and `memory.current` of this process's cgroup (v2), when it has a limit.
fn cgroup_files() -> Option<(String, String)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    // cgroup v2: the line `0::/path`.
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let dir = std::path::Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
    let max = std::fs::read_to_string(dir.join("memory.max")).ok()?;
    if max.trim() == "max" {
        return None;
    }
    let current = std::fs::read_to_string(dir.join("memory.current")).ok()?;
    Some((max, current))
}

/// Bytes as `1.5 GB`, `12 MB`, `800 kB`.
pub(crate) fn bytes_text(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}
