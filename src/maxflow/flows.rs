//! Arc flows: a maximum flow arc by arc, as `--flows` writes it, and its check.
//!
//! Solvers find the minimum cut first. BK and Dinic end with a flow; the push-relabel solvers end
//! phase one with a *preflow* (nodes on the source side may keep excess), which is enough for the
//! cut and the flow value. Only when arc flows are asked for do they run phase two, returning
//! that excess to the source (see [`Solver::solve_flows`](super::Solver::solve_flows)).
//!
//! [`verify_flows`] checks a [`Flows`] against the original capacities: every arc within its
//! capacity, conservation at every node, and the value equal to what leaves the source and enters
//! the sink. Together with [`verify`](super::verify) of the cut, it proves both optimal.

use super::GraphRef;
use crate::graph::{Cap, CsrGraph, Flow, GridGraph};
use crate::{Error, Result};

/// A maximum flow, arc by arc.
///
/// Arcs between nodes are indexed the way the graph stores their capacities: for a
/// [`CsrGraph`] by arc index (`caps()[a]`), for a [`GridGraph`] by `d · n + v`, the arc from `v`
/// in direction `d` (`caps(d)[v]`; zero where the neighbour lies outside the grid). Of an arc
/// pair, at most one direction carries flow.
///
/// ```
/// use segcut::graph::{CsrBuilder, Network};
/// use segcut::maxflow::{verify_flows, Bk, Solver};
/// let mut b = CsrBuilder::new(2).unwrap();
/// b.add_edge(0, 1, 3, 0).unwrap();
/// b.add_terminals(0, 5, 0).unwrap();
/// b.add_terminals(1, 0, 4).unwrap();
/// let net = Network::Csr(b.build().unwrap());
/// let (cut, flows) = Bk::default().solve_flows(&net).unwrap();
/// assert_eq!((cut.flow, flows.value), (3, 3));
/// assert_eq!((flows.source[0], flows.sink[1]), (3, 3));
/// verify_flows(&net, &flows).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flows {
    /// The flow value, direct source → sink arcs included.
    pub value: Flow,
    /// Flow on each node's source arc `s → v`.
    pub source: Vec<Cap>,
    /// Flow on each node's sink arc `v → t`.
    pub sink: Vec<Cap>,
    /// Flow on each arc between nodes, in the graph's arc order (see the type's description).
    pub arcs: Vec<Cap>,
}

impl Flows {
    /// The flows of a CSR graph from its final residual capacities: an arc carries what its
    /// residual lost, `max(0, cap − rcap)` (the pair's other arc then carries nothing).
    pub fn from_residuals(
        g: &CsrGraph,
        rcap: &[Cap],
        source: Vec<Cap>,
        sink: Vec<Cap>,
        value: Flow,
    ) -> Self {
        let arcs = g
            .caps()
            .iter()
            .zip(rcap)
            .map(|(&c, &r)| (c as i64 - r as i64).clamp(0, Cap::MAX as i64) as Cap)
            .collect();
        Flows {
            value,
            source,
            sink,
            arcs,
        }
    }

    /// Re-indexes the flows of `g.to_csr()` to the grid's own arc order (`d · n + v`).
    pub fn csr_to_grid(self, g: &GridGraph, csr: &CsrGraph) -> Result<Self> {
        let n = g.num_nodes();
        let degree = g.connectivity().degree();
        let mut arcs = vec![0; degree * n];
        // Each node's neighbours once, rather than a direction search per arc.
        let mut around = Vec::with_capacity(degree);
        for v in 0..n {
            around.clear();
            around.extend((0..degree).filter_map(|d| g.neighbor(v, d).map(|w| (w, d))));
            for a in csr.arcs_of(v) {
                let w = csr.heads()[a] as usize;
                let &(_, d) = around.iter().find(|&&(u, _)| u == w).ok_or_else(|| {
                    Error::Graph(format!("arc {v} → {w} of the CSR form is not a grid arc"))
                })?;
                arcs[d * n + v] = self.arcs[a];
            }
        }
        Ok(Flows { arcs, ..self })
    }
}

/// Checks `f` as a maximum-flow candidate for `net`: sizes match, every arc's flow lies within
/// `0..=capacity`, flow is conserved at every node, and `f.value` equals both the flow leaving
/// the source and the flow entering the sink (direct source → sink arcs included). The error
/// names the first node or arc at fault.
pub fn verify_flows<'a>(g: impl Into<GraphRef<'a>>, f: &Flows) -> Result<()> {
    match g.into() {
        GraphRef::Csr(g) => verify_csr(g, f),
        GraphRef::Grid(g) => verify_grid(g, f),
    }
}

fn bad(msg: String) -> Error {
    Error::InvalidFlow(msg)
}

/// The terminal part of the check, shared by both graph kinds; returns each node's balance
/// (inflow − outflow) so far.
fn check_terminals(
    source_caps: &[Cap],
    sink_caps: &[Cap],
    f: &Flows,
    constant: Flow,
) -> Result<Vec<i64>> {
    let n = source_caps.len();
    if f.source.len() != n || f.sink.len() != n {
        return Err(bad(format!(
            "terminal flows for {} and {} nodes but the graph has {n}",
            f.source.len(),
            f.sink.len()
        )));
    }
    let (mut out_of_s, mut into_t) = (constant as i128, constant as i128);
    let mut balance = vec![0i64; n];
    for v in 0..n {
        for (what, x, c) in [
            ("source", f.source[v], source_caps[v]),
            ("sink", f.sink[v], sink_caps[v]),
        ] {
            if !(0..=c).contains(&x) {
                return Err(bad(format!(
                    "node {v}: {what} arc carries {x}, capacity {c}"
                )));
            }
        }
        out_of_s += f.source[v] as i128;
        into_t += f.sink[v] as i128;
        balance[v] = f.source[v] as i64 - f.sink[v] as i64;
    }
    if out_of_s != f.value as i128 || into_t != f.value as i128 {
        return Err(bad(format!(
            "value {} but {out_of_s} leaves the source and {into_t} enters the sink",
            f.value
        )));
    }
    Ok(balance)
}

fn check_balance(balance: &[i64]) -> Result<()> {
    match balance.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(v) => Err(bad(format!(
            "node {v}: flow not conserved (inflow − outflow = {})",
            balance[v]
        ))),
    }
}

fn verify_csr(g: &CsrGraph, f: &Flows) -> Result<()> {
    let mut balance = check_terminals(g.source_caps(), g.sink_caps(), f, g.constant_flow())?;
    if f.arcs.len() != g.num_arcs() {
        return Err(bad(format!(
            "flows for {} arcs but the graph has {}",
            f.arcs.len(),
            g.num_arcs()
        )));
    }
    for v in 0..g.num_nodes() {
        for a in g.arcs_of(v) {
            let (x, c, w) = (f.arcs[a], g.caps()[a], g.heads()[a] as usize);
            if !(0..=c).contains(&x) {
                return Err(bad(format!("arc {v} → {w}: carries {x}, capacity {c}")));
            }
            balance[v] -= x as i64;
            balance[w] += x as i64;
        }
    }
    check_balance(&balance)
}

fn verify_grid(g: &GridGraph, f: &Flows) -> Result<()> {
    let mut balance = check_terminals(g.source_caps(), g.sink_caps(), f, 0)?;
    let n = g.num_nodes();
    let deg = g.connectivity().degree();
    if f.arcs.len() != deg * n {
        return Err(bad(format!(
            "flows for {} arcs but the grid has {deg} directions × {n} nodes",
            f.arcs.len()
        )));
    }
    for d in 0..deg {
        let flows = &f.arcs[d * n..(d + 1) * n];
        let caps = g.caps(d);
        let mut err = None;
        g.for_each_arc(d, |v, w| {
            let x = flows[v];
            if err.is_none() && !(0..=caps[v]).contains(&x) {
                err = Some(format!("arc {v} → {w}: carries {x}, capacity {}", caps[v]));
            }
            balance[v] -= x as i64;
            balance[w] += x as i64;
        });
        if let Some(e) = err {
            return Err(bad(e));
        }
        // Slots whose neighbour is outside the grid carry nothing.
        let inside = {
            let mut m = vec![false; n];
            g.for_each_arc(d, |v, _| m[v] = true);
            m
        };
        if let Some(v) = (0..n).find(|&v| !inside[v] && flows[v] != 0) {
            return Err(bad(format!(
                "node {v}: flow {} on direction {d}, which leaves the grid",
                flows[v]
            )));
        }
    }
    check_balance(&balance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Connectivity, CsrBuilder, Network};

    fn path() -> (Network, Flows) {
        let mut b = CsrBuilder::new(2).unwrap();
        b.add_edge(0, 1, 3, 0).unwrap();
        b.add_terminals(0, 5, 0).unwrap();
        b.add_terminals(1, 0, 4).unwrap();
        let g = b.build().unwrap();
        let a = g.arcs_of(0).start;
        let mut arcs = vec![0; g.num_arcs()];
        arcs[a] = 3;
        let f = Flows {
            value: 3,
            source: vec![3, 0],
            sink: vec![0, 3],
            arcs,
        };
        (Network::Csr(g), f)
    }

    #[test]
    fn a_valid_flow_passes_and_each_kind_of_fault_is_named() {
        let (net, f) = path();
        verify_flows(&net, &f).unwrap();
        let a = f.arcs.iter().position(|&x| x == 3).unwrap();

        let mut over = f.clone();
        over.arcs[a] = 4;
        over.source[0] = 4;
        over.sink[1] = 4;
        over.value = 4;
        let e = verify_flows(&net, &over).unwrap_err().to_string();
        assert!(e.contains("arc 0 → 1: carries 4, capacity 3"), "{e}");

        let mut leak = f.clone();
        leak.sink[1] = 2;
        let e = verify_flows(&net, &leak).unwrap_err().to_string();
        assert!(e.contains("enters the sink"), "{e}");

        let mut unbalanced = f.clone();
        unbalanced.arcs[a] = 2;
        let e = verify_flows(&net, &unbalanced).unwrap_err().to_string();
        assert!(e.contains("node 0: flow not conserved"), "{e}");

        let mut negative = f;
        negative.source[1] = -1;
        let e = verify_flows(&net, &negative).unwrap_err().to_string();
        assert!(e.contains("node 1: source arc carries -1"), "{e}");
    }

    #[test]
    fn grid_flows_off_the_grid_are_rejected() {
        let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
        g.set_terminals(0, 1, 0);
        g.set_terminals(1, 0, 1);
        let v = 0;
        let d = (0..4).find(|&d| g.neighbor(v, d) == Some(1)).unwrap();
        g.set_dir(v, d, 1).unwrap();
        let n = 2;
        let mut arcs = vec![0; 4 * n];
        arcs[d * n + v] = 1;
        let f = Flows {
            value: 1,
            source: vec![1, 0],
            sink: vec![0, 1],
            arcs,
        };
        let net = Network::Grid(g.clone());
        verify_flows(&net, &f).unwrap();
        let off = (0..4).find(|&d| g.neighbor(v, d).is_none()).unwrap();
        let mut bad = f.clone();
        bad.arcs[off * n + v] = 1;
        assert!(verify_flows(&net, &bad).is_err());
        // The CSR form's flows re-indexed to the grid are the same flows.
        let csr = g.to_csr().unwrap();
        let mut ca = vec![0; csr.num_arcs()];
        let a = csr.arcs_of(0).find(|&a| csr.heads()[a] == 1).unwrap();
        ca[a] = 1;
        let cf = Flows {
            arcs: ca,
            ..f.clone()
        };
        assert_eq!(cf.csr_to_grid(&g, &csr).unwrap(), f);
    }
}
