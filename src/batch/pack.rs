//! Many small grids solved as one: the grids are stacked into one larger grid (along y for 2D
//! grids, along z for volumes, each padded to the widest) with no arc between them, the larger
//! grid is solved once by any solver, and each grid's cut is cut out again.
//!
//! Why it is exact: the packed graph is the disjoint union of the grids (the arcs that cross
//! from one grid into the next are the grids' own border arcs, which are zero in every grid, so
//! the seams have zero capacity, and padding nodes have no arcs at all). A maximum flow of a
//! disjoint union is a maximum flow of each part, and the canonical sink side (the nodes that
//! reach the sink in the residual graph) is decided inside each part, so each part's slice of the
//! packed cut is exactly the cut a solve of that part alone returns (see `tests/batch_pack.rs`).
//!
//! Each part's flow value is its cut's capacity. That is a certificate per part when the packed
//! cut is verified: every part's cut capacity is at least its maximum flow, and their sum equals
//! the packed flow, which is the sum of the parts' maximum flows, so each part is at equality.
//!
//! ```
//! use segcut::batch::pack::solve_packed;
//! use segcut::graph::{Connectivity, GridGraph};
//! use segcut::maxflow::{MaxFlow, SolveOptions, SolverKind};
//! let mut a = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
//! a.set_terminals(0, 5, 0);
//! a.set_terminals(1, 0, 5);
//! a.set_arc(0, 1, 2).unwrap();
//! let mut b = GridGraph::new_2d(3, 2, Connectivity::N4).unwrap();
//! b.set_terminals(0, 4, 0);
//! b.set_terminals(5, 0, 1);
//! b.set_arc(0, 1, 3).unwrap();
//! b.set_arc(1, 4, 3).unwrap();
//! b.set_arc(4, 5, 3).unwrap();
//! let mut mf = MaxFlow::new(SolveOptions::with_solver(SolverKind::Bk));
//! let parts = solve_packed(&[&a, &b], &mut mf).unwrap();
//! assert_eq!((parts[0].cut.flow, parts[1].cut.flow), (2, 1));
//! assert_eq!(parts[1].cut.sink_side, mf.solve(&b).unwrap().cut.sink_side);
//! ```

use crate::graph::{Connectivity, FlowNetwork, GridGraph};
use crate::maxflow::{Certificate, Cut, MaxFlow, Solved};
use crate::{Error, Result};

/// Where each part went in a packed grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packing {
    /// The packed grid's `[W, H, D]`.
    pub dims: [usize; 3],
    /// Each part's dimensions and its offset `[0, y, z]` in the packed grid.
    pub parts: Vec<([usize; 3], [usize; 3])>,
}

/// Stacks `graphs` into one grid with zero-capacity seams. All must share a connectivity; 2D
/// grids stack along y, volumes along z.
pub fn pack(graphs: &[&GridGraph]) -> Result<(GridGraph, Packing)> {
    let first = graphs
        .first()
        .ok_or_else(|| Error::Graph("nothing to pack: no graphs".into()))?;
    let conn = first.connectivity();
    if let Some(g) = graphs.iter().find(|g| g.connectivity() != conn) {
        return Err(Error::Graph(format!(
            "cannot pack grids of different connectivities ({conn} and {})",
            g.connectivity()
        )));
    }
    let along_z = conn.is_3d() || graphs.iter().any(|g| g.dims()[2] > 1);
    let width = graphs.iter().map(|g| g.dims()[0]).max().unwrap_or(1);
    let mut parts = Vec::with_capacity(graphs.len());
    let (mut height, mut depth) = (0usize, 0usize);
    if along_z {
        height = graphs.iter().map(|g| g.dims()[1]).max().unwrap_or(1);
        for g in graphs {
            parts.push((g.dims(), [0, 0, depth]));
            depth += g.dims()[2];
        }
    } else {
        depth = 1;
        for g in graphs {
            parts.push((g.dims(), [0, height, 0]));
            height += g.dims()[1];
        }
    }
    let mut packed = GridGraph::new(width, height, depth, conn)?;
    for (g, &(dims, off)) in graphs.iter().zip(&parts) {
        copy_rows(g, dims, off, &mut packed, conn);
    }
    Ok((
        packed,
        Packing {
            dims: [width, height, depth],
            parts,
        },
    ))
}

/// Copies every row of `g` into `packed` at `off`: rows are contiguous in both layouts.
fn copy_rows(
    g: &GridGraph,
    dims: [usize; 3],
    off: [usize; 3],
    packed: &mut GridGraph,
    conn: Connectivity,
) {
    let [w, h, d] = dims;
    let rows = || (0..d).flat_map(move |z| (0..h).map(move |y| (y, z)));
    let at = |p: &GridGraph, y: usize, z: usize| p.index(off[0], y + off[1], z + off[2]);
    for dir in 0..conn.degree() {
        for (y, z) in rows() {
            let (src, dst) = (g.index(0, y, z), at(packed, y, z));
            packed.caps_mut(dir)[dst..dst + w].copy_from_slice(&g.caps(dir)[src..src + w]);
        }
    }
    for (y, z) in rows() {
        let (src, dst) = (g.index(0, y, z), at(packed, y, z));
        let (s, t) = packed.terminal_caps_mut();
        s[dst..dst + w].copy_from_slice(&g.source_caps()[src..src + w]);
        t[dst..dst + w].copy_from_slice(&g.sink_caps()[src..src + w]);
    }
}

impl Packing {
    /// Part `i`'s slice of the packed sink side, in the part's own node order.
    pub fn sink_side(&self, packed: &[bool], i: usize) -> Vec<bool> {
        let ([w, h, d], off) = self.parts[i];
        let [pw, ph, _] = self.dims;
        let mut out = Vec::with_capacity(w * h * d);
        for z in 0..d {
            for y in 0..h {
                let start = off[0] + pw * (y + off[1] + ph * (z + off[2]));
                out.extend_from_slice(&packed[start..start + w]);
            }
        }
        out
    }
}

/// Packs `graphs`, solves the packed grid once with `mf`, and returns each part's result: its
/// own cut, with its flow value and (when `mf` verifies) its certificate, which the packed
/// solve's certificate proves (see the module documentation). Every part's statistics and
/// `ran` are those of the one packed solve; flows arc by arc are not split per part.
pub fn solve_packed(graphs: &[&GridGraph], mf: &mut MaxFlow) -> Result<Vec<Solved>> {
    let (packed, packing) = pack(graphs)?;
    let whole = mf.solve(&packed)?;
    split_packed(graphs, &packing, &whole)
}

/// Each part's result from the solve `whole` of the packed grid of `graphs` (as [`pack`] laid
/// them out in `packing`): its slice of the cut, with its cut capacity as its flow and, when
/// `whole` is certified, a certificate (see the module documentation). An error when the parts'
/// capacities do not add up to the packed flow (an arc between parts).
pub fn split_packed(
    graphs: &[&GridGraph],
    packing: &Packing,
    whole: &Solved,
) -> Result<Vec<Solved>> {
    let mut out = Vec::with_capacity(graphs.len());
    let mut total: i128 = 0;
    for (i, g) in graphs.iter().enumerate() {
        let sink_side = packing.sink_side(&whole.cut.sink_side, i);
        let cap = g.cut_capacity(&sink_side);
        total += cap;
        let flow = i64::try_from(cap).map_err(|_| {
            Error::Overflow(format!("part {i}'s cut capacity {cap} does not fit i64"))
        })?;
        out.push(Solved {
            cut: Cut { flow, sink_side },
            flows: None,
            certificate: whole.certificate.map(|_| Certificate {
                flow,
                cut_capacity: flow,
            }),
            stats: whole.stats.clone(),
            ran: whole.ran.clone(),
        });
    }
    // The parts' cut capacities add up to the packed cut's capacity whenever the seams are
    // empty; a mismatch means the packing leaked an arc between parts.
    if total != whole.cut.flow as i128 {
        return Err(Error::Certificate {
            flow: whole.cut.flow,
            cut_capacity: i64::try_from(total).unwrap_or(i64::MAX),
        });
    }
    Ok(out)
}
