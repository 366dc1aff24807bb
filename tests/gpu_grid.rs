//! The `cuda-grid` solver against BK: the same flow value and the same canonical cut, and a
//! certificate on every solve. Without a usable GPU each test says so and returns, unless
//! `SEGCUT_REQUIRE_GPU=1` is set (on the GPU machine): then it fails.

mod common;

use common::gpu_or_skip;
use segcut::gen::grid::{vision_grid, GridSpec};
use segcut::graph::{Cap, Connectivity, GridGraph, Network};
use segcut::maxflow::bk::Bk;
use segcut::maxflow::cuda::{CudaGrid, GridTuning, TileBlocks};
use segcut::maxflow::{solver_of, verify, AutoPolicy, Solver, SolverKind};
use segcut::rng::Rng;
use segcut::Error;

const ALL: [Connectivity; 4] = [
    Connectivity::N4,
    Connectivity::N8,
    Connectivity::N6,
    Connectivity::N26,
];

/// Solves `g` with cuda-grid and BK and checks that they agree exactly and that the GPU's cut
/// carries a certificate. Returns the flow.
fn check_against_bk(g: &GridGraph, what: &str) -> i64 {
    check_with(&mut CudaGrid::on(segcut::cuda::Device::default()), g, what)
}

/// [`check_against_bk`] with a given solver configuration.
fn check_with(solver: &mut CudaGrid, g: &GridGraph, what: &str) -> i64 {
    let gpu = solver
        .solve_grid(g)
        .unwrap_or_else(|e| panic!("{what}: cuda-grid failed: {e}"));
    let bk = Bk::default().solve_grid(g).unwrap();
    common::assert_same_cut(g, &gpu, &bk, what, |v| format!("{v} {:?}", g.coords(v)))
}

/// Kinds of random capacity.
#[derive(Clone, Copy, Debug)]
enum Caps {
    /// Small values, many of them zero.
    Small,
    /// Only n-links: no terminal arcs, so the flow is 0.
    NoTerminals,
    /// Weak source arcs, strong sink arcs and n-links: every source arc is saturated.
    Saturated,
    /// Pairs of opposite capacities summing to nearly `i32::MAX`, terminals near it too.
    NearLimits,
    /// A few terminal arcs far apart, so flow must travel long paths.
    Sparse,
}

fn random_grid(rng: &mut Rng, conn: Connectivity, kind: Caps, max_side: u64) -> GridGraph {
    let side = |rng: &mut Rng| 1 + rng.below(max_side) as usize;
    let (w, h) = (side(rng), side(rng));
    let d = if conn.is_3d() { side(rng) } else { 1 };
    let mut g = GridGraph::new(w, h, d, conn).unwrap();
    let n = g.num_nodes();
    let small = |rng: &mut Rng, hi: u64| -> Cap {
        if rng.below(3) == 0 {
            0
        } else {
            rng.below(hi + 1) as Cap
        }
    };
    for dir in (0..conn.degree()).step_by(2) {
        let mut pairs = Vec::new();
        g.for_each_arc(dir, |v, u| pairs.push((v, u)));
        for (v, u) in pairs {
            let (a, b) = match kind {
                Caps::Small | Caps::NoTerminals | Caps::Sparse => (small(rng, 9), small(rng, 9)),
                Caps::Saturated => (50 + rng.below(50) as Cap, 50 + rng.below(50) as Cap),
                Caps::NearLimits => {
                    let a = Cap::MAX - rng.below(1000) as Cap;
                    (
                        a,
                        (Cap::MAX - a) - rng.below((Cap::MAX - a) as u64 + 1) as Cap,
                    )
                }
            };
            g.caps_mut(dir)[v] = a;
            g.caps_mut(dir ^ 1)[u] = b;
        }
    }
    let (src, snk) = g.terminal_caps_mut();
    for v in 0..n {
        let (s, t) = match kind {
            Caps::Small => (small(rng, 20), small(rng, 20)),
            Caps::NoTerminals => (0, 0),
            Caps::Saturated => (rng.below(3) as Cap, 1000),
            Caps::NearLimits => (
                Cap::MAX - rng.below(100) as Cap,
                Cap::MAX - rng.below(100) as Cap,
            ),
            Caps::Sparse => match rng.below(20) {
                0 => (1 + rng.below(30) as Cap, 0),
                1 => (0, 1 + rng.below(30) as Cap),
                _ => (0, 0),
            },
        };
        // Near the limits, make half the nodes pure sources or sinks so that flow has to move.
        let (s, t) = match (kind, rng.below(2)) {
            (Caps::NearLimits, 0) => (s, 0),
            (Caps::NearLimits, _) => (0, t),
            _ => (s, t),
        };
        src[v] = s;
        snk[v] = t;
    }
    g
}

/// Every kind of random capacity.
const KINDS: [Caps; 5] = [
    Caps::Small,
    Caps::NoTerminals,
    Caps::Saturated,
    Caps::NearLimits,
    Caps::Sparse,
];

#[test]
fn agrees_with_bk_on_1000_random_grids() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0x5e9c_0007);
    let mut count = 0;
    for i in 0..1000u64 {
        let conn = ALL[(i % 4) as usize];
        let kind = KINDS[((i / 4) % KINDS.len() as u64) as usize];
        // Sizes from 1×1 upward; 3D sides shorter to keep the node counts comparable. Every
        // other grid spans several tiles (32×32, 32×16, 32×4×4, 16×4×4) with partial ones.
        let max_side = match (conn.is_3d(), i % 10) {
            (_, 0) => 2,
            (false, r) if r % 2 == 1 => 40,
            (false, _) => 120,
            (true, r) if r % 2 == 1 => 9,
            (true, _) => 24,
        };
        let g = random_grid(&mut rng, conn, kind, max_side);
        let what = format!("grid #{i} {conn} {:?} {kind:?}", g.dims());
        let flow = check_against_bk(&g, &what);
        if matches!(kind, Caps::NoTerminals) {
            assert_eq!(flow, 0, "{what}");
        }
        count += 1;
    }
    assert_eq!(count, 1000);
}

/// The tunings the variant tests run: sweeps per launch, batch lengths (an odd one, so that the
/// node sweep's budget leaves a short batch), every way of sizing the tile launches (a few
/// fixed blocks take many tiles each, reusing their shared memory), and batches replayed as
/// CUDA graphs or launched one by one; all of them on the host loop, and then the persistent
/// solve (one cooperative launch) with a sweep and with many.
fn tunings() -> Vec<GridTuning> {
    let mut all = Vec::new();
    for sweeps in [1, 64] {
        for (check, blocks, graphs) in [
            (4, TileBlocks::Fit, true),
            (4, TileBlocks::Fit, false),
            (13, TileBlocks::Fixed(3), true),
            (1, TileBlocks::Fixed(2), false),
            (32, TileBlocks::Fit, true),
        ] {
            all.push(GridTuning {
                tile_sweeps: sweeps,
                node_ops: if sweeps == 1 { 1 } else { 4 },
                check_every: check,
                tile_blocks: blocks,
                graphs,
                persistent_max_nodes: 0,
                // The block relabel pass stays covered where the warp one is the default.
                warp_bfs: check != 13,
                // The tail finish from the first relabel on, never, and at the default share.
                tail_active: match check {
                    1 => 1.0,
                    32 => 0.0,
                    _ => 0.01,
                },
                tail_pushes: if graphs { 1 } else { 8 },
                // The queued relabel and its passes (where the warp pass runs).
                queue: graphs,
                ..GridTuning::default()
            });
        }
    }
    for (sweeps, min_rounds) in [(1, 1), (64, 8), (2, 3)] {
        all.push(GridTuning {
            tile_sweeps: sweeps,
            relabel_min_rounds: min_rounds,
            persistent_max_nodes: usize::MAX,
            ..GridTuning::default()
        });
    }
    all
}

/// Every tuning is exact (the tiled discharge on N4, N8 and N6, the node sweep on N26).
#[test]
fn every_tuning_agrees_with_bk() {
    if !gpu_or_skip() {
        return;
    }
    let kinds = [Caps::Small, Caps::Saturated, Caps::NearLimits, Caps::Sparse];
    let mut rng = Rng::new(0x7a11_0005);
    for tuning in tunings() {
        let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
        for i in 0..40u64 {
            let conn = ALL[(i % 4) as usize];
            let kind = kinds[((i / 4) % kinds.len() as u64) as usize];
            let side = if conn.is_3d() { 20 } else { 90 };
            let g = random_grid(&mut rng, conn, kind, side);
            let what = format!("{tuning} grid #{i} {conn} {:?} {kind:?}", g.dims());
            check_with(&mut solver, &g, &what);
            assert!(
                solver.stats.global_relabels > 0,
                "{what}: no relabel counted"
            );
            // The persistent solve ran where it applies (every GPU this runs on has
            // cooperative launches): no batch was launched or read back from the host.
            if tuning.persistent_max_nodes == usize::MAX && conn != Connectivity::N26 {
                assert!(
                    solver.stats.active_tiles.is_empty() && solver.stats.graph_replays == 0,
                    "{what}: the host loop ran instead of the persistent solve"
                );
            }
        }
    }
}

/// A device handle shared by several solvers (a batch's workers) sizes the persistent launch
/// and the tile launches to its share: with a share far above the resident blocks every launch
/// runs one block that takes every tile in turn. Four threads solve at once on their own
/// streams, as a batch's workers do, and every cut is still BK's.
#[test]
fn shared_devices_agree_with_bk_side_by_side() {
    if !gpu_or_skip() {
        return;
    }
    let shares = [1u32, 4, 7, 100_000];
    std::thread::scope(|s| {
        for (t, &share) in shares.iter().enumerate() {
            s.spawn(move || {
                let kinds = [Caps::Small, Caps::Saturated, Caps::Sparse];
                let mut rng = Rng::new(0x5ba2_0000 + t as u64);
                let device = segcut::cuda::Device::default().shared_by(share);
                for persistent in [usize::MAX, 0] {
                    let tuning = GridTuning {
                        persistent_max_nodes: persistent,
                        ..GridTuning::default()
                    };
                    let mut solver = CudaGrid::new(device, tuning.clone());
                    for i in 0..24u64 {
                        let conn = ALL[(i % 3) as usize];
                        let kind = kinds[((i / 3) % kinds.len() as u64) as usize];
                        let side = if conn.is_3d() { 24 } else { 120 };
                        let g = random_grid(&mut rng, conn, kind, side);
                        let what = format!(
                            "share {share} {tuning} grid #{i} {conn} {:?} {kind:?}",
                            g.dims()
                        );
                        check_with(&mut solver, &g, &what);
                        if persistent == usize::MAX {
                            assert!(
                                solver.stats.active_tiles.is_empty()
                                    && solver.stats.graph_replays == 0,
                                "{what}: the host loop ran instead of the persistent solve"
                            );
                        }
                    }
                }
            });
        }
    });
}

/// The persistent solve on grids of one tile each (one block, so its grid barriers cannot wait
/// on blocks that racecheck runs one after another), against BK: the test to run under
/// `compute-sanitizer --tool racecheck` for the persistent kernel, whose shared-memory code is
/// the discharge's and the relabel pass's.
#[test]
fn sanitizer_single_tile_persistent() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0x5a71_0002);
    let tuning = GridTuning {
        persistent_max_nodes: usize::MAX,
        ..GridTuning::default()
    };
    let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
    for (conn, [w, h, d]) in [
        (Connectivity::N4, [32, 32, 1]),
        (Connectivity::N8, [32, 16, 1]),
        (Connectivity::N6, [32, 4, 4]),
    ] {
        let spec = if conn.is_3d() {
            GridSpec::new_3d(w, h, d, conn)
        } else {
            GridSpec::new_2d(w, h, conn)
        };
        let vision = vision_grid(&spec.with_scale(100)).unwrap();
        let random = random_grid(&mut rng, conn, Caps::Sparse, 4);
        for g in [&vision, &random] {
            let what = format!("{tuning} {conn} {:?}", g.dims());
            check_with(&mut solver, g, &what);
            assert!(
                solver.stats.active_tiles.is_empty(),
                "{what}: the host loop ran instead of the persistent solve"
            );
        }
    }
}

/// A few multi-tile grids of each connectivity with every tuning: small enough to run under
/// compute-sanitizer (`sanitizer_sized` in the test name filter).
#[test]
fn sanitizer_sized_grids_every_tuning() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0x5a71_0001);
    let shapes = [
        (Connectivity::N4, [70, 40, 1]),
        (Connectivity::N8, [70, 40, 1]),
        (Connectivity::N6, [40, 10, 10]),
        (Connectivity::N26, [20, 10, 10]),
    ];
    for (conn, [w, h, d]) in shapes {
        let spec = if conn.is_3d() {
            GridSpec::new_3d(w, h, d, conn)
        } else {
            GridSpec::new_2d(w, h, conn)
        };
        let vision = vision_grid(&spec.with_scale(100)).unwrap();
        let random = random_grid(&mut rng, conn, Caps::Sparse, 30);
        for tuning in tunings() {
            let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
            for g in [&vision, &random] {
                let what = format!("{tuning} {conn} {:?}", g.dims());
                check_with(&mut solver, g, &what);
            }
        }
    }
}

/// Phase two (`solve_flows`) on random multi-tile grids of every connectivity and capacity
/// kind (so both discharges, tiles and the node sweep): the flows are maximum flows and the cut
/// is BK's.
#[test]
fn phase_two_flows_on_random_grids() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0xf10_0002);
    for tuning in [GridTuning::default(), tunings()[4].clone()] {
        let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
        for i in 0..120u64 {
            let conn = ALL[(i % 4) as usize];
            let kind = KINDS[((i / 4) % KINDS.len() as u64) as usize];
            let side = match (conn.is_3d(), i % 3) {
                (_, 0) => 3,
                (true, _) => 20,
                (false, _) => 90,
            };
            let g = random_grid(&mut rng, conn, kind, side);
            let what = format!("{tuning} flows grid #{i} {conn} {:?} {kind:?}", g.dims());
            common::assert_flows(&mut solver, &Network::Grid(g), &what);
        }
    }
}

/// A seed (sink capacity) on a tile's border, reached only from the next tile, which holds no
/// seed: the relabel must visit that tile (tile shapes: 32×32, 32×16, 32×4×4, 16×4×4).
#[test]
fn seed_on_a_tile_border() {
    if !gpu_or_skip() {
        return;
    }
    for (conn, len) in [
        (Connectivity::N4, 32),
        (Connectivity::N8, 16),
        (Connectivity::N6, 4),
        (Connectivity::N26, 4),
    ] {
        for b in [len - 1, len, len + 1] {
            let mut g = if conn.is_3d() {
                GridGraph::new(1, 1, 3 * len, conn).unwrap()
            } else {
                GridGraph::new(1, 3 * len, 1, conn).unwrap()
            };
            g.set_terminals(b - 1, 7, 0);
            g.set_terminals(b, 0, 9);
            g.set_arc(b - 1, b, 5).unwrap();
            let flow = check_against_bk(&g, &format!("{conn} seed at {b}"));
            assert_eq!(flow, 5, "{conn} seed at {b}");
        }
    }
}

#[test]
fn single_node_grids() {
    if !gpu_or_skip() {
        return;
    }
    for conn in ALL {
        for (s, t) in [(0, 0), (5, 0), (0, 5), (3, 7), (7, 3), (Cap::MAX, Cap::MAX)] {
            let mut g = GridGraph::new(1, 1, 1, conn).unwrap();
            g.set_terminals(0, s, t);
            let flow = check_against_bk(&g, &format!("1x1 {conn} s={s} t={t}"));
            assert_eq!(flow, s.min(t) as i64);
        }
    }
}

#[test]
fn vision_grids_2d_and_3d() {
    if !gpu_or_skip() {
        return;
    }
    let specs = [
        GridSpec::new_2d(512, 512, Connectivity::N4).with_scale(10),
        GridSpec::new_2d(512, 512, Connectivity::N4).with_scale(100),
        GridSpec::new_2d(384, 384, Connectivity::N8).with_scale(10),
        GridSpec::new_2d(384, 384, Connectivity::N8).with_scale(100),
        GridSpec::new_3d(64, 64, 64, Connectivity::N6).with_scale(10),
        GridSpec::new_3d(64, 64, 64, Connectivity::N6).with_scale(100),
        GridSpec::new_3d(40, 40, 40, Connectivity::N26).with_scale(10),
        GridSpec::new_3d(40, 40, 40, Connectivity::N26).with_scale(100),
    ];
    for spec in specs {
        let g = vision_grid(&spec).unwrap();
        let mut solver = CudaGrid::on(segcut::cuda::Device::default());
        let t = std::time::Instant::now();
        let cut = solver.solve_grid(&g).unwrap();
        let gpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = std::time::Instant::now();
        let bk = Bk::default().solve_grid(&g).unwrap();
        let bk_ms = t.elapsed().as_secs_f64() * 1e3;
        eprintln!(
            "{spec:?}: flow {} | cuda-grid {gpu_ms:.1} ms ({} rounds, {} global relabels, {} \
             relabel launches, {} tiles) | bk {bk_ms:.1} ms",
            cut.flow,
            solver.stats.rounds,
            solver.stats.global_relabels,
            solver.stats.bfs_levels,
            solver.stats.tiles_discharged
        );
        assert_eq!(cut.flow, bk.flow, "{spec:?}");
        assert!(cut.sink_side == bk.sink_side, "{spec:?}: canonical cut");
        verify(&g, &cut).unwrap();
    }
}

/// The warp-per-tile relabel on grids past the persistent solve's size (the host loop), with
/// widths and heights that leave partial tiles on both edges: the same cut as the block pass
/// and as BK.
#[test]
fn warp_relabel_on_large_grids_with_partial_tiles() {
    if !gpu_or_skip() {
        return;
    }
    let specs = [
        GridSpec::new_2d(1000, 613, Connectivity::N8).with_scale(100),
        GridSpec::new_2d(777, 1030, Connectivity::N4).with_scale(10),
        GridSpec::new_2d(33, 9001, Connectivity::N8).with_scale(10),
        GridSpec::new_2d(9001, 31, Connectivity::N4).with_scale(100),
    ];
    for spec in specs {
        let g = vision_grid(&spec).unwrap();
        let bk = Bk::default().solve_grid(&g).unwrap();
        for warp_bfs in [true, false] {
            let tuning = GridTuning {
                warp_bfs,
                ..GridTuning::default()
            };
            let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning);
            let cut = solver.solve_grid(&g).unwrap();
            eprintln!(
                "{spec:?} warp_bfs={warp_bfs}: {} global relabels, {} passes, {:.1} ms relabel",
                solver.stats.global_relabels, solver.stats.bfs_levels, solver.stats.relabel_ms
            );
            assert_eq!(cut.flow, bk.flow, "{spec:?} warp_bfs={warp_bfs}");
            assert!(
                cut.sink_side == bk.sink_side,
                "{spec:?} warp_bfs={warp_bfs}: canonical cut"
            );
            verify(&g, &cut).unwrap();
        }
    }
}

/// The tail finish (`push_paths`) from the first global relabel on, with one path launch per
/// relabel and with many, on random grids of every kind and on vision grids large enough for
/// the host loop: the same cut as BK, and the finish did run.
#[test]
fn tail_finish_agrees_with_bk() {
    if !gpu_or_skip() {
        return;
    }
    let kinds = [Caps::Small, Caps::Saturated, Caps::NearLimits, Caps::Sparse];
    let mut rng = Rng::new(0x7a11_5a11);
    for pushes in [1, 16] {
        let tuning = GridTuning {
            tail_active: 1.0,
            tail_pushes: pushes,
            persistent_max_nodes: 0,
            ..GridTuning::default()
        };
        let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
        let mut ran = 0;
        for i in 0..60u64 {
            let conn = ALL[(i % 3) as usize];
            let kind = kinds[((i / 3) % kinds.len() as u64) as usize];
            let side = if conn.is_3d() { 24 } else { 150 };
            let g = random_grid(&mut rng, conn, kind, side);
            let what = format!("{tuning} grid #{i} {conn} {:?} {kind:?}", g.dims());
            check_with(&mut solver, &g, &what);
            let s = &solver.stats;
            // Every relabel that found active nodes was followed by the finish, never by rounds.
            let busy = s.active_nodes.iter().filter(|&&a| a > 0).count();
            assert!(
                s.tail_launches >= busy as u64,
                "{what}: {:?}",
                s.active_nodes
            );
            assert_eq!(s.rounds, 0, "{what}: tile rounds ran");
            ran += s.tail_launches;
        }
        assert!(ran > 0, "{tuning}: the finish never ran");
    }
    let specs = [
        GridSpec::new_2d(1000, 613, Connectivity::N8).with_scale(100),
        GridSpec::new_2d(777, 1030, Connectivity::N4).with_scale(10),
        GridSpec::new_3d(90, 70, 50, Connectivity::N6).with_scale(10),
    ];
    for spec in specs {
        let g = vision_grid(&spec).unwrap();
        let bk = Bk::default().solve_grid(&g).unwrap();
        for share in [1.0, 0.01] {
            let tuning = GridTuning {
                tail_active: share,
                ..GridTuning::default()
            };
            let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning);
            let cut = solver.solve_grid(&g).unwrap();
            eprintln!("{spec:?} tail={share}: {}", solver.stats.profile());
            assert_eq!(cut.flow, bk.flow, "{spec:?} tail={share}");
            assert!(
                cut.sink_side == bk.sink_side,
                "{spec:?} tail={share}: canonical cut"
            );
            verify(&g, &cut).unwrap();
            if share == 1.0 {
                assert!(solver.stats.tail_launches > 0, "{spec:?}: no path launch");
            }
        }
    }
}

/// Small grids through the tail finish alone: the test to run under compute-sanitizer memcheck
/// for `push_paths`.
#[test]
fn sanitizer_tail_finish() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0x5a71_7a11);
    let tuning = GridTuning {
        tail_active: 1.0,
        tail_pushes: 3,
        persistent_max_nodes: 0,
        ..GridTuning::default()
    };
    let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
    for i in 0..6u64 {
        let conn = ALL[(i % 3) as usize];
        let g = random_grid(
            &mut rng,
            conn,
            Caps::Sparse,
            if conn.is_3d() { 12 } else { 60 },
        );
        let what = format!("{tuning} grid #{i} {conn} {:?}", g.dims());
        check_with(&mut solver, &g, &what);
    }
}

/// The queued global relabel (`bfs_wqueue`, the default for 2D grids in the host loop) on
/// random grids of every kind and on vision grids large enough for long label chains: the same
/// cut as BK, and the queue did run (and did not where it is off or the grid is 3D).
#[test]
fn queued_relabel_agrees_with_bk() {
    if !gpu_or_skip() {
        return;
    }
    let kinds = [Caps::Small, Caps::Saturated, Caps::NearLimits, Caps::Sparse];
    let mut rng = Rng::new(0x9e0e_0001);
    for queue in [true, false] {
        let tuning = GridTuning {
            queue,
            persistent_max_nodes: 0,
            ..GridTuning::default()
        };
        let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
        let mut visits = 0;
        for i in 0..60u64 {
            let conn = ALL[(i % 3) as usize];
            let kind = kinds[((i / 3) % kinds.len() as u64) as usize];
            let side = if conn.is_3d() {
                24
            } else {
                40 + (i * 37) % 260
            };
            let g = random_grid(&mut rng, conn, kind, side);
            let what = format!("{tuning} grid #{i} {conn} {:?} {kind:?}", g.dims());
            check_with(&mut solver, &g, &what);
            if queue && !conn.is_3d() {
                visits += solver.stats.queue_visits;
            } else {
                assert_eq!(solver.stats.queue_visits, 0, "{what}: the queue ran");
            }
        }
        assert_eq!(visits > 0, queue, "{tuning}: {visits} queued tiles");
    }
    let specs = [
        GridSpec::new_2d(1000, 613, Connectivity::N8).with_scale(100),
        GridSpec::new_2d(777, 1030, Connectivity::N4).with_scale(10),
        GridSpec::new_2d(1500, 1200, Connectivity::N8).with_scale(10),
    ];
    for spec in specs {
        let g = vision_grid(&spec).unwrap();
        let bk = Bk::default().solve_grid(&g).unwrap();
        let tuning = GridTuning {
            queue: true,
            ..GridTuning::default()
        };
        let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning);
        let cut = solver.solve_grid(&g).unwrap();
        eprintln!("{spec:?}: {}", solver.stats.profile());
        assert_eq!(cut.flow, bk.flow, "{spec:?}");
        assert!(cut.sink_side == bk.sink_side, "{spec:?}: canonical cut");
        verify(&g, &cut).unwrap();
        assert!(
            solver.stats.queue_visits > 0,
            "{spec:?}: the queue did not run"
        );
    }
}

/// Small 2D grids through the queued relabel: the test to run under compute-sanitizer memcheck
/// for `queue_fill` and `bfs_wqueue`.
#[test]
fn sanitizer_queued_relabel() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0x5a71_9e0e);
    let tuning = GridTuning {
        queue: true,
        persistent_max_nodes: 0,
        ..GridTuning::default()
    };
    let mut solver = CudaGrid::new(segcut::cuda::Device::default(), tuning.clone());
    let mut visits = 0;
    for i in 0..6u64 {
        let conn = [Connectivity::N4, Connectivity::N8][(i % 2) as usize];
        let g = random_grid(&mut rng, conn, Caps::Small, 50 + 13 * i);
        let what = format!("{tuning} grid #{i} {conn} {:?}", g.dims());
        check_with(&mut solver, &g, &what);
        visits += solver.stats.queue_visits;
    }
    assert!(visits > 0, "the queue did not run");
}

#[test]
fn repeated_solves_give_identical_cuts() {
    if !gpu_or_skip() {
        return;
    }
    let g = vision_grid(&GridSpec::new_2d(200, 150, Connectivity::N8).with_scale(100)).unwrap();
    let mut solver = CudaGrid::on(segcut::cuda::Device::default());
    let first = solver.solve_grid(&g).unwrap();
    verify(&g, &first).unwrap();
    for _ in 0..4 {
        assert_eq!(solver.solve_grid(&g).unwrap(), first);
    }
}

/// The Waterloo crops are 4-connected grids in the file's node order (node id k is pixel k - 3);
/// read independently of segcut's DIMACS reader.
#[test]
fn waterloo_crops_as_grids() {
    if !gpu_or_skip() {
        return;
    }
    for (path, expected) in common::waterloo_crops() {
        let text = std::fs::read_to_string(&path).unwrap();
        let side: usize = path
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .rsplit('x')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let (s, t, arcs) = common::raw_arcs(&text);
        assert_eq!((s, t), (1, 2), "{}", path.display());
        let mut g = GridGraph::new_2d(side, side, Connectivity::N4).unwrap();
        for (u, v, cap) in arcs {
            let cap = cap as Cap;
            let (su, sv) = (u as usize, v as usize);
            match (u, v) {
                (1, _) if v > 2 => g.terminal_caps_mut().0[sv - 3] += cap,
                (_, 2) if u > 2 => g.terminal_caps_mut().1[su - 3] += cap,
                _ if u > 2 && v > 2 => {
                    let d = g.direction(su - 3, sv - 3).expect("a grid arc");
                    g.caps_mut(d)[su - 3] += cap;
                }
                _ => {} // arcs into the source or out of the sink carry no flow
            }
        }
        let flow = check_against_bk(&g, &path.display().to_string());
        assert_eq!(flow, expected, "{}", path.display());
    }
}

#[test]
fn general_graphs_are_refused_and_auto_solves_both() {
    // Runs with or without a GPU: auto must always answer.
    let mut rng = Rng::new(11);
    let g = random_grid(&mut rng, Connectivity::N8, Caps::Small, 12);
    let csr = g.to_csr().unwrap();
    let err = CudaGrid::on(segcut::cuda::Device::default())
        .solve_csr(&csr)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let mut auto = solver_of(
        SolverKind::Auto,
        AutoPolicy::default(),
        segcut::cuda::Device::default(),
    );
    let a = auto.solve_grid(&g).unwrap();
    let b = auto.solve_csr(&csr).unwrap();
    let bk = Bk::default().solve_grid(&g).unwrap();
    assert_eq!(a, bk);
    assert_eq!(b.flow, bk.flow);
    let grid = solver_of(
        SolverKind::CudaGrid,
        AutoPolicy::default(),
        segcut::cuda::Device::default(),
    );
    assert_eq!(grid.name(), "cuda-grid");
}

#[test]
fn without_a_gpu_the_solver_errors_instead_of_panicking() {
    if segcut::cuda::gpu_available() {
        return; // covered by the tests above
    }
    let mut g = GridGraph::new_2d(3, 3, Connectivity::N4).unwrap();
    g.set_terminals(0, 4, 0);
    g.set_terminals(8, 0, 4);
    let err = CudaGrid::on(segcut::cuda::Device::default())
        .solve_grid(&g)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
}

#[test]
fn invalid_grids_are_errors_before_the_gpu() {
    let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
    g.caps_mut(0)[0] = Cap::MAX;
    g.caps_mut(1)[1] = 1; // pair sum exceeds i32
    let err = CudaGrid::on(segcut::cuda::Device::default())
        .solve_grid(&g)
        .unwrap_err();
    assert!(matches!(err, Error::Overflow(_)), "{err}");
}

/// Warm starts on multi-tile grids, with and without the local first relabel and with graph
/// replays on and off: each round's cut equals BK's from scratch on the new graph. Small
/// enough for compute-sanitizer (`sanitizer_sized` in the filter) on `bfs_reseed`.
#[test]
fn sanitizer_sized_warm_starts_local_and_full() {
    use segcut::maxflow::cuda::WarmGrid;
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(0x5a71_0002);
    for (conn, [w, h, d]) in [
        (Connectivity::N4, [70, 40, 1]),
        (Connectivity::N8, [70, 40, 1]),
        (Connectivity::N6, [40, 10, 10]),
        (Connectivity::N26, [20, 10, 10]),
    ] {
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        for dir in 0..conn.degree() {
            let mut tails = Vec::new();
            g.for_each_arc(dir, |v, _| tails.push(v));
            for v in tails {
                g.caps_mut(dir)[v] = rng.below(8) as i32;
            }
        }
        for v in 0..g.num_nodes() {
            g.set_terminals(v, rng.below(20) as i32, rng.below(20) as i32);
        }
        for (local, graphs) in [(true, true), (false, true), (true, false)] {
            let tuning = GridTuning {
                warm_local: local,
                graphs,
                ..GridTuning::default()
            };
            let mut warm = WarmGrid::new(segcut::cuda::Device::default(), tuning.clone());
            let mut h = g.clone();
            warm.solve_grid(&h).unwrap();
            for round in 0..4 {
                let odds = if round == 3 { 1 } else { 12 };
                for v in 0..h.num_nodes() {
                    if rng.below(odds) == 0 {
                        h.set_terminals(v, rng.below(20) as i32, rng.below(20) as i32);
                    }
                }
                let what = format!("{tuning} {conn} round {round}");
                let s = warm
                    .resolve_grid(&h)
                    .unwrap()
                    .unwrap_or_else(|| panic!("{what}: not warm"));
                let bk = Bk::default().solve_grid(&h).unwrap();
                assert_eq!(s.cut.flow, bk.flow, "{what}");
                assert!(s.cut.sink_side == bk.sink_side, "{what}: canonical cut");
            }
        }
    }
}

/// Warm starts as `Dynamic` runs them in tests/warmstart.rs (grids of 1 to 40 nodes a side,
/// terminal capacities up to 4, 20 or 1000, many zero, 5 rounds of changes to 100 %, 50 %,
/// 10 %, 2 % and 30 % of the nodes), once per combination of graph replays and the local
/// relabel; each round against BK from scratch. Failures are collected per tuning, so that a
/// failure says which path it is on.
#[test]
fn warm_starts_every_path_agree_with_bk() {
    use segcut::maxflow::cuda::WarmGrid;
    if !gpu_or_skip() {
        return;
    }
    let mut failures = Vec::new();
    for (graphs, local) in [(true, false), (false, false), (true, true), (false, true)] {
        let tuning = GridTuning {
            graphs,
            warm_local: local,
            ..GridTuning::default()
        };
        let mut rng = Rng::new(31);
        for k in 0..60usize {
            let conn = [Connectivity::N4, Connectivity::N8, Connectivity::N6][k % 3];
            let hi = [4u64, 20, 1000][k % 3];
            let max_side = if conn.is_3d() { 12 } else { 40 };
            let side = |rng: &mut Rng| 1 + rng.below(max_side) as usize;
            let (w, h) = (side(&mut rng), side(&mut rng));
            let d = if conn.is_3d() { side(&mut rng) } else { 1 };
            let mut g = GridGraph::new(w, h, d, conn).unwrap();
            for dir in 0..conn.degree() {
                for v in 0..g.num_nodes() {
                    if g.neighbor(v, dir).is_some() && rng.below(3) > 0 {
                        g.caps_mut(dir)[v] = rng.below(hi) as Cap;
                    }
                }
            }
            let terminals = |rng: &mut Rng, g: &mut GridGraph, fraction: f64| {
                for v in 0..g.num_nodes() {
                    if (rng.below(1000) as f64) >= fraction * 1000.0 {
                        continue;
                    }
                    let (s, t) = match rng.below(4) {
                        0 => (0, 0),
                        1 => (rng.below(hi) as Cap, 0),
                        2 => (0, rng.below(hi) as Cap),
                        _ => (rng.below(hi) as Cap, rng.below(hi) as Cap),
                    };
                    g.set_terminals(v, s, t);
                }
            };
            terminals(&mut rng, &mut g, 1.0);
            let mut warm = WarmGrid::new(segcut::cuda::Device::default(), tuning.clone());
            warm.solve_grid(&g).unwrap();
            for (round, fraction) in [1.0, 0.5, 0.1, 0.02, 0.3].into_iter().enumerate() {
                terminals(&mut rng, &mut g, fraction);
                let what = format!(
                    "{tuning} case {k} {conn} {:?} round {}",
                    g.dims(),
                    round + 1
                );
                let Some(s) = warm.resolve_grid(&g).unwrap() else {
                    failures.push(format!("{what}: not warm"));
                    break;
                };
                let bk = Bk::default().solve_grid(&g).unwrap();
                if s.cut.flow != bk.flow || s.cut.sink_side != bk.sink_side {
                    failures.push(format!("{what}: flow {} against {}", s.cut.flow, bk.flow));
                    break;
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
