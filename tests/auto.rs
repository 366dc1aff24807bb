//! The solver choice and its reasons: the pure decision with and without a GPU, what this
//! machine decides, that every result names the solver that ran (the fallback to BK included),
//! and that segmentation reports the same choice as the solver made. Tests that need a GPU say so
//! and return without one, unless `SEGCUT_REQUIRE_GPU=1` is set: then they fail.

mod common;

use common::gpu_or_skip;
use segcut::gen::{random_sparse, SparseSpec};
use segcut::graph::{Connectivity, GridGraph, Network};
use segcut::maxflow::bk::Bk;
use segcut::maxflow::{
    choose, solve, Auto, AutoPolicy, Choice, GraphSize, SolveOptions, Solver, SolverKind,
    AUTO_MIN_GPU_NODES,
};
use segcut::segment::{segment, Image, Seed, Seeds, SegmentOptions};

const GRID: bool = true;
const GENERAL: bool = false;
const AUTO: SolverKind = SolverKind::Auto;

fn size(grid: bool, nodes: usize) -> GraphSize {
    GraphSize {
        grid,
        nodes,
        arcs: 4 * nodes,
        terminal_nodes: nodes,
        one_way_arcs: 0,
    }
}

fn policy(min_gpu_nodes: usize) -> AutoPolicy {
    AutoPolicy {
        min_gpu_nodes,
        use_gpu: true,
    }
}

fn no_gpu() -> Option<String> {
    Some("no CUDA driver (test)".into())
}

#[test]
fn solver_kinds_round_trip_through_their_names() {
    for (kind, name) in SolverKind::ALL {
        assert_eq!(kind.name(), name);
        assert_eq!(name.parse::<SolverKind>().unwrap(), kind);
        assert_eq!(kind.to_string(), name);
    }
    let e = "cuda".parse::<SolverKind>().unwrap_err().to_string();
    for name in SolverKind::names() {
        assert!(e.contains(name), "{e}");
    }
}

#[test]
fn small_graphs_go_to_bk_without_asking_for_the_gpu() {
    for grid in [GRID, GENERAL] {
        let c = choose(AUTO, size(grid, 999), &policy(1000), || {
            panic!("the GPU must not be queried under the threshold")
        });
        assert_eq!(c.solver, SolverKind::Bk);
        assert!(c.reason.contains("999 nodes"), "{}", c.reason);
        assert!(c.reason.contains("threshold of 1000"), "{}", c.reason);
    }
}

#[test]
fn a_policy_without_the_gpu_never_asks_for_it() {
    let p = AutoPolicy {
        min_gpu_nodes: 0,
        use_gpu: false,
    };
    let c = choose(AUTO, size(GRID, 1 << 22), &p, || panic!("no GPU query"));
    assert_eq!(c.solver, SolverKind::Bk);
    assert!(c.reason.contains("not allowed"), "{}", c.reason);
}

#[test]
fn large_graphs_go_to_the_gpu_solver_of_their_kind() {
    // At the threshold exactly, the GPU is used.
    let c = choose(AUTO, size(GRID, 1000), &policy(1000), || None);
    assert_eq!(c.solver, SolverKind::CudaGrid);
    assert!(c.reason.contains("grid of 1000 nodes"), "{}", c.reason);
    let c = choose(AUTO, size(GENERAL, 5000), &policy(1000), || None);
    assert_eq!(c.solver, SolverKind::CudaCsr);
    assert!(
        c.reason.contains("general graph of 5000 nodes"),
        "{}",
        c.reason
    );
    assert!(c.reason.contains("GPU"), "{}", c.reason);
}

#[test]
fn without_a_gpu_everything_goes_to_bk_with_the_reason() {
    for grid in [GRID, GENERAL] {
        let c = choose(AUTO, size(grid, 1 << 22), &policy(1000), no_gpu);
        assert_eq!(c.solver, SolverKind::Bk);
        assert!(c.reason.contains("no CUDA driver (test)"), "{}", c.reason);
        assert!(c.reason.contains("4194304 nodes"), "{}", c.reason);
    }
}

#[test]
fn named_solvers_are_themselves() {
    for (kind, _) in SolverKind::ALL.into_iter().skip(1) {
        for grid in [GRID, GENERAL] {
            let c = choose(kind, size(grid, 1 << 22), &policy(1000), || {
                panic!("a named solver needs no GPU query")
            });
            assert_eq!(c.solver, kind);
            assert!(c.reason.contains("requested"), "{}", c.reason);
        }
    }
}

/// Solves with `Auto` and BK and checks they agree; returns what `auto` ran.
fn auto_against_bk(net: &Network, policy: AutoPolicy) -> Choice {
    let got = Auto::new(policy, segcut::cuda::Device::default())
        .run(net.into(), false)
        .unwrap();
    let want = Bk::default().solve(net).unwrap();
    assert_eq!(got.cut, want);
    got.ran
}

#[test]
fn this_machine_decides_consistently() {
    let tiny = Network::Grid(GridGraph::new_2d(16, 16, Connectivity::N4).unwrap());
    let c = auto_against_bk(&tiny, AutoPolicy::default());
    assert_eq!(c.solver, SolverKind::Bk, "{}", c.reason);
    let big = Network::Grid(GridGraph::new_2d(512, 512, Connectivity::N4).unwrap());
    let c = auto_against_bk(&big, AutoPolicy::default());
    match segcut::cuda::gpu_unavailable_reason() {
        Some(why) => {
            assert_eq!(c.solver, SolverKind::Bk);
            assert!(c.reason.contains(&why), "{}", c.reason);
        }
        None => assert_eq!(c.solver, SolverKind::CudaGrid, "{}", c.reason),
    }
}

#[test]
fn every_result_names_its_solver() {
    let mut g = GridGraph::new_2d(8, 8, Connectivity::N4).unwrap();
    g.set_terminals(0, 9, 0);
    g.set_terminals(63, 0, 9);
    for v in 0..63 {
        let _ = g.set_arc(v, v + 1, 3);
    }
    let net = Network::Grid(g);
    let c = auto_against_bk(&net, AutoPolicy::default());
    assert_eq!(c.solver, SolverKind::Bk);
    assert!(c.reason.contains("64 nodes"), "{}", c.reason);
    for kind in [SolverKind::Bk, SolverKind::Dinic] {
        let s = solve(&net, &SolveOptions::with_solver(kind)).unwrap();
        assert_eq!(s.ran.solver, kind);
        assert_eq!(s.ran.reason, "requested");
        assert_eq!(s.certificate.unwrap().flow, s.cut.flow);
    }
    let small = random_sparse(&SparseSpec::new(500)).unwrap();
    let c = auto_against_bk(&Network::Csr(small), AutoPolicy::default());
    assert_eq!(c.solver, SolverKind::Bk);
    assert!(
        c.reason.contains("general graph of 500 nodes"),
        "{}",
        c.reason
    );
}

#[test]
fn auto_on_a_large_general_graph_uses_the_gpu_or_falls_back_to_bk() {
    let nodes = AUTO_MIN_GPU_NODES.max(1 << 16);
    let net = Network::Csr(random_sparse(&SparseSpec::new(nodes)).unwrap());
    let c = auto_against_bk(&net, AutoPolicy::default());
    if !gpu_or_skip() {
        assert_eq!(c.solver, SolverKind::Bk);
        assert!(c.reason.contains("no usable GPU"), "{}", c.reason);
        return;
    }
    assert_eq!(c.solver, SolverKind::CudaCsr, "{}", c.reason);
    assert_eq!(c.fallback, None);
}

/// `auto`'s flows come from the solver it picks for the cut (BK without a GPU or under the
/// threshold, the GPU solver above it) and are maximum flows either way.
#[test]
fn auto_flows_come_from_the_chosen_solver() {
    let mut g = GridGraph::new_2d(300, 300, Connectivity::N4).unwrap();
    for v in 0..g.num_nodes() {
        g.set_terminals(v, (v % 11) as i32, (v % 13) as i32);
        for d in 0..4 {
            if g.neighbor(v, d).is_some() {
                g.caps_mut(d)[v] = ((v * 7 + d) % 9) as i32;
            }
        }
    }
    let net = Network::Grid(g);
    let flow = common::assert_flows(
        &mut Auto::new(Default::default(), segcut::cuda::Device::default()),
        &net,
        "auto flows",
    );
    assert!(flow > 0);
    let opts = SolveOptions {
        flows: true,
        ..Default::default()
    };
    let s = solve(&net, &opts).unwrap();
    assert_eq!(s.cut.flow, flow);
    assert!(s.flows.is_some());
    if segcut::cuda::gpu_available() {
        assert_eq!(s.ran.solver, SolverKind::CudaGrid, "{}", s.ran.reason);
    } else {
        assert_eq!(s.ran.solver, SolverKind::Bk, "{}", s.ran.reason);
    }
}

/// A two-tone photo-sized image with one seed stroke of each class.
fn two_tone(w: usize, h: usize) -> (Image, Seeds) {
    let data = (0..w * h)
        .flat_map(|i| {
            let fg = (w / 4..3 * w / 4).contains(&(i % w)) && (h / 4..3 * h / 4).contains(&(i / w));
            let v = if fg { 40.0 } else { 200.0 } + (i % 7) as f32;
            [v, v * 0.9, v * 0.8]
        })
        .collect();
    let image = Image {
        dims: [w, h, 1],
        channels: 3,
        data,
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    let mut seeds = Seeds::unknown(image.dims);
    seeds.labels[w / 2 + w * (h / 2)] = Seed::Foreground;
    seeds.labels[1 + w] = Seed::Background;
    (image, seeds)
}

/// The case the solver API was rebuilt for: a small photo under `auto` must be cut by the
/// solver the report names. Below the threshold that is BK on a CPU-built graph; at or above it,
/// with a GPU, `cuda-grid` on a GPU-built graph; and the masks agree.
#[test]
fn segmentation_reports_the_solver_that_ran() {
    let (image, seeds) = two_tone(240, 160);
    let small = segment(&image, &seeds, &SegmentOptions::default()).unwrap();
    assert_eq!(small.stats.solver.solver, SolverKind::Bk);
    assert!(
        small.stats.solver.reason.contains("38400 nodes"),
        "{}",
        small.stats.solver.reason
    );
    assert!(small.stats.gpu.is_none(), "a BK solve builds on the CPU");
    // The same image with the threshold lowered under its size: the GPU when there is one.
    let mut low = SegmentOptions::default();
    low.auto.min_gpu_nodes = 1000;
    let big = segment(&image, &seeds, &low).unwrap();
    assert_eq!(big.mask, small.mask);
    if gpu_or_skip() {
        assert_eq!(big.stats.solver.solver, SolverKind::CudaGrid);
        assert!(big.stats.gpu.is_some(), "cuda-grid builds on the GPU");
    } else {
        assert_eq!(big.stats.solver.solver, SolverKind::Bk);
        assert!(big.stats.gpu.is_none());
    }
}

/// The CPU rule on the generic suite's families, as generated (small sizes): Dinic for the
/// one-way layered networks whose terminals touch a thin first and last layer (RLG long), BK
/// for vision grids (as grids and as general graphs), GENRMF (most arcs go both ways), RLG wide
/// (an eighth of the nodes on terminal arcs) and random sparse graphs.
#[test]
fn cpu_choice_picks_dinic_for_layered_graphs_and_bk_for_vision_graphs() {
    use segcut::gen::{generate, InstanceSpec};
    use segcut::maxflow::{cpu_choice, GraphRef};
    let expect = [
        ("rlg-long:12:s1", SolverKind::Dinic),
        ("rlg-wide:12:s1", SolverKind::Bk),
        ("genrmf-long:12:s1", SolverKind::Bk),
        ("genrmf-wide:12:s1", SolverKind::Bk),
        ("2d:64x64:n4:c10:s1", SolverKind::Bk),
        ("3d:16x16x16:n6:c10:s1", SolverKind::Bk),
        ("sparse:4096:d4:s1", SolverKind::Bk),
    ];
    for (spec, want) in expect {
        let net = generate(&spec.parse::<InstanceSpec>().unwrap()).unwrap();
        let size = GraphRef::from(&net).size();
        assert_eq!(cpu_choice(size).0, want, "{spec}: {size:?}");
        // The same grid as a general graph: still BK (every node has a terminal arc).
        if let Network::Grid(g) = &net {
            let csr = g.to_csr().unwrap();
            let size = GraphRef::from(&csr).size();
            assert!(!size.grid);
            assert_eq!(cpu_choice(size).0, SolverKind::Bk, "{spec} as CSR");
        }
    }
}

/// `auto` without a GPU runs what the CPU rule picks, says so, and gets the same flow as BK.
#[test]
fn auto_on_the_cpu_runs_dinic_on_an_rlg() {
    use segcut::gen::{generate, InstanceSpec};
    let net = generate(&"rlg-long:10:s2".parse::<InstanceSpec>().unwrap()).unwrap();
    let no_gpu = AutoPolicy {
        min_gpu_nodes: usize::MAX,
        use_gpu: false,
    };
    let solved = Auto::new(no_gpu, segcut::cuda::Device::default())
        .run((&net).into(), true)
        .unwrap();
    assert_eq!(
        solved.ran.solver,
        SolverKind::Dinic,
        "{}",
        solved.ran.reason
    );
    assert!(
        solved.ran.reason.contains("terminal arc"),
        "{}",
        solved.ran.reason
    );
    let bk = Bk::default().run((&net).into(), false).unwrap();
    assert_eq!(solved.cut.flow, bk.cut.flow);
}
