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
//! The components come from a union-find forest built in parallel (bands of rows on their own
//! threads, then the pairs across bands), the same sets of pixels as a flood fill finds.
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
use rayon::prelude::*;

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
    let labels = &seeds.labels;
    if post.drop_unseeded && labels.par_iter().any(|&s| s == Seed::Foreground) {
        match Forest::new(&out, true, seeds.dims, true, |i| {
            labels[i] == Seed::Foreground
        })? {
            Some(f) => out
                .par_iter_mut()
                .enumerate()
                .filter(|(_, m)| **m)
                .for_each(|(i, m)| *m = f.flag[f.root(i)]),
            None => drop_unseeded_sequential(&mut out, seeds)?,
        }
    }
    if post.max_hole > 0 {
        fill_holes(&mut out, seeds, post.max_hole)?;
    }
    let changed = out
        .par_iter()
        .zip(mask.par_iter())
        .filter(|(a, b)| a != b)
        .count();
    Ok((out, changed))
}

/// Fills the enclosed, unseeded background components of fewer than `max_hole` pixels.
fn fill_holes(out: &mut [bool], seeds: &Seeds, max_hole: usize) -> Result<()> {
    let [w, h, d] = seeds.dims;
    let labels = &seeds.labels;
    // Whether a pixel keeps its component background: on the border or a background seed.
    let keeps = |i: usize| {
        let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
        let border = x == 0 || y == 0 || x + 1 == w || y + 1 == h;
        let face = d > 1 && (z == 0 || z + 1 == d);
        border || face || labels[i] == Seed::Background
    };
    let Some(f) = Forest::new(out, false, seeds.dims, false, keeps)? else {
        return fill_holes_sequential(out, seeds, max_hole);
    };
    out.par_iter_mut()
        .enumerate()
        .filter(|(_, m)| !**m)
        .for_each(|(i, m)| {
            let r = f.root(i);
            if !f.flag[r] && (f.size[r] as usize) < max_hole {
                *m = true;
            }
        });
    Ok(())
}

/// The connected components of the pixels where a mask has one value, as a union-find forest
/// built in parallel: bands of whole rows are labelled on their own threads (each pixel joined
/// to its neighbours before it in scan order), then the pairs that cross a band's first rows are
/// joined on one thread, and each pixel finds its root by following parents (at most a step per
/// band). A root is a component's smallest pixel index, and holds its size and the OR of a flag
/// over its pixels. The components are those of a flood fill, whatever the bands: each
/// neighbouring pair of pixels of the value is joined once, in its band or across bands.
struct Forest {
    /// Per pixel of the value: a pixel of its component with an index no larger (itself at the
    /// root); [`NONE`] for the other pixels.
    parent: Vec<u32>,
    /// At each root: the component's pixel count.
    size: Vec<u32>,
    /// At each root: whether a pixel of the component has the flag.
    flag: Vec<bool>,
}

/// Not a pixel of the value.
const NONE: u32 = u32::MAX;

impl Forest {
    /// The forest of the pixels where `mask == value`, of an image or volume of `dims`,
    /// neighbours as [`components`] says (`full`), with `flag(i)` OR-ed per component. `None`
    /// when the pixel indices do not fit the forest's 32-bit entries.
    fn new(
        mask: &[bool],
        value: bool,
        dims: [usize; 3],
        full: bool,
        flag: impl Fn(usize) -> bool + Sync,
    ) -> Result<Option<Self>> {
        let n = mask.len();
        if n >= NONE as usize {
            return Ok(None);
        }
        let [w, h, _] = dims;
        // The neighbours before a pixel in scan order, as (dx, dy, dz) and the index distance.
        let before: Vec<([i64; 3], usize)> = steps(dims, full)
            .into_iter()
            .filter(|&[dx, dy, dz]| (dz, dy, dx) < (0, 0, 0))
            .map(|o| (o, (-(o[0] + w as i64 * (o[1] + h as i64 * o[2]))) as usize))
            .collect();
        let reach = before.iter().map(|&(_, d)| d).max().unwrap_or(0);
        // Bands of whole rows: enough for every thread, long against the pairs that cross.
        let rows = n / w.max(1);
        let threads = rayon::current_num_threads().max(1);
        let by_reach = n / (8 * reach.max(1)).max(1);
        let bands = (4 * threads).min(by_reach).clamp(1, rows.max(1));
        let band_len = rows.div_ceil(bands).max(1) * w.max(1);
        let mut f = Forest {
            parent: filled(n, NONE, "the component forest")?,
            size: filled(n, 0, "the component sizes")?,
            flag: filled(n, false, "the component flags")?,
        };
        let neighbour = |i: usize, o: [i64; 3], dist: usize| -> Option<usize> {
            let (x, y) = ((i % w) as i64, ((i / w) % h) as i64);
            let (nx, ny) = (x + o[0], y + o[1]);
            let inside = nx >= 0 && ny >= 0 && nx < w as i64 && ny < h as i64 && i >= dist;
            (inside && mask[i - dist] == value).then(|| i - dist)
        };
        f.parent
            .par_chunks_mut(band_len)
            .zip(f.size.par_chunks_mut(band_len))
            .zip(f.flag.par_chunks_mut(band_len))
            .enumerate()
            .for_each(|(b, ((parent, size), fl))| {
                let start = b * band_len;
                for k in 0..parent.len() {
                    let i = start + k;
                    if mask[i] != value {
                        continue;
                    }
                    parent[k] = i as u32;
                    size[k] = 1;
                    fl[k] = flag(i);
                    for &(o, dist) in &before {
                        match neighbour(i, o, dist) {
                            Some(j) if j >= start => {
                                union(parent, size, fl, start, i, j);
                            }
                            _ => {}
                        }
                    }
                }
                // Every pixel straight to its band's root: parents precede their children.
                for k in 0..parent.len() {
                    let p = parent[k];
                    if p != NONE && p as usize != start + k {
                        parent[k] = parent[p as usize - start];
                    }
                }
            });
        // The pairs across bands: only a band's first `reach` pixels have a neighbour before it.
        for b in 1..n.div_ceil(band_len) {
            let start = b * band_len;
            let end = (start + reach).min(n);
            for (i, _) in mask[start..end]
                .iter()
                .enumerate()
                .filter(|(_, &m)| m == value)
                .map(|(k, m)| (start + k, m))
            {
                for &(o, dist) in &before {
                    match neighbour(i, o, dist) {
                        Some(j) if j < start => {
                            union(&mut f.parent, &mut f.size, &mut f.flag, 0, i, j);
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(Some(f))
    }

    /// The root of pixel `i`'s component (`i` of the value).
    fn root(&self, i: usize) -> usize {
        let mut r = i;
        loop {
            let p = self.parent[r] as usize;
            if p == r {
                return r;
            }
            r = p;
        }
    }
}

/// A vector of `n` copies of `value`, filled in parallel; `what` names it in the error.
fn filled<T: Copy + Send + Sync>(n: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    crate::io::try_reserve(&mut v, n, what)?;
    v.par_extend((0..n).into_par_iter().map(|_| value));
    Ok(v)
}

/// Joins the components of pixels `i` and `j` in the forest whose entries start at pixel
/// `start` (path halving; the smaller root becomes the root, taking the other's size and flag).
fn union(
    parent: &mut [u32],
    size: &mut [u32],
    flag: &mut [bool],
    start: usize,
    i: usize,
    j: usize,
) {
    let find = |parent: &mut [u32], mut x: usize| -> usize {
        loop {
            let p = parent[x - start] as usize;
            if p == x {
                return x;
            }
            let gp = parent[p - start];
            parent[x - start] = gp;
            x = gp as usize;
        }
    };
    let (ri, rj) = (find(parent, i), find(parent, j));
    if ri == rj {
        return;
    }
    let (root, child) = (ri.min(rj) - start, ri.max(rj) - start);
    parent[child] = (root + start) as u32;
    size[root] += size[child];
    flag[root] |= flag[child];
}

/// [`post_process`]'s unseeded components, one flood fill at a time (images too large for the
/// forest's 32-bit entries).
fn drop_unseeded_sequential(out: &mut [bool], seeds: &Seeds) -> Result<()> {
    let (labels, count) = components(out, true, seeds.dims, true)?;
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
    Ok(())
}

/// [`fill_holes`] one flood fill at a time (images too large for the forest's 32-bit entries).
fn fill_holes_sequential(out: &mut [bool], seeds: &Seeds, max_hole: usize) -> Result<()> {
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
    let steps = steps(dims, full);
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

/// The neighbour offsets `(dx, dy, dz)` of [`components`]: 8 (26 in 3D) when `full`, else 4 (6).
fn steps(dims: [usize; 3], full: bool) -> Vec<[i64; 3]> {
    let zr: &[i64] = if dims[2] > 1 { &[-1, 0, 1] } else { &[0] };
    let mut steps = Vec::new();
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
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// [`post_process`] as it was before the forest: one flood fill at a time.
    fn sequential(mask: &[bool], seeds: &Seeds, post: &PostProcess) -> Vec<bool> {
        let mut out = mask.to_vec();
        if post.drop_unseeded && seeds.labels.contains(&Seed::Foreground) {
            drop_unseeded_sequential(&mut out, seeds).unwrap();
        }
        if post.max_hole > 0 {
            fill_holes_sequential(&mut out, seeds, post.max_hole).unwrap();
        }
        out
    }

    #[test]
    fn the_forest_gives_the_flood_fills_masks() {
        let mut rng = Rng::new(91);
        // Many threads: many bands, whatever the machine.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(16)
            .build()
            .unwrap();
        let dims_list = [
            [1, 1, 1],
            [1, 57, 1],
            [61, 1, 1],
            [40, 30, 1],
            [257, 131, 1],
            [700, 9, 1],
            [3, 400, 1],
            [17, 13, 11],
            [40, 37, 6],
            [2, 2, 90],
        ];
        for dims in dims_list {
            let n: usize = dims.iter().product();
            for density in [0.2, 0.45, 0.55, 0.8] {
                let mask: Vec<bool> = (0..n).map(|_| rng.unit_f64() < density).collect();
                let mut seeds = Seeds::unknown(dims);
                for _ in 0..(n / 50).max(2) {
                    let p = rng.below(n as u64) as usize;
                    seeds.labels[p] = if rng.below(2) == 0 {
                        Seed::Foreground
                    } else {
                        Seed::Background
                    };
                }
                for post in [
                    PostProcess {
                        drop_unseeded: true,
                        max_hole: 0,
                    },
                    PostProcess {
                        drop_unseeded: false,
                        max_hole: 5,
                    },
                    PostProcess {
                        drop_unseeded: true,
                        max_hole: 1 + n / 10,
                    },
                ] {
                    let want = sequential(&mask, &seeds, &post);
                    let (got, changed) =
                        pool.install(|| post_process(&mask, &seeds, &post)).unwrap();
                    assert_eq!(got, want, "{dims:?} density {density} {post:?}");
                    let diff = want.iter().zip(&mask).filter(|(a, b)| a != b).count();
                    assert_eq!(changed, diff);
                }
            }
        }
    }

    /// Bands of a few rows each on many threads: a component that winds through every band
    /// (a serpentine) is still one component.
    #[test]
    fn a_serpentine_through_every_band_is_one_component() {
        let (w, h) = (50, 200);
        let mut mask = vec![false; w * h];
        for y in 0..h {
            for x in 0..w {
                // Even rows full; odd rows open at one end, alternately.
                let open = if y % 4 == 1 { x + 1 == w } else { x == 0 };
                mask[x + y * w] = y % 2 == 0 || open;
            }
        }
        let mut seeds = Seeds::unknown([w, h, 1]);
        seeds.labels[(h - 2) * w + 3] = Seed::Foreground;
        let post = PostProcess {
            drop_unseeded: true,
            max_hole: 0,
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(16)
            .build()
            .unwrap();
        let (out, changed) = pool.install(|| post_process(&mask, &seeds, &post)).unwrap();
        assert_eq!(changed, 0);
        assert_eq!(out, mask);
        assert_eq!(out, sequential(&mask, &seeds, &post));
    }
}
