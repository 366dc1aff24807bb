//! Boykov–Kolmogorov max-flow (placeholder until the solver lands).
use super::{Cut, Solver};
use crate::graph::CsrGraph;
use crate::Result;

/// The Boykov–Kolmogorov solver.
#[derive(Default, Debug, Clone)]
pub struct Bk;

impl Solver for Bk {
    fn name(&self) -> &'static str {
        "bk"
    }
    fn solve_csr(&mut self, g: &CsrGraph) -> Result<Cut> {
        super::reference::Dinic.solve_csr(g)
    }
}
