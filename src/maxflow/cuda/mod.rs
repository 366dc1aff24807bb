//! The GPU max-flow solvers: [`CudaGrid`] (tiled push-relabel for grids, `kernels/grid_pr.cu`),
//! [`CudaCsr`] (worklist push-relabel for any graph, `kernels/csr_pr.cu`), and [`Auto`], which uses
//! the GPU when one is usable and the graph is large enough, BK otherwise. The runtime they share
//! (context, NVRTC, kernel cache, device buffers) is [`crate::cuda`].

mod csr;
mod grid;

pub use csr::{CsrLayout, CsrStats, CudaCsr};
pub use grid::{grid_bytes_per_node, CudaGrid, Discharge, GridStats, Launch, Relabel, TileBlocks};

use crate::cuda::gpu_unavailable_reason;
use crate::graph::{CsrGraph, FlowNetwork, GridGraph, Network};
use crate::maxflow::{
    auto_min_gpu_nodes, bk::Bk, choose_solver_for, Choice, Cut, Flows, GraphSize, Solver,
};
use crate::{Error, Result};

/// The `auto` solver: runs what [`choose_solver`](crate::maxflow::choose_solver) picks for each graph ([`CudaGrid`] for grids
/// and [`CudaCsr`] for general graphs when a GPU is usable and the graph is large enough, BK
/// otherwise). When the GPU solver declines a graph ([`Error::Unsupported`]: no device, too
/// large for its memory, not available yet), it says why once per process on standard error and
/// solves with BK; [`Solver::last_choice`] then names BK and gives both reasons.
///
/// ```
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{cuda::Auto, Solver};
/// let mut g = GridGraph::new_2d(4, 4, Connectivity::N4).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(15, 0, 5);
/// let mut auto = Auto::default();
/// let cut = auto.solve_grid(&g).unwrap();
/// assert_eq!(cut.flow, 0); // the n-links are all zero
/// assert_eq!(auto.last_choice().unwrap().solver, "bk"); // 16 nodes: under the GPU threshold
/// ```
#[derive(Debug, Default)]
pub struct Auto {
    bk: Bk,
    grid: CudaGrid,
    csr: CudaCsr,
    last: Option<Choice>,
}

fn note_fallback(reason: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("segcut: GPU not used ({reason}); solving with bk on the CPU"));
}

/// The choice after the GPU solver it named declined with `why`.
fn fell_back(choice: &Choice, why: &str) -> Choice {
    note_fallback(why);
    Choice {
        solver: "bk",
        reason: format!("{}, but {} declined ({why})", choice.reason, choice.solver),
    }
}

impl Solver for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn last_choice(&self) -> Option<Choice> {
        self.last.clone()
    }

    fn solve_csr(&mut self, g: &CsrGraph) -> Result<Cut> {
        let size = GraphSize {
            grid: false,
            nodes: g.num_nodes(),
            arcs: g.num_arcs(),
        };
        let choice = choose_for(size);
        let result = if choice.solver == "cuda-csr" {
            match self.csr.solve_csr(g) {
                // As for grids: the CPU can still answer; input errors are reported as they are.
                Err(Error::Unsupported(why)) => {
                    self.last = Some(fell_back(&choice, &why));
                    return self.bk.solve_csr(g);
                }
                other => other,
            }
        } else {
            self.bk.solve_csr(g)
        };
        self.last = Some(choice);
        result
    }

    fn solve_grid(&mut self, g: &GridGraph) -> Result<Cut> {
        Ok(self.solve_grid_timed(g)?.0)
    }

    /// Flows from the solver `auto` would pick for the cut, with the same fall-back to BK.
    fn solve_flows_timed(&mut self, net: &Network) -> Result<(Cut, Flows, std::time::Duration)> {
        let choice = choose_for(GraphSize::of(net));
        let gpu: Option<&mut dyn Solver> = match choice.solver {
            "cuda-grid" => Some(&mut self.grid),
            "cuda-csr" => Some(&mut self.csr),
            _ => None,
        };
        let result = match gpu.map(|s| s.solve_flows_timed(net)) {
            Some(Err(Error::Unsupported(why))) => {
                self.last = Some(fell_back(&choice, &why));
                return self.bk.solve_flows_timed(net);
            }
            Some(other) => other,
            None => self.bk.solve_flows_timed(net),
        };
        self.last = Some(choice);
        result
    }

    fn solve_grid_timed(&mut self, g: &GridGraph) -> Result<(Cut, std::time::Duration)> {
        let size = GraphSize {
            grid: true,
            nodes: g.num_nodes(),
            arcs: g.num_arcs(),
        };
        let choice = choose_for(size);
        let result = if choice.solver == "cuda-grid" {
            match self.grid.solve_grid_timed(g) {
                // Unsupported covers "does not fit in GPU memory" and driver failures: the CPU
                // can still answer. Input errors (invalid capacities) are reported as they are.
                Err(Error::Unsupported(why)) => {
                    self.last = Some(fell_back(&choice, &why));
                    return self.bk.solve_grid_timed(g);
                }
                other => other,
            }
        } else {
            self.bk.solve_grid_timed(g)
        };
        self.last = Some(choice);
        result
    }
}

/// What `auto` picks for a graph of this size on this machine.
fn choose_for(size: GraphSize) -> Choice {
    choose_solver_for("auto", size, auto_min_gpu_nodes(), gpu_unavailable_reason)
}
