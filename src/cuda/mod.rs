//! The CUDA runtime shared by every GPU path (the max-flow solvers in
//! [`maxflow::cuda`](crate::maxflow::cuda) and the segmentation energy builder): the [`Device`]
//! every GPU builder and solver is given explicitly, and its [`Session`]s (a stream, buffers kept
//! between solves of one size, pinned staging); each device's context, NVRTC compilation of the kernels in `kernels/` with the shared header
//! `kernels/common.cuh`, the kernel cache on disk, device buffers shaped like the library's graphs
//! ([`DeviceGrid`], [`GridShape`]), driver errors, and the typed launchers (`launch/`), the only
//! code that knows a kernel's argument order and launch shape.
//!
//! Nothing here needs CUDA at build time: the driver and NVRTC are loaded when first used, and
//! without them [`gpu_available`] is false and every entry point returns
//! [`Error::Unsupported`](crate::Error::Unsupported).
//!
//! # Environment
//!
//! The only variables the library reads, both about the kernel cache ([`KernelCache`]; a
//! program may choose with [`set_kernel_cache`] instead):
//!
//! | variable | effect |
//! |---|---|
//! | `SEGCUT_CACHE_DIR=<folder>` | keep compiled kernels there instead of `$XDG_CACHE_HOME/segcut` (or `~/.cache/segcut`) |
//! | `SEGCUT_KERNEL_CACHE=0` | no disk cache: NVRTC compiles the kernels in every process |
//!
//! Where the CUDA libraries are found is the dynamic loader's business (`LD_LIBRARY_PATH`).
//!
//! ```
//! use segcut::cuda::Device;
//! let dev = Device::new(0);
//! let line = match dev.unavailable_reason() {
//!     None => format!("GPU: {}", dev.gpu().unwrap().name),
//!     Some(why) => format!("no GPU ({why}): the CPU solver is used"),
//! };
//! assert!(!line.is_empty());
//! ```

mod cache;
mod compile;
mod device;
pub(crate) mod launch;
pub(crate) mod runtime;
mod session;
mod startup;

pub use cache::{
    cache_key, entry_path, kernel_cache, read_entry, set_kernel_cache, write_entry, CacheInputs,
    KernelCache, CACHE_DIR_VAR, CACHE_SWITCH_VAR,
};
pub use compile::{
    compile_all_kernels_ptx, compile_cubin, compile_options, compile_ptx, nvrtc_available,
    nvrtc_version, COMMON_HEADER, KERNELS, OLDEST_ARCH,
};
pub(crate) use device::{clear, copy_to_host, download, read_words, sync, upload, wait_for, zeros};
pub use device::{
    device_allocations, grid_bytes_per_node, host_waits, DeviceCounts, DeviceGrid, GridShape,
};
pub use launch::BLOCK;
pub(crate) use runtime::Call;
pub use runtime::{
    device_count, gpu, gpu_at, gpu_available, gpu_unavailable_reason, Gpu, ModuleOrigin,
    MAX_DEVICES, MIN_DRIVER_VERSION,
};
pub use session::{Device, Session};
pub use startup::{first_kernel, FirstKernel};
