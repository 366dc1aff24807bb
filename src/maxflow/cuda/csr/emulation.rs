//! A sequential emulation of `kernels/csr_pr.cu` and of [`CudaCsr::run`], for machines without a
//! GPU: worklists with epoch stamps, each round's operations in a random interleaving, neighbour
//! labels optionally as stale as a GPU group could see them (as they were when the round began).
//! It checks the algorithm and the layout, not the CUDA code: keep it in step with the kernels.

use super::*;
use crate::graph::{CsrBuilder, Vertex};
use crate::maxflow::{bk::Bk, verify};
use crate::rng::Rng;

struct State {
    l: CsrLayout,
    label: Vec<u32>,
    stamp: Vec<u32>,
    pushed: i64,
    /// Split a push over every admissible arc (this phase, see `CudaCsr::spread_after`).
    spread: bool,
}

/// The global relabel: exact BFS distances from the sink; returns the number of levels.
fn bfs(st: &mut State) -> u32 {
    let n = st.l.num_nodes();
    let inf = n as u32 + 1;
    let mut frontier: Vec<usize> = Vec::new();
    for v in 0..n {
        st.label[v] = if st.l.sink_r[v] > 0 { 1 } else { inf };
        if st.label[v] == 1 {
            frontier.push(v);
        }
    }
    let mut level = 1;
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &w in &frontier {
            for i in 0..st.l.degree(w) {
                let (u, _, p, w_is_tail) = st.l.slot(w, i);
                // Residual of u -> w: the reverse of w's slot.
                let res_in = if w_is_tail {
                    st.l.tot[p] - st.l.rf[p]
                } else {
                    st.l.rf[p]
                };
                if res_in > 0 && st.label[u] == inf {
                    st.label[u] = level + 1;
                    next.push(u);
                }
            }
        }
        frontier = next;
        level += 1;
    }
    level
}

fn enlist(stamp: &mut [u32], next: &mut Vec<usize>, w: usize, ep: u32) {
    if stamp[w] != ep {
        stamp[w] = ep;
        next.push(w);
    }
}

/// One operation of `pr_round` for node v; false when v is done for this round.
fn op(st: &mut State, v: usize, seen: Option<&[u32]>, next: &mut Vec<usize>, ep: u32) -> bool {
    let inf = st.l.num_nodes() as u32 + 1;
    let (e, h) = (st.l.excess[v], st.label[v]);
    if e <= 0 || h >= inf {
        return false;
    }
    let mut best: u64 = if st.l.sink_r[v] > 0 {
        u32::MAX as u64
    } else {
        u64::MAX
    };
    for i in 0..st.l.degree(v) {
        let (w, res, _, _) = st.l.slot(v, i);
        let hw = seen.map_or(st.label[w], |s| s[w].min(st.label[w]));
        if res > 0 {
            best = best.min(((hw as u64) << 32) | i as u64);
        }
    }
    if best == u64::MAX {
        st.label[v] = inf;
        return false;
    }
    let best_h = (best >> 32) as u32;
    if h <= best_h {
        st.label[v] = (best_h + 1).min(inf);
        return true;
    }
    let i = best as u32;
    if st.spread && i != u32::MAX {
        // The admissible slots (lowest label, residual left), each given an equal share.
        let adm: Vec<usize> = (0..st.l.degree(v))
            .filter(|&j| {
                let (w, res, _, _) = st.l.slot(v, j);
                let hw = seen.map_or(st.label[w], |s| s[w].min(st.label[w]));
                res > 0 && hw == best_h
            })
            .collect();
        let k = adm.len() as i64;
        if k > 1 && e >= k {
            let share = e / k;
            for j in adm {
                let (w, res, p, v_is_tail) = st.l.slot(v, j);
                let delta = share.min(res as i64) as i32;
                if v_is_tail {
                    st.l.rf[p] -= delta;
                } else {
                    st.l.rf[p] += delta;
                }
                st.l.excess[w] += delta as i64;
                st.l.excess[v] -= delta as i64;
                enlist(&mut st.stamp, next, w, ep + 1);
            }
            return true;
        }
    }
    if i == u32::MAX {
        let delta = e.min(st.l.sink_r[v] as i64);
        st.l.sink_r[v] -= delta as i32;
        st.l.excess[v] -= delta;
        st.pushed += delta;
    } else {
        let (w, res, p, v_is_tail) = st.l.slot(v, i as usize);
        let delta = e.min(res as i64) as i32;
        if v_is_tail {
            st.l.rf[p] -= delta;
        } else {
            st.l.rf[p] += delta;
        }
        assert!((0..=st.l.tot[p]).contains(&st.l.rf[p]));
        st.l.excess[w] += delta as i64;
        st.l.excess[v] -= delta as i64;
        enlist(&mut st.stamp, next, w, ep + 1);
    }
    true
}

/// The emulated solve: the cut and the number of rounds.
fn emulate(
    g: &CsrGraph,
    rng: &mut Rng,
    stale: bool,
    relabel_every: u32,
    spread_after: u32,
) -> (Cut, u64) {
    let l = CsrLayout::new(g).unwrap();
    let n = l.num_nodes();
    let inf = n as u32 + 1;
    let mut st = State {
        l,
        label: vec![0; n],
        stamp: vec![0; n],
        pushed: 0,
        spread: false,
    };
    let (mut ep, mut rounds, mut relabels) = (0u32, 0u64, 0u32);
    loop {
        let levels = bfs(&mut st);
        relabels += 1;
        st.spread = relabels > spread_after;
        ep += 1;
        let mut list = Vec::new();
        for v in 0..n {
            if st.l.excess[v] > 0 && st.label[v] <= n as u32 {
                enlist(&mut st.stamp, &mut list, v, ep);
            }
        }
        if list.is_empty() {
            break;
        }
        let k = if relabel_every == 0 {
            MIN_ROUNDS.max(levels)
        } else {
            relabel_every
        };
        for _ in 0..k {
            rounds += 1;
            let seen = stale.then(|| st.label.clone());
            let mut next = Vec::new();
            let mut left: Vec<(usize, u32)> = list.iter().map(|&v| (v, 4)).collect();
            while !left.is_empty() {
                let j = rng.below(left.len() as u64) as usize;
                let v = left[j].0;
                left[j].1 -= 1;
                if !op(&mut st, v, seen.as_deref(), &mut next, ep) || left[j].1 == 0 {
                    left.swap_remove(j);
                    if st.l.excess[v] > 0 && st.label[v] < inf {
                        enlist(&mut st.stamp, &mut next, v, ep + 1);
                    }
                }
            }
            ep += 1;
            list = next;
            if list.is_empty() {
                break;
            }
        }
        assert!(rounds < 100_000_000, "no convergence");
    }
    let cut = Cut {
        flow: st.l.base_flow + st.pushed,
        sink_side: st.label.iter().map(|&h| h <= n as u32).collect(),
    };
    (cut, rounds)
}

/// A random general graph: random pairs (multi-arcs and antiparallel ones included), random
/// terminals, in one of a few capacity regimes.
fn random_graph(rng: &mut Rng, n: usize, pairs: usize, kind: u64) -> CsrGraph {
    let mut b = CsrBuilder::new(n).unwrap();
    for _ in 0..pairs {
        let u = rng.below(n as u64) as u32;
        let v = rng.below(n as u64) as u32;
        let (c, r) = match kind {
            0 => (rng.below(10) as Cap, rng.below(3) as Cap),
            1 => {
                let c = Cap::MAX - rng.below(100) as Cap;
                (c, rng.below((Cap::MAX - c) as u64 + 1) as Cap)
            }
            _ => (rng.below(1000) as Cap, 0),
        };
        b.add_edge(u, v, c, r).unwrap();
    }
    for v in 0..n as u32 {
        match rng.below(4) {
            0 => b
                .add_arc(Vertex::Source, Vertex::Node(v), rng.below(50) as Cap)
                .unwrap(),
            1 => b
                .add_arc(Vertex::Node(v), Vertex::Sink, rng.below(50) as Cap)
                .unwrap(),
            2 if kind == 1 => b.add_terminals(v, Cap::MAX, Cap::MAX - 7).unwrap(),
            _ => {}
        }
    }
    b.add_arc(Vertex::Source, Vertex::Sink, rng.below(3) as Cap)
        .unwrap();
    b.build().unwrap()
}

#[test]
fn layout_holds_every_pair_once_with_its_capacities() {
    let mut rng = Rng::new(5);
    for i in 0..50 {
        let g = random_graph(&mut rng, 1 + i % 13, 3 * i, i as u64 % 3);
        let l = CsrLayout::new(&g).unwrap();
        assert_eq!(2 * l.fwd_head.len(), g.num_arcs());
        assert_eq!(l.rev_tail.len(), l.fwd_head.len());
        // Every graph arc v -> w appears as exactly one slot of v with the same residual.
        for v in 0..g.num_nodes() {
            let mut want: Vec<(usize, Cap)> = g
                .arcs_of(v)
                .map(|a| (g.heads()[a] as usize, g.caps()[a]))
                .collect();
            let mut got: Vec<(usize, Cap)> = (0..l.degree(v))
                .map(|i| {
                    let (w, r, _, _) = l.slot(v, i);
                    (w, r)
                })
                .collect();
            want.sort();
            got.sort();
            assert_eq!(got, want, "graph #{i} node {v}");
        }
        let m: Vec<i64> = (0..g.num_nodes())
            .map(|v| g.source_caps()[v].min(g.sink_caps()[v]) as i64)
            .collect();
        assert_eq!(l.base_flow, g.constant_flow() + m.iter().sum::<i64>());
        for (v, &mv) in m.iter().enumerate() {
            assert_eq!(l.excess[v], g.source_caps()[v] as i64 - mv);
            assert_eq!(l.sink_r[v] as i64, g.sink_caps()[v] as i64 - mv);
        }
    }
}

#[test]
fn group_size_follows_the_mean_degree() {
    // n nodes with k·n pairs have 2k slots per node on average.
    let ring = |n: u32, k: u32| {
        let mut b = CsrBuilder::new(n as usize).unwrap();
        for v in 0..n {
            for j in 1..=k {
                b.add_edge(v, (v + j) % n, 1, 1).unwrap();
            }
        }
        CsrLayout::new(&b.build().unwrap()).unwrap()
    };
    assert_eq!(ring(50, 1).auto_group(), 4);
    assert_eq!(ring(50, 3).auto_group(), 4);
    assert_eq!(ring(50, 5).auto_group(), 8);
    assert_eq!(ring(50, 8).auto_group(), 8);
    assert_eq!(ring(50, 9).auto_group(), 16);
    assert_eq!(ring(50, 20).auto_group(), 32);
    let empty = CsrLayout::new(&CsrBuilder::new(3).unwrap().build().unwrap()).unwrap();
    assert_eq!(empty.auto_group(), 4);
    assert_eq!(empty.device_bytes(), 36 * 3 + 64);
}

#[test]
fn emulated_kernels_agree_with_bk() {
    let mut rng = Rng::new(0xc5_2024);
    for i in 0..300u64 {
        let n = 1 + rng.below(if i % 10 == 0 { 3 } else { 60 }) as usize;
        let pairs = rng.below(4 * n as u64 + 1) as usize;
        let g = random_graph(&mut rng, n, pairs, i % 3);
        let bk = Bk::default().solve_csr(&g).unwrap();
        for (stale, every, spread_after) in [
            (false, 0, u32::MAX),
            (true, 0, u32::MAX),
            (true, 3, u32::MAX),
            (true, 0, 0),
            (true, 2, 0),
            (true, 1, 2),
        ] {
            let (cut, _) = emulate(&g, &mut rng, stale, every, spread_after);
            let what = format!(
                "#{i} n={n} pairs={pairs} stale={stale} every={every} spread_after={spread_after}"
            );
            assert_eq!(cut.flow, bk.flow, "{what}");
            assert!(cut.sink_side == bk.sink_side, "{what}: canonical cut");
            verify(&g, &cut).unwrap();
        }
    }
}

/// Emulated round counts with and without split pushes on the hard families at 2^14 nodes: a
/// cheap way to try the algorithm on them (run with `--ignored`; the counts go to
/// `test-notes/emulated_round_counts.txt`; docs/gpu.md quotes
/// GENRMF-wide's counts).
#[test]
#[ignore]
fn emulated_round_counts() {
    let list = "genrmf-wide:14:s1,genrmf-long:14:s1,rlg-wide:14:s1,rlg-long:14:s1";
    let mut notes = crate::test_notes::Notes::new("emulated_round_counts");
    for text in list.split(',').filter(|t| !t.is_empty()) {
        let net = crate::gen::generate(&text.parse().unwrap()).unwrap();
        let g = net.to_csr().unwrap();
        let bk = Bk::default().solve_csr(&g).unwrap();
        for spread_after in [u32::MAX, 0, 16] {
            let mut rng = Rng::new(1);
            let (cut, rounds) = emulate(&g, &mut rng, false, 0, spread_after);
            assert_eq!(cut.flow, bk.flow, "{text}");
            notes.line(format!(
                "{text} spread_after={spread_after}: {rounds} rounds"
            ));
        }
    }
    notes.save();
}
