//! Packed solves (`batch::pack`): several grids stacked into one with zero-capacity seams give
//! each grid exactly the cut and flow it gets when solved alone, for every solver; on the GPU too
//! (`cuda-grid`, skipped without a GPU unless `SEGCUT_REQUIRE_GPU=1`).

mod common;

use segcut::batch::pack::{pack, solve_packed};
use segcut::graph::{Cap, Connectivity, FlowNetwork, GridGraph};
use segcut::maxflow::{MaxFlow, SolveOptions, SolverKind};
use segcut::rng::Rng;

/// A random grid: random sizes, n-links and terminals (a third of them zero), with a few
/// strong terminals so that flow has to move across the grid.
fn random_grid(rng: &mut Rng, conn: Connectivity, max_side: u64) -> GridGraph {
    let side = |rng: &mut Rng| 1 + rng.below(max_side) as usize;
    let (w, h) = (side(rng), side(rng));
    let d = if conn.is_3d() { side(rng).min(6) } else { 1 };
    let mut g = GridGraph::new(w, h, d, conn).unwrap();
    let val = |rng: &mut Rng, hi: u64| -> Cap {
        if rng.below(3) == 0 {
            0
        } else {
            rng.below(hi + 1) as Cap
        }
    };
    for dir in 0..conn.degree() {
        let mut arcs = Vec::new();
        g.for_each_arc(dir, |v, _| arcs.push(v));
        for v in arcs {
            g.caps_mut(dir)[v] = val(rng, 12);
        }
    }
    let n = g.num_nodes();
    let (s, t) = g.terminal_caps_mut();
    for v in 0..n {
        s[v] = val(rng, 30);
        t[v] = val(rng, 30);
    }
    g.validate().unwrap();
    g
}

fn check(solver: SolverKind, conn: Connectivity, seed: u64, count: usize, max_side: u64) {
    let mut rng = Rng::new(seed);
    let graphs: Vec<GridGraph> = (0..count)
        .map(|_| random_grid(&mut rng, conn, max_side))
        .collect();
    let refs: Vec<&GridGraph> = graphs.iter().collect();
    let mut mf = MaxFlow::new(SolveOptions::with_solver(solver));
    let packed = solve_packed(&refs, &mut mf)
        .unwrap_or_else(|e| panic!("{solver} {conn} seed {seed}: packed solve failed: {e}"));
    assert_eq!(packed.len(), graphs.len());
    let mut nonzero = 0;
    for (i, (g, p)) in graphs.iter().zip(&packed).enumerate() {
        let alone = mf.solve(g).unwrap();
        let what = format!("{solver} {conn} seed {seed} part {i} ({:?})", g.dims());
        assert_eq!(p.cut.flow, alone.cut.flow, "{what}: flow");
        assert_eq!(
            p.cut.sink_side, alone.cut.sink_side,
            "{what}: canonical cut"
        );
        assert_eq!(
            g.cut_capacity(&p.cut.sink_side),
            p.cut.flow as i128,
            "{what}: the part's certificate"
        );
        assert!(p.certificate.is_some(), "{what}: verified");
        nonzero += (alone.cut.flow > 0) as usize;
    }
    // The instances must exercise something: most parts carry flow.
    assert!(
        nonzero * 2 > graphs.len(),
        "{solver} {conn} seed {seed}: trivial instances"
    );
}

#[test]
fn packed_equals_one_at_a_time_on_the_cpu() {
    for solver in [SolverKind::Bk, SolverKind::Dinic] {
        for (conn, side) in [
            (Connectivity::N4, 24),
            (Connectivity::N8, 24),
            (Connectivity::N6, 8),
            (Connectivity::N26, 6),
        ] {
            for seed in 0..6 {
                check(
                    solver,
                    conn,
                    seed * 31 + 7,
                    1 + (seed as usize * 3) % 9,
                    side,
                );
            }
        }
    }
}

#[test]
fn packed_equals_one_at_a_time_on_the_gpu() {
    if !common::gpu_or_skip() {
        return;
    }
    for (conn, side) in [
        (Connectivity::N4, 200),
        (Connectivity::N8, 120),
        (Connectivity::N6, 24),
    ] {
        for seed in 0..4 {
            check(
                SolverKind::CudaGrid,
                conn,
                seed * 13 + 1,
                2 + seed as usize * 3,
                side,
            );
        }
    }
}

#[test]
fn seams_carry_nothing_and_padding_is_empty() {
    let mut rng = Rng::new(5);
    let a = random_grid(&mut rng, Connectivity::N8, 10);
    let b = random_grid(&mut rng, Connectivity::N8, 10);
    let (p, packing) = pack(&[&a, &b]).unwrap();
    let [w, h, d] = packing.dims;
    assert_eq!(w, a.dims()[0].max(b.dims()[0]));
    assert_eq!((h, d), (a.dims()[1] + b.dims()[1], 1));
    // Capacity totals are kept exactly: nothing was added by the packing.
    let total = |g: &GridGraph| -> i64 {
        let mut t: i64 = g.source_caps().iter().map(|&c| c as i64).sum();
        t += g.sink_caps().iter().map(|&c| c as i64).sum::<i64>();
        for dir in 0..g.connectivity().degree() {
            t += g.caps(dir).iter().map(|&c| c as i64).sum::<i64>();
        }
        t
    };
    assert_eq!(total(&p), total(&a) + total(&b));
    // Each part's slice of the packed graph holds its own capacities.
    let all_sink = vec![true; p.num_nodes()];
    assert_eq!(packing.sink_side(&all_sink, 1).len(), b.num_nodes());
    assert!(pack(&[]).is_err());
    let c = GridGraph::new_2d(3, 3, Connectivity::N4).unwrap();
    assert!(pack(&[&a, &c])
        .unwrap_err()
        .to_string()
        .contains("connectivities"));
}
