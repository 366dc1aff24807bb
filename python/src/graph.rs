//! `segcut.Graph`: a general graph built from bulk arrays, over segcut's [`CsrGraph`].

use crate::grid::{LastSolve, Terminals, Values};
use crate::maxfile::add_constant;
use crate::{parse_solver, py_err, solve_info};
use numpy::PyArray1;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segcut::graph::{Cap, CsrBuilder, CsrGraph, Network};
use segcut::maxflow::{solve, SolveOptions, Solved};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The native general graph: the arc pairs as added, and [`Terminals`].
#[pyclass(module = "segcut._segcut", name = "Graph")]
pub struct Graph {
    tail: Vec<u32>,
    head: Vec<u32>,
    cap: Vec<Cap>,
    rev: Vec<Cap>,
    terminals: Terminals,
    construct: Duration,
    last: Option<LastSolve>,
    /// For each added pair, its arc in the solved CSR graph (kept only when flows are).
    arc_of_pair: Vec<u32>,
}

impl Graph {
    fn n(&self) -> usize {
        self.terminals.excess.len()
    }

    fn last(&self) -> PyResult<&LastSolve> {
        self.last
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("call maxflow() first"))
    }

    /// The CSR graph of everything added; with the constant as an s → t arc when asked
    /// (solving adds the constant itself; a file must carry it).
    fn build(&self, keep_constant: bool) -> segcut::Result<CsrGraph> {
        let mut b = CsrBuilder::with_capacity(self.n(), self.head.len());
        for k in 0..self.head.len() {
            b.add_edge(self.tail[k], self.head[k], self.cap[k], self.rev[k])?;
        }
        for v in 0..self.n() {
            let (s, t) = self.terminals.caps(v).map_err(|e| {
                segcut::Error::Overflow(format!(
                    "node {v} has a net terminal capacity {e}, beyond {}",
                    Cap::MAX
                ))
            })?;
            b.add_terminals(v as u32, s, t)?;
        }
        if keep_constant && self.terminals.constant != 0 {
            if self.terminals.constant < 0 {
                return Err(segcut::Error::Graph(format!(
                    "the terminal capacities leave a negative constant flow {}, which a .max \
                     file cannot hold",
                    self.terminals.constant
                )));
            }
            add_constant(&mut b, self.terminals.constant)?;
        }
        b.build()
    }
}

/// Where each added pair's forward arc lies in `g`: [`CsrBuilder::build`] places arcs by a
/// stable counting sort on their tails, pair by pair, so this replays it. Checked against `g`'s
/// heads, so a change in the builder fails loudly instead of mislabelling flows.
fn arcs_of_pairs(g: &CsrGraph, tail: &[u32], head: &[u32]) -> segcut::Result<Vec<u32>> {
    let mut pos: Vec<u32> = g.first()[..g.num_nodes()].to_vec();
    let mut out = Vec::with_capacity(tail.len());
    for (&u, &v) in tail.iter().zip(head) {
        if u == v {
            out.push(u32::MAX); // a self loop: dropped by the builder, carries no flow
            continue;
        }
        let a = pos[u as usize];
        pos[u as usize] += 1;
        pos[v as usize] += 1;
        if g.heads()[a as usize] != v {
            return Err(segcut::Error::Graph(
                "internal: arc order differs from the builder's".into(),
            ));
        }
        out.push(a);
    }
    Ok(out)
}

/// Bytes per node of a graph solved from Python besides the solver's: the kept terminal excess
/// (`i64`), the builder's and the CSR graph's terminal capacities and offsets.
const BYTES_PER_NODE: u64 = 8 + 8 + 12;

/// Bytes per added pair besides the solver's: the pair as kept here (16), in the builder (16)
/// and in the CSR graph (two arcs of head, reverse and capacity: 24).
const BYTES_PER_PAIR: u64 = 16 + 16 + 24;

/// Refuses a node count beyond what the graph supports, or one whose solve could never fit in
/// memory (`MemoryError`, before anything is allocated).
fn check_nodes(nodes: usize) -> PyResult<()> {
    if nodes > segcut::graph::MAX_NODES {
        return Err(PyValueError::new_err(format!(
            "{nodes} nodes is more than the {} supported",
            segcut::graph::MAX_NODES
        )));
    }
    check_solve(nodes, 0)
}

/// `MemoryError` when solving `nodes` nodes and `pairs` pairs would not fit.
fn check_solve(nodes: usize, pairs: usize) -> PyResult<()> {
    let (n, p) = (nodes as u64, pairs as u64);
    let need = segcut::maxflow::bk::memory_needed(n, p.saturating_mul(2))
        .saturating_add(n.saturating_mul(BYTES_PER_NODE))
        .saturating_add(p.saturating_mul(BYTES_PER_PAIR));
    segcut::io::check_budget(
        &format!("a graph of {nodes} nodes and {pairs} edges"),
        need,
        "use a smaller graph",
    )
    .map_err(py_err)
}

#[pymethods]
impl Graph {
    #[new]
    fn new(nodes: usize) -> PyResult<Self> {
        check_nodes(nodes)?;
        Ok(Graph {
            tail: Vec::new(),
            head: Vec::new(),
            cap: Vec::new(),
            rev: Vec::new(),
            terminals: Terminals::new(nodes)?,
            construct: Duration::ZERO,
            last: None,
            arc_of_pair: Vec::new(),
        })
    }

    /// Number of nodes.
    #[getter]
    fn num_nodes(&self) -> usize {
        self.n()
    }

    /// Number of edges (arc pairs) added.
    #[getter]
    fn num_edges(&self) -> usize {
        self.head.len()
    }

    /// Adds `count` nodes; returns the first new index.
    fn add_nodes(&mut self, count: usize) -> PyResult<usize> {
        let first = self.n();
        let total = first.checked_add(count).ok_or_else(|| {
            PyValueError::new_err(format!("{first} + {count} nodes overflow the node count"))
        })?;
        check_nodes(total)?;
        segcut::io::try_reserve(&mut self.terminals.excess, count, "the terminal capacities")
            .map_err(py_err)?;
        self.terminals.excess.resize(total, 0);
        self.last = None;
        Ok(first)
    }

    /// Adds the pairs `i[k] → j[k]` (capacity `cap[k]`) and back (`rev[k]`); all four arrays of
    /// the same length (the Python side broadcasts). Nothing is added when any pair is bad.
    fn add_edges(
        &mut self,
        py: Python<'_>,
        i: Values<'_>,
        j: Values<'_>,
        cap: Values<'_>,
        rev: Values<'_>,
        count: usize,
    ) -> PyResult<()> {
        let t = Instant::now();
        let (i, j) = (i.view(count, "i")?, j.view(count, "j")?);
        let (c, r) = (cap.view(count, "cap")?, rev.view(count, "rev_cap")?);
        let n = self.n() as i64;
        let check = py.detach(|| {
            for k in 0..count {
                let (u, v, a, b) = (i.get(k), j.get(k), c.get(k), r.get(k));
                for (name, x) in [("i", u), ("j", v)] {
                    if !(0..n).contains(&x) {
                        return Err(format!(
                            "edge {k}: node {name} = {x} is out of range (the graph has {n} nodes)"
                        ));
                    }
                }
                if a < 0 || b < 0 {
                    return Err(format!(
                        "edge {k} ({u} → {v}): negative capacity ({a}, {b})"
                    ));
                }
                if a + b > Cap::MAX as i64 {
                    return Err(format!(
                        "capacity overflow: edge {k} ({u} → {v}): capacities {a} + {b} exceed {}",
                        Cap::MAX
                    ));
                }
            }
            Ok(())
        });
        check.map_err(PyValueError::new_err)?;
        let total = self.head.len() + count;
        if 2 * total > (u32::MAX - 16) as usize {
            return Err(PyValueError::new_err(
                "more edges than the 32-bit arc index supports",
            ));
        }
        self.tail.extend((0..count).map(|k| i.get(k) as u32));
        self.head.extend((0..count).map(|k| j.get(k) as u32));
        self.cap.extend((0..count).map(|k| c.get(k) as Cap));
        self.rev.extend((0..count).map(|k| r.get(k) as Cap));
        self.construct += t.elapsed();
        self.last = None;
        Ok(())
    }

    /// Adds `source[k]` and `sink[k]` to node `i[k]`'s terminal arcs (repeats add up).
    fn add_tedges(
        &mut self,
        py: Python<'_>,
        i: Values<'_>,
        source: Values<'_>,
        sink: Values<'_>,
        count: usize,
    ) -> PyResult<()> {
        let t = Instant::now();
        let i = i.view(count, "i")?;
        let (s, k) = (
            source.view(count, "cap_source")?,
            sink.view(count, "cap_sink")?,
        );
        let n = self.n() as i64;
        let mut next = self.terminals.clone();
        let res = py.detach(|| {
            for e in 0..count {
                let v = i.get(e);
                if !(0..n).contains(&v) {
                    return Err(format!(
                        "terminal edge {e}: node {v} is out of range (the graph has {n} nodes)"
                    ));
                }
                next.add(v as usize, s.get(e), k.get(e))
                    .map_err(|m| format!("node {v}: {m}"))?;
            }
            Ok(next)
        });
        self.terminals = res.map_err(PyValueError::new_err)?;
        self.construct += t.elapsed();
        self.last = None;
        Ok(())
    }

    /// Solves; returns the flow value (terminal constant included).
    fn maxflow(
        &mut self,
        py: Python<'_>,
        solver: &str,
        flows: bool,
        verify: bool,
        gpu_min_nodes: usize,
    ) -> PyResult<i64> {
        let mut opts = SolveOptions::with_solver(parse_solver(solver)?);
        opts.flows = flows;
        opts.verify = verify;
        opts.auto.min_gpu_nodes = gpu_min_nodes;
        py.check_signals()?;
        let t = Instant::now();
        check_solve(self.n(), self.head.len())?;
        let this = &*self;
        let g = py.detach(|| this.build(false)).map_err(py_err)?;
        let build = t.elapsed();
        py.check_signals()?;
        let (solved, arcs) = py
            .detach(|| -> segcut::Result<(Solved, Vec<u32>)> {
                let s = solve(&g, &opts)?;
                let arcs = if flows {
                    arcs_of_pairs(&g, &this.tail, &this.head)?
                } else {
                    Vec::new()
                };
                Ok((s, arcs))
            })
            .map_err(py_err)?;
        py.check_signals()?;
        let flow = solved
            .cut
            .flow
            .checked_add(self.terminals.constant)
            .ok_or_else(|| {
                PyValueError::new_err("capacity overflow: the flow overflows 64 bits")
            })?;
        self.arc_of_pair = arcs;
        self.last = Some(LastSolve {
            solved,
            flow,
            prepare: build,
        });
        Ok(flow)
    }

    /// The sink side of the last cut, one bool per node (True: sink segment).
    fn segments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<bool>>> {
        Ok(PyArray1::from_vec(
            py,
            self.last()?.solved.cut.sink_side.clone(),
        ))
    }

    /// The last solve's solver, certificate and times.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let last = self.last()?;
        solve_info(py, &last.solved, last.flow, self.construct, last.prepare)
    }

    /// Flows of the last solve (`maxflow(flows=True)`): the net flow `i → j` of every added
    /// edge (negative when it runs `j → i`), and each node's source and sink arc flows.
    #[allow(clippy::type_complexity)]
    fn flows<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
    )> {
        let last = self.last()?;
        let Some(f) = last.solved.flows.as_ref() else {
            return Err(PyRuntimeError::new_err(
                "no flows: call maxflow(flows=True) to keep them",
            ));
        };
        // The solved graph's sister of arc a is needed for the reverse flow; rebuilt cheaply
        // from the pair order: the reverse arc carries flow only when the forward one does not.
        let g = self.build(false).map_err(py_err)?;
        let edge: Vec<i64> = self
            .arc_of_pair
            .iter()
            .map(|&a| {
                if a == u32::MAX {
                    return 0;
                }
                let s = g.sisters()[a as usize] as usize;
                f.arcs[a as usize] as i64 - f.arcs[s] as i64
            })
            .collect();
        let to64 = |v: &[Cap]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
        Ok((
            PyArray1::from_vec(py, edge),
            PyArray1::from_vec(py, to64(&f.source)),
            PyArray1::from_vec(py, to64(&f.sink)),
        ))
    }

    /// Writes the graph as a DIMACS `.max` file, atomically.
    fn write_max(&self, py: Python<'_>, path: PathBuf, comment: String) -> PyResult<()> {
        py.detach(|| {
            let g = self.build(true)?;
            segcut::io::dimacs::write_max_file(&path, &Network::Csr(g), &[&comment])
        })
        .map_err(py_err)
    }

    /// Reads the first instance of a DIMACS `.max` file (compressed or not); grids come back as
    /// general graphs.
    #[staticmethod]
    fn read_max(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let g = py
            .detach(|| -> segcut::Result<CsrGraph> {
                let mut first: Option<Network> = None;
                segcut::io::dimacs::read_instances(&path, &Default::default(), |inst| {
                    if first.is_none() {
                        first = Some(inst.network);
                    }
                    Ok(())
                })?;
                let net = first.ok_or_else(|| segcut::Error::Input {
                    file: path.display().to_string(),
                    msg: "no max-flow instance in the file".into(),
                })?;
                Ok(net.to_csr()?.into_owned())
            })
            .map_err(py_err)?;
        let n = g.num_nodes();
        let mut out = Graph::new(n)?;
        for u in 0..n {
            for a in g.arcs_of(u) {
                let s = g.sisters()[a] as usize;
                if a < s {
                    out.tail.push(u as u32);
                    out.head.push(g.heads()[a]);
                    out.cap.push(g.caps()[a]);
                    out.rev.push(g.caps()[s]);
                }
            }
            out.terminals
                .add(u, g.source_caps()[u] as i64, g.sink_caps()[u] as i64)
                .map_err(PyValueError::new_err)?;
        }
        out.terminals.constant += g.constant_flow();
        Ok(out)
    }
}
