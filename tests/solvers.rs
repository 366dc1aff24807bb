//! Property and hand-made tests for the max-flow solvers: Boykov–Kolmogorov against the Dinic
//! reference and, on graphs of at most 12 nodes, against brute force over every cut.

use proptest::prelude::*;
use segcut::graph::{Cap, Connectivity, CsrBuilder, CsrGraph, GridGraph, Network, Vertex};
use segcut::maxflow::{bk::Bk, reference::Dinic, verify, verify_flows, Cut, Solver};
use segcut::rng::Rng;

/// Largest graph whose cuts are all enumerated.
const BRUTE_MAX_NODES: usize = 12;

/// Cut capacity computed here from the raw arrays, independent of the library's own.
fn cut_capacity(g: &CsrGraph, sink_side: &[bool]) -> i128 {
    let mut total = g.constant_flow() as i128;
    for v in 0..g.num_nodes() {
        if sink_side[v] {
            total += g.source_caps()[v] as i128;
            continue;
        }
        total += g.sink_caps()[v] as i128;
        for a in g.arcs_of(v) {
            if sink_side[g.heads()[a] as usize] {
                total += g.caps()[a] as i128;
            }
        }
    }
    total
}

/// Minimum cut value and the intersection of the sink sides of all minimum cuts.
fn brute_force(g: &CsrGraph) -> (i128, Vec<bool>) {
    let n = g.num_nodes();
    let mut best = i128::MAX;
    let mut common = vec![true; n];
    let mut side = vec![false; n];
    for mask in 0u32..(1 << n) {
        for (v, s) in side.iter_mut().enumerate() {
            *s = mask >> v & 1 == 1;
        }
        let c = cut_capacity(g, &side);
        if c < best {
            best = c;
            common.clone_from(&side);
        } else if c == best {
            for (x, &s) in common.iter_mut().zip(&side) {
                *x &= s;
            }
        }
    }
    (best, common)
}

/// Solves `g` with both solvers and checks everything that must hold; returns BK's cut.
fn check_csr(g: &CsrGraph) -> Result<Cut, TestCaseError> {
    let bk = Bk::default()
        .solve_csr(g)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let dinic = Dinic
        .solve_csr(g)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(bk.flow, dinic.flow, "flow values differ");
    prop_assert_eq!(&bk.sink_side, &dinic.sink_side, "canonical cuts differ");
    prop_assert!(verify(g, &bk).is_ok(), "BK certificate fails");
    prop_assert!(verify(g, &dinic).is_ok(), "Dinic certificate fails");
    prop_assert_eq!(cut_capacity(g, &bk.sink_side), bk.flow as i128);
    check_flows(&Network::Csr(g.clone()), &bk)?;
    if g.num_nodes() <= BRUTE_MAX_NODES {
        let (min, smallest) = brute_force(g);
        prop_assert_eq!(bk.flow as i128, min, "not the minimum cut value");
        // The intersection of all minimum sink sides is itself a minimum cut, and the canonical
        // sink side is exactly that smallest one.
        prop_assert_eq!(cut_capacity(g, &smallest), min);
        prop_assert_eq!(&bk.sink_side, &smallest, "not the smallest sink side");
    }
    Ok(bk)
}

/// One addition to a random graph: `(from, to, cap, rev_cap)` with vertices coded as
/// 0 = source, 1 = sink, k + 2 = node k (taken modulo the node count).
type Op = (u32, u32, Cap, Cap);

/// Builds a graph from `ops`, clamping terminal capacities so that sums stay within `i32`.
fn build(n: usize, ops: &[Op]) -> CsrGraph {
    let mut b = CsrBuilder::new(n).unwrap();
    let mut source = vec![0i64; n];
    let mut sink = vec![0i64; n];
    let vertex = |code: u32| match code {
        0 => Vertex::Source,
        1 => Vertex::Sink,
        k => Vertex::Node((k - 2) % n as u32),
    };
    for &(from, to, cap, rev) in ops {
        // Without nodes, only source → sink arcs (and dropped ones) can exist.
        let (from, to) = if n == 0 {
            (from.min(1), to.min(1))
        } else {
            (from, to)
        };
        match (vertex(from), vertex(to)) {
            (Vertex::Source, Vertex::Node(v)) => {
                let cap = cap.min((Cap::MAX as i64 - source[v as usize]) as Cap);
                source[v as usize] += cap as i64;
                b.add_arc(Vertex::Source, Vertex::Node(v), cap).unwrap();
            }
            (Vertex::Node(v), Vertex::Sink) => {
                let cap = cap.min((Cap::MAX as i64 - sink[v as usize]) as Cap);
                sink[v as usize] += cap as i64;
                b.add_arc(Vertex::Node(v), Vertex::Sink, cap).unwrap();
            }
            (Vertex::Node(u), Vertex::Node(v)) => b.add_edge(u, v, cap, rev).unwrap(),
            (x, y) => b.add_arc(x, y, cap).unwrap(),
        }
    }
    b.build().unwrap()
}

/// Capacities: mostly small (many ties, many minimum cuts) or large (near `i32::MAX / 2`).
fn cap_strategy(large: bool) -> BoxedStrategy<Cap> {
    if large {
        prop_oneof![
            2 => Just(0),
            1 => 0..=5,
            4 => (Cap::MAX / 2 - 1000)..=Cap::MAX / 2,
            3 => 0..=Cap::MAX / 2,
        ]
        .boxed()
    } else {
        prop_oneof![2 => Just(0), 5 => 0..=5].boxed()
    }
}

fn ops_strategy(max_ops: usize, large: bool) -> impl Strategy<Value = Vec<Op>> {
    // Vertex codes: source and sink appear often so that terminal arcs are common.
    let vertex = prop_oneof![1 => Just(0u32), 1 => Just(1u32), 6 => 2u32..44];
    prop::collection::vec(
        (
            vertex.clone(),
            vertex,
            cap_strategy(large),
            cap_strategy(large),
        ),
        0..max_ops,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn small_graphs_small_caps(n in 0usize..=BRUTE_MAX_NODES, ops in ops_strategy(60, false)) {
        check_csr(&build(n, &ops))?;
    }

    #[test]
    fn small_graphs_large_caps(n in 0usize..=BRUTE_MAX_NODES, ops in ops_strategy(60, true)) {
        check_csr(&build(n, &ops))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn larger_graphs(n in 0usize..=40, ops in ops_strategy(200, false), large in any::<bool>()) {
        let ops = if large {
            ops.into_iter().map(|(f, t, c, r)| (f, t, c * (Cap::MAX / 11), r * (Cap::MAX / 11))).collect()
        } else {
            ops
        };
        check_csr(&build(n, &ops))?;
    }
}

/// A random grid: each capacity is zero with probability `zeros`, else small or large.
fn random_grid(
    conn: Connectivity,
    dims: [usize; 3],
    seed: u64,
    large: bool,
    terminals: bool,
) -> GridGraph {
    let mut rng = Rng::new(seed);
    let mut g = GridGraph::new(dims[0], dims[1], dims[2], conn).unwrap();
    let zeros = rng.below(4) as f64 / 4.0;
    let cap = |rng: &mut Rng, limit: Cap| -> Cap {
        if rng.unit_f64() < zeros {
            0
        } else if large {
            rng.range_i64(limit as i64 - 1000, limit as i64) as Cap
        } else {
            rng.below(6) as Cap
        }
    };
    let n = g.num_nodes();
    for d in 0..conn.degree() {
        for v in 0..n {
            if g.neighbor(v, d).is_some() {
                // Each direction at most half of i32::MAX, so a pair's sum fits.
                let c = cap(&mut rng, Cap::MAX / 2);
                g.caps_mut(d)[v] = c;
            }
        }
    }
    if terminals {
        for v in 0..n {
            let s = cap(&mut rng, Cap::MAX);
            let t = cap(&mut rng, Cap::MAX);
            g.set_terminals(v, s, t);
        }
    }
    g
}

fn check_grid(g: &GridGraph) -> Result<Cut, TestCaseError> {
    let csr = g.to_csr().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let via_csr = check_csr(&csr)?;
    let via_grid = Bk::default()
        .solve_grid(g)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&via_grid, &via_csr, "solve_grid and solve_csr differ");
    prop_assert!(verify(g, &via_grid).is_ok(), "grid certificate fails");
    check_flows(&Network::Grid(g.clone()), &via_grid)?;
    Ok(via_grid)
}

/// Both CPU solvers' arc flows are maximum flows of `net` (capacities, conservation, value), and
/// `solve_flows` returns the same cut as the plain solve.
fn check_flows(net: &Network, cut: &Cut) -> Result<(), TestCaseError> {
    let solvers: [&mut dyn Solver; 2] = [&mut Bk::default(), &mut Dinic];
    for solver in solvers {
        let (c, f) = solver
            .solve_flows(net)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", solver.name())))?;
        prop_assert_eq!(&c, cut, "{}: solve_flows cut differs", solver.name());
        prop_assert_eq!(f.value, cut.flow);
        if let Err(e) = verify_flows(net, &f) {
            return Err(TestCaseError::fail(format!("{}: {e}", solver.name())));
        }
    }
    Ok(())
}

fn connectivity() -> impl Strategy<Value = Connectivity> {
    prop_oneof![
        Just(Connectivity::N4),
        Just(Connectivity::N8),
        Just(Connectivity::N6),
        Just(Connectivity::N26),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_grids(
        conn in connectivity(),
        w in 1usize..=6,
        h in 1usize..=6,
        d in 1usize..=4,
        seed in any::<u64>(),
        large in any::<bool>(),
        terminals in prop::bool::weighted(0.9),
    ) {
        let d = if conn.is_3d() { d } else { 1 };
        let g = random_grid(conn, [w, h, d], seed, large, terminals);
        let cut = check_grid(&g)?;
        if !terminals {
            prop_assert_eq!(cut.flow, 0);
            prop_assert!(cut.sink_side.iter().all(|&s| !s), "nothing reaches the sink");
        }
    }

    #[test]
    fn tiny_grids_brute_force(
        conn in connectivity(),
        w in 1usize..=4,
        h in 1usize..=3,
        d in 1usize..=2,
        seed in any::<u64>(),
        large in any::<bool>(),
    ) {
        let d = if conn.is_3d() { d } else { 1 };
        let h = if w * h * d > BRUTE_MAX_NODES { 1 } else { h };
        let g = random_grid(conn, [w, h, d], seed, large, true);
        prop_assert!(g.num_nodes() <= BRUTE_MAX_NODES);
        check_grid(&g)?;
    }
}

#[test]
fn grid_without_n_links_cuts_each_pixel_alone() {
    let mut rng = Rng::new(11);
    let mut g = GridGraph::new_2d(7, 5, Connectivity::N8).unwrap();
    let mut expected_flow = 0i64;
    let mut expected_side = Vec::new();
    for v in 0..g.num_nodes() {
        let (s, t) = (rng.below(4) as Cap, rng.below(4) as Cap);
        g.set_terminals(v, s, t);
        expected_flow += s.min(t) as i64;
        expected_side.push(t > s);
    }
    let cut = Bk::default().solve_grid(&g).unwrap();
    assert_eq!(cut.flow, expected_flow);
    assert_eq!(cut.sink_side, expected_side);
}

/// A path s → 0 → 1 → 2 → t where every arc has capacity 1: four minimum cuts, with sink sides
/// {}, {2}, {1, 2} and {0, 1, 2}; the canonical one is the smallest.
#[test]
fn several_minimum_cuts_smallest_sink_side() {
    let mut b = CsrBuilder::new(3).unwrap();
    b.add_arc(Vertex::Source, Vertex::Node(0), 1).unwrap();
    b.add_edge(0, 1, 1, 0).unwrap();
    b.add_edge(1, 2, 1, 0).unwrap();
    b.add_arc(Vertex::Node(2), Vertex::Sink, 1).unwrap();
    let g = b.build().unwrap();
    for cut in [
        Bk::default().solve_csr(&g).unwrap(),
        Dinic.solve_csr(&g).unwrap(),
    ] {
        assert_eq!(cut.flow, 1);
        // Every arc is saturated, so no node reaches the sink: all are on the source side,
        // although {2}, {1, 2} and {0, 1, 2} are minimum sink sides too.
        assert_eq!(cut.sink_side, vec![false, false, false]);
    }
    // Raise the last arc: now only 2 reaches the sink.
    let mut b = CsrBuilder::new(3).unwrap();
    b.add_arc(Vertex::Source, Vertex::Node(0), 1).unwrap();
    b.add_edge(0, 1, 1, 0).unwrap();
    b.add_edge(1, 2, 1, 0).unwrap();
    b.add_arc(Vertex::Node(2), Vertex::Sink, 2).unwrap();
    let g = b.build().unwrap();
    let cut = Bk::default().solve_csr(&g).unwrap();
    assert_eq!(cut.flow, 1);
    assert_eq!(cut.sink_side, vec![false, false, true]);
}

#[test]
fn two_disjoint_tied_paths() {
    // Nodes 0-1 and 2-3 form two paths; in each, both arcs tie. A reverse arc on the first
    // path lets node 0 reach 1 after saturation, a capacity to the sink keeps 3 reachable.
    let mut b = CsrBuilder::new(4).unwrap();
    b.add_terminals(0, 2, 0).unwrap();
    b.add_edge(0, 1, 2, 5).unwrap();
    b.add_terminals(1, 0, 2).unwrap();
    b.add_terminals(2, 3, 0).unwrap();
    b.add_edge(2, 3, 3, 0).unwrap();
    b.add_terminals(3, 0, 4).unwrap();
    let g = b.build().unwrap();
    let cut = Bk::default().solve_csr(&g).unwrap();
    assert_eq!(cut.flow, 5);
    // 1 → t saturated, 0 → 1 saturated but 1 → 0 has residual; nothing reaches t through 1.
    // 3 → t keeps 1 unit: 3 is on the sink side; 2 → 3 is saturated, so 2 is not.
    assert_eq!(cut.sink_side, vec![false, false, false, true]);
    assert_eq!(Dinic.solve_csr(&g).unwrap(), cut);
}

#[test]
fn empty_graph_and_direct_arcs() {
    let g = CsrBuilder::new(0).unwrap().build().unwrap();
    let cut = Bk::default().solve_csr(&g).unwrap();
    assert_eq!(
        cut,
        Cut {
            flow: 0,
            sink_side: vec![]
        }
    );
    assert_eq!(Dinic.solve_csr(&g).unwrap(), cut);

    let mut b = CsrBuilder::new(0).unwrap();
    b.add_arc(Vertex::Source, Vertex::Sink, 7).unwrap();
    b.add_arc(Vertex::Source, Vertex::Sink, 5).unwrap();
    let g = b.build().unwrap();
    assert_eq!(Bk::default().solve_csr(&g).unwrap().flow, 12);
    assert_eq!(Dinic.solve_csr(&g).unwrap().flow, 12);
}

#[test]
fn single_node() {
    for (s, t, flow, sink) in [
        (0, 0, 0, false),
        (3, 5, 3, true),
        (5, 3, 3, false),
        (4, 4, 4, false),
    ] {
        let mut b = CsrBuilder::new(1).unwrap();
        b.add_terminals(0, s, t).unwrap();
        let g = b.build().unwrap();
        let cut = Bk::default().solve_csr(&g).unwrap();
        assert_eq!(
            cut,
            Cut {
                flow,
                sink_side: vec![sink]
            },
            "source {s}, sink {t}"
        );
        assert_eq!(Dinic.solve_csr(&g).unwrap(), cut);
    }
    let g = GridGraph::new_2d(1, 1, Connectivity::N4).unwrap();
    assert_eq!(
        Bk::default().solve_grid(&g).unwrap(),
        Cut {
            flow: 0,
            sink_side: vec![false]
        }
    );
}

#[test]
fn reused_solver_gives_the_same_answers() {
    let mut bk = Bk::default();
    let big = random_grid(Connectivity::N8, [30, 20, 1], 5, false, true);
    let small = random_grid(Connectivity::N6, [4, 3, 2], 9, true, true);
    let first_big = bk.solve_grid(&big).unwrap();
    let stats = bk.stats();
    assert!(stats.augmentations > 0 && stats.growth_steps > 0);
    let first_small = bk.solve_grid(&small).unwrap();
    // Solving again with the same (now larger-than-needed) buffers changes nothing.
    assert_eq!(bk.solve_grid(&big).unwrap(), first_big);
    assert_eq!(bk.stats(), stats);
    assert_eq!(bk.solve_grid(&small).unwrap(), first_small);
    assert_eq!(first_big, Dinic.solve_grid(&big).unwrap());
    assert_eq!(first_small, Dinic.solve_grid(&small).unwrap());
}

#[test]
fn long_paths_do_not_overflow_the_stack() {
    // A 200 000-node chain: BK's tree paths and Dinic's search path are that long.
    let n = 200_000u32;
    let mut b = CsrBuilder::new(n as usize).unwrap();
    b.add_terminals(0, 9, 0).unwrap();
    for v in 0..n - 1 {
        b.add_edge(v, v + 1, 3 + (v % 7 == 3) as Cap, 1).unwrap();
    }
    b.add_terminals(n - 1, 0, 9).unwrap();
    let g = b.build().unwrap();
    let cut = Bk::default().solve_csr(&g).unwrap();
    assert_eq!(cut.flow, 3);
    assert_eq!(Dinic.solve_csr(&g).unwrap(), cut);
    assert!(verify(&g, &cut).is_ok());
}

#[test]
fn invalid_grids_are_errors_on_both_paths() {
    type Spoil = fn(&mut GridGraph);
    let spoilers: [(&str, Spoil); 4] = [
        ("negative capacity", |g| g.caps_mut(2)[4] = -1),
        ("capacity leaving the grid", |g| g.caps_mut(0)[2] = 1), // node 2 is on the right edge
        ("pair over i32::MAX", |g| {
            g.caps_mut(0)[0] = Cap::MAX;
            g.caps_mut(1)[1] = 1;
        }),
        ("negative terminal", |g| g.set_terminals(5, -3, 0)),
    ];
    for (what, spoil) in spoilers {
        let mut g = random_grid(Connectivity::N8, [3, 3, 1], 7, false, true);
        spoil(&mut g);
        let expected = g.to_csr().expect_err(what).to_string();
        let got = Bk::default().solve_grid(&g).expect_err(what).to_string();
        assert_eq!(got, expected, "{what}");
    }
}
