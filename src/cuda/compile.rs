//! NVRTC: the kernel sources embedded in the binary, the shared header they include, their
//! compile options, and compilation to PTX or to a cubin. Nothing here needs a driver or a GPU,
//! which is how CI checks that every kernel compiles.

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys, Ptx};

use crate::{Error, Result};

/// The CUDA C sources in `kernels/`, by name, embedded in the binary. Each includes
/// [`COMMON_HEADER`]. A new kernel file is one more line here, its typed launchers in
/// `src/cuda/launch/`, and (if it needs any) its options in `EXTRA_OPTIONS`.
pub const KERNELS: &[(&str, &str)] = &[
    // cuda-grid
    ("grid_pr", include_str!("../../kernels/grid_pr.cu")),
    // cuda-csr
    ("csr_pr", include_str!("../../kernels/csr_pr.cu")),
    // the segmentation energy (src/segment/gpu.rs)
    ("seg_energy", include_str!("../../kernels/seg_energy.cu")),
    // the stroke-geometry prior (src/segment/gpu_prior.rs)
    ("seg_prior", include_str!("../../kernels/seg_prior.cu")),
    // the colour models' samples (src/segment/gpu_model.rs)
    ("seg_model", include_str!("../../kernels/seg_model.cu")),
    // α-expansion stereo on the device (src/stereo/gpu.rs)
    ("stereo", include_str!("../../kernels/stereo.cu")),
];

/// The header every kernel file includes (`#include "common.cuh"`): the integer typedefs, the
/// neighbour offsets, `struct Grid`, `neighbor()`, the warp and block reductions. NVRTC has no
/// include path here, so it is handed to every compilation as a named header, and its text is
/// part of the kernel cache's key.
pub const COMMON_HEADER: (&str, &str) = ("common.cuh", include_str!("../../kernels/common.cuh"));

/// Options some kernel files need besides the architecture and the language level.
/// `seg_energy` turns off multiply-add contraction: its capacities must round exactly as the CPU
/// builder's, and Rust never contracts.
const EXTRA_OPTIONS: &[(&str, &[&str])] = &[
    ("seg_energy", &["--fmad=false"]),
    // The geodesic distances must reach the CPU's fixed point bit for bit.
    ("seg_prior", &["--fmad=false"]),
    // The mixture fit keeps model.rs's operations (its sums' order aside).
    ("seg_model", &["--fmad=false"]),
    // The cost volume must equal the host's bit for bit: no fused multiply-adds.
    ("stereo", &["--fmad=false"]),
];

/// The oldest architecture the kernels are compiled for in CI: CUDA 13's NVRTC supports Turing
/// (`sm_75`) and newer.
pub const OLDEST_ARCH: &str = "sm_75";

/// The NVRTC options kernel file `name` is compiled with for `arch`.
///
/// ```
/// let o = segcut::cuda::compile_options("seg_energy", "sm_90");
/// assert_eq!(o, ["--gpu-architecture=sm_90", "--std=c++17", "--fmad=false"]);
/// ```
pub fn compile_options(name: &str, arch: &str) -> Vec<String> {
    let mut o = vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()];
    for (_, extra) in EXTRA_OPTIONS.iter().filter(|(n, _)| *n == name) {
        o.extend(extra.iter().map(|s| s.to_string()));
    }
    o
}

/// The entry of kernel file `name` (`kernels/<name>.cu`) in [`KERNELS`]: its name and source.
pub(crate) fn kernel_file(name: &str) -> Result<(&'static str, &'static str)> {
    KERNELS
        .iter()
        .find(|(k, _)| *k == name)
        .copied()
        .ok_or_else(|| Error::Unsupported(format!("no kernel file kernels/{name}.cu")))
}

/// Whether the NVRTC library can be loaded (it is searched on the usual library path, e.g.
/// `LD_LIBRARY_PATH`, as `libnvrtc.so`, `libnvrtc.so.13`, ...).
pub fn nvrtc_available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the library; no symbol of it is called.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
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
        let status = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
        (status == sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
    })
}

/// What a compilation produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    /// PTX text (the driver compiles it for the device on load).
    Ptx,
    /// Machine code for exactly the architecture compiled for.
    Cubin,
}

/// Compiles one kernel source to PTX for `arch` (`sm_75`, `sm_90`, ...) with NVRTC alone: no
/// driver and no GPU are needed.
///
/// ```no_run
/// let (name, src) = segcut::cuda::KERNELS[0];
/// let ptx = segcut::cuda::compile_ptx(name, src, "sm_90").unwrap();
/// assert!(ptx.to_src().contains(".target sm_90"));
/// ```
pub fn compile_ptx(name: &str, src: &str, arch: &str) -> Result<Ptx> {
    let bytes = compile(name, src, arch, Output::Ptx)?;
    // NVRTC's PTX ends with a NUL.
    let text = CStr::from_bytes_until_nul(&bytes)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
    Ok(Ptx::from_src(text))
}

/// Compiles one kernel source to a cubin (machine code for exactly `arch`, `sm_90` ...) with
/// NVRTC: no driver and no GPU are needed. Loading a cubin skips the driver's PTX compilation.
///
/// ```no_run
/// let (name, src) = segcut::cuda::KERNELS[0];
/// let cubin = segcut::cuda::compile_cubin(name, src, "sm_90").unwrap();
/// assert_eq!(&cubin[..4], b"\x7fELF");
/// ```
pub fn compile_cubin(name: &str, src: &str, arch: &str) -> Result<Vec<u8>> {
    compile(name, src, arch, Output::Cubin)
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

/// One NVRTC compilation of `src` (named `kernels/<name>.cu` in messages) with
/// [`COMMON_HEADER`] available to its `#include`.
fn compile(name: &str, src: &str, arch: &str, out: Output) -> Result<Vec<u8>> {
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
    let fail = |call: &str, detail: String| {
        Error::Unsupported(format!(
            "NVRTC call {call} failed on kernels/{name}.cu for {arch}: {detail}"
        ))
    };
    let nul = |what: &str| fail("nvrtcCreateProgram", format!("NUL in {what}"));
    let c_src = CString::new(src).map_err(|_| nul("the source"))?;
    let c_name = CString::new(format!("{name}.cu")).map_err(|_| nul("the name"))?;
    let h_src = CString::new(COMMON_HEADER.1).map_err(|_| nul("the header"))?;
    let h_name = CString::new(COMMON_HEADER.0).map_err(|_| nul("the header's name"))?;
    let (headers, names) = ([h_src.as_ptr()], [h_name.as_ptr()]);
    let mut prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is a NUL-terminated string that outlives the program (destroyed
    // below, before they are dropped); the header arrays hold one entry each, as the count says.
    let prog = unsafe {
        sys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            c_src.as_ptr(),
            c_name.as_ptr(),
            1,
            headers.as_ptr(),
            names.as_ptr(),
        )
        .result()
        .map_err(|e| fail("nvrtcCreateProgram", format!("{e:?}")))?;
        prog.assume_init()
    };
    let options = compile_options(name, arch);
    // SAFETY: `prog` was just created and is destroyed exactly once, below.
    let compiled = unsafe {
        match result::compile_program(prog, &options) {
            Ok(()) => output(prog, out).map_err(|(call, e)| fail(call, e)),
            Err(e) => Err(fail(
                "nvrtcCompileProgram",
                format!("{e:?}:\n{}", program_log(prog)),
            )),
        }
    };
    // SAFETY: created above, not destroyed before.
    let _ = unsafe { result::destroy_program(prog) };
    compiled
}

/// The PTX or cubin of a compiled program; on failure the call that failed and why.
///
/// # Safety
/// `prog` is a live program that compiled.
unsafe fn output(
    prog: sys::nvrtcProgram,
    out: Output,
) -> std::result::Result<Vec<u8>, (&'static str, String)> {
    if out == Output::Ptx {
        let ptx = result::get_ptx(prog).map_err(|e| ("nvrtcGetPTX", format!("{e:?}")))?;
        return Ok(ptx.into_iter().map(|c| c as u8).collect());
    }
    let mut size = 0usize;
    sys::nvrtcGetCUBINSize(prog, &mut size)
        .result()
        .map_err(|e| ("nvrtcGetCUBINSize", format!("{e:?}")))?;
    if size == 0 {
        return Err((
            "nvrtcGetCUBINSize",
            "no cubin (virtual architecture?)".into(),
        ));
    }
    let mut bin = vec![0u8; size];
    // The buffer is as large as nvrtcGetCUBINSize said.
    sys::nvrtcGetCUBIN(prog, bin.as_mut_ptr() as *mut _)
        .result()
        .map_err(|e| ("nvrtcGetCUBIN", format!("{e:?}")))?;
    Ok(bin)
}

/// The compiler's log of `prog`, empty when it cannot be read.
///
/// # Safety
/// `prog` is a live program.
unsafe fn program_log(prog: sys::nvrtcProgram) -> String {
    result::get_program_log(prog)
        .ok()
        .and_then(|l| {
            let bytes: Vec<u8> = l.into_iter().map(|c| c as u8).collect();
            CStr::from_bytes_until_nul(&bytes)
                .ok()
                .map(|c| c.to_string_lossy().into_owned())
        })
        .unwrap_or_default()
}
