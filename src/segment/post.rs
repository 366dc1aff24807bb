//! Optional clean-up of a mask or volume after the cut: drop foreground components that hold no
//! foreground seed, fill background holes smaller than a size.
//!
//! Both are edits of the minimum cut's mask, not part of the energy: the cut (its flow, energy and
//! certificate) is exact as always, and [`PostProcess`] says what is changed afterwards.
//!
//! - **Drop unseeded components.** An 8-connected (26 in a volume) foreground component without a hard
//!   foreground seed is a region whose colours happened to match the foreground model; the user
//!   marked every object they meant (the seeds). Skipped when there are no hard foreground seeds
//!   (a GrabCut rectangle).
//! - **Fill small holes.** A 4-connected (6 in a volume) background component that touches no
//!   image border (no face of a volume), holds no hard background seed and has fewer than
//!   `max_hole` pixels (voxels) becomes foreground. (4-connected background is the complement of
//!   8-connected foreground, and 6 of 26 in 3D, so the two never disagree about what is enclosed;
//!   the pairs are the same whatever connectivity the graph was cut with.)
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

/// Applies `post` to `mask` (true = foreground) of an image or volume of `seeds.dims`; returns
/// the new mask and how many pixels changed.
///
/// ```
/// use segcut::segment::post::{post_process, PostProcess};
/// use segcut::segment::{Seed, Seeds};
/// // A 3×3×3 cube of foreground with a hollow centre, and one stray voxel in a corner of a
/// // 7×7×7 volume; the seed is on the cube.
/// let idx = |x: usize, y: usize, z: usize| x + 7 * (y + 7 * z);
/// let mut mask = vec![false; 343];
/// for z in 1..4 { for y in 1..4 { for x in 1..4 { mask[idx(x, y, z)] = true; } } }
/// mask[idx(2, 2, 2)] = false;
/// mask[idx(6, 6, 6)] = true;
/// let mut seeds = Seeds::unknown([7, 7, 7]);
/// seeds.labels[idx(1, 1, 1)] = Seed::Foreground;
/// let post = PostProcess { drop_unseeded: true, max_hole: 2 };
/// let (out, changed) = post_process(&mask, &seeds, &post).unwrap();
/// assert_eq!(changed, 2);
/// assert!(out[idx(2, 2, 2)] && !out[idx(6, 6, 6)]);
/// ```
pub fn post_process(
    mask: &[bool],
    seeds: &Seeds,
    post: &PostProcess,
) -> Result<(Vec<bool>, usize)> {
    if mask.len() != seeds.labels.len() || seeds.dims.iter().product::<usize>() != mask.len() {
        return Err(Error::Graph(format!(
            "mask has {} pixels but the seeds {} ({:?})",
            mask.len(),
            seeds.labels.len(),
            seeds.dims
        )));
    }
    let mut out = mask.to_vec();
    if post.is_noop() {
        return Ok((out, 0));
    }
    if post.drop_unseeded && seeds.labels.contains(&Seed::Foreground) {
        let (labels, count) = components(&out, true, seeds.dims, true)?;
        let mut seeded = crate::io::try_vec(count + 1, false, "the component flags")?;
        for (&l, s) in labels.iter().zip(&seeds.labels) {
            if *s == Seed::Foreground {
                seeded[l as usize] = true;
            }
        }
        for (m, &l) in out.iter_mut().zip(&labels) {
            if l != 0 && !seeded[l as usize] {
                *m = false;
            }
        }
    }
    if post.max_hole > 0 {
        fill_holes(&mut out, seeds, post.max_hole)?;
    }
    let changed = out.iter().zip(mask).filter(|(a, b)| a != b).count();
    Ok((out, changed))
}

/// Fills the enclosed, unseeded background components of fewer than `max_hole` pixels.
fn fill_holes(out: &mut [bool], seeds: &Seeds, max_hole: usize) -> Result<()> {
    let [w, h, d] = seeds.dims;
    let (labels, count) = components(out, false, seeds.dims, false)?;
    // Per component: its size, and whether it touches the border or holds a background seed.
    let mut size = crate::io::try_vec(count + 1, 0usize, "the component sizes")?;
    let mut keep = crate::io::try_vec(count + 1, false, "the component flags")?;
    for (i, &l) in labels.iter().enumerate() {
        let l = l as usize;
        size[l] += 1;
        let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
        let border = x == 0 || y == 0 || x + 1 == w || y + 1 == h;
        let face = d > 1 && (z == 0 || z + 1 == d);
        if border || face || seeds.labels[i] == Seed::Background {
            keep[l] = true;
        }
    }
    for (m, &l) in out.iter_mut().zip(&labels) {
        let l = l as usize;
        if l != 0 && !keep[l] && size[l] < max_hole {
            *m = true;
        }
    }
    Ok(())
}

/// Labels the connected components of the pixels where `mask == value`: 1, 2, … in scan order,
/// 0 for the other pixels; returns the labels and their count. `full`: 8 neighbours in 2D and 26
/// in 3D; otherwise 4 and 6.
fn components(
    mask: &[bool],
    value: bool,
    dims: [usize; 3],
    full: bool,
) -> Result<(Vec<u32>, usize)> {
    let [w, h, d] = dims;
    let n = mask.len();
    let mut labels = crate::io::try_vec(n, 0u32, "the component labels")?;
    let zr: &[i64] = if d > 1 { &[-1, 0, 1] } else { &[0] };
    let mut steps: Vec<[i64; 3]> = Vec::new();
    for &dz in zr {
        for dy in -1..=1i64 {
            for dx in -1..=1i64 {
                let nonzero = (dx != 0) as u8 + (dy != 0) as u8 + (dz != 0) as u8;
                if nonzero > 0 && (full || nonzero == 1) {
                    steps.push([dx, dy, dz]);
                }
            }
        }
    }
    let (wi, hi, di) = (w as i64, h as i64, d as i64);
    let mut count: u32 = 0;
    let mut stack: Vec<usize> = Vec::new();
    for start in 0..n {
        if mask[start] != value || labels[start] != 0 {
            continue;
        }
        count = count
            .checked_add(1)
            .ok_or_else(|| Error::Unsupported("more than 2³² − 1 components".into()))?;
        labels[start] = count;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (x, y, z) = ((i % w) as i64, ((i / w) % h) as i64, (i / (w * h)) as i64);
            for &[dx, dy, dz] in &steps {
                let (nx, ny, nz) = (x + dx, y + dy, z + dz);
                if nx < 0 || ny < 0 || nz < 0 || nx >= wi || ny >= hi || nz >= di {
                    continue;
                }
                let j = (nx + wi * (ny + hi * nz)) as usize;
                if mask[j] == value && labels[j] == 0 {
                    labels[j] = count;
                    stack.push(j);
                }
            }
        }
    }
    Ok((labels, count as usize))
}
