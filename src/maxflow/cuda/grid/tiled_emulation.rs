//! A sequential emulation of the tiled kernels (`bfs_seed`, `bfs_tile`, `mark_active`,
//! `discharge`) and of the host loop around them, for machines without a GPU: tiles of a launch
//! run one after another in a random order, reading halo labels as they were when the launch
//! began (as stale as a GPU block could see them). It checks the algorithm, not the CUDA code:
//! keep it in step with the kernels.

use super::*;
use crate::maxflow::{bk::Bk, verify, verify_flows};
use crate::rng::Rng;

use super::emulation::{random_terminals, saturate_terminals};

struct Emu<'a> {
    g: &'a GridGraph,
    tile: [usize; 3],
    ntiles: [usize; 3],
    rcap: Vec<Vec<i32>>,
    sink_r: Vec<i32>,
    excess: Vec<i64>,
    label: Vec<u32>,
    flags: Vec<bool>,
    pushed: i64,
    inf: u32,
}

impl Emu<'_> {
    fn tile_of(&self, [x, y, z]: [usize; 3]) -> usize {
        let [tx, ty, tz] = self.tile;
        x / tx + self.ntiles[0] * (y / ty + self.ntiles[1] * (z / tz))
    }

    /// The nodes of tile `t` (inside the grid), in colour classes.
    fn classes(&self, t: usize) -> Vec<Vec<usize>> {
        let [tx, ty, tz] = self.tile;
        let [nx, ny, _] = self.ntiles;
        let origin = [t % nx * tx, t / nx % ny * ty, t / (nx * ny) * tz];
        let parity = matches!(self.g.connectivity(), Connectivity::N4 | Connectivity::N6);
        let mut classes = vec![Vec::new(); if parity { 2 } else { 8 }];
        let [w, h, d] = self.g.dims();
        for lz in 0..tz {
            for ly in 0..ty {
                for lx in 0..tx {
                    let (x, y, z) = (origin[0] + lx, origin[1] + ly, origin[2] + lz);
                    if x < w && y < h && z < d {
                        let c = if parity {
                            (lx + ly + lz) & 1
                        } else {
                            (lx & 1) | (ly & 1) << 1 | (lz & 1) << 2
                        };
                        classes[c].push(self.g.index(x, y, z));
                    }
                }
            }
        }
        classes
    }

    /// Where each of `nodes` sits in the tile's arrays.
    fn slots(&self, nodes: &[usize]) -> std::collections::HashMap<usize, usize> {
        nodes.iter().enumerate().map(|(i, &v)| (v, i)).collect()
    }

    fn in_tile(&self, t: usize, v: usize) -> bool {
        self.tile_of(self.g.coords(v)) == t
    }

    fn take_list(&mut self, rng: &mut Rng) -> Vec<usize> {
        let mut list: Vec<usize> = (0..self.flags.len()).filter(|&t| self.flags[t]).collect();
        self.flags.iter_mut().for_each(|f| *f = false);
        rng.shuffle(&mut list);
        list
    }

    fn flag_neighbour_tiles(&mut self, v: usize) {
        let own = self.tile_of(self.g.coords(v));
        for d in 0..self.g.connectivity().degree() {
            if let Some(w) = self.g.neighbor(v, d) {
                let t = self.tile_of(self.g.coords(w));
                if t != own {
                    self.flags[t] = true;
                }
            }
        }
    }

    /// Tile-wise global relabel (`bfs_seed`, then passes); returns the number of passes.
    /// `local`: as `bfs_reseed` starts it, the labels stay and only nodes with a sink residual
    /// whose label is above 1 seed the passes.
    fn relabel(&mut self, rng: &mut Rng, local: bool) -> u32 {
        for v in 0..self.label.len() {
            let seed = self.sink_r[v] > 0;
            if local {
                if !seed || self.label[v] <= 1 {
                    continue;
                }
                self.label[v] = 1;
            } else {
                self.label[v] = if seed { 1 } else { self.inf };
            }
            if seed {
                let t = self.tile_of(self.g.coords(v));
                self.flags[t] = true;
                self.flag_neighbour_tiles(v);
            }
        }
        let mut passes = 0;
        loop {
            let list = self.take_list(rng);
            passes += 1;
            if list.is_empty() {
                return passes;
            }
            let snapshot = self.label.clone();
            for t in list {
                let classes = self.classes(t);
                let nodes: Vec<usize> = classes.concat();
                let mut lab: Vec<(usize, u32)> = nodes.iter().map(|&v| (v, snapshot[v])).collect();
                let slots = self.slots(&nodes);
                let local = |lab: &[(usize, u32)], w: usize| slots.get(&w).map(|&j| lab[j].1);
                loop {
                    let mut changed = false;
                    for i in 0..lab.len() {
                        let (v, cur) = lab[i];
                        if cur <= 1 {
                            continue;
                        }
                        let mut best = cur;
                        for d in 0..self.g.connectivity().degree() {
                            if let Some(w) = self.g.neighbor(v, d) {
                                if self.rcap[d][v] > 0 {
                                    let lw = local(&lab, w).unwrap_or(snapshot[w]);
                                    best = best.min(lw.saturating_add(1));
                                }
                            }
                        }
                        if best < cur {
                            lab[i].1 = best;
                            changed = true;
                        }
                    }
                    if !changed {
                        break;
                    }
                }
                for (v, l) in lab {
                    if l != snapshot[v] {
                        self.label[v] = l;
                        self.flag_neighbour_tiles(v);
                    }
                }
            }
        }
    }

    fn mark_active(&mut self) -> bool {
        let mut any = false;
        for v in 0..self.label.len() {
            if self.excess[v] > 0 && self.label[v] < self.inf {
                let t = self.tile_of(self.g.coords(v));
                self.flags[t] = true;
                any = true;
            }
        }
        any
    }

    /// One discharge launch over the listed tiles; returns the list's length.
    fn discharge_round(&mut self, rng: &mut Rng, sweeps: usize) -> usize {
        let list = self.take_list(rng);
        let snapshot = self.label.clone();
        let deg = self.g.connectivity().degree();
        for &t in &list {
            let classes = self.classes(t);
            let nodes: Vec<usize> = classes.concat();
            // Shared memory: the tile's arcs, excess, sink residual and labels (the halo
            // from the launch's snapshot).
            let mut cap: Vec<Vec<i32>> = nodes
                .iter()
                .map(|&v| (0..deg).map(|d| self.rcap[d][v]).collect())
                .collect();
            let ex0: Vec<i64> = nodes.iter().map(|&v| self.excess[v]).collect();
            let mut ex = ex0.clone();
            let mut sr: Vec<i32> = nodes.iter().map(|&v| self.sink_r[v]).collect();
            let mut lab: Vec<u32> = nodes.iter().map(|&v| snapshot[v]).collect();
            let slots = self.slots(&nodes);
            let slot = |v: usize| slots.get(&v).copied();
            for _ in 0..sweeps {
                let mut any = false;
                for class in &classes {
                    for &v in class {
                        let i = slot(v).unwrap();
                        let (mut e, mut h) = (ex[i], lab[i]);
                        if e <= 0 || h >= self.inf {
                            continue;
                        }
                        any = true;
                        loop {
                            let mut best = (if sr[i] > 0 { 0 } else { u32::MAX }, None);
                            for (d, &c) in cap[i].iter().enumerate() {
                                if best.0 == 0 {
                                    break;
                                }
                                let Some(w) = self.g.neighbor(v, d) else {
                                    continue;
                                };
                                if c <= 0 {
                                    continue;
                                }
                                let hw = slot(w).map_or(snapshot[w], |j| lab[j]);
                                if hw < best.0 {
                                    best = (hw, Some((d, w)));
                                }
                            }
                            if best.0 >= self.inf {
                                lab[i] = self.inf;
                                break;
                            }
                            if h <= best.0 {
                                h = best.0 + 1;
                                lab[i] = h;
                                continue;
                            }
                            match best.1 {
                                None => {
                                    let delta = e.min(sr[i] as i64);
                                    sr[i] -= delta as i32;
                                    self.pushed += delta;
                                    e -= delta;
                                }
                                Some((d, w)) => {
                                    let delta = e.min(cap[i][d] as i64);
                                    cap[i][d] -= delta as i32;
                                    e -= delta;
                                    match slot(w) {
                                        Some(j) => {
                                            cap[j][d ^ 1] += delta as i32;
                                            ex[j] += delta;
                                        }
                                        None => {
                                            self.rcap[d][v] -= delta as i32;
                                            self.rcap[d ^ 1][w] += delta as i32;
                                            self.excess[w] += delta;
                                            let tw = self.tile_of(self.g.coords(w));
                                            self.flags[tw] = true;
                                        }
                                    }
                                }
                            }
                            if e <= 0 {
                                break;
                            }
                        }
                        ex[i] = e;
                    }
                }
                if !any {
                    break;
                }
            }
            let mut still = false;
            for (i, &v) in nodes.iter().enumerate() {
                self.label[v] = lab[i];
                self.sink_r[v] = sr[i];
                self.excess[v] += ex[i] - ex0[i];
                for (d, &c) in cap[i].iter().enumerate() {
                    if self.g.neighbor(v, d).is_some_and(|w| self.in_tile(t, w)) {
                        self.rcap[d][v] = c;
                    }
                }
                still |= ex[i] > 0 && lab[i] < self.inf;
            }
            if still {
                self.flags[t] = true;
            }
        }
        list.len()
    }
}

fn emulate(g: &GridGraph, rng: &mut Rng, sweeps: usize) -> Cut {
    emulate_phases(g, rng, sweeps, false).0
}

/// Relabels and discharge rounds until no node with excess reaches the target (`sink_r`).
fn run(emu: &mut Emu, rng: &mut Rng, sweeps: usize) {
    run_from(emu, rng, sweeps, false)
}

/// [`run`], beginning with a local relabel when `local_first` (as a warm start does on the
/// GPU): only a full relabel may end it.
fn run_from(emu: &mut Emu, rng: &mut Rng, sweeps: usize, local_first: bool) {
    let mut rounds = 0;
    let mut exact = !local_first;
    loop {
        let passes = emu.relabel(rng, !exact);
        let active = emu.mark_active();
        if !active && exact {
            break;
        }
        exact = true;
        if !active {
            continue;
        }
        for _ in 0..passes.max(8) {
            rounds += 1;
            if emu.discharge_round(rng, sweeps) == 0 {
                break;
            }
        }
        assert!(rounds < 1_000_000, "the emulation does not converge");
    }
}

/// The emulation of a grid with saturated terminals and zero labels, and the flow the
/// saturation sent straight from source to sink.
fn fresh_emu(g: &GridGraph) -> (Emu<'_>, Flow) {
    let (base, excess, sink_r) = saturate_terminals(g).unwrap();
    let tile = tile_shape(g.connectivity());
    let [w, h, d] = g.dims();
    let ntiles = [
        w.div_ceil(tile[0]),
        h.div_ceil(tile[1]),
        d.div_ceil(tile[2]),
    ];
    let n = g.num_nodes();
    let emu = Emu {
        g,
        tile,
        ntiles,
        rcap: (0..g.connectivity().degree())
            .map(|d| g.caps(d).to_vec())
            .collect(),
        sink_r,
        excess,
        label: vec![0; n],
        flags: vec![false; ntiles.iter().product()],
        pushed: 0,
        inf: n as u32 + 1,
    };
    (emu, base)
}

/// Phase one, and with `flows` phase two as `CudaGrid::phase_two` runs it: the source
/// capacities become the target's residuals and the same rounds return the excess.
fn emulate_phases(
    g: &GridGraph,
    rng: &mut Rng,
    sweeps: usize,
    flows: bool,
) -> (Cut, Option<Flows>) {
    let (mut emu, base) = fresh_emu(g);
    let n = g.num_nodes();
    run(&mut emu, rng, sweeps);
    let cut = Cut {
        flow: base + emu.pushed,
        sink_side: emu.label.iter().map(|&l| l <= n as u32).collect(),
    };
    if !flows {
        return (cut, None);
    }
    let sink_r = std::mem::replace(&mut emu.sink_r, g.source_caps().to_vec());
    run(&mut emu, rng, sweeps);
    assert!(emu.excess.iter().all(|&e| e == 0), "phase two left excess");
    let arcs = (0..g.connectivity().degree())
        .flat_map(|d| {
            let r = &emu.rcap[d];
            g.caps(d).iter().zip(r).map(|(&c, &r)| (c - r).max(0))
        })
        .collect();
    let sink = g.sink_caps().iter().zip(&sink_r).map(|(&c, &r)| c - r);
    let f = Flows {
        value: cut.flow,
        source: emu.sink_r.clone(),
        sink: sink.collect(),
        arcs,
    };
    (cut, Some(f))
}

/// A seed (node with sink capacity) on a tile's border, whose neighbour across the border
/// is the only way in: the neighbour's tile holds no seed, so only the seed's flagging of
/// the tiles next to it gets that tile into the relabel.
#[test]
fn seed_on_a_tile_border() {
    for conn in [
        Connectivity::N4,
        Connectivity::N8,
        Connectivity::N6,
        Connectivity::N26,
    ] {
        let [_, ty, tz] = tile_shape(conn);
        let (mut g, b) = if conn.is_3d() {
            (GridGraph::new(1, 1, 3 * tz, conn).unwrap(), tz)
        } else {
            (GridGraph::new(1, 3 * ty, 1, conn).unwrap(), ty)
        };
        g.set_terminals(b - 1, 7, 0);
        g.set_terminals(b, 0, 9);
        g.set_arc(b - 1, b, 5).unwrap();
        let cut = emulate(&g, &mut Rng::new(1), 2);
        assert_eq!(cut.flow, 5, "{conn}");
        verify(&g, &cut).unwrap();
    }
}

#[test]
fn emulated_tiled_kernels_agree_with_bk() {
    let mut rng = Rng::new(0x711e);
    let conns = [
        Connectivity::N4,
        Connectivity::N8,
        Connectivity::N6,
        Connectivity::N26,
    ];
    for i in 0..48u64 {
        let conn = conns[(i % 4) as usize];
        // Several tiles, partial ones at the far edges; every third grid one node thin,
        // where a tile's only change may be a seed on its border.
        let thin = i % 3 == 0;
        let (w, h, d) = match (conn.is_3d(), thin) {
            (true, false) => {
                let s = |rng: &mut Rng| 1 + rng.below(12) as usize;
                (s(&mut rng) + 10, s(&mut rng), s(&mut rng))
            }
            (true, true) => (1, 1, 2 + rng.below(20) as usize),
            (false, false) => (1 + rng.below(70) as usize, 1 + rng.below(45) as usize, 1),
            (false, true) => (1, 2 + rng.below(90) as usize, 1),
        };
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        for dir in (0..conn.degree()).step_by(2) {
            let mut pairs = Vec::new();
            g.for_each_arc(dir, |v, u| pairs.push((v, u)));
            for (v, u) in pairs {
                g.caps_mut(dir)[v] = rng.below(6) as i32;
                g.caps_mut(dir ^ 1)[u] = rng.below(6) as i32;
            }
        }
        // Thin grids get few terminal arcs, so whole tiles hold none.
        random_terminals(&mut g, &mut rng, if thin { 40 } else { 8 }, 40);
        let bk = Bk::default().solve_grid(&g).unwrap();
        for sweeps in [1, 4] {
            let (cut, flows) = emulate_phases(&g, &mut rng, sweeps, true);
            let what = format!("#{i} {conn} {:?} sweeps={sweeps}", g.dims());
            assert_eq!(cut.flow, bk.flow, "{what}");
            assert!(cut.sink_side == bk.sink_side, "{what}: canonical cut");
            verify(&g, &cut).unwrap();
            // Phase two as the GPU runs it ends with a maximum flow.
            let net = crate::graph::Network::Grid(g.clone());
            verify_flows(&net, &flows.unwrap()).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}

/// The emulated state of a warm-start test on `g` after the saturating start (terminals
/// saturated, nothing relabelled yet), and the flow that start sent.
fn warm_emu(g: &GridGraph) -> (Emu<'_>, i64) {
    let (base, excess, sink_r) = saturate_terminals(g).unwrap();
    let conn = g.connectivity();
    let [w, h, d] = g.dims();
    let tile = tile_shape(conn);
    let ntiles = [
        w.div_ceil(tile[0]),
        h.div_ceil(tile[1]),
        d.div_ceil(tile[2]),
    ];
    let n = g.num_nodes();
    let emu = Emu {
        g,
        tile,
        ntiles,
        rcap: (0..conn.degree()).map(|d| g.caps(d).to_vec()).collect(),
        sink_r,
        excess,
        label: vec![0; n],
        flags: vec![false; ntiles.iter().product()],
        pushed: 0,
        inf: n as u32 + 1,
    };
    (emu, base)
}

/// `update_terminals` on the emulated state, node by node as the kernel does it: the excess
/// follows the source change, the sink residual the sink change, both shifted by the constant
/// that keeps them non-negative, then what can leave through the node's sink arc goes.
fn update_terminals(emu: &mut Emu, old: &GridGraph, new: &GridGraph) {
    for v in 0..emu.label.len() {
        let ds = new.source_caps()[v] - old.source_caps()[v];
        let dt = new.sink_caps()[v] - old.sink_caps()[v];
        // A negative excess left by update_arcs is settled too (as the kernel does).
        if ds == 0 && dt == 0 && emu.excess[v] >= 0 {
            continue;
        }
        let r0 = emu.sink_r[v] as i64;
        let (mut e, mut r) = (emu.excess[v] + ds as i64, r0 + dt as i64);
        let k = (-e).max(-r).max(0);
        e += k;
        r += k;
        let c = e.min(r);
        emu.excess[v] = e - c;
        emu.sink_r[v] = (r - c) as i32;
        emu.pushed += dt as i64 - (r - c) + r0;
    }
}

/// Warm starts as `WarmGrid` runs them, with the first relabel local: phase one, new terminal
/// capacities applied to the kept preflow, and push-relabel again from the kept labels. Every
/// round's flow and canonical cut equal BK's from scratch on the new graph.
#[test]
fn emulated_local_relabel_warm_starts_agree_with_bk() {
    let mut rng = Rng::new(0x10ca1);
    let conns = [
        Connectivity::N4,
        Connectivity::N8,
        Connectivity::N6,
        Connectivity::N26,
    ];
    for i in 0..32u64 {
        let conn = conns[(i % 4) as usize];
        let (w, h, d) = if conn.is_3d() {
            (
                12 + rng.below(10) as usize,
                2 + rng.below(8) as usize,
                2 + rng.below(8) as usize,
            )
        } else {
            (10 + rng.below(60) as usize, 2 + rng.below(40) as usize, 1)
        };
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        for dir in (0..conn.degree()).step_by(2) {
            let mut pairs = Vec::new();
            g.for_each_arc(dir, |v, u| pairs.push((v, u)));
            for (v, u) in pairs {
                g.caps_mut(dir)[v] = rng.below(6) as i32;
                g.caps_mut(dir ^ 1)[u] = rng.below(6) as i32;
            }
        }
        random_terminals(&mut g, &mut rng, 6, 30);
        let first = g.clone();
        let (mut emu, base) = warm_emu(&first);
        let n = g.num_nodes();
        run(&mut emu, &mut rng, 2);
        let mut old = first.clone();
        // Rounds of new terminal capacities: a few nodes each (a refit's small change), or
        // every node (a new model).
        for round in 0..4 {
            let mut new = old.clone();
            let odds = if round == 3 { 1 } else { 10 };
            for v in 0..n {
                if rng.below(odds) == 0 {
                    let (s, t) = (rng.below(30) as i32, rng.below(30) as i32);
                    new.set_terminals(v, s, t);
                }
            }
            update_terminals(&mut emu, &old, &new);
            run_from(&mut emu, &mut rng, 2, true);
            let bk = Bk::default().solve_grid(&new).unwrap();
            let what = format!("#{i} {conn} {:?} round {round}", new.dims());
            assert_eq!(base + emu.pushed, bk.flow, "{what}");
            let side: Vec<bool> = emu.label.iter().map(|&l| l <= n as u32).collect();
            assert!(side == bk.sink_side, "{what}: canonical cut");
            old = new;
        }
    }
}

/// `update_arcs` on the emulated state, pair by pair as the kernel does it (the tail of each
/// even direction owns the pair): the net flow `old cap − old residual` stays where the new
/// capacities admit it, else it is clamped and the difference moves between the two excesses.
fn update_arcs(emu: &mut Emu, old: &GridGraph, new: &GridGraph) {
    let g = emu.g;
    for d in (0..g.connectivity().degree()).step_by(2) {
        for v in 0..emu.label.len() {
            let Some(w) = g.neighbor(v, d) else { continue };
            let f = old.caps(d)[v] as i64 - emu.rcap[d][v] as i64;
            let (cf, cb) = (new.caps(d)[v] as i64, new.caps(d ^ 1)[w] as i64);
            let kept = f.clamp(-cb, cf);
            emu.rcap[d][v] = (cf - kept) as i32;
            emu.rcap[d ^ 1][w] = (cb + kept) as i32;
            emu.excess[v] += f - kept;
            emu.excess[w] -= f - kept;
        }
    }
}

/// Warm starts with new arc and terminal capacities, as the device α-expansion runs them
/// (`ResidentGrid::solve_keeping`): phase one, then rounds in which some arcs and terminals
/// change, `update_arcs` and `update_terminals` applied to the kept preflow, and push-relabel
/// again from a full relabel. Every round's flow and canonical cut equal BK's from scratch.
#[test]
fn emulated_warm_starts_with_new_arcs_agree_with_bk() {
    let mut rng = Rng::new(0xa4c5);
    let conns = [Connectivity::N4, Connectivity::N8, Connectivity::N6];
    for i in 0..36u64 {
        let conn = conns[(i % 3) as usize];
        let (w, h, d) = if conn.is_3d() {
            (
                4 + rng.below(30) as usize,
                2 + rng.below(6) as usize,
                2 + rng.below(6) as usize,
            )
        } else {
            (4 + rng.below(60) as usize, 2 + rng.below(30) as usize, 1)
        };
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        // Forward-only arcs on some graphs (as a move graph has), both directions on others.
        let both = i % 2 == 0;
        let set_arcs = |g: &mut GridGraph, rng: &mut Rng, odds: u64| {
            for dir in (0..conn.degree()).step_by(2) {
                let mut pairs = Vec::new();
                g.for_each_arc(dir, |v, u| pairs.push((v, u)));
                for (v, u) in pairs {
                    if rng.below(odds) == 0 {
                        g.caps_mut(dir)[v] = rng.below(8) as i32;
                        g.caps_mut(dir ^ 1)[u] = if both { rng.below(8) as i32 } else { 0 };
                    }
                }
            }
        };
        set_arcs(&mut g, &mut rng, 1);
        random_terminals(&mut g, &mut rng, 6, 30);
        let first = g.clone();
        let (mut emu, base) = warm_emu(&first);
        let n = g.num_nodes();
        run(&mut emu, &mut rng, 2);
        let mut old = first.clone();
        for round in 0..4 {
            let mut new = old.clone();
            let odds = [10, 3, 1, 40][round];
            set_arcs(&mut new, &mut rng, odds);
            for v in 0..n {
                if rng.below(odds) == 0 {
                    let (s, t) = (rng.below(30) as i32, rng.below(30) as i32);
                    new.set_terminals(v, s, t);
                }
            }
            update_arcs(&mut emu, &old, &new);
            update_terminals(&mut emu, &old, &new);
            assert!(
                emu.excess.iter().all(|&e| e >= 0),
                "#{i} round {round}: a negative excess was left"
            );
            run(&mut emu, &mut rng, 2);
            let bk = Bk::default().solve_grid(&new).unwrap();
            let what = format!("#{i} {conn} {:?} round {round}", new.dims());
            assert_eq!(base + emu.pushed, bk.flow, "{what}");
            let side: Vec<bool> = emu.label.iter().map(|&l| l <= n as u32).collect();
            assert!(side == bk.sink_side, "{what}: canonical cut");
            old = new;
        }
    }
}

/// Measurement, not a check: the relabel depth (largest finite label) and passes of each global
/// relabel while the emulation solves the `.max` grids named in SEGCUT_EMU_GRAPHS
/// (colon-separated). Run with `--ignored`; the figures go to
/// `test-notes/emulated_relabel_depths.txt`.
#[test]
#[ignore]
fn emulated_relabel_depths() {
    let Ok(paths) = std::env::var("SEGCUT_EMU_GRAPHS") else {
        return;
    };
    let mut notes = crate::test_notes::Notes::new("emulated_relabel_depths");
    for path in paths.split(':') {
        let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
        let inst = crate::io::dimacs::read_max(file, path).unwrap();
        let crate::graph::Network::Grid(g) = &inst.network else {
            panic!("{path}: not a grid");
        };
        let (mut emu, _) = fresh_emu(g);
        let mut rng = Rng::new(1);
        let (mut rounds, mut line) = (0, String::new());
        loop {
            let passes = emu.relabel(&mut rng, false);
            let depth = emu
                .label
                .iter()
                .filter(|&&l| l < emu.inf)
                .max()
                .copied()
                .unwrap_or(0);
            let reached = emu.label.iter().filter(|&&l| l < emu.inf).count();
            line += &format!(" {passes}p/{depth}d/{}k", reached / 1000);
            if !emu.mark_active() {
                break;
            }
            for _ in 0..passes.max(8) {
                rounds += 1;
                if emu.discharge_round(&mut rng, 4) == 0 {
                    break;
                }
            }
        }
        notes.line(format!(
            "{path}: {rounds} rounds; relabels (passes/depth/reached):{line}"
        ));
    }
    notes.save();
}
