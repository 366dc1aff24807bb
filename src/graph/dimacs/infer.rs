//! Recognising a grid in a `.max` file that has no `c regulargrid` hint, from its arc offsets.
//!
//! Waterloo's stereo files number pixel `(x, y)` as `3 + x + W·y` and link it to `+1` and `+W`,
//! but say nothing about `W`. The width is read off the arcs: the smallest id offset above 1 is
//! `W` (4-connected) or `W - 1` (8-connected, the up-right diagonal), so both are tried, and
//! [`grid_of`] then checks every arc against the grid geometry. A grid is only ever built when it
//! holds exactly the file's arcs, so a wrong guess can cost the grid form but never the answer.

use super::reader::grid_of;
use super::Layout;
use crate::graph::{CsrGraph, Network};

/// The network for a file without a hint, and what was found. `source_id` and `sink_id` are
/// file ids, `nodes` is the `N` of the problem line.
pub(super) fn infer_grid(
    csr: CsrGraph,
    source_id: u64,
    sink_id: u64,
    nodes: u64,
) -> (Network, Layout) {
    match infer(&csr, source_id, sink_id, nodes) {
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

/// The grid and its dimensions, or why there is none.
fn infer(
    csr: &CsrGraph,
    source_id: u64,
    sink_id: u64,
    nodes: u64,
) -> Result<(crate::graph::GridGraph, [usize; 3]), String> {
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
    let n = csr.num_nodes();
    let (heads, caps) = (csr.heads(), csr.caps());
    let mut total = 0u64;
    let mut min_offset: Option<usize> = None;
    for v in 0..n {
        for a in csr.arcs_of(v) {
            if caps[a] == 0 {
                continue;
            }
            total += 1;
            let off = (heads[a] as usize).abs_diff(v);
            if off > 1 && min_offset.is_none_or(|m| off < m) {
                min_offset = Some(off);
            }
        }
    }
    if total == 0 {
        return Err("no grid structure (no arcs between nodes)".into());
    }
    let Some(w0) = min_offset else {
        return Err("no grid structure (every arc joins consecutive ids: no row width)".into());
    };
    // W itself (N4, or N8 with no up-right diagonal) or W - 1 (N8's up-right diagonal).
    let fits: Vec<(usize, crate::graph::GridGraph)> = [w0, w0 + 1]
        .into_iter()
        .filter(|&w| w >= 2 && n.is_multiple_of(w) && n / w >= 2)
        .filter_map(|w| grid_of(csr, [w, n / w, 1], false).map(|g| (w, g)))
        .collect();
    match &fits[..] {
        [(w, g)] => Ok((g.clone(), [*w, n / w, 1])),
        [(a, _), (b, _)] => Err(format!(
            "no grid structure (widths {a} and {b} both hold the arcs: ambiguous)"
        )),
        _ => Err(describe_misfit(csr, w0, total)),
    }
}

/// Why no grid of width `w` (the best guess) holds the arcs: how many do fit.
fn describe_misfit(csr: &CsrGraph, w: usize, total: u64) -> String {
    let n = csr.num_nodes();
    let (heads, caps) = (csr.heads(), csr.caps());
    let mut fit = 0u64;
    for v in 0..n {
        for a in csr.arcs_of(v) {
            if caps[a] == 0 {
                continue;
            }
            let u = heads[a] as usize;
            let (dx, dy) = (
                (u % w) as i64 - (v % w) as i64,
                (u / w) as i64 - (v / w) as i64,
            );
            if dx.abs() <= 1 && dy.abs() <= 1 {
                fit += 1;
            }
        }
    }
    let misfits = total - fit;
    if 2 * fit < total {
        return "no grid structure".into();
    }
    // Whole percent, rounded down, so that "100 %" never hides a misfit.
    let pct = fit * 100 / total;
    if misfits == 0 && !n.is_multiple_of(w) {
        format!("every arc is a grid arc of width {w} but {n} nodes are not a whole number of rows")
    } else if misfits == 0 {
        format!("every arc is a grid arc of width {w} but no grid of {n} nodes holds them")
    } else if !n.is_multiple_of(w) {
        format!(
            "{pct} % of arcs are grid arcs of width {w} but {misfits} are not \
             (and {n} nodes are not a whole number of rows)"
        )
    } else {
        format!("{pct} % of arcs are grid arcs of width {w} but {misfits} are not")
    }
}
