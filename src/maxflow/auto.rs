//! `auto`: the solver [`choose`] picks for each graph on this machine.

use super::cuda::{CudaCsr, CudaGrid};
use super::reference::Dinic;
use super::{bk::Bk, choose, cpu_choice, AutoPolicy, Choice, GraphRef, Solved, Solver, SolverKind};
use crate::cuda::gpu_unavailable_reason;
use crate::{Error, Result};

/// The `auto` solver: runs what [`choose`] picks for each graph under its [`AutoPolicy`]
/// ([`CudaGrid`] for grids and [`CudaCsr`] for general graphs when a GPU is usable and the graph
/// is large enough, else the CPU solver [`cpu_choice`] picks: BK, or Dinic for general graphs
/// with few terminal nodes). When the GPU solver declines a graph ([`Error::Unsupported`]: no
/// device, too large for its memory), it solves on the CPU and says why in
/// [`Choice::fallback`]; input errors are returned as they are.
///
/// ```
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{Auto, Solver, SolverKind};
/// let mut g = GridGraph::new_2d(4, 4, Connectivity::N4).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(15, 0, 5);
/// let solved = Auto::default().run((&g).into(), false).unwrap();
/// assert_eq!(solved.cut.flow, 0); // the n-links are all zero
/// assert_eq!(solved.ran.solver, SolverKind::Bk); // 16 nodes: under the GPU threshold
/// ```
#[derive(Debug, Default)]
pub struct Auto {
    policy: AutoPolicy,
    bk: Bk,
    grid: CudaGrid,
    csr: CudaCsr,
}

impl Auto {
    /// An `auto` solver that chooses with `policy`.
    pub fn new(policy: AutoPolicy) -> Self {
        Auto {
            policy,
            ..Default::default()
        }
    }

    /// What this solver would run on `g` on this machine.
    pub fn choice(&self, g: GraphRef<'_>) -> Choice {
        choose(
            SolverKind::Auto,
            g.size(),
            &self.policy,
            gpu_unavailable_reason,
        )
    }
}

impl Auto {
    /// Runs the CPU solver [`cpu_choice`] picked.
    fn run_cpu(&mut self, kind: SolverKind, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
        match kind {
            SolverKind::Dinic => Dinic.run(g, flows),
            _ => self.bk.run(g, flows),
        }
    }
}

impl Solver for Auto {
    fn kind(&self) -> SolverKind {
        SolverKind::Auto
    }

    fn run(&mut self, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
        let choice = self.choice(g);
        let gpu: Option<&mut dyn Solver> = match choice.solver {
            SolverKind::CudaGrid => Some(&mut self.grid),
            SolverKind::CudaCsr => Some(&mut self.csr),
            _ => None,
        };
        let mut solved = match gpu.map(|s| s.run(g, flows)) {
            // Unsupported covers "does not fit in GPU memory" and driver failures: the CPU can
            // still answer. Input errors (invalid capacities) are reported as they are.
            Some(Err(Error::Unsupported(why))) => {
                let (cpu, cpu_why) = cpu_choice(g.size());
                let mut s = self.run_cpu(cpu, g, flows)?;
                s.ran = Choice {
                    solver: cpu,
                    reason: format!(
                        "{}, but {} declined; {cpu_why}",
                        choice.reason, choice.solver
                    ),
                    fallback: Some(why),
                };
                return Ok(s);
            }
            Some(other) => other?,
            None => self.run_cpu(choice.solver, g, flows)?,
        };
        solved.ran = choice;
        Ok(solved)
    }
}
