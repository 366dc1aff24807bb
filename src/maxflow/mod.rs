//! Max-flow solvers, the canonical minimum cut they all return, and its certificate.
//!
//! Every solver returns the same [`Cut`]: its sink side is exactly the set of nodes that can reach
//! the sink in the final residual graph. That set is the same for every maximum flow (it is the
//! smallest sink side of any minimum cut), so masks and cut files are bit-identical whichever
//! solver produced them. [`verify`] then proves a result optimal: the capacity of the returned cut,
//! computed from the original capacities, must equal the flow value (max-flow/min-cut duality).
//!
//! [`solve`] is the entry point: a [`SolverKind`] and [`SolveOptions`] (with the
//! [`Device`](crate::cuda::Device) the GPU solvers run on) in, a [`Solved`] out that says which
//! solver ran and why. Which solver runs is decided here alone ([`plan`], [`choose`]), and so is
//! the fallback from a GPU solver that declines to the CPU ([`declined`], [`fall_back`]).
//!
//! # Solvers
//!
//! `bk` ([`bk`]), `dinic` ([`mod@reference`]), `cuda-grid` and `cuda-csr` ([`cuda`]), and `auto`
//! ([`Auto`]), which picks one of them per graph. [`Dynamic`] keeps a solver's state between
//! solves of a grid whose terminal capacities change (warm starts).

mod auto;
pub mod bk;
mod choice;
pub mod cuda;
mod dynamic;
mod flows;
mod kind;
pub mod reference;
mod solved;
mod solver;

pub use auto::{fall_back, Auto};
pub use bk::Bk;
pub use choice::{
    choose, cpu_choice, declined, plan, AutoPolicy, Choice, GraphSize, AUTO_MIN_GPU_NODES,
    DINIC_MAX_TERMINAL_PERCENT, DINIC_MIN_ONE_WAY_PERCENT,
};
pub use dynamic::Dynamic;
pub use flows::{verify_flows, Flows};
pub use kind::SolverKind;
pub use solved::{GpuStats, GraphRef, SolveStats, Solved, Solver};
pub use solver::{solve, solver_of, MaxFlow, SolveOptions};

use crate::graph::{Cap, Flow, FlowNetwork};
use crate::{Error, Result};

/// A minimum cut and the maximum flow value that proves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The maximum flow value (including direct source → sink arcs).
    pub flow: Flow,
    /// `sink_side[v]` is true when node `v` can reach the sink in the final residual graph.
    pub sink_side: Vec<bool>,
}

impl Cut {
    /// Whether node `v` is on the sink side.
    pub fn is_sink(&self, v: usize) -> bool {
        self.sink_side[v]
    }

    /// The source-side nodes, in increasing order.
    pub fn source_side(&self) -> impl Iterator<Item = usize> + '_ {
        self.sink_side
            .iter()
            .enumerate()
            .filter(|(_, &s)| !s)
            .map(|(v, _)| v)
    }

    /// How many nodes are on the sink side.
    pub fn num_sink_side(&self) -> usize {
        self.sink_side.iter().filter(|&&s| s).count()
    }
}

/// Proof of optimality: a flow value and a cut of the same capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// The flow value reported by the solver.
    pub flow: Flow,
    /// The capacity of the returned cut, from the original capacities.
    pub cut_capacity: Flow,
}

/// Checks that `cut`'s capacity in `g` equals its flow value, which proves both optimal.
///
/// ```
/// use segcut::graph::{CsrBuilder, Vertex};
/// use segcut::maxflow::{verify, Cut};
/// let mut b = CsrBuilder::new(1).unwrap();
/// b.add_terminals(0, 3, 2).unwrap();
/// let g = b.build().unwrap();
/// let good = Cut { flow: 2, sink_side: vec![false] };
/// assert!(verify(&g, &good).is_ok());
/// let bad = Cut { flow: 2, sink_side: vec![true] }; // cuts the source arc, capacity 3
/// assert!(verify(&g, &bad).is_err());
/// ```
pub fn verify(g: &impl FlowNetwork, cut: &Cut) -> Result<Certificate> {
    if cut.sink_side.len() != g.num_nodes() {
        return Err(Error::Graph(format!(
            "cut has {} nodes but the graph has {}",
            cut.sink_side.len(),
            g.num_nodes()
        )));
    }
    let cap = g.cut_capacity(&cut.sink_side);
    let cut_capacity = Flow::try_from(cap).unwrap_or(Flow::MAX);
    if cap != cut.flow as i128 {
        return Err(Error::Certificate {
            flow: cut.flow,
            cut_capacity,
        });
    }
    Ok(Certificate {
        flow: cut.flow,
        cut_capacity,
    })
}

/// The canonical sink side from a final residual graph in CSR layout: a reverse breadth-first
/// search from every node with residual capacity to the sink (`reaches_sink[v]`), following arcs
/// `u → w` that still have residual capacity (`rcap[sister[a]] > 0` for arc `a = w → u`).
///
/// `reaches_sink` is taken as the initial marking and returned extended.
pub fn sink_reachable(
    first: &[u32],
    head: &[u32],
    sister: &[u32],
    rcap: &[Cap],
    mut reaches_sink: Vec<bool>,
) -> Vec<bool> {
    let mut queue: Vec<u32> = (0..reaches_sink.len() as u32)
        .filter(|&v| reaches_sink[v as usize])
        .collect();
    let mut i = 0;
    while i < queue.len() {
        let w = queue[i] as usize;
        i += 1;
        for a in first[w] as usize..first[w + 1] as usize {
            let u = head[a] as usize;
            if !reaches_sink[u] && rcap[sister[a] as usize] > 0 {
                reaches_sink[u] = true;
                queue.push(u as u32);
            }
        }
    }
    reaches_sink
}
