//! The launchers of `kernels/seg_prior.cu` (driven by `src/segment/gpu_prior.rs`).
//!
//! Buffers, for an image of `n` pixels with `ch` channels on a grid of degree `deg` (N8 or N26,
//! the prior's neighbourhood): the image as `bytes` or `floats` (`n·ch` values, the other `None`),
//! `seeds`, `d_fg`, `d_bg`, `prior` `n`, `dist2` `deg`.

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::seg_energy::strided;
use super::{kernel_file, per_item};
use crate::cuda::{Gpu, GridShape};
use crate::Result;

/// The lines of a sweep along `axis`: one thread each.
fn lines(g: GridShape, axis: u32) -> LaunchConfig {
    let len = [g.w, g.h, g.d][axis as usize].max(1);
    per_item(g.n / len)
}

kernel_file! {
    /// The kernels of `kernels/seg_prior.cu`.
    pub(crate) struct SegPrior for "seg_prior" {
        /// The sum of squared colour distances over all neighbour pairs, per block.
        ///
        /// # Safety
        /// Exactly one of `bytes`, `floats` is given, with `g.n·ch` entries; `partials` has
        /// `partials(g.n)`.
        fn pair_sum = "prior_pair_sum"(
            g: GridShape,
            ch: u32,
            bytes: Option<&CudaSlice<u8>>,
            floats: Option<&CudaSlice<f32>>,
            partials: &mut CudaSlice<f64>,
        ) => strided(g.n as u64);

        /// Distances 0 on each class's hard seeds, infinite elsewhere.
        ///
        /// # Safety
        /// `seeds`, `d_fg`, `d_bg` have `n` entries.
        fn init = "prior_init"(
            n: u32,
            seeds: &CudaSlice<u8>,
            d_fg: &mut CudaSlice<f32>,
            d_bg: &mut CudaSlice<f32>,
        ) => strided(n as u64);

        /// One line sweep along `axis` (0, 1, or 2 on a 3D grid) in direction `sign` (±1).
        ///
        /// # Safety
        /// Exactly one of `bytes`, `floats` is given, with `g.n·ch` entries; `dist2` has `g.deg`
        /// entries, `d_fg`, `d_bg` `g.n`, `changed` one; `axis < 3`, and `axis < 2` on a 2D grid.
        fn sweep = "prior_sweep"(
            g: GridShape,
            axis: u32,
            sign: i32,
            ch: u32,
            bytes: Option<&CudaSlice<u8>>,
            floats: Option<&CudaSlice<f32>>,
            dist2: &CudaSlice<f32>,
            colour: f32,
            d_fg: &mut CudaSlice<f32>,
            d_bg: &mut CudaSlice<f32>,
            changed: &mut CudaSlice<u32>,
        ) => lines(g, axis);

        /// The prior's cost difference from the two distances.
        ///
        /// # Safety
        /// `d_fg`, `d_bg`, `prior` have `n` entries.
        fn costs = "prior_costs"(
            n: u32,
            d_fg: &CudaSlice<f32>,
            d_bg: &CudaSlice<f32>,
            gamma: f32,
            soft: f32,
            prior: &mut CudaSlice<f32>,
        ) => strided(n as u64);
    }
}

impl SegPrior {
    /// The kernels, for this device.
    pub(crate) fn load(gpu: &Gpu) -> Result<Self> {
        Self::load_with(gpu, str::to_string)
    }
}
