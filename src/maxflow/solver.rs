//! One way to solve: [`SolverKind`] names a solver, [`SolveOptions`] says what to compute,
//! [`solve`] (or a [`MaxFlow`] held across many solves) runs it, and the [`Solved`] result says
//! which solver ran and why ([`Choice`](super::Choice)), with its times and statistics. Every caller reports
//! `ran`; none works the choice out again.
//!
//! ```
//! use segcut::graph::{Connectivity, GridGraph};
//! use segcut::maxflow::{solve, SolveOptions, SolverKind};
//! let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
//! g.set_terminals(0, 5, 0);
//! g.set_terminals(1, 0, 5);
//! g.set_arc(0, 1, 2).unwrap();
//! let solved = solve(&g, &SolveOptions::default()).unwrap();
//! assert_eq!(solved.cut.flow, 2);
//! assert_eq!(solved.ran.solver, SolverKind::Bk); // 2 nodes: under auto's GPU threshold
//! assert!(solved.certificate.is_some()); // verified by default
//! ```

use std::time::Instant;

use super::auto::Auto;
use super::choice::AutoPolicy;
use super::cuda::{CudaCsr, CudaGrid};
use super::kind::SolverKind;
use super::solved::{GraphRef, Solved, Solver};
use super::{bk::Bk, reference::Dinic, verify, verify_flows};
use crate::cuda::Device;
use crate::Result;

/// What to compute and with which solver.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveOptions {
    /// The solver (default `auto`).
    pub solver: SolverKind,
    /// How `auto` chooses.
    pub auto: AutoPolicy,
    /// Also compute a maximum flow arc by arc ([`Solved::flows`]); with `verify`, the flows are
    /// checked too ([`verify_flows`]).
    pub flows: bool,
    /// Check the certificate (cut capacity == flow value): a failure is an error. On by default.
    pub verify: bool,
    /// The GPU the GPU solvers run on (default device 0); a batch worker sets its own. The CPU
    /// solvers ignore it, and `auto` asks this device whether it is usable.
    pub device: Device,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            solver: SolverKind::Auto,
            auto: AutoPolicy::default(),
            flows: false,
            verify: true,
            device: Device::default(),
        }
    }
}

impl SolveOptions {
    /// The default options with `solver`.
    pub fn with_solver(solver: SolverKind) -> Self {
        SolveOptions {
            solver,
            ..Default::default()
        }
    }
}

/// A solver of [`SolverKind`] (for `auto`, one that chooses with `policy`); the GPU solvers run
/// on `device`.
///
/// ```
/// use segcut::cuda::Device;
/// use segcut::maxflow::{solver_of, AutoPolicy, SolverKind};
/// let s = solver_of(SolverKind::CudaGrid, AutoPolicy::default(), Device::new(0));
/// assert_eq!(s.kind(), SolverKind::CudaGrid); // nothing touches the GPU before a solve
/// ```
pub fn solver_of(kind: SolverKind, policy: AutoPolicy, device: Device) -> Box<dyn Solver + Send> {
    match kind {
        SolverKind::Auto => Box::new(Auto::new(policy, device)),
        SolverKind::Bk => Box::<Bk>::default(),
        SolverKind::Dinic => Box::new(Dinic),
        SolverKind::CudaGrid => Box::new(CudaGrid::on(device)),
        SolverKind::CudaCsr => Box::new(CudaCsr::on(device)),
    }
}

/// A solver held across many solves, with the options it was made for: each [`solve`]
/// (MaxFlow::solve) runs it, checks the certificate when asked, and reports what ran.
///
/// ```
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{MaxFlow, SolveOptions, SolverKind};
/// let mut mf = MaxFlow::new(SolveOptions::with_solver(SolverKind::Bk));
/// for cap in 1..4 {
///     let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
///     g.set_terminals(0, 5, 0);
///     g.set_terminals(1, 0, 5);
///     g.set_arc(0, 1, cap).unwrap();
///     let s = mf.solve(&g).unwrap();
///     assert_eq!(s.cut.flow, cap as i64);
///     assert_eq!(s.certificate.unwrap().cut_capacity, cap as i64);
/// }
/// ```
pub struct MaxFlow {
    opts: SolveOptions,
    solver: Box<dyn Solver + Send>,
}

impl MaxFlow {
    /// A solver for `opts`.
    pub fn new(opts: SolveOptions) -> Self {
        MaxFlow {
            solver: solver_of(opts.solver, opts.auto, opts.device),
            opts,
        }
    }

    /// The options.
    pub fn options(&self) -> &SolveOptions {
        &self.opts
    }

    /// Solves `g` as the options say, checking the certificate (and the flows) when asked.
    pub fn solve<'a>(&mut self, g: impl Into<GraphRef<'a>>) -> Result<Solved> {
        let g = g.into();
        let mut solved = self.solver.run(g, self.opts.flows)?;
        if self.opts.verify {
            let t = Instant::now();
            solved.certificate = Some(verify(&g, &solved.cut)?);
            if let Some(flows) = &solved.flows {
                verify_flows(g, flows)?;
            }
            solved.stats.verify = t.elapsed();
        }
        Ok(solved)
    }
}

/// Solves `g` once as `opts` say: the one entry point for a single graph (hold a [`MaxFlow`] to
/// solve many).
pub fn solve<'a>(g: impl Into<GraphRef<'a>>, opts: &SolveOptions) -> Result<Solved> {
    MaxFlow::new(opts.clone()).solve(g)
}
