//! The launchers of `kernels/stereo.cu` (driven by `src/stereo/gpu.rs`).
//!
//! Every kernel strides over its items, so the launch size is a matter of speed only
//! ([`spread`]). Buffers, for an image of `n = w·h` pixels with `ch` channels, `labels` labels and
//! a grid of degree `deg`: planes, ranges `ch·n`, grey and census `n`, cost `labels·n`, weights
//! `deg/2·n`, labels and the solver's labels `n`, caps `deg·n`, source and sink `n`, the filter's
//! guide `ch·n` bytes.

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::{blocks, kernel_file, BLOCK};
use crate::cuda::{Gpu, GridShape};
use crate::Result;

/// Most blocks of a launch: beyond this the kernels stride.
const MAX_BLOCKS: u64 = 4096;

/// A thread per item up to [`MAX_BLOCKS`] blocks.
pub(crate) fn spread(count: u64) -> LaunchConfig {
    blocks(count.div_ceil(BLOCK as u64).clamp(1, MAX_BLOCKS) as u32)
}

kernel_file! {
    /// The kernels of `kernels/stereo.cu`.
    pub(crate) struct StereoKernels for "stereo" {
        /// Channel planes times `k` and the grey plane of an interleaved image.
        ///
        /// # Safety
        /// `img` and `planes` have `n·ch` entries, `grey` `n`.
        fn view_planes = "view_planes"(
            n: u32,
            ch: u32,
            img: &CudaSlice<f32>,
            k: f32,
            planes: &mut CudaSlice<f32>,
            grey: &mut CudaSlice<f32>,
        ) => spread(n as u64);

        /// Birchfield–Tomasi ranges of `count` plane values in rows of `w`.
        ///
        /// # Safety
        /// `planes`, `lo` and `hi` have `count` entries, a multiple of `w`.
        fn bt_ranges = "bt_ranges"(
            w: u32,
            count: u32,
            planes: &CudaSlice<f32>,
            lo: &mut CudaSlice<f32>,
            hi: &mut CudaSlice<f32>,
        ) => spread(count as u64);

        /// 5×5 census signatures.
        ///
        /// # Safety
        /// `grey` and `out` have `w·h` entries.
        fn census = "census"(
            w: u32,
            h: u32,
            grey: &CudaSlice<f32>,
            out: &mut CudaSlice<u32>,
        ) => spread(w as u64 * h as u64);

        /// The cost volume (census when `lcen` is given).
        ///
        /// # Safety
        /// `lp`, `rp` and the four ranges have `ch·w·h` entries, `lcen` and `rcen` (both or
        /// neither) `w·h`, `cost` `labels·w·h`.
        fn cost_volume = "cost_volume"(
            w: u32,
            h: u32,
            ch: u32,
            labels: u32,
            min_d: i32,
            lp: &CudaSlice<f32>,
            rp: &CudaSlice<f32>,
            llo: &CudaSlice<f32>,
            lhi: &CudaSlice<f32>,
            rlo: &CudaSlice<f32>,
            rhi: &CudaSlice<f32>,
            lcen: Option<&CudaSlice<u32>>,
            rcen: Option<&CudaSlice<u32>>,
            truncation: f32,
            census_weight: f32,
            scale: f32,
            cost: &mut CudaSlice<i32>,
        ) => spread(w as u64 * h as u64 * labels as u64);

        /// Contrast-sensitive pair weights.
        ///
        /// # Safety
        /// `planes` has `ch·g.n` entries, `weights` `g.deg/2·g.n`; `g` is 2D (N4 or N8).
        fn pair_weights = "pair_weights"(
            g: GridShape,
            ch: u32,
            planes: &CudaSlice<f32>,
            threshold: f32,
            lam1: i32,
            lam2: i32,
            weights: &mut CudaSlice<i32>,
        ) => spread(g.n as u64);

        /// The winner-takes-all labelling.
        ///
        /// # Safety
        /// `cost` has `labels·n` entries (`labels` ≥ 1), `out` `n`.
        fn winner_takes_all = "winner_takes_all"(
            n: u32,
            labels: u32,
            cost: &CudaSlice<i32>,
            out: &mut CudaSlice<u32>,
        ) => spread(n as u64);

        /// The move graph of "take `alpha`" into the solver's arrays.
        ///
        /// # Safety
        /// `cost` has `L·g.n` entries with every label of `labels` and `alpha` below `L`,
        /// `weights` `g.deg/2·g.n`, `labels`, `source`, `sink` `g.n`, `caps` `g.deg·g.n`; `g` is
        /// 2D.
        fn build_move = "build_move"(
            g: GridShape,
            cost: &CudaSlice<i32>,
            weights: &CudaSlice<i32>,
            vtrunc: u32,
            labels: &CudaSlice<u32>,
            alpha: u32,
            caps: &mut CudaSlice<i32>,
            source: &mut CudaSlice<i32>,
            sink: &mut CudaSlice<i32>,
        ) => spread(g.n as u64);

        /// Adds each part's proposal energy and cut capacity to `sums[2·(slot·parts + k)]`,
        /// `sums[2·(slot·parts + k) + 1]`, where the grid is `parts = g.h / rows` stacked parts.
        ///
        /// # Safety
        /// As [`build_move`](Self::build_move); `rows` ≥ 1 divides `g.h`; `side` (if given) has
        /// `g.n` entries, `sums` `2·(slot + 1)·parts`.
        fn move_energy = "move_energy"(
            g: GridShape,
            rows: u32,
            cost: &CudaSlice<i32>,
            weights: &CudaSlice<i32>,
            vtrunc: u32,
            labels: &CudaSlice<u32>,
            side: Option<&CudaSlice<u32>>,
            alpha: u32,
            slot: u32,
            sums: &mut CudaSlice<u64>,
        ) => spread(g.n as u64);

        /// Commits move `m` per part of the `parts` stacked parts of `n / parts` nodes (or, with
        /// `solved` 0, records it as skipped).
        ///
        /// # Safety
        /// `parts` ≥ 1 divides `n`; `labels` and `side` have `n` entries, `sums`
        /// `2·(m + 1)·parts`, `hist` `(m + 2)·parts`, `taken` and `switched` `(m + 1)·parts`,
        /// `flows` `m + 1`, `flow` one.
        fn commit_move = "commit_move"(
            n: u32,
            parts: u32,
            alpha: u32,
            labels: &mut CudaSlice<u32>,
            side: &CudaSlice<u32>,
            sums: &CudaSlice<u64>,
            hist: &mut CudaSlice<u64>,
            flow: &CudaSlice<u64>,
            flows: &mut CudaSlice<u64>,
            taken: &mut CudaSlice<u32>,
            switched: &mut CudaSlice<u32>,
            m: u32,
            solved: i32,
        ) => spread(n as u64);

        /// Whole 8-bit colours of `ch` planes, pixel-interleaved: the weighted median filter's
        /// guide.
        ///
        /// # Safety
        /// `planes` and `out` have `n·ch` entries.
        fn guide_bytes = "guide_bytes"(
            n: u32,
            ch: u32,
            planes: &CudaSlice<f32>,
            out: &mut CudaSlice<u8>,
        ) => spread(n as u64);

        /// The joint weighted median filter of `labels` into `out`, each part of `rows` rows
        /// filtered on its own.
        ///
        /// # Safety
        /// `guide` has `ch·w·h` entries, `labels` and `out` `w·h`, `colour` at least
        /// `colour_len`, `space` `(2·radius + 1)²`; `radius` at most
        /// [`MAX_RADIUS`](crate::stereo::median::MAX_RADIUS); `rows` ≥ 1 divides `h`.
        fn weighted_median = "weighted_median"(
            w: u32,
            h: u32,
            rows: u32,
            ch: u32,
            radius: u32,
            nl: u32,
            guide: &CudaSlice<u8>,
            labels: &CudaSlice<u32>,
            colour: &CudaSlice<u32>,
            colour_len: u32,
            space: &CudaSlice<u32>,
            out: &mut CudaSlice<u32>,
        ) => spread(w as u64 * h as u64);
    }
}

impl StereoKernels {
    /// The kernels, for this device.
    pub(crate) fn load(gpu: &Gpu) -> Result<Self> {
        Self::load_with(gpu, str::to_string)
    }
}
