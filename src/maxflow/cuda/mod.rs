//! GPU solvers (CUDA): the runtime layer and the grid push-relabel solver, plus [`Auto`], which
//! uses the GPU when one is usable and BK otherwise.
//!
//! Nothing here needs CUDA at build time: the driver and NVRTC are loaded when first used, and
//! without them [`gpu_available`] is false and the GPU solvers return [`Error::Unsupported`].
//!
//! ```
//! use segcut::maxflow::cuda;
//! match cuda::gpu_unavailable_reason() {
//!     None => println!("GPU: {}", cuda::gpu().unwrap().name),
//!     Some(why) => println!("no GPU ({why}): the CPU solver is used"),
//! }
//! ```

mod csr;
mod device;
mod grid;
pub mod runtime;

pub use csr::{CsrLayout, CsrStats, CudaCsr};
pub use device::DeviceGrid;
pub use grid::{grid_bytes_per_node, CudaGrid, Discharge, GridStats, Relabel};
pub use runtime::{
    compile_all_kernels_ptx, gpu, gpu_available, gpu_unavailable_reason, nvrtc_available, Gpu,
    OLDEST_ARCH,
};

use crate::graph::{CsrGraph, GridGraph};
use crate::maxflow::{bk::Bk, Cut, Solver};
use crate::{Error, Result};

/// The `auto` solver: [`CudaGrid`] for grids when a GPU is usable, BK for everything else. When
/// the GPU cannot be used (no device, or the grid does not fit), it says why once per process on
/// standard error and solves on the CPU.
#[derive(Debug, Default)]
pub struct Auto {
    bk: Bk,
    gpu: CudaGrid,
}

fn note_fallback(reason: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("segcut: GPU not used ({reason}); solving with bk on the CPU"));
}

impl Solver for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn solve_csr(&mut self, g: &CsrGraph) -> Result<Cut> {
        self.bk.solve_csr(g)
    }

    fn solve_grid(&mut self, g: &GridGraph) -> Result<Cut> {
        Ok(self.solve_grid_timed(g)?.0)
    }

    fn solve_grid_timed(&mut self, g: &GridGraph) -> Result<(Cut, std::time::Duration)> {
        if let Some(reason) = gpu_unavailable_reason() {
            note_fallback(&reason);
            return self.bk.solve_grid_timed(g);
        }
        match self.gpu.solve_grid_timed(g) {
            // Unsupported covers "does not fit in GPU memory" and driver failures: the CPU can
            // still answer. Input errors (invalid capacities) are reported as they are.
            Err(Error::Unsupported(reason)) => {
                note_fallback(&reason);
                self.bk.solve_grid_timed(g)
            }
            other => other,
        }
    }
}
