//! The regular grid graph of 2D images and 3D volumes.

use super::{Cap, CsrBuilder, CsrGraph, FlowNetwork, MAX_NODES};
use crate::{Error, Result};

/// Which neighbours a grid node is joined to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Connectivity {
    /// 2D, the 4 axis neighbours.
    N4,
    /// 2D, axis and diagonal neighbours.
    N8,
    /// 3D, the 6 axis neighbours.
    N6,
    /// 3D, the full 3×3×3 neighbourhood.
    N26,
}

// Directions come in opposite pairs (2k, 2k + 1) so that `opposite(d) == d ^ 1`; the 2D sets are
// prefixes of the 3D ones, and the GPU layout uses the same order.
const OFFSETS_26: [[i32; 3]; 26] = [
    [1, 0, 0],
    [-1, 0, 0],
    [0, 1, 0],
    [0, -1, 0],
    [0, 0, 1],
    [0, 0, -1],
    [1, 1, 0],
    [-1, -1, 0],
    [1, -1, 0],
    [-1, 1, 0],
    [1, 0, 1],
    [-1, 0, -1],
    [1, 0, -1],
    [-1, 0, 1],
    [0, 1, 1],
    [0, -1, -1],
    [0, 1, -1],
    [0, -1, 1],
    [1, 1, 1],
    [-1, -1, -1],
    [1, 1, -1],
    [-1, -1, 1],
    [1, -1, 1],
    [-1, 1, -1],
    [-1, 1, 1],
    [1, -1, -1],
];
const OFFSETS_8: [[i32; 3]; 8] = [
    [1, 0, 0],
    [-1, 0, 0],
    [0, 1, 0],
    [0, -1, 0],
    [1, 1, 0],
    [-1, -1, 0],
    [1, -1, 0],
    [-1, 1, 0],
];

impl Connectivity {
    /// The neighbour offsets `[dx, dy, dz]`, in opposite pairs: direction `d ^ 1` is the reverse
    /// of direction `d`.
    pub fn offsets(self) -> &'static [[i32; 3]] {
        match self {
            Connectivity::N4 => &OFFSETS_8[..4],
            Connectivity::N8 => &OFFSETS_8,
            Connectivity::N6 => &OFFSETS_26[..6],
            Connectivity::N26 => &OFFSETS_26,
        }
    }

    /// Number of directions (4, 8, 6 or 26).
    pub fn degree(self) -> usize {
        self.offsets().len()
    }

    /// Whether this is a 3D connectivity.
    pub fn is_3d(self) -> bool {
        matches!(self, Connectivity::N6 | Connectivity::N26)
    }

    /// The direction opposite to `d`.
    pub fn opposite(d: usize) -> usize {
        d ^ 1
    }

    /// Parses `4`, `8`, `6` or `26`.
    pub fn from_number(n: u32) -> Option<Self> {
        match n {
            4 => Some(Connectivity::N4),
            8 => Some(Connectivity::N8),
            6 => Some(Connectivity::N6),
            26 => Some(Connectivity::N26),
            _ => None,
        }
    }

    /// 4, 8, 6 or 26.
    pub fn number(self) -> u32 {
        self.degree() as u32
    }
}

impl std::fmt::Display for Connectivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "N{}", self.number())
    }
}

/// The nodes `(x, y, z)` of a grid of `dims` whose neighbour at offset `off` lies inside it, as
/// one range per axis. Loops over this box visit every arc of a direction with no bounds test.
///
/// ```
/// use segcut::graph::valid_box;
/// assert_eq!(valid_box([4, 3, 1], [1, -1, 0]), [0..3, 1..3, 0..1]);
/// ```
pub fn valid_box(dims: [usize; 3], off: [i32; 3]) -> [std::ops::Range<usize>; 3] {
    let r = |n: usize, o: i32| match o {
        1 => 0..n.saturating_sub(1),
        -1 => 1.min(n)..n,
        _ => 0..n,
    };
    [r(dims[0], off[0]), r(dims[1], off[1]), r(dims[2], off[2])]
}

/// Whether row `row..row + w` of direction `caps` (reverse direction `rev`, neighbour at index
/// step `step`) passes [`GridGraph::validate`]'s arc checks: capacities in `xs` (the columns
/// whose neighbour lies in the grid; `None` where the row's neighbours all lie outside)
/// non-negative and within `Cap::MAX` together with their reverse, every other slot zero.
#[inline]
fn row_is_fine(
    caps: &[Cap],
    rev: &[Cap],
    row: usize,
    w: usize,
    step: isize,
    xs: Option<std::ops::Range<usize>>,
) -> bool {
    let line = &caps[row..row + w];
    let Some(xs) = xs.filter(|r| !r.is_empty()) else {
        return line.iter().fold(0, |a, &c| a | c) == 0;
    };
    let outside = line[..xs.start]
        .iter()
        .chain(&line[xs.end..])
        .fold(0, |a, &c| a | c);
    let first = (row + xs.start) as isize + step;
    let back = &rev[first as usize..first as usize + xs.len()];
    // `c` fails when negative (as u32 past 2^31) or above `Cap::MAX` less the reverse's
    // non-negative part, which is the check `c + max(r, 0) > Cap::MAX` without a wider type.
    let bad = line[xs].iter().zip(back).fold(0u32, |a, (&c, &r)| {
        a | u32::from((c as u32) > (Cap::MAX - r.max(0)) as u32)
    });
    outside == 0 && bad == 0
}

/// What [`GridGraph::validate`] finds in one block of rows of one direction: the first arc
/// (node and neighbour) with a negative or overflowing capacity, and the first node with
/// capacity on a slot that leaves the grid.
type BlockCheck = (Option<(usize, usize)>, Option<usize>);

/// Nodes per task of [`GridGraph::validate`]'s passes (whole rows of at least this many).
const BLOCK_NODES: usize = if cfg!(test) { 16 } else { 1 << 16 };

/// The signed node-index step of offset `off` in a grid of `dims` (node `x + W·(y + H·z)`).
pub fn offset_step(dims: [usize; 3], off: [i32; 3]) -> isize {
    let [w, h, _] = dims;
    off[0] as isize + w as isize * (off[1] as isize + h as isize * off[2] as isize)
}

/// A W×H (2D) or W×H×D (3D) grid with per-direction capacity arrays (structure of arrays) and
/// per-node terminal capacities.
///
/// Node `(x, y, z)` has index `x + W·(y + H·z)`. `caps(d)[v]` is the capacity of the arc from
/// `v` to its neighbour in direction `d` (see [`Connectivity::offsets`]); slots whose neighbour
/// lies outside the grid must stay zero ([`GridGraph::validate`] checks this).
///
/// ```
/// use segcut::graph::{Connectivity, GridGraph};
/// let mut g = GridGraph::new_3d(4, 3, 2, Connectivity::N6).unwrap();
/// let v = g.index(1, 2, 1);
/// g.set_terminals(v, 10, 0);
/// g.set_arc(v, g.index(1, 2, 0), 3).unwrap();
/// assert_eq!(g.num_nodes(), 24);
/// assert_eq!(g.caps(5)[v], 3); // direction 5 is (0, 0, -1)
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridGraph {
    dims: [usize; 3],
    conn: Connectivity,
    caps: Vec<Vec<Cap>>,
    source: Vec<Cap>,
    sink: Vec<Cap>,
}

impl GridGraph {
    /// A grid with all capacities zero. `depth` must be 1 for 2D connectivities.
    pub fn new(width: usize, height: usize, depth: usize, conn: Connectivity) -> Result<Self> {
        if width == 0 || height == 0 || depth == 0 {
            return Err(Error::Graph(format!(
                "grid dimensions must be positive, got {width}x{height}x{depth}"
            )));
        }
        if !conn.is_3d() && depth != 1 {
            return Err(Error::Graph(format!(
                "{conn} is a 2D connectivity but the grid has depth {depth}"
            )));
        }
        let n = width
            .checked_mul(height)
            .and_then(|n| n.checked_mul(depth))
            .filter(|&n| n <= MAX_NODES)
            .ok_or_else(|| {
                Error::Graph(format!(
                    "grid {width}x{height}x{depth} has more than {MAX_NODES} nodes"
                ))
            })?;
        Ok(GridGraph {
            dims: [width, height, depth],
            conn,
            // One `vec![0; n]` per direction: zeroed allocations stay lazy (calloc), where cloning
            // a template would write every page up front.
            caps: (0..conn.degree()).map(|_| vec![0; n]).collect(),
            source: vec![0; n],
            sink: vec![0; n],
        })
    }

    /// A grid from arrays filled elsewhere (the DIMACS reader places arcs straight into them):
    /// `caps[d]` for each direction of `conn`, all of `W·H·D` entries. Lengths are checked here,
    /// capacities by [`validate`](Self::validate), which the caller runs.
    pub(crate) fn from_arrays(
        dims: [usize; 3],
        conn: Connectivity,
        caps: Vec<Vec<Cap>>,
        source: Vec<Cap>,
        sink: Vec<Cap>,
    ) -> Result<Self> {
        let [w, h, d] = dims;
        let n = source.len();
        let shape = w.checked_mul(h).and_then(|x| x.checked_mul(d));
        let fits = shape == Some(n)
            && n > 0
            && n <= MAX_NODES
            && sink.len() == n
            && caps.len() == conn.degree()
            && caps.iter().all(|c| c.len() == n)
            && (conn.is_3d() || d == 1);
        if !fits {
            return Err(Error::Graph(format!(
                "grid arrays do not match a {w}x{h}x{d} {conn} grid"
            )));
        }
        Ok(GridGraph {
            dims,
            conn,
            caps,
            source,
            sink,
        })
    }

    /// A 2D grid (`conn` is N4 or N8).
    pub fn new_2d(width: usize, height: usize, conn: Connectivity) -> Result<Self> {
        Self::new(width, height, 1, conn)
    }

    /// A 3D grid (`conn` is N6 or N26; N4/N8 work too, making independent slices).
    pub fn new_3d(width: usize, height: usize, depth: usize, conn: Connectivity) -> Result<Self> {
        Self::new(width, height, depth, conn)
    }

    /// `[width, height, depth]` (depth 1 in 2D).
    pub fn dims(&self) -> [usize; 3] {
        self.dims
    }

    /// The connectivity.
    pub fn connectivity(&self) -> Connectivity {
        self.conn
    }

    /// Number of nodes, W·H·D.
    pub fn num_nodes(&self) -> usize {
        self.source.len()
    }

    /// Node index of `(x, y, z)`.
    pub fn index(&self, x: usize, y: usize, z: usize) -> usize {
        x + self.dims[0] * (y + self.dims[1] * z)
    }

    /// Coordinates `[x, y, z]` of node `v`.
    pub fn coords(&self, v: usize) -> [usize; 3] {
        let [w, h, _] = self.dims;
        [v % w, (v / w) % h, v / (w * h)]
    }

    /// The neighbour of `v` in direction `d`, if it lies inside the grid.
    #[inline]
    pub fn neighbor(&self, v: usize, d: usize) -> Option<usize> {
        let [x, y, z] = self.coords(v);
        let [dx, dy, dz] = self.conn.offsets()[d];
        let nx = x as i64 + dx as i64;
        let ny = y as i64 + dy as i64;
        let nz = z as i64 + dz as i64;
        let [w, h, dd] = self.dims;
        if nx < 0 || ny < 0 || nz < 0 || nx >= w as i64 || ny >= h as i64 || nz >= dd as i64 {
            return None;
        }
        Some(self.index(nx as usize, ny as usize, nz as usize))
    }

    /// The signed index step of direction `d` (valid only where [`neighbor`](Self::neighbor) is).
    pub fn stride(&self, d: usize) -> isize {
        offset_step(self.dims, self.conn.offsets()[d])
    }

    /// Calls `f(v, w)` for every node `v` whose neighbour `w` in direction `d` lies inside the
    /// grid, in increasing `v`. Walks the valid box directly: no per-node coordinate division.
    #[inline]
    pub fn for_each_arc(&self, d: usize, mut f: impl FnMut(usize, usize)) {
        let [w, h, _] = self.dims;
        let [xr, yr, zr] = valid_box(self.dims, self.conn.offsets()[d]);
        let step = self.stride(d);
        for z in zr {
            for y in yr.clone() {
                let row = w * (y + h * z);
                for x in xr.clone() {
                    let v = row + x;
                    f(v, (v as isize + step) as usize);
                }
            }
        }
    }

    /// Capacities of the arcs in direction `d`, one per node.
    pub fn caps(&self, d: usize) -> &[Cap] {
        &self.caps[d]
    }

    /// Mutable capacities of direction `d`; slots pointing outside the grid must stay zero.
    pub fn caps_mut(&mut self, d: usize) -> &mut [Cap] {
        &mut self.caps[d]
    }

    /// The capacities of every direction at once, mutable (direction `d` at index `d`), for
    /// filling them in parallel; slots pointing outside the grid must stay zero.
    pub fn all_caps_mut(&mut self) -> Vec<&mut [Cap]> {
        self.caps.iter_mut().map(|c| &mut c[..]).collect()
    }

    /// Source capacities (arc s → v), one per node.
    pub fn source_caps(&self) -> &[Cap] {
        &self.source
    }

    /// Sink capacities (arc v → t), one per node.
    pub fn sink_caps(&self) -> &[Cap] {
        &self.sink
    }

    /// Mutable source and sink capacities.
    pub fn terminal_caps_mut(&mut self) -> (&mut [Cap], &mut [Cap]) {
        (&mut self.source, &mut self.sink)
    }

    /// Sets the terminal capacities of node `v`.
    pub fn set_terminals(&mut self, v: usize, source: Cap, sink: Cap) {
        self.source[v] = source;
        self.sink[v] = sink;
    }

    /// Sets the capacity of the arc from `v` in direction `d`; an error if it leaves the grid.
    pub fn set_dir(&mut self, v: usize, d: usize, cap: Cap) -> Result<()> {
        if v >= self.num_nodes() || d >= self.conn.degree() || self.neighbor(v, d).is_none() {
            return Err(Error::Graph(format!(
                "node {v} has no neighbour in direction {d} of a {} grid {:?}",
                self.conn, self.dims
            )));
        }
        self.caps[d][v] = cap;
        Ok(())
    }

    /// Sets the capacity of the arc `from → to`; an error unless they are grid neighbours.
    pub fn set_arc(&mut self, from: usize, to: usize, cap: Cap) -> Result<()> {
        let d = self.direction(from, to).ok_or_else(|| {
            Error::Graph(format!(
                "nodes {from} and {to} are not {} neighbours in a grid {:?}",
                self.conn, self.dims
            ))
        })?;
        self.caps[d][from] = cap;
        Ok(())
    }

    /// The direction `d` with `neighbor(from, d) == Some(to)`, if any.
    pub fn direction(&self, from: usize, to: usize) -> Option<usize> {
        if from >= self.num_nodes() || to >= self.num_nodes() {
            return None;
        }
        (0..self.conn.degree()).find(|&d| self.neighbor(from, d) == Some(to))
    }

    /// Number of node pairs joined in the grid (each pair counted once), whatever the capacities.
    pub fn num_edges(&self) -> usize {
        let [w, h, d] = self.dims;
        self.conn
            .offsets()
            .iter()
            .step_by(2)
            .map(|&[dx, dy, dz]| {
                w.saturating_sub(dx.unsigned_abs() as usize)
                    * (h.saturating_sub(dy.unsigned_abs() as usize))
                    * (d.saturating_sub(dz.unsigned_abs() as usize))
            })
            .sum()
    }

    /// Checks the invariants the solvers rely on: capacities non-negative, out-of-grid slots zero,
    /// and every arc's capacity plus its reverse's within `i32` (a push moves capacity from one to
    /// the other). The error names the node by its coordinates.
    pub fn validate(&self) -> Result<()> {
        let name = |v: usize| {
            let [x, y, z] = self.coords(v);
            if self.conn.is_3d() {
                format!("node {v} (x={x}, y={y}, z={z})")
            } else {
                format!("node {v} (x={x}, y={y})")
            }
        };
        // On every core: each direction in blocks of whole rows (a block's first problem, found
        // in node order), so that a grid of few directions keeps every core busy too. The error
        // reported is the one a serial check meets first: terminals, then per direction in
        // order a bad capacity before a slot that leaves the grid.
        use rayon::prelude::*;
        let n = self.num_nodes();
        let [w, h, _] = self.dims;
        let rows = n / w.max(1);
        let block = (BLOCK_NODES / w.max(1)).max(1);
        let blocks = rows.div_ceil(block);
        let negative = self
            .source
            .par_chunks(BLOCK_NODES)
            .zip(self.sink.par_chunks(BLOCK_NODES))
            .enumerate()
            .find_first(|(_, (s, t))| s.iter().zip(*t).any(|(&a, &b)| (a | b) < 0))
            .and_then(|(k, (s, t))| {
                let i = s.iter().zip(t).position(|(&a, &b)| (a | b) < 0)?;
                Some(k * BLOCK_NODES + i)
            });
        if let Some(v) = negative {
            return Err(Error::Graph(format!(
                "{} has a negative terminal capacity ({}, {})",
                name(v),
                self.source[v],
                self.sink[v]
            )));
        }
        // The first negative or overflowing arc, and the first non-zero slot that leaves the
        // grid, of direction `d` in rows `r0..r1`.
        let check = |d: usize, r0: usize, r1: usize| -> BlockCheck {
            let (caps, rev) = (&self.caps[d], &self.caps[d ^ 1]);
            let [xr, yr, zr] = valid_box(self.dims, self.conn.offsets()[d]);
            let step = self.stride(d);
            let mut outside = None;
            for r in r0..r1 {
                let row = r * w;
                let inside = yr.contains(&(r % h)) && zr.contains(&(r / h));
                // Nearly every row is fine: said by a pass without branches that the compiler
                // vectorises (the node-by-node loop below was half of a grid `.sgb` load), the
                // loop then run only on a row that has something to report.
                if row_is_fine(caps, rev, row, w, step, inside.then(|| xr.clone())) {
                    continue;
                }
                for x in 0..w {
                    let v = row + x;
                    let c = caps[v];
                    if c == 0 {
                        continue;
                    }
                    if !(inside && xr.contains(&x)) {
                        outside = outside.or(Some(v));
                        continue;
                    }
                    let u = (v as isize + step) as usize;
                    let overflow = c as i64 + rev[u].max(0) as i64 > Cap::MAX as i64;
                    if c < 0 || overflow {
                        return (Some((v, u)), outside);
                    }
                }
            }
            (None, outside)
        };
        let found: Vec<BlockCheck> = (0..self.conn.degree() * blocks)
            .into_par_iter()
            .map(|k| {
                let (d, b) = (k / blocks, k % blocks);
                check(d, b * block, ((b + 1) * block).min(rows))
            })
            .collect();
        for (d, per_block) in found.chunks(blocks.max(1)).enumerate() {
            let offset = self.conn.offsets()[d];
            if let Some((v, u)) = per_block.iter().find_map(|f| f.0) {
                let (caps, rev) = (&self.caps[d], &self.caps[d ^ 1]);
                let c = caps[v];
                return Err(if c < 0 {
                    Error::Graph(format!(
                        "{} has negative capacity {c} in direction {offset:?}",
                        name(v)
                    ))
                } else {
                    Error::Overflow(format!(
                        "{} and its neighbour {u}: capacities {c} + {} exceed {}",
                        name(v),
                        rev[u],
                        Cap::MAX
                    ))
                });
            }
            if let Some(v) = per_block.iter().find_map(|f| f.1) {
                return Err(Error::Graph(format!(
                    "{} has capacity {} on direction {offset:?}, which leaves the grid",
                    name(v),
                    self.caps[d][v]
                )));
            }
        }
        Ok(())
    }

    /// The same graph in CSR form, for solvers that take any graph. Pairs whose capacities are
    /// both zero are left out: they can carry no flow and cross no cut.
    pub fn to_csr(&self) -> Result<CsrGraph> {
        self.validate()?;
        let n = self.num_nodes();
        let mut b = CsrBuilder::with_capacity(n, self.num_edges());
        for d in (0..self.conn.degree()).step_by(2) {
            let (fwd, rev) = (&self.caps[d], &self.caps[d + 1]);
            let mut result = Ok(());
            self.for_each_arc(d, |v, w| {
                if (fwd[v] != 0 || rev[w] != 0) && result.is_ok() {
                    result = b.add_edge(v as u32, w as u32, fwd[v], rev[w]);
                }
            });
            result?;
        }
        for v in 0..n {
            b.add_terminals(v as u32, self.source[v], self.sink[v])?;
        }
        b.build()
    }
}

impl FlowNetwork for GridGraph {
    fn num_nodes(&self) -> usize {
        GridGraph::num_nodes(self)
    }

    fn num_arcs(&self) -> usize {
        2 * self.num_edges()
    }

    fn cut_capacity(&self, sink_side: &[bool]) -> i128 {
        let mut total: i128 = 0;
        for (v, &sink) in sink_side.iter().enumerate().take(self.num_nodes()) {
            total += if sink { self.source[v] } else { self.sink[v] } as i128;
        }
        for d in 0..self.conn.degree() {
            let caps = &self.caps[d];
            self.for_each_arc(d, |v, w| {
                if !sink_side[v] && sink_side[w] {
                    total += caps[v] as i128;
                }
            });
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The check node by node, as it was written before it ran in blocks: the reference.
    fn validate_serial(g: &GridGraph) -> Result<()> {
        let name = |v: usize| {
            let [x, y, z] = g.coords(v);
            if g.conn.is_3d() {
                format!("node {v} (x={x}, y={y}, z={z})")
            } else {
                format!("node {v} (x={x}, y={y})")
            }
        };
        if let Some(v) = (0..g.num_nodes()).find(|&v| g.source[v] < 0 || g.sink[v] < 0) {
            return Err(Error::Graph(format!(
                "{} has a negative terminal capacity ({}, {})",
                name(v),
                g.source[v],
                g.sink[v]
            )));
        }
        for d in 0..g.conn.degree() {
            let offset = g.conn.offsets()[d];
            let (caps, rev) = (&g.caps[d], &g.caps[d ^ 1]);
            for (v, &c) in caps.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let Some(u) = g.neighbor(v, d) else { continue };
                if c < 0 {
                    return Err(Error::Graph(format!(
                        "{} has negative capacity {c} in direction {offset:?}",
                        name(v)
                    )));
                }
                if c as i64 + rev[u].max(0) as i64 > Cap::MAX as i64 {
                    return Err(Error::Overflow(format!(
                        "{} and its neighbour {u}: capacities {c} + {} exceed {}",
                        name(v),
                        rev[u],
                        Cap::MAX
                    )));
                }
            }
            if let Some(v) =
                (0..g.num_nodes()).find(|&v| caps[v] != 0 && g.neighbor(v, d).is_none())
            {
                return Err(Error::Graph(format!(
                    "{} has capacity {} on direction {offset:?}, which leaves the grid",
                    name(v),
                    caps[v]
                )));
            }
        }
        Ok(())
    }

    #[test]
    fn validate_in_blocks_gives_the_serial_answer() {
        let mut rng = Rng::new(3);
        let shapes = [
            ([7, 5, 1], Connectivity::N4),
            ([3, 9, 1], Connectivity::N8),
            ([4, 3, 3], Connectivity::N6),
            ([3, 4, 5], Connectivity::N26),
            ([1, 6, 1], Connectivity::N8),
        ];
        for case in 0..400 {
            let (dims, conn) = shapes[case % shapes.len()];
            let mut g = GridGraph::new(dims[0], dims[1], dims[2], conn).unwrap();
            let n = g.num_nodes();
            for d in 0..conn.degree() {
                let mut inside = Vec::new();
                g.for_each_arc(d, |v, _| inside.push(v));
                for v in inside {
                    g.caps_mut(d)[v] = rng.below(50) as Cap;
                }
            }
            // Zero to three faults of any kind, anywhere.
            for _ in 0..rng.below(4) {
                let v = rng.below(n as u64) as usize;
                let d = rng.below(conn.degree() as u64) as usize;
                match rng.below(4) {
                    0 => g.caps_mut(d)[v] = -1 - rng.below(5) as Cap,
                    1 => g.caps_mut(d)[v] = Cap::MAX - rng.below(10) as Cap,
                    2 => g.caps_mut(d)[v] = 1 + rng.below(5) as Cap, // maybe off the grid
                    _ => g.source[v] = -1,
                }
            }
            let want = validate_serial(&g).map_err(|e| e.to_string());
            let got = g.validate().map_err(|e| e.to_string());
            assert_eq!(got, want, "case {case}");
        }
    }
}
