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
        if p.first[0] != 0 || p.first[n] as usize != m || p.first.windows(2).any(|w| w[0] > w[1]) {
            return bad("arc offsets do not rise from 0 to the arc count".into());
        }
        if p.constant < 0 || p.source.iter().chain(&p.sink).any(|&c| c < 0) {
            return bad("negative terminal capacity".into());
        }
        let check = |v: usize| -> std::result::Result<(), String> {
            for a in p.first[v] as usize..p.first[v + 1] as usize {
                let (h, s) = (p.head[a] as usize, p.sister[a] as usize);
                if h >= n || s >= m || s == a || p.sister[s] as usize != a {
                    return Err(format!("arc {a}: head or reverse arc out of place"));
                }
                // The reverse must leave the head and come back to `v`.
                if !(p.first[h] as usize..p.first[h + 1] as usize).contains(&s)
                    || p.head[s] as usize != v
                {
                    return Err(format!("arc {a}: its reverse does not join the same nodes"));
                }
                if p.cap[a] < 0 || p.cap[a] as i64 + p.cap[s] as i64 > Cap::MAX as i64 {
                    return Err(format!("arc {a}: capacity out of range"));
                }
            }
            Ok(())
        };
        // Nodes checked on every core; the first bad node in order is reported, as a serial
        // check would.
        use rayon::prelude::*;
        let first_bad = (0..n)
            .into_par_iter()
            .with_min_len(1 << 12)
            .find_first(|&v| check(v).is_err());
        if let Some(Err(msg)) = first_bad.map(check) {
            return bad(msg);
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
    source: Vec<i64>,
    sink: Vec<i64>,
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
            source: crate::io::try_vec(n, 0, "the graph's source capacities")?,
            sink: crate::io::try_vec(n, 0, "the graph's sink capacities")?,
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
                let s = &mut self.source[v as usize];
                *s += cap as i64;
                if *s > Cap::MAX as i64 {
                    return Err(Error::Overflow(format!(
                        "node {v}: total source capacity {s} exceeds {}",
                        Cap::MAX
                    )));
                }
            }
            (Vertex::Node(u), Vertex::Sink) => {
                self.check_node(u)?;
                let t = &mut self.sink[u as usize];
                *t += cap as i64;
                if *t > Cap::MAX as i64 {
                    return Err(Error::Overflow(format!(
                        "node {u}: total sink capacity {t} exceeds {}",
                        Cap::MAX
                    )));
                }
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

    /// Sorts the arcs by tail (a counting sort, stable) and returns the graph.
    pub fn build(self) -> Result<CsrGraph> {
        let n = self.n;
        let pairs = self.head.len();
        let mut first = try_vec(n + 1, 0u32)?;
        for i in 0..pairs {
            first[self.tail[i] as usize + 1] += 1;
            first[self.head[i] as usize + 1] += 1;
        }
        for v in 0..n {
            first[v + 1] += first[v];
        }
        let m = 2 * pairs;
        let mut pos = try_vec(n, 0u32)?;
        pos.copy_from_slice(&first[..n]);
        let mut head = try_vec(m, 0u32)?;
        let mut sister = try_vec(m, 0u32)?;
        let mut cap = try_vec(m, 0 as Cap)?;
        let mut source = try_vec(n, 0 as Cap)?;
        let mut sink = try_vec(n, 0 as Cap)?;
        for v in 0..n {
            // Each total was checked against `Cap::MAX` as it grew.
            source[v] = self.source[v] as Cap;
            sink[v] = self.sink[v] as Cap;
        }
        for i in 0..pairs {
            let (u, v) = (self.tail[i] as usize, self.head[i] as usize);
            let a = pos[u];
            pos[u] += 1;
            let b = pos[v];
            pos[v] += 1;
            head[a as usize] = v as u32;
            cap[a as usize] = self.cap[i];
            sister[a as usize] = b;
            head[b as usize] = u as u32;
            cap[b as usize] = self.rev[i];
            sister[b as usize] = a;
        }
        Ok(CsrGraph {
            first,
            head,
            sister,
            cap,
            source,
            sink,
            constant: self.constant,
        })
    }
}

/// `len` copies of `v`, or an error where the memory cannot be had (an abort otherwise).
fn try_vec<T: Clone>(len: usize, v: T) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| {
        Error::Graph(format!(
            "out of memory allocating {len} elements of {} bytes",
            std::mem::size_of::<T>()
        ))
    })?;
    out.resize(len, v);
    Ok(out)
}
