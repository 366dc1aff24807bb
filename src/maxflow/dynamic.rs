//! Warm-started solves of a grid whose terminal capacities change between solves (dynamic graph
//! cuts, Kohli & Torr): GrabCut rounds, interactive re-segmentation after a new scribble, the
//! passes of α-expansion.
//!
//! [`Dynamic`] solves a grid once from scratch and keeps the solver's state (BK's search trees
//! and residual graph; for `cuda-grid` the preflow on the GPU). [`Dynamic::resolve`] then takes the same grid with new source and sink
//! capacities, applies the differences to the kept residual graph by the reparameterisation
//! described at [`Bk`]'s warm-start methods, and continues the search. The answer is exactly what
//! a solve from scratch returns: the same flow value and the same canonical cut (the cut does not
//! depend on which maximum flow was found, docs/maxflow.md), with its certificate.

use std::time::Instant;

use super::bk::Bk;
use super::cuda::WarmGrid;
use super::{verify, Solved, Solver, SolverKind};
use crate::cuda::Device;
use crate::graph::{Cap, Connectivity, GridGraph};
use crate::{Error, Result};

/// A grid solver that keeps its state between solves, for graphs whose n-links stay and whose
/// terminal capacities change.
///
/// ```
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::cuda::Device;
/// use segcut::maxflow::{Dynamic, SolverKind};
/// let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
/// g.set_arc(0, 1, 2).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(1, 0, 5);
/// let mut dynamic = Dynamic::new(SolverKind::Bk, true, Device::default()).unwrap();
/// assert_eq!(dynamic.solve(&g).unwrap().cut.flow, 2);
/// // Only the terminal capacities change: the next solve starts from the last one's flow.
/// let s = dynamic.update_terminals(&mut g, &[(0, 1, 0), (1, 0, 9)]).unwrap();
/// assert_eq!(s.cut.flow, 1);
/// // Node 0's source arc is now the bottleneck: both nodes still reach the sink.
/// assert_eq!(s.cut.sink_side, vec![true, true]);
/// assert!(s.certificate.is_some());
/// assert!(dynamic.last_was_warm());
/// ```
#[derive(Debug)]
pub struct Dynamic {
    kind: SolverKind,
    verify: bool,
    bk: Bk,
    gpu: WarmGrid,
    /// The terminal capacities of the graph the kept state belongs to (empty: nothing kept).
    source: Vec<Cap>,
    sink: Vec<Cap>,
    /// Its shape: a grid of another shape is solved from scratch.
    shape: Option<([usize; 3], Connectivity)>,
    warm: bool,
}

impl Dynamic {
    /// A warm-starting solver of `kind`: [`SolverKind::Bk`] (CPU) or [`SolverKind::CudaGrid`]
    /// (GPU: the preflow stays on the device; push-relabel continues from a global relabel after
    /// the `update_terminals` kernel, on `device`). Checks each result's certificate when
    /// `verify` is set.
    pub fn new(kind: SolverKind, verify: bool, device: Device) -> Result<Self> {
        if !matches!(kind, SolverKind::Bk | SolverKind::CudaGrid) {
            return Err(Error::Unsupported(format!(
                "warm-started solves run on bk or cuda-grid, not {kind}"
            )));
        }
        Ok(Dynamic {
            kind,
            verify,
            bk: Bk::default(),
            gpu: WarmGrid::on(device),
            source: Vec::new(),
            sink: Vec::new(),
            shape: None,
            warm: false,
        })
    }

    /// The solver that runs.
    pub fn kind(&self) -> SolverKind {
        self.kind
    }

    /// Whether the last solve continued from kept state (false: it started from scratch).
    pub fn last_was_warm(&self) -> bool {
        self.warm
    }

    /// Forgets the kept state: the next solve starts from scratch.
    pub fn reset(&mut self) {
        self.gpu.reset();
        self.shape = None;
        self.source.clear();
        self.sink.clear();
    }

    /// Solves `g` from scratch and keeps the state for later [`resolve`](Dynamic::resolve)s.
    pub fn solve(&mut self, g: &GridGraph) -> Result<Solved> {
        self.reset();
        self.warm = false;
        let mut solved = if self.kind == SolverKind::CudaGrid {
            self.gpu.solve(g)?
        } else {
            self.bk.run(g.into(), false)?
        };
        self.keep(g)?;
        self.certify(g, &mut solved)?;
        Ok(solved)
    }

    /// Solves `g`, which must equal the last solved graph except for its terminal capacities
    /// (the n-links are taken from the kept state and not read again), by continuing from the
    /// last solve. Without kept state, for a grid of another shape, or where a node's residual
    /// would overflow, it solves from scratch (see [`last_was_warm`](Dynamic::last_was_warm)).
    pub fn resolve(&mut self, g: &GridGraph) -> Result<Solved> {
        if self.shape != Some((g.dims(), g.connectivity())) {
            return self.solve(g);
        }
        if self.kind == SolverKind::CudaGrid {
            return match self.gpu.resolve(g).inspect_err(|_| self.reset())? {
                Some(mut solved) => {
                    self.keep(g)?;
                    self.warm = true;
                    self.certify(g, &mut solved)?;
                    Ok(solved)
                }
                None => self.solve(g),
            };
        }
        let (source, sink) = (g.source_caps(), g.sink_caps());
        if source.iter().chain(sink).any(|&c| c < 0) {
            return Err(g
                .validate()
                .err()
                .unwrap_or_else(|| Error::Graph("negative terminal capacity".into())));
        }
        let t = Instant::now();
        self.bk.begin_update();
        for v in 0..g.num_nodes() {
            let (ds, dt) = (source[v] - self.source[v], sink[v] - self.sink[v]);
            if (ds, dt) != (0, 0) && self.bk.reparameterize(v as u32, ds, dt).is_err() {
                // The kept state is half updated: start over.
                return self.solve(g);
            }
        }
        let build = t.elapsed();
        let t = Instant::now();
        let cut = self.bk.finish_update(0).inspect_err(|_| self.reset())?;
        let mut solved = Solved::new(cut, self.kind);
        solved.stats.build = build;
        solved.stats.solve = t.elapsed();
        self.source.copy_from_slice(source);
        self.sink.copy_from_slice(sink);
        self.warm = true;
        self.certify(g, &mut solved)?;
        Ok(solved)
    }

    /// Sets the terminal capacities `(node, source, sink)` in `g` (the last solved graph) and
    /// [`resolve`](Dynamic::resolve)s it.
    pub fn update_terminals(
        &mut self,
        g: &mut GridGraph,
        changes: &[(usize, Cap, Cap)],
    ) -> Result<Solved> {
        let n = g.num_nodes();
        if let Some(&(v, _, _)) = changes.iter().find(|c| c.0 >= n) {
            return Err(Error::Graph(format!(
                "terminal update for node {v} of a grid of {n} nodes"
            )));
        }
        for &(v, s, t) in changes {
            g.set_terminals(v, s, t);
        }
        self.resolve(g)
    }

    /// Remembers what the kept state belongs to.
    fn keep(&mut self, g: &GridGraph) -> Result<()> {
        let n = g.num_nodes();
        for (kept, caps) in [
            (&mut self.source, g.source_caps()),
            (&mut self.sink, g.sink_caps()),
        ] {
            kept.clear();
            crate::io::try_reserve(kept, n, "the warm start's terminal capacities")?;
            kept.extend_from_slice(caps);
        }
        self.shape = Some((g.dims(), g.connectivity()));
        Ok(())
    }

    fn certify(&self, g: &GridGraph, solved: &mut Solved) -> Result<()> {
        if self.verify {
            let t = Instant::now();
            solved.certificate = Some(verify(g, &solved.cut)?);
            solved.stats.verify = t.elapsed();
        }
        Ok(())
    }
}
