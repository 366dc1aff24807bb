//! `segcut.Grid`: a PyMaxflow-style grid graph over segcut's [`GridGraph`].

use crate::{parse_solver, py_err, reserve_check, solve_info};
use numpy::ndarray::{Array, IxDyn};
use numpy::{PyArray, PyArrayDyn, PyReadonlyArrayDyn};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segcut::graph::{Cap, Connectivity, GridGraph, Network};
use segcut::maxflow::{solve, Dynamic, Flows, SolveOptions, Solved, SolverKind};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The numpy index of node `v` in an array of `shape` (C order), as `[i, j, ...]`.
pub(crate) fn np_index(shape: &[usize], v: usize) -> String {
    let mut idx = vec![0; shape.len()];
    let mut r = v;
    for (k, &s) in shape.iter().enumerate().rev() {
        idx[k] = r % s.max(1);
        r /= s.max(1);
    }
    let parts: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Terminal capacities as Kolmogorov's BK keeps them, so that flows match PyMaxflow's: each
/// node holds one residual `source − sink` (its *excess*), and what both arcs share goes into a
/// constant added to the flow. Negative capacities are allowed, as in PyMaxflow's
/// `add_tedges`: they move capacity to the other terminal and lower the constant.
#[derive(Clone, Debug)]
pub(crate) struct Terminals {
    pub excess: Vec<i64>,
    pub constant: i64,
}

/// The magnitude above which a terminal sum could overflow `i64`.
const TERMINAL_LIMIT: i64 = 1 << 60;

impl Terminals {
    pub fn new(n: usize) -> PyResult<Self> {
        Ok(Terminals {
            excess: segcut::io::try_vec(n, 0, "the terminal capacities").map_err(py_err)?,
            constant: 0,
        })
    }

    /// Adds `s` to node `v`'s source arc and `t` to its sink arc.
    pub fn add(&mut self, v: usize, s: i64, t: i64) -> Result<(), String> {
        let e = self.excess[v];
        if s.abs() > TERMINAL_LIMIT || t.abs() > TERMINAL_LIMIT || e.abs() > TERMINAL_LIMIT {
            return Err(format!("terminal capacities {s}, {t} are too large"));
        }
        let cs = s + e.max(0);
        let ct = t + (-e).max(0);
        self.constant = self
            .constant
            .checked_add(cs.min(ct))
            .ok_or("the sum of terminal capacities overflows 64 bits")?;
        self.excess[v] = cs - ct;
        Ok(())
    }

    /// Node `v`'s source and sink capacities for the solver.
    pub fn caps(&self, v: usize) -> Result<(Cap, Cap), i64> {
        let e = self.excess[v];
        let c = Cap::try_from(e.abs()).map_err(|_| e)?;
        Ok(if e >= 0 { (c, 0) } else { (0, c) })
    }
}

/// A contiguous int64 or int32 array from the Python side (int32 read in place, as most
/// weight arrays come), or one value for every node.
#[derive(FromPyObject)]
pub(crate) enum Values<'py> {
    Array(PyReadonlyArrayDyn<'py, i64>),
    Array32(PyReadonlyArrayDyn<'py, i32>),
    Scalar(i64),
}

impl Values<'_> {
    /// The values as a slice of length `n` (or the scalar), checked.
    pub fn view(&self, n: usize, what: &str) -> PyResult<ValuesRef<'_>> {
        match self {
            Values::Scalar(c) => Ok(ValuesRef::Scalar(*c)),
            Values::Array(a) => {
                let s = a.as_slice().map_err(|_| {
                    PyValueError::new_err(format!("{what} must be a contiguous array"))
                })?;
                if s.len() != n {
                    return Err(PyValueError::new_err(format!(
                        "{what} has {} values for {n} nodes",
                        s.len()
                    )));
                }
                Ok(ValuesRef::Slice(s))
            }
            Values::Array32(a) => {
                let s = a.as_slice().map_err(|_| {
                    PyValueError::new_err(format!("{what} must be a contiguous array"))
                })?;
                if s.len() != n {
                    return Err(PyValueError::new_err(format!(
                        "{what} has {} values for {n} nodes",
                        s.len()
                    )));
                }
                Ok(ValuesRef::Slice32(s))
            }
        }
    }
}

/// A borrowed [`Values`], `Send` so that it can cross into the GIL-free closure.
#[derive(Clone, Copy)]
pub(crate) enum ValuesRef<'a> {
    Slice(&'a [i64]),
    Slice32(&'a [i32]),
    Scalar(i64),
}

impl ValuesRef<'_> {
    #[inline]
    pub fn get(self, i: usize) -> i64 {
        match self {
            ValuesRef::Slice(s) => s[i],
            ValuesRef::Slice32(s) => s[i] as i64,
            ValuesRef::Scalar(c) => c,
        }
    }
}

/// The last solve: its cut, the flow (constant included) and what the solver said.
pub(crate) struct LastSolve {
    pub solved: Solved,
    pub flow: i64,
    /// Terminal capacities put in place and the graph checked, before the solver's own build.
    pub prepare: Duration,
}

/// The native grid: capacities in a [`GridGraph`] (arcs) and [`Terminals`].
#[pyclass(module = "segcut._segcut", name = "Grid")]
pub struct Grid {
    shape: Vec<usize>,
    g: GridGraph,
    terminals: Terminals,
    construct: Duration,
    last: Option<LastSolve>,
    /// BK's search trees and residual graph, kept for warm re-solves (`maxflow(warm=True)`,
    /// PyMaxflow's `reuse_trees`) while only terminal capacities change.
    /// In a mutex only because a Python class must be `Sync` and a solver's device state is
    /// not; `&mut self` reaches it without locking.
    dynamic: Mutex<Option<Dynamic>>,
    /// Whether an n-link changed since `dynamic` solved: its state is then stale.
    arcs_changed: bool,
    /// Whether the last solve continued from kept state.
    last_warm: bool,
}

impl Grid {
    fn n(&self) -> usize {
        self.g.num_nodes()
    }

    fn last(&self) -> PyResult<&LastSolve> {
        self.last
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("call maxflow() first"))
    }

    /// The graph with the terminal capacities in place.
    fn with_terminals(&mut self) -> PyResult<()> {
        let n = self.n();
        let (src, snk) = self.g.terminal_caps_mut();
        for v in 0..n {
            let (s, t) = self.terminals.caps(v).map_err(|e| {
                PyValueError::new_err(format!(
                    "capacity overflow: node {} has a net terminal capacity {e}, beyond {}",
                    np_index(&self.shape, v),
                    Cap::MAX
                ))
            })?;
            src[v] = s;
            snk[v] = t;
        }
        Ok(())
    }
}

#[pymethods]
impl Grid {
    /// `shape` in numpy order (`(rows, cols)` or `(depth, rows, cols)`).
    #[new]
    fn new(shape: Vec<usize>, connectivity: u32) -> PyResult<Self> {
        let conn = Connectivity::from_number(connectivity).ok_or_else(|| {
            PyValueError::new_err(format!(
                "connectivity must be 4 or 8 (2D) or 6 or 26 (3D), got {connectivity}"
            ))
        })?;
        let (w, h, d) = match shape[..] {
            [h, w] => (w, h, 1),
            [d, h, w] => (w, h, d),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "a grid's shape has 2 or 3 dimensions, got {shape:?}"
                )))
            }
        };
        if shape.len() == 3 && !conn.is_3d() {
            return Err(PyValueError::new_err(format!(
                "a 3D grid needs connectivity 6 or 26, got {connectivity}"
            )));
        }
        if shape.len() == 2 && conn.is_3d() {
            return Err(PyValueError::new_err(format!(
                "a 2D grid needs connectivity 4 or 8, got {connectivity}"
            )));
        }
        let n = (w as u64).saturating_mul(h as u64).saturating_mul(d as u64);
        // Arcs, terminals in the graph, and the excess kept here.
        reserve_check(n.saturating_mul(4 * conn.degree() as u64 + 16), "the grid")?;
        let g = GridGraph::new(w, h, d, conn).map_err(py_err)?;
        Ok(Grid {
            terminals: Terminals::new(g.num_nodes())?,
            shape,
            g,
            construct: Duration::ZERO,
            last: None,
            dynamic: Mutex::new(None),
            arcs_changed: true,
            last_warm: false,
        })
    }

    /// The neighbour offsets, in numpy axis order, one per direction of the arc arrays.
    #[getter]
    fn offsets(&self) -> Vec<Vec<i32>> {
        let nd = self.shape.len();
        self.g
            .connectivity()
            .offsets()
            .iter()
            .map(|&[dx, dy, dz]| {
                if nd == 2 {
                    vec![dy, dx]
                } else {
                    vec![dz, dy, dx]
                }
            })
            .collect()
    }

    /// Adds `mult · weights[p]` to the arc from every node `p` to `p + offset` (numpy axis
    /// order) that lies inside the grid; with `symmetric`, the same to the reverse arc.
    fn add_direction(
        &mut self,
        py: Python<'_>,
        offset: Vec<i32>,
        weights: Values<'_>,
        mult: i64,
        symmetric: bool,
    ) -> PyResult<()> {
        let t = Instant::now();
        let off = match offset[..] {
            [dy, dx] if self.shape.len() == 2 => [dx, dy, 0],
            [dz, dy, dx] if self.shape.len() == 3 => [dx, dy, dz],
            _ => {
                return Err(PyValueError::new_err(format!(
                    "offset {offset:?} does not match a grid of shape {:?}",
                    self.shape
                )))
            }
        };
        let conn = self.g.connectivity();
        let Some(d) = conn.offsets().iter().position(|&o| o == off) else {
            return Err(PyValueError::new_err(format!(
                "offset {offset:?} is not a neighbour in a {}-connected grid (offsets: {:?}); \
                 create the Grid with a larger connectivity",
                conn.number(),
                self.offsets()
            )));
        };
        let n = self.n();
        let w = weights.view(n, "weights")?;
        let shape = &self.shape;
        let g = &mut self.g;
        let err = py.detach(|| {
            // Two passes: all checks first, so that a failure leaves the grid unchanged.
            let mut bad: Option<String> = None;
            g.for_each_arc(d, |v, u| {
                if bad.is_some() {
                    return;
                }
                let c = w.get(v).checked_mul(mult);
                let ok = |old: Cap| {
                    c.filter(|&c| c >= 0)
                        .and_then(|c| c.checked_add(old as i64))
                        .filter(|&s| s <= Cap::MAX as i64)
                        .is_some()
                };
                if !ok(g.caps(d)[v]) || (symmetric && !ok(g.caps(d ^ 1)[u])) {
                    let val = w.get(v) as i128 * mult as i128;
                    bad = Some(if val < 0 {
                        format!(
                            "edge weight {val} at node {} is negative",
                            np_index(shape, v)
                        )
                    } else {
                        format!(
                            "capacity overflow: edge weight {val} at node {} takes an arc past {}",
                            np_index(shape, v),
                            Cap::MAX
                        )
                    });
                }
            });
            if bad.is_some() {
                return bad;
            }
            // The checks passed: every sum below fits.
            let step = g.stride(d);
            let dims = g.dims();
            let each = |f: &mut dyn FnMut(usize)| {
                let [xr, yr, zr] = segcut::graph::valid_box(dims, off);
                for z in zr {
                    for y in yr.clone() {
                        let row = dims[0] * (y + dims[1] * z);
                        for x in xr.clone() {
                            f(row + x);
                        }
                    }
                }
            };
            let fwd = g.caps_mut(d);
            each(&mut |v| fwd[v] += (w.get(v) * mult) as Cap);
            if symmetric {
                let rev = g.caps_mut(d ^ 1);
                each(&mut |v| rev[(v as isize + step) as usize] += (w.get(v) * mult) as Cap);
            }
            None
        });
        self.construct += t.elapsed();
        self.last = None;
        self.arcs_changed = true;
        match err {
            Some(msg) => Err(PyValueError::new_err(msg)),
            None => Ok(()),
        }
    }

    /// Sets (not adds) the capacity of the arc from every node `p` to `p + offset` that lies
    /// inside the grid to `weights[p]` (a number, or an array of the grid's shape): the bulk
    /// path of `segcut.maxflow`, which sums its directions itself. Negative values are refused
    /// here; pair sums are checked by the solver before it solves.
    fn set_direction(
        &mut self,
        py: Python<'_>,
        offset: Vec<i32>,
        weights: Values<'_>,
    ) -> PyResult<()> {
        let t = Instant::now();
        let off = match offset[..] {
            [dy, dx] if self.shape.len() == 2 => [dx, dy, 0],
            [dz, dy, dx] if self.shape.len() == 3 => [dx, dy, dz],
            _ => {
                return Err(PyValueError::new_err(format!(
                    "offset {offset:?} does not match a grid of shape {:?}",
                    self.shape
                )))
            }
        };
        let Some(d) = self
            .g
            .connectivity()
            .offsets()
            .iter()
            .position(|&o| o == off)
        else {
            return Err(PyValueError::new_err(format!(
                "offset {offset:?} is not a neighbour in this grid"
            )));
        };
        let n = self.n();
        let w = weights.view(n, "weights")?;
        let dims = self.g.dims();
        let caps = self.g.caps_mut(d);
        let bad = py.detach(|| {
            let [xr, yr, zr] = segcut::graph::valid_box(dims, off);
            for z in zr {
                for y in yr.clone() {
                    let row = dims[0] * (y + dims[1] * z);
                    let (a, b) = (row + xr.start, row + xr.end);
                    match w {
                        // Whole rows at once where the values allow it (a fill, a copy).
                        ValuesRef::Scalar(v) => match Cap::try_from(v) {
                            Ok(c) if c >= 0 => caps[a..b].fill(c),
                            _ => return Some((a, v)),
                        },
                        ValuesRef::Slice32(src) => {
                            if let Some(k) = src[a..b].iter().position(|&c| c < 0) {
                                return Some((a + k, src[a + k] as i64));
                            }
                            caps[a..b].copy_from_slice(&src[a..b]);
                        }
                        ValuesRef::Slice(src) => {
                            for (v, (cap, &x)) in caps[a..b].iter_mut().zip(&src[a..b]).enumerate()
                            {
                                match Cap::try_from(x) {
                                    Ok(c) if c >= 0 => *cap = c,
                                    _ => return Some((a + v, x)),
                                }
                            }
                        }
                    }
                }
            }
            None
        });
        self.construct += t.elapsed();
        self.last = None;
        self.arcs_changed = true;
        match bad {
            Some((v, c)) => Err(PyValueError::new_err(format!(
                "edge weight {c} at node {} is negative or beyond {}",
                np_index(&self.shape, v),
                Cap::MAX
            ))),
            None => Ok(()),
        }
    }

    /// Adds `source[p]` to every node's source arc and `sink[p]` to its sink arc.
    fn add_tedges(&mut self, py: Python<'_>, source: Values<'_>, sink: Values<'_>) -> PyResult<()> {
        let t = Instant::now();
        let n = self.n();
        let (s, k) = (
            source.view(n, "source capacities")?,
            sink.view(n, "sink capacities")?,
        );
        let shape = &self.shape;
        let mut next = self.terminals.clone();
        let res = py.detach(|| {
            for v in 0..n {
                next.add(v, s.get(v), k.get(v))
                    .map_err(|m| format!("node {}: {m}", np_index(shape, v)))?;
            }
            Ok::<_, String>(next)
        });
        self.construct += t.elapsed();
        self.last = None;
        self.terminals = res.map_err(PyValueError::new_err)?;
        Ok(())
    }

    /// Forgets all terminal capacities (the n-links stay), so that new ones can be set before
    /// a warm re-solve.
    fn reset_terminals(&mut self) -> PyResult<()> {
        self.terminals = Terminals::new(self.n())?;
        self.last = None;
        Ok(())
    }

    /// Solves; returns the flow value (PyMaxflow's, terminal constant included). With `warm`,
    /// BK keeps its search trees and residual graph, and a later warm solve after terminal
    /// changes only continues from them (the same flow and cut as from scratch).
    #[pyo3(signature = (solver, flows, verify, gpu_min_nodes, warm=false))]
    fn maxflow(
        &mut self,
        py: Python<'_>,
        solver: &str,
        flows: bool,
        verify: bool,
        gpu_min_nodes: usize,
        warm: bool,
    ) -> PyResult<i64> {
        let kind = parse_solver(solver)?;
        let mut opts = SolveOptions::with_solver(kind);
        opts.flows = flows;
        opts.verify = verify;
        opts.auto.min_gpu_nodes = gpu_min_nodes;
        py.check_signals()?;
        let t = Instant::now();
        self.with_terminals()?;
        // Warm solves keep BK's state (flows are not kept on that path).
        let warm = warm && !flows && matches!(kind, SolverKind::Auto | SolverKind::Bk);
        let slot = self.dynamic.get_mut().unwrap_or_else(|e| e.into_inner());
        if !warm {
            *slot = None;
        }
        let reuse = warm && !self.arcs_changed && slot.is_some();
        if warm && !reuse {
            *slot = Some(Dynamic::new(SolverKind::Bk, verify, opts.device).map_err(py_err)?);
        }
        let g = &self.g;
        // The solver's own arrays (BK's; the others need no more host memory) and the cut.
        let nodes = g.num_nodes() as u64;
        let arcs = nodes.saturating_mul(g.connectivity().degree() as u64);
        segcut::io::check_budget(
            &format!("solving a grid of {nodes} nodes"),
            segcut::maxflow::bk::memory_needed(nodes, arcs).saturating_add(nodes),
            "use a smaller grid",
        )
        .map_err(py_err)?;
        let dynamic = self.dynamic.get_mut().unwrap_or_else(|e| e.into_inner());
        let (prepare, solved, was_warm) = py
            .detach(|| -> segcut::Result<(Duration, Solved, bool)> {
                // Every solver checks the grid itself (capacities, pair sums) before solving.
                let prepare = t.elapsed();
                Ok(match dynamic {
                    Some(d) if reuse => {
                        let s = d.resolve(g)?;
                        (prepare, s, d.last_was_warm())
                    }
                    Some(d) => (prepare, d.solve(g)?, false),
                    None => (prepare, solve(g, &opts)?, false),
                })
            })
            .inspect_err(|_| *self.dynamic.get_mut().unwrap_or_else(|e| e.into_inner()) = None)
            .map_err(py_err)?;
        self.arcs_changed = !warm;
        self.last_warm = was_warm;
        py.check_signals()?;
        let flow = solved
            .cut
            .flow
            .checked_add(self.terminals.constant)
            .ok_or_else(|| {
                PyValueError::new_err("capacity overflow: the flow overflows 64 bits")
            })?;
        self.last = Some(LastSolve {
            solved,
            flow,
            prepare,
        });
        Ok(flow)
    }

    /// The sink side of the last cut as a bool array of the grid's shape (True: sink segment).
    fn segments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<bool>>> {
        let last = self.last()?;
        let arr = Array::from_shape_vec(IxDyn(&self.shape), last.solved.cut.sink_side.clone())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(PyArray::from_owned_array(py, arr))
    }

    /// The last solve's solver, certificate and times, and whether it continued warm.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let last = self.last()?;
        let d = solve_info(py, &last.solved, last.flow, self.construct, last.prepare)?;
        d.set_item("warm", self.last_warm)?;
        Ok(d)
    }

    /// Arc flows of the last solve (asked for with `flows=True`): `(arcs, source, sink)`, arcs
    /// of shape `(directions, *shape)` in the order of `offsets`.
    #[allow(clippy::type_complexity)]
    fn flows<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyArrayDyn<i32>>,
        Bound<'py, PyArrayDyn<i32>>,
        Bound<'py, PyArrayDyn<i32>>,
    )> {
        let last = self.last()?;
        let Some(f): Option<&Flows> = last.solved.flows.as_ref() else {
            return Err(PyRuntimeError::new_err(
                "no flows: call maxflow(flows=True) to keep them",
            ));
        };
        let mut arc_shape = vec![self.g.connectivity().degree()];
        arc_shape.extend(&self.shape);
        let mk = |shape: &[usize], v: Vec<i32>| -> PyResult<Bound<'py, PyArrayDyn<i32>>> {
            let a = Array::from_shape_vec(IxDyn(shape), v)
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            Ok(PyArray::from_owned_array(py, a))
        };
        Ok((
            mk(&arc_shape, f.arcs.clone())?,
            mk(&self.shape, f.source.clone())?,
            mk(&self.shape, f.sink.clone())?,
        ))
    }

    /// Writes the grid as a DIMACS `.max` file (with segcut's grid hint), atomically.
    fn write_max(&mut self, py: Python<'_>, path: PathBuf, comment: String) -> PyResult<()> {
        self.with_terminals()?;
        let net = if self.terminals.constant == 0 {
            Network::Grid(self.g.clone())
        } else {
            // A grid file has no source → sink arc to carry the constant: write a general graph.
            let csr = crate::maxfile::with_constant(
                self.g.to_csr().map_err(py_err)?,
                self.terminals.constant,
            )
            .map_err(py_err)?;
            Network::Csr(csr)
        };
        py.detach(|| segcut::io::dimacs::write_max_file(&path, &net, &[&comment]))
            .map_err(py_err)
    }
}
