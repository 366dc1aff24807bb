//! The CUDA runtime layer: finding a GPU, the process-wide context, and NVRTC compilation of the
//! kernels in `kernels/` for the device's own architecture.
//!
//! Both CUDA libraries are loaded at run time (`libcuda` from the driver, `libnvrtc` from the
//! toolkit or PyPI), so the crate builds and runs on machines without CUDA; there every entry point
//! returns [`Error::Unsupported`] and [`gpu_available`] is false. The loader panics when asked for
//! a library that is missing, so every path checks for the library before its first call.
//!
//! Compiled kernels are cached twice: per process (one module per kernel file), and on disk as
//! cubins (see [`cache_dir`]), keyed by a hash of the source, the architecture, the NVRTC version
//! and the compile options, so a new process loads the machine code instead of running NVRTC.
//! The disk cache is best effort: an unreadable, corrupt or stale entry is recompiled, and a
//! failed write is ignored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaModule, DriverError};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

use crate::{Error, Result};

/// The CUDA C sources in `kernels/`, by name, embedded in the binary.
pub const KERNELS: &[(&str, &str)] = &[
    // cuda-grid
    ("grid_pr", include_str!("../../kernels/grid_pr.cu")),
    // cuda-csr
    ("csr_pr", include_str!("../../kernels/csr_pr.cu")),
    // the segmentation energy (src/segment/gpu.rs)
    ("seg_energy", include_str!("../../kernels/seg_energy.cu")),
];

/// The NVRTC options a kernel file is compiled with for `arch`. `seg_energy` turns off
/// multiply-add contraction: its capacities must round exactly as the CPU builder's, and Rust
/// never contracts.
pub fn compile_options(name: &str, arch: &str) -> Vec<String> {
    let mut o = vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()];
    if name == "seg_energy" {
        o.push("--fmad=false".into());
    }
    o
}

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
        options: compile_options(name, arch),
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
/// let compiled = segcut::cuda::compile_all_kernels_ptx("sm_90").unwrap();
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
    /// The module compiled from `kernels/<name>.cu` for this device: from the process cache, else
    /// from the disk cache (see [`cache_dir`]), else compiled by NVRTC to a cubin (and stored on
    /// disk for the next process).
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
        let module = self.load_or_compile(key, src)?;
        modules.insert(key, module.clone());
        Ok(module)
    }

    fn load_or_compile(&self, name: &str, src: &str) -> Result<Arc<CudaModule>> {
        let load = |bin: Vec<u8>| self.ctx.load_module(Ptx::from_binary(bin));
        let entry = match (cache_dir(), nvrtc_version()) {
            (Some(dir), Some(version)) => {
                let k = cache_key(src, &self.arch, version, &compile_options(name, &self.arch));
                Some((entry_path(&dir, name, &self.arch, k), k))
            }
            _ => None,
        };
        if let Some((path, k)) = &entry {
            if let Some(bin) = read_entry(path, *k) {
                // A cubin the driver refuses (a changed driver, a damaged file that kept its
                // checksum) is simply compiled again.
                if let Ok(m) = load(bin) {
                    return Ok(m);
                }
            }
        }
        match compile_cubin(name, src, &self.arch) {
            Ok(bin) => {
                if let Some((path, k)) = &entry {
                    // Best effort: a read-only or full disk only costs the next process a compile.
                    let _ = write_entry(path, *k, &bin);
                }
                load(bin)
                    .map_err(|e| driver_err(&format!("cuModuleLoadData (kernels/{name}.cu)"), e))
            }
            // Should NVRTC be unable to produce a cubin for this device, its PTX still loads (the
            // driver compiles it).
            Err(_) => {
                let ptx = compile_ptx(name, src, &self.arch)?;
                self.ctx
                    .load_module(ptx)
                    .map_err(|e| driver_err(&format!("cuModuleLoadData (kernels/{name}.cu)"), e))
            }
        }
    }
}

/// Compiles one kernel source to a cubin (machine code for exactly `arch`, `sm_90` ...) with
/// NVRTC: no driver and no GPU are needed. Loading a cubin skips the driver's PTX compilation.
pub fn compile_cubin(name: &str, src: &str, arch: &str) -> Result<Vec<u8>> {
    use cudarc::nvrtc::{result, sys};
    if !nvrtc_available() {
        return Err(Error::Unsupported(
            "NVRTC (libnvrtc.so) is not on the library path: cannot compile CUDA kernels".into(),
        ));
    }
    let fail = |call: &str, detail: String| {
        Error::Unsupported(format!(
            "NVRTC call {call} failed on kernels/{name}.cu for {arch}: {detail}"
        ))
    };
    let c_src = std::ffi::CString::new(src)
        .map_err(|_| fail("nvrtcCreateProgram", "NUL in source".into()))?;
    let c_name = std::ffi::CString::new(format!("{name}.cu")).expect("kernel names have no NUL");
    let prog = result::create_program(&c_src, Some(&c_name))
        .map_err(|e| fail("nvrtcCreateProgram", format!("{e:?}")))?;
    let options = compile_options(name, arch);
    // SAFETY: `prog` was just created and is destroyed exactly once, below; the buffers passed to
    // nvrtcGetCUBIN are as large as nvrtcGetCUBINSize said.
    let out = unsafe {
        let compiled = match result::compile_program(prog, &options) {
            Ok(()) => {
                let mut size = 0usize;
                match sys::nvrtcGetCUBINSize(prog, &mut size).result() {
                    Ok(()) if size > 0 => {
                        let mut bin = vec![0u8; size];
                        sys::nvrtcGetCUBIN(prog, bin.as_mut_ptr() as *mut _)
                            .result()
                            .map(|()| bin)
                            .map_err(|e| fail("nvrtcGetCUBIN", format!("{e:?}")))
                    }
                    Ok(()) => Err(fail(
                        "nvrtcGetCUBINSize",
                        "no cubin (virtual architecture?)".into(),
                    )),
                    Err(e) => Err(fail("nvrtcGetCUBINSize", format!("{e:?}"))),
                }
            }
            Err(e) => {
                let log = result::get_program_log(prog)
                    .map(|l| {
                        std::ffi::CStr::from_ptr(l.as_ptr())
                            .to_string_lossy()
                            .into_owned()
                    })
                    .unwrap_or_default();
                Err(fail("nvrtcCompileProgram", format!("{e:?}:\n{log}")))
            }
        };
        let _ = result::destroy_program(prog);
        compiled
    };
    out
}

/// The NVRTC library's `(major, minor)` version, `None` when it cannot be asked.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    static VERSION: OnceLock<Option<(i32, i32)>> = OnceLock::new();
    *VERSION.get_or_init(|| {
        if !nvrtc_available() {
            return None;
        }
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the library is present (checked above); the call only writes the two integers.
        let status = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
        (status == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
    })
}

/// The folder of the on-disk kernel cache: `$SEGCUT_CACHE_DIR`, else `$XDG_CACHE_HOME/segcut`,
/// else `~/.cache/segcut`; `None` when `SEGCUT_PTX_CACHE=0` turns the cache off or no folder can
/// be named. The folder is created on the first write.
pub fn cache_dir() -> Option<std::path::PathBuf> {
    cache_dir_from(|k| std::env::var_os(k))
}

/// [`cache_dir`] with the environment given as a function (so that it can be tested).
pub fn cache_dir_from(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<std::path::PathBuf> {
    let set = |k: &str| env(k).filter(|v| !v.is_empty());
    if set("SEGCUT_PTX_CACHE").is_some_and(|v| v == "0") {
        return None;
    }
    if let Some(d) = set("SEGCUT_CACHE_DIR") {
        return Some(d.into());
    }
    if let Some(d) = set("XDG_CACHE_HOME") {
        return Some(std::path::PathBuf::from(d).join("segcut"));
    }
    set("HOME").map(|h| std::path::PathBuf::from(h).join(".cache").join("segcut"))
}

/// FNV-1a, 64 bits: stable across processes, builds and Rust versions (std's hasher is not
/// promised to be), which is all a cache key needs.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The cache key of a compilation: the kernel source, the architecture, the NVRTC version and
/// the options (each field length-prefixed, so no two inputs run together).
pub fn cache_key(src: &str, arch: &str, nvrtc: (i32, i32), options: &[String]) -> u64 {
    let mut h = FNV_OFFSET;
    let mut field = |bytes: &[u8]| {
        h = fnv1a(h, &(bytes.len() as u64).to_le_bytes());
        h = fnv1a(h, bytes);
    };
    field(src.as_bytes());
    field(arch.as_bytes());
    field(&nvrtc.0.to_le_bytes());
    field(&nvrtc.1.to_le_bytes());
    for o in options {
        field(o.as_bytes());
    }
    h
}

/// Where the cubin of kernel file `name` for `arch` under `key` lives in `dir`.
pub fn entry_path(dir: &std::path::Path, name: &str, arch: &str, key: u64) -> std::path::PathBuf {
    dir.join(format!("{name}-{arch}-{key:016x}.cubin"))
}

/// First bytes of a cache entry; then the key, the payload's length and its checksum (all `u64`
/// little-endian), then the payload.
const ENTRY_MAGIC: &[u8; 8] = b"SEGCUT1\0";
const ENTRY_HEADER: usize = 8 + 3 * 8;

/// The payload of the cache entry at `path` if it is whole and was written under `key`; `None`
/// for a missing, unreadable, truncated, corrupt or foreign file.
pub fn read_entry(path: &std::path::Path, key: u64) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let word = |i: usize| u64::from_le_bytes(bytes[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    if bytes.len() < ENTRY_HEADER || &bytes[..8] != ENTRY_MAGIC || word(0) != key {
        return None;
    }
    let payload = &bytes[ENTRY_HEADER..];
    if word(1) != payload.len() as u64 || word(2) != fnv1a(FNV_OFFSET, payload) {
        return None;
    }
    Some(payload.to_vec())
}

/// Writes a cache entry atomically: to a temporary file in the same folder (created if needed),
/// then renamed over `path`, so a reader never sees half an entry and concurrent writers of the
/// same entry do no harm.
pub fn write_entry(path: &std::path::Path, key: u64, payload: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(
        ".{}.{}-{nanos}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    let mut data = Vec::with_capacity(ENTRY_HEADER + payload.len());
    data.extend_from_slice(ENTRY_MAGIC);
    data.extend_from_slice(&key.to_le_bytes());
    data.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    data.extend_from_slice(&fnv1a(FNV_OFFSET, payload).to_le_bytes());
    data.extend_from_slice(payload);
    let written = std::fs::File::create(&tmp).and_then(|mut f| f.write_all(&data));
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use std::ffi::OsString;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn cache_dir_follows_the_environment_in_order() {
        let p = |vars: &[(&str, &str)]| cache_dir_from(env(vars));
        assert_eq!(p(&[("HOME", "/h")]), Some("/h/.cache/segcut".into()));
        assert_eq!(
            p(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]),
            Some("/x/segcut".into())
        );
        assert_eq!(
            p(&[
                ("HOME", "/h"),
                ("XDG_CACHE_HOME", "/x"),
                ("SEGCUT_CACHE_DIR", "/s")
            ]),
            Some("/s".into())
        );
        // Empty values count as unset; 0 disables whatever else is set.
        assert_eq!(
            p(&[("HOME", "/h"), ("XDG_CACHE_HOME", "")]),
            Some("/h/.cache/segcut".into())
        );
        assert_eq!(
            p(&[("SEGCUT_CACHE_DIR", "/s"), ("SEGCUT_PTX_CACHE", "0")]),
            None
        );
        assert_eq!(
            p(&[("SEGCUT_CACHE_DIR", "/s"), ("SEGCUT_PTX_CACHE", "1")]),
            Some("/s".into())
        );
        assert_eq!(p(&[]), None);
    }

    #[test]
    fn cache_key_changes_with_every_input() {
        let opts = compile_options("grid_pr", "sm_90");
        let base = cache_key("src", "sm_90", (13, 0), &opts);
        assert_eq!(
            base,
            cache_key("src", "sm_90", (13, 0), &opts),
            "deterministic"
        );
        let others = [
            cache_key("src ", "sm_90", (13, 0), &opts),
            cache_key("src", "sm_80", (13, 0), &opts),
            cache_key("src", "sm_90", (13, 1), &opts),
            cache_key("src", "sm_90", (12, 0), &opts),
            cache_key(
                "src",
                "sm_90",
                (13, 0),
                &compile_options("seg_energy", "sm_90"),
            ),
            cache_key("src", "sm_90", (13, 0), &[]),
            // Fields do not run together.
            cache_key("srcsm_90", "", (13, 0), &opts),
        ];
        for (i, k) in others.iter().enumerate() {
            assert_ne!(*k, base, "variant {i}");
        }
        // A pinned value: the key must not drift between builds, or every cache goes stale.
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn entries_round_trip_and_damage_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let path = entry_path(&dir.path().join("sub"), "grid_pr", "sm_90", 42);
        assert_eq!(read_entry(&path, 42), None, "missing file");
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        write_entry(&path, 42, &payload).unwrap();
        assert_eq!(read_entry(&path, 42).as_deref(), Some(&payload[..]));
        assert_eq!(read_entry(&path, 43), None, "other key");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");

        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut bad_magic = good.clone();
        bad_magic[0] = b'X';
        for (what, bytes) in [
            ("flipped payload bit", flipped),
            ("truncated", good[..good.len() - 1].to_vec()),
            ("header only", good[..ENTRY_HEADER - 3].to_vec()),
            ("empty", Vec::new()),
            ("bad magic", bad_magic),
        ] {
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(read_entry(&path, 42), None, "{what}");
        }
        // Rewriting over a damaged entry restores it.
        write_entry(&path, 42, &payload).unwrap();
        assert_eq!(read_entry(&path, 42).as_deref(), Some(&payload[..]));
        // A folder in the way is a failed write, not a panic.
        let blocked = entry_path(&path, "grid_pr", "sm_90", 1);
        assert!(write_entry(&blocked, 1, &payload).is_err());
    }
}
