//! `cuda-grid`: exact push-relabel max-flow on a [`GridGraph`], on the GPU (kernels in
//! `kernels/grid_pr.cu`; this module is the only one that knows their argument order).
//!
//! Phase one of push-relabel only: the flow value is everything pushed into the sink, and the
//! canonical cut is read off the final global relabel (the breadth-first search from the sink).
//!
//! The algorithm, in rounds driven from the host:
//! 1. *Init* (host): every source arc is saturated, and the part of it that can leave through the
//!    node's own sink arc, `min(source, sink)`, is counted as flow at once.
//! 2. *Global relabel* (GPU): a level-synchronous BFS from the sink over residual arcs gives every
//!    node its exact distance to the sink, or `INF = n + 1` when it has none.
//! 3. If no node with excess reaches the sink, the preflow is maximum: stop. Otherwise run as many
//!    rounds of Hong's lock-free push-relabel as the BFS had levels (so relabelling costs at most
//!    half of the launches), checking for quiescence every few rounds, and go to 2.
//!
//! Exactness does not rest on the concurrent labels: the stop test of step 3 is the max-flow
//! condition itself, checked on a fresh BFS.

use std::time::{Duration, Instant};

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};

use super::device::DeviceGrid;
use super::runtime::{self, driver_err};
use crate::graph::{Connectivity, CsrGraph, Flow, GridGraph};
use crate::maxflow::{Cut, Solver};
use crate::{Error, Result};

/// Threads per block of every kernel.
const BLOCK: u32 = 256;
/// Fewest push-relabel launches between two global relabels.
const MIN_ROUNDS: u32 = 16;
/// How often (in launches) the active-node counter is read back during push-relabel.
const CHECK_EVERY: u32 = 8;
/// BFS levels launched between two read-backs of the "reached" counter.
const BFS_BATCH: u32 = 16;

/// Device bytes per node of the `cuda-grid` solver for a connectivity: one `i32` residual
/// capacity per direction, the sink residual (`i32`), the excess (`i64`) and the label (`u32`).
///
/// | connectivity | N4 | N8 | N6 | N26 |
/// |---|---|---|---|---|
/// | bytes per node | 32 | 48 | 40 | 120 |
///
/// ```
/// use segcut::graph::Connectivity;
/// use segcut::maxflow::cuda::grid_bytes_per_node;
/// assert_eq!(grid_bytes_per_node(Connectivity::N4), 32);
/// assert_eq!(grid_bytes_per_node(Connectivity::N26), 120);
/// ```
pub fn grid_bytes_per_node(conn: Connectivity) -> usize {
    4 * conn.degree() + 4 + 8 + 4
}

/// The GPU grid solver (`--solver cuda-grid`). Solves [`GridGraph`]s only; general graphs get
/// [`Error::Unsupported`].
///
/// ```no_run
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{cuda::CudaGrid, verify, Solver};
/// let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(1, 0, 5);
/// g.set_arc(0, 1, 2).unwrap();
/// let cut = CudaGrid::default().solve_grid(&g).unwrap(); // an error without a GPU
/// assert_eq!(cut.flow, 2);
/// verify(&g, &cut).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct CudaGrid {
    /// Push or relabel operations each node's thread may do per launch.
    pub ops_per_launch: i32,
    /// Statistics of the last solve.
    pub stats: GridStats,
}

impl Default for CudaGrid {
    fn default() -> Self {
        CudaGrid {
            ops_per_launch: 4,
            stats: GridStats::default(),
        }
    }
}

/// What the last [`CudaGrid`] solve did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GridStats {
    /// Push-relabel kernel launches.
    pub rounds: u64,
    /// Global relabels (breadth-first searches from the sink).
    pub global_relabels: u64,
    /// BFS level launches, over all global relabels.
    pub bfs_levels: u64,
    /// Device bytes allocated for the graph.
    pub device_bytes: u64,
}

/// The grid's shape as every kernel takes it (`struct Grid` in `kernels/grid_pr.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct GridArgs {
    w: u32,
    h: u32,
    d: u32,
    n: u32,
    deg: u32,
    is3d: u32,
}

// SAFETY: plain `repr(C)` struct of u32 fields, the same layout as the kernels' `struct Grid`.
unsafe impl DeviceRepr for GridArgs {}

/// The kernels of `kernels/grid_pr.cu`.
struct Kernels {
    pr_round: CudaFunction,
    bfs_init: CudaFunction,
    bfs_level: CudaFunction,
    count_active: CudaFunction,
}

/// The graph on the device.
struct DeviceGraph {
    rcap: CudaSlice<i32>,
    sink_r: CudaSlice<i32>,
    excess: CudaSlice<i64>,
    label: CudaSlice<u32>,
    flow: CudaSlice<u64>,
    counter: CudaSlice<u32>,
}

impl Solver for CudaGrid {
    fn name(&self) -> &'static str {
        "cuda-grid"
    }

    fn solve_csr(&mut self, _g: &CsrGraph) -> Result<Cut> {
        Err(Error::Unsupported(
            "the cuda-grid solver takes grid graphs only; use bk for general graphs".into(),
        ))
    }

    fn solve_grid(&mut self, g: &GridGraph) -> Result<Cut> {
        Ok(self.solve_grid_timed(g)?.0)
    }

    fn solve_grid_timed(&mut self, g: &GridGraph) -> Result<(Cut, Duration)> {
        let t0 = Instant::now();
        g.validate()?;
        let shape = check_shape(g)?;
        let gpu = runtime::gpu()?;
        // Test harnesses and servers solve from many threads: make the context current on this one.
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let module = gpu.module("grid_pr")?;
        let load = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| driver_err(&format!("cuModuleGetFunction ({name})"), e))
        };
        let k = Kernels {
            pr_round: load("pr_round")?,
            bfs_init: load("bfs_init")?,
            bfs_level: load("bfs_level")?,
            count_active: load("count_active")?,
        };
        let n = g.num_nodes();
        let needed = (n as u64) * grid_bytes_per_node(g.connectivity()) as u64 + 64;
        let (free, _total) = gpu
            .ctx
            .mem_get_info()
            .map_err(|e| driver_err("cuMemGetInfo", e))?;
        if needed > free as u64 {
            return Err(Error::Unsupported(format!(
                "cuda-grid needs {needed} bytes of GPU memory for {n} nodes ({} bytes per {} \
                 node) but {} has {free} free",
                grid_bytes_per_node(g.connectivity()),
                g.connectivity(),
                gpu.name
            )));
        }
        self.stats = GridStats {
            device_bytes: needed,
            ..GridStats::default()
        };

        let (base_flow, excess, sink_r) = saturate_terminals(g)?;
        let stream = gpu
            .ctx
            .new_stream()
            .map_err(|e| driver_err("cuStreamCreate", e))?;
        let mut dev = upload(&stream, g, &excess, &sink_r)?;
        drop((excess, sink_r));
        let build = t0.elapsed();

        self.run(&stream, &k, shape, &mut dev)?;

        let labels = stream
            .clone_dtoh(&dev.label)
            .map_err(|e| driver_err("cuMemcpyDtoH (labels)", e))?;
        let pushed = stream
            .clone_dtoh(&dev.flow)
            .map_err(|e| driver_err("cuMemcpyDtoH (flow)", e))?;
        stream
            .synchronize()
            .map_err(|e| driver_err("cuStreamSynchronize", e))?;
        let flow = base_flow
            .checked_add(pushed[0] as Flow)
            .ok_or_else(|| Error::Overflow("flow value exceeds i64".into()))?;
        let sink_side = labels.iter().map(|&l| l <= shape.n).collect();
        Ok((Cut { flow, sink_side }, build))
    }
}

impl CudaGrid {
    /// Solves a grid whose capacities are already on the GPU (see [`DeviceGrid`]), returning the
    /// cut and the time spent before the solve proper began.
    pub fn solve_device(&mut self, g: DeviceGrid) -> Result<(Cut, Duration)> {
        // First version: bring the graph back to the host and solve it there as usual.
        let [w, h, d] = g.dims;
        let mut host = GridGraph::new(w, h, d, g.conn)?;
        let n = host.num_nodes();
        let caps = g
            .stream
            .clone_dtoh(&g.caps)
            .map_err(|e| driver_err("cuMemcpyDtoH (capacities)", e))?;
        let source = g
            .stream
            .clone_dtoh(&g.source)
            .map_err(|e| driver_err("cuMemcpyDtoH (source capacities)", e))?;
        let sink = g
            .stream
            .clone_dtoh(&g.sink)
            .map_err(|e| driver_err("cuMemcpyDtoH (sink capacities)", e))?;
        g.stream
            .synchronize()
            .map_err(|e| driver_err("cuStreamSynchronize", e))?;
        for dir in 0..g.conn.degree() {
            host.caps_mut(dir)
                .copy_from_slice(&caps[dir * n..(dir + 1) * n]);
        }
        for v in 0..n {
            host.set_terminals(v, source[v], sink[v]);
        }
        self.solve_grid_timed(&host)
    }
}

impl CudaGrid {
    /// Global relabels and push-relabel rounds until no node with excess reaches the sink.
    fn run(
        &mut self,
        stream: &std::sync::Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        let cfg = LaunchConfig {
            grid_dim: (shape.n.div_ceil(BLOCK), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // Far beyond what push-relabel with global relabels needs; a guard against a hang.
        let max_rounds = 1_000_000u64.max(64 * shape.n as u64);
        loop {
            let levels = self.global_relabel(stream, k, shape, dev, cfg)?;
            set_zero(stream, &mut dev.counter)?;
            // SAFETY: arguments match `count_active` in kernels/grid_pr.cu; arrays have n entries.
            unsafe {
                stream
                    .launch_builder(&k.count_active)
                    .arg(&shape)
                    .arg(&dev.excess)
                    .arg(&dev.label)
                    .arg(&mut dev.counter)
                    .launch(cfg)
            }
            .map_err(|e| driver_err("cuLaunchKernel (count_active)", e))?;
            if read_counter(stream, &dev.counter)? == 0 {
                return Ok(());
            }
            let rounds = MIN_ROUNDS.max(levels);
            for r in 1..=rounds {
                let count = r % CHECK_EVERY == 0 || r == rounds;
                if count {
                    set_zero(stream, &mut dev.counter)?;
                }
                // SAFETY: arguments match `pr_round` in kernels/grid_pr.cu; rcap has deg·n
                // entries, the other arrays n, flow and counter one.
                unsafe {
                    stream
                        .launch_builder(&k.pr_round)
                        .arg(&shape)
                        .arg(&mut dev.rcap)
                        .arg(&mut dev.sink_r)
                        .arg(&mut dev.excess)
                        .arg(&mut dev.label)
                        .arg(&mut dev.flow)
                        .arg(&mut dev.counter)
                        .arg(&(count as i32))
                        .arg(&self.ops_per_launch.max(1))
                        .launch(cfg)
                }
                .map_err(|e| driver_err("cuLaunchKernel (pr_round)", e))?;
                self.stats.rounds += 1;
                if count && read_counter(stream, &dev.counter)? == 0 {
                    break;
                }
            }
            if self.stats.rounds > max_rounds {
                return Err(Error::Graph(format!(
                    "cuda-grid did not converge in {} rounds (please report this graph)",
                    self.stats.rounds
                )));
            }
        }
    }

    /// Exact distances to the sink over residual arcs; returns the number of BFS levels.
    fn global_relabel(
        &mut self,
        stream: &std::sync::Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        cfg: LaunchConfig,
    ) -> Result<u32> {
        self.stats.global_relabels += 1;
        // SAFETY: arguments match `bfs_init` in kernels/grid_pr.cu; arrays have n entries.
        unsafe {
            stream
                .launch_builder(&k.bfs_init)
                .arg(&shape)
                .arg(&dev.sink_r)
                .arg(&mut dev.label)
                .launch(cfg)
        }
        .map_err(|e| driver_err("cuLaunchKernel (bfs_init)", e))?;
        let mut level = 1u32;
        loop {
            set_zero(stream, &mut dev.counter)?;
            for _ in 0..BFS_BATCH {
                // SAFETY: arguments match `bfs_level` in kernels/grid_pr.cu; rcap has deg·n
                // entries, label n.
                unsafe {
                    stream
                        .launch_builder(&k.bfs_level)
                        .arg(&shape)
                        .arg(&dev.rcap)
                        .arg(&mut dev.label)
                        .arg(&level)
                        .arg(&mut dev.counter)
                        .launch(cfg)
                }
                .map_err(|e| driver_err("cuLaunchKernel (bfs_level)", e))?;
                level += 1;
                self.stats.bfs_levels += 1;
            }
            // Levels beyond the last reached one label nothing, so a batch that reached no node
            // means the search is over.
            if read_counter(stream, &dev.counter)? == 0 || level > shape.n {
                return Ok(level);
            }
        }
    }
}

/// The grid's shape for the kernels, or an error when it does not fit their 32-bit indices.
fn check_shape(g: &GridGraph) -> Result<GridArgs> {
    let [w, h, d] = g.dims();
    let n = g.num_nodes();
    // Labels go up to n + 1 and `w * h` is computed in 32 bits on the device.
    if n > (u32::MAX - 2) as usize {
        return Err(Error::Unsupported(format!(
            "cuda-grid supports up to {} nodes, the grid has {n}",
            u32::MAX - 2
        )));
    }
    Ok(GridArgs {
        w: w as u32,
        h: h as u32,
        d: d as u32,
        n: n as u32,
        deg: g.connectivity().degree() as u32,
        is3d: g.connectivity().is_3d() as u32,
    })
}

/// Saturates every source arc: returns the flow sent straight on through each node's own sink
/// arc, and the excesses and sink residuals left. Excess is `i64` on the device, which holds any
/// node's excess because it never exceeds the total source capacity, checked here to fit.
fn saturate_terminals(g: &GridGraph) -> Result<(Flow, Vec<i64>, Vec<i32>)> {
    let total_source: i128 = g.source_caps().iter().map(|&c| c as i128).sum();
    if total_source > i64::MAX as i128 {
        return Err(Error::Overflow(format!(
            "total source capacity {total_source} exceeds the i64 excess of cuda-grid"
        )));
    }
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

/// Allocates the device graph and copies the residual capacities, excesses and sink residuals.
fn upload(
    stream: &std::sync::Arc<CudaStream>,
    g: &GridGraph,
    excess: &[i64],
    sink_r: &[i32],
) -> Result<DeviceGraph> {
    let n = g.num_nodes();
    let deg = g.connectivity().degree();
    let alloc_err = |what: &str| {
        let what = what.to_string();
        move |e| driver_err(&format!("cuMemAlloc ({what})"), e)
    };
    let mut rcap = stream
        .alloc_zeros::<i32>(deg * n)
        .map_err(alloc_err("residual capacities"))?;
    for d in 0..deg {
        let mut dst = rcap.slice_mut(d * n..(d + 1) * n);
        stream
            .memcpy_htod(g.caps(d), &mut dst)
            .map_err(|e| driver_err("cuMemcpyHtoD (capacities)", e))?;
    }
    let dev = DeviceGraph {
        rcap,
        sink_r: stream
            .clone_htod(sink_r)
            .map_err(|e| driver_err("cuMemcpyHtoD (sink capacities)", e))?,
        excess: stream
            .clone_htod(excess)
            .map_err(|e| driver_err("cuMemcpyHtoD (excess)", e))?,
        label: stream.alloc_zeros::<u32>(n).map_err(alloc_err("labels"))?,
        flow: stream.alloc_zeros::<u64>(1).map_err(alloc_err("flow"))?,
        counter: stream.alloc_zeros::<u32>(1).map_err(alloc_err("counter"))?,
    };
    // The host buffers are borrowed: finish the copies before they may be freed.
    stream
        .synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize (upload)", e))?;
    Ok(dev)
}

fn set_zero(stream: &std::sync::Arc<CudaStream>, c: &mut CudaSlice<u32>) -> Result<()> {
    stream
        .memset_zeros(c)
        .map_err(|e| driver_err("cuMemsetD8Async", e))
}

fn read_counter(stream: &std::sync::Arc<CudaStream>, c: &CudaSlice<u32>) -> Result<u32> {
    let v = stream
        .clone_dtoh(c)
        .map_err(|e| driver_err("cuMemcpyDtoH (counter)", e))?;
    stream
        .synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize", e))?;
    Ok(v[0])
}

/// A sequential emulation of `kernels/grid_pr.cu` and of [`CudaGrid::run`], for machines without a
/// GPU: every launch runs its threads' operations in a random interleaving, optionally reading
/// neighbour labels as they were when the launch began (the stalest a GPU thread could see). It
/// checks the algorithm, not the CUDA code: keep it in step with the kernels.
#[cfg(test)]
mod emulation {
    use super::*;
    use crate::maxflow::{bk::Bk, verify};
    use crate::rng::Rng;

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
        let mut stats = GridStats::default();
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
        let inf = n as u32 + 1;
        let active = |st: &State| {
            (0..n)
                .filter(|&v| st.excess[v] > 0 && st.label[v] < inf)
                .count()
        };
        loop {
            let levels = bfs(g, &mut st);
            stats.global_relabels += 1;
            stats.bfs_levels += levels as u64;
            if active(&st) == 0 {
                break;
            }
            for r in 1..=MIN_ROUNDS.max(levels) {
                stats.rounds += 1;
                let seen = stale.then(|| st.label.clone());
                // Each thread has 4 operations; run them in a random interleaving.
                let mut left: Vec<(usize, u32)> = (0..n).map(|v| (v, 4)).collect();
                while !left.is_empty() {
                    let i = rng.below(left.len() as u64) as usize;
                    let v = left[i].0;
                    left[i].1 -= 1;
                    if !op(g, &mut st, v, seen.as_deref()) || left[i].1 == 0 {
                        left.swap_remove(i);
                    }
                }
                if r % CHECK_EVERY == 0 && active(&st) == 0 {
                    break;
                }
            }
        }
        let cut = Cut {
            flow: base + st.pushed,
            sink_side: st.label.iter().map(|&l| l <= n as u32).collect(),
        };
        (cut, stats)
    }

    /// Launch counts the GPU solver should make on the test suite's vision grids (run with
    /// `--ignored --nocapture`; slow: the emulation is sequential).
    #[test]
    #[ignore]
    fn emulated_launch_counts_on_vision_grids() {
        use crate::gen::grid::{vision_grid, GridSpec};
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
            eprintln!(
                "{spec:?}: {stats:?} ({:.1} s emulated)",
                t.elapsed().as_secs_f64()
            );
        }
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
            for v in 0..g.num_nodes() {
                let s = if rng.below(3) == 0 {
                    rng.below(20) as i32
                } else {
                    0
                };
                let t = if rng.below(3) == 0 {
                    rng.below(20) as i32
                } else {
                    0
                };
                g.set_terminals(v, s, t);
            }
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
}
