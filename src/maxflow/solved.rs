//! What every solver takes and returns: [`GraphRef`] in, [`Solved`] out (the cut, flows,
//! certificate, times, and the [`Choice`] that says what ran), and the [`Solver`] trait.

use std::time::{Duration, Instant};

use super::choice::{Choice, GraphSize};
use super::cuda::{CsrStats, GridStats};
use super::kind::SolverKind;
use super::{Certificate, Cut, Flows};
use crate::graph::{CsrGraph, FlowNetwork, GridGraph, Network};
use crate::{Error, Result};

/// A borrowed graph of either kind: what every solver takes.
#[derive(Clone, Copy, Debug)]
pub enum GraphRef<'a> {
    /// A regular grid.
    Grid(&'a GridGraph),
    /// Any graph.
    Csr(&'a CsrGraph),
}

impl<'a> From<&'a GridGraph> for GraphRef<'a> {
    fn from(g: &'a GridGraph) -> Self {
        GraphRef::Grid(g)
    }
}

impl<'a> From<&'a CsrGraph> for GraphRef<'a> {
    fn from(g: &'a CsrGraph) -> Self {
        GraphRef::Csr(g)
    }
}

impl<'a> From<&'a Network> for GraphRef<'a> {
    fn from(net: &'a Network) -> Self {
        match net {
            Network::Grid(g) => GraphRef::Grid(g),
            Network::Csr(g) => GraphRef::Csr(g),
        }
    }
}

impl GraphRef<'_> {
    /// The size that [`choose`](super::choose) looks at.
    pub fn size(&self) -> GraphSize {
        GraphSize {
            grid: matches!(self, GraphRef::Grid(_)),
            nodes: self.num_nodes(),
            arcs: self.num_arcs(),
            terminal_nodes: match self {
                GraphRef::Grid(g) => g.num_nodes(),
                GraphRef::Csr(g) => g
                    .source_caps()
                    .iter()
                    .zip(g.sink_caps())
                    .filter(|&(&s, &t)| s != 0 || t != 0)
                    .count(),
            },
            one_way_arcs: match self {
                GraphRef::Grid(_) => 0,
                GraphRef::Csr(g) => {
                    let (cap, sister) = (g.caps(), g.sisters());
                    (0..cap.len())
                        .filter(|&a| cap[a] > 0 && cap[sister[a] as usize] == 0)
                        .count()
                }
            },
        }
    }

    /// The graph as a CSR graph (converted if it is a grid).
    pub fn to_csr(&self) -> Result<std::borrow::Cow<'_, CsrGraph>> {
        match self {
            GraphRef::Grid(g) => Ok(std::borrow::Cow::Owned(g.to_csr()?)),
            GraphRef::Csr(g) => Ok(std::borrow::Cow::Borrowed(*g)),
        }
    }
}

impl FlowNetwork for GraphRef<'_> {
    fn num_nodes(&self) -> usize {
        match self {
            GraphRef::Grid(g) => g.num_nodes(),
            GraphRef::Csr(g) => g.num_nodes(),
        }
    }
    fn num_arcs(&self) -> usize {
        match self {
            GraphRef::Grid(g) => g.num_arcs(),
            GraphRef::Csr(g) => g.num_arcs(),
        }
    }
    fn cut_capacity(&self, sink_side: &[bool]) -> i128 {
        match self {
            GraphRef::Grid(g) => g.cut_capacity(sink_side),
            GraphRef::Csr(g) => g.cut_capacity(sink_side),
        }
    }
}

/// What a GPU solver reports about its last solve.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuStats {
    /// From `cuda-grid`.
    Grid(GridStats),
    /// From `cuda-csr`.
    Csr(CsrStats),
}

/// Where a solve's time went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolveStats {
    /// Converting the graph into the solver's own form (BK's arcs, a CSR copy of a grid, the
    /// upload to the GPU, kernel set-up).
    pub build: Duration,
    /// The solve itself, the canonical cut (and flows, when asked) included.
    pub solve: Duration,
    /// Checking the certificate (zero when not asked).
    pub verify: Duration,
    /// The GPU solver's own statistics (rounds, relabels, device memory).
    pub gpu: Option<GpuStats>,
}

/// The result of a solve.
#[derive(Clone, Debug)]
pub struct Solved {
    /// The canonical minimum cut and the flow value.
    pub cut: Cut,
    /// A maximum flow arc by arc, when asked for ([`SolveOptions::flows`](super::SolveOptions::flows)).
    pub flows: Option<Flows>,
    /// The optimality certificate, when checked ([`SolveOptions::verify`](super::SolveOptions::verify)).
    pub certificate: Option<Certificate>,
    /// Times and statistics.
    pub stats: SolveStats,
    /// The solver that ran, and why.
    pub ran: Choice,
}

impl Solved {
    /// A result of `solver` with no flows, certificate or statistics yet: what solvers start
    /// from.
    pub fn new(cut: Cut, solver: SolverKind) -> Self {
        Solved {
            cut,
            flows: None,
            certificate: None,
            stats: SolveStats::default(),
            ran: Choice::requested(solver),
        }
    }
}

/// A maximum-flow solver. Solvers take the graph by reference and never change it; a solver
/// value may keep buffers between solves (a GPU solver keeps its device memory), so hold one
/// across many solves of a batch.
///
/// [`run`](Solver::run) is the one entry point; the `solve_*` methods are shorthands for it that
/// keep only the cut.
pub trait Solver {
    /// Which solver this is (for `auto`, [`SolverKind::Auto`]; what ran is in [`Solved::ran`]).
    fn kind(&self) -> SolverKind;

    /// Solves `g`: the canonical cut, and with `flows` a maximum flow arc by arc (the
    /// push-relabel solvers run phase two for it). `stats.build` and `stats.solve` are filled
    /// in; `ran` names the solver that ran. Verification is the caller's (see [`MaxFlow`](super::MaxFlow)).
    fn run(&mut self, g: GraphRef<'_>, flows: bool) -> Result<Solved>;

    /// The command-line name.
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Shorthand: the cut of a grid.
    fn solve_grid(&mut self, g: &GridGraph) -> Result<Cut> {
        Ok(self.run(g.into(), false)?.cut)
    }

    /// Shorthand: the cut of a general graph.
    fn solve_csr(&mut self, g: &CsrGraph) -> Result<Cut> {
        Ok(self.run(g.into(), false)?.cut)
    }

    /// Shorthand: the cut of either kind of graph.
    fn solve(&mut self, net: &Network) -> Result<Cut> {
        Ok(self.run(net.into(), false)?.cut)
    }

    /// Shorthand: the cut and a maximum flow arc by arc.
    fn solve_flows(&mut self, net: &Network) -> Result<(Cut, Flows)> {
        let s = self.run(net.into(), true)?;
        let flows = s.flows.ok_or_else(|| {
            Error::Unsupported(format!("the {} solver returned no flows", self.name()))
        })?;
        Ok((s.cut, flows))
    }
}

/// Times `f` and stores the time as the result's solve time, minus the build time the solver
/// reported: the helper every solver's [`Solver::run`] uses.
pub(crate) fn timed(f: impl FnOnce() -> Result<Solved>) -> Result<Solved> {
    let t = Instant::now();
    let mut s = f()?;
    s.stats.solve = t.elapsed().saturating_sub(s.stats.build);
    Ok(s)
}
