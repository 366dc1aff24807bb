//! Graphs: the regular [`GridGraph`] of vision problems and the general [`CsrGraph`].
//!
//! Both keep the source and sink as *terminals*, not nodes: each node has a source capacity
//! (arc s → v) and a sink capacity (arc v → t), as in the Waterloo instances and in BK.
//! Capacities are `i32` ([`Cap`]); flows and sums are `i64` ([`Flow`]) and checked.

mod csr;
mod grid;

pub(crate) use csr::PairParts;
pub use csr::{CsrBuilder, CsrGraph, CsrParts, Vertex};
pub use grid::{offset_step, valid_box, Connectivity, GridGraph};

/// An arc capacity.
pub type Cap = i32;
/// A flow value or a sum of capacities.
pub type Flow = i64;

/// The largest node count any graph may have: node and arc indices are `u32`, with a few values
/// kept as sentinels by the solvers.
pub const MAX_NODES: usize = (u32::MAX - 16) as usize;

/// What every graph offers to the certificate: its size and the capacity of a cut.
pub trait FlowNetwork {
    /// Number of non-terminal nodes.
    fn num_nodes(&self) -> usize;
    /// Number of arcs between non-terminal nodes (each direction counted once).
    fn num_arcs(&self) -> usize;
    /// Capacity of the cut whose sink side is `sink_side`, from the original capacities,
    /// terminal arcs included: arcs from source-side to sink-side nodes, source arcs of sink-side
    /// nodes, sink arcs of source-side nodes, and direct source → sink arcs.
    fn cut_capacity(&self, sink_side: &[bool]) -> i128;
}

/// A graph of either kind, as loaded from a file or built by a generator.
#[derive(Clone, Debug)]
pub enum Network {
    /// A regular grid.
    Grid(GridGraph),
    /// Any graph.
    Csr(CsrGraph),
}

impl Network {
    /// The graph as a CSR graph (converted if it is a grid).
    pub fn to_csr(&self) -> crate::Result<std::borrow::Cow<'_, CsrGraph>> {
        match self {
            Network::Grid(g) => Ok(std::borrow::Cow::Owned(g.to_csr()?)),
            Network::Csr(g) => Ok(std::borrow::Cow::Borrowed(g)),
        }
    }

    /// A short description: `grid 64x64 N4` or `general`.
    pub fn kind(&self) -> String {
        match self {
            Network::Grid(g) => {
                let [w, h, d] = g.dims();
                if g.connectivity().is_3d() {
                    format!("grid {w}x{h}x{d} {}", g.connectivity())
                } else {
                    format!("grid {w}x{h} {}", g.connectivity())
                }
            }
            Network::Csr(_) => "general".to_string(),
        }
    }
}

impl FlowNetwork for Network {
    fn num_nodes(&self) -> usize {
        match self {
            Network::Grid(g) => g.num_nodes(),
            Network::Csr(g) => g.num_nodes(),
        }
    }
    fn num_arcs(&self) -> usize {
        match self {
            Network::Grid(g) => g.num_arcs(),
            Network::Csr(g) => g.num_arcs(),
        }
    }
    fn cut_capacity(&self, sink_side: &[bool]) -> i128 {
        match self {
            Network::Grid(g) => g.cut_capacity(sink_side),
            Network::Csr(g) => g.cut_capacity(sink_side),
        }
    }
}
