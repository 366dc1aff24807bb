//! What [`stereo`](super::stereo) needs in memory, checked against the process's
//! [`memory_budget`](crate::io::memory_budget) before the cost volume is allocated: a number of
//! disparities the machine cannot hold (`-n 20000` on a small pair already needs 9 GB) is an
//! error naming both numbers, never an abort. A batch job that asks for too much fails alone.

use super::StereoOptions;
use crate::io::{self, dims_text};
use crate::Result;

/// Bytes per pixel per disparity: the cost volume's `i32`.
pub const BYTES_PER_DISPARITY: u64 = 4;

/// Bytes per pixel and channel besides the cost volume: both views' planes (`f32`) and their
/// Birchfield–Tomasi ranges (two `f32` each).
pub const BYTES_PER_CHANNEL: u64 = 24;

/// Bytes per pixel and neighbour direction of the expansion graph: its capacity, the pair
/// weight, and BK's arc (12 bytes).
pub const BYTES_PER_DIRECTION: u64 = 18;

/// Bytes per pixel besides those: the census codes and grey planes of both views, the graph's
/// terminals, the move's `i64` deltas, BK's node, the labels, the proposal and the cut.
pub const BYTES_PER_PIXEL: u64 = 72;

/// Bytes [`stereo`](super::stereo) needs for a `width × height` pair of `channels` channels
/// under `opts`, the cost volume included (not the input views, which the caller holds).
/// Saturates instead of overflowing.
///
/// ```
/// use segcut::stereo::{budget::memory_needed, StereoOptions};
/// let opts = StereoOptions { num_disparities: 20_000, ..Default::default() };
/// // Tsukuba (384 × 288, RGB): the cost volume alone is 8.8 GB.
/// assert!(memory_needed(384, 288, 3, &opts) > 8_800_000_000);
/// let small = StereoOptions { num_disparities: 16, ..Default::default() };
/// assert!(memory_needed(384, 288, 3, &small) < 50_000_000);
/// ```
pub fn memory_needed(width: usize, height: usize, channels: usize, opts: &StereoOptions) -> u64 {
    let pixels = (width as u64).saturating_mul(height as u64);
    let per_pixel = BYTES_PER_DISPARITY
        .saturating_mul(opts.num_disparities as u64)
        .saturating_add(BYTES_PER_CHANNEL * channels as u64)
        .saturating_add(BYTES_PER_DIRECTION * opts.connectivity.degree() as u64)
        .saturating_add(BYTES_PER_PIXEL);
    pixels.saturating_mul(per_pixel)
}

/// Refuses a pair whose cost volume and expansion would not fit.
pub(crate) fn check(dims: [usize; 3], channels: usize, opts: &StereoOptions) -> Result<()> {
    io::check_budget(
        &format!(
            "stereo on a {} pair with {} disparities",
            dims_text(dims),
            opts.num_disparities
        ),
        memory_needed(dims[0], dims[1], channels, opts),
        "use fewer disparities or downsample the pair",
    )
}
