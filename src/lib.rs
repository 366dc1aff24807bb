//! segcut: exact minimum cuts for vision grids and general graphs.
//!
//! The data path is one way:
//! `input (.max file, generator, image) → graph (GridGraph | CsrGraph) → solver → Cut → output`.
//!
//! ```
//! use segcut::graph::{Connectivity, GridGraph};
//! use segcut::maxflow::{bk::Bk, verify, Solver};
//!
//! // A 2×1 grid: pixel 0 likes the source, pixel 1 the sink, joined by a weak n-link.
//! let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
//! g.set_terminals(0, 5, 0);
//! g.set_terminals(1, 0, 5);
//! g.set_arc(0, 1, 2).unwrap(); // 0 → 1 with capacity 2 (and 1 → 0 with 0)
//! let cut = Bk::default().solve_grid(&g).unwrap();
//! assert_eq!(cut.flow, 2);
//! assert!(!cut.is_sink(0) && cut.is_sink(1));
//! assert_eq!(verify(&g, &cut).unwrap().cut_capacity, 2);
//! ```
#![warn(missing_docs)]

pub mod batch;
pub mod bench;
pub mod cuda;
pub mod error;
pub mod gen;
pub mod graph;
pub mod io;
pub mod maxflow;
pub mod options;
pub(crate) mod phases;
pub mod progress;
pub mod rng;
pub mod segment;
pub mod stereo;
#[cfg(test)]
pub(crate) mod test_notes;

pub use error::{Error, Result};
pub use graph::{CsrGraph, GridGraph, Network};
pub use maxflow::{verify, Cut, Solver};
