//! What a segmentation needs in memory, estimated before its first large allocation and checked
//! against the process's [`memory_budget`](crate::io::memory_budget) by [`segment`]: an image
//! too large for the machine (or for `ulimit -v`, a container's limit) is refused with both
//! numbers instead of aborting halfway through the solve.
//!
//! [`segment`]: super::segment

use crate::graph::Connectivity;
use crate::io::{self, dims_text, Image};
use crate::Result;

/// Bytes per pixel that warm-started rounds add: the kept terminal capacities (two `i32`).
pub const BYTES_WARM_START: u64 = 8;

/// Bytes per pixel that the stroke-geometry prior adds: the geodesic distances and the prior's
/// costs (`f32` each), held through the solves (the distance transform's own arrays are freed
/// before the graph is built).
pub const BYTES_PRIOR: u64 = 8;

/// Bytes per pixel the post-processing's parallel components may take at worst: its row runs and
/// their roots (a checkerboard mask, one run per pixel), alive with the cut's mask.
pub const BYTES_POST: u64 = 8;
/// Bytes a process may map beyond the per-pixel arrays: the solver threads' stacks and malloc
/// arenas, which count against an address-space limit (`ulimit -v`) from the first job on.
pub const FIXED_OVERHEAD: u64 = 128 << 20;

/// What of a segmentation's options its memory depends on
/// ([`SegmentOptions::memory_needs`](super::SegmentOptions::memory_needs) gives them; kept apart
/// so that this estimate does not depend on the pipeline that checks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// The neighbourhood; `None`: the default for the image (8 in 2D, 6 in 3D).
    pub connectivity: Option<Connectivity>,
    /// Whether rounds are warm-started (the terminal capacities are kept).
    pub warm_start: bool,
    /// Whether the stroke-geometry prior is on.
    pub prior: bool,
}

/// Bytes [`segment`](super::segment) needs for an image of `dims` with `channels` values per
/// pixel with options that need `needs`, the input image itself included: [`io::memory_needed`] (image, graph,
/// BK's arcs and nodes, the cut) plus [`BYTES_WARM_START`] and [`BYTES_PRIOR`] per pixel where
/// those are on, [`BYTES_POST`] per pixel, the colour palette's
/// [`Palette::BYTES_PER_PIXEL`](super::energy::Palette::BYTES_PER_PIXEL) for 2 to 4 channels,
/// plus [`FIXED_OVERHEAD`].
///
/// Checked against the peak address space (`VmPeak`, which `ulimit -v` limits, not the resident
/// size) of `segcut --solver bk` with the default options (5 rounds, prior and warm start on) on
/// noisy RGB images with a rectangle: 1000²: 352 MB measured, 354 MB estimated; 2000²: 993 MB
/// and 1012 MB; 4100²: 3.63 GB and 3.83 GB (220 bytes per pixel and 134 MB), measured before
/// the palette, whose 16 bytes per pixel are now added to the estimate. Saturates instead of
/// overflowing.
///
/// ```
/// use segcut::segment::{budget::memory_needed, SegmentOptions};
/// let opts = SegmentOptions::default();
/// let off = segcut::segment::prior::SpatialPrior { weight: 0.0, ..opts.prior };
/// let plain = SegmentOptions { warm_start: false, prior: off, ..opts.clone() };
/// let px = 1000 * 1000;
/// let (all, less) = (opts.memory_needs(), plain.memory_needs());
/// assert_eq!(
///     memory_needed([1000, 1000, 1], 3, all) - memory_needed([1000, 1000, 1], 3, less),
///     px * 16
/// );
/// assert_eq!(memory_needed([usize::MAX, 2, 1], 3, all), u64::MAX);
/// ```
pub fn memory_needed(dims: [usize; 3], channels: usize, needs: Needs) -> u64 {
    let conn = needs.connectivity.unwrap_or(if dims[2] > 1 {
        Connectivity::N6
    } else {
        Connectivity::N8
    });
    let pixels = dims
        .iter()
        .fold(1u64, |acc, &d| acc.saturating_mul(d as u64));
    let extra = if needs.warm_start {
        BYTES_WARM_START
    } else {
        0
    } + if needs.prior { BYTES_PRIOR } else { 0 }
        + BYTES_POST
        + if (2..=4).contains(&channels) {
            // The host rounds' colour palette (at most; none where it would not pay).
            super::energy::Palette::BYTES_PER_PIXEL
        } else {
            0
        };
    io::memory_needed(dims, channels, conn.degree())
        .saturating_add(pixels.saturating_mul(extra))
        .saturating_add(FIXED_OVERHEAD)
}

/// Refuses `image` when segmenting it with options that need `needs` would not fit in what the process may still
/// allocate. The image is already in memory (it counts in the process's size), so its own bytes
/// are left out of what is still needed.
pub(crate) fn check(image: &Image, needs: Needs) -> Result<()> {
    let have = (image.num_pixels() as u64)
        .saturating_mul(image.channels as u64)
        .saturating_mul(4);
    let need = memory_needed(image.dims, image.channels, needs).saturating_sub(have);
    io::check_budget(
        &format!(
            "segmenting a {} image of {} channel(s)",
            dims_text(image.dims),
            image.channels
        ),
        need,
        "crop or downsample the image, use a smaller connectivity, or turn off the warm start \
         and the stroke prior",
    )
}
