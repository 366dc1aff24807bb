//! `cuda-csr`: exact push-relabel max-flow on any [`CsrGraph`], on the GPU. The kernels are in
//! `kernels/csr_pr.cu`, launched through their typed launchers (`src/cuda/launch/csr_pr.rs`);
//! this module drives them.
//!
//! The design follows ECL-MaxFlow (VanAusdal & Burtscher 2025): each arc pair is stored once as a
//! forward arc with one residual word, reverse arcs in a second CSR point at their forward arc, the
//! active nodes live on a worklist (deduplicated with per-node epoch stamps) so that no launch
//! sweeps idle nodes, a group of lanes handles each worklist item with a shuffle minimum over its
//! neighbours, and global relabels are a breadth-first search from the sink over frontier
//! worklists.
//!
//! The algorithm, in rounds driven from the host:
//! 1. *Init* (host): every source arc is saturated and `min(source, sink)` of each node is flow at
//!    once; the forward/reverse layout ([`CsrLayout`]) is built.
//! 2. *Global relabel* (GPU): exact distances to the sink over residual arcs, `INF = n + 1` for
//!    nodes that cannot reach it; then the worklist of nodes with excess that reach the sink.
//! 3. If that worklist is empty, the preflow is maximum: stop (the canonical cut is the set of
//!    nodes this BFS reached). Otherwise run push-relabel rounds over the worklist until it empties
//!    or the relabel interval is over, and go to 2.
//!
//! Steps 1-3 are phase one: the cut and the flow value. Phase two, run only when flows are asked
//! for, returns the excess of the maximum preflow to the source by the same loop with the source
//! as the target.
//!
//! Short worklists and frontiers (up to [`CudaCsr::small_list`] nodes) are run by one block that
//! loops over rounds or levels on the device; after [`CudaCsr::spread_after`] global relabels a
//! push is split over every admissible arc (docs/gpu.md has the measurements behind both).
//!
//! Exactness does not rest on the concurrent labels: the stop test of step 3 is the max-flow
//! condition itself, checked on a fresh BFS. Why the lock-free pushes keep every amount exact is
//! argued at the top of `kernels/csr_pr.cu`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};

use crate::cuda::launch::csr_pr::CsrPr;
use crate::cuda::{self, Call, Device, Gpu};
use crate::graph::{Cap, CsrGraph, Flow};
use crate::maxflow::solved::timed;
use crate::maxflow::{Cut, Flows, GpuStats, GraphRef, Solved, Solver, SolverKind};
use crate::{Error, Result};

#[cfg(test)]
mod emulation;

/// Fewest push-relabel rounds between two global relabels.
const MIN_ROUNDS: u32 = 16;
/// How often (in rounds) the worklist size is read back during push-relabel.
const CHECK_EVERY: u32 = 8;
/// BFS levels launched between two read-backs of the frontier size.
const BFS_BATCH: u32 = 8;

/// The GPU solver for general graphs (`--solver cuda-csr`). Grids are solved as general graphs
/// (their CSR form).
///
/// ```no_run
/// use segcut::graph::{CsrBuilder, Vertex};
/// use segcut::cuda::Device;
/// use segcut::maxflow::{cuda::CudaCsr, verify, Solver};
/// let mut b = CsrBuilder::new(2).unwrap();
/// b.add_arc(Vertex::Source, Vertex::Node(0), 5).unwrap();
/// b.add_edge(0, 1, 2, 0).unwrap();
/// b.add_arc(Vertex::Node(1), Vertex::Sink, 5).unwrap();
/// let g = b.build().unwrap();
/// let cut = CudaCsr::on(Device::new(0)).solve_csr(&g).unwrap(); // an error without a GPU
/// assert_eq!(cut.flow, 2);
/// verify(&g, &cut).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct CudaCsr {
    /// Push or relabel operations each active node may do per round.
    pub ops_per_round: i32,
    /// Push-relabel rounds between global relabels; 0 picks them adaptively (as many as the last
    /// BFS had levels, at least 16).
    pub relabel_every: u32,
    /// Lanes per worklist item (4, 8, 16 or 32); 0 picks them from the mean degree.
    pub group: u32,
    /// Worklists and BFS frontiers up to this many nodes are run by one block that loops over
    /// rounds (levels) on the device, without a launch or a read-back per round; 0 never does.
    pub small_list: u32,
    /// Split each push over every admissible arc, an equal share each, instead of sending it all
    /// along the lowest one (see `discharge` in kernels/csr_pr.cu), once this many global
    /// relabels are done: 0 from the start, `u32::MAX` never. Splitting cuts the rounds that a
    /// large excess needs to spread out (GENRMF-wide: 1.6 M to 4 k at 2^20 nodes) but costs work
    /// where excesses are small (1.6-5× slower on the RLG and long GENRMF families), so it starts
    /// only when the excess keeps coming back, global relabel after global relabel.
    pub spread_after: u32,
    /// Statistics of the last solve.
    pub stats: CsrStats,
    /// The GPU it runs on.
    pub device: Device,
}

impl CudaCsr {
    /// A solver on `device` with the default settings (tune the public fields with
    /// `CudaCsr { group: 8, ..CudaCsr::on(device) }`).
    pub fn on(device: Device) -> Self {
        CudaCsr {
            device,
            ops_per_round: 4,
            relabel_every: 0,
            group: 0,
            small_list: 1024,
            spread_after: 16,
            stats: CsrStats::default(),
        }
    }
}

/// What the last [`CudaCsr`] solve did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CsrStats {
    /// Push-relabel kernel launches.
    pub rounds: u64,
    /// Global relabels (breadth-first searches from the sink).
    pub global_relabels: u64,
    /// BFS levels, over all global relabels.
    pub bfs_levels: u64,
    /// Of the rounds, those run inside the one-block loop (see [`CudaCsr::small_list`]).
    pub small_rounds: u64,
    /// Of the BFS levels, those run inside the one-block loop.
    pub small_levels: u64,
    /// Kernel launches, all kinds.
    pub launches: u64,
    /// Lanes per worklist item.
    pub group: u32,
    /// Device bytes allocated for the graph.
    pub device_bytes: u64,
    /// Host time spent building the forward/reverse layout and the initial preflow (and the CSR
    /// form of a grid), as [`SolveStats::build`](crate::maxflow::SolveStats::build) reports it.
    pub layout: Duration,
}

/// The forward/reverse layout the kernels work on, built on the host from a [`CsrGraph`], with
/// the preflow after saturating the source arcs.
///
/// Each arc pair `a`, `sister(a)` of the graph (with `a < sister(a)`) becomes one forward arc
/// `p`: `fwd_head[p]` its head, `rf[p]` its residual capacity and `tot[p]` the pair's total
/// capacity, so the reverse arc's residual is `tot[p] - rf[p]`. `rev_first`/`rev_tail`/`rev_arc`
/// list, per node, the forward arcs that enter it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CsrLayout {
    /// Offsets of each node's forward arcs (`n + 1`).
    pub fwd_first: Vec<u32>,
    /// Head of each forward arc.
    pub fwd_head: Vec<u32>,
    /// Offsets of each node's entering forward arcs (`n + 1`).
    pub rev_first: Vec<u32>,
    /// Tail of each entering forward arc.
    pub rev_tail: Vec<u32>,
    /// Index of each entering forward arc.
    pub rev_arc: Vec<u32>,
    /// Residual capacity of each forward arc.
    pub rf: Vec<Cap>,
    /// Capacity of each forward arc plus that of its reverse.
    pub tot: Vec<Cap>,
    /// Residual capacity of each node's sink arc after the init.
    pub sink_r: Vec<Cap>,
    /// Each node's excess after the init.
    pub excess: Vec<i64>,
    /// Flow counted at init: the constant source → sink flow plus every `min(source, sink)`.
    pub base_flow: Flow,
}

impl CsrLayout {
    /// Builds the layout and the initial preflow. Fails when the total source capacity does not
    /// fit the `i64` excess (it cannot, with `i32` capacities and 32-bit node ids, but the check
    /// is cheap) or when the graph has too many nodes for 32-bit labels.
    pub fn new(g: &CsrGraph) -> Result<Self> {
        let n = g.num_nodes();
        if n > (u32::MAX - 2) as usize {
            return Err(Error::Unsupported(format!(
                "cuda-csr supports up to {} nodes, the graph has {n}",
                u32::MAX - 2
            )));
        }
        let total_source: i128 = g.source_caps().iter().map(|&c| c as i128).sum();
        if total_source > i64::MAX as i128 {
            return Err(Error::Overflow(format!(
                "total source capacity {total_source} exceeds the i64 excess of cuda-csr"
            )));
        }
        let (heads, sisters, caps) = (g.heads(), g.sisters(), g.caps());
        let pairs = g.num_arcs() / 2;
        let mut l = CsrLayout {
            fwd_first: Vec::with_capacity(n + 1),
            fwd_head: Vec::with_capacity(pairs),
            rev_first: Vec::with_capacity(n + 1),
            rev_tail: Vec::with_capacity(pairs),
            rev_arc: Vec::with_capacity(pairs),
            rf: Vec::with_capacity(pairs),
            tot: Vec::with_capacity(pairs),
            sink_r: Vec::with_capacity(n),
            excess: Vec::with_capacity(n),
            base_flow: g.constant_flow(),
        };
        // Pair index of each forward arc, by graph arc index (unused entries stay 0).
        let mut pair_of = vec![0u32; g.num_arcs()];
        for v in 0..n {
            l.fwd_first.push(l.fwd_head.len() as u32);
            for a in g.arcs_of(v) {
                let b = sisters[a] as usize;
                if a < b {
                    pair_of[a] = l.fwd_head.len() as u32;
                    l.fwd_head.push(heads[a]);
                    l.rf.push(caps[a]);
                    // The builder checks that a pair's capacities sum within i32.
                    l.tot.push(caps[a].checked_add(caps[b]).ok_or_else(|| {
                        Error::Overflow(format!(
                            "arc pair {v} ↔ {}: capacities {} + {} exceed {}",
                            heads[a],
                            caps[a],
                            caps[b],
                            Cap::MAX
                        ))
                    })?);
                }
            }
        }
        l.fwd_first.push(l.fwd_head.len() as u32);
        // Arcs are sorted by tail, so a node's reverse arcs come after all the forward arcs
        // they point at: every pair_of lookup below is already filled in.
        for v in 0..n {
            l.rev_first.push(l.rev_tail.len() as u32);
            for b in g.arcs_of(v) {
                let a = sisters[b] as usize;
                if a < b {
                    l.rev_tail.push(heads[b]);
                    l.rev_arc.push(pair_of[a]);
                }
            }
        }
        l.rev_first.push(l.rev_tail.len() as u32);
        for (&s, &t) in g.source_caps().iter().zip(g.sink_caps()) {
            let m = s.min(t);
            l.base_flow = l
                .base_flow
                .checked_add(m as Flow)
                .ok_or_else(|| Error::Overflow("flow value exceeds i64".into()))?;
            l.excess.push((s - m) as i64);
            l.sink_r.push(t - m);
        }
        Ok(l)
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.sink_r.len()
    }

    /// Neighbour slots (forward plus entering arcs) of node `v`.
    pub fn degree(&self, v: usize) -> usize {
        (self.fwd_first[v + 1] - self.fwd_first[v] + self.rev_first[v + 1] - self.rev_first[v])
            as usize
    }

    /// Slot `i` of node `v` (forward arcs first, then entering ones): the neighbour, the residual
    /// capacity of `v → neighbour`, and the forward arc with whether `v` is its tail.
    pub fn slot(&self, v: usize, i: usize) -> (usize, Cap, usize, bool) {
        let (f0, df) = (
            self.fwd_first[v] as usize,
            (self.fwd_first[v + 1] - self.fwd_first[v]) as usize,
        );
        if i < df {
            let p = f0 + i;
            (self.fwd_head[p] as usize, self.rf[p], p, true)
        } else {
            let q = self.rev_first[v] as usize + i - df;
            let p = self.rev_arc[q] as usize;
            (
                self.rev_tail[q] as usize,
                self.tot[p] - self.rf[p],
                p,
                false,
            )
        }
    }

    /// Lanes per worklist item for this graph: half the mean number of neighbour slots, rounded
    /// up to a power of two, within 4..=32. (On the H100, groups of 4 beat 8 on 4- and 6-regular
    /// graphs: two strides of a small group cost less than idle lanes.)
    pub fn auto_group(&self) -> u32 {
        let n = self.num_nodes().max(1);
        let mean = (2 * self.fwd_head.len()).div_ceil(n).max(1);
        (mean.div_ceil(2).next_power_of_two() as u32).clamp(4, 32)
    }

    /// Device bytes for this layout: 20 per arc pair, 36 per node, and a few counters.
    pub fn device_bytes(&self) -> u64 {
        20 * self.fwd_head.len() as u64 + 36 * self.num_nodes() as u64 + 64
    }
}

/// The final state of phase two: forward residuals, sink residuals and source-arc flows.
struct Residuals {
    rf: Vec<Cap>,
    sink_r: Vec<Cap>,
    source_flow: Vec<Cap>,
}

/// The graph and the solver state on the device. Buffers are never empty (the driver refuses
/// zero-byte allocations): empty arrays go up as one zero.
struct DeviceGraph {
    n: u32,
    fwd_first: CudaSlice<u32>,
    fwd_head: CudaSlice<u32>,
    rev_first: CudaSlice<u32>,
    rev_tail: CudaSlice<u32>,
    rev_arc: CudaSlice<u32>,
    rf: CudaSlice<i32>,
    tot: CudaSlice<i32>,
    sink_r: CudaSlice<i32>,
    excess: CudaSlice<i64>,
    label: CudaSlice<u32>,
    stamp: CudaSlice<u32>,
    flow: CudaSlice<u64>,
    /// Two worklists (or BFS frontiers) used alternately.
    lists: [CudaSlice<u32>; 2],
    /// Ring of three list sizes for push-relabel rounds, and three for BFS levels.
    pr_counts: CudaSlice<u32>,
    bfs_counts: CudaSlice<u32>,
    /// What the one-block loops report: the epoch (level) reached and the rounds done.
    state: CudaSlice<u32>,
}

/// What every launch of one solve needs besides the buffers.
struct Launcher {
    k: CsrPr,
    stream: Arc<CudaStream>,
    /// Multiprocessors (the worklist kernels' launch size follows them).
    sms: u32,
    /// log2 of the lanes per worklist item.
    log_g: u32,
}

impl Solver for CudaCsr {
    fn kind(&self) -> SolverKind {
        SolverKind::CudaCsr
    }

    /// Building the solver's layout (and a grid's CSR form) counts as build time. With flows,
    /// phase one is followed by phase two on the GPU with the source as the target (as in
    /// `cuda-grid`: the excess of the maximum preflow flows back to the source).
    fn run(&mut self, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
        timed(|| {
            let t0 = Instant::now();
            let csr = g.to_csr()?;
            let layout = CsrLayout::new(&csr)?;
            let build = t0.elapsed();
            let source = flows.then(|| csr.source_caps());
            let (cut, back) = self.solve_layout_with(&layout, source)?;
            self.stats.layout = build;
            let mut s = Solved::new(cut, SolverKind::CudaCsr);
            if flows {
                let back =
                    back.ok_or_else(|| Error::Graph("cuda-csr: no phase two state".into()))?;
                s.flows = Some(flows_of(&csr, &layout, &back, s.cut.flow, g)?);
            }
            s.stats.build = build;
            s.stats.gpu = Some(GpuStats::Csr(self.stats.clone()));
            Ok(s)
        })
    }
}

/// The arc flows from phase two's final residuals, in `g`'s own arc order.
fn flows_of(
    csr: &CsrGraph,
    layout: &CsrLayout,
    back: &Residuals,
    value: Flow,
    g: GraphRef<'_>,
) -> Result<Flows> {
    // Forward arc p is the graph's arc a < sister(a), in node then arc order (as
    // `CsrLayout::new` numbered them); the reverse arc's residual is the pair's rest.
    let mut rcap = vec![0; csr.num_arcs()];
    let mut p = 0;
    for v in 0..csr.num_nodes() {
        for a in csr.arcs_of(v) {
            let b = csr.sisters()[a] as usize;
            if a < b {
                rcap[a] = back.rf[p];
                rcap[b] = layout.tot[p] - back.rf[p];
                p += 1;
            }
        }
    }
    let sink = csr
        .sink_caps()
        .iter()
        .zip(&back.sink_r)
        .map(|(&c, &r)| c - r);
    let flows = Flows::from_residuals(csr, &rcap, back.source_flow.clone(), sink.collect(), value);
    match g {
        GraphRef::Grid(grid) => flows.csr_to_grid(grid, csr),
        GraphRef::Csr(_) => Ok(flows),
    }
}

impl CudaCsr {
    /// Solves a graph already in the solver's layout (see [`CsrLayout::new`]).
    pub fn solve_layout(&mut self, l: &CsrLayout) -> Result<Cut> {
        Ok(self.solve_layout_with(l, None)?.0)
    }

    /// Phase one, and with `source` (the graph's source capacities) phase two, whose final
    /// residuals it returns.
    fn solve_layout_with(
        &mut self,
        l: &CsrLayout,
        source: Option<&[Cap]>,
    ) -> Result<(Cut, Option<Residuals>)> {
        let group = self.group_size(l)?;
        self.stats = CsrStats {
            group,
            device_bytes: l.device_bytes(),
            ..CsrStats::default()
        };
        if l.num_nodes() == 0 {
            let cut = Cut {
                flow: l.base_flow,
                sink_side: Vec::new(),
            };
            let none = Residuals {
                rf: Vec::new(),
                sink_r: Vec::new(),
                source_flow: Vec::new(),
            };
            return Ok((cut, source.map(|_| none)));
        }
        // Binds the context: test harnesses and servers solve from many threads.
        let gpu = self.device.gpu()?;
        let k = CsrPr::load(gpu)?;
        check_memory(gpu, l)?;
        let stream = gpu.ctx.new_stream().call("cuStreamCreate")?;
        let mut dev = upload(&stream, l)?;
        let launcher = Launcher {
            k,
            stream,
            sms: gpu.multiprocessors,
            log_g: group.trailing_zeros(),
        };
        let cut = self.phase_one(&launcher, &mut dev, l)?;
        let Some(source) = source else {
            return Ok((cut, None));
        };
        let back = self.phase_two(&launcher, &mut dev, source)?;
        Ok((cut, Some(back)))
    }

    /// Lanes per worklist item: [`CudaCsr::group`], or chosen from the layout's mean degree.
    fn group_size(&self, l: &CsrLayout) -> Result<u32> {
        match self.group {
            0 => Ok(l.auto_group()),
            g if g.is_power_of_two() && (4..=32).contains(&g) => Ok(g),
            g => Err(Error::Unsupported(format!(
                "cuda-csr group size {g} is not 4, 8, 16 or 32"
            ))),
        }
    }

    /// Phase one: the canonical cut and the flow value.
    fn phase_one(&mut self, x: &Launcher, dev: &mut DeviceGraph, l: &CsrLayout) -> Result<Cut> {
        let labels = self.run(x, dev)?;
        let pushed = cuda::download(&x.stream, &dev.flow, "flow")?;
        let flow = l
            .base_flow
            .checked_add(pushed[0] as Flow)
            .ok_or_else(|| Error::Overflow("flow value exceeds i64".into()))?;
        let n = l.num_nodes();
        let sink_side = labels.iter().map(|&h| h as usize <= n).collect();
        Ok(Cut { flow, sink_side })
    }

    /// Phase two: the source is the target; its residual from node v is the flow on s → v, all
    /// of source[v] after the saturating init. Epoch stamps start over with the run. Returns the
    /// final residuals.
    fn phase_two(
        &mut self,
        x: &Launcher,
        dev: &mut DeviceGraph,
        source: &[Cap],
    ) -> Result<Residuals> {
        let s = &x.stream;
        let up = cuda::upload(s, source, "source capacities")?;
        let sink_r = std::mem::replace(&mut dev.sink_r, up);
        cuda::clear(s, &mut dev.stamp)?;
        cuda::clear(s, &mut dev.flow)?;
        self.run(x, dev)?;
        // Each a host wait (counted).
        let excess = cuda::download(s, &dev.excess, "excess")?;
        let back = Residuals {
            rf: cuda::download(s, &dev.rf, "residuals")?,
            sink_r: cuda::download(s, &sink_r, "sink residuals")?,
            source_flow: cuda::download(s, &dev.sink_r, "source flows")?,
        };
        if let Some(v) = excess.iter().position(|&e| e != 0) {
            return Err(Error::Graph(format!(
                "cuda-csr phase two left excess {} at node {v} (please report this graph)",
                excess[v]
            )));
        }
        Ok(back)
    }

    /// Global relabels and push-relabel rounds until no node with excess reaches the target;
    /// returns the labels of the last global relabel.
    fn run(&mut self, x: &Launcher, dev: &mut DeviceGraph) -> Result<Vec<u32>> {
        // Far beyond what push-relabel with global relabels needs; a guard against a hang.
        let max_rounds = 1_000_000u64.max(64 * dev.n as u64);
        let mut ep = 0u32;
        loop {
            let levels = self.global_relabel(x, dev)?;
            ep += 1;
            let mut size = self.compact_active(x, dev, ep)?;
            if size == 0 {
                return cuda::download(&x.stream, &dev.label, "labels");
            }
            let rounds = match self.relabel_every {
                0 => MIN_ROUNDS.max(levels),
                r => r,
            };
            let spread = (self.stats.global_relabels > self.spread_after as u64) as i32;
            let mut r = 0;
            while r < rounds && size > 0 {
                if size <= self.small_list {
                    let [reached, done] =
                        self.rounds_in_one_block(x, dev, ep, spread, rounds - r)?;
                    ep = reached;
                    r += done;
                } else {
                    let len = CHECK_EVERY.min(rounds - r);
                    self.rounds_wide(x, dev, ep, spread, len)?;
                    ep += len;
                    r += len;
                }
                size =
                    cuda::read_words::<3>(&x.stream, &dev.pr_counts, "counter")?[ep as usize % 3];
            }
            if self.stats.rounds > max_rounds {
                return Err(Error::Graph(format!(
                    "cuda-csr did not converge in {} rounds (please report this graph)",
                    self.stats.rounds
                )));
            }
        }
    }

    /// The worklist of epoch `ep`: the nodes with excess that the last relabel reached. Returns
    /// its length.
    fn compact_active(&mut self, x: &Launcher, dev: &mut DeviceGraph, ep: u32) -> Result<u32> {
        cuda::clear(&x.stream, &mut dev.pr_counts)?;
        // SAFETY: excess, label, stamp and the list have n entries; the count is the ring's
        // entry for `ep`.
        unsafe {
            x.k.compact_active(
                &x.stream,
                dev.n,
                &dev.excess,
                &dev.label,
                &mut dev.stamp,
                &mut dev.lists[(ep % 2) as usize],
                &mut dev.pr_counts.slice_mut(ep as usize % 3..),
                ep,
            )?
        };
        self.stats.launches += 1;
        Ok(cuda::read_words::<3>(&x.stream, &dev.pr_counts, "counter")?[ep as usize % 3])
    }

    /// Up to `steps` rounds from epoch `ep` in one launch of the one-block loop; returns the
    /// epoch reached and the rounds run.
    fn rounds_in_one_block(
        &mut self,
        x: &Launcher,
        dev: &mut DeviceGraph,
        ep: u32,
        spread: i32,
        steps: u32,
    ) -> Result<[u32; 2]> {
        let [list0, list1] = &mut dev.lists;
        // SAFETY: the layout's arrays as uploaded, per-node arrays and lists of n entries, the
        // counter ring 3, the state 2, flow 1; the lists hold node numbers.
        unsafe {
            x.k.pr_small(
                &x.stream,
                dev.n,
                &dev.fwd_first,
                &dev.fwd_head,
                &dev.rev_first,
                &dev.rev_tail,
                &dev.rev_arc,
                &mut dev.rf,
                &dev.tot,
                &mut dev.sink_r,
                &mut dev.excess,
                &mut dev.label,
                &mut dev.stamp,
                &mut dev.flow,
                list0,
                list1,
                &mut dev.pr_counts,
                &mut dev.state,
                ep,
                x.log_g,
                self.ops_per_round.max(1),
                spread,
                self.small_list,
                steps,
            )?
        };
        self.stats.launches += 1;
        let [reached, done] = cuda::read_words::<2>(&x.stream, &dev.state, "loop state")?;
        self.stats.rounds += done as u64;
        self.stats.small_rounds += done as u64;
        Ok([reached, done])
    }

    /// `len` rounds from epoch `ep`, one launch each over the whole GPU.
    fn rounds_wide(
        &mut self,
        x: &Launcher,
        dev: &mut DeviceGraph,
        ep: u32,
        spread: i32,
        len: u32,
    ) -> Result<()> {
        for ep in ep..ep + len {
            let [even, odd] = &mut dev.lists;
            let (list, next) = if ep.is_multiple_of(2) {
                (&*even, odd)
            } else {
                (&*odd, even)
            };
            // SAFETY: the layout's arrays as uploaded, per-node arrays and lists of n entries,
            // the counter ring 3, flow 1; the lists hold node numbers.
            unsafe {
                x.k.pr_round(
                    &x.stream,
                    x.sms,
                    dev.n,
                    &dev.fwd_first,
                    &dev.fwd_head,
                    &dev.rev_first,
                    &dev.rev_tail,
                    &dev.rev_arc,
                    &mut dev.rf,
                    &dev.tot,
                    &mut dev.sink_r,
                    &mut dev.excess,
                    &mut dev.label,
                    &mut dev.stamp,
                    &mut dev.flow,
                    list,
                    next,
                    &mut dev.pr_counts,
                    ep,
                    x.log_g,
                    self.ops_per_round.max(1),
                    spread,
                )?
            };
            self.stats.rounds += 1;
            self.stats.launches += 1;
        }
        Ok(())
    }

    /// Exact distances to the sink over residual arcs; returns the number of BFS levels.
    fn global_relabel(&mut self, x: &Launcher, dev: &mut DeviceGraph) -> Result<u32> {
        self.stats.global_relabels += 1;
        let n = dev.n;
        cuda::clear(&x.stream, &mut dev.bfs_counts)?;
        // Level L's frontier is lists[L % 2] with its size in bfs_counts[L % 3].
        // SAFETY: sink_r, label and the list have n entries; the count is the ring's entry 1.
        unsafe {
            x.k.bfs_init(
                &x.stream,
                n,
                &dev.sink_r,
                &mut dev.label,
                &mut dev.lists[1],
                &mut dev.bfs_counts.slice_mut(1..),
            )?
        };
        self.stats.launches += 1;
        let mut level = 1u32;
        let mut size = cuda::read_words::<3>(&x.stream, &dev.bfs_counts, "counter")?[1];
        // The frontier of `level` is empty: every later one is too.
        while size > 0 && level <= n {
            level = if size <= self.small_list {
                self.levels_in_one_block(x, dev, level)?
            } else {
                self.levels_wide(x, dev, level)?
            };
            size =
                cuda::read_words::<3>(&x.stream, &dev.bfs_counts, "counter")?[level as usize % 3];
        }
        Ok(level)
    }

    /// BFS levels from `level` in one launch of the one-block loop; returns the level reached.
    fn levels_in_one_block(
        &mut self,
        x: &Launcher,
        dev: &mut DeviceGraph,
        level: u32,
    ) -> Result<u32> {
        let [list0, list1] = &mut dev.lists;
        // SAFETY: the layout's arrays as uploaded, label and lists of n entries, the counter ring
        // 3, the state 2; the lists hold node numbers.
        unsafe {
            x.k.bfs_small(
                &x.stream,
                dev.n,
                &dev.fwd_first,
                &dev.fwd_head,
                &dev.rev_first,
                &dev.rev_tail,
                &dev.rev_arc,
                &dev.rf,
                &dev.tot,
                &mut dev.label,
                list0,
                list1,
                &mut dev.bfs_counts,
                &mut dev.state,
                level,
                x.log_g,
                self.small_list,
                u32::MAX,
            )?
        };
        self.stats.launches += 1;
        let reached = cuda::read_words::<2>(&x.stream, &dev.state, "loop state")?[0];
        self.stats.bfs_levels += (reached - level) as u64;
        self.stats.small_levels += (reached - level) as u64;
        Ok(reached)
    }

    /// [`BFS_BATCH`] levels from `level`, one launch each over the whole GPU; returns the level
    /// reached.
    fn levels_wide(&mut self, x: &Launcher, dev: &mut DeviceGraph, level: u32) -> Result<u32> {
        for level in level..level + BFS_BATCH {
            let [even, odd] = &mut dev.lists;
            let (frontier, next) = if level.is_multiple_of(2) {
                (&*even, odd)
            } else {
                (&*odd, even)
            };
            // SAFETY: the layout's arrays as uploaded, label and frontiers of n entries, the
            // counter ring 3; the frontier holds node numbers.
            unsafe {
                x.k.bfs_level(
                    &x.stream,
                    x.sms,
                    dev.n,
                    &dev.fwd_first,
                    &dev.fwd_head,
                    &dev.rev_first,
                    &dev.rev_tail,
                    &dev.rev_arc,
                    &dev.rf,
                    &dev.tot,
                    &mut dev.label,
                    frontier,
                    next,
                    &mut dev.bfs_counts,
                    level,
                    x.log_g,
                )?
            };
            self.stats.bfs_levels += 1;
            self.stats.launches += 1;
        }
        Ok(level + BFS_BATCH)
    }
}

/// An error when the layout does not fit in the GPU's free memory.
fn check_memory(gpu: &Gpu, l: &CsrLayout) -> Result<()> {
    let free = gpu.free_memory()?;
    if l.device_bytes() > free {
        return Err(Error::Unsupported(format!(
            "cuda-csr needs {} bytes of GPU memory for {} nodes and {} arc pairs but {} has \
             {free} free",
            l.device_bytes(),
            l.num_nodes(),
            l.fwd_head.len(),
            gpu.name
        )));
    }
    Ok(())
}

/// Allocates the device graph and copies the layout and the initial preflow.
fn upload(stream: &Arc<CudaStream>, l: &CsrLayout) -> Result<DeviceGraph> {
    let n = l.num_nodes();
    let dev = DeviceGraph {
        n: n as u32,
        fwd_first: cuda::upload(stream, &l.fwd_first, "forward offsets")?,
        fwd_head: cuda::upload(stream, &l.fwd_head, "forward heads")?,
        rev_first: cuda::upload(stream, &l.rev_first, "reverse offsets")?,
        rev_tail: cuda::upload(stream, &l.rev_tail, "reverse tails")?,
        rev_arc: cuda::upload(stream, &l.rev_arc, "reverse arcs")?,
        rf: cuda::upload(stream, &l.rf, "residual capacities")?,
        tot: cuda::upload(stream, &l.tot, "pair capacities")?,
        sink_r: cuda::upload(stream, &l.sink_r, "sink capacities")?,
        excess: cuda::upload(stream, &l.excess, "excess")?,
        label: cuda::zeros(stream, n, "labels")?,
        stamp: cuda::zeros(stream, n, "stamps")?,
        flow: cuda::zeros(stream, 1, "flow")?,
        lists: [
            cuda::zeros(stream, n, "worklist")?,
            cuda::zeros(stream, n, "worklist")?,
        ],
        pr_counts: cuda::zeros(stream, 3, "worklist sizes")?,
        bfs_counts: cuda::zeros(stream, 3, "frontier sizes")?,
        state: cuda::zeros(stream, 2, "loop state")?,
    };
    // The host buffers are borrowed: finish the copies before they may be freed.
    cuda::sync(stream)?;
    Ok(dev)
}
