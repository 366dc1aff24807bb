//! The `segcut` command line: a thin front end over the library (see `src/cli/`).

mod cli;

fn main() -> std::process::ExitCode {
    cap_malloc_arenas();
    cli::main()
}

/// Called by the commands that load graph files (`maxflow`, `convert`, `bench --suite load`), not
/// process-wide: the segmentation and stereo pipelines allocate and free large per-round
/// buffers, which the raised threshold keeps cheap to reuse.
///
/// glibc raises its mmap threshold (up to 32 MB) each time a large block is freed, and from
/// then on blocks below it come from the heaps, which keep their freed pages resident (one per
/// thread's arena): a graph load frees a few such blocks early (its probe of the node arrays,
/// the arc builder a grid placement leaves), and with 16 threads the rest of the load then held
/// 40 % more than the graph (a 2048² 8-connected grid: 253 MB at its peak, 195 MB with the
/// threshold fixed, graph 168 MB; 2-core dev VM, `RAYON_NUM_THREADS=16`). Fixed at glibc's own
/// default, large blocks always go back to the system when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn fix_mmap_threshold() {
    // SAFETY: mallopt changes a tuning value of the allocator (under glibc's own lock); the
    // commands call it first, before they start their threads.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn fix_mmap_threshold() {}

/// Under an address-space limit (`ulimit -v`, as on batch nodes), glibc gives each thread that
/// contends for the allocator an arena reserving 64 MB of address space, up to 8 per core: on a
/// 16-core host that alone can exceed a 1 GB limit, and an allocation the memory budget allowed
/// then fails (an abort). Two arenas keep the reservations small; without a limit nothing changes.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn cap_malloc_arenas() {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given; mallopt changes a tuning value of
    // the allocator and runs before any other thread exists.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_AS, &mut r) == 0 && r.rlim_cur != libc::RLIM_INFINITY {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn cap_malloc_arenas() {}
