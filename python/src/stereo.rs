//! `segcut.stereo` and `segcut.alpha_expansion`: the α-expansion engine of `segcut::stereo` from
//! numpy arrays.

use crate::options::{option_err, option_values};
use crate::segment::Pixels;
use crate::{parse_solver, py_err};
use numpy::ndarray::{Array, IxDyn};
use numpy::{PyArray, PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segcut::graph::Connectivity;
use segcut::io::Image;
use segcut::maxflow::SolveOptions;
use segcut::options::{stereo_base, Table};
use segcut::stereo::{expand, CostVolume, Expansion, ExpansionOptions, Pairwise, PairwiseModel};
use std::time::{Duration, Instant};

fn opt<'py, T>(opts: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    match opts.get_item(key)? {
        Some(v) if !v.is_none() => v
            .extract::<T>()
            .map(Some)
            .map_err(|e| PyTypeError::new_err(format!("option {key}: {e}"))),
        _ => Ok(None),
    }
}

/// The solver options shared by both entry points: `solver` (default `auto`, as `segcut
/// stereo`), `verify` (default off: a certificate per move costs time), `gpu_min_nodes`,
/// `max_passes`, `order`.
fn expansion_options(o: &Bound<'_, PyDict>) -> PyResult<ExpansionOptions> {
    let mut solve = SolveOptions::with_solver(parse_solver(
        opt::<String>(o, "solver")?.as_deref().unwrap_or("auto"),
    )?);
    solve.verify = opt::<bool>(o, "verify")?.unwrap_or(false);
    if let Some(n) = opt::<usize>(o, "gpu_min_nodes")? {
        solve.auto.min_gpu_nodes = n;
    }
    let max_passes = opt::<usize>(o, "max_passes")?;
    if max_passes == Some(0) {
        return Err(PyValueError::new_err("max_passes must be at least 1"));
    }
    Ok(ExpansionOptions {
        solve,
        max_passes,
        initial: None,
        order: opt::<Vec<u16>>(o, "order")?,
    })
}

/// What an expansion did, for the Python result object.
fn expansion_info<'py>(
    py: Python<'py>,
    e: &Expansion,
    times: &[(&str, Duration)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("flow", e.moves.last().map_or(0, |m| m.flow))?;
    let solver = e.moves.last().map_or("none", |m| m.solver.name());
    d.set_item("solver", solver)?;
    d.set_item("reason", "requested or chosen by auto per move")?;
    d.set_item("fallback", py.None())?;
    d.set_item("certificate", py.None())?;
    d.set_item("energy", e.energy)?;
    d.set_item("initial_energy", e.initial_energy)?;
    d.set_item("passes", e.passes.len())?;
    d.set_item("moves", e.moves.len())?;
    d.set_item("converged", e.converged)?;
    let t = PyDict::new(py);
    let build: Duration = e.moves.iter().map(|m| m.build).sum();
    let solve: Duration = e.moves.iter().map(|m| m.solve).sum();
    t.set_item("build", build.as_secs_f64())?;
    t.set_item("solve", solve.as_secs_f64())?;
    for (k, v) in times {
        t.set_item(*k, v.as_secs_f64())?;
    }
    d.set_item("times", t)?;
    Ok(d)
}

fn image_of(px: &Pixels<'_>, shape: &[usize], channels: usize, what: &str) -> PyResult<Image> {
    let [h, w] = shape[..] else {
        return Err(PyValueError::new_err(format!(
            "{what} must be 2D (rows, cols) or (rows, cols, channels), got spatial shape {shape:?}"
        )));
    };
    let data = px.to_f32()?;
    if data.len() != w * h * channels || data.is_empty() {
        return Err(PyValueError::new_err(format!(
            "{what} has {} values for {h}×{w} × {channels} channel(s)",
            data.len()
        )));
    }
    Ok(Image::new([w, h, 1], channels, data))
}

/// Disparity of a rectified pair; returns `(disparity, info)`.
#[pyfunction]
#[pyo3(signature = (left, right, shape, channels, options))]
#[allow(clippy::type_complexity)]
pub fn stereo<'py>(
    py: Python<'py>,
    left: Pixels<'_>,
    right: Pixels<'_>,
    shape: Vec<usize>,
    channels: usize,
    options: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyArrayDyn<f32>>, Bound<'py, PyDict>)> {
    let t = Instant::now();
    let l = image_of(&left, &shape, channels, "left")?;
    let r = image_of(&right, &shape, channels, "right")?;
    // The options model's keywords (the command line's flags in snake_case), parsed and checked
    // by the library; the front ends' defaults (solver auto).
    let o = option_values(options, Table::Stereo)?
        .stereo_options(stereo_base())
        .map_err(option_err)?;

    let convert = t.elapsed();
    py.check_signals()?;
    let res = py
        .detach(|| segcut::stereo::stereo(&l, &r, &o))
        .map_err(py_err)?;
    py.check_signals()?;
    let disp = Array::from_shape_vec(IxDyn(&shape), res.disparity())
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let info = expansion_info(
        py,
        &res.expansion,
        &[
            ("convert", convert),
            ("cost", res.cost_time),
            ("total", t.elapsed()),
        ],
    )?;
    Ok((PyArray::from_owned_array(py, disp), info))
}

/// Per-pixel weights per forward direction, or one weight for all.
#[derive(FromPyObject)]
pub enum Weights<'py> {
    Array(PyReadonlyArrayDyn<'py, i32>),
    Scalar(i32),
}

/// α-expansion on a grid: `unary` of shape `(labels, rows, cols)` (int32, C order), `weights`
/// per forward direction `(directions, rows, cols)` or one number; returns `(labels, info)`.
#[pyfunction]
#[pyo3(signature = (unary, weights, connectivity, truncation, initial, options))]
#[allow(clippy::type_complexity)]
pub fn alpha_expansion<'py>(
    py: Python<'py>,
    unary: PyReadonlyArrayDyn<'_, i32>,
    weights: Weights<'_>,
    connectivity: u32,
    truncation: Option<u32>,
    initial: Option<PyReadonlyArrayDyn<'_, u16>>,
    options: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyArrayDyn<u16>>, Bound<'py, PyDict>)> {
    let t = Instant::now();
    let (labels, h, w) = match unary.shape() {
        &[l, h, w] => (l, h, w),
        s => {
            return Err(PyValueError::new_err(format!(
                "unary must have shape (labels, rows, cols), got {s:?}"
            )))
        }
    };
    let data = unary
        .as_slice()
        .map_err(|_| PyValueError::new_err("unary must be C-contiguous"))?
        .to_vec();
    let cost = CostVolume::new(w, h, labels, data).map_err(py_err)?;
    let conn = match connectivity {
        4 => Connectivity::N4,
        8 => Connectivity::N8,
        c => {
            return Err(PyValueError::new_err(format!(
                "connectivity must be 4 or 8, got {c}"
            )))
        }
    };
    let distance = match truncation {
        None => Pairwise::Potts,
        Some(0) => return Err(PyValueError::new_err("truncation must be at least 1")),
        Some(t) => Pairwise::TruncatedLinear { truncation: t },
    };
    let dirs = conn.degree() / 2;
    let planes: Vec<Vec<i32>> = match &weights {
        Weights::Scalar(c) => vec![vec![*c; w * h]; dirs],
        Weights::Array(a) => {
            if a.shape() != [dirs, h, w] {
                return Err(PyValueError::new_err(format!(
                    "weights must have shape ({dirs}, {h}, {w}) for {}-connectivity, got {:?}",
                    conn.number(),
                    a.shape()
                )));
            }
            let s = a
                .as_slice()
                .map_err(|_| PyValueError::new_err("weights must be C-contiguous"))?;
            s.chunks(w * h).map(<[i32]>::to_vec).collect()
        }
    };
    let model = PairwiseModel {
        width: w,
        height: h,
        connectivity: conn,
        distance,
        weights: planes,
    };
    model.check(&cost).map_err(py_err)?;
    let mut opts = expansion_options(options)?;
    if let Some(init) = &initial {
        let s = init
            .as_slice()
            .map_err(|_| PyValueError::new_err("initial must be C-contiguous"))?;
        if s.len() != w * h {
            return Err(PyValueError::new_err(format!(
                "initial has {} labels for {h}×{w} pixels",
                s.len()
            )));
        }
        opts.initial = Some(s.to_vec());
    }
    let convert = t.elapsed();
    py.check_signals()?;
    let e = py.detach(|| expand(&cost, &model, &opts)).map_err(py_err)?;
    py.check_signals()?;
    let info = expansion_info(py, &e, &[("convert", convert), ("total", t.elapsed())])?;
    let out = Array::from_shape_vec(IxDyn(&[h, w]), e.labels)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((PyArray::from_owned_array(py, out), info))
}
