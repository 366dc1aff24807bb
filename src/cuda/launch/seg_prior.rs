//! The launchers of `kernels/seg_prior.cu` (driven by `src/segment/gpu_prior.rs`).
//!
//! Buffers, for an image of `n` pixels with `ch` channels on a grid of degree `deg` (N8 or N26,
//! the prior's neighbourhood): the image as `bytes` or `floats` (`n·ch` values, the other `None`),
//! `seeds`, `d_fg`, `d_bg`, `prior` `n`, `dist2` `deg`, the enclosure's `counts` 2.

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::seg_energy::strided;
use super::{kernel_file, per_item};
use crate::cuda::{Gpu, GridShape};
use crate::Result;

/// Warps per block of `prior_strips` (`STRIP_WARPS` in `kernels/seg_prior.cu`, which sizes its
/// shared tiles by it).
pub(crate) const STRIP_WARPS: u32 = 2;

/// Lines per strip: a warp's lanes (`STRIP` in the kernel file).
pub(crate) const STRIP: u32 = 32;

/// The strips of a sweep along `axis` whose partition starts `shift` lines before the grid, cut
/// into segments of `seg` steps along the axis: a warp per strip and segment, [`STRIP_WARPS`]
/// to a block.
fn strips(g: GridShape, axis: u32, shift: u32, seg: u32) -> LaunchConfig {
    let dims = [g.w, g.h, g.d];
    let a = if axis == 0 { 1 } else { 0 };
    let b = if axis == 2 { 1 } else { 2 };
    let segments = dims[axis as usize].div_ceil(seg.max(1));
    let count = (dims[a] + shift).div_ceil(STRIP) * dims[b] * segments;
    LaunchConfig {
        grid_dim: (count.div_ceil(STRIP_WARPS).max(1), 1, 1),
        block_dim: (STRIP_WARPS * STRIP, 1, 1),
        shared_mem_bytes: 0,
    }
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

        /// One sweep along `axis` (0, 1, or 2 on a 3D grid) in direction `sign` (±1), a warp per
        /// strip of 32 lines (the partition shifted by `shift` < 32 lines) and segment of `seg`
        /// steps along the axis (a positive multiple of 32), as pass `pass` of
        /// a batch: it sets `flags[pass]` when it lowers a distance, and does nothing when
        /// `flags[pass - 1]` is 0.
        ///
        /// # Safety
        /// Exactly one of `bytes`, `floats` is given, with `g.n·ch` entries; `dist2` has `g.deg`
        /// entries, `d_fg`, `d_bg` `g.n`, `flags` more than `pass`; `axis < 3`, and `axis < 2`
        /// on a 2D grid; `shift < 32`; `seg` a positive multiple of 32.
        fn strips = "prior_strips"(
            g: GridShape,
            axis: u32,
            sign: i32,
            shift: u32,
            seg: u32,
            pass: u32,
            ch: u32,
            bytes: Option<&CudaSlice<u8>>,
            floats: Option<&CudaSlice<f32>>,
            dist2: &CudaSlice<f32>,
            colour: f32,
            steps: Option<&CudaSlice<f32>>,
            d_fg: &mut CudaSlice<f32>,
            d_bg: &mut CudaSlice<f32>,
            flags: &mut CudaSlice<u32>,
        ) => strips(g, axis, shift, seg);

        /// The step lengths of a 2D grid (`steps[k·n + v]`, infinity without a neighbour),
        /// computed once for the sweeps.
        ///
        /// # Safety
        /// Exactly one of `bytes`, `floats` is given, with `g.n·ch` entries; `dist2` has
        /// `g.deg` entries, `steps` `g.deg·g.n`.
        fn steps = "prior_steps"(
            g: GridShape,
            ch: u32,
            bytes: Option<&CudaSlice<u8>>,
            floats: Option<&CudaSlice<f32>>,
            dist2: &CudaSlice<f32>,
            colour: f32,
            steps: &mut CudaSlice<f32>,
        ) => per_item(g.n);

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

        /// Adds the strokes' enclosure counts of `prior` (as `segment::prior::enclosure_counts`)
        /// to `counts`: `counts[0]` the border pixels' halves, `counts[1]` the border pixels.
        ///
        /// # Safety
        /// `prior` has `g.n` entries, `counts` 2 (zero before the launch for the counts alone).
        fn enclosure = "prior_enclosure"(
            g: GridShape,
            prior: &CudaSlice<f32>,
            counts: &mut CudaSlice<u64>,
        ) => strided(g.n as u64);

        /// Multiplies every entry of `prior` by `gain` (as `segment::prior::scale_by_enclosure`).
        ///
        /// # Safety
        /// `prior` has `n` entries.
        fn scale = "prior_scale"(
            n: u32,
            gain: f32,
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
