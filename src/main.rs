//! The `segcut` command line: a thin front end over the library (see `src/cli/`).

mod cli;

fn main() -> std::process::ExitCode {
    cap_malloc_arenas();
    cli::main()
}

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
