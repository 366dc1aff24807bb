//! `cuda-csr`: exact push-relabel max-flow on any [`CsrGraph`], on the GPU (kernels in
//! `kernels/csr_pr.cu`; this module is the only one that knows their argument order).
//!
//! The design follows ECL-MaxFlow (VanAusdal & Burtscher 2025): each arc pair is stored once as a
//! forward arc with one residual word, reverse arcs in a second CSR point at their forward arc, the
//! active nodes live on a worklist (deduplicated with per-node epoch stamps) so that no launch
//! sweeps idle nodes, a group of lanes handles each worklist item with a shuffle minimum over its
//! neighbours, and global relabels are a breadth-first search from the sink over frontier
//! worklists. Phase one only: the flow value is everything pushed into the sink.
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
//! Short worklists and frontiers (up to [`CudaCsr::small_list`] nodes) are run by one block that
//! loops over rounds or levels on the device; after [`CudaCsr::spread_after`] global relabels a
//! push is split over every admissible arc (docs/gpu.md has the measurements behind both).
//!
//! Exactness does not rest on the concurrent labels: the stop test of step 3 is the max-flow
//! condition itself, checked on a fresh BFS. Why the lock-free pushes keep every amount exact is
//! argued at the top of `kernels/csr_pr.cu`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::cuda::{self as runtime, driver_err};
use crate::graph::{Cap, CsrGraph, Flow};
use crate::maxflow::solver::timed;
use crate::maxflow::{Cut, Flows, GpuStats, GraphRef, Solved, Solver, SolverKind};
use crate::{Error, Result};

/// Threads per block of every kernel.
const BLOCK: u32 = 256;
/// Fewest push-relabel rounds between two global relabels.
const MIN_ROUNDS: u32 = 16;
/// How often (in rounds) the worklist size is read back during push-relabel.
const CHECK_EVERY: u32 = 8;
/// BFS levels launched between two read-backs of the frontier size.
const BFS_BATCH: u32 = 8;
/// Threads of the one-block loops (`SMALL_THREADS` in kernels/csr_pr.cu).
const SMALL_THREADS: u32 = 1024;
/// The launch of the one-block loops.
const ONE_BLOCK: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (SMALL_THREADS, 1, 1),
    shared_mem_bytes: 0,
};

/// The GPU solver for general graphs (`--solver cuda-csr`). Grids are solved as general graphs
/// (their CSR form).
///
/// ```no_run
/// use segcut::graph::{CsrBuilder, Vertex};
/// use segcut::maxflow::{cuda::CudaCsr, verify, Solver};
/// let mut b = CsrBuilder::new(2).unwrap();
/// b.add_arc(Vertex::Source, Vertex::Node(0), 5).unwrap();
/// b.add_edge(0, 1, 2, 0).unwrap();
/// b.add_arc(Vertex::Node(1), Vertex::Sink, 5).unwrap();
/// let g = b.build().unwrap();
/// let cut = CudaCsr::default().solve_csr(&g).unwrap(); // an error without a GPU
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
}

impl Default for CudaCsr {
    fn default() -> Self {
        CudaCsr {
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

/// The kernels of `kernels/csr_pr.cu`.
struct Kernels {
    bfs_init: CudaFunction,
    bfs_level: CudaFunction,
    compact_active: CudaFunction,
    pr_round: CudaFunction,
    pr_small: CudaFunction,
    bfs_small: CudaFunction,
}

/// The graph and the solver state on the device. Buffers are never empty (the driver refuses
/// zero-byte allocations), hence the `max(1)` padding in [`upload`].
/// The final state of phase two: forward residuals, sink residuals and source-arc flows.
struct Residuals {
    rf: Vec<Cap>,
    sink_r: Vec<Cap>,
    source_flow: Vec<Cap>,
}

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
        let n = l.num_nodes();
        let group = match self.group {
            0 => l.auto_group(),
            g if g.is_power_of_two() && (4..=32).contains(&g) => g,
            g => {
                return Err(Error::Unsupported(format!(
                    "cuda-csr group size {g} is not 4, 8, 16 or 32"
                )))
            }
        };
        self.stats = CsrStats {
            group,
            device_bytes: l.device_bytes(),
            ..CsrStats::default()
        };
        if n == 0 {
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
        let gpu = runtime::gpu()?;
        // Test harnesses and servers solve from many threads: make the context current on this one.
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let module = gpu.module("csr_pr")?;
        let load = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| driver_err(&format!("cuModuleGetFunction ({name})"), e))
        };
        let k = Kernels {
            bfs_init: load("bfs_init")?,
            bfs_level: load("bfs_level")?,
            compact_active: load("compact_active")?,
            pr_round: load("pr_round")?,
            pr_small: load("pr_small")?,
            bfs_small: load("bfs_small")?,
        };
        let (free, _total) = gpu
            .ctx
            .mem_get_info()
            .map_err(|e| driver_err("cuMemGetInfo", e))?;
        if l.device_bytes() > free as u64 {
            return Err(Error::Unsupported(format!(
                "cuda-csr needs {} bytes of GPU memory for {n} nodes and {} arc pairs but {} has \
                 {free} free",
                l.device_bytes(),
                l.fwd_head.len(),
                gpu.name
            )));
        }
        let sms = gpu
            .ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| driver_err("cuDeviceGetAttribute", e))?
            .max(1) as u32;
        let stream = gpu
            .ctx
            .new_stream()
            .map_err(|e| driver_err("cuStreamCreate", e))?;
        let mut dev = upload(&stream, l)?;
        let labels = self.run(&stream, &k, &mut dev, group, sms)?;
        let pushed = stream
            .clone_dtoh(&dev.flow)
            .map_err(|e| driver_err("cuMemcpyDtoH (flow)", e))?;
        stream
            .synchronize()
            .map_err(|e| driver_err("cuStreamSynchronize", e))?;
        let flow = l
            .base_flow
            .checked_add(pushed[0] as Flow)
            .ok_or_else(|| Error::Overflow("flow value exceeds i64".into()))?;
        let sink_side = labels.iter().map(|&h| h as usize <= n).collect();
        let cut = Cut { flow, sink_side };
        let Some(source) = source else {
            return Ok((cut, None));
        };
        // Phase two: the source is the target; its residual from node v is the flow on s → v,
        // all of source[v] after the saturating init. Epoch stamps start over with the run.
        let up = stream
            .clone_htod(source)
            .map_err(|e| driver_err("cuMemcpyHtoD (source capacities)", e))?;
        let sink_r = std::mem::replace(&mut dev.sink_r, up);
        let zero = |e| driver_err("cuMemsetD8Async", e);
        stream.memset_zeros(&mut dev.stamp).map_err(zero)?;
        stream.memset_zeros(&mut dev.flow).map_err(zero)?;
        self.run(&stream, &k, &mut dev, group, sms)?;
        let down = |what: &str, e| driver_err(&format!("cuMemcpyDtoH ({what})"), e);
        let excess = stream
            .clone_dtoh(&dev.excess)
            .map_err(|e| down("excess", e))?;
        let back = Residuals {
            rf: stream
                .clone_dtoh(&dev.rf)
                .map_err(|e| down("residuals", e))?,
            sink_r: stream
                .clone_dtoh(&sink_r)
                .map_err(|e| down("sink residuals", e))?,
            source_flow: stream
                .clone_dtoh(&dev.sink_r)
                .map_err(|e| down("source flows", e))?,
        };
        stream
            .synchronize()
            .map_err(|e| driver_err("cuStreamSynchronize", e))?;
        if let Some(v) = excess.iter().position(|&e| e != 0) {
            return Err(Error::Graph(format!(
                "cuda-csr phase two left excess {} at node {v} (please report this graph)",
                excess[v]
            )));
        }
        Ok((cut, Some(back)))
    }

    /// Global relabels and push-relabel rounds until no node with excess reaches the sink;
    /// returns the labels of the last global relabel.
    fn run(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        dev: &mut DeviceGraph,
        group: u32,
        sms: u32,
    ) -> Result<Vec<u32>> {
        let n = dev.n;
        let log_g = group.trailing_zeros();
        let per_node = LaunchConfig {
            grid_dim: (n.div_ceil(BLOCK), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // Worklist kernels stride over their list: enough blocks to fill the GPU, no more.
        let blocks = ((n as u64 * group as u64).div_ceil(BLOCK as u64) as u32).clamp(1, sms * 8);
        let per_item = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // Far beyond what push-relabel with global relabels needs; a guard against a hang.
        let max_rounds = 1_000_000u64.max(64 * n as u64);
        let mut ep = 0u32;
        loop {
            let levels = self.global_relabel(stream, k, dev, log_g, per_node, per_item)?;
            ep += 1;
            stream
                .memset_zeros(&mut dev.pr_counts)
                .map_err(|e| driver_err("cuMemsetD8Async", e))?;
            // SAFETY: arguments match `compact_active` in kernels/csr_pr.cu; excess, label, stamp
            // and the list have n entries, the counter ring 3.
            unsafe {
                stream
                    .launch_builder(&k.compact_active)
                    .arg(&n)
                    .arg(&dev.excess)
                    .arg(&dev.label)
                    .arg(&mut dev.stamp)
                    .arg(&mut dev.lists[(ep % 2) as usize])
                    .arg(&mut dev.pr_counts.slice_mut(ep as usize % 3..))
                    .arg(&ep)
                    .launch(per_node)
            }
            .map_err(|e| driver_err("cuLaunchKernel (compact_active)", e))?;
            self.stats.launches += 1;
            let mut size = read_ring(stream, &dev.pr_counts)?[ep as usize % 3];
            if size == 0 {
                return stream
                    .clone_dtoh(&dev.label)
                    .map_err(|e| driver_err("cuMemcpyDtoH (labels)", e));
            }
            let rounds = match self.relabel_every {
                0 => MIN_ROUNDS.max(levels),
                r => r,
            };
            let spread = (self.stats.global_relabels > self.spread_after as u64) as i32;
            let mut r = 0;
            while r < rounds && size > 0 {
                if size <= self.small_list {
                    let steps = rounds - r;
                    let [list0, list1] = &mut dev.lists;
                    // SAFETY: arguments match `pr_small` in kernels/csr_pr.cu: as `pr_round`,
                    // with both lists, the counter ring 3 and the state 2.
                    unsafe {
                        stream
                            .launch_builder(&k.pr_small)
                            .arg(&n)
                            .arg(&dev.fwd_first)
                            .arg(&dev.fwd_head)
                            .arg(&dev.rev_first)
                            .arg(&dev.rev_tail)
                            .arg(&dev.rev_arc)
                            .arg(&mut dev.rf)
                            .arg(&dev.tot)
                            .arg(&mut dev.sink_r)
                            .arg(&mut dev.excess)
                            .arg(&mut dev.label)
                            .arg(&mut dev.stamp)
                            .arg(&mut dev.flow)
                            .arg(list0)
                            .arg(list1)
                            .arg(&mut dev.pr_counts)
                            .arg(&mut dev.state)
                            .arg(&ep)
                            .arg(&log_g)
                            .arg(&self.ops_per_round.max(1))
                            .arg(&spread)
                            .arg(&self.small_list)
                            .arg(&steps)
                            .launch(ONE_BLOCK)
                    }
                    .map_err(|e| driver_err("cuLaunchKernel (pr_small)", e))?;
                    self.stats.launches += 1;
                    let [reached, done] = read_state(stream, &dev.state)?;
                    ep = reached;
                    r += done;
                    self.stats.rounds += done as u64;
                    self.stats.small_rounds += done as u64;
                } else {
                    for _ in 0..CHECK_EVERY.min(rounds - r) {
                        let [list, next] = &mut dev.lists;
                        let (list, next) = if ep.is_multiple_of(2) {
                            (&*list, next)
                        } else {
                            (&*next, list)
                        };
                        // SAFETY: arguments match `pr_round` in kernels/csr_pr.cu: the CSR arrays
                        // as uploaded, per-node arrays of n entries, lists of n, the counter ring
                        // 3, flow 1.
                        unsafe {
                            stream
                                .launch_builder(&k.pr_round)
                                .arg(&n)
                                .arg(&dev.fwd_first)
                                .arg(&dev.fwd_head)
                                .arg(&dev.rev_first)
                                .arg(&dev.rev_tail)
                                .arg(&dev.rev_arc)
                                .arg(&mut dev.rf)
                                .arg(&dev.tot)
                                .arg(&mut dev.sink_r)
                                .arg(&mut dev.excess)
                                .arg(&mut dev.label)
                                .arg(&mut dev.stamp)
                                .arg(&mut dev.flow)
                                .arg(list)
                                .arg(next)
                                .arg(&mut dev.pr_counts)
                                .arg(&ep)
                                .arg(&log_g)
                                .arg(&self.ops_per_round.max(1))
                                .arg(&spread)
                                .launch(per_item)
                        }
                        .map_err(|e| driver_err("cuLaunchKernel (pr_round)", e))?;
                        ep += 1;
                        r += 1;
                        self.stats.rounds += 1;
                        self.stats.launches += 1;
                    }
                }
                size = read_ring(stream, &dev.pr_counts)?[ep as usize % 3];
            }
            if self.stats.rounds > max_rounds {
                return Err(Error::Graph(format!(
                    "cuda-csr did not converge in {} rounds (please report this graph)",
                    self.stats.rounds
                )));
            }
        }
    }

    /// Exact distances to the sink over residual arcs; returns the number of BFS levels.
    fn global_relabel(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        dev: &mut DeviceGraph,
        log_g: u32,
        per_node: LaunchConfig,
        per_item: LaunchConfig,
    ) -> Result<u32> {
        self.stats.global_relabels += 1;
        let n = dev.n;
        stream
            .memset_zeros(&mut dev.bfs_counts)
            .map_err(|e| driver_err("cuMemsetD8Async", e))?;
        // Level L's frontier is lists[L % 2] with its size in bfs_counts[L % 3].
        // SAFETY: arguments match `bfs_init` in kernels/csr_pr.cu; arrays have n entries.
        unsafe {
            stream
                .launch_builder(&k.bfs_init)
                .arg(&n)
                .arg(&dev.sink_r)
                .arg(&mut dev.label)
                .arg(&mut dev.lists[1])
                .arg(&mut dev.bfs_counts.slice_mut(1..))
                .launch(per_node)
        }
        .map_err(|e| driver_err("cuLaunchKernel (bfs_init)", e))?;
        self.stats.launches += 1;
        let mut level = 1u32;
        let mut size = read_ring(stream, &dev.bfs_counts)?[1];
        // The frontier of `level` is empty: every later one is too.
        while size > 0 && level <= n {
            if size <= self.small_list {
                let [list0, list1] = &mut dev.lists;
                // SAFETY: arguments match `bfs_small` in kernels/csr_pr.cu: as `bfs_level`, with
                // both lists, the counter ring 3 and the state 2.
                unsafe {
                    stream
                        .launch_builder(&k.bfs_small)
                        .arg(&n)
                        .arg(&dev.fwd_first)
                        .arg(&dev.fwd_head)
                        .arg(&dev.rev_first)
                        .arg(&dev.rev_tail)
                        .arg(&dev.rev_arc)
                        .arg(&dev.rf)
                        .arg(&dev.tot)
                        .arg(&mut dev.label)
                        .arg(list0)
                        .arg(list1)
                        .arg(&mut dev.bfs_counts)
                        .arg(&mut dev.state)
                        .arg(&level)
                        .arg(&log_g)
                        .arg(&self.small_list)
                        .arg(&u32::MAX)
                        .launch(ONE_BLOCK)
                }
                .map_err(|e| driver_err("cuLaunchKernel (bfs_small)", e))?;
                self.stats.launches += 1;
                let reached = read_state(stream, &dev.state)?[0];
                self.stats.bfs_levels += (reached - level) as u64;
                self.stats.small_levels += (reached - level) as u64;
                level = reached;
            } else {
                for _ in 0..BFS_BATCH {
                    let [even, odd] = &mut dev.lists;
                    let (frontier, next) = if level.is_multiple_of(2) {
                        (&*even, odd)
                    } else {
                        (&*odd, even)
                    };
                    // SAFETY: arguments match `bfs_level` in kernels/csr_pr.cu: the CSR arrays as
                    // uploaded, label n, frontiers n, the counter ring 3.
                    unsafe {
                        stream
                            .launch_builder(&k.bfs_level)
                            .arg(&n)
                            .arg(&dev.fwd_first)
                            .arg(&dev.fwd_head)
                            .arg(&dev.rev_first)
                            .arg(&dev.rev_tail)
                            .arg(&dev.rev_arc)
                            .arg(&dev.rf)
                            .arg(&dev.tot)
                            .arg(&mut dev.label)
                            .arg(frontier)
                            .arg(next)
                            .arg(&mut dev.bfs_counts)
                            .arg(&level)
                            .arg(&log_g)
                            .launch(per_item)
                    }
                    .map_err(|e| driver_err("cuLaunchKernel (bfs_level)", e))?;
                    level += 1;
                    self.stats.bfs_levels += 1;
                    self.stats.launches += 1;
                }
            }
            size = read_ring(stream, &dev.bfs_counts)?[level as usize % 3];
        }
        Ok(level)
    }
}

/// Allocates the device graph and copies the layout and the initial preflow.
fn upload(stream: &Arc<CudaStream>, l: &CsrLayout) -> Result<DeviceGraph> {
    let n = l.num_nodes();
    let up_u32 = |v: &[u32], what: &str| -> Result<CudaSlice<u32>> {
        let pad = [0u32];
        stream
            .clone_htod(if v.is_empty() { &pad[..] } else { v })
            .map_err(|e| driver_err(&format!("cuMemcpyHtoD ({what})"), e))
    };
    let up_i32 = |v: &[i32], what: &str| -> Result<CudaSlice<i32>> {
        let pad = [0i32];
        stream
            .clone_htod(if v.is_empty() { &pad[..] } else { v })
            .map_err(|e| driver_err(&format!("cuMemcpyHtoD ({what})"), e))
    };
    let zeros = |len: usize, what: &str| -> Result<CudaSlice<u32>> {
        stream
            .alloc_zeros::<u32>(len.max(1))
            .map_err(|e| driver_err(&format!("cuMemAlloc ({what})"), e))
    };
    let dev = DeviceGraph {
        n: n as u32,
        fwd_first: up_u32(&l.fwd_first, "forward offsets")?,
        fwd_head: up_u32(&l.fwd_head, "forward heads")?,
        rev_first: up_u32(&l.rev_first, "reverse offsets")?,
        rev_tail: up_u32(&l.rev_tail, "reverse tails")?,
        rev_arc: up_u32(&l.rev_arc, "reverse arcs")?,
        rf: up_i32(&l.rf, "residual capacities")?,
        tot: up_i32(&l.tot, "pair capacities")?,
        sink_r: up_i32(&l.sink_r, "sink capacities")?,
        excess: stream
            .clone_htod(&l.excess)
            .map_err(|e| driver_err("cuMemcpyHtoD (excess)", e))?,
        label: zeros(n, "labels")?,
        stamp: zeros(n, "stamps")?,
        flow: stream
            .alloc_zeros::<u64>(1)
            .map_err(|e| driver_err("cuMemAlloc (flow)", e))?,
        lists: [zeros(n, "worklist")?, zeros(n, "worklist")?],
        pr_counts: zeros(3, "worklist sizes")?,
        bfs_counts: zeros(3, "frontier sizes")?,
        state: zeros(2, "loop state")?,
    };
    // The host buffers are borrowed: finish the copies before they may be freed.
    stream
        .synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize (upload)", e))?;
    Ok(dev)
}

/// The three entries of a counter ring (synchronises the stream).
fn read_ring(stream: &Arc<CudaStream>, ring: &CudaSlice<u32>) -> Result<[u32; 3]> {
    let mut out = [0u32; 3];
    stream
        .memcpy_dtoh(ring, &mut out[..])
        .map_err(|e| driver_err("cuMemcpyDtoH (counter)", e))?;
    stream
        .synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize", e))?;
    Ok(out)
}

/// The epoch (level) a one-block loop reached and the rounds it ran (synchronises the stream).
fn read_state(stream: &Arc<CudaStream>, state: &CudaSlice<u32>) -> Result<[u32; 2]> {
    let mut out = [0u32; 2];
    stream
        .memcpy_dtoh(state, &mut out[..])
        .map_err(|e| driver_err("cuMemcpyDtoH (loop state)", e))?;
    stream
        .synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize", e))?;
    Ok(out)
}

/// A sequential emulation of `kernels/csr_pr.cu` and of [`CudaCsr::run`], for machines without a
/// GPU: worklists with epoch stamps, each round's operations in a random interleaving, neighbour
/// labels optionally as stale as a GPU group could see them (as they were when the round began).
/// It checks the algorithm and the layout, not the CUDA code: keep it in step with the kernels.
#[cfg(test)]
mod emulation {
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

    /// Emulated round counts with and without split pushes, for the instances (`segcut gen`
    /// specs) in `SEGCUT_CSR_EMULATE`: a cheap way to try the algorithm on the families.
    #[test]
    #[ignore]
    fn emulated_round_counts() {
        let list = std::env::var("SEGCUT_CSR_EMULATE").unwrap_or_default();
        for text in list.split(',').filter(|t| !t.is_empty()) {
            let net = crate::gen::generate(&text.parse().unwrap()).unwrap();
            let g = net.to_csr().unwrap();
            let bk = Bk::default().solve_csr(&g).unwrap();
            for spread_after in [u32::MAX, 0, 16] {
                let mut rng = Rng::new(1);
                let (cut, rounds) = emulate(&g, &mut rng, false, 0, spread_after);
                assert_eq!(cut.flow, bk.flow, "{text}");
                eprintln!("{text} spread_after={spread_after}: {rounds} rounds");
            }
        }
    }
}
