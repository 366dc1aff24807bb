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

/// Refuses a job that needs `need` bytes when the process's [`memory_budget`] is smaller: the
/// one up-front check of a pipeline (segmentation, stereo, a Python graph), made before its
/// first large allocation. `what` names the job ("segmenting a 4100×4100 image"), `advice` what
/// to change. No budget readable: no check (the fallible reservations still catch a failure).
///
/// ```
/// use segcut::io::check_budget;
/// assert!(check_budget("a tiny job", 1, "").is_ok());
/// let e = check_budget("an impossible job", u64::MAX, "ask for less").unwrap_err();
/// assert!(matches!(e, segcut::Error::Memory(_)));
/// assert!(e.to_string().contains("an impossible job needs about"));
/// ```
pub fn check_budget(what: &str, need: u64, advice: &str) -> crate::Result<()> {
    // Beyond any address space: refused even where no budget can be read.
    let budget = memory_budget().or((need > MAX_ADDRESSABLE).then_some(Budget {
        bytes: MAX_ADDRESSABLE,
        source: "the address space of this machine",
    }));
    match budget {
        Some(b) if need > b.bytes => Err(crate::Error::Memory(over_budget(what, need, b, advice))),
        _ => Ok(()),
    }
}

/// 2⁴⁷ bytes: the user address space of x86-64 and AArch64 Linux; no allocation can be larger.
const MAX_ADDRESSABLE: u64 = 1 << 47;

/// The message of a refused job.
fn over_budget(what: &str, need: u64, b: Budget, advice: &str) -> String {
    let advice = if advice.is_empty() {
        String::new()
    } else {
        format!("; {advice}")
    };
    let (mut need_text, mut budget_text) = (bytes_text(need), bytes_text(b.bytes));
    if need_text == budget_text {
        // Close enough to round alike: say by how much.
        need_text = format!("{:.3} GB", need as f64 / 1e9);
        budget_text = format!("{:.3} GB", b.bytes as f64 / 1e9);
    }
    format!(
        "{what} needs about {need_text}, more than the {budget_text} of {}{advice}",
        b.source
    )
}

/// Reserves room for `additional` more values in `v`, or returns [`Error::Memory`] naming
/// `what` instead of aborting the process (the allocator's failure, say under `ulimit -v`, is
/// otherwise fatal in Rust).
///
/// [`Error::Memory`]: crate::Error::Memory
///
/// ```
/// let mut v: Vec<u64> = Vec::new();
/// segcut::io::try_reserve(&mut v, 1000, "the test's values").unwrap();
/// assert!(v.capacity() >= 1000);
/// assert!(segcut::io::try_reserve(&mut v, usize::MAX / 2, "too many").is_err());
/// ```
pub fn try_reserve<T>(v: &mut Vec<T>, additional: usize, what: &str) -> crate::Result<()> {
    v.try_reserve_exact(additional).map_err(|_| {
        let bytes = (additional as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        crate::Error::Memory(format!(
            "cannot allocate {} for {what}: out of memory (the memory limit of this process is \
             reached)",
            bytes_text(bytes)
        ))
    })
}

/// `vec![value; n]`, but an allocation failure is [`Error::Memory`] naming `what`.
///
/// [`Error::Memory`]: crate::Error::Memory
///
/// ```
/// let v = segcut::io::try_vec(3, 7u8, "three bytes").unwrap();
/// assert_eq!(v, [7, 7, 7]);
/// assert!(segcut::io::try_vec(usize::MAX / 4, 0u64, "far too many").is_err());
/// ```
pub fn try_vec<T: Clone>(n: usize, value: T, what: &str) -> crate::Result<Vec<T>> {
    let mut v = Vec::new();
    try_reserve(&mut v, n, what)?;
    v.resize(n, value);
    Ok(v)
}

/// Hands the pages of freed memory back to the system. glibc keeps freed memory in its arenas,
/// so a process's resident size stays at its busiest: a server after evicting sessions, or a
/// benchmark measuring each load's peak from where the resident size stands before it. Does
/// nothing elsewhere than Linux with glibc.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Asks Linux to back `v`'s memory with 2 MiB pages where it first touches it, for a large
/// array about to be filled once on every core (a graph's arrays as a file is loaded): one page
/// fault per 2 MiB rather than per 4 KiB, where the faults (each a trip into the kernel, its
/// page-table lock and memory-group accounting) were a quarter of a grid `.sgb` load's CPU.
/// Only the whole 2 MiB pages inside the array are advised (so the array's resident size can
/// not grow past what it uses); a no-op elsewhere, for arrays below 4 MiB, and where the system
/// does not allow it (transparent huge pages off): the hint changes no value and no size, only
/// how pages are had.
pub(crate) fn advise_huge_pages<T>(v: &[T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + std::mem::size_of_val(v);
        let first = start.next_multiple_of(HUGE);
        let last = end & !(HUGE - 1);
        if last >= first + HUGE {
            // SAFETY: madvise with MADV_HUGEPAGE changes no memory contents and no mapping's
            // extent; the range lies inside `v`'s allocation, which is live for the call.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}
