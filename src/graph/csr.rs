//! The general graph: arcs in pairs, stored as a CSR by tail.

use super::{Cap, Flow, FlowNetwork, MAX_NODES};
use crate::{Error, Result};

/// One end of an arc given to [`CsrBuilder::add_arc`]: a terminal or a node index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vertex {
    /// The source terminal s.
    Source,
    /// The sink terminal t.
    Sink,
    /// Non-terminal node `0..n`.
    Node(u32),
}

/// Any graph with terminal capacities: arcs sorted by tail, each paired with its reverse.
///
/// Arc `a` goes from the node whose range [`arcs_of`](Self::arcs_of) contains it to
/// `heads()[a]` with capacity `caps()[a]`; `sisters()[a]` is its reverse arc (which may have
/// capacity zero). Parallel and antiparallel pairs are allowed.
///
/// ```
/// use segcut::graph::{CsrBuilder, Vertex};
/// let mut b = CsrBuilder::new(2).unwrap();
/// b.add_arc(Vertex::Source, Vertex::Node(0), 4).unwrap();
/// b.add_edge(0, 1, 3, 1).unwrap();
/// b.add_arc(Vertex::Node(1), Vertex::Sink, 5).unwrap();
/// let g = b.build().unwrap();
/// assert_eq!(g.num_arcs(), 2);
/// let a = g.arcs_of(0).start;
/// assert_eq!((g.heads()[a], g.caps()[a]), (1, 3));
/// assert_eq!(g.caps()[g.sisters()[a] as usize], 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsrGraph {
    first: Vec<u32>,
    head: Vec<u32>,
    sister: Vec<u32>,
    cap: Vec<Cap>,
    source: Vec<Cap>,
    sink: Vec<Cap>,
    constant: Flow,
}

/// The arrays of a [`CsrGraph`], as [`CsrGraph::from_parts`] takes them (and a binary graph
/// file stores them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CsrParts {
    /// `n + 1` offsets: node `v`'s arcs are `first[v]..first[v + 1]`.
    pub first: Vec<u32>,
    /// Each arc's head.
    pub head: Vec<u32>,
    /// Each arc's reverse arc.
    pub sister: Vec<u32>,
    /// Each arc's capacity.
    pub cap: Vec<Cap>,
    /// Each node's source capacity.
    pub source: Vec<Cap>,
    /// Each node's sink capacity.
    pub sink: Vec<Cap>,
    /// Flow on direct source → sink arcs.
    pub constant: Flow,
}

impl CsrGraph {
    /// A graph from its arrays, checked: offsets that rise from 0 to the arc count, heads and
    /// sisters in range, every arc's sister pointing back with swapped ends, capacities
    /// non-negative with each pair's sum within `Cap`. Untrusted arrays (a binary graph file)
    /// give an error, never a graph that breaks a solver.
    ///
    /// ```
    /// use segcut::graph::{CsrBuilder, CsrGraph};
    /// let mut b = CsrBuilder::new(2).unwrap();
    /// b.add_edge(0, 1, 3, 1).unwrap();
    /// let g = b.build().unwrap();
    /// let back = CsrGraph::from_parts(g.to_parts()).unwrap();
    /// assert_eq!(back, g);
    /// let mut bad = g.to_parts();
    /// bad.sister[0] = 0;
    /// assert!(CsrGraph::from_parts(bad).is_err());
    /// ```
    pub fn from_parts(p: CsrParts) -> Result<Self> {
        let bad = |msg: String| Err(Error::Graph(msg));
        let n = p.source.len();
        let m = p.head.len();
        if n > MAX_NODES || m > (u32::MAX - 16) as usize {
            return bad(format!("{n} nodes and {m} arcs exceed the 32-bit index"));
        }
        if p.sink.len() != n || p.first.len() != n + 1 || p.sister.len() != m || p.cap.len() != m {
            return bad("array lengths disagree".into());
        }
        // Every pass on every core: a loaded graph is checked at the speed it is read.
        use rayon::prelude::*;
        if p.first[0] != 0
            || p.first[n] as usize != m
            || p.first.par_windows(2).any(|w| w[0] > w[1])
        {
            return bad("arc offsets do not rise from 0 to the arc count".into());
        }
        if p.constant < 0 || p.source.par_iter().chain(&p.sink).any(|&c| c < 0) {
            return bad("negative terminal capacity".into());
        }
        // Each pair is checked from its lower arc only (the random reads into the other arc
        // are most of the check's time): the lower arc's reverse must point back, join the same
        // nodes the other way and fit the pair's capacity. Every arc then belongs to a checked
        // pair once exactly half of the arcs are lower arcs: the checked reverses are distinct
        // (each points back to its own arc), so they are all the upper arcs.
        let check = |v: usize| -> std::result::Result<(), String> {
            for a in p.first[v] as usize..p.first[v + 1] as usize {
                let (h, s) = (p.head[a] as usize, p.sister[a] as usize);
                if h >= n || s >= m || s == a {
                    return Err(format!("arc {a}: head or reverse arc out of place"));
                }
                if p.cap[a] < 0 {
                    return Err(format!("arc {a}: capacity out of range"));
                }
                if s < a {
                    continue; // checked from `s`, or caught by the count below
                }
                if p.sister[s] as usize != a {
                    return Err(format!("arc {a}: head or reverse arc out of place"));
                }
                // The reverse must leave the head and come back to `v`.
                if !(p.first[h] as usize..p.first[h + 1] as usize).contains(&s)
                    || p.head[s] as usize != v
                {
                    return Err(format!("arc {a}: its reverse does not join the same nodes"));
                }
                if p.cap[a] as i64 + p.cap[s] as i64 > Cap::MAX as i64 {
                    return Err(format!("arc {a}: capacity out of range"));
                }
            }
            Ok(())
        };
        // Nodes checked on every core; the first bad node in order is reported, as a serial
        // check would.
        let first_bad = (0..n)
            .into_par_iter()
            .with_min_len(1 << 12)
            .find_first(|&v| check(v).is_err());
        if let Some(Err(msg)) = first_bad.map(check) {
            return bad(msg);
        }
        let lower = p
            .sister
            .par_iter()
            .enumerate()
            .filter(|&(a, &s)| s as usize > a)
            .count();
        if 2 * lower != m {
            return bad(
                "some arc is the reverse of two arcs: the reverse arcs do not pair up".into(),
            );
        }
        Ok(CsrGraph {
            first: p.first,
            head: p.head,
            sister: p.sister,
            cap: p.cap,
            source: p.source,
            sink: p.sink,
            constant: p.constant,
        })
    }

    /// The graph's arrays (a copy), for [`from_parts`](Self::from_parts).
    pub fn to_parts(&self) -> CsrParts {
        CsrParts {
            first: self.first.clone(),
            head: self.head.clone(),
            sister: self.sister.clone(),
            cap: self.cap.clone(),
            source: self.source.clone(),
            sink: self.sink.clone(),
            constant: self.constant,
        }
    }

    /// Number of non-terminal nodes.
    pub fn num_nodes(&self) -> usize {
        self.source.len()
    }

    /// Number of arcs (twice the number of pairs).
    pub fn num_arcs(&self) -> usize {
        self.head.len()
    }

    /// The arcs leaving node `v`, as a range of arc indices.
    #[inline]
    pub fn arcs_of(&self, v: usize) -> std::ops::Range<usize> {
        self.first[v] as usize..self.first[v + 1] as usize
    }

    /// Offsets of each node's arcs (`n + 1` entries).
    pub fn first(&self) -> &[u32] {
        &self.first
    }

    /// Head node of each arc.
    pub fn heads(&self) -> &[u32] {
        &self.head
    }

    /// Reverse arc of each arc.
    pub fn sisters(&self) -> &[u32] {
        &self.sister
    }

    /// Capacity of each arc.
    pub fn caps(&self) -> &[Cap] {
        &self.cap
    }

    /// Source capacities (s → v), one per node.
    pub fn source_caps(&self) -> &[Cap] {
        &self.source
    }

    /// Sink capacities (v → t), one per node.
    pub fn sink_caps(&self) -> &[Cap] {
        &self.sink
    }

    /// Total capacity of direct source → sink arcs: flow that every solution carries.
    pub fn constant_flow(&self) -> Flow {
        self.constant
    }

    /// The tail of every arc, computed from the offsets (handy for arc-parallel code).
    pub fn tails(&self) -> Vec<u32> {
        let mut t = vec![0u32; self.num_arcs()];
        for v in 0..self.num_nodes() {
            for a in self.arcs_of(v) {
                t[a] = v as u32;
            }
        }
        t
    }
}

impl FlowNetwork for CsrGraph {
    fn num_nodes(&self) -> usize {
        CsrGraph::num_nodes(self)
    }

    fn num_arcs(&self) -> usize {
        CsrGraph::num_arcs(self)
    }

    fn cut_capacity(&self, sink_side: &[bool]) -> i128 {
        let mut total = self.constant as i128;
        for v in 0..self.num_nodes() {
            if sink_side[v] {
                total += self.source[v] as i128;
            } else {
                total += self.sink[v] as i128;
                for a in self.arcs_of(v) {
                    if sink_side[self.head[a] as usize] {
                        total += self.cap[a] as i128;
                    }
                }
            }
        }
        total
    }
}

/// The new parts of a [`CsrBuilder`]'s pair arrays (see `CsrBuilder::append_pairs`).
pub(crate) struct PairParts<'a> {
    pub tail: &'a mut [u32],
    pub head: &'a mut [u32],
    pub cap: &'a mut [Cap],
    pub rev: &'a mut [Cap],
}

/// Collects arcs and terminal capacities, then sorts them into a [`CsrGraph`].
///
/// Every addition is checked: node indices in range, capacities non-negative, a pair's two
/// capacities summing to at most `i32::MAX`, and each node's summed terminal capacity within
/// `i32`. Self loops, arcs into the source and arcs out of the sink carry no flow in any maximum
/// flow and are dropped (counted in [`dropped`](Self::dropped)).
#[derive(Clone, Debug, Default)]
pub struct CsrBuilder {
    n: usize,
    tail: Vec<u32>,
    head: Vec<u32>,
    cap: Vec<Cap>,
    rev: Vec<Cap>,
    /// Summed terminal capacities, each kept within `Cap::MAX` as it grows (so they are the
    /// graph's arrays as they are: 4 bytes a node, handed on without a copy).
    source: Vec<Cap>,
    sink: Vec<Cap>,
    constant: Flow,
    dropped: u64,
}

impl CsrBuilder {
    /// A builder for `n` non-terminal nodes.
    pub fn new(n: usize) -> Result<Self> {
        Self::with_capacity_checked(n, 0)
    }

    /// A builder for `n` nodes with room for `pairs` arc pairs.
    ///
    /// # Panics
    /// If `n` exceeds [`MAX_NODES`]; use [`new`](Self::new) for a checked start.
    pub fn with_capacity(n: usize, pairs: usize) -> Self {
        Self::with_capacity_checked(n, pairs).expect("node count within MAX_NODES")
    }

    fn with_capacity_checked(n: usize, pairs: usize) -> Result<Self> {
        if n > MAX_NODES {
            return Err(Error::Graph(format!(
                "{n} nodes is more than the {MAX_NODES} supported"
            )));
        }
        Ok(CsrBuilder {
            n,
            tail: Vec::with_capacity(pairs),
            head: Vec::with_capacity(pairs),
            cap: Vec::with_capacity(pairs),
            rev: Vec::with_capacity(pairs),
            // Allocated at the first terminal arc: a reader that moves the arcs elsewhere (the
            // DIMACS reader's grid placement) never pays for them.
            source: Vec::new(),
            sink: Vec::new(),
            constant: 0,
            dropped: 0,
        })
    }

    /// Number of non-terminal nodes.
    pub fn num_nodes(&self) -> usize {
        self.n
    }

    /// Number of arc pairs added so far.
    pub fn num_pairs(&self) -> usize {
        self.head.len()
    }

    /// Arcs dropped because they can carry no flow (self loops, into s, out of t).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn check_node(&self, v: u32) -> Result<()> {
        if (v as usize) < self.n {
            Ok(())
        } else {
            Err(Error::Graph(format!(
                "node index {v} out of range (graph has {} nodes)",
                self.n
            )))
        }
    }

    fn check_cap(cap: Cap) -> Result<()> {
        if cap < 0 {
            Err(Error::Graph(format!("negative capacity {cap}")))
        } else {
            Ok(())
        }
    }

    /// Adds the pair `u → v` (capacity `cap`) and `v → u` (capacity `rev_cap`).
    /// A self loop (`u == v`) is dropped.
    pub fn add_edge(&mut self, u: u32, v: u32, cap: Cap, rev_cap: Cap) -> Result<()> {
        self.check_node(u)?;
        self.check_node(v)?;
        Self::check_cap(cap)?;
        Self::check_cap(rev_cap)?;
        if u == v {
            self.dropped += 1;
            return Ok(());
        }
        if cap as i64 + rev_cap as i64 > Cap::MAX as i64 {
            return Err(Error::Overflow(format!(
                "arc pair {u} ↔ {v}: capacities {cap} + {rev_cap} exceed {}",
                Cap::MAX
            )));
        }
        if 2 * (self.head.len() + 1) > (u32::MAX - 16) as usize {
            return Err(Error::Graph(
                "more arcs than the 32-bit arc index supports".into(),
            ));
        }
        if self.head.len() == self.head.capacity() {
            self.grow()?;
        }
        self.tail.push(u);
        self.head.push(v);
        self.cap.push(cap);
        self.rev.push(rev_cap);
        Ok(())
    }

    /// Doubles the room for arc pairs with `try_reserve`, so that running out of memory (a
    /// compressed file of a billion arcs) is an error rather than an abort.
    #[cold]
    fn grow(&mut self) -> Result<()> {
        let len = self.head.len();
        let more = len.max(1024);
        let fail = |_| {
            Error::Graph(format!(
                "out of memory growing the arc arrays past {len} arc pairs"
            ))
        };
        self.tail.try_reserve(more).map_err(fail)?;
        self.head.try_reserve(more).map_err(fail)?;
        self.cap.try_reserve(more).map_err(fail)?;
        self.rev.try_reserve(more).map_err(fail)
    }

    /// Adds capacity to node `v`'s source and sink arcs.
    pub fn add_terminals(&mut self, v: u32, source: Cap, sink: Cap) -> Result<()> {
        self.add_arc(Vertex::Source, Vertex::Node(v), source)?;
        self.add_arc(Vertex::Node(v), Vertex::Sink, sink)
    }

    /// Adds one arc between any two vertices, terminals included: s → v adds to `v`'s source
    /// capacity, v → t to its sink capacity, s → t to the constant flow; an arc into s, out of t,
    /// or a self loop is dropped; u → v becomes a pair with a zero-capacity reverse.
    pub fn add_arc(&mut self, from: Vertex, to: Vertex, cap: Cap) -> Result<()> {
        Self::check_cap(cap)?;
        match (from, to) {
            (Vertex::Source, Vertex::Node(v)) => {
                self.check_node(v)?;
                if self.source.is_empty() {
                    self.source = crate::io::try_vec(self.n, 0, "the graph's source capacities")?;
                }
                let s = &mut self.source[v as usize];
                let sum = i64::from(*s) + i64::from(cap);
                if sum > Cap::MAX as i64 {
                    return Err(Error::Overflow(format!(
                        "node {v}: total source capacity {sum} exceeds {}",
                        Cap::MAX
                    )));
                }
                *s = sum as Cap;
            }
            (Vertex::Node(u), Vertex::Sink) => {
                self.check_node(u)?;
                if self.sink.is_empty() {
                    self.sink = crate::io::try_vec(self.n, 0, "the graph's sink capacities")?;
                }
                let t = &mut self.sink[u as usize];
                let sum = i64::from(*t) + i64::from(cap);
                if sum > Cap::MAX as i64 {
                    return Err(Error::Overflow(format!(
                        "node {u}: total sink capacity {sum} exceeds {}",
                        Cap::MAX
                    )));
                }
                *t = sum as Cap;
            }
            (Vertex::Source, Vertex::Sink) => {
                self.constant = self.constant.checked_add(cap as i64).ok_or_else(|| {
                    Error::Overflow("total source → sink capacity exceeds i64".into())
                })?;
            }
            (Vertex::Node(u), Vertex::Node(v)) => self.add_edge(u, v, cap, 0)?,
            (_, Vertex::Source) | (Vertex::Sink, _) => self.dropped += 1,
        }
        Ok(())
    }

    /// Room for `extra` more pairs at the end of the four arrays, zeroed on every core, for a
    /// reader that fills them on many threads (each its own part, in pair order): the new parts
    /// of tails, heads, capacities and reverse capacities. Refused (nothing added) past the
    /// 32-bit arc index or where the memory cannot be had; the caller then adds the pairs one by
    /// one with [`add_edge`](Self::add_edge), which says which.
    pub(crate) fn append_pairs(&mut self, extra: usize) -> Option<PairParts<'_>> {
        use rayon::prelude::*;
        let len = self.head.len();
        let total = len.checked_add(extra)?;
        if total > 0 && 2 * total > (u32::MAX - 16) as usize {
            return None;
        }
        self.tail.try_reserve(extra).ok()?;
        self.head.try_reserve(extra).ok()?;
        self.cap.try_reserve(extra).ok()?;
        self.rev.try_reserve(extra).ok()?;
        // The four in one round of work on every core (a reader calls this once per batch).
        let zeros = |v: &mut Vec<u32>| v.par_extend(rayon::iter::repeat_n(0, extra));
        let zeros_cap = |v: &mut Vec<Cap>| v.par_extend(rayon::iter::repeat_n(0, extra));
        let (tail, head, cap, rev) = (&mut self.tail, &mut self.head, &mut self.cap, &mut self.rev);
        rayon::join(
            || rayon::join(|| zeros(tail), || zeros(head)),
            || rayon::join(|| zeros_cap(cap), || zeros_cap(rev)),
        );
        Some(PairParts {
            tail: &mut self.tail[len..],
            head: &mut self.head[len..],
            cap: &mut self.cap[len..],
            rev: &mut self.rev[len..],
        })
    }

    /// The summed source and sink capacities of every node, allocated if they are not yet
    /// (`None` where the memory cannot be had), for a reader that adds to them on many threads.
    /// The sums must stay within `Cap::MAX`, as [`add_arc`](Self::add_arc) checks.
    pub(crate) fn terminal_sums_mut(&mut self) -> Option<(&mut [Cap], &mut [Cap])> {
        for t in [&mut self.source, &mut self.sink] {
            if t.is_empty() {
                *t = try_zeroed(self.n).ok()?;
            }
        }
        Some((&mut self.source, &mut self.sink))
    }

    /// Adds to the constant flow and the dropped arcs what a reader found on its own (see
    /// [`append_pairs`](Self::append_pairs)); false, with nothing changed, if the constant
    /// would pass `i64`.
    pub(crate) fn add_counts(&mut self, constant: Flow, dropped: u64) -> bool {
        match self.constant.checked_add(constant) {
            Some(c) => {
                self.constant = c;
                self.dropped += dropped;
                true
            }
            None => false,
        }
    }

    /// The arc pairs added so far, in order: tails, heads, capacities and reverse capacities.
    pub(crate) fn pairs(&self) -> (&[u32], &[u32], &[Cap], &[Cap]) {
        (&self.tail, &self.head, &self.cap, &self.rev)
    }

    /// The summed source and sink capacities so far, taken out of the builder (empty where no
    /// terminal arc came): for a reader that moves the arcs into a grid.
    pub(crate) fn take_terminal_sums(&mut self) -> (Vec<Cap>, Vec<Cap>) {
        (
            std::mem::take(&mut self.source),
            std::mem::take(&mut self.sink),
        )
    }

    /// The summed capacity of source → sink arcs so far.
    pub(crate) fn constant(&self) -> Flow {
        self.constant
    }

    /// Sorts the arcs by tail (a counting sort, stable: a node's arcs keep the order in which
    /// their pairs were added) and returns the graph. Every step runs on every core and reads
    /// each pair or arc once in all: the arcs sorted into buckets of nodes, each bucket sorted
    /// by node on its own, then capacities, reverse links and heads placed. At its peak it
    /// holds 32 bytes a pair against the graph's 24.
    pub fn build(self) -> Result<CsrGraph> {
        Ok(self.build_inner(None::<fn(&[u32], u64)>)?.0)
    }

    /// [`build`](Self::build), with the arcs' id offsets counted on the way (in the pass that
    /// counts degrees, for a reader that looks for a grid in a file without a hint):
    /// `summarize` is given, for each offset `k` below the node count, how many arcs with
    /// capacity join nodes `k` apart, and their total, and what it makes of them is returned
    /// with the graph. The counts (4 bytes a node) are let go right after it, before the
    /// arrays of the scatter are had, where the build's memory peaks.
    pub(crate) fn build_counting_offsets<S>(
        self,
        summarize: impl FnOnce(&[u32], u64) -> S,
    ) -> Result<(CsrGraph, S)> {
        let (g, summary) = self.build_inner(Some(summarize))?;
        Ok((g, summary.expect("asked for")))
    }

    fn build_inner<S>(
        self,
        summarize: Option<impl FnOnce(&[u32], u64) -> S>,
    ) -> Result<(CsrGraph, Option<S>)> {
        use rayon::prelude::*;
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.n;
        let pairs = self.head.len();
        let m = 2 * pairs;
        const CHUNK: usize = 1 << 16;
        // A counting sort in two levels, each pass touching each pair or arc once in all,
        // whatever the thread count (owners of node ranges that each read every pair, as
        // before, paid the whole read once per thread and stopped scaling at about 9x):
        // 1. the arcs are sorted into buckets of `2^shift` nodes (stable: by pair, chunks of
        //    pairs in order), each bucket's refs (`2i` for pair `i`'s arc tail -> head, `2i + 1`
        //    for its reverse) and their tails side by side;
        // 2. each bucket's arcs are sorted by node within it, giving each ref its place;
        // 3. capacities and reverse links follow the places, pair by pair; the heads follow
        //    the reverse links.
        let t0 = std::time::Instant::now();
        let threads = rayon::current_num_threads().clamp(1, 64);
        let shift = {
            let per = n.div_ceil(4 * threads).max(1);
            per.next_power_of_two().trailing_zeros()
        };
        let nb = n.div_ceil(1 << shift).max(1);
        let csize = pairs.div_ceil(4 * threads).max(CHUNK.min(pairs.max(1)));
        let chunks = pairs.div_ceil(csize).max(1);
        let offsets = summarize.is_some();
        let (tail, head) = (&self.tail, &self.head);
        let (caps, rev) = (&self.cap, &self.rev);
        let pair_range = |c: usize| c * csize..((c + 1) * csize).min(pairs);
        // Pair `i` carries flow one way or both (what the offset counts add).
        let weight = |i: usize| u32::from(caps[i] > 0) + u32::from(rev[i] > 0);
        // Per chunk: arcs per node bucket, then (for the offsets) pairs with capacity per
        // bucket of offsets.
        let width = if offsets { 2 * nb } else { nb };
        let counts: Vec<Vec<u32>> = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let mut k = vec![0u32; width];
                for i in pair_range(c) {
                    let (u, v) = (tail[i] as usize, head[i] as usize);
                    k[u >> shift] += 1;
                    k[v >> shift] += 1;
                    if offsets && weight(i) > 0 {
                        k[nb + (u.abs_diff(v) >> shift)] += 1;
                    }
                }
                k
            })
            .collect();
        // Where each chunk's part of each bucket starts (buckets in order, chunks within).
        let mut starts: Vec<Vec<u32>> = vec![vec![0u32; width]; chunks];
        let mut bucket_at = vec![0usize; width + 1];
        {
            let mut run = 0usize;
            for b in 0..width {
                if b == nb {
                    run = 0; // the offsets' list is its own array
                }
                bucket_at[b] = run;
                for c in 0..chunks {
                    starts[c][b] = run as u32;
                    run += counts[c][b] as usize;
                }
            }
            bucket_at[width] = run;
        }
        let bucket_end = |b: usize| {
            if b + 1 == nb {
                m
            } else {
                bucket_at[b + 1]
            }
        };
        crate::phases::mark("build: buckets", t0);
        let t0 = std::time::Instant::now();
        // The offsets (4 bytes a node), counted by owners of offset buckets from a list of the
        // pairs' offsets sorted into those buckets (4 bytes a pair with capacity, let go before
        // the arrays of the sort are had), then summed up and let go.
        let summary = match summarize {
            None => None,
            Some(f) => {
                let listed = bucket_at[width];
                let mut list: Vec<u32> = try_zeroed(listed)?;
                {
                    let list = as_atomic(&mut list);
                    starts.par_iter().enumerate().for_each(|(c, s)| {
                        let mut cur = s[nb..].to_vec();
                        for i in pair_range(c) {
                            let k = weight(i);
                            if k > 0 {
                                let off = (tail[i] as usize).abs_diff(head[i] as usize);
                                // Offsets are below `MAX_NODES` < 2^31: the top bit says
                                // "both ways".
                                let slot = &mut cur[off >> shift];
                                list[*slot as usize].store(off as u32 | (k - 1) << 31, Relaxed);
                                *slot += 1;
                            }
                        }
                    });
                }
                let mut hist: Vec<u32> = try_zeroed(n)?;
                let total: u64 = hist
                    .par_chunks_mut(1 << shift)
                    .enumerate()
                    .map(|(b, h)| {
                        let (lo, hi) = (bucket_at[nb + b], bucket_at[nb + b + 1]);
                        let base = b << shift;
                        let mut total = 0u64;
                        for &x in &list[lo..hi] {
                            let k = 1 + (x >> 31);
                            h[(x & (u32::MAX >> 1)) as usize - base] += k;
                            total += u64::from(k);
                        }
                        total
                    })
                    .sum();
                drop(list);
                let s = f(&hist, total);
                drop(hist);
                Some(s)
            }
        };
        crate::phases::mark("build: offsets", t0);
        let t0 = std::time::Instant::now();
        // Level 1: each arc's ref and tail, in bucket order. Then the builder's tails and heads
        // are let go: these two arrays (16 bytes a pair) say the same.
        let mut refs: Vec<u32> = try_zeroed(m)?;
        let mut tails: Vec<u32> = try_zeroed(m)?;
        {
            let (r_at, t_at) = (as_atomic(&mut refs), as_atomic(&mut tails));
            starts.par_iter().enumerate().for_each(|(c, s)| {
                let mut cur = s[..nb].to_vec();
                for i in pair_range(c) {
                    for (x, r) in [(tail[i], 2 * i as u32), (head[i], 2 * i as u32 + 1)] {
                        let slot = &mut cur[x as usize >> shift];
                        r_at[*slot as usize].store(r, Relaxed);
                        t_at[*slot as usize].store(x, Relaxed);
                        *slot += 1;
                    }
                }
            });
        }
        drop(starts);
        let CsrBuilder {
            tail,
            head,
            cap: caps,
            rev,
            source: source_sums,
            sink: sink_sums,
            constant,
            ..
        } = self;
        drop((tail, head));
        crate::phases::mark("build: bucket sort", t0);
        let t0 = std::time::Instant::now();
        // Level 2, a bucket at a time on every core: its nodes' degrees (into its own part of
        // `first`, as starts from the bucket's), then each of its arcs' place, in order.
        let mut first: Vec<u32> = try_zeroed(n + 1)?;
        let mut place: Vec<u32> = try_zeroed(m)?;
        {
            let place = as_atomic(&mut place);
            let (refs, tails) = (&refs, &tails);
            first[..n]
                .par_chunks_mut(1 << shift)
                .enumerate()
                .for_each(|(b, cur)| {
                    let (lo, hi) = (bucket_at[b], bucket_end(b));
                    let base = b << shift;
                    for &x in &tails[lo..hi] {
                        cur[x as usize - base] += 1;
                    }
                    let mut run = lo as u32;
                    for d in cur.iter_mut() {
                        (*d, run) = (run, run + *d);
                    }
                    for (&x, &r) in tails[lo..hi].iter().zip(&refs[lo..hi]) {
                        let slot = &mut cur[x as usize - base];
                        place[r as usize].store(*slot, Relaxed);
                        *slot += 1;
                    }
                    // Each cursor ends where its node's arcs end: moved back to their start.
                    if let Some(last) = cur.len().checked_sub(1) {
                        cur.copy_within(..last, 1);
                    }
                    cur[0] = lo as u32;
                });
            first[n] = m as u32;
        }
        crate::phases::mark("build: scatter", t0);
        let t0 = std::time::Instant::now();
        // Capacities and reverse links where the arcs landed, pair by pair (every arc once:
        // `place` is a permutation), into the arrays of the sort, which are no longer needed.
        let (mut sister, mut cap) = (refs, bytemuck::allocation::cast_vec::<u32, Cap>(tails));
        {
            let (sister, cap) = (as_atomic(&mut sister), as_atomic_cap(&mut cap));
            place
                .par_chunks(2 * CHUNK)
                .enumerate()
                .for_each(|(j, part)| {
                    let i0 = j * CHUNK;
                    for (k, ab) in part.chunks_exact(2).enumerate() {
                        let (a, b) = (ab[0], ab[1]);
                        sister[a as usize].store(b, Relaxed);
                        sister[b as usize].store(a, Relaxed);
                        cap[a as usize].store(caps[i0 + k], Relaxed);
                        cap[b as usize].store(rev[i0 + k], Relaxed);
                    }
                });
        }
        drop((caps, rev));
        crate::phases::mark("build: reverse links", t0);
        let t0 = std::time::Instant::now();
        // Each arc's head is its reverse arc's tail: the tails written out by node (into
        // `place`, done with), then looked up.
        let mut arc_tail = place;
        arc_tail
            .par_chunks_mut(2 * CHUNK)
            .enumerate()
            .for_each(|(j, part)| {
                let a0 = j * 2 * CHUNK;
                let mut v = first.partition_point(|&f| (f as usize) <= a0) - 1;
                for (k, t) in part.iter_mut().enumerate() {
                    while first[v + 1] as usize <= a0 + k {
                        v += 1;
                    }
                    *t = v as u32;
                }
            });
        let mut head: Vec<u32> = try_zeroed(m)?;
        head.par_chunks_mut(2 * CHUNK)
            .zip(sister.par_chunks(2 * CHUNK))
            .for_each(|(h, s)| {
                for (h, &s) in h.iter_mut().zip(s) {
                    *h = arc_tail[s as usize];
                }
            });
        drop(arc_tail);
        crate::phases::mark("build: heads", t0);
        // Each total was kept within `Cap::MAX` as it grew: the sums are the graph's arrays.
        let narrow = |t: Vec<Cap>| -> Result<Vec<Cap>> {
            if !t.is_empty() {
                return Ok(t);
            }
            let mut out = Vec::new();
            out.try_reserve_exact(n).map_err(|_| oom(n, 4))?;
            out.par_extend(rayon::iter::repeat_n(0, n));
            Ok(out)
        };
        let source = narrow(source_sums)?;
        let sink = narrow(sink_sums)?;
        let graph = CsrGraph {
            first,
            head,
            sister,
            cap,
            source,
            sink,
            constant,
        };
        Ok((graph, summary))
    }

    /// The serial counting sort that [`build`](Self::build) replaced, kept to check it against.
    #[cfg(test)]
    pub(crate) fn build_serial(self) -> Result<CsrGraph> {
        let n = self.n;
        let pairs = self.head.len();
        let mut first: Vec<u32> = try_zeroed(n + 1)?;
        for i in 0..pairs {
            first[self.tail[i] as usize + 1] += 1;
            first[self.head[i] as usize + 1] += 1;
        }
        for v in 0..n {
            first[v + 1] += first[v];
        }
        let m = 2 * pairs;
        let mut pos = first[..n].to_vec();
        let (mut head, mut sister, mut cap) = (vec![0u32; m], vec![0u32; m], vec![0 as Cap; m]);
        for i in 0..pairs {
            let (u, v) = (self.tail[i] as usize, self.head[i] as usize);
            let (a, b) = (pos[u], pos[v]);
            pos[u] += 1;
            pos[v] += 1;
            head[a as usize] = v as u32;
            cap[a as usize] = self.cap[i];
            sister[a as usize] = b;
            head[b as usize] = u as u32;
            cap[b as usize] = self.rev[i];
            sister[b as usize] = a;
        }
        let term = |t: &[Cap]| (0..n).map(|v| t.get(v).copied().unwrap_or(0)).collect();
        Ok(CsrGraph {
            first,
            head,
            sister,
            cap,
            source: term(&self.source),
            sink: term(&self.sink),
            constant: self.constant,
        })
    }
}

/// `v` as atomics, for threads that each write their own entries of it (plain stores with
/// `Relaxed`).
fn as_atomic(v: &mut [u32]) -> &[std::sync::atomic::AtomicU32] {
    // SAFETY: `AtomicU32` has the size, alignment and bit validity of `u32`, and the
    // exclusive borrow of `v` is held for as long as the atomic view lives.
    unsafe { std::slice::from_raw_parts(v.as_mut_ptr().cast(), v.len()) }
}

/// [`as_atomic`] for capacities.
fn as_atomic_cap(v: &mut [Cap]) -> &[std::sync::atomic::AtomicI32] {
    // SAFETY: as for `as_atomic`; `Cap` is `i32`.
    unsafe { std::slice::from_raw_parts(v.as_mut_ptr().cast(), v.len()) }
}

/// The error for an allocation of `len` elements of `size` bytes that failed.
fn oom(len: usize, size: usize) -> Error {
    Error::Graph(format!(
        "out of memory allocating {len} elements of {size} bytes"
    ))
}

/// `len` zeros, or an error where the memory cannot be had. Zeroed by the allocator: a large
/// block comes as fresh pages that are zero already, first touched by the threads that fill
/// them, where a serial pass of zeros had been a tenth of a general graph's build.
fn try_zeroed<T: bytemuck::Zeroable>(len: usize) -> Result<Vec<T>> {
    let v = bytemuck::allocation::try_zeroed_vec(len)
        .map_err(|_| oom(len, std::mem::size_of::<T>()))?;
    crate::io::advise_huge_pages(&v);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// A builder of random pairs (parallel, antiparallel, self loops) and terminal arcs.
    fn random_builder(rng: &mut Rng, n: usize, pairs: usize) -> CsrBuilder {
        let mut b = CsrBuilder::new(n).unwrap();
        for _ in 0..pairs {
            let u = rng.below(n as u64) as u32;
            // Mostly near `u`, as in grids, sometimes anywhere.
            let v = if rng.below(4) == 0 {
                rng.below(n as u64) as u32
            } else {
                ((u as u64 + rng.below(3)) % n as u64) as u32
            };
            let (c, r) = (rng.below(100) as Cap, rng.below(100) as Cap);
            b.add_edge(u, v, c, r).unwrap();
            if rng.below(5) == 0 {
                b.add_terminals(u, c, r).unwrap();
            }
        }
        b
    }

    #[test]
    fn parallel_build_gives_the_serial_graph() {
        let mut rng = Rng::new(5);
        for case in 0..40 {
            let n = 1 + rng.below(300) as usize;
            let pairs = rng.below(2000) as usize;
            let b = random_builder(&mut rng, n, pairs);
            let want = b.clone().build_serial().unwrap();
            for threads in [1, 2, 3, 7] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let got = pool.install(|| b.clone().build()).unwrap();
                assert_eq!(got, want, "case {case}, {threads} threads");
            }
            // The result is a valid graph.
            CsrGraph::from_parts(want.to_parts()).unwrap();
        }
        // Large enough for many buckets of nodes and chunks of pairs on 16 threads.
        let b = random_builder(&mut rng, 70_000, 200_000);
        let want = b.clone().build_serial().unwrap();
        for threads in [2, 16] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert!(
                pool.install(|| b.clone().build()).unwrap() == want,
                "{threads} threads"
            );
        }
        // No nodes and no arcs at all.
        let empty = CsrBuilder::new(0).unwrap();
        assert_eq!(
            empty.clone().build().unwrap(),
            empty.build_serial().unwrap()
        );
    }

    #[test]
    fn offsets_counted_in_the_build_are_the_graphs() {
        // The counts the build gives are those of the graph it gives, whatever the threads.
        let mut rng = Rng::new(7);
        for case in 0..30 {
            let n = 1 + rng.below(300) as usize;
            let pairs = rng.below(2000) as usize;
            let b = random_builder(&mut rng, n, pairs);
            let want_graph = b.clone().build_serial().unwrap();
            let mut want = vec![0u32; n];
            let mut total = 0u64;
            for v in 0..n {
                for a in want_graph.arcs_of(v) {
                    if want_graph.caps()[a] > 0 {
                        want[(want_graph.heads()[a] as usize).abs_diff(v)] += 1;
                        total += 1;
                    }
                }
            }
            assert!(
                case > 0 || total > 0,
                "the first case has arcs with capacity"
            );
            for threads in [1, 2, 3, 7] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let (g, (counts, t)) = pool
                    .install(|| b.clone().build_counting_offsets(|c, t| (c.to_vec(), t)))
                    .unwrap();
                assert_eq!(g, want_graph, "case {case}, {threads} threads");
                assert_eq!(counts, want, "case {case}, {threads} threads");
                assert_eq!(t, total, "case {case}, {threads} threads");
            }
        }
        let (_, o) = CsrBuilder::new(0)
            .unwrap()
            .build_counting_offsets(|c, t| (c.to_vec(), t))
            .unwrap();
        assert_eq!(o, (vec![], 0));
    }

    #[test]
    fn from_parts_refuses_every_single_changed_reverse_or_head() {
        // Each pair is checked from one side only; any one changed entry must still be refused.
        let mut rng = Rng::new(11);
        for case in 0..6 {
            let b = random_builder(&mut rng, 2 + case, 8 + 2 * case);
            let good = b.build().unwrap().to_parts();
            let m = good.head.len() as u32;
            assert!(m >= 4, "case {case}: two pairs at least");
            for a in 0..m as usize {
                for x in 0..m + 2 {
                    if x != good.sister[a] {
                        let mut p = good.clone();
                        p.sister[a] = x;
                        assert!(
                            CsrGraph::from_parts(p).is_err(),
                            "case {case}: sister[{a}] = {x}"
                        );
                    }
                }
                for x in 0..good.source.len() as u32 + 1 {
                    if x != good.head[a] {
                        let mut p = good.clone();
                        p.head[a] = x;
                        assert!(
                            CsrGraph::from_parts(p).is_err(),
                            "case {case}: head[{a}] = {x}"
                        );
                    }
                }
                let mut p = good.clone();
                p.cap[a] = -1;
                assert!(
                    CsrGraph::from_parts(p).is_err(),
                    "case {case}: cap[{a}] = -1"
                );
            }
            CsrGraph::from_parts(good).unwrap();
        }
        // Two changes that leave every lower arc's pair whole: arcs 1 and 3 both name arc 0,
        // which only the count of lower arcs sees.
        let mut two = CsrBuilder::new(2).unwrap();
        two.add_edge(0, 1, 1, 1).unwrap();
        two.add_edge(0, 1, 1, 1).unwrap();
        let mut p = two.build().unwrap().to_parts();
        assert_eq!(p.sister, [2, 3, 0, 1]);
        CsrGraph::from_parts(p.clone()).unwrap();
        (p.sister[1], p.sister[3]) = (0, 0);
        assert!(CsrGraph::from_parts(p).is_err());
    }
}
