//! `auto`: the solver [`plan`] picks for each graph on this machine, and the CPU solve that
//! follows when a GPU solver declines ([`fall_back`]).

use super::bk::Bk;
use super::choice::{cpu_choice, declined, plan, AutoPolicy, Choice};
use super::cuda::{CudaCsr, CudaGrid};
use super::kind::SolverKind;
use super::reference::Dinic;
use super::solved::{GraphRef, Solved, Solver};
use crate::cuda::Device;
use crate::Result;

/// The `auto` solver: runs what [`plan`] picks for each graph under its [`AutoPolicy`] on its
/// [`Device`] ([`CudaGrid`] for grids and [`CudaCsr`] for general graphs when the device is
/// usable and the graph is large enough, else the CPU solver [`cpu_choice`] picks: BK, or Dinic
/// for general graphs with few terminal nodes). When the GPU solver declines a graph
/// ([`declined`]: no device, too large for its memory), it solves on the CPU ([`fall_back`]) and
/// says why in [`Choice::fallback`]; input errors are returned as they are.
///
/// ```
/// use segcut::cuda::Device;
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{Auto, AutoPolicy, Solver, SolverKind};
/// let mut g = GridGraph::new_2d(4, 4, Connectivity::N4).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(15, 0, 5);
/// let solved = Auto::new(AutoPolicy::default(), Device::new(0)).run((&g).into(), false).unwrap();
/// assert_eq!(solved.cut.flow, 0); // the n-links are all zero
/// assert_eq!(solved.ran.solver, SolverKind::Bk); // 16 nodes: under the GPU threshold
/// ```
#[derive(Debug)]
pub struct Auto {
    policy: AutoPolicy,
    device: Device,
    bk: Bk,
    grid: CudaGrid,
    csr: CudaCsr,
}

impl Auto {
    /// An `auto` solver that chooses with `policy` and runs its GPU solvers on `device`.
    pub fn new(policy: AutoPolicy, device: Device) -> Self {
        Auto {
            policy,
            device,
            bk: Bk::default(),
            grid: CudaGrid::on(device),
            csr: CudaCsr::on(device),
        }
    }

    /// What this solver would run on `g` on this machine.
    pub fn choice(&self, g: GraphRef<'_>) -> Choice {
        plan(SolverKind::Auto, g.size(), &self.policy, self.device)
    }
}

/// Solves `g` on the CPU after the GPU solver `chosen` named declined it, `why` being the GPU
/// solver's reason ([`declined`]): runs the CPU solver [`cpu_choice`] picks and says in
/// [`Solved::ran`] what was chosen, what ran instead, and why. The one fallback path: the `auto`
/// solver and the segmentation rounds on a GPU-built graph both end here.
///
/// ```
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{fall_back, Choice, SolverKind};
/// let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(1, 0, 5);
/// g.set_arc(0, 1, 2).unwrap();
/// let chosen = Choice { solver: SolverKind::CudaGrid, reason: "auto: big grid".into(), fallback: None };
/// let s = fall_back(&chosen, "out of GPU memory".into(), (&g).into(), false).unwrap();
/// assert_eq!((s.cut.flow, s.ran.solver), (2, SolverKind::Bk));
/// assert_eq!(s.ran.fallback.as_deref(), Some("out of GPU memory"));
/// ```
pub fn fall_back(chosen: &Choice, why: String, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
    let (cpu, cpu_why) = cpu_choice(g.size());
    let mut s = run_cpu(&mut Bk::default(), cpu, g, flows)?;
    s.ran = Choice {
        solver: cpu,
        reason: format!(
            "{}, but {} declined; {cpu_why}",
            chosen.reason, chosen.solver
        ),
        fallback: Some(why),
    };
    Ok(s)
}

/// Runs the CPU solver [`cpu_choice`] picked (`bk` unless it is Dinic).
fn run_cpu(bk: &mut Bk, kind: SolverKind, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
    match kind {
        SolverKind::Dinic => Dinic.run(g, flows),
        _ => bk.run(g, flows),
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
            Some(Err(e)) => match declined(SolverKind::Auto, &e) {
                Some(why) => return fall_back(&choice, why.to_string(), g, flows),
                None => return Err(e),
            },
            Some(Ok(s)) => s,
            None => run_cpu(&mut self.bk, choice.solver, g, flows)?,
        };
        solved.ran = choice;
        Ok(solved)
    }
}
