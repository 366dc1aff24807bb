//! Recognising a grid in a general graph: [`grid_of`], shared by the text reader, the binary
//! reader and the grid inference (kept apart from all three so that none imports another).

use crate::graph::{Cap, Connectivity, CsrGraph, GridGraph};

/// The grid with the given dimensions holding exactly `csr`, if there is one: every arc with
/// capacity joins neighbours of the 3×3(×3) neighbourhood, no direct source → sink capacity,
/// and the summed capacities pass [`GridGraph::validate`].
pub(crate) fn grid_of(csr: &CsrGraph, dims: [usize; 3], is_3d: bool) -> Option<GridGraph> {
    if csr.constant_flow() != 0 {
        return None;
    }
    let [w, h, d] = dims;
    let (heads, caps) = (csr.heads(), csr.caps());
    // Offsets are named by their slot (dx+1) + 3(dy+1) + 9(dz+1) in the 3×3×3 cube.
    const AXIS_SLOTS: [usize; 6] = [4, 10, 12, 14, 16, 22];
    let general = |v: usize, u: usize| -> Option<usize> {
        let (p, q) = (
            [v % w, (v / w) % h, v / (w * h)],
            [u % w, (u / w) % h, u / (w * h)],
        );
        let mut slot = 0;
        for (k, scale) in [1, 3, 9].into_iter().enumerate() {
            let delta = q[k] as i64 - p[k] as i64;
            if delta.abs() > 1 {
                return None;
            }
            slot += (delta + 1) as usize * scale;
        }
        Some(slot)
    };
    use rayon::prelude::*;
    // Nodes are handled in chunks on every core; a chunk's arcs are one range of the arrays.
    const CHUNK: usize = 1 << 14;
    let n = csr.num_nodes();
    let first = csr.first();
    let chunk_starts: Vec<usize> = (0..n).step_by(CHUNK).collect();
    // First pass: the slot of every arc with capacity, and whether any is diagonal.
    let (wi, plane) = (w as i64, (w * h) as i64);
    let mut slots = vec![0u8; csr.num_arcs()];
    let mut pieces: Vec<(usize, &mut [u8])> = Vec::with_capacity(chunk_starts.len());
    let mut rest = &mut slots[..];
    for &v0 in &chunk_starts {
        let v1 = (v0 + CHUNK).min(n);
        let (piece, tail) = rest.split_at_mut((first[v1] - first[v0]) as usize);
        pieces.push((v0, piece));
        rest = tail;
    }
    let diagonal = pieces
        .into_par_iter()
        .map(|(v0, out)| -> Option<bool> {
            let base = first[v0] as usize;
            let mut diagonal = false;
            let (mut x, mut y, mut z) = (v0 % w, (v0 / w) % h, v0 / (w * h));
            for v in v0..(v0 + CHUNK).min(n) {
                for a in csr.arcs_of(v) {
                    if caps[a] == 0 {
                        continue;
                    }
                    let delta = heads[a] as i64 - v as i64;
                    // Axis neighbours, by far the most common, without a division.
                    let slot = match delta {
                        1 if x + 1 < w => 14,
                        -1 if x > 0 => 12,
                        _ if delta == wi && y + 1 < h => 16,
                        _ if delta == -wi && y > 0 => 10,
                        _ if delta == plane && z + 1 < d => 22,
                        _ if delta == -plane && z > 0 => 4,
                        _ => general(v, heads[a] as usize)?,
                    };
                    diagonal |= !AXIS_SLOTS.contains(&slot);
                    out[a - base] = slot as u8;
                }
                x += 1;
                if x == w {
                    x = 0;
                    y += 1;
                    if y == h {
                        y = 0;
                        z += 1;
                    }
                }
            }
            Some(diagonal)
        })
        .try_reduce(|| false, |a, b| Some(a || b))?;
    let conn = match (is_3d, diagonal) {
        (false, false) => Connectivity::N4,
        (false, true) => Connectivity::N8,
        (true, false) => Connectivity::N6,
        (true, true) => Connectivity::N26,
    };
    let mut dir_of_slot = [0usize; 27];
    for (k, &[dx, dy, dz]) in conn.offsets().iter().enumerate() {
        dir_of_slot[(dx + 1) as usize + 3 * (dy + 1) as usize + 9 * (dz + 1) as usize] = k;
    }
    let mut g = GridGraph::new(w, h, d, conn).ok()?;
    // Second pass: each chunk of nodes adds its arcs into its own cells of every direction.
    let mut dirs: Vec<std::slice::ChunksMut<'_, Cap>> = g
        .all_caps_mut()
        .into_iter()
        .map(|c| c.chunks_mut(CHUNK))
        .collect();
    let cells: Vec<(usize, Vec<&mut [Cap]>)> = chunk_starts
        .iter()
        .map(|&v0| {
            let row = dirs.iter_mut().map(|it| it.next().unwrap_or_default());
            (v0, row.collect())
        })
        .collect();
    drop(dirs);
    let slots = &slots;
    cells
        .into_par_iter()
        .try_for_each(|(v0, mut row)| -> Option<()> {
            for v in v0..(v0 + CHUNK).min(n) {
                for a in csr.arcs_of(v) {
                    if caps[a] > 0 {
                        let cell = &mut row[dir_of_slot[slots[a] as usize]][v - v0];
                        // Parallel arcs add up; a sum past i32 has no grid form.
                        *cell = cell.checked_add(caps[a])?;
                    }
                }
            }
            Some(())
        })?;
    let (src, snk) = g.terminal_caps_mut();
    src.copy_from_slice(csr.source_caps());
    snk.copy_from_slice(csr.sink_caps());
    g.validate().ok()?;
    Some(g)
}
