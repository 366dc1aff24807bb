//! `segcut.segment`: the segmentation pipeline from numpy arrays.

use crate::{parse_solver, py_err, reserve_check};
use numpy::ndarray::{Array, IxDyn};
use numpy::{PyArray, PyArrayDyn, PyReadonlyArrayDyn};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segcut::graph::Connectivity;
use segcut::io::{rect_seeds, rect_with_seeds, Image, Rect, Seed, Seeds};
use segcut::segment::model::ModelKind;
use segcut::segment::pipeline::{ColorSpace, SegmentOptions};
use segcut::segment::unary::{segment_probability, UNARY_LAMBDA};
use std::time::{Duration, Instant};

/// An image's pixels in one of the dtypes taken without conversion on the Python side.
#[derive(FromPyObject)]
pub enum Pixels<'py> {
    U8(PyReadonlyArrayDyn<'py, u8>),
    U16(PyReadonlyArrayDyn<'py, u16>),
    F32(PyReadonlyArrayDyn<'py, f32>),
}

impl Pixels<'_> {
    /// The values as `f32` (segcut's image type), in one pass.
    pub(crate) fn to_f32(&self) -> PyResult<Vec<f32>> {
        let contiguous = || PyValueError::new_err("image must be a C-contiguous array");
        Ok(match self {
            Pixels::U8(a) => a
                .as_slice()
                .map_err(|_| contiguous())?
                .iter()
                .map(|&v| v as f32)
                .collect(),
            Pixels::U16(a) => a
                .as_slice()
                .map_err(|_| contiguous())?
                .iter()
                .map(|&v| v as f32)
                .collect(),
            Pixels::F32(a) => a.as_slice().map_err(|_| contiguous())?.to_vec(),
        })
    }
}

/// Reads option `key` from `opts` (absent or None: `None`).
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

fn non_negative(name: &str, v: f64) -> PyResult<f64> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "{name} must be a finite number ≥ 0, got {v}"
        )));
    }
    Ok(v)
}

/// The keyword options as [`SegmentOptions`], checked like the command line's flags (same
/// names with `_` for `-`, same defaults), and whether `lambda` was given.
fn parse_options(o: &Bound<'_, PyDict>, is_volume: bool) -> PyResult<(SegmentOptions, bool)> {
    let mut s = SegmentOptions::default();
    if let Some(c) = opt::<u32>(o, "connectivity")? {
        let conn = Connectivity::from_number(c).ok_or_else(|| {
            PyValueError::new_err(format!("connectivity must be 4, 8, 6 or 26, got {c}"))
        })?;
        if is_volume && !conn.is_3d() {
            return Err(PyValueError::new_err(format!(
                "connectivity {c} is for images (4, 8); volumes take 6 or 26"
            )));
        }
        s.connectivity = Some(conn);
    }
    let lambda = opt::<f64>(o, "lambda")?;
    if let Some(l) = lambda {
        s.lambda = non_negative("lambda", l)?;
    }
    if let Some(v) = opt::<f64>(o, "sigma")? {
        if !(v.is_finite() && v > 0.0) {
            return Err(PyValueError::new_err(format!(
                "sigma must be a finite number > 0, got {v}"
            )));
        }
        s.sigma = Some(v);
    }
    let components = opt::<usize>(o, "components")?;
    let bins = opt::<usize>(o, "bins")?;
    match opt::<String>(o, "model")?.as_deref() {
        None | Some("gmm") => {
            if bins.is_some() {
                return Err(PyValueError::new_err(
                    "bins sets the histograms of model='hist'; with Gaussian mixtures use components",
                ));
            }
            s.model = ModelKind::Gmm {
                components: components.unwrap_or(5),
            };
        }
        Some("hist") => {
            if components.is_some() {
                return Err(PyValueError::new_err(
                    "components sets the Gaussian mixtures of model='gmm'; with histograms use bins",
                ));
            }
            s.model = ModelKind::Histogram {
                bins: bins.unwrap_or(16),
            };
        }
        Some(m) => {
            return Err(PyValueError::new_err(format!(
                "model must be 'gmm' or 'hist', got '{m}'"
            )))
        }
    }
    match opt::<String>(o, "color_space")?.as_deref() {
        None => {}
        Some("lab") => s.color_space = ColorSpace::Lab,
        Some("rgb") => s.color_space = ColorSpace::AsIs,
        Some(c) => {
            return Err(PyValueError::new_err(format!(
                "color_space must be 'lab' or 'rgb', got '{c}'"
            )))
        }
    }
    if let Some(i) = opt::<usize>(o, "iterations")? {
        if i == 0 {
            return Err(PyValueError::new_err("iterations must be at least 1"));
        }
        s.iterations = i;
    }
    if let Some(name) = opt::<String>(o, "solver")? {
        s.solver = parse_solver(&name)?;
    }
    if let Some(n) = opt::<usize>(o, "gpu_min_nodes")? {
        s.auto.min_gpu_nodes = n;
    }
    if let Some(b) = opt::<bool>(o, "cpu_build")? {
        s.gpu_build = !b;
    }
    if let Some(g) = opt::<f64>(o, "prior")? {
        s.prior.weight = non_negative("prior", g)?;
    }
    if let Some(k) = opt::<f64>(o, "prior_contrast")? {
        s.prior.contrast = non_negative("prior_contrast", k)?;
    }
    if let Some(v) = opt::<f64>(o, "prior_softness")? {
        s.prior.softness = non_negative("prior_softness", v)?;
    }
    if let Some(e) = opt::<f64>(o, "outlier")? {
        if !(0.0..1.0).contains(&e) {
            return Err(PyValueError::new_err(format!(
                "outlier must be in [0, 1), got {e}"
            )));
        }
        s.outlier = e;
    }
    if let Some(d) = opt::<bool>(o, "drop_unseeded")? {
        s.post.drop_unseeded = d;
    }
    if let Some(n) = opt::<usize>(o, "fill_holes")? {
        s.post.max_hole = n;
    }
    if let Some(v) = opt::<bool>(o, "verify")? {
        s.verify = v;
    }
    Ok((s, lambda.is_some()))
}

/// Segments an image (`shape` = `(rows, cols)`) or volume (`(depth, rows, cols)`) with
/// `channels` values per pixel; returns the mask and a dict of what happened.
#[pyfunction]
#[pyo3(signature = (image, shape, channels, seeds, rect, unary, options))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn segment<'py>(
    py: Python<'py>,
    image: Pixels<'_>,
    shape: Vec<usize>,
    channels: usize,
    seeds: Option<PyReadonlyArrayDyn<'_, u8>>,
    rect: Option<(usize, usize, usize, usize)>,
    unary: Option<PyReadonlyArrayDyn<'_, f32>>,
    options: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyArrayDyn<bool>>, Bound<'py, PyDict>)> {
    let t_all = Instant::now();
    let dims = match shape[..] {
        [h, w] => [w, h, 1],
        [d, h, w] => [w, h, d],
        _ => {
            return Err(PyValueError::new_err(format!(
                "an image has 2 spatial dimensions and a volume 3, got {shape:?}"
            )))
        }
    };
    let (mut opts, lambda_given) = parse_options(options, shape.len() == 3)?;
    let n: usize = shape.iter().product();
    let conn = opts.connectivity.unwrap_or(if shape.len() == 3 {
        Connectivity::N6
    } else {
        Connectivity::N8
    });
    reserve_check(
        segcut::io::memory_needed(dims, channels, conn.degree()),
        "segmenting this image",
    )?;
    let data = image.to_f32()?;
    if data.len() != n * channels || n == 0 {
        return Err(PyValueError::new_err(format!(
            "image has {} values for shape {shape:?} × {channels} channel(s)",
            data.len()
        )));
    }
    if let Some(i) = data.iter().position(|v| !v.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "image value {} at pixel {} (channel {}) is not finite",
            data[i],
            crate::grid::np_index(&shape, i / channels),
            i % channels
        )));
    }
    let img = Image::new(dims, channels, data);
    let from_array = match &seeds {
        Some(a) => {
            let s = a
                .as_slice()
                .map_err(|_| PyValueError::new_err("seeds must be a C-contiguous array"))?;
            if s.len() != n {
                return Err(PyValueError::new_err(format!(
                    "seeds have {} values for an image of shape {shape:?}",
                    s.len()
                )));
            }
            let mut labels = Vec::with_capacity(n);
            for (i, &v) in s.iter().enumerate() {
                labels.push(match v {
                    0 => Seed::Unknown,
                    1 => Seed::Foreground,
                    2 => Seed::Background,
                    3 => Seed::ProbablyForeground,
                    4 => Seed::ProbablyBackground,
                    _ => {
                        return Err(PyValueError::new_err(format!(
                            "seeds{} = {v}: seed values are 0 (unknown), 1 (foreground), \
                             2 (background), 3 (probably foreground), 4 (probably background)",
                            crate::grid::np_index(&shape, i)
                        )))
                    }
                });
            }
            Some(Seeds { dims, labels })
        }
        None => None,
    };
    let rect = rect.map(|(x, y, w, h)| Rect { x, y, w, h });
    let seeds = match (rect, from_array) {
        (Some(r), Some(s)) => rect_with_seeds(&r, &s).map_err(py_err)?,
        (Some(r), None) => rect_seeds(dims, &r).map_err(py_err)?,
        (None, Some(s)) => s,
        (None, None) if unary.is_some() => Seeds::unknown(dims),
        (None, None) => return Err(PyValueError::new_err(
            "give seeds (an array of 0-4 labels), a rect (x, y, w, h) or a unary probability map",
        )),
    };
    let prob = match &unary {
        Some(a) => {
            let p = a
                .as_slice()
                .map_err(|_| PyValueError::new_err("unary must be a C-contiguous array"))?;
            if !lambda_given {
                opts.lambda = UNARY_LAMBDA;
            }
            Some(p)
        }
        None => None,
    };
    let prepare = t_all.elapsed();
    py.check_signals()?;
    let seg = py
        .detach(|| match prob {
            Some(p) => segment_probability(&img, p, Some(&seeds), &opts),
            None => segcut::segment::segment(&img, &seeds, &opts),
        })
        .map_err(py_err)?;
    py.check_signals()?;

    let st = &seg.stats;
    let d = PyDict::new(py);
    d.set_item("flow", seg.flow)?;
    d.set_item("energy", seg.energy)?;
    d.set_item("verified", seg.verified)?;
    // The pipeline checks each cut's certificate and fails otherwise; the last cut's is kept.
    match seg.verified {
        true => d.set_item("certificate", (seg.flow, seg.flow))?,
        false => d.set_item("certificate", py.None())?,
    }
    d.set_item("solver", st.solver.solver.name())?;
    d.set_item("reason", &st.solver.reason)?;
    d.set_item("fallback", st.solver.fallback.as_deref())?;
    d.set_item("gpu_build_declined", st.gpu_build_declined.as_deref())?;
    d.set_item("iterations", st.iterations.len())?;
    d.set_item("connectivity", st.connectivity.number())?;
    let sum = |f: fn(&segcut::segment::pipeline::IterationStats) -> Duration| {
        st.iterations.iter().map(f).sum::<Duration>().as_secs_f64()
    };
    let times = PyDict::new(py);
    times.set_item("convert", prepare.as_secs_f64())?;
    times.set_item("prepare", st.prepare.as_secs_f64())?;
    times.set_item("models", sum(|i| i.models))?;
    times.set_item("graph", sum(|i| i.graph))?;
    times.set_item("solve", sum(|i| i.solve))?;
    times.set_item("verify", sum(|i| i.verify))?;
    times.set_item("total", t_all.elapsed().as_secs_f64())?;
    d.set_item("times", times)?;
    let mask = Array::from_shape_vec(IxDyn(&shape), seg.mask)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((PyArray::from_owned_array(py, mask), d))
}
