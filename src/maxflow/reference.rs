//! A deliberately simple max-flow (Dinic's algorithm) used as the reference in tests.
//!
//! It shares nothing with [`Bk`](super::bk::Bk) but the input graph: it builds its own adjacency
//! lists with explicit source and sink vertices (terminal capacities become ordinary arcs), keeps
//! residuals in `i64`, and finds the canonical cut with its own reverse breadth-first search rather
//! than [`sink_reachable`](super::sink_reachable), so that a bug in either side shows up as a
//! disagreement. It favours obviousness over speed.

use super::solved::timed;
use super::{Cut, Flows, GraphRef, Solved, Solver, SolverKind};
use crate::graph::{Cap, CsrGraph, Flow};
use crate::{Error, Result};
use std::time::Instant;

/// Dinic's algorithm: breadth-first levels from the source, then a blocking flow found by
/// depth-first search along level-increasing arcs, repeated until the sink is unreachable.
///
/// The depth-first search is iterative (an explicit path stack), so deep graphs cannot overflow
/// the call stack.
///
/// ```
/// use segcut::graph::{CsrBuilder, Vertex};
/// use segcut::maxflow::{reference::Dinic, Solver};
/// let mut b = CsrBuilder::new(2).unwrap();
/// b.add_terminals(0, 5, 0).unwrap();
/// b.add_edge(0, 1, 3, 0).unwrap();
/// b.add_terminals(1, 0, 4).unwrap();
/// let cut = Dinic.solve_csr(&b.build().unwrap()).unwrap();
/// assert_eq!(cut.flow, 3);
/// assert_eq!(cut.sink_side, vec![false, true]);
/// ```
#[derive(Default, Debug, Clone, Copy)]
pub struct Dinic;

/// One directed residual arc; its reverse is `edges[e ^ 1]` (arcs are added in pairs).
struct Edge {
    to: usize,
    rcap: i64,
}

/// The residual network: `adj[v]` lists the indices of the edges leaving `v`.
struct Network {
    adj: Vec<Vec<usize>>,
    edges: Vec<Edge>,
}

impl Network {
    fn add_pair(&mut self, u: usize, v: usize, cap: i64, rev_cap: i64) {
        self.adj[u].push(self.edges.len());
        self.edges.push(Edge { to: v, rcap: cap });
        self.adj[v].push(self.edges.len());
        self.edges.push(Edge {
            to: u,
            rcap: rev_cap,
        });
    }

    /// BFS distances from `s` along arcs with residual capacity (`usize::MAX` = unreached).
    fn levels(&self, s: usize) -> Vec<usize> {
        let mut level = vec![usize::MAX; self.adj.len()];
        level[s] = 0;
        let mut queue = std::collections::VecDeque::from([s]);
        while let Some(u) = queue.pop_front() {
            for &e in &self.adj[u] {
                let v = self.edges[e].to;
                if self.edges[e].rcap > 0 && level[v] == usize::MAX {
                    level[v] = level[u] + 1;
                    queue.push_back(v);
                }
            }
        }
        level
    }

    /// Pushes a blocking flow from `s` to `t` in the level graph; returns its value.
    fn blocking_flow(&mut self, s: usize, t: usize, level: &[usize]) -> i64 {
        // next[v]: the first arc of v not yet known to be useless in this phase.
        let mut next = vec![0usize; self.adj.len()];
        let mut path: Vec<usize> = Vec::new(); // edge indices from s
        let mut total = 0;
        loop {
            let u = path.last().map_or(s, |&e| self.edges[e].to);
            if u == t {
                let b = path.iter().map(|&e| self.edges[e].rcap).min().unwrap_or(0);
                for &e in &path {
                    self.edges[e].rcap -= b;
                    self.edges[e ^ 1].rcap += b;
                }
                total += b;
                // Retreat to just before the first saturated edge.
                let keep = path
                    .iter()
                    .position(|&e| self.edges[e].rcap == 0)
                    .unwrap_or(path.len());
                path.truncate(keep);
                continue;
            }
            let mut advanced = false;
            while next[u] < self.adj[u].len() {
                let e = self.adj[u][next[u]];
                let v = self.edges[e].to;
                if self.edges[e].rcap > 0 && level[v] == level[u] + 1 {
                    path.push(e);
                    advanced = true;
                    break;
                }
                next[u] += 1;
            }
            if !advanced {
                // u is a dead end: retreat, and make its parent skip the edge into it.
                match path.pop() {
                    None => return total,
                    Some(e) => {
                        let parent = self.edges[e ^ 1].to;
                        next[parent] += 1;
                    }
                }
            }
        }
    }

    /// Vertices that can reach `t` along arcs with residual capacity (reverse BFS from `t`).
    fn reaching(&self, t: usize) -> Vec<bool> {
        let mut reach = vec![false; self.adj.len()];
        reach[t] = true;
        let mut queue = std::collections::VecDeque::from([t]);
        while let Some(w) = queue.pop_front() {
            for &e in &self.adj[w] {
                // e is w → u; its reverse e ^ 1 is u → w.
                let u = self.edges[e].to;
                if !reach[u] && self.edges[e ^ 1].rcap > 0 {
                    reach[u] = true;
                    queue.push_back(u);
                }
            }
        }
        reach
    }
}

/// A solved residual network and where the graph's arcs went in it.
struct DinicRun {
    net: Network,
    flow: Flow,
    /// Edge index of each graph arc (its residual is `net.edges[e].rcap`).
    arc_edge: Vec<usize>,
    /// Edge index of each node's source and sink arc (`usize::MAX` where the capacity is 0).
    source_edge: Vec<usize>,
    sink_edge: Vec<usize>,
}

impl Dinic {
    fn max_flow(g: &CsrGraph) -> Result<DinicRun> {
        let n = g.num_nodes();
        let (s, t) = (n, n + 1);
        let mut net = Network {
            adj: vec![Vec::new(); n + 2],
            edges: Vec::with_capacity(g.num_arcs() + 4 * n),
        };
        let (heads, sisters, caps) = (g.heads(), g.sisters(), g.caps());
        let mut arc_edge = vec![0; g.num_arcs()];
        for u in 0..n {
            for a in g.arcs_of(u) {
                let b = sisters[a] as usize;
                // Each pair once, from its lower-numbered arc.
                if a < b {
                    arc_edge[a] = net.edges.len();
                    arc_edge[b] = net.edges.len() + 1;
                    net.add_pair(u, heads[a] as usize, caps[a] as i64, caps[b] as i64);
                }
            }
        }
        let (mut source_edge, mut sink_edge) = (vec![usize::MAX; n], vec![usize::MAX; n]);
        for v in 0..n {
            if g.source_caps()[v] > 0 {
                source_edge[v] = net.edges.len();
                net.add_pair(s, v, g.source_caps()[v] as i64, 0);
            }
            if g.sink_caps()[v] > 0 {
                sink_edge[v] = net.edges.len();
                net.add_pair(v, t, g.sink_caps()[v] as i64, 0);
            }
        }
        let mut flow: Flow = g.constant_flow();
        loop {
            let level = net.levels(s);
            if level[t] == usize::MAX {
                break;
            }
            let pushed = net.blocking_flow(s, t, &level);
            flow = flow
                .checked_add(pushed)
                .ok_or_else(|| Error::Overflow("flow value exceeds i64".into()))?;
        }
        Ok(DinicRun {
            net,
            flow,
            arc_edge,
            source_edge,
            sink_edge,
        })
    }

    fn cut(solved: &DinicRun, n: usize) -> Cut {
        let mut sink_side = solved.net.reaching(n + 1);
        sink_side.truncate(n);
        Cut {
            flow: solved.flow,
            sink_side,
        }
    }
}

impl Solver for Dinic {
    fn kind(&self) -> SolverKind {
        SolverKind::Dinic
    }

    fn run(&mut self, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
        timed(|| {
            let t = Instant::now();
            let csr = g.to_csr()?;
            let build = t.elapsed();
            let run = Self::max_flow(&csr)?;
            let mut s = Solved::new(Self::cut(&run, csr.num_nodes()), SolverKind::Dinic);
            s.stats.build = build;
            if flows {
                s.flows = Some(Self::flows(&run, &csr, g)?);
            }
            Ok(s)
        })
    }
}

impl Dinic {
    /// The flows of a finished run, read off its residuals, in `g`'s own arc order.
    fn flows(run: &DinicRun, csr: &CsrGraph, g: GraphRef<'_>) -> Result<Flows> {
        let edges = &run.net.edges;
        let rcap: Vec<Cap> = run.arc_edge.iter().map(|&e| edges[e].rcap as Cap).collect();
        // A terminal edge's flow is what its residual lost; absent edges carry nothing.
        let terminal = |edge: &[usize], caps: &[Cap]| -> Vec<Cap> {
            edge.iter()
                .zip(caps)
                .map(|(&e, &c)| {
                    if e == usize::MAX {
                        0
                    } else {
                        c - edges[e].rcap as Cap
                    }
                })
                .collect()
        };
        let flows = Flows::from_residuals(
            csr,
            &rcap,
            terminal(&run.source_edge, csr.source_caps()),
            terminal(&run.sink_edge, csr.sink_caps()),
            run.flow,
        );
        match g {
            GraphRef::Grid(grid) => flows.csr_to_grid(grid, csr),
            GraphRef::Csr(_) => Ok(flows),
        }
    }
}
