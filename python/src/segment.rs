//! `segcut.segment`: the segmentation pipeline from numpy arrays.

use crate::options::{option_err, option_values};
use crate::{py_err, reserve_check};
use numpy::ndarray::{Array, IxDyn};
use numpy::{PyArray, PyArrayDyn, PyReadonlyArrayDyn};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segcut::graph::Connectivity;
use segcut::io::{
    rect_seeds, rect_with_seeds, seeds_from_values, Image, Rect, Seed, SeedFormat, Seeds,
};
use segcut::options::Table;
use segcut::segment::pipeline::DataTerm;
use segcut::segment::pipeline::SegmentOptions;
use segcut::segment::report::Report;
use segcut::segment::session::Segmenter;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The process's segmenters: the GPU sessions and buffers of one call stay for the next on the
/// same device. A call takes one out (or makes one) and puts it back, so calls from several
/// Python threads run side by side, each on a segmenter of its own.
static SEGMENTERS: Mutex<Vec<Segmenter>> = Mutex::new(Vec::new());

/// Runs `f` on a kept segmenter of `opts.device`, set to `opts`.
fn with_segmenter<R>(opts: &SegmentOptions, f: impl FnOnce(&mut Segmenter) -> R) -> R {
    let lock = || SEGMENTERS.lock().unwrap_or_else(|p| p.into_inner());
    let kept = {
        let mut pool = lock();
        let at = pool.iter().position(|s| s.options().device == opts.device);
        at.map(|i| pool.swap_remove(i))
    };
    let mut s = kept.unwrap_or_else(|| Segmenter::new(opts.clone()));
    s.set_options(opts.clone());
    let r = f(&mut s);
    lock().push(s);
    r
}

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
            Pixels::F32(a) => {
                let mut v = a.as_slice().map_err(|_| contiguous())?.to_vec();
                scale_unit_floats(&mut v);
                v
            }
        })
    }
}

/// Float images whose values all lie in `[0, 1]` are intensities in the unit range (skimage's
/// and OpenCV's float convention): scaled to segcut's 0–255 so that the colour conversion and
/// the contrast term see the same numbers as for the 8-bit image. A float image with any value
/// above 1 is taken as given (0–255); one with a value below 0 or not finite is left for the
/// checks to name.
pub(crate) fn scale_unit_floats(v: &mut [f32]) {
    if v.iter().all(|x| (0.0..=1.0).contains(x)) {
        v.iter_mut().for_each(|x| *x *= 255.0);
    }
}

/// The seeds of an array: segcut's labels 0–4 (`seed_format` not given or `auto`), or the
/// convention `format` names (an OpenCV grabCut mask's 2 is then *probably* background).
fn seeds_of_array(
    s: &[u8],
    dims: [usize; 3],
    shape: &[usize],
    format: SeedFormat,
) -> PyResult<Seeds> {
    if format != SeedFormat::Auto {
        let v: Vec<f32> = s.iter().map(|&x| x as f32).collect();
        return seeds_from_values(dims, &v, format, "seeds").map_err(py_err);
    }
    let mut labels = Vec::with_capacity(s.len());
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
                     2 (background), 3 (probably foreground), 4 (probably background); \
                     seed_format reads other conventions",
                    crate::grid::np_index(shape, i)
                )))
            }
        });
    }
    Ok(Seeds { dims, labels })
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
    let values = option_values(options, Table::Segment)?;
    let seed_format = values.seed_options().format;
    // A probability map has its own defaults (λ, one cut) under what was given, and refuses
    // the colour models' options.
    let opts = match &unary {
        Some(_) => values.probability_options(SegmentOptions::default()),
        None => values.segment_options(SegmentOptions::default()),
    }
    .map_err(option_err)?;
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
            Some(seeds_of_array(s, dims, &shape, seed_format)?)
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
            Some(p)
        }
        None => None,
    };
    let prepare = t_all.elapsed();
    py.check_signals()?;
    let seg = py
        .detach(|| match prob {
            Some(p) => with_segmenter(&opts, |s| {
                s.segment_with(&img, &seeds, DataTerm::Probability(p))
            }),
            None => with_segmenter(&opts, |s| s.segment(&img, &seeds)),
        })
        .map_err(py_err)?;
    py.check_signals()?;

    let st = &seg.stats;
    let d = PyDict::new(py);
    // The library's report (what `segcut segment --stats-json` writes), as a dict in
    // `result.extra["report"]`.
    let report = serde_json::to_string(&Report::new(&seg, &opts))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    d.set_item(
        "report",
        py.import("json")?.call_method1("loads", (report,))?,
    )?;
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
