//! The Boykov–Kolmogorov max-flow algorithm.
//!
//! Y. Boykov and V. Kolmogorov, *An Experimental Comparison of Min-Cut/Max-Flow Algorithms for
//! Energy Minimization in Vision*, IEEE TPAMI 26(9), 2004.
//!
//! Two search trees grow towards each other: S from the source and T from the sink. Each round
//! has the paper's three steps, one function each:
//!
//! 1. `grow`: an active node claims free neighbours across arcs with residual
//!    capacity (away from the source in S, towards the sink in T) until the trees touch;
//! 2. `augment`: push the bottleneck of the path source → S → T → sink, which
//!    saturates some tree arcs and turns their children into orphans;
//! 3. `adopt_orphans`: each orphan looks for a new parent in its own tree
//!    whose root path is intact, preferring the one closest to the terminal; failing that it
//!    becomes free and its children become orphans.
//!
//! Invariants between steps (after adoption):
//! - every tree node's path of parent arcs ends at its terminal (no orphans are left);
//! - the parent arc of a node in S has residual capacity from parent to child, in T from child
//!   to parent; a root of S has `tr_cap > 0` (residual from the source), of T `tr_cap < 0`;
//! - along parent arcs, a parent's timestamp is at least its child's, and where they are equal
//!   its distance is smaller, so the distance heuristic never closes a cycle;
//! - active nodes (queued FIFO) are the tree nodes that may still have free neighbours.
//!
//! Terminal arcs are folded into one residual per node, `tr_cap = source − sink`, after
//! `min(source, sink)` is pushed straight through the node up front.
//!
//! The search runs on the solver's own copy of the arcs (head, reverse arc and residual in one
//! 12-byte record) and on 28-byte node records holding the hot fields, with `u32` indices and
//! named sentinels. [`Bk::solve_grid`](crate::maxflow::Solver::solve_grid) lays a grid's arcs
//! out directly, in the very order [`GridGraph::to_csr`] would, so both paths run the same
//! search. The returned cut is the canonical one (the nodes that can reach the sink in the final
//! residual graph), which on termination is exactly T: see `sink_side`.

use super::solved::timed;
use super::{Cut, Flows, GraphRef, Solved, Solver, SolverKind};
use crate::graph::{Cap, CsrGraph, Flow, GridGraph};
use crate::{Error, Result};
use std::time::Instant;

/// `parent` of a node whose parent is its terminal (a tree root).
const TERMINAL: u32 = u32::MAX;
/// `parent` of a node that lost its parent arc and waits for adoption.
const ORPHAN: u32 = u32::MAX - 1;
/// `parent` of a free node (in no tree); also "no node" / "no arc" elsewhere.
const NONE: u32 = u32::MAX - 2;

/// The hot per-node state, 28 bytes. Arc and node indices are `u32`; the sentinels above are
/// out of range for both (the graph caps arcs and nodes below `u32::MAX - 16`).
#[derive(Clone, Copy, Debug)]
struct Node {
    /// The node's first arc; its arcs end where the next node's begin (a sentinel node closes
    /// the array). Kept here rather than in the graph's offsets to save a cache miss per visit.
    first: u32,
    /// The arc from this node to its parent, or `TERMINAL`, `ORPHAN`, `NONE`.
    parent: u32,
    /// Next node in the active queue: `NONE` when not queued, itself when last.
    next_active: u32,
    /// Time of the last check that `dist` is exact.
    ts: u32,
    /// Number of arcs to the terminal (exact when `ts` is the current time).
    dist: u32,
    /// Residual source capacity (> 0) or, negated, residual sink capacity (< 0).
    tr_cap: Cap,
    /// In T (true) or S (false); meaningless for free nodes.
    is_sink: bool,
}

impl Node {
    const FREE: Node = Node {
        first: 0,
        parent: NONE,
        next_active: NONE,
        ts: 0,
        dist: 0,
        tr_cap: 0,
        is_sink: false,
    };
}

/// Counters from the last solve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BkStats {
    /// Augmenting paths pushed.
    pub augmentations: u64,
    /// Orphans processed (each adoption attempt counts once).
    pub orphans: u64,
    /// Free nodes that growth attached to a tree.
    pub growth_steps: u64,
}

/// The Boykov–Kolmogorov solver. Keep one value around to reuse its buffers across solves.
///
/// ```
/// use segcut::graph::{CsrBuilder, Vertex};
/// use segcut::maxflow::{bk::Bk, verify, Solver};
/// // s → 0 → 1 → t with a bottleneck of 2 in the middle.
/// let mut b = CsrBuilder::new(2).unwrap();
/// b.add_terminals(0, 5, 0).unwrap();
/// b.add_edge(0, 1, 2, 0).unwrap();
/// b.add_terminals(1, 0, 5).unwrap();
/// let g = b.build().unwrap();
/// let mut bk = Bk::default();
/// let cut = bk.solve_csr(&g).unwrap();
/// assert_eq!(cut.flow, 2);
/// assert_eq!(cut.sink_side, vec![false, true]);
/// assert!(verify(&g, &cut).is_ok());
/// assert_eq!(bk.stats().augmentations, 1);
/// ```
#[derive(Default, Debug, Clone)]
pub struct Bk {
    /// One record per node, plus a sentinel that closes the last node's arc range.
    nodes: Vec<Node>,
    /// The graph's arcs with their residual capacities, in the graph's order.
    arcs: Vec<Arc>,
    /// Head and tail of the FIFO of active nodes (linked through `Node::next_active`).
    active_first: u32,
    active_last: u32,
    /// Orphans in FIFO order; `orphans[orphan_next..]` are still to process.
    orphans: Vec<u32>,
    orphan_next: usize,
    /// The current time, advanced once per augmentation.
    time: u32,
    /// Scratch for grid solves: which arcs each node has.
    grid_masks: Vec<u32>,
    /// Flow pushed so far, direct source → sink arcs excluded.
    flow: Flow,
    stats: BkStats,
}

/// An arc and its residual capacity, 12 bytes: everything the search reads about an arc lies in
/// one place, so a node's arcs usually share a cache line.
#[derive(Clone, Copy, Debug)]
struct Arc {
    head: u32,
    /// The reverse arc.
    sister: u32,
    rcap: Cap,
}

impl Bk {
    /// Counters from the last solve.
    pub fn stats(&self) -> BkStats {
        self.stats
    }

    /// The flows after solving `g` with [`Solver::solve_csr`]. A node's folded terminal
    /// residual `tr_cap` (source − sink after `min(source, sink)` went straight through) is what
    /// is left of its larger terminal arc; the smaller one is saturated.
    fn flows(&self, g: &CsrGraph, value: Flow) -> Flows {
        let rcap: Vec<Cap> = self.arcs.iter().map(|a| a.rcap).collect();
        let n = g.num_nodes();
        let (mut source, mut sink) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for v in 0..n {
            let tr = self.nodes[v].tr_cap;
            source.push(g.source_caps()[v] - tr.max(0));
            sink.push(g.sink_caps()[v] - (-tr).max(0));
        }
        Flows::from_residuals(g, &rcap, source, sink, value)
    }

    /// Copies the arcs of a CSR graph, then sets up the trees.
    fn init_csr(&mut self, g: &CsrGraph) -> Result<()> {
        self.arcs.clear();
        self.nodes.clear();
        reserve_exact(&mut self.arcs, g.heads().len(), "BK's arcs")?;
        reserve_exact(&mut self.nodes, g.first().len(), "BK's nodes")?;
        let arcs = g.heads().iter().zip(g.sisters()).zip(g.caps());
        self.arcs
            .extend(arcs.map(|((&head, &sister), &rcap)| Arc { head, sister, rcap }));
        self.nodes.extend(g.first().iter().map(|&first| Node {
            first,
            ..Node::FREE
        }));
        self.init_trees(g.source_caps(), g.sink_caps());
        Ok(())
    }

    /// Lays out the arcs of a grid directly, exactly as [`GridGraph::to_csr`] would (same
    /// arcs, same order, so the search and its result are the same), without building the CSR
    /// graph first. Then sets up the trees.
    ///
    /// The grid is checked on the way, as [`GridGraph::validate`] does; on any doubt that
    /// function itself produces the error, so messages are the same on both paths.
    pub(crate) fn init_grid(&mut self, g: &GridGraph) -> Result<()> {
        let invalid = || {
            Err(g
                .validate()
                .err()
                .unwrap_or_else(|| Error::Graph("invalid grid".into())))
        };
        if g.source_caps().iter().chain(g.sink_caps()).any(|&c| c < 0) {
            return invalid();
        }
        let conn = g.connectivity();
        let degree = conn.degree();
        let [width, height, depth] = g.dims();
        let n = g.num_nodes();
        // Within each opposite pair, to_csr lists the direction with the negative index step
        // first; `order[r]` is the direction of rank r, `rank` its inverse.
        let mut order: Vec<usize> = (0..degree).collect();
        for pair in order.chunks_mut(2) {
            if g.stride(pair[0]) > 0 {
                pair.swap(0, 1);
            }
        }
        let mut rank = vec![0; degree];
        for (r, &d) in order.iter().enumerate() {
            rank[d] = r;
        }

        // Pass 1, one direction at a time over the nodes that have that neighbour: which arcs
        // each node has (bit r for the direction of rank r; pairs with both capacities zero are
        // left out). Then where each node's arcs start.
        let stride: Vec<isize> = (0..degree).map(|d| g.stride(d)).collect();
        self.grid_masks.clear();
        reserve_exact(&mut self.grid_masks, n, "BK's arc masks")?;
        self.grid_masks.resize(n, 0);
        for (r, &d) in order.iter().enumerate() {
            let [dx, dy, dz] = conn.offsets()[d];
            // The coordinates whose neighbour in direction d lies inside the grid.
            let inside = |delta: i32, len: usize| {
                let lo = (-delta).max(0) as usize;
                lo..len.saturating_sub(delta.max(0) as usize).max(lo)
            };
            let (xs, ys, zs) = (inside(dx, width), inside(dy, height), inside(dz, depth));
            let (fwd, rev) = (g.caps(d), g.caps(d ^ 1));
            // Checks on the way: no negative capacity, no pair summing past i32::MAX, and no
            // capacity on a slot that leaves the grid (all non-zeros lie inside).
            let mut bad = false;
            let mut nonzero_inside = 0;
            for z in zs {
                for y in ys.clone() {
                    // A run of nodes along x and the run of their neighbours.
                    let v = width * (y + height * z) + xs.start;
                    let w = v.wrapping_add_signed(stride[d]);
                    let len = xs.len();
                    let runs = fwd[v..v + len].iter().zip(&rev[w..w + len]);
                    for ((&c, &back), mask) in runs.zip(&mut self.grid_masks[v..v + len]) {
                        bad |= c < 0 || c as i64 + back as i64 > Cap::MAX as i64;
                        nonzero_inside += (c != 0) as usize;
                        if c != 0 || back != 0 {
                            *mask |= 1 << r;
                        }
                    }
                }
            }
            if bad || fwd.iter().filter(|&&c| c != 0).count() != nonzero_inside {
                return invalid();
            }
        }
        self.nodes.clear();
        // Exactly n + 1: grown by pushes, the array would double past the next power of two
        // (4100² nodes would take 940 MB instead of 470 MB).
        reserve_exact(&mut self.nodes, n + 1, "BK's nodes")?;
        let mut first: u64 = 0;
        for &mask in &self.grid_masks {
            self.nodes.push(Node {
                first: first as u32,
                ..Node::FREE
            });
            first += mask.count_ones() as u64;
        }
        if first > (u32::MAX - 16) as u64 {
            return Err(Error::Graph(format!(
                "grid {width}x{height}x{depth} {conn} has {first} arcs, more than the 32-bit arc \
                 index supports"
            )));
        }
        self.nodes.push(Node {
            first: first as u32,
            ..Node::FREE
        });
        // Pass 2: the arcs; the sister of v → w (direction d) is w's arc in direction d ^ 1,
        // found by counting the arcs w has before that rank.
        let by_rank: Vec<(&[Cap], isize, u32)> = order
            .iter()
            .map(|&d| (g.caps(d), stride[d], (1u32 << rank[d ^ 1]) - 1))
            .collect();
        self.arcs.clear();
        reserve_exact(&mut self.arcs, first as usize, "BK's arcs")?;
        for v in 0..n {
            let mut mask = self.grid_masks[v];
            while mask != 0 {
                let (caps, step, below) = by_rank[mask.trailing_zeros() as usize];
                mask &= mask - 1;
                let w = v.wrapping_add_signed(step);
                let sister = self.nodes[w].first + (self.grid_masks[w] & below).count_ones();
                self.arcs.push(Arc {
                    head: w as u32,
                    sister,
                    rcap: caps[v],
                });
            }
        }
        self.init_trees(g.source_caps(), g.sink_caps());
        Ok(())
    }

    /// Sets up terminal residuals and the initial trees: every node with residual source
    /// capacity is an active root of S, every node with residual sink capacity one of T.
    fn init_trees(&mut self, source_caps: &[Cap], sink_caps: &[Cap]) {
        self.active_first = NONE;
        self.active_last = NONE;
        self.orphans.clear();
        self.orphan_next = 0;
        self.time = 0;
        self.flow = 0;
        self.stats = BkStats::default();
        for (v, (&source, &sink)) in source_caps.iter().zip(sink_caps).enumerate() {
            // Both fit i32 and are non-negative, so neither the difference nor the sum of
            // minima (in i64) can overflow.
            self.flow += source.min(sink) as Flow;
            let tr_cap = source - sink;
            self.nodes[v].tr_cap = tr_cap;
            if tr_cap != 0 {
                let node = &mut self.nodes[v];
                node.parent = TERMINAL;
                node.is_sink = tr_cap < 0;
                node.dist = 1;
                self.set_active(v as u32);
            }
        }
    }

    /// The arcs leaving node `i`.
    #[inline]
    fn arcs_of(&self, i: u32) -> std::ops::Range<usize> {
        self.nodes[i as usize].first as usize..self.nodes[i as usize + 1].first as usize
    }

    /// Head of arc `a`.
    #[inline]
    fn head(&self, a: u32) -> u32 {
        self.arcs[a as usize].head
    }

    /// Appends `i` to the active queue unless it is already there (or held as the current node).
    #[inline]
    fn set_active(&mut self, i: u32) {
        if self.nodes[i as usize].next_active != NONE {
            return;
        }
        if self.active_last == NONE {
            self.active_first = i;
        } else {
            self.nodes[self.active_last as usize].next_active = i;
        }
        self.active_last = i;
        self.nodes[i as usize].next_active = i;
    }

    /// Takes the next active node that is still in a tree (free nodes are skipped lazily).
    fn next_active(&mut self) -> Option<u32> {
        loop {
            let i = self.active_first;
            if i == NONE {
                return None;
            }
            let node = &mut self.nodes[i as usize];
            if node.next_active == i {
                self.active_first = NONE;
                self.active_last = NONE;
            } else {
                self.active_first = node.next_active;
            }
            node.next_active = NONE;
            if node.parent != NONE {
                return Some(i);
            }
        }
    }

    /// Marks `i` an orphan and queues it for adoption.
    #[inline]
    fn set_orphan(&mut self, i: u32) {
        self.nodes[i as usize].parent = ORPHAN;
        self.orphans.push(i);
    }

    /// Growth from active node `i`: claims free neighbours reachable through residual arcs and
    /// returns the arc (oriented from S to T) where the trees touch, if they do.
    ///
    /// Also applies the distance heuristic: a neighbour in the same tree whose root path is no
    /// newer and longer than `i`'s is re-hung under `i`.
    fn grow(&mut self, i: u32) -> Option<u32> {
        let me = self.nodes[i as usize];
        for a in self.arcs_of(i) {
            let arc = self.arcs[a];
            // The residual from i towards j's side: i → j in S, j → i in T.
            let residual = if me.is_sink {
                self.arcs[arc.sister as usize].rcap
            } else {
                arc.rcap
            };
            if residual == 0 {
                continue;
            }
            let j = arc.head;
            let nj = &mut self.nodes[j as usize];
            if nj.parent == NONE {
                // j's parent arc is j → i, the sister of i → j, in both trees.
                nj.is_sink = me.is_sink;
                nj.parent = arc.sister;
                nj.ts = me.ts;
                nj.dist = me.dist + 1;
                self.stats.growth_steps += 1;
                self.set_active(j);
            } else if nj.is_sink != me.is_sink {
                return Some(if me.is_sink { arc.sister } else { a as u32 });
            } else if nj.ts <= me.ts && nj.dist > me.dist {
                nj.parent = arc.sister;
                nj.ts = me.ts;
                nj.dist = me.dist + 1;
            }
        }
        None
    }

    /// Augmentation along source → … → tail(mid) → head(mid) → … → sink: pushes the bottleneck
    /// (terminal residuals included) and queues as orphans the nodes whose parent arc or terminal
    /// arc it saturates.
    fn augment(&mut self, mid: u32) {
        let mid_arc = self.arcs[mid as usize];
        let mid_tail = self.head(mid_arc.sister);
        let mid_head = mid_arc.head;

        // Bottleneck: S side (parent → child residuals are on the sisters), then T side.
        let mut b = mid_arc.rcap;
        let mut i = mid_tail;
        loop {
            let p = self.nodes[i as usize].parent;
            if p == TERMINAL {
                break;
            }
            let up = self.arcs[p as usize];
            b = b.min(self.arcs[up.sister as usize].rcap);
            i = up.head;
        }
        b = b.min(self.nodes[i as usize].tr_cap);
        let mut i = mid_head;
        loop {
            let p = self.nodes[i as usize].parent;
            if p == TERMINAL {
                break;
            }
            let up = self.arcs[p as usize];
            b = b.min(up.rcap);
            i = up.head;
        }
        b = b.min(-self.nodes[i as usize].tr_cap);

        // Push b.
        self.arcs[mid as usize].rcap -= b;
        self.arcs[mid_arc.sister as usize].rcap += b;
        let mut i = mid_tail;
        loop {
            let p = self.nodes[i as usize].parent;
            if p == TERMINAL {
                break;
            }
            let up = &mut self.arcs[p as usize];
            up.rcap += b;
            let (down, next) = (up.sister as usize, up.head);
            self.arcs[down].rcap -= b;
            if self.arcs[down].rcap == 0 {
                self.set_orphan(i);
            }
            i = next;
        }
        self.nodes[i as usize].tr_cap -= b;
        if self.nodes[i as usize].tr_cap == 0 {
            self.set_orphan(i);
        }
        let mut i = mid_head;
        loop {
            let p = self.nodes[i as usize].parent;
            if p == TERMINAL {
                break;
            }
            let up = &mut self.arcs[p as usize];
            up.rcap -= b;
            let (saturated, down, next) = (up.rcap == 0, up.sister as usize, up.head);
            self.arcs[down].rcap += b;
            if saturated {
                self.set_orphan(i);
            }
            i = next;
        }
        self.nodes[i as usize].tr_cap += b;
        if self.nodes[i as usize].tr_cap == 0 {
            self.set_orphan(i);
        }
        self.flow += b as Flow;
        self.stats.augmentations += 1;
    }

    /// Adoption: processes orphans in FIFO order until none is left.
    fn adopt_orphans(&mut self) {
        while let Some(&i) = self.orphans.get(self.orphan_next) {
            self.orphan_next += 1;
            // Only a warm update (`reparameterize`) can re-root a queued orphan; it then has
            // its terminal as parent and must keep it.
            if self.nodes[i as usize].parent == ORPHAN {
                self.adopt(i);
            }
        }
        self.orphans.clear();
        self.orphan_next = 0;
    }

    /// Residual capacity of arc `a` in the direction that matters for a tree: from the head
    /// towards the tail in S (parent → child), from the tail towards the head in T.
    #[inline]
    fn tree_residual(&self, a: usize, in_sink: bool) -> Cap {
        let arc = self.arcs[a];
        if in_sink {
            arc.rcap
        } else {
            self.arcs[arc.sister as usize].rcap
        }
    }

    /// One orphan `i`: hang it under the neighbour in its tree that has residual capacity
    /// towards it (S) or from it (T), whose root path is intact, and that is closest to the
    /// terminal. Without one, `i` becomes free: its tree neighbours that could reach it become
    /// active again, and its children become orphans.
    fn adopt(&mut self, i: u32) {
        self.stats.orphans += 1;
        let in_sink = self.nodes[i as usize].is_sink;
        let time = self.time;
        let mut best = NONE;
        let mut best_dist = u32::MAX;
        for a in self.arcs_of(i) {
            if self.tree_residual(a, in_sink) == 0 {
                continue;
            }
            let j = self.arcs[a].head;
            let nj = self.nodes[j as usize];
            if nj.is_sink != in_sink || nj.parent == NONE {
                continue;
            }
            // Walk to the root: its distance if the path is intact, None through an orphan.
            let mut d = 0u32;
            let mut k = j;
            let origin = loop {
                let nk = &mut self.nodes[k as usize];
                if nk.ts == time {
                    d += nk.dist;
                    break Some(d);
                }
                d += 1;
                match nk.parent {
                    TERMINAL => {
                        nk.ts = time;
                        nk.dist = 1;
                        break Some(d);
                    }
                    ORPHAN => break None,
                    p => k = self.arcs[p as usize].head,
                }
            };
            let Some(mut d) = origin else { continue };
            if d < best_dist {
                best = a as u32;
                best_dist = d;
            }
            // Stamp the walked path with exact distances so later walks stop early.
            let mut k = j;
            while self.nodes[k as usize].ts != time {
                let nk = &mut self.nodes[k as usize];
                nk.ts = time;
                nk.dist = d;
                d -= 1;
                k = self.arcs[nk.parent as usize].head;
            }
        }

        if best != NONE {
            let node = &mut self.nodes[i as usize];
            node.parent = best;
            node.ts = time;
            node.dist = best_dist + 1;
            return;
        }

        self.nodes[i as usize].parent = NONE;
        for a in self.arcs_of(i) {
            let j = self.arcs[a].head;
            let nj = self.nodes[j as usize];
            if nj.parent == NONE {
                continue;
            }
            if nj.is_sink != in_sink {
                // A node of the other tree that can claim `i` now must scan again. From
                // scratch it still would (every root starts active, and the node that closed
                // the path keeps growing after it), but after a warm update it may have
                // finished long ago while `i` rooted a new path that just drained it.
                if self.tree_residual(a, !in_sink) > 0 {
                    self.set_active(j);
                }
                continue;
            }
            if self.tree_residual(a, in_sink) > 0 {
                self.set_active(j);
            }
            if nj.parent != TERMINAL && nj.parent != ORPHAN && self.head(nj.parent) == i {
                self.set_orphan(j);
            }
        }
    }

    /// Advances the clock. Before it would wrap, every tree node's distance is recomputed exactly
    /// and stamped with time 1, which keeps the timestamp/distance invariant intact.
    fn tick(&mut self) {
        if self.time < u32::MAX - 1 {
            self.time += 1;
            return;
        }
        for node in self.nodes.iter_mut() {
            node.ts = 0;
        }
        self.time = 1;
        for v in 0..self.nodes.len() as u32 - 1 {
            if self.nodes[v as usize].parent == NONE {
                continue;
            }
            // Count to the first stamped node (or the terminal), then stamp the path.
            let mut d = 0;
            let mut k = v;
            loop {
                let nk = self.nodes[k as usize];
                if nk.ts == 1 {
                    d += nk.dist;
                    break;
                }
                d += 1;
                if nk.parent == TERMINAL {
                    break;
                }
                k = self.head(nk.parent);
            }
            let mut k = v;
            while self.nodes[k as usize].ts != 1 {
                let nk = &mut self.nodes[k as usize];
                nk.ts = 1;
                nk.dist = d;
                d -= 1;
                if nk.parent == TERMINAL {
                    break;
                }
                k = self.arcs[nk.parent as usize].head;
            }
        }
        self.time = 2;
    }

    /// The canonical cut after the last round: the nodes that can reach the sink in the residual
    /// graph, which at this point are exactly the nodes of T.
    ///
    /// With no active node left, T is closed under incoming residual arcs: a node outside T
    /// with a residual arc into T would have been claimed by growth (if free) or would close an
    /// augmenting path (if in S). So nothing outside T reaches the sink, while every T node
    /// does, along its parent arcs. This equals [`sink_reachable`](super::sink_reachable) on the
    /// final residuals (the unit tests check it on thousands of graphs) but costs one pass over
    /// the nodes instead of a search through every sink-side arc.
    fn sink_side(&self) -> Vec<bool> {
        let n = self.nodes.len() - 1;
        let sink_side: Vec<bool> = self.nodes[..n]
            .iter()
            .map(|node| node.is_sink && node.parent != NONE)
            .collect();
        debug_assert!(
            (0..n as u32)
                .filter(|&v| !sink_side[v as usize])
                .all(|v| self
                    .arcs_of(v)
                    .all(|a| self.arcs[a].rcap == 0 || !sink_side[self.arcs[a].head as usize])),
            "a node outside T has a residual arc into T"
        );
        sink_side
    }

    /// The main loop: grow from the active nodes in FIFO order; each time the trees touch,
    /// augment and adopt, then keep growing from the same node (it may have more paths).
    fn search(&mut self) {
        let mut current = NONE;
        loop {
            let i = if current != NONE && self.nodes[current as usize].parent != NONE {
                current
            } else {
                match self.next_active() {
                    Some(i) => i,
                    None => break,
                }
            };
            current = NONE;
            let Some(mid) = self.grow(i) else {
                continue;
            };
            // Hold i as the current node: marking it queued keeps adoption from queuing it.
            self.nodes[i as usize].next_active = i;
            self.tick();
            self.augment(mid);
            self.adopt_orphans();
            self.nodes[i as usize].next_active = NONE;
            current = i;
        }
    }
}

/// Warm starts (dynamic graph cuts): after a solve, new terminal capacities are applied to the
/// kept search trees and residual graph, and the search continues from there.
///
/// P. Kohli and P. H. S. Torr, *Dynamic Graph Cuts for Efficient Inference in Markov Random
/// Fields*, IEEE TPAMI 29(12), 2007. Their reparameterisation, on BK's folded terminal residual:
///
/// - a node's residual `tr_cap` is `(source − sink) − out`, where `out` is the net flow the node
///   sends into its arcs; `out` stays, so new capacities give `tr_cap + Δsource − Δsink`;
/// - where a terminal residual would turn negative (the node sends more into its arcs than its
///   new source capacity allows, or receives more than its new sink capacity takes), adding the
///   same constant `k` to both terminal capacities restores feasibility: every s–t cut cuts
///   exactly one of the two arcs, so every cut grows by `k` and the minimum cut stays. The folded
///   `tr_cap` is the same with or without `k`, so nothing is stored for it; only the flow value
///   needs the bookkeeping below;
/// - the flow value is the flow into the sink. With `k` added it is `Σ (sink + k − r_t)`, `r_t`
///   the residual sink capacity `max(−tr_cap, 0)`; the graph without `k` has `Σ k` less, so the
///   value is `Σ (sink − r_t)` either way, and a node's change moves it by
///   `Δsink − Δr_t`.
///
/// The trees are then repaired as BK's dynamic mode does, keeping the invariants of the module
/// head: a node with `tr_cap > 0` is a root of S and one with `tr_cap < 0` a root of T (that is
/// what `augment` reads the terminal bottleneck from), a root whose residual vanished is an
/// orphan, a node that changes trees orphans its children in the old one, and every changed node
/// is active, so the search ends in the same closed state as a solve from scratch and
/// [`sink_side`](Bk::sink_side) is again the canonical cut.
impl Bk {
    /// Starts a batch of [`reparameterize`](Bk::reparameterize) calls: advances the clock, so the
    /// roots the batch stamps are newer than every stamp in the trees (the timestamp/distance
    /// invariant), and clears the counters.
    pub(crate) fn begin_update(&mut self) {
        self.stats = BkStats::default();
        self.tick();
    }

    /// Node `v`'s source capacity changes by `d_source` and its sink capacity by `d_sink`.
    /// Fails (changing nothing) when the new folded residual would not fit a [`Cap`]; the
    /// caller then solves from scratch.
    pub(crate) fn reparameterize(&mut self, v: u32, d_source: Cap, d_sink: Cap) -> Result<()> {
        let node = self.nodes[v as usize];
        let old = node.tr_cap;
        let new = Cap::try_from(old as i64 + d_source as i64 - d_sink as i64).map_err(|_| {
            Error::Overflow(format!(
                "node {v}: its terminal residual after the update exceeds i32"
            ))
        })?;
        let r_sink = |tr: Cap| (-(tr as i64)).max(0);
        self.flow += d_sink as Flow - (r_sink(new) - r_sink(old));
        self.nodes[v as usize].tr_cap = new;
        if new == 0 {
            // A root without its terminal residual looks for a new parent, as after an
            // augmentation that saturated it.
            if node.parent == TERMINAL {
                self.set_orphan(v);
            }
            return Ok(());
        }
        let sink = new < 0;
        if node.parent != NONE && node.is_sink != sink {
            // Leaving its tree: the children hanging below it lose their root path.
            for a in self.arcs_of(v) {
                let j = self.arcs[a].head;
                let nj = self.nodes[j as usize];
                if nj.is_sink == node.is_sink
                    && nj.parent != NONE
                    && nj.parent != TERMINAL
                    && nj.parent != ORPHAN
                    && self.head(nj.parent) == v
                {
                    self.set_orphan(j);
                }
            }
        }
        let time = self.time;
        let node = &mut self.nodes[v as usize];
        node.parent = TERMINAL;
        node.is_sink = sink;
        node.ts = time;
        node.dist = 1;
        self.set_active(v);
        Ok(())
    }

    /// Ends a batch: adopts the orphans it made, continues the search to the end, and returns
    /// the canonical cut of the updated graph (`constant`: its direct source → sink flow).
    pub(crate) fn finish_update(&mut self, constant: Flow) -> Result<Cut> {
        self.adopt_orphans();
        self.search();
        self.cut(constant)
    }
}

impl Bk {
    /// The cut after the search, adding the graph's direct source → sink flow.
    fn cut(&self, constant: Flow) -> Result<Cut> {
        let flow = self
            .flow
            .checked_add(constant)
            .ok_or_else(|| Error::Overflow("flow value exceeds i64".into()))?;
        Ok(Cut {
            flow,
            sink_side: self.sink_side(),
        })
    }

    /// BK ends with a flow, not a preflow: the flows are read off the residuals. Grids go
    /// through their CSR form here (flows are the rare request; the cut path stays direct).
    fn run_flows(&mut self, g: GraphRef<'_>) -> Result<Solved> {
        let t = Instant::now();
        let csr = g.to_csr()?;
        self.init_csr(&csr)?;
        let build = t.elapsed();
        self.search();
        let cut = self.cut(csr.constant_flow())?;
        let mut flows = self.flows(&csr, cut.flow);
        if let GraphRef::Grid(grid) = g {
            flows = flows.csr_to_grid(grid, &csr)?;
        }
        let mut s = Solved::new(cut, SolverKind::Bk);
        s.flows = Some(flows);
        s.stats.build = build;
        Ok(s)
    }
}

/// Bytes [`Bk`] needs to solve a graph of `nodes` nodes and `arcs` arcs (each direction of a
/// pair counted): 28 per node record, 4 per node for a grid's arc masks, up to 4 per node in the
/// orphan queue and 1 for the cut; 12 per arc (head, reverse arc, residual). The graph itself is
/// not included. Saturates instead of overflowing.
///
/// ```
/// assert_eq!(segcut::maxflow::bk::memory_needed(10, 40), (10 + 1) * 37 + 40 * 12);
/// ```
pub fn memory_needed(nodes: u64, arcs: u64) -> u64 {
    nodes
        .saturating_add(1)
        .saturating_mul(37)
        .saturating_add(arcs.saturating_mul(12))
}

/// Room for exactly `n` values in the (cleared) `v`, reserved fallibly: BK's arrays are the
/// largest allocations of a segmentation, sized by the input, and a failure must be an error.
fn reserve_exact<T>(v: &mut Vec<T>, n: usize, what: &str) -> Result<()> {
    crate::io::try_reserve(v, n.saturating_sub(v.len()), what)
}

impl Solver for Bk {
    fn kind(&self) -> SolverKind {
        SolverKind::Bk
    }

    /// Grids are solved without building their CSR form: same arcs, same search, same result.
    /// Building BK's arcs counts as build time; the search and the cut as solve time.
    fn run(&mut self, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
        timed(|| {
            if flows {
                return self.run_flows(g);
            }
            let t = Instant::now();
            let constant = match g {
                GraphRef::Grid(grid) => {
                    self.init_grid(grid)?;
                    0
                }
                GraphRef::Csr(csr) => {
                    self.init_csr(csr)?;
                    csr.constant_flow()
                }
            };
            let build = t.elapsed();
            self.search();
            let mut s = Solved::new(self.cut(constant)?, SolverKind::Bk);
            s.stats.build = build;
            Ok(s)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{CsrBuilder, Vertex};
    use crate::maxflow::sink_reachable;
    use crate::rng::Rng;

    /// The sink side by the plain definition: a reverse search from every node with residual
    /// capacity to the sink through the whole final residual graph.
    fn residual_sink_side(bk: &Bk, g: &CsrGraph) -> Vec<bool> {
        let seeds = bk.nodes[..g.num_nodes()]
            .iter()
            .map(|n| n.tr_cap < 0)
            .collect();
        let rcap: Vec<Cap> = bk.arcs.iter().map(|a| a.rcap).collect();
        sink_reachable(g.first(), g.heads(), g.sisters(), &rcap, seeds)
    }

    fn random_graph(rng: &mut Rng) -> CsrGraph {
        let n = rng.below(30) as u32 + 1;
        let mut b = CsrBuilder::new(n as usize).unwrap();
        let cap = |rng: &mut Rng| {
            if rng.below(3) == 0 {
                0
            } else {
                rng.below(6) as Cap
            }
        };
        for _ in 0..rng.below(4 * n as u64) {
            let (u, v) = (rng.below(n as u64) as u32, rng.below(n as u64) as u32);
            let (c, r) = (cap(rng), cap(rng));
            b.add_edge(u, v, c, r).unwrap();
        }
        for v in 0..n {
            let (s, t) = (cap(rng), cap(rng));
            b.add_terminals(v, s, t).unwrap();
        }
        b.add_arc(Vertex::Source, Vertex::Sink, cap(rng)).unwrap();
        b.build().unwrap()
    }

    #[test]
    fn tree_based_cut_is_the_residual_reachability_cut() {
        let mut rng = Rng::new(1);
        let mut bk = Bk::default();
        let mut free_nodes_seen = 0;
        for _ in 0..3000 {
            let g = random_graph(&mut rng);
            let cut = bk.solve_csr(&g).unwrap();
            assert_eq!(cut.sink_side, residual_sink_side(&bk, &g));
            free_nodes_seen += bk.nodes[..g.num_nodes()]
                .iter()
                .filter(|n| n.parent == NONE)
                .count();
        }
        // The search over free nodes must have had work to do.
        assert!(free_nodes_seen > 100, "only {free_nodes_seen} free nodes");
    }

    #[test]
    fn clock_wrap_keeps_the_answer() {
        let mut rng = Rng::new(2);
        let mut wrapped = 0;
        for _ in 0..200 {
            let g = random_graph(&mut rng);
            let expected = Bk::default().solve_csr(&g).unwrap();
            // Start the clock just before it wraps: tick() must restamp, not overflow.
            let mut bk = Bk::default();
            bk.init_csr(&g).unwrap();
            bk.time = u32::MAX - 3;
            bk.search();
            if bk.time < 100 {
                wrapped += 1;
            }
            assert_eq!(bk.flow + g.constant_flow(), expected.flow);
            assert_eq!(residual_sink_side(&bk, &g), expected.sink_side);
        }
        assert!(wrapped > 10, "the clock wrapped only {wrapped} times");
    }

    #[test]
    fn grid_layout_is_the_csr_layout() {
        use crate::graph::Connectivity;
        let mut rng = Rng::new(3);
        for (k, conn) in [
            Connectivity::N4,
            Connectivity::N8,
            Connectivity::N6,
            Connectivity::N26,
        ]
        .into_iter()
        .cycle()
        .take(80)
        .enumerate()
        {
            let depth = if conn.is_3d() { 1 + k % 3 } else { 1 };
            let mut g = GridGraph::new(1 + k % 5, 1 + k % 4, depth, conn).unwrap();
            for d in 0..conn.degree() {
                for v in 0..g.num_nodes() {
                    if g.neighbor(v, d).is_some() && rng.below(3) > 0 {
                        g.caps_mut(d)[v] = rng.below(4) as Cap;
                    }
                }
            }
            for v in 0..g.num_nodes() {
                g.set_terminals(v, rng.below(5) as Cap, rng.below(5) as Cap);
            }
            let (mut from_grid, mut from_csr) = (Bk::default(), Bk::default());
            from_grid.init_grid(&g).unwrap();
            from_csr.init_csr(&g.to_csr().unwrap()).unwrap();
            let firsts = |bk: &Bk| bk.nodes.iter().map(|n| n.first).collect::<Vec<_>>();
            let arcs = |bk: &Bk| {
                bk.arcs
                    .iter()
                    .map(|a| (a.head, a.sister, a.rcap))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                firsts(&from_grid),
                firsts(&from_csr),
                "{conn} {:?}",
                g.dims()
            );
            assert_eq!(arcs(&from_grid), arcs(&from_csr), "{conn} {:?}", g.dims());
        }
    }
}

#[cfg(test)]
mod warm_tests {
    use super::*;
    use crate::graph::CsrBuilder;
    use crate::maxflow::sink_reachable;
    use crate::rng::Rng;

    /// Warm updates of random general graphs (CSR, built up to terminal capacities we choose)
    /// against solves from scratch: same flow, and the tree cut is the residual search's cut.
    #[test]
    fn warm_updates_match_scratch() {
        let mut rng = Rng::new(7);
        for case in 0..3000 {
            let n = rng.below(8) as u32 + 1;
            let mut edges = Vec::new();
            for _ in 0..rng.below(3 * n as u64) {
                let (u, v) = (rng.below(n as u64) as u32, rng.below(n as u64) as u32);
                edges.push((u, v, rng.below(5) as Cap, rng.below(5) as Cap));
            }
            let build = |terms: &[(Cap, Cap)]| {
                let mut b = CsrBuilder::new(n as usize).unwrap();
                for &(u, v, c, r) in &edges {
                    b.add_edge(u, v, c, r).unwrap();
                }
                for (v, &(s, t)) in terms.iter().enumerate() {
                    b.add_terminals(v as u32, s, t).unwrap();
                }
                b.build().unwrap()
            };
            let random_terms = |rng: &mut Rng| {
                (0..n)
                    .map(|_| (rng.below(5) as Cap, rng.below(5) as Cap))
                    .collect::<Vec<_>>()
            };
            let mut terms = random_terms(&mut rng);
            let g = build(&terms);
            let mut bk = Bk::default();
            bk.solve_csr(&g).unwrap();
            for round in 0..4 {
                let new_terms = random_terms(&mut rng);
                let g = build(&new_terms);
                bk.begin_update();
                for v in 0..n as usize {
                    let (ds, dt) = (new_terms[v].0 - terms[v].0, new_terms[v].1 - terms[v].1);
                    bk.reparameterize(v as u32, ds, dt).unwrap();
                }
                let cut = bk.finish_update(g.constant_flow()).unwrap();
                let scratch = Bk::default().solve_csr(&g).unwrap();
                let seeds = bk.nodes[..g.num_nodes()]
                    .iter()
                    .map(|n| n.tr_cap < 0)
                    .collect();
                let rcap: Vec<Cap> = bk.arcs.iter().map(|a| a.rcap).collect();
                let residual = sink_reachable(g.first(), g.heads(), g.sisters(), &rcap, seeds);
                assert_eq!(
                    residual, cut.sink_side,
                    "case {case} round {round}: tree cut"
                );
                assert_eq!(
                    (cut.flow, &cut.sink_side),
                    (scratch.flow, &scratch.sink_side),
                    "case {case} round {round}: {edges:?} {terms:?} -> {new_terms:?}"
                );
                terms = new_terms;
            }
        }
    }
}
