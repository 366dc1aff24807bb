//! `cuda-csr`: push-relabel max-flow on any [`CsrGraph`], on the GPU (kernels in
//! `kernels/csr_pr.cu`). Placeholder until the solver lands: every solve is
//! [`Error::Unsupported`].

use crate::graph::CsrGraph;
use crate::maxflow::{Cut, Solver};
use crate::{Error, Result};

/// The GPU solver for general graphs (`--solver cuda-csr`).
#[derive(Clone, Debug, Default)]
pub struct CudaCsr {}

impl Solver for CudaCsr {
    fn name(&self) -> &'static str {
        "cuda-csr"
    }

    fn solve_csr(&mut self, _g: &CsrGraph) -> Result<Cut> {
        Err(Error::Unsupported("cuda-csr is not built yet".into()))
    }
}
