//! Optional clean-up of a 2D mask after the cut, with imageproc's region labelling: drop
//! foreground components that hold no foreground seed, fill background holes smaller than a size.
//!
//! Both are edits of the minimum cut's mask, not part of the energy: the cut (its flow, energy and
//! certificate) is exact as always, and [`PostProcess`] says what is changed afterwards.
//!
//! - **Drop unseeded components.** An 8-connected foreground component without a hard
//!   foreground seed is a region whose colours happened to match the foreground model; the user
//!   marked every object they meant (the seeds). Skipped when there are no hard foreground seeds
//!   (a GrabCut rectangle).
//! - **Fill small holes.** A 4-connected background component that touches no image border, holds
//!   no hard background seed and has fewer than `max_hole` pixels becomes foreground. (4-connected
//!   background is the complement of 8-connected foreground, so the two never disagree about what
//!   is enclosed.)
//!
//! ```
//! use segcut::segment::post::{post_process, PostProcess};
//! use segcut::segment::{Seed, Seeds};
//! // 5×3: a seeded component with a one-pixel hole on the left, an unseeded island on the right.
//! let mask: Vec<bool> = [
//!     1, 1, 1, 0, 0,
//!     1, 0, 1, 0, 1,
//!     1, 1, 1, 0, 0,
//! ].iter().map(|&v| v == 1).collect();
//! let mut seeds = Seeds::unknown([5, 3, 1]);
//! seeds.labels[0] = Seed::Foreground;
//! let post = PostProcess { drop_unseeded: true, max_hole: 2 };
//! let (out, changed) = post_process(&mask, &seeds, &post).unwrap();
//! assert_eq!(changed, 2);
//! assert!(out[6] && !out[9]); // hole filled, island dropped
//! ```

use crate::io::{Seed, Seeds};
use crate::{Error, Result};
use image::{GrayImage, Luma};
use imageproc::region_labelling::{connected_components, Connectivity};

/// What to change in the mask after the cut (see the module docs). The default changes nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PostProcess {
    /// Drop foreground components that hold no hard foreground seed.
    pub drop_unseeded: bool,
    /// Fill enclosed background holes of fewer than this many pixels (0: none).
    pub max_hole: usize,
}

impl PostProcess {
    /// Whether this changes anything at all.
    pub fn is_noop(&self) -> bool {
        !self.drop_unseeded && self.max_hole == 0
    }
}

/// Applies `post` to `mask` (true = foreground) of a 2D image; returns the new mask and how many
/// pixels changed. Volumes are returned unchanged (imageproc labels 2D images).
pub fn post_process(
    mask: &[bool],
    seeds: &Seeds,
    post: &PostProcess,
) -> Result<(Vec<bool>, usize)> {
    let [w, h, d] = seeds.dims;
    if mask.len() != seeds.labels.len() {
        return Err(Error::Graph(format!(
            "mask has {} pixels but the seeds {}",
            mask.len(),
            seeds.labels.len()
        )));
    }
    let mut out = mask.to_vec();
    if post.is_noop() {
        return Ok((out, 0));
    }
    if d > 1 {
        // imageproc labels 2D images; a volume keeps its cut as it is.
        return Ok((out, 0));
    }
    let (w32, h32) = (
        u32::try_from(w).map_err(|_| Error::Unsupported("image too wide".into()))?,
        u32::try_from(h).map_err(|_| Error::Unsupported("image too tall".into()))?,
    );
    if post.drop_unseeded && seeds.labels.contains(&Seed::Foreground) {
        let fg = to_gray(&out, w32, h32, true);
        let labels = connected_components(&fg, Connectivity::Eight, Luma([0u8]));
        let labels = labels.as_raw();
        let count = labels.iter().copied().max().unwrap_or(0) as usize;
        let mut seeded = vec![false; count + 1];
        for (l, s) in labels.iter().zip(&seeds.labels) {
            if *s == Seed::Foreground {
                seeded[*l as usize] = true;
            }
        }
        for (m, l) in out.iter_mut().zip(labels) {
            if *l != 0 && !seeded[*l as usize] {
                *m = false;
            }
        }
    }
    if post.max_hole > 0 {
        fill_holes(&mut out, seeds, w, w32, h32, post.max_hole);
    }
    let changed = out.iter().zip(mask).filter(|(a, b)| a != b).count();
    Ok((out, changed))
}

/// Fills the enclosed, unseeded background components of fewer than `max_hole` pixels.
fn fill_holes(out: &mut [bool], seeds: &Seeds, w: usize, w32: u32, h32: u32, max_hole: usize) {
    let bg = to_gray(out, w32, h32, false);
    let labels = connected_components(&bg, Connectivity::Four, Luma([0u8]));
    let labels = labels.as_raw();
    let count = labels.iter().copied().max().unwrap_or(0) as usize;
    // Per component: its size, and whether it touches the border or holds a background seed.
    let mut size = vec![0usize; count + 1];
    let mut keep = vec![false; count + 1];
    let h = out.len() / w;
    for (i, &l) in labels.iter().enumerate() {
        let l = l as usize;
        size[l] += 1;
        let (x, y) = (i % w, i / w);
        if x == 0 || y == 0 || x + 1 == w || y + 1 == h || seeds.labels[i] == Seed::Background {
            keep[l] = true;
        }
    }
    for (m, &l) in out.iter_mut().zip(labels) {
        let l = l as usize;
        if l != 0 && !keep[l] && size[l] < max_hole {
            *m = true;
        }
    }
}

/// The pixels where `mask == value` as 255, the rest 0.
fn to_gray(mask: &[bool], w: u32, h: u32, value: bool) -> GrayImage {
    let raw = mask
        .iter()
        .map(|&m| if m == value { 255 } else { 0 })
        .collect();
    GrayImage::from_raw(w, h, raw).expect("mask has w·h pixels")
}
