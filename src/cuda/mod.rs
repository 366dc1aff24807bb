//! The CUDA runtime shared by every GPU path: finding a GPU, the process-wide context, NVRTC
//! compilation of the kernels in `kernels/` with the on-disk kernel cache, and device buffers
//! shaped like the library's graphs ([`DeviceGrid`]).
//!
//! Nothing here needs CUDA at build time: the driver and NVRTC are loaded when first used, and
//! without them [`gpu_available`] is false and every entry point returns
//! [`Error::Unsupported`](crate::Error::Unsupported).
//!
//! ```
//! use segcut::cuda;
//! match cuda::gpu_unavailable_reason() {
//!     None => println!("GPU: {}", cuda::gpu().unwrap().name),
//!     Some(why) => println!("no GPU ({why}): the CPU solver is used"),
//! }
//! ```

mod device;
mod runtime;

pub use device::DeviceGrid;
pub(crate) use runtime::driver_err;
pub use runtime::{
    cache_dir, cache_dir_from, cache_key, compile_all_kernels_ptx, compile_cubin, compile_options,
    compile_ptx, entry_path, gpu, gpu_available, gpu_unavailable_reason, nvrtc_available,
    nvrtc_version, read_entry, write_entry, Gpu, KERNELS, MIN_DRIVER_VERSION, OLDEST_ARCH,
};
