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
//! The components come from a union-find of runs built in parallel (bands of rows on their own
//! threads, then the runs that touch across bands), the same sets of pixels as a flood fill finds.
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
        let w = seeds.dims[0];
        // A run is seeded when one of its pixels is a foreground seed; unseeded components go.
        let seeded = |r: usize, x0: usize, x1: usize| {
            labels[r * w + x0..r * w + x1].contains(&Seed::Foreground)
        };
        if !relabel_components(&mut out, true, seeds.dims, true, seeded, |_, seeded| {
            !seeded
        })? {
            drop_unseeded_sequential(&mut out, seeds)?;
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
    // A run keeps its component background when it touches the border or holds a seed.
    let keeps = |r: usize, x0: usize, x1: usize| {
        let (y, z) = (r % h, r / h);
        let border = x0 == 0 || x1 == w || y == 0 || y + 1 == h;
        let face = d > 1 && (z == 0 || z + 1 == d);
        border || face || labels[r * w + x0..r * w + x1].contains(&Seed::Background)
    };
    let fill = |size: u64, keep: bool| !keep && size < max_hole as u64;
    if !relabel_components(out, false, seeds.dims, false, keeps, fill)? {
        fill_holes_sequential(out, seeds, max_hole)?;
    }
    Ok(())
}

/// A run of pixels of one value in one row: `x0..x1`.
#[derive(Clone, Copy)]
struct Run {
    x0: u32,
    x1: u32,
}

/// A band of whole rows: its runs (those of row `rows.start + k` are
/// `runs[row_start[k]..row_start[k + 1]]`), and per run the union-find parent (the band's own
/// indices until the bands are joined), the pixel count and the flag at roots.
struct Band {
    rows: std::ops::Range<usize>,
    row_start: Vec<u32>,
    runs: Vec<Run>,
    parent: Vec<u32>,
    size: Vec<u64>,
    flag: Vec<bool>,
}

impl Band {
    /// The runs of row `r` (a row of this band).
    fn row(&self, r: usize) -> &[Run] {
        let k = r - self.rows.start;
        &self.runs[self.row_start[k] as usize..self.row_start[k + 1] as usize]
    }
}

/// Flips the components of the pixels where `mask == value` (of an image or volume of `dims`,
/// neighbours as [`components`] says by `full`) for which `flip(pixel count, flag)` holds, the
/// flag being true when `flag(row, x0, x1)` holds for one of the component's runs (row `r` =
/// `y + h·z`). Returns false, changing nothing, when there are too many runs for 32-bit indices.
///
/// In parallel, as run-length union-find: bands of whole rows find their runs and join the runs
/// that touch within the band on their own threads; one thread joins the runs that touch across
/// band edges (only a band's first rows have neighbours before it); then each run looks up its
/// root (at most a step per band) and is rewritten on its band's thread. A component is the same
/// set of pixels however the rows are banded, so the result is a flood fill's.
fn relabel_components(
    mask: &mut [bool],
    value: bool,
    dims: [usize; 3],
    full: bool,
    flag: impl Fn(usize, usize, usize) -> bool + Sync,
    flip: impl Fn(u64, bool) -> bool + Sync,
) -> Result<bool> {
    let [w, h, _] = dims;
    let n = mask.len();
    if n == 0 || w == 0 {
        return Ok(true);
    }
    let rows = n / w;
    // The rows before a row whose runs can touch its runs, as (dy, dz), and how far runs
    // reach sideways (a diagonal neighbour touches runs one pixel apart).
    let before: Vec<(i64, i64)> = steps(dims, full)
        .into_iter()
        .filter(|&[dx, dy, dz]| dx == 0 && (dz, dy) < (0, 0))
        .map(|[_, dy, dz]| (dy, dz))
        .collect();
    let reach_rows = before
        .iter()
        .map(|&(dy, dz)| (-(dy + h as i64 * dz)) as usize)
        .max()
        .unwrap_or(0);
    let ext = u32::from(full);
    let touch = |a: &Run, b: &Run| a.x0 < b.x1 + ext && b.x0 < a.x1 + ext;
    let threads = rayon::current_num_threads().max(1);
    let per_band = rows
        .div_ceil(4 * threads)
        .max(4 * reach_rows.max(1))
        .min(rows);
    let before_row = |r: usize, (dy, dz): (i64, i64)| -> Option<usize> {
        let (y, z) = ((r % h) as i64, (r / h) as i64);
        let (by, bz) = (y + dy, z + dz);
        (by >= 0 && by < h as i64 && bz >= 0).then(|| (by + h as i64 * bz) as usize)
    };
    // Joins every touching pair of runs of two rows, given as their first global run ids.
    fn join_rows(
        a: &[Run],
        a0: usize,
        b: &[Run],
        b0: usize,
        touch: impl Fn(&Run, &Run) -> bool,
        mut union: impl FnMut(usize, usize),
    ) {
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if touch(&a[i], &b[j]) {
                union(a0 + i, b0 + j);
            }
            if a[i].x1 < b[j].x1 {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    let bounds: Vec<std::ops::Range<usize>> = (0..rows)
        .step_by(per_band)
        .map(|r| r..(r + per_band).min(rows))
        .collect();
    let mask_ro: &[bool] = mask;
    let mut bands: Vec<Band> = bounds
        .into_par_iter()
        .map(|range| {
            let mut band = Band {
                rows: range.clone(),
                row_start: vec![0],
                runs: Vec::new(),
                parent: Vec::new(),
                size: Vec::new(),
                flag: Vec::new(),
            };
            for r in range.clone() {
                let row = &mask_ro[r * w..(r + 1) * w];
                let mut x = 0;
                while let Some(k) = row[x..].iter().position(|&m| m == value) {
                    let x0 = x + k;
                    let len = row[x0..].iter().position(|&m| m != value).unwrap_or(w - x0);
                    x = x0 + len;
                    band.runs.push(Run {
                        x0: x0 as u32,
                        x1: x as u32,
                    });
                    band.parent.push(band.parent.len() as u32);
                    band.size.push(len as u64);
                    band.flag.push(flag(r, x0, x));
                    if x == w {
                        break;
                    }
                }
                band.row_start.push(band.runs.len() as u32);
            }
            let Band {
                rows,
                row_start,
                runs,
                parent,
                size,
                flag,
            } = &mut band;
            for r in rows.clone() {
                let k = r - rows.start;
                let cur = row_start[k] as usize..row_start[k + 1] as usize;
                for &o in &before {
                    let Some(rb) = before_row(r, o).filter(|&rb| rb >= rows.start) else {
                        continue;
                    };
                    let kb = rb - rows.start;
                    let prev = row_start[kb] as usize..row_start[kb + 1] as usize;
                    join_rows(
                        &runs[cur.clone()],
                        cur.start,
                        &runs[prev.clone()],
                        prev.start,
                        touch,
                        |i, j| union(parent, size, flag, i, j),
                    );
                }
            }
            // Every run straight to its root: parents precede their children.
            for k in 0..parent.len() {
                let p = parent[k] as usize;
                parent[k] = parent[p];
            }
            band
        })
        .collect();
    // Global run ids: each band's runs after the earlier bands'.
    let total: usize = bands.iter().map(|b| b.runs.len()).sum();
    if total >= u32::MAX as usize {
        return Ok(false);
    }
    let mut base = Vec::with_capacity(bands.len());
    let mut next = 0;
    for b in &bands {
        base.push(next);
        next += b.runs.len();
    }
    let mut parent = Vec::new();
    let mut size = Vec::new();
    let mut flags = Vec::new();
    crate::io::try_reserve(&mut parent, total, "the components' runs")?;
    crate::io::try_reserve(&mut size, total, "the components' runs")?;
    crate::io::try_reserve(&mut flags, total, "the components' runs")?;
    for (b, band) in bands.iter_mut().enumerate() {
        parent.extend(band.parent.iter().map(|&p| p + base[b] as u32));
        size.append(&mut band.size);
        flags.append(&mut band.flag);
    }
    // The runs that touch across band edges.
    let band_of = |r: usize| bands.partition_point(|b| b.rows.end <= r);
    for (b, band) in bands.iter().enumerate().skip(1) {
        let start = band.rows.start;
        for r in start..(start + reach_rows).min(band.rows.end) {
            for &o in &before {
                let Some(rb) = before_row(r, o).filter(|&rb| rb < start) else {
                    continue;
                };
                let bb = band_of(rb);
                let (cur, prev) = (band.row(r), bands[bb].row(rb));
                let cur0 = base[b] + (band.row_start[r - start] as usize);
                let prev0 = base[bb] + (bands[bb].row_start[rb - bands[bb].rows.start] as usize);
                join_rows(cur, cur0, prev, prev0, touch, |i, j| {
                    union(&mut parent, &mut size, &mut flags, i, j)
                });
            }
        }
    }
    // Each run's component decides; rewrite the runs that flip.
    let root = |mut i: usize| loop {
        let p = parent[i] as usize;
        if p == i {
            return i;
        }
        i = p;
    };
    let band_pixels = per_band * w;
    mask.par_chunks_mut(band_pixels)
        .zip(bands.par_iter().zip(base.par_iter()))
        .for_each(|(chunk, (band, &b0))| {
            for r in band.rows.clone() {
                let k = r - band.rows.start;
                let first = band.row_start[k] as usize;
                for (i, run) in band.row(r).iter().enumerate() {
                    let g = root(b0 + first + i);
                    if flip(size[g], flags[g]) {
                        let at = k * w;
                        chunk[at + run.x0 as usize..at + run.x1 as usize].fill(!value);
                    }
                }
            }
        });
    Ok(true)
}

/// Joins the components of runs `i` and `j` (path halving; the smaller root becomes the root,
/// taking the other's size and flag).
fn union(parent: &mut [u32], size: &mut [u64], flag: &mut [bool], i: usize, j: usize) {
    let find = |parent: &mut [u32], mut x: usize| -> usize {
        loop {
            let p = parent[x] as usize;
            if p == x {
                return x;
            }
            let gp = parent[p];
            parent[x] = gp;
            x = gp as usize;
        }
    };
    let (ri, rj) = (find(parent, i), find(parent, j));
    if ri == rj {
        return;
    }
    let (root, child) = (ri.min(rj), ri.max(rj));
    parent[child] = root as u32;
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
