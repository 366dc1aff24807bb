//! A simple, independent max-flow (Dinic) used as the reference in tests (placeholder).
use super::{Cut, Solver};
use crate::graph::CsrGraph;
use crate::Result;

/// Dinic's algorithm.
#[derive(Default, Debug, Clone, Copy)]
pub struct Dinic;

impl Solver for Dinic {
    fn name(&self) -> &'static str {
        "dinic"
    }
    fn solve_csr(&mut self, _g: &CsrGraph) -> Result<Cut> {
        unimplemented!("placeholder")
    }
}
