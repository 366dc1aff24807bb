//! A sequential emulation of the node-sweep discharge (`pr_round`, the path of 26-connected
//! grids) and of the host loop around it, for machines without a GPU: every launch runs its
//! threads' operations in a random interleaving, optionally reading neighbour labels as they were
//! when the launch began (the stalest a GPU thread could see). Global relabels are exact
//! breadth-first searches, as the tiled relabel computes them. It checks the algorithm, not the
//! CUDA code: keep it in step with the kernels.

use super::*;
use crate::maxflow::{bk::Bk, verify};
use crate::rng::Rng;

/// Saturates every source arc: returns the flow sent straight on through each node's own sink
/// arc, and the excesses and sink residuals left (what `init_terminals` does on the device).
pub(super) fn saturate_terminals(g: &GridGraph) -> Result<(Flow, Vec<i64>, Vec<i32>)> {
    let mut base: Flow = 0;
    let mut excess = Vec::with_capacity(g.num_nodes());
    let mut sink_r = Vec::with_capacity(g.num_nodes());
    for (&s, &t) in g.source_caps().iter().zip(g.sink_caps()) {
        let m = s.min(t);
        base += m as Flow;
        excess.push((s - m) as i64);
        sink_r.push(t - m);
    }
    Ok((base, excess, sink_r))
}

/// Test grids: each node gets a source arc, and independently a sink arc, with probability
/// `1 / odds`, of a random capacity below `max`.
pub(super) fn random_terminals(g: &mut GridGraph, rng: &mut crate::rng::Rng, odds: u64, max: u64) {
    for v in 0..g.num_nodes() {
        let mut cap = || {
            if rng.below(odds) == 0 {
                rng.below(max) as i32
            } else {
                0
            }
        };
        let (s, t) = (cap(), cap());
        g.set_terminals(v, s, t);
    }
}

struct State {
    rcap: Vec<Vec<i32>>,
    sink_r: Vec<i32>,
    excess: Vec<i64>,
    label: Vec<u32>,
    pushed: i64,
}

fn bfs(g: &GridGraph, st: &mut State) -> u32 {
    let inf = g.num_nodes() as u32 + 1;
    for v in 0..g.num_nodes() {
        st.label[v] = if st.sink_r[v] > 0 { 1 } else { inf };
    }
    let mut level = 1;
    loop {
        let before = st.label.clone(); // one launch: every thread reads the level-`level` set
        let mut reached = 0;
        for v in 0..g.num_nodes() {
            if before[v] != inf {
                continue;
            }
            let hit = (0..g.connectivity().degree()).any(|d| {
                g.neighbor(v, d)
                    .is_some_and(|w| st.rcap[d][v] > 0 && before[w] == level)
            });
            if hit {
                st.label[v] = level + 1;
                reached += 1;
            }
        }
        level += 1;
        if reached == 0 {
            return level;
        }
    }
}

/// One operation of `pr_round` for node v; false when v is not active.
fn op(g: &GridGraph, st: &mut State, v: usize, labels_seen: Option<&[u32]>) -> bool {
    let inf = g.num_nodes() as u32 + 1;
    let (e, h) = (st.excess[v], st.label[v]);
    if e <= 0 || h >= inf {
        return false;
    }
    let mut best = (if st.sink_r[v] > 0 { 0 } else { u32::MAX }, None);
    for d in 0..g.connectivity().degree() {
        if let Some(w) = g.neighbor(v, d) {
            let hw = labels_seen.map_or(st.label[w], |l| l[w].min(st.label[w]));
            if st.rcap[d][v] > 0 && hw < best.0 {
                best = (hw, Some((d, w)));
            }
        }
    }
    match best {
        (u32::MAX, _) => st.label[v] = inf,
        (hb, _) if h <= hb => st.label[v] = (hb + 1).min(inf),
        (_, None) => {
            let delta = e.min(st.sink_r[v] as i64);
            st.sink_r[v] -= delta as i32;
            st.excess[v] -= delta;
            st.pushed += delta;
        }
        (_, Some((d, w))) => {
            let delta = e.min(st.rcap[d][v] as i64);
            st.rcap[d][v] -= delta as i32;
            st.rcap[d ^ 1][w] += delta as i32;
            st.excess[w] += delta;
            st.excess[v] -= delta;
        }
    }
    true
}

fn emulate(g: &GridGraph, rng: &mut Rng, stale: bool) -> Cut {
    emulate_counted(g, rng, stale).0
}

/// The emulated solve and its [`GridStats`] (launch counts as the GPU would make them).
fn emulate_counted(g: &GridGraph, rng: &mut Rng, stale: bool) -> (Cut, GridStats) {
    let stats = GridStats::default();
    let (base, excess, sink_r) = saturate_terminals(g).unwrap();
    let n = g.num_nodes();
    let mut st = State {
        rcap: (0..g.connectivity().degree())
            .map(|d| g.caps(d).to_vec())
            .collect(),
        sink_r,
        excess,
        label: vec![0; n],
        pushed: 0,
    };
    let stats = discharge_to_end(g, &mut st, rng, stale, stats);
    let cut = Cut {
        flow: base + st.pushed,
        sink_side: st.label.iter().map(|&l| l <= n as u32).collect(),
    };
    (cut, stats)
}

/// The host loop from a preflow: global relabel, stop test, discharge rounds, until no node
/// with excess reaches the sink (the labels on entry are not used).
fn discharge_to_end(
    g: &GridGraph,
    st: &mut State,
    rng: &mut Rng,
    stale: bool,
    mut stats: GridStats,
) -> GridStats {
    let n = g.num_nodes();
    let inf = n as u32 + 1;
    let active = |st: &State| {
        (0..n)
            .filter(|&v| st.excess[v] > 0 && st.label[v] < inf)
            .count()
    };
    loop {
        let levels = bfs(g, st);
        stats.global_relabels += 1;
        stats.bfs_levels += levels as u64;
        if active(st) == 0 {
            break;
        }
        for r in 1..=MIN_SWEEP_ROUNDS.max(levels) {
            stats.rounds += 1;
            let seen = stale.then(|| st.label.clone());
            // Each thread has 4 operations; run them in a random interleaving.
            let mut left: Vec<(usize, u32)> = (0..n).map(|v| (v, 4)).collect();
            while !left.is_empty() {
                let i = rng.below(left.len() as u64) as usize;
                let v = left[i].0;
                left[i].1 -= 1;
                if !op(g, st, v, seen.as_deref()) || left[i].1 == 0 {
                    left.swap_remove(i);
                }
            }
            if r % SWEEP_BATCH == 0 && active(st) == 0 {
                break;
            }
        }
    }
    stats
}

/// `update_terminals`, node by node (keep in step with the kernel): the terminal capacity
/// changes move the excess and the sink residual, the constant `k` keeps both non-negative,
/// `min` of them goes straight to the sink, and the flow moves by the change of the node's sink
/// flow without `k` (added to `pushed`). False where a sink residual passes i32 (the kernel's
/// overflow flag).
fn update_terminals(st: &mut State, d_source: &[i32], d_sink: &[i32]) -> bool {
    for v in 0..st.excess.len() {
        let (ds, dt) = (d_source[v], d_sink[v]);
        if (ds, dt) == (0, 0) {
            continue;
        }
        let r0 = st.sink_r[v] as i64;
        let (mut e, mut r) = (st.excess[v] + ds as i64, r0 + dt as i64);
        let k = (-e).max(-r).max(0);
        e += k;
        r += k;
        let c = e.min(r);
        e -= c;
        r -= c;
        if r > i32::MAX as i64 {
            return false;
        }
        st.excess[v] = e;
        st.sink_r[v] = r as i32;
        st.pushed += dt as i64 - r + r0;
    }
    true
}

/// Launch counts the GPU solver should make on the test suite's vision grids (run with
/// `--ignored`; slow: the emulation is sequential), in `test-notes/emulated_launch_counts.txt`.
#[test]
#[ignore]
fn emulated_launch_counts_on_vision_grids() {
    use crate::gen::grid::{vision_grid, GridSpec};
    let mut notes = crate::test_notes::Notes::new("emulated_launch_counts");
    for spec in [
        GridSpec::new_2d(512, 512, Connectivity::N4).with_scale(10),
        GridSpec::new_2d(384, 384, Connectivity::N8).with_scale(100),
        GridSpec::new_3d(64, 64, 64, Connectivity::N6).with_scale(10),
        GridSpec::new_3d(40, 40, 40, Connectivity::N26).with_scale(100),
    ] {
        let g = vision_grid(&spec).unwrap();
        let t = std::time::Instant::now();
        let (cut, stats) = emulate_counted(&g, &mut Rng::new(1), false);
        let bk = Bk::default().solve_grid(&g).unwrap();
        assert_eq!(cut.flow, bk.flow);
        notes.line(format!(
            "{spec:?}: {stats:?} ({:.1} s emulated)",
            t.elapsed().as_secs_f64()
        ));
    }
    notes.save();
}

#[test]
fn emulated_kernels_agree_with_bk() {
    let mut rng = Rng::new(77);
    let conns = [
        Connectivity::N4,
        Connectivity::N8,
        Connectivity::N6,
        Connectivity::N26,
    ];
    for i in 0..240u64 {
        let conn = conns[(i % 4) as usize];
        let side = |rng: &mut Rng| 1 + rng.below(if conn.is_3d() { 5 } else { 12 }) as usize;
        let (w, h) = (side(&mut rng), side(&mut rng));
        let d = if conn.is_3d() { side(&mut rng) } else { 1 };
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        let big = i % 3 == 0;
        for dir in (0..conn.degree()).step_by(2) {
            let mut pairs = Vec::new();
            g.for_each_arc(dir, |v, u| pairs.push((v, u)));
            for (v, u) in pairs {
                let a = if big {
                    i32::MAX - rng.below(9) as i32
                } else {
                    rng.below(6) as i32
                };
                let b = if big {
                    rng.below((i32::MAX - a) as u64 + 1) as i32
                } else {
                    rng.below(6) as i32
                };
                g.caps_mut(dir)[v] = a;
                g.caps_mut(dir ^ 1)[u] = b;
            }
        }
        random_terminals(&mut g, &mut rng, 3, 20);
        let bk = Bk::default().solve_grid(&g).unwrap();
        for stale in [false, true] {
            let cut = emulate(&g, &mut rng, stale);
            let what = format!("#{i} {conn} {:?} stale={stale}", g.dims());
            assert_eq!(cut.flow, bk.flow, "{what}");
            assert!(cut.sink_side == bk.sink_side, "{what}: canonical cut");
            verify(&g, &cut).unwrap();
        }
    }
}

/// Warm starts: the state left by an emulated solve, updated by the emulated
/// `update_terminals` for new terminal capacities and discharged again from a fresh global
/// relabel, gives BK's flow and canonical cut from scratch, round after round.
#[test]
fn emulated_warm_start_agrees_with_bk() {
    let mut rng = Rng::new(78);
    let conns = [Connectivity::N4, Connectivity::N8, Connectivity::N6];
    let mut warm_rounds = 0;
    for i in 0..120u64 {
        let conn = conns[(i % 3) as usize];
        let side = |rng: &mut Rng| 1 + rng.below(if conn.is_3d() { 5 } else { 12 }) as usize;
        let (w, h) = (side(&mut rng), side(&mut rng));
        let d = if conn.is_3d() { side(&mut rng) } else { 1 };
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        for dir in 0..conn.degree() {
            for v in 0..g.num_nodes() {
                if g.neighbor(v, dir).is_some() {
                    g.caps_mut(dir)[v] = rng.below(6) as i32;
                }
            }
        }
        random_terminals(&mut g, &mut rng, 2, 20);
        let (base, excess, sink_r) = saturate_terminals(&g).unwrap();
        let n = g.num_nodes();
        let mut st = State {
            rcap: (0..conn.degree()).map(|d| g.caps(d).to_vec()).collect(),
            sink_r,
            excess,
            label: vec![0; n],
            pushed: base,
        };
        let stale = i % 2 == 1;
        discharge_to_end(&g, &mut st, &mut rng, stale, GridStats::default());
        for round in 0..4 {
            let (old_s, old_t) = (g.source_caps().to_vec(), g.sink_caps().to_vec());
            random_terminals(&mut g, &mut rng, 2, 20);
            let ds: Vec<i32> = g
                .source_caps()
                .iter()
                .zip(&old_s)
                .map(|(a, b)| a - b)
                .collect();
            let dt: Vec<i32> = g
                .sink_caps()
                .iter()
                .zip(&old_t)
                .map(|(a, b)| a - b)
                .collect();
            assert!(update_terminals(&mut st, &ds, &dt));
            assert!(st.excess.iter().all(|&e| e >= 0) && st.sink_r.iter().all(|&r| r >= 0));
            discharge_to_end(&g, &mut st, &mut rng, stale, GridStats::default());
            let cut = Cut {
                flow: st.pushed,
                sink_side: st.label.iter().map(|&l| l <= n as u32).collect(),
            };
            let bk = Bk::default().solve_grid(&g).unwrap();
            let what = format!("#{i} round {round} {conn} {:?} stale={stale}", g.dims());
            assert_eq!(cut.flow, bk.flow, "{what}");
            assert!(cut.sink_side == bk.sink_side, "{what}: canonical cut");
            verify(&g, &cut).unwrap();
            warm_rounds += 1;
        }
    }
    assert_eq!(warm_rounds, 480);
}
