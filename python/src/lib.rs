//! `segcut._segcut`: the native half of the `segcut` Python package.
//!
//! The Python half (`python/segcut/__init__.py`) checks and converts arguments with numpy
//! (broadcasting, dtypes, keyword options) and hands this module contiguous arrays; this module
//! builds segcut's graphs from them, solves with the GIL released, and returns numpy arrays that
//! numpy owns. Nothing here prints.

use pyo3::exceptions::{
    PyFileNotFoundError, PyMemoryError, PyOSError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segcut::maxflow::{Solved, SolverKind};
use std::time::Duration;

mod graph;
mod grid;
mod maxfile;
mod options;
mod segment;
mod stereo;

/// segcut's error as the Python exception a user expects: bad input (a malformed file, a bad
/// index or capacity) is a `ValueError`, a missing file an `OSError`, a failed certificate or an
/// unusable GPU a `RuntimeError`. The message is segcut's own.
pub(crate) fn py_err(e: segcut::Error) -> PyErr {
    use segcut::Error as E;
    let msg = e.to_string();
    match &e {
        E::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(msg)
        }
        E::Io { source, .. } if source.kind() == std::io::ErrorKind::OutOfMemory => {
            PyMemoryError::new_err(msg)
        }
        E::Io { .. } => PyOSError::new_err(msg),
        E::Memory(_) => PyMemoryError::new_err(msg),
        E::Parse { .. } | E::Input { .. } | E::Graph(_) | E::Overflow(_) => {
            PyValueError::new_err(msg)
        }
        E::Certificate { .. } | E::InvalidFlow(_) | E::Unsupported(_) => {
            PyRuntimeError::new_err(msg)
        }
    }
}

/// The solver named by `solver=` (`"auto"`, `"bk"`, `"dinic"`, `"cuda-grid"`, `"cuda-csr"`).
pub(crate) fn parse_solver(name: &str) -> PyResult<SolverKind> {
    name.parse::<SolverKind>()
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Fails with `MemoryError` when `bytes` cannot be reserved, before a large graph is allocated
/// (a failed allocation inside Rust would abort the interpreter instead).
pub(crate) fn reserve_check(bytes: u64, what: &str) -> PyResult<()> {
    // The process's budget first (ulimit -v, cgroup, available memory): with overcommit, the
    // probe below succeeds for sizes the process could never fill.
    segcut::io::check_budget(what, bytes, "").map_err(py_err)?;
    let mut probe: Vec<u8> = Vec::new();
    usize::try_from(bytes)
        .ok()
        .and_then(|b| probe.try_reserve_exact(b).ok())
        .ok_or_else(|| {
            PyMemoryError::new_err(format!(
                "{what} needs about {:.1} GiB, which cannot be allocated",
                bytes as f64 / (1u64 << 30) as f64
            ))
        })
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// What a solve says about itself, as a dict for the Python result objects: the solver that
/// ran, why, any GPU fallback, the certificate, and the phase times in seconds.
pub(crate) fn solve_info<'py>(
    py: Python<'py>,
    solved: &Solved,
    flow: i64,
    construct: Duration,
    prepare: Duration,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("flow", flow)?;
    d.set_item("solver", solved.ran.solver.name())?;
    d.set_item("reason", &solved.ran.reason)?;
    d.set_item("fallback", solved.ran.fallback.as_deref())?;
    match &solved.certificate {
        Some(c) => d.set_item("certificate", (c.flow, c.cut_capacity))?,
        None => d.set_item("certificate", py.None())?,
    }
    let times = PyDict::new(py);
    times.set_item("construct", secs(construct))?;
    times.set_item("prepare", secs(prepare))?;
    times.set_item("build", secs(solved.stats.build))?;
    times.set_item("solve", secs(solved.stats.solve))?;
    times.set_item("verify", secs(solved.stats.verify))?;
    d.set_item("times", times)?;
    Ok(d)
}

/// Why no GPU solver can run here, or `None` when one can (creates the CUDA context on first
/// use).
#[pyfunction]
fn gpu_unavailable_reason(py: Python<'_>) -> Option<String> {
    py.detach(segcut::cuda::gpu_unavailable_reason)
}

/// The version of the NVRTC library segcut's CUDA layer loads, `None` when it finds none (no
/// GPU needed: NVRTC compiles the kernels on the CPU).
#[pyfunction]
fn nvrtc_version(py: Python<'_>) -> Option<(i32, i32)> {
    py.detach(segcut::cuda::nvrtc_version)
}

/// The solver names `solver=` accepts.
#[pyfunction]
fn solver_names() -> Vec<&'static str> {
    SolverKind::names().collect()
}

#[pymodule]
fn _segcut(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<grid::Grid>()?;
    m.add_class::<graph::Graph>()?;
    m.add_function(wrap_pyfunction!(segment::segment, m)?)?;
    m.add_function(wrap_pyfunction!(stereo::stereo, m)?)?;
    m.add_function(wrap_pyfunction!(stereo::alpha_expansion, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(solver_names, m)?)?;
    m.add_function(wrap_pyfunction!(options::option_table, m)?)?;
    m.add_function(wrap_pyfunction!(nvrtc_version, m)?)?;
    m.add("AUTO_MIN_GPU_NODES", segcut::maxflow::AUTO_MIN_GPU_NODES)?;
    Ok(())
}
