//! Arcs placed straight into the arrays of the grid a `c regulargrid` hint announces, on every
//! core, with no arc list and no CSR in between: a text load of a grid then holds little more
//! than the grid itself.
//!
//! The placement is optimistic. Capacities are summed into per-direction cells (cell additions
//! commute, so the order in which threads add does not matter), and anything the grid cannot
//! hold or that would be an error (an arc that joins no neighbours, a sum past `Cap::MAX`, a
//! source → sink arc, an odd line) makes the reader start again from the top of the file with
//! the general path, which gives the graph or the error, with its line, exactly as before. The
//! reader only places arcs this way when it can open the file again.

use std::sync::atomic::{AtomicI32, Ordering::Relaxed};

use rayon::prelude::*;

use crate::graph::{Cap, Connectivity, CsrBuilder, GridGraph};

/// A plain `a U V CAP` line pre-parsed on a worker thread; `line` counts from its piece's first
/// line (0). The ids' range is checked in order, where the problem line is known. (Defined here,
/// where the placement reads it, so that the reader imports this module and not the reverse.)
#[derive(Clone, Copy)]
pub(super) struct FastArc {
    pub u: u32,
    pub v: u32,
    pub cap: Cap,
    pub line: u32,
}

/// An arc between two distinct nodes (internal numbering), as the reverse-arc pairing sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Link {
    pub u: u32,
    pub v: u32,
    pub cap: Cap,
}

impl Link {
    /// Whether `self` is the reverse of `held` and the two form one pair.
    pub fn pairs_with(self, held: Link) -> bool {
        held.u == self.v && held.v == self.u
    }

    /// Whether the two capacities of a pair fit one `Cap`, as the builder requires.
    pub fn pair_fits(self, held: Link) -> bool {
        i64::from(self.cap) + i64::from(held.cap) <= i64::from(Cap::MAX)
    }
}

/// The reverse-arc pairing over a run of arcs from a given start: pairs made, the arc left
/// waiting for its reverse at the end, and whether every pair fit.
#[derive(Clone, Copy, Debug)]
pub(super) struct Chain {
    pub paired: u64,
    pub held: Option<Link>,
    pub fits: bool,
}

/// What one piece of arcs would do to the grid, found before anything is written.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scan {
    /// Every arc is in range and fits the grid.
    pub fits: bool,
    /// Directions of the large connectivity that some arc with capacity uses (bit per index).
    pub dirs: u32,
    /// Arcs that carry no flow (self loops, into the source, out of the sink).
    pub dropped: u64,
    /// The pairing from the piece's first arc with nothing held.
    pub fresh: Chain,
    /// The pairing from its second arc, for when the first pairs with the arc held before it.
    pub skip_first: Chain,
    /// The first arc, when it joins two distinct nodes.
    pub first: Option<Link>,
}

/// The grid being filled: one array per direction of N8 (2D) or N26 (3D), the diagonal ones
/// allocated when an arc first needs them, so that a 4-connected file ends as N4 without ever
/// holding more than the N4 grid.
pub(super) struct GridPlace {
    dims: [usize; 3],
    nodes: u64,
    small: Connectivity,
    large: Connectivity,
    /// Direction index in `large` of each slot `(dx+1) + 3(dy+1) + 9(dz+1)` of the 3×3×3 cube.
    dir_of_slot: [u8; 27],
    caps: Vec<Vec<AtomicI32>>,
    /// Empty until [`GridPlace::adopt_terminals`].
    source: Vec<AtomicI32>,
    sink: Vec<AtomicI32>,
    /// Pixels.
    n: usize,
}

/// `n` zeroed cells, written on every core, or `None` where the memory cannot be had.
fn zeros(n: usize) -> Option<Vec<AtomicI32>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.par_extend((0..n).into_par_iter().map(|_| AtomicI32::new(0)));
    Some(v)
}

/// Adds `cap` to a cell; false if the sum passes `Cap::MAX` (the cell is then garbage, and the
/// reader starts over).
#[inline]
fn add(cell: &AtomicI32, cap: Cap) -> bool {
    if cap == 0 {
        return true;
    }
    let old = cell.fetch_add(cap, Relaxed);
    i64::from(old) + i64::from(cap) <= i64::from(Cap::MAX)
}

impl GridPlace {
    /// An empty grid of `dims` (`is_3d`: the hint gave a depth) for a file of `nodes` ids, or
    /// `None` where the memory cannot be had.
    pub fn new(dims: [usize; 3], is_3d: bool, nodes: u64) -> Option<Self> {
        let (small, large) = if is_3d {
            (Connectivity::N6, Connectivity::N26)
        } else {
            (Connectivity::N4, Connectivity::N8)
        };
        let n = dims.iter().product::<usize>();
        let mut dir_of_slot = [u8::MAX; 27];
        for (k, &[dx, dy, dz]) in large.offsets().iter().enumerate() {
            dir_of_slot[(dx + 1) as usize + 3 * (dy + 1) as usize + 9 * (dz + 1) as usize] =
                k as u8;
        }
        let mut caps = Vec::with_capacity(large.degree());
        for d in 0..large.degree() {
            caps.push(if d < small.degree() {
                zeros(n)?
            } else {
                Vec::new()
            });
        }
        Some(GridPlace {
            dims,
            nodes,
            small,
            large,
            dir_of_slot,
            caps,
            source: Vec::new(),
            sink: Vec::new(),
            n,
        })
    }

    /// The direction (in the large connectivity) from node `u` to node `v`, if they are
    /// neighbours.
    #[inline]
    fn dir(&self, u: u32, v: u32) -> Option<usize> {
        let [w, h, _] = self.dims;
        let (u, v) = (u as usize, v as usize);
        let (pu, pv) = (
            [u % w, (u / w) % h, u / (w * h)],
            [v % w, (v / w) % h, v / (w * h)],
        );
        let mut slot = 0;
        for (k, scale) in [1, 3, 9].into_iter().enumerate() {
            let delta = pv[k] as i64 - pu[k] as i64;
            if delta.abs() > 1 {
                return None;
            }
            slot += (delta + 1) as usize * scale;
        }
        match self.dir_of_slot[slot] {
            u8::MAX => None,
            d => Some(d as usize),
        }
    }

    /// The node-to-node arc of file ids `u_id → v_id` (source 1, sink 2, pixel `i` is
    /// `i + 3`), when both ends are distinct nodes.
    #[inline]
    fn link(a: &FastArc) -> Option<Link> {
        (a.u > 2 && a.v > 2 && a.u != a.v).then(|| Link {
            u: a.u - 3,
            v: a.v - 3,
            cap: a.cap,
        })
    }

    /// The pairing over `arcs` with nothing held at the start.
    fn chain(arcs: &[FastArc]) -> Chain {
        let mut c = Chain {
            paired: 0,
            held: None,
            fits: true,
        };
        for a in arcs {
            match (Self::link(a), c.held) {
                (Some(l), Some(h)) if l.pairs_with(h) => {
                    c.paired += 1;
                    c.fits &= l.pair_fits(h);
                    c.held = None;
                }
                (l, _) => c.held = l,
            }
        }
        c
    }

    /// What `arcs` would do, without writing anything.
    pub fn scan(&self, arcs: &[FastArc]) -> Scan {
        let mut fits = true;
        let (mut dirs, mut dropped) = (0u32, 0u64);
        let small = self.small.degree();
        for a in arcs {
            let (u, v, cap) = (a.u, a.v, a.cap);
            if u == 0 || v == 0 || u64::from(u) > self.nodes || u64::from(v) > self.nodes {
                fits = false; // an error: the general path words it
                break;
            }
            match (u, v) {
                // Into the source, out of the sink: no flow (as the builder drops them).
                (_, 1) | (2, _) => dropped += 1,
                (1, 2) => fits &= cap == 0, // a constant flow has no grid form
                (1, _) | (_, 2) => {}
                _ if u == v => dropped += 1,
                _ if cap == 0 => {}
                _ => match self.dir(u - 3, v - 3) {
                    Some(d) if d >= small => dirs |= 1 << d,
                    Some(_) => {}
                    None => fits = false,
                },
            }
            if !fits {
                break;
            }
        }
        Scan {
            fits,
            dirs,
            dropped,
            fresh: Self::chain(arcs),
            skip_first: Self::chain(arcs.get(1..).unwrap_or_default()),
            first: arcs.first().and_then(Self::link),
        }
    }

    /// Allocates the diagonal directions in `dirs` not yet held; false where memory runs out.
    pub fn ensure(&mut self, dirs: u32) -> bool {
        let n = self.n;
        for d in 0..self.large.degree() {
            if dirs & (1 << d) != 0 && self.caps[d].is_empty() {
                match zeros(n) {
                    Some(z) => self.caps[d] = z,
                    None => return false,
                }
            }
        }
        true
    }

    /// Adds the capacities of `arcs` (scanned, fitting, directions allocated); false where a
    /// sum passes `Cap::MAX`.
    pub fn place(&self, arcs: &[FastArc]) -> bool {
        arcs.iter().all(|a| match (a.u, a.v) {
            (_, 1) | (2, _) | (1, 2) => true,
            (1, v) => add(&self.source[v as usize - 3], a.cap),
            (u, 2) => add(&self.sink[u as usize - 3], a.cap),
            (u, v) if u == v || a.cap == 0 => true,
            (u, v) => match self.dir(u - 3, v - 3) {
                Some(d) => add(&self.caps[d][u as usize - 3], a.cap),
                None => false,
            },
        })
    }

    /// Adds the arc pairs a builder holds (the arcs read before the grid was set up): false
    /// where the grid cannot hold them. Its terminal sums come by [`Self::adopt_terminals`].
    pub fn add_builder(&mut self, b: &CsrBuilder) -> bool {
        if b.constant() != 0 {
            return false;
        }
        let (tails, heads, caps, revs) = b.pairs();
        for i in 0..tails.len() {
            for (u, v, cap) in [(tails[i], heads[i], caps[i]), (heads[i], tails[i], revs[i])] {
                if cap == 0 {
                    continue;
                }
                let Some(d) = self.dir(u, v) else {
                    return false;
                };
                if !self.ensure(1 << d) || !add(&self.caps[d][u as usize], cap) {
                    return false;
                }
            }
        }
        true
    }

    /// Takes a builder's summed terminal capacities (each within `Cap::MAX`) as the grid's own,
    /// converted in place; empty ones become zeros. False only where zeros cannot be had (and
    /// then nothing was given).
    pub fn adopt_terminals(&mut self, (source, sink): (Vec<Cap>, Vec<Cap>)) -> bool {
        let n = self.n;
        let own = |t: Vec<Cap>| -> Option<Vec<AtomicI32>> {
            if t.len() == n {
                // In place: an atomic has the layout of its integer.
                Some(t.into_iter().map(AtomicI32::new).collect())
            } else {
                zeros(n)
            }
        };
        match (own(source), own(sink)) {
            (Some(s), Some(t)) => {
                (self.source, self.sink) = (s, t);
                true
            }
            _ => false,
        }
    }

    /// Adds one node-to-node arc held back for its reverse when the grid was set up.
    pub fn add_link(&mut self, l: Link) -> bool {
        if l.cap == 0 {
            return true;
        }
        match self.dir(l.u, l.v) {
            Some(d) => self.ensure(1 << d) && add(&self.caps[d][l.u as usize], l.cap),
            None => false,
        }
    }

    /// The grid, the smallest connectivity that holds every arc, if it passes
    /// [`GridGraph::validate`].
    pub fn finish(self) -> Option<GridGraph> {
        let diagonal = self.caps[self.small.degree()..]
            .iter()
            .any(|c| !c.is_empty());
        let conn = if diagonal { self.large } else { self.small };
        let n = self.n;
        // In place: an atomic has the layout of its integer.
        let plain =
            |c: Vec<AtomicI32>| -> Vec<Cap> { c.into_iter().map(AtomicI32::into_inner).collect() };
        let mut caps = Vec::with_capacity(conn.degree());
        for c in self.caps.into_iter().take(conn.degree()) {
            caps.push(if c.is_empty() { zeros(n)? } else { c });
        }
        let caps = caps.into_iter().map(plain).collect();
        let g = GridGraph::from_arrays(self.dims, conn, caps, plain(self.source), plain(self.sink))
            .ok()?;
        g.validate().ok()?;
        Some(g)
    }
}
