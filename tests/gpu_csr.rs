//! The `cuda-csr` solver against BK: the same flow value and the same canonical cut, and a
//! certificate on every solve. Without a usable GPU each test says so and returns, unless
//! `SEGCUT_REQUIRE_GPU=1` is set (on the GPU machine): then it fails.

mod common;

use common::gpu_or_skip;
use segcut::gen::{generate, InstanceSpec};
use segcut::graph::{Cap, Connectivity, CsrBuilder, CsrGraph, GridGraph, Network, Vertex};
use segcut::maxflow::bk::Bk;
use segcut::maxflow::cuda::CudaCsr;
use segcut::maxflow::{solver_of, verify, AutoPolicy, Solver, SolverKind};
use segcut::rng::Rng;
use segcut::Error;

/// Solves `g` with `solver` and BK and checks that they agree exactly and that the GPU's cut
/// carries a certificate. Returns the flow.
fn check_with(solver: &mut CudaCsr, g: &CsrGraph, what: &str) -> i64 {
    let gpu = solver
        .solve_csr(g)
        .unwrap_or_else(|e| panic!("{what}: cuda-csr failed: {e}"));
    let bk = Bk::default().solve_csr(g).unwrap();
    common::assert_same_cut(g, &gpu, &bk, what, |v| v.to_string())
}

fn check(g: &CsrGraph, what: &str) -> i64 {
    check_with(&mut CudaCsr::on(segcut::cuda::Device::default()), g, what)
}

/// Kinds of random general graph.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Small capacities, many zero, random terminals.
    Small,
    /// Arcs only, no terminal arcs: the flow is the constant alone.
    NoTerminals,
    /// Weak source arcs, strong everything else: every source arc is saturated.
    Saturated,
    /// Pair sums and terminal capacities near `i32::MAX`.
    NearLimits,
    /// Many parallel and antiparallel arcs between few node pairs.
    MultiArcs,
    /// A long path with a few shortcuts: flow must travel far.
    Long,
    /// One hub joined to every node (a high-degree vertex).
    Star,
}

const KINDS: [Kind; 7] = [
    Kind::Small,
    Kind::NoTerminals,
    Kind::Saturated,
    Kind::NearLimits,
    Kind::MultiArcs,
    Kind::Long,
    Kind::Star,
];

fn random_graph(rng: &mut Rng, kind: Kind, max_n: u64) -> CsrGraph {
    let n = 1 + rng.below(max_n) as usize;
    let mut b = CsrBuilder::new(n).unwrap();
    let node = |rng: &mut Rng| rng.below(n as u64) as u32;
    let small = |rng: &mut Rng, hi: u64| -> Cap {
        if rng.below(3) == 0 {
            0
        } else {
            rng.below(hi + 1) as Cap
        }
    };
    let pairs = rng.below(3 * n as u64 + 1) as usize;
    match kind {
        Kind::Small | Kind::NoTerminals => {
            for _ in 0..pairs {
                let (u, v) = (node(rng), node(rng));
                let (c, r) = (small(rng, 9), small(rng, 9));
                b.add_edge(u, v, c, r).unwrap();
            }
        }
        Kind::Saturated => {
            for _ in 0..pairs {
                let (u, v) = (node(rng), node(rng));
                b.add_edge(u, v, 500 + rng.below(50) as Cap, 500).unwrap();
            }
        }
        Kind::NearLimits => {
            for _ in 0..pairs {
                let (u, v) = (node(rng), node(rng));
                let c = Cap::MAX - rng.below(1000) as Cap;
                let r = rng.below((Cap::MAX - c) as u64 + 1) as Cap;
                b.add_edge(u, v, c, r).unwrap();
            }
        }
        Kind::MultiArcs => {
            let few = 1 + rng.below(4) as u32;
            for _ in 0..pairs.max(4) {
                let u = rng.below(few as u64) as u32 % n as u32;
                let v = rng.below(few as u64 + 1) as u32 % n as u32;
                b.add_edge(u, v, small(rng, 20), small(rng, 5)).unwrap();
            }
        }
        Kind::Long => {
            for v in 1..n as u32 {
                b.add_edge(v - 1, v, 1 + rng.below(20) as Cap, rng.below(3) as Cap)
                    .unwrap();
            }
            for _ in 0..rng.below(4) {
                let (u, v) = (node(rng), node(rng));
                b.add_edge(u, v, rng.below(5) as Cap, 0).unwrap();
            }
        }
        Kind::Star => {
            for v in 1..n as u32 {
                if rng.below(4) != 0 {
                    b.add_edge(0, v, small(rng, 30), small(rng, 30)).unwrap();
                }
            }
        }
    }
    for v in 0..n as u32 {
        let (s, t) = match kind {
            Kind::NoTerminals => (0, 0),
            Kind::Saturated => (rng.below(3) as Cap, 10_000),
            Kind::NearLimits => match rng.below(3) {
                0 => (Cap::MAX - rng.below(100) as Cap, 0),
                1 => (0, Cap::MAX - rng.below(100) as Cap),
                _ => (0, 0),
            },
            Kind::Long => match (v, rng.below(10)) {
                (0, _) => (1000, 0),
                (_, 0) => (0, rng.below(30) as Cap),
                _ => (0, 0),
            },
            _ => (small(rng, 25), small(rng, 25)),
        };
        b.add_terminals(v, s, t).unwrap();
    }
    if rng.below(5) == 0 {
        b.add_arc(Vertex::Source, Vertex::Sink, rng.below(7) as Cap)
            .unwrap();
    }
    b.build().unwrap()
}

/// Phase two (`solve_flows`) on random graphs of every kind and on grids given as general
/// graphs: the flows are maximum flows and the cut is BK's.
#[test]
fn phase_two_flows_on_random_graphs() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0xf10_0003);
    let mut solver = CudaCsr::on(segcut::cuda::Device::default());
    for i in 0..210u64 {
        let kind = KINDS[(i % KINDS.len() as u64) as usize];
        let g = random_graph(&mut rng, kind, if i % 3 == 0 { 8 } else { 400 });
        let what = format!("flows graph #{i} {kind:?}");
        common::assert_flows(&mut solver, &Network::Csr(g), &what);
    }
    let mut g = GridGraph::new_2d(37, 21, Connectivity::N8).unwrap();
    for v in 0..g.num_nodes() {
        g.set_terminals(v, (v % 7) as Cap, (v % 5) as Cap * 2);
        for d in 0..8 {
            if g.neighbor(v, d).is_some() {
                g.caps_mut(d)[v] = ((v + d) % 4) as Cap;
            }
        }
    }
    common::assert_flows(
        &mut solver,
        &Network::Grid(g),
        "flows of a grid via cuda-csr",
    );
}

#[test]
fn agrees_with_bk_on_1200_random_graphs() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0xc5c5_0005);
    let mut solver = CudaCsr::on(segcut::cuda::Device::default());
    let mut count = 0;
    for i in 0..1200u64 {
        let kind = KINDS[(i % KINDS.len() as u64) as usize];
        let max_n = match i % 10 {
            0 => 3,
            9 => 2000,
            _ => 120,
        };
        let g = random_graph(&mut rng, kind, max_n);
        // Every few graphs, exercise the other group sizes and a short relabel interval.
        solver.group = [0, 4, 8, 16, 32][(i % 5) as usize];
        solver.relabel_every = if i % 7 == 0 { 1 + (i % 3) as u32 } else { 0 };
        // Split and single pushes; the one-block loops always, never, or on short lists only.
        solver.spread_after = [0, u32::MAX, 1][(i % 3) as usize];
        solver.small_list = [1024, 0, 8, 3][(i / 3 % 4) as usize];
        let what = format!(
            "graph #{i} {kind:?} n={} arcs={} group={} every={} spread_after={} small={}",
            g.num_nodes(),
            g.num_arcs(),
            solver.group,
            solver.relabel_every,
            solver.spread_after,
            solver.small_list
        );
        let flow = check_with(&mut solver, &g, &what);
        if matches!(kind, Kind::NoTerminals) {
            assert_eq!(flow, g.constant_flow(), "{what}");
        }
        count += 1;
    }
    assert_eq!(count, 1200);
}

#[test]
fn tiny_and_degenerate_graphs() {
    if !gpu_or_skip() {
        return;
    }
    for (s, t) in [(0, 0), (5, 0), (0, 5), (3, 7), (7, 3), (Cap::MAX, Cap::MAX)] {
        let mut b = CsrBuilder::new(1).unwrap();
        b.add_terminals(0, s, t).unwrap();
        let flow = check(&b.build().unwrap(), &format!("1 node s={s} t={t}"));
        assert_eq!(flow, s.min(t) as i64);
    }
    // No nodes at all: only the constant flow.
    let mut b = CsrBuilder::new(0).unwrap();
    b.add_arc(Vertex::Source, Vertex::Sink, 9).unwrap();
    let g = b.build().unwrap();
    assert_eq!(
        CudaCsr::on(segcut::cuda::Device::default())
            .solve_csr(&g)
            .unwrap()
            .flow,
        9
    );
    // Two nodes joined by a saturated pair at the i32 limit.
    let mut b = CsrBuilder::new(2).unwrap();
    b.add_terminals(0, Cap::MAX, 0).unwrap();
    b.add_terminals(1, 0, Cap::MAX).unwrap();
    b.add_edge(0, 1, Cap::MAX - 1, 1).unwrap();
    assert_eq!(
        check(&b.build().unwrap(), "limit pair"),
        Cap::MAX as i64 - 1
    );
}

#[test]
fn genrmf_and_washington_families() {
    if !gpu_or_skip() {
        return;
    }
    let mut solver = CudaCsr::on(segcut::cuda::Device::default());
    for text in [
        "genrmf-long:10:s1",
        "genrmf-wide:10:s2",
        "genrmf-long:14:s3",
        "genrmf-wide:14:s4",
        "rlg-long:10:s1",
        "rlg-wide:10:s2",
        "rlg-long:14:s3",
        "rlg-wide:14:s4",
    ] {
        let spec: InstanceSpec = text.parse().unwrap();
        let net = generate(&spec).unwrap();
        let g = net.to_csr().unwrap();
        check_with(&mut solver, &g, text);
        eprintln!("{text}: {:?}", solver.stats);
    }
}

#[test]
fn grids_as_general_graphs() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(21);
    let conns = [
        Connectivity::N4,
        Connectivity::N8,
        Connectivity::N6,
        Connectivity::N26,
    ];
    for i in 0..40u64 {
        let conn = conns[(i % 4) as usize];
        let side = |rng: &mut Rng| 1 + rng.below(if conn.is_3d() { 7 } else { 30 }) as usize;
        let (w, h) = (side(&mut rng), side(&mut rng));
        let d = if conn.is_3d() { side(&mut rng) } else { 1 };
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        // Only arcs inside the grid may have capacity (validate checks it).
        for dir in 0..conn.degree() {
            let mut tails = Vec::new();
            g.for_each_arc(dir, |v, _| tails.push(v));
            for v in tails {
                g.caps_mut(dir)[v] = rng.below(8) as Cap;
            }
        }
        for v in 0..g.num_nodes() {
            let (s, t) = (rng.below(30) as Cap, rng.below(30) as Cap);
            g.set_terminals(v, s, t);
        }
        let csr = g.to_csr().unwrap();
        let what = format!("grid #{i} {conn} {w}x{h}x{d}");
        check(&csr, &what);
        // The grid path (to_csr inside the solver) gives the same answer.
        let via_grid = CudaCsr::on(segcut::cuda::Device::default())
            .solve_grid(&g)
            .unwrap();
        assert_eq!(via_grid, Bk::default().solve_grid(&g).unwrap(), "{what}");
    }
    for text in [
        "2d:256x256:n4:c10:s1",
        "2d:192x192:n8:c100:s2",
        "3d:40x40x40:n6:c10:s3",
    ] {
        let net = generate(&text.parse().unwrap()).unwrap();
        check(&net.to_csr().unwrap(), text);
    }
}

/// The Waterloo crops as general graphs (node id k is node k - 3), read independently of
/// segcut's DIMACS reader.
#[test]
fn waterloo_crops() {
    if !gpu_or_skip() {
        return;
    }
    for (path, expected) in common::waterloo_crops() {
        let text = std::fs::read_to_string(&path).unwrap();
        let (s, t, arcs) = common::raw_arcs(&text);
        let n = arcs.iter().map(|a| a.0.max(a.1)).max().unwrap() as usize - 2;
        let mut b = CsrBuilder::new(n).unwrap();
        let vertex = |id: u64| match id {
            _ if id == s => Vertex::Source,
            _ if id == t => Vertex::Sink,
            _ => Vertex::Node(id as u32 - 3),
        };
        for (u, v, cap) in arcs {
            b.add_arc(vertex(u), vertex(v), cap as Cap).unwrap();
        }
        let flow = check(&b.build().unwrap(), &path.display().to_string());
        assert_eq!(flow, expected, "{}", path.display());
    }
}

#[test]
fn repeated_solves_give_identical_cuts() {
    if !gpu_or_skip() {
        return;
    }
    let g = generate(&"rlg-wide:12:s5".parse().unwrap())
        .unwrap()
        .to_csr()
        .unwrap()
        .into_owned();
    let mut solver = CudaCsr::on(segcut::cuda::Device::default());
    let first = solver.solve_csr(&g).unwrap();
    verify(&g, &first).unwrap();
    for _ in 0..4 {
        assert_eq!(solver.solve_csr(&g).unwrap(), first);
    }
}

#[test]
fn registered_by_name_and_errors_without_a_gpu() {
    let kind: SolverKind = "cuda-csr".parse().unwrap();
    let mut s = solver_of(kind, AutoPolicy::default(), segcut::cuda::Device::default());
    assert_eq!(s.name(), "cuda-csr");
    let mut b = CsrBuilder::new(2).unwrap();
    b.add_terminals(0, 4, 0).unwrap();
    b.add_terminals(1, 0, 4).unwrap();
    b.add_edge(0, 1, 3, 0).unwrap();
    let g = b.build().unwrap();
    match s.solve_csr(&g) {
        Ok(cut) => {
            assert!(segcut::cuda::gpu_available());
            assert_eq!(cut.flow, 3);
        }
        Err(e) => {
            assert!(!segcut::cuda::gpu_available(), "{e}");
            assert!(matches!(e, Error::Unsupported(_)), "{e}");
        }
    }
    let bad = CudaCsr {
        group: 6,
        ..CudaCsr::on(segcut::cuda::Device::default())
    };
    let err = { bad }.solve_csr(&g).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
}

/// Timings at about a million nodes against BK (one thread), for docs/gpu.md. Run on the GPU
/// machine with `--ignored --nocapture`; `SEGCUT_CSR_TIMINGS` names the instances (a comma list of
/// `segcut gen` specs or `random:LOG2`), `SEGCUT_CSR_SWEEP=1` also tries other settings (every
/// setting must give the same cut), `SEGCUT_CSR_NO_BK=1` leaves BK out (when it is timed apart).
#[test]
#[ignore]
fn timings_at_scale() {
    if !gpu_or_skip() {
        return;
    }
    let sweep = std::env::var_os("SEGCUT_CSR_SWEEP").is_some();
    let no_bk = std::env::var_os("SEGCUT_CSR_NO_BK").is_some();
    let list = std::env::var("SEGCUT_CSR_TIMINGS").unwrap_or_else(|_| {
        "random:20,genrmf-long:20:s1,genrmf-wide:20:s1,rlg-long:20:s1,rlg-wide:20:s1,\
         2d:1024x1024:n4:c10:s1,2d:1024x1024:n8:c100:s1,3d:128x128x64:n6:c10:s1"
            .into()
    });
    for name in list.split(',').map(str::trim) {
        let g = match name.strip_prefix("random:") {
            Some(log2) => random_sparse(1 << log2.parse::<u32>().unwrap(), 3),
            None => generate(&name.parse().unwrap())
                .unwrap()
                .to_csr()
                .unwrap()
                .into_owned(),
        };
        let net = Network::Csr(g);
        let Network::Csr(g) = &net else {
            unreachable!()
        };
        let base = CudaCsr::on(segcut::cuda::Device::default());
        let mut settings = vec![base.clone()];
        if sweep {
            let old = CudaCsr {
                spread_after: u32::MAX,
                small_list: 0,
                ..base.clone()
            };
            // The slow settings last, so that a time limit still leaves the others.
            settings.extend([
                CudaCsr {
                    spread_after: 0,
                    ..base.clone()
                },
                CudaCsr {
                    spread_after: 8,
                    ..base.clone()
                },
                CudaCsr {
                    spread_after: 32,
                    ..base.clone()
                },
                CudaCsr {
                    group: 8,
                    ..base.clone()
                },
                CudaCsr {
                    small_list: 0,
                    ..base.clone()
                },
                CudaCsr {
                    spread_after: u32::MAX,
                    ..base.clone()
                },
                old,
            ]);
        }
        let mut first: Option<segcut::maxflow::Cut> = None;
        let mut rows = Vec::new();
        for mut solver in settings {
            let what = format!(
                "every={} group={} ops={} small={} spread_after={}",
                solver.relabel_every,
                solver.group,
                solver.ops_per_round,
                solver.small_list,
                solver.spread_after
            );
            let t = solver.run((&net).into(), false).unwrap();
            verify(g, &t.cut).unwrap();
            match &first {
                None => first = Some(t.cut.clone()),
                Some(c) => assert!(*c == t.cut, "{name}: {what} gives another cut"),
            }
            // Printed before BK runs, so that a slow BK still leaves the GPU's numbers.
            eprintln!(
                "{name}: n={} arcs={} flow={} | cuda-csr {what}: {:.1} ms (+{:.1} ms layout), {} \
                 rounds ({} in the loop), {} global relabels, {} BFS levels ({} in the loop), {} \
                 launches",
                g.num_nodes(),
                g.num_arcs(),
                t.cut.flow,
                t.stats.solve.as_secs_f64() * 1e3,
                t.stats.build.as_secs_f64() * 1e3,
                solver.stats.rounds,
                solver.stats.small_rounds,
                solver.stats.global_relabels,
                solver.stats.bfs_levels,
                solver.stats.small_levels,
                solver.stats.launches
            );
            rows.push((what, t.stats.solve));
        }
        if no_bk {
            continue;
        }
        let bk = Bk::default().run((&net).into(), false).unwrap();
        let first = first.unwrap();
        assert_eq!(first.flow, bk.cut.flow, "{name}");
        assert!(first.sink_side == bk.cut.sink_side, "{name}: canonical cut");
        for (what, solve) in rows {
            eprintln!(
                "{name}: bk {:.1} ms | cuda-csr {what}: {:.1} ms | speed-up {:.2}",
                bk.stats.solve.as_secs_f64() * 1e3,
                solve.as_secs_f64() * 1e3,
                bk.stats.solve.as_secs_f64() / solve.as_secs_f64()
            );
        }
    }
}

/// A random sparse graph: `n` nodes, `k·n` random pairs, a tenth of the nodes tied to the source
/// and a tenth to the sink.
fn random_sparse(n: usize, k: usize) -> CsrGraph {
    let mut rng = Rng::new(99);
    let mut b = CsrBuilder::with_capacity(n, k * n);
    for _ in 0..k * n {
        let (u, v) = (rng.below(n as u64) as u32, rng.below(n as u64) as u32);
        b.add_edge(u, v, rng.below(100) as Cap, rng.below(100) as Cap)
            .unwrap();
    }
    for v in 0..n as u32 {
        match rng.below(10) {
            0 => b.add_terminals(v, 1 + rng.below(500) as Cap, 0).unwrap(),
            1 => b.add_terminals(v, 0, 1 + rng.below(500) as Cap).unwrap(),
            _ => {}
        }
    }
    b.build().unwrap()
}
