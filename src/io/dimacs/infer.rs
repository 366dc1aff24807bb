//! Recognising a grid in a `.max` file that has no `c regulargrid` hint, from its arc offsets.
//!
//! Waterloo's stereo files number pixel `(x, y)` as `3 + x + W·y` and link it to `+1` and `+W`,
//! but say nothing about `W`. The width is read off the arcs: the smallest id offset above 1 is
//! `W` (4-connected) or `W - 1` (8-connected, the up-right diagonal), so both are tried, and
//! [`grid_of`] then checks every arc against the grid geometry. When no 2D grid holds the arcs,
//! volumes are tried: in a `W × H × D` grid the smallest offset beyond the 2D neighbourhood
//! (`> W + 1`) is the plane step `W·H` (6-connected) or one of the eight steps `W·H + dy·W + dx`
//! of the next plane's 3×3 block (26-connected, some diagonals possibly absent), so the nine
//! plane sizes it implies are tried. A grid is only ever built when it holds exactly the file's
//! arcs, so a wrong guess can cost the grid form but never the answer.
//!
//! A volume that holds every arc but whose arc slots are mostly empty is refused too (see
//! [`dense_enough`]). When no candidate holds every arc, the reason names the candidate that holds the most and
//! counts the arcs it misses: a grid with a few extra arcs, or KZ2's two grids joined by sparse
//! links, shows up as "97 % of arcs are grid arcs ... but 1234 are not".

use super::grid::grid_of;
use super::Layout;
use crate::graph::{CsrGraph, GridGraph, Network};

/// The network for a file without a hint, and what was found. `offsets` is what the arcs'
/// offset counts answered ([`OffsetPlan::of`]), `source_id` and `sink_id` file ids, `nodes`
/// the `N` of the problem line.
pub(super) fn infer_grid(
    csr: CsrGraph,
    offsets: OffsetPlan,
    source_id: u64,
    sink_id: u64,
    nodes: u64,
) -> (Network, Layout) {
    match infer(&csr, offsets, source_id, sink_id, nodes) {
        Ok((g, dims)) => {
            let connectivity = g.connectivity();
            (
                Network::Grid(g),
                Layout::Grid {
                    dims,
                    connectivity,
                    from_hint: false,
                },
            )
        }
        Err(reason) => (Network::Csr(csr), Layout::General(reason)),
    }
}

/// Whether [`infer_grid`], given the whole file as a CSR graph, would give `g`: a 2D grid whose
/// arcs were placed by a width guessed from the first arcs ([`super::reader`] places such
/// files straight into the grid and asks for a general read where this says no). The
/// inference takes the smallest id offset `W0` above 1 of an arc with capacity, tries widths
/// `W0` and `W0 + 1` (whole rows, at least two), and gives the grid only when exactly one
/// holds every arc; `g` holds them at its own width, so it is the answer when that width is a
/// candidate and the other candidate does not hold them too.
pub(super) fn inference_agrees(g: &GridGraph) -> bool {
    use rayon::prelude::*;
    let [w, h, d] = g.dims();
    let conn = g.connectivity();
    if d != 1 || conn.is_3d() {
        return false;
    }
    let n = w * h;
    let used: Vec<usize> = (0..conn.degree())
        .filter(|&k| g.caps(k).par_iter().any(|&c| c > 0))
        .collect();
    let offset = |k: usize| {
        let [dx, dy, _] = conn.offsets()[k];
        (i64::from(dx) + i64::from(dy) * w as i64).unsigned_abs() as usize
    };
    let Some(w0) = used.iter().map(|&k| offset(k)).filter(|&o| o > 1).min() else {
        return false;
    };
    let widths: Vec<usize> = [w0, w0 + 1]
        .into_iter()
        .filter(|&x| x >= 2 && n.is_multiple_of(x) && n / x >= 2)
        .collect();
    if !widths.contains(&w) {
        return false;
    }
    // The other candidate must not hold every arc (that would be ambiguous: general).
    widths.iter().filter(|&&x| x != w).all(|&other| {
        !used.iter().all(|&k| {
            g.caps(k).par_iter().enumerate().all(|(v, &c)| {
                if c == 0 {
                    return true;
                }
                let Some(u) = g.neighbor(v, k) else {
                    return false;
                };
                let (xv, yv, xu, yu) = (v % other, v / other, u % other, u / other);
                xv.abs_diff(xu) <= 1 && yv.abs_diff(yu) <= 1
            })
        })
    })
}

/// The grid and its dimensions, or why there is none.
fn infer(
    csr: &CsrGraph,
    plan: OffsetPlan,
    source_id: u64,
    sink_id: u64,
    nodes: u64,
) -> Result<(GridGraph, [usize; 3]), String> {
    // Internal indices follow ids with the terminals skipped; a terminal in the middle of the
    // ids would shift the pixels after it, so the layout needs the pixels to be one id block.
    let (lo, hi) = (source_id.min(sink_id), source_id.max(sink_id));
    let contiguous = (lo, hi) == (1, 2) || (lo, hi) == (nodes - 1, nodes) || (lo, hi) == (1, nodes);
    if !contiguous {
        return Err(format!(
            "no grid layout (source {source_id} and sink {sink_id} split the node ids)"
        ));
    }
    if csr.constant_flow() != 0 {
        return Err("a direct source -> sink arc has no grid form".into());
    }
    debug_assert_eq!(plan.nodes, csr.num_nodes(), "planned for this graph");
    let total = plan.total;
    if total == 0 {
        return Err("no grid structure (no arcs between nodes)".into());
    }
    let Some(w0) = plan.w0 else {
        return Err("no grid structure (every arc joins consecutive ids: no row width)".into());
    };
    let fits = fitting(csr, total, &plan.flat, false);
    if let [(dims, _), (other, _)] = &fits[..] {
        return Err(format!(
            "no grid structure (widths {} and {} both hold the arcs: ambiguous)",
            dims[0], other[0]
        ));
    }
    if let Some((dims, g)) = fits.into_iter().next() {
        return Ok((g, dims));
    }
    let mut fits = fitting(csr, total, &plan.volumes, true);
    match fits.len() {
        0 => Err(describe_misfit(csr, &plan, w0)),
        1 => {
            let (dims, g) = fits.remove(0);
            dense_enough(g, dims, total)
        }
        _ => {
            let sizes: Vec<String> = fits.iter().map(|(d, _)| size_text(*d, true)).collect();
            Err(format!(
                "no grid structure (volumes {} all hold the arcs: ambiguous)",
                sizes.join(", ")
            ))
        }
    }
}

/// What the inference asks of the arcs' offset counts, asked while they exist (in the graph's
/// build, right after they are counted) so that they can be let go before the build's peak:
/// the smallest offset above 1 (`w0`), the candidate grids with a bound on the arcs each can
/// hold, and those [`describe_misfit`] weighs. Only the graph's arcs are needed after it.
pub(crate) struct OffsetPlan {
    nodes: usize,
    total: u64,
    w0: Option<usize>,
    /// The 2D candidates `[W, N / W, 1]` for `W` in `w0` and `w0 + 1` (whole rows, at least
    /// two), each with [`Offsets::at_most_grid_arcs`].
    flat: Vec<([usize; 3], u64)>,
    /// The volumes the offsets suggest for those widths, with their bounds.
    volumes: Vec<([usize; 3], u64)>,
    /// [`describe_misfit`]'s candidates: dimensions, whether a volume, whether detection tried
    /// it, and its bound.
    misfit: Vec<([usize; 3], bool, bool, u64)>,
}

impl OffsetPlan {
    /// The plan for a graph of `nodes` nodes whose arcs with capacity join nodes `k` apart
    /// `counts[k]` times (`total` of them).
    pub(crate) fn of(counts: &[u32], total: u64, nodes: usize) -> Self {
        let n = nodes;
        let counts = Offsets { counts };
        let mut plan = OffsetPlan {
            nodes,
            total,
            w0: None,
            flat: Vec::new(),
            volumes: Vec::new(),
            misfit: Vec::new(),
        };
        if total == 0 {
            return plan;
        }
        let Some(w0) = counts.min_above(1) else {
            return plan;
        };
        plan.w0 = Some(w0);
        let bounded = |d: [usize; 3]| (d, counts.at_most_grid_arcs(d));
        // W itself (N4, or N8 with no up-right diagonal) or W - 1 (N8's up-right diagonal).
        let widths: Vec<usize> = [w0, w0 + 1].into_iter().filter(|&w| w >= 2).collect();
        plan.flat = widths
            .iter()
            .filter(|&&w| n.is_multiple_of(w) && n / w >= 2)
            .map(|&w| bounded([w, n / w, 1]))
            .collect();
        let volumes = volume_candidates(&counts, &widths, n);
        plan.volumes = volumes.iter().map(|&d| bounded(d)).collect();
        // The candidates detection tried first; the ones from frequent offsets may win only
        // when they miss an arc: one that holds every arc is a shape detection does not try
        // (e.g. a tiny graph that fits some 8-connected grid), and naming it would contradict
        // the answer.
        let mut cands: Vec<([usize; 3], bool, bool)> = vec![([w0, n.div_ceil(w0), 1], false, true)];
        cands.extend(volumes.iter().map(|&d| (d, true, true)));
        if let Some(wm) = counts.mode_above(1) {
            // The most frequent offset is W, or W ± 1 for 8-connected grids.
            // The modes above `wm`, `wm + 1` and `wm + 2` from one pass over the counts.
            let m3 = counts.mode_above(wm + 2);
            let m2 = counts.with_mode(m3, wm + 2);
            let m1 = counts.with_mode(m2, wm + 1);
            for (cand, pm) in [(wm - 1, m1), (wm, m2), (wm + 1, m3)] {
                if cand >= 2 {
                    cands.push(([cand, n.div_ceil(cand), 1], false, false));
                }
                if let Some(pm) = pm {
                    cands.extend(
                        planes_around(pm, cand, n)
                            .into_iter()
                            .map(|d| (d, true, false)),
                    );
                }
            }
        }
        plan.misfit = cands
            .into_iter()
            .map(|(d, is_3d, tried)| (d, is_3d, tried, counts.at_most_grid_arcs(d)))
            .collect();
        plan
    }
}

/// The volume, unless fewer than half of its arc slots carry capacity: then the arcs only happen
/// to fit (the arcs of a small 2D grid with one stray can fit a 2×2×D 26-connected volume), and
/// the grid would store, and a grid solver sweep, many times the arcs the file has. (2D grids
/// are not held to this: their shape is read off the row offset and cannot arise this way.)
fn dense_enough(
    g: GridGraph,
    dims: [usize; 3],
    arcs: u64,
) -> Result<(GridGraph, [usize; 3]), String> {
    use crate::graph::FlowNetwork;
    let slots = g.num_arcs() as u64;
    if 2 * arcs >= slots {
        return Ok((g, dims));
    }
    Err(format!(
        "a {} {} grid holds every arc, but only {arcs} of its {slots} arc slots would carry \
         capacity: too sparse to be that grid",
        size_text(dims, g.connectivity().is_3d()),
        g.connectivity()
    ))
}

/// The candidates (at most two are needed to call it ambiguous) whose grid holds every arc.
/// A candidate whose neighbour offsets do not cover every arc cannot hold them and is passed
/// over without building its grid (a random sparse graph is refused in one counting pass).
fn fitting(
    csr: &CsrGraph,
    total: u64,
    candidates: &[([usize; 3], u64)],
    is_3d: bool,
) -> Vec<([usize; 3], GridGraph)> {
    let mut fits = Vec::new();
    for &(dims, bound) in candidates {
        if bound < total {
            continue;
        }
        if let Some(g) = grid_of(csr, dims, is_3d) {
            fits.push((dims, g));
            if fits.len() == 2 {
                break;
            }
        }
    }
    fits
}

/// `W × H × D` volumes (`H, D ≥ 2`) that the offsets suggest for each candidate width: the
/// smallest offset beyond the 2D neighbourhood is `W·H + dy·W + dx` for some `dx, dy ∈ {-1,
/// 0, 1}` (only `W·H` itself when 6-connected).
fn volume_candidates(counts: &Offsets, widths: &[usize], n: usize) -> Vec<[usize; 3]> {
    let mut out: Vec<[usize; 3]> = Vec::new();
    for &w in widths {
        if let Some(p0) = counts.min_above(w + 1) {
            for dims in planes_around(p0, w, n) {
                if !out.contains(&dims) {
                    out.push(dims);
                }
            }
        }
    }
    out
}

/// The volumes of width `w` whose plane size is `offset - dy·W - dx` for some `dx, dy ∈ {-1, 0,
/// 1}` (`offset` being a step to the next plane), a whole number of rows, with the `n` nodes a
/// whole number of planes.
fn planes_around(offset: usize, w: usize, n: usize) -> Vec<[usize; 3]> {
    let mut out = Vec::new();
    for dy in -1i64..=1 {
        for dx in -1i64..=1 {
            let plane = offset as i64 - dy * w as i64 - dx;
            if plane <= 0 {
                continue;
            }
            let plane = plane as usize;
            if !plane.is_multiple_of(w) || !n.is_multiple_of(plane) {
                continue;
            }
            let dims = [w, plane / w, n / plane];
            if dims[1] >= 2 && dims[2] >= 2 && !out.contains(&dims) {
                out.push(dims);
            }
        }
    }
    out
}

/// How many arcs with capacity have each id offset `|u - v|` (offsets run below the node
/// count, so one dense array of counts, 4 bytes a node, counted as the graph is built:
/// [`crate::graph::CsrBuilder`]'s pass over the pairs that counts degrees), and their total.
/// Every question the inference asks of the offsets is answered from it rather than by another
/// pass over the arcs.
struct Offsets<'a> {
    counts: &'a [u32],
}

/// Nodes per task of the passes over the arcs.
const CHUNK: usize = 1 << 14;

impl Offsets<'_> {
    /// The smallest offset above `k` of an arc with capacity.
    fn min_above(&self, k: usize) -> Option<usize> {
        use rayon::prelude::*;
        let from = (k + 1).min(self.counts.len());
        self.counts[from..]
            .par_iter()
            .position_first(|&c| c > 0)
            .map(|i| from + i)
    }

    /// The most frequent offset above `k` (the smallest of those tied).
    fn mode_above(&self, k: usize) -> Option<usize> {
        use rayon::prelude::*;
        let from = (k + 1).min(self.counts.len());
        self.counts[from..]
            .par_iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (c, std::cmp::Reverse(from + i)))
            .max()
            .map(|(_, std::cmp::Reverse(off))| off)
    }

    /// The most frequent offset among `off` and those above it, given `mode`, the most
    /// frequent above `off` ([`mode_above`](Self::mode_above)`(off)`): ties go to the smaller.
    fn with_mode(&self, mode: Option<usize>, off: usize) -> Option<usize> {
        let c = self.counts.get(off).copied().unwrap_or(0);
        match mode {
            _ if c == 0 => mode,
            Some(m) if self.counts[m] > c => Some(m),
            _ => Some(off),
        }
    }

    /// An upper bound on [`grid_arcs`] for `dims`: the arcs whose offset is one a grid
    /// neighbour of that size can have (`|dx + dy·W + dz·W·H|`, each step in `-1..=1`).
    fn at_most_grid_arcs(&self, [w, h, _]: [usize; 3]) -> u64 {
        let plane = w.saturating_mul(h) as i128;
        let mut offs: Vec<usize> = Vec::with_capacity(27);
        for dz in -1i128..=1 {
            for dy in -1i128..=1 {
                for dx in -1i128..=1 {
                    let off = (dx + dy * w as i128 + dz * plane).unsigned_abs();
                    if let Ok(off) = usize::try_from(off) {
                        offs.push(off);
                    }
                }
            }
        }
        offs.sort_unstable();
        offs.dedup();
        offs.iter()
            .filter_map(|&o| self.counts.get(o))
            .map(|&c| u64::from(c))
            .sum()
    }
}

/// How many arcs with capacity join nodes within one step on every axis of a `dims` grid
/// (rows may be incomplete: the last is then partial).
fn grid_arcs(csr: &CsrGraph, [w, h, _]: [usize; 3]) -> u64 {
    use rayon::prelude::*;
    let (heads, caps) = (csr.heads(), csr.caps());
    let plane = w.saturating_mul(h);
    let coords = |v: usize| [v % w, (v / w) % h, v / plane];
    let n = csr.num_nodes();
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut fit = 0;
            for v in c * CHUNK..((c + 1) * CHUNK).min(n) {
                let p = coords(v);
                for a in csr.arcs_of(v) {
                    if caps[a] == 0 {
                        continue;
                    }
                    let q = coords(heads[a] as usize);
                    if p.iter().zip(&q).all(|(a, b)| a.abs_diff(*b) <= 1) {
                        fit += 1;
                    }
                }
            }
            fit
        })
        .sum()
}

fn size_text([w, h, d]: [usize; 3], is_3d: bool) -> String {
    if is_3d {
        format!("{w}x{h}x{d}")
    } else {
        format!("{w}x{h}")
    }
}

/// Why no grid holds the arcs: the candidate that holds the most, how many arcs it holds and
/// how many it misses. Candidates: the width `w` read off the smallest offset, the `volumes`
/// tried, and, because one stray short arc spoils the smallest offset, the sizes suggested by
/// the most frequent offsets.
fn describe_misfit(csr: &CsrGraph, plan: &OffsetPlan, w: usize) -> String {
    let n = csr.num_nodes();
    let total = plan.total;
    let mut best: (u64, usize, Option<[usize; 3]>) = (0, w, None);
    for &(dims, is_3d, tried, bound) in &plan.misfit {
        // A candidate that cannot reach half the arcs never decides the answer (below half it
        // is "no grid structure", and any candidate at half or more beats it): skip its pass.
        if 2 * bound < total || bound <= best.0 {
            continue;
        }
        let fit = grid_arcs(csr, dims);
        if fit > best.0 && (tried || fit < total) {
            best = (fit, dims[0], is_3d.then_some(dims));
        }
    }
    let (fit, w, volume) = best;
    let misfits = total - fit;
    if 2 * fit < total {
        return "no grid structure".into();
    }
    // Whole percent, rounded down, so that "100 %" never hides a misfit.
    let pct = fit * 100 / total;
    if let Some(dims) = volume {
        let size = size_text(dims, true);
        return if misfits == 0 {
            format!(
                "every arc is a grid arc of a {size} volume but no grid of that size holds them"
            )
        } else {
            format!(
                "{pct} % of arcs ({fit} of {total}) are grid arcs of a {size} volume but \
                 {misfits} are not: a grid needs all of them"
            )
        };
    }
    if misfits == 0 && !n.is_multiple_of(w) {
        format!("every arc is a grid arc of width {w} but {n} nodes are not a whole number of rows")
    } else if misfits == 0 {
        format!("every arc is a grid arc of width {w} but no grid of {n} nodes holds them")
    } else if !n.is_multiple_of(w) {
        format!(
            "{pct} % of arcs ({fit} of {total}) are grid arcs of width {w} but {misfits} are not \
             (and {n} nodes are not a whole number of rows)"
        )
    } else {
        format!(
            "{pct} % of arcs ({fit} of {total}) are grid arcs of width {w} but {misfits} are \
             not: a grid needs all of them"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn modes_extended_by_one_offset_are_the_modes_counted_anew() {
        // The plan takes the modes above `wm`, `wm + 1` and `wm + 2` from one pass; each must
        // be what a pass of its own gives, ties to the smaller offset included.
        let mut rng = Rng::new(5);
        let mut checked = 0;
        for _ in 0..300 {
            let n = 1 + rng.below(40) as usize;
            // Few distinct small counts, so that ties and zeros are common.
            let counts: Vec<u32> = (0..n).map(|_| rng.below(4) as u32).collect();
            let o = Offsets { counts: &counts };
            for k in 0..n + 2 {
                let above = o.mode_above(k + 1);
                assert_eq!(
                    o.with_mode(above, k + 1),
                    o.mode_above(k),
                    "{counts:?} k {k}"
                );
                checked += usize::from(above.is_some());
            }
        }
        assert!(checked > 100, "most cases have a mode to extend");
    }

    #[test]
    fn the_plan_asks_what_the_counts_answer() {
        // A 6x4 N4 grid's offsets: 1 (rows) and 6 (columns).
        let (w, h) = (6usize, 4usize);
        let mut counts = vec![0u32; w * h];
        counts[1] = ((w - 1) * h * 2) as u32;
        counts[w] = (w * (h - 1) * 2) as u32;
        let total = u64::from(counts[1] + counts[w]);
        let plan = OffsetPlan::of(&counts, total, w * h);
        assert_eq!(plan.w0, Some(w));
        // Width 6 holds every arc by the counts; width 7 does not divide 24 nodes.
        assert_eq!(plan.flat, vec![([w, h, 1], total)]);
        assert!(plan.misfit.iter().any(|&(d, ..)| d == [w, h, 1]));
        let empty = OffsetPlan::of(&[], 0, 0);
        assert_eq!(
            (empty.w0, empty.flat.len(), empty.misfit.len()),
            (None, 0, 0)
        );
    }
}
