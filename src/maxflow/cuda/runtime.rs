//! The CUDA runtime layer: finding a GPU, the process-wide context, and NVRTC compilation of the
//! kernels in `kernels/` for the device's own architecture.
//!
//! Both CUDA libraries are loaded at run time (`libcuda` from the driver, `libnvrtc` from the
//! toolkit or PyPI), so the crate builds and runs on machines without CUDA; there every entry point
//! returns [`Error::Unsupported`] and [`gpu_available`] is false. The loader panics when asked for
//! a library that is missing, so every path checks for the library before its first call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaModule, DriverError};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

use crate::{Error, Result};

/// The CUDA C sources in `kernels/`, by name, embedded in the binary.
pub const KERNELS: &[(&str, &str)] = &[
    // cuda-grid
    ("grid_pr", include_str!("../../../kernels/grid_pr.cu")),
    // cuda-csr
    ("csr_pr", include_str!("../../../kernels/csr_pr.cu")),
];

/// The oldest architecture the kernels are compiled for in CI: CUDA 13's NVRTC supports Turing
/// (`sm_75`) and newer.
pub const OLDEST_ARCH: &str = "sm_75";

/// The oldest CUDA driver API version the GPU solvers run on (13.0, as `cuDriverGetVersion`
/// reports it).
pub const MIN_DRIVER_VERSION: i32 = 13000;

/// The GPU this process uses: device 0, its primary context, and its architecture.
pub struct Gpu {
    /// The primary context of device 0, shared by every solve in the process.
    pub ctx: Arc<CudaContext>,
    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// The NVRTC architecture of the device, e.g. `sm_90`.
    pub arch: String,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("name", &self.name)
            .field("arch", &self.arch)
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

/// Whether the NVRTC library can be loaded (it is searched on the usual library path, e.g.
/// `LD_LIBRARY_PATH`, as `libnvrtc.so`, `libnvrtc.so.13`, ...).
pub fn nvrtc_available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the library; no symbol of it is called.
    *PRESENT.get_or_init(|| unsafe { cudarc::nvrtc::sys::is_culib_present() })
}

fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the library; no symbol of it is called.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// Compiles one kernel source to PTX for `arch` (`sm_75`, `sm_90`, ...) with NVRTC alone: no
/// driver and no GPU are needed.
pub fn compile_ptx(name: &str, src: &str, arch: &str) -> Result<Ptx> {
    if !nvrtc_available() {
        return Err(Error::Unsupported(
            "NVRTC (libnvrtc.so) is not on the library path: cannot compile CUDA kernels".into(),
        ));
    }
    if !arch.starts_with("sm_") || !arch[3..].chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::Unsupported(format!(
            "'{arch}' is not a GPU architecture like sm_90"
        )));
    }
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| {
        let detail = match e {
            CompileError::CompileError { nvrtc, log, .. } => {
                format!("{nvrtc:?}:\n{}", log.to_string_lossy())
            }
            other => format!("{other:?}"),
        };
        Error::Unsupported(format!(
            "NVRTC call nvrtcCompileProgram failed on kernels/{name}.cu for {arch}: {detail}"
        ))
    })
}

/// Compiles every kernel in `kernels/` to PTX for `arch` with NVRTC only (no driver, no GPU),
/// returning each kernel file's name and the length of its PTX. CI runs this to check that the
/// CUDA C compiles.
///
/// ```no_run
/// let compiled = segcut::maxflow::cuda::compile_all_kernels_ptx("sm_90").unwrap();
/// assert!(compiled.iter().all(|(_, len)| *len > 0));
/// ```
pub fn compile_all_kernels_ptx(arch: &str) -> Result<Vec<(String, usize)>> {
    KERNELS
        .iter()
        .map(|&(name, src)| {
            let ptx = compile_ptx(name, src, arch)?;
            Ok((name.to_string(), ptx.to_src().len()))
        })
        .collect()
}

/// The process's GPU, set up on first use: driver loaded, device 0 found, primary context
/// created. A failure is remembered, so the reason is computed (and reported) once.
pub fn gpu() -> Result<&'static Gpu> {
    static GPU: OnceLock<std::result::Result<Gpu, String>> = OnceLock::new();
    GPU.get_or_init(init_gpu)
        .as_ref()
        .map_err(|reason| Error::Unsupported(reason.clone()))
}

fn init_gpu() -> std::result::Result<Gpu, String> {
    if !driver_present() {
        return Err("no CUDA driver (libcuda.so) on this machine".into());
    }
    // cudarc is built against CUDA 13 and panics on a missing driver symbol, and NVRTC 13's PTX
    // needs a 13.x driver: check the version before anything else.
    let mut version = 0;
    // SAFETY: cuDriverGetVersion exists in every driver and only writes the integer.
    let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    if status != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
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
    let count =
        CudaContext::device_count().map_err(|e| driver_err("cuDeviceGetCount", e).to_string())?;
    if count < 1 {
        return Err("the CUDA driver reports no GPU".into());
    }
    let ctx =
        CudaContext::new(0).map_err(|e| driver_err("cuDevicePrimaryCtxRetain", e).to_string())?;
    // segcut uses every device buffer on one stream only (the solve's), so cudarc's per-launch
    // event tracking between streams is pure overhead: a few microseconds on each of thousands
    // of small launches.
    // SAFETY: no buffer exists yet; every solver keeps its buffers on the stream it allocated
    // them on and synchronises before host memory it copied from is released.
    unsafe { ctx.disable_event_tracking() };
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| driver_err("cuDeviceGetAttribute", e).to_string())?;
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
        modules: Mutex::new(HashMap::new()),
    })
}

/// Whether a GPU is usable: driver, device and NVRTC all present.
pub fn gpu_available() -> bool {
    gpu().is_ok()
}

/// Why no GPU is usable (`None` when one is): one line for the user, e.g. before falling back to
/// the CPU solver.
pub fn gpu_unavailable_reason() -> Option<String> {
    gpu().err().map(|e| match e {
        Error::Unsupported(s) => s,
        other => other.to_string(),
    })
}

impl Gpu {
    /// The module compiled from `kernels/<name>.cu` for this device, compiled by NVRTC and loaded
    /// on first use, then cached for the process.
    pub fn module(&self, name: &str) -> Result<Arc<CudaModule>> {
        let (key, src) = KERNELS
            .iter()
            .find(|(k, _)| *k == name)
            .copied()
            .ok_or_else(|| Error::Unsupported(format!("no kernel file kernels/{name}.cu")))?;
        // A poisoned lock only means another thread panicked mid-insert; the map is still sound.
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = modules.get(key) {
            return Ok(m.clone());
        }
        let ptx = compile_ptx(key, src, &self.arch)?;
        let module = self
            .ctx
            .load_module(ptx)
            .map_err(|e| driver_err(&format!("cuModuleLoadData (kernels/{key}.cu)"), e))?;
        modules.insert(key, module.clone());
        Ok(module)
    }
}
