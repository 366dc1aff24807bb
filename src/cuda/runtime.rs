//! The process's GPUs: loading the driver, each device's primary context (set up once per device,
//! on first use), what the solvers ask
//! of the device (name, architecture, multiprocessors, free memory), driver errors, and the
//! kernel modules (from the process, from the disk cache, or compiled by NVRTC).
//!
//! Both CUDA libraries are loaded at run time (`libcuda` from the driver, `libnvrtc` from the
//! toolkit or PyPI), so the crate builds and runs on machines without CUDA; there every entry point
//! returns [`Error::Unsupported`] and [`gpu_available`] is false. The loader panics when asked for
//! a library that is missing, so every path checks for the library before its first call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, CudaModule, DriverError};
use cudarc::nvrtc::Ptx;

use super::cache::{cache_key, entry_path, kernel_cache, read_entry, write_entry, CacheInputs};
use super::compile::{
    compile_cubin, compile_options, compile_ptx, kernel_file, nvrtc_available, nvrtc_version,
    COMMON_HEADER,
};
use crate::{Error, Result};

/// The oldest CUDA driver API version the GPU solvers run on (13.0, as `cuDriverGetVersion`
/// reports it).
pub const MIN_DRIVER_VERSION: i32 = 13000;

/// The GPU this process uses: device 0, its primary context, and what the solvers need to know
/// about it.
pub struct Gpu {
    /// The primary context of device 0, shared by every solve in the process.
    pub ctx: Arc<CudaContext>,
    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// The NVRTC architecture of the device, e.g. `sm_90`.
    pub arch: String,
    /// The driver's CUDA version as `cuDriverGetVersion` reports it (13000 for 13.0).
    pub driver_version: i32,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Whether the device runs cooperative launches (every block resident at once), which the
    /// persistent grid solve needs.
    pub cooperative: bool,
    /// How long setting up this value took: loading the driver, creating the context.
    pub init_time: Duration,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("name", &self.name)
            .field("arch", &self.arch)
            .field("driver_version", &self.driver_version)
            .finish()
    }
}

/// Maps a driver error to the crate's error, naming the call that failed.
pub(crate) fn driver_err(call: &str, e: DriverError) -> Error {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Error::Unsupported(format!("CUDA call {call} failed: {name} ({text})"))
}

/// Driver results turned into the crate's, naming the call: `stream.alloc_zeros(n).call("cuMemAlloc
/// (labels)")?`.
pub(crate) trait Call<T> {
    /// The value, or an error naming `call`.
    fn call(self, call: &str) -> Result<T>;
}

impl<T> Call<T> for std::result::Result<T, DriverError> {
    fn call(self, call: &str) -> Result<T> {
        self.map_err(|e| driver_err(call, e))
    }
}

fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the library; no symbol of it is called.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// Device 0's set-up ([`gpu_at`]`(0)`), for messages about "the GPU" of a one-GPU machine.
/// Solvers and builders never call it: they take a [`Device`](super::Device) from their caller.
/// A failure is remembered, so the reason is computed (and reported) once.
///
/// ```
/// // A name for the user, or why there is no GPU (the caller decides where it goes).
/// let line = match segcut::cuda::gpu() {
///     Ok(g) => format!("{} ({})", g.name, g.arch),
///     Err(e) => format!("no GPU: {e}"),
/// };
/// assert!(!line.is_empty());
/// ```
pub fn gpu() -> Result<&'static Gpu> {
    gpu_at(0)
}

static GPU: OnceLock<std::result::Result<Gpu, String>> = OnceLock::new();

/// Most device ordinals a process can address (the driver's ordinals, after
/// `CUDA_VISIBLE_DEVICES`).
pub const MAX_DEVICES: usize = 64;

/// Devices 1.. (device 0 is [`GPU`]).
static OTHER_GPUS: [OnceLock<std::result::Result<Gpu, String>>; MAX_DEVICES] =
    [const { OnceLock::new() }; MAX_DEVICES];

fn gpu_slot(ordinal: usize) -> Result<&'static OnceLock<std::result::Result<Gpu, String>>> {
    match ordinal {
        0 => Ok(&GPU),
        i if i < MAX_DEVICES => Ok(&OTHER_GPUS[i]),
        i => Err(Error::Unsupported(format!(
            "GPU ordinal {i} is out of range (segcut addresses at most {MAX_DEVICES} devices)"
        ))),
    }
}

/// The GPU with driver ordinal `ordinal` (0 is the first device `CUDA_VISIBLE_DEVICES` leaves
/// visible), set up on first use: driver loaded, device found, primary context created. What
/// [`Device::gpu`](super::Device::gpu) returns (which also binds the context).
///
/// ```
/// let line = match segcut::cuda::gpu_at(0) {
///     Ok(g) => format!("device 0: {}", g.name),
///     Err(e) => format!("no GPU: {e}"),
/// };
/// assert!(!line.is_empty());
/// ```
pub fn gpu_at(ordinal: usize) -> Result<&'static Gpu> {
    gpu_slot(ordinal)?
        .get_or_init(|| init_gpu(ordinal))
        .as_ref()
        .map_err(|reason| Error::Unsupported(reason.clone()))
}

/// The number of GPUs the driver shows this process (after `CUDA_VISIBLE_DEVICES`), 0 without
/// a usable driver.
///
/// ```
/// let n = segcut::cuda::device_count();
/// assert!(n > 0 || !segcut::cuda::gpu_available());
/// ```
pub fn device_count() -> usize {
    if !driver_present() || driver_version().is_err() {
        return 0;
    }
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// Whether device `ordinal` has run its set-up (successfully or not) in this process.
pub(crate) fn gpu_initialised(ordinal: usize) -> bool {
    gpu_slot(ordinal).is_ok_and(|s| s.get().is_some())
}

/// The driver's CUDA version, checked against [`MIN_DRIVER_VERSION`].
fn driver_version() -> std::result::Result<i32, String> {
    let mut version = 0;
    // SAFETY: cuDriverGetVersion exists in every driver and only writes the integer.
    let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    if status != CUresult::CUDA_SUCCESS {
        return Err(driver_err("cuDriverGetVersion", DriverError(status)).to_string());
    }
    if version < MIN_DRIVER_VERSION {
        return Err(format!(
            "the CUDA driver supports CUDA {}.{}, segcut's GPU solvers need {}.{} or newer",
            version / 1000,
            version % 1000 / 10,
            MIN_DRIVER_VERSION / 1000,
            MIN_DRIVER_VERSION % 1000 / 10
        ));
    }
    Ok(version)
}

fn init_gpu(ordinal: usize) -> std::result::Result<Gpu, String> {
    let t = Instant::now();
    if !driver_present() {
        return Err("no CUDA driver (libcuda.so) on this machine".into());
    }
    // cudarc is built against CUDA 13 and panics on a missing driver symbol, and NVRTC 13's PTX
    // needs a 13.x driver: check the version before anything else.
    let driver_version = driver_version()?;
    let text = |e: Error| e.to_string();
    let count = CudaContext::device_count()
        .call("cuDeviceGetCount")
        .map_err(text)?;
    if count < 1 {
        return Err("the CUDA driver reports no GPU".into());
    }
    if ordinal >= count as usize {
        return Err(format!(
            "no GPU with ordinal {ordinal}: the CUDA driver shows {count} (after \
             CUDA_VISIBLE_DEVICES)"
        ));
    }
    let ctx = CudaContext::new(ordinal)
        .call("cuDevicePrimaryCtxRetain")
        .map_err(text)?;
    // segcut uses every device buffer on one stream only (the solve's), so cudarc's per-launch
    // event tracking between streams is pure overhead: a few microseconds on each of thousands
    // of small launches.
    // SAFETY: no buffer exists yet; every solver keeps its buffers on the stream it allocated
    // them on and synchronises before host memory it copied from is released.
    unsafe { ctx.disable_event_tracking() };
    let (major, minor) = ctx
        .compute_capability()
        .call("cuDeviceGetAttribute")
        .map_err(text)?;
    let sms = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .call("cuDeviceGetAttribute")
        .map_err(text)?;
    let cooperative = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
        .is_ok_and(|c| c != 0);
    let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
    if !nvrtc_available() {
        return Err(format!(
            "found {name} but NVRTC (libnvrtc.so) is not on the library path"
        ));
    }
    Ok(Gpu {
        ctx,
        name,
        arch: format!("sm_{major}{minor}"),
        driver_version,
        multiprocessors: sms.max(1) as u32,
        cooperative,
        init_time: t.elapsed(),
        modules: Mutex::new(HashMap::new()),
    })
}

/// Whether device 0 is usable: driver, device and NVRTC all present (see
/// [`Device::is_available`](super::Device::is_available) for another device).
pub fn gpu_available() -> bool {
    gpu().is_ok()
}

/// Why device 0 is not usable (`None` when it is): one line for the user (see
/// [`Device::unavailable_reason`](super::Device::unavailable_reason) for another device).
pub fn gpu_unavailable_reason() -> Option<String> {
    gpu().err().map(|e| match e {
        Error::Unsupported(s) => s,
        other => other.to_string(),
    })
}

/// Where [`Gpu::module`] found a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleOrigin {
    /// Already loaded by this process.
    Process,
    /// A cubin from the disk cache.
    DiskCache,
    /// Compiled by NVRTC in this call (and stored in the disk cache, if it is on).
    Compiled,
}

impl Gpu {
    /// Makes the context current on the calling thread (test harnesses and servers solve from
    /// many threads).
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().call("cuCtxSetCurrent")
    }

    /// Free device memory in bytes.
    pub fn free_memory(&self) -> Result<u64> {
        let (free, _total) = self.ctx.mem_get_info().call("cuMemGetInfo")?;
        Ok(free as u64)
    }

    /// The module compiled from `kernels/<name>.cu` for this device: from the process cache, else
    /// from the disk cache (see [`KernelCache`](super::KernelCache)), else compiled by NVRTC to a
    /// cubin (and stored on disk for the next process).
    pub fn module(&self, name: &str) -> Result<Arc<CudaModule>> {
        Ok(self.module_with_origin(name)?.0)
    }

    /// [`Gpu::module`], and where the module came from.
    pub fn module_with_origin(&self, name: &str) -> Result<(Arc<CudaModule>, ModuleOrigin)> {
        let (key, src) = kernel_file(name)?;
        // A poisoned lock only means another thread panicked mid-insert; the map is still sound.
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = modules.get(key) {
            return Ok((m.clone(), ModuleOrigin::Process));
        }
        let (module, origin) = self.load_or_compile(key, src)?;
        modules.insert(key, module.clone());
        Ok((module, origin))
    }

    fn load_or_compile(&self, name: &str, src: &str) -> Result<(Arc<CudaModule>, ModuleOrigin)> {
        let load = |bin: Vec<u8>| self.ctx.load_module(Ptx::from_binary(bin));
        let load_call = format!("cuModuleLoadData (kernels/{name}.cu)");
        let entry = self.cache_entry(name, src);
        if let Some((path, k)) = &entry {
            if let Some(bin) = read_entry(path, *k) {
                // A cubin the driver refuses (a damaged file that kept its checksum) is simply
                // compiled again.
                if let Ok(m) = load(bin) {
                    return Ok((m, ModuleOrigin::DiskCache));
                }
            }
        }
        let module = match compile_cubin(name, src, &self.arch) {
            Ok(bin) => {
                if let Some((path, k)) = &entry {
                    // Best effort: a read-only or full disk only costs the next process a compile.
                    let _ = write_entry(path, *k, &bin);
                }
                load(bin).call(&load_call)?
            }
            // Should NVRTC be unable to produce a cubin for this device, its PTX still loads (the
            // driver compiles it).
            Err(_) => {
                let ptx = compile_ptx(name, src, &self.arch)?;
                self.ctx.load_module(ptx).call(&load_call)?
            }
        };
        Ok((module, ModuleOrigin::Compiled))
    }

    /// The disk cache's entry for kernel file `name` on this device and its key, `None` when the
    /// cache is off.
    fn cache_entry(&self, name: &str, src: &str) -> Option<(std::path::PathBuf, u64)> {
        let dir = kernel_cache().dir()?;
        let options = compile_options(name, &self.arch);
        let k = cache_key(&CacheInputs {
            source: src,
            header: COMMON_HEADER.1,
            arch: &self.arch,
            nvrtc: nvrtc_version()?,
            driver: self.driver_version,
            options: &options,
        });
        Some((entry_path(&dir, name, &self.arch, k), k))
    }
}
