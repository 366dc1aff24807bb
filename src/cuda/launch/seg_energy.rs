//! The launchers of `kernels/seg_energy.cu` (driven by `src/segment/gpu.rs`).
//!
//! Every kernel strides over its pixels with at most [`MAX_BLOCKS`] blocks; the reductions leave
//! one partial per block ([`partials`] of them) for the host to add. Buffers, for an image of `n`
//! pixels with `ch` channels and a grid of degree `deg`: `img` `n·ch` values, `seeds`, `source`,
//! `sink` `n`, `caps` `deg·n`.

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::{blocks, kernel_file, BLOCK};
use crate::cuda::{Gpu, GridShape};
use crate::Result;

/// Most blocks of a launch: the kernels stride over the pixels, and reductions leave one partial
/// per block for the host to add.
pub(crate) const MAX_BLOCKS: u32 = 2048;

/// The launch over `n` items: a thread per item up to [`MAX_BLOCKS`] blocks, then strides.
pub(crate) fn strided(n: u64) -> LaunchConfig {
    blocks(n.div_ceil(BLOCK as u64).clamp(1, MAX_BLOCKS as u64) as u32)
}

/// How many partials a reduction over `n` pixels leaves (one per block of its launch).
pub(crate) fn partials(n: usize) -> usize {
    strided(n as u64).grid_dim.0 as usize
}

kernel_file! {
    /// The kernels of `kernels/seg_energy.cu`.
    pub(crate) struct SegEnergy for "seg_energy" {
        /// 8-bit sRGB to Lab through the linearisation table `lin` (256 entries).
        ///
        /// # Safety
        /// `rgb` and `lab` have `3n` entries, `lin` 256.
        fn lab_from_u8 = "lab_from_u8"(
            n: u32,
            rgb: &CudaSlice<u8>,
            lin: &CudaSlice<f32>,
            lab: &mut CudaSlice<f32>,
        ) => strided(n as u64);

        /// Integer-valued sRGB stored as floats to Lab.
        ///
        /// # Safety
        /// `rgb` and `lab` have `3n` entries; every value of `rgb` is an integer index into
        /// `lin`.
        fn lab_from_f32 = "lab_from_f32"(
            n: u32,
            rgb: &CudaSlice<f32>,
            lin: &CudaSlice<f32>,
            lab: &mut CudaSlice<f32>,
        ) => strided(n as u64);

        /// Bytes to floats, unchanged.
        ///
        /// # Safety
        /// `input` and `out` have `count` entries.
        fn widen_u8 = "widen_u8"(
            count: u64,
            input: &CudaSlice<u8>,
            out: &mut CudaSlice<f32>,
        ) => strided(count);

        /// Per channel min, max, sum and sum of squares, and the count of non-integer values, as
        /// `4·ch + 1` partials per block.
        ///
        /// # Safety
        /// `img` has `n·ch` entries (`ch` ≤ 3), `partials` `partials(n)·(4·ch + 1)`.
        fn channel_stats = "channel_stats"(
            n: u32,
            ch: u32,
            img: &CudaSlice<f32>,
            partials: &mut CudaSlice<f64>,
        ) => strided(n as u64);

        /// The sum of squared colour distances over all neighbour pairs (for β), per block.
        ///
        /// # Safety
        /// `img` has `g.n·ch` entries, `partials` `partials(g.n)`.
        fn pair_sum = "pair_sum"(
            g: GridShape,
            ch: u32,
            img: &CudaSlice<f32>,
            partials: &mut CudaSlice<f64>,
        ) => strided(g.n as u64);

        /// n-links from colour distances through the exp table; each block's largest n-link sum
        /// of a node.
        ///
        /// # Safety
        /// `img` has `g.n·ch` entries, `inv_dist` `deg`, `exp_table` `end + 2`, `caps` `deg·g.n`,
        /// `partials` `partials(g.n)`.
        fn nlinks = "nlinks"(
            g: GridShape,
            ch: u32,
            img: &CudaSlice<f32>,
            beta: f32,
            inv_dist: &CudaSlice<f32>,
            exp_table: &CudaSlice<f32>,
            end: f32,
            caps: &mut CudaSlice<i32>,
            partials: &mut CudaSlice<i64>,
        ) => strided(g.n as u64);

        /// n-links of integer grey images from per-|difference| tables.
        ///
        /// # Safety
        /// `img` has `g.n` entries whose pairwise differences are below `span1`, `tables`
        /// `span1` entries per table, `table_of` `deg` table numbers, `caps` `deg·g.n`,
        /// `partials` `partials(g.n)`.
        fn nlinks_grey_table = "nlinks_grey_table"(
            g: GridShape,
            img: &CudaSlice<f32>,
            tables: &CudaSlice<i32>,
            table_of: &CudaSlice<u32>,
            span1: u32,
            caps: &mut CudaSlice<i32>,
            partials: &mut CudaSlice<i64>,
        ) => strided(g.n as u64);

        /// t-links from the two classes' mixtures; the unary constant per block; the lowest
        /// pixel whose costs are unusable in `bad`.
        ///
        /// # Safety
        /// `img` has `n·ch` entries, `seeds`, `source`, `sink` `n`, `partials` `partials(n)`,
        /// `bad` one; the headers' offsets and counts lie inside `models`.
        fn tlinks_gmm = "tlinks_gmm"(
            n: u32,
            ch: u32,
            img: &CudaSlice<f32>,
            seeds: &CudaSlice<u8>,
            models: &CudaSlice<f64>,
            headers: &CudaSlice<f64>,
            prior: Option<&CudaSlice<f32>>,
            scale: f64,
            k: i32,
            source: &mut CudaSlice<i32>,
            sink: &mut CudaSlice<i32>,
            partials: &mut CudaSlice<f64>,
            bad: &mut CudaSlice<u32>,
        ) => strided(n as u64);

        /// t-links of grey images from the host's cost table (`count` nodes).
        ///
        /// # Safety
        /// `img`, `seeds`, `source`, `sink` have `n` entries, `nodes` `2·count` (`count` ≥ 1),
        /// `partials` `partials(n)`, `bad` one.
        fn tlinks_grey_table = "tlinks_grey_table"(
            n: u32,
            img: &CudaSlice<f32>,
            seeds: &CudaSlice<u8>,
            nodes: &CudaSlice<f64>,
            count: u32,
            lo: f32,
            inv_step: f32,
            prior: Option<&CudaSlice<f32>>,
            scale: f64,
            k: i32,
            source: &mut CudaSlice<i32>,
            sink: &mut CudaSlice<i32>,
            partials: &mut CudaSlice<f64>,
            bad: &mut CudaSlice<u32>,
        ) => strided(n as u64);

        /// The capacity of a cut from the original capacities, per block.
        ///
        /// # Safety
        /// `caps` has `deg·g.n` entries, `source`, `sink`, `sink_side` `g.n`, `partials`
        /// `partials(g.n)`.
        fn cut_capacity = "cut_capacity"(
            g: GridShape,
            caps: &CudaSlice<i32>,
            source: &CudaSlice<i32>,
            sink: &CudaSlice<i32>,
            sink_side: &CudaSlice<u8>,
            partials: &mut CudaSlice<u64>,
        ) => strided(g.n as u64);
    }
}

impl SegEnergy {
    /// The kernels, for this device.
    pub(crate) fn load(gpu: &Gpu) -> Result<Self> {
        Self::load_with(gpu, str::to_string)
    }
}
