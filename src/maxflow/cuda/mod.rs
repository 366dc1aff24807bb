//! The GPU max-flow solvers: [`CudaGrid`] (tiled push-relabel for grids, `kernels/grid_pr.cu`),
//! [`CudaCsr`] (worklist push-relabel for any graph, `kernels/csr_pr.cu`). The runtime they share
//! (context, NVRTC, kernel cache, device buffers, the typed kernel launchers) is
//! [`crate::cuda`].

mod csr;
mod grid;

pub use csr::{CsrLayout, CsrStats, CudaCsr};
pub use grid::{CudaGrid, GridStats, GridTuning, TileBlocks, WarmGrid};
pub(crate) use grid::{KeptFlow, ResidentGrid};
