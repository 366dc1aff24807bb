//! `cuda-grid`: exact push-relabel max-flow on a [`GridGraph`], on the GPU (kernels in
//! `kernels/grid_pr.cu`; this module is the only one that knows their argument order).
//!
//! Phase one of push-relabel finds the cut: the flow value is everything pushed into the sink,
//! and the canonical cut is read off the final global relabel (the breadth-first search from the
//! sink). Phase two, which returns the remaining excess to the source so that the preflow becomes
//! a flow, runs only for [`Solver::solve_flows`]: the same loop with the source as the target.
//!
//! The algorithm, driven from the host:
//! 1. *Init* (GPU): every source arc is saturated, and the part of it that can leave through the
//!    node's own sink arc, `min(source, sink)`, is counted as flow at once.
//! 2. *Global relabel* (GPU): exact distances to the sink over residual arcs, `INF = n + 1` for
//!    nodes with none. Tiled (default): each listed tile iterates the distance equations to a
//!    fixed point in shared memory, and tiles whose border changed list their neighbours for the
//!    next pass, until a pass lists no tile. Levels: one launch per BFS level over all nodes.
//! 3. If no node with excess reaches the sink, the preflow is maximum: stop. Otherwise discharge:
//!    tiled (default), each round launches only the tiles on the worklist (tiles with active
//!    nodes or that received excess), each running many push/relabel sweeps in shared memory;
//!    sweep, every node's thread does a few Hong-style operations per launch. After a number of
//!    rounds that follows the cost of the last relabel (adaptive), go to 2.
//!
//! Exactness does not rest on the concurrent labels: the stop test of step 3 is the max-flow
//! condition itself, checked on a fresh global relabel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode, CUstreamCaptureStatus};
use cudarc::driver::{
    CudaFunction, CudaGraph, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};

use crate::cuda::DeviceGrid;
use crate::cuda::{self as runtime, driver_err};
use crate::graph::{Connectivity, Flow, GridGraph};
use crate::maxflow::solver::timed;
use crate::maxflow::{Cut, Flows, GpuStats, GraphRef, Solved, Solver, SolverKind};
use crate::{Error, Result};

/// Threads per block of every kernel (`TILE_BLOCK` in the kernels too).
const BLOCK: u32 = 256;
/// Fewest sweep-mode push-relabel launches between two global relabels.
const MIN_ROUNDS: u32 = 16;
/// How often (in launches) the active counter is read back during sweep-mode push-relabel.
const CHECK_EVERY: u32 = 8;
/// BFS levels launched between two read-backs of the "reached" counter.
const BFS_BATCH: u32 = 16;

/// Device bytes per node of the `cuda-grid` solver for a connectivity, at its peak: one `i32`
/// residual capacity per direction, the source and sink capacities (`i32` each; the sink array
/// becomes the sink residual and the source array is freed after the start), the excess (`i64`)
/// and the label (`u32`). Tile worklists add 8 bytes per tile (a few per thousand nodes).
///
/// | connectivity | N4 | N8 | N6 | N26 |
/// |---|---|---|---|---|
/// | bytes per node | 36 | 52 | 44 | 124 |
///
/// ```
/// use segcut::graph::Connectivity;
/// use segcut::maxflow::cuda::grid_bytes_per_node;
/// assert_eq!(grid_bytes_per_node(Connectivity::N4), 36);
/// assert_eq!(grid_bytes_per_node(Connectivity::N26), 124);
/// ```
pub fn grid_bytes_per_node(conn: Connectivity) -> usize {
    4 * conn.degree() + 4 + 4 + 8 + 4
}

/// The tile shape of the tiled kernels for a connectivity (`Tile<DEG>` in `kernels/grid_pr.cu`,
/// which must agree).
fn tile_shape(conn: Connectivity) -> [usize; 3] {
    match conn {
        Connectivity::N4 => [32, 32, 1],
        Connectivity::N8 => [32, 16, 1],
        Connectivity::N6 => [32, 4, 4],
        Connectivity::N26 => [16, 4, 4],
    }
}

/// How the solver discharges excess between global relabels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discharge {
    /// [`Discharge::Tiles`], except for 26-connected grids, where a tile's 8 colour classes
    /// leave most of a block idle and [`Discharge::Sweep`] is faster (the default; on an H100,
    /// 128³ N26: 25 ms against 49 ms).
    Auto,
    /// Region discharge of the tiles on a worklist, in shared memory (the default).
    Tiles,
    /// A thread per node over the whole grid, a few operations per launch (the first version,
    /// kept to measure what the tiles buy).
    Sweep,
}

/// How the launches of a batch (the rounds between two read-backs of a counter) reach the GPU.
///
/// Both run the same kernels in the same order. On an H100 neither measured faster (within a few
/// percent where round counts repeat; see docs/gpu.md): the host queues launches far ahead of
/// kernels of 40 µs and more, so launch overhead is hidden either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Each kind of batch (tiled discharge, tiled BFS, node sweep) is captured into a CUDA graph
    /// once per solve and replayed: one driver call per batch instead of two or three per round.
    /// Falls back to [`Launch::Direct`], with a note on stderr, where capture fails. Level-wise
    /// relabels ([`Relabel::Levels`]) always launch directly: each launch takes its level.
    Graph,
    /// Every memset and kernel launched from the host, one driver call each (the default: no
    /// capture to pay for on each solve).
    Direct,
}

/// How the solver computes the exact distances of a global relabel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relabel {
    /// Tile-local fixed points iterated over a worklist of tiles (the default).
    Tiles,
    /// One launch per breadth-first level over all nodes (the first version).
    Levels,
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
    /// How excess is moved between global relabels.
    pub discharge: Discharge,
    /// How global relabels are computed.
    pub relabel: Relabel,
    /// Sweep mode: push or relabel operations each node's thread may do per launch.
    pub ops_per_launch: i32,
    /// Tiled mode: sweeps over a tile's colour classes per launch.
    pub tile_sweeps: i32,
    /// Discharge rounds between global relabels: at least this many...
    pub relabel_min_rounds: u32,
    /// ... or this many times the launches the last global relabel took, whichever is more.
    pub relabel_ratio: f64,
    /// How batches are launched.
    pub launch: Launch,
    /// Tiled mode: discharge rounds (or BFS passes) per batch, i.e. between two read-backs of the
    /// worklist's length. Discharge batches always run whole, so the rounds between global
    /// relabels are rounded up to a multiple of this.
    pub check_every: u32,
    /// Tiled mode: how many blocks each tile kernel launches (each takes listed tiles in turn).
    pub tile_blocks: TileBlocks,
    /// Statistics of the last solve.
    pub stats: GridStats,
}

impl Default for CudaGrid {
    /// The tuned defaults, which the developer variable `SEGCUT_GRID_TUNE` (e.g.
    /// `discharge=sweep,relabel=levels,sweeps=32,min_rounds=8,ratio=1.5,launch=direct,check=8`)
    /// may override for experiments.
    fn default() -> Self {
        let mut s = CudaGrid {
            discharge: Discharge::Auto,
            relabel: Relabel::Tiles,
            ops_per_launch: 4,
            tile_sweeps: 2,
            relabel_min_rounds: 8,
            relabel_ratio: 1.0,
            launch: Launch::Direct,
            check_every: 4,
            tile_blocks: TileBlocks::Fit,
            stats: GridStats::default(),
        };
        if let Ok(tune) = std::env::var("SEGCUT_GRID_TUNE") {
            s.tune(&tune);
        }
        s
    }
}

impl CudaGrid {
    /// Applies `key=value,...` settings (see [`Default`]); unknown keys and bad values are
    /// ignored with a message, since this is an experimenter's knob.
    pub fn tune(&mut self, spec: &str) {
        for kv in spec.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let ok: Option<()> = match k {
                "discharge" => choice(
                    v,
                    &[
                        ("auto", Discharge::Auto),
                        ("tiles", Discharge::Tiles),
                        ("sweep", Discharge::Sweep),
                    ],
                )
                .map(|x| self.discharge = x),
                "relabel" => choice(v, &[("tiles", Relabel::Tiles), ("levels", Relabel::Levels)])
                    .map(|x| self.relabel = x),
                "ops" => v.parse().ok().map(|x| self.ops_per_launch = x),
                "sweeps" => v.parse().ok().map(|x| self.tile_sweeps = x),
                "min_rounds" => v.parse().ok().map(|x| self.relabel_min_rounds = x),
                "ratio" => v.parse().ok().map(|x| self.relabel_ratio = x),
                "launch" => choice(v, &[("graph", Launch::Graph), ("direct", Launch::Direct)])
                    .map(|x| self.launch = x),
                "check" => v
                    .parse()
                    .ok()
                    .filter(|&x| x > 0)
                    .map(|x| self.check_every = x),
                "blocks" => choice(
                    v,
                    &[("fit", TileBlocks::Fit), ("tiles", TileBlocks::PerTile)],
                )
                .or_else(|| v.parse().ok().filter(|&b| b > 0).map(TileBlocks::Fixed))
                .map(|x| self.tile_blocks = x),
                _ => None,
            };
            if ok.is_none() {
                eprintln!("segcut: ignoring SEGCUT_GRID_TUNE setting '{kv}'");
            }
        }
    }
}

/// How many blocks a tiled kernel launches; each block takes the listed tiles `b`, `b + blocks`, …
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileBlocks {
    /// As many as the GPU holds at once (occupancy × multiprocessors), so a short worklist does
    /// not pay for idle blocks. The default.
    Fit,
    /// One per tile of the grid (blocks past the list's end return at once): the first version.
    PerTile,
    /// A fixed number (tests use a few, so that each block takes many tiles).
    Fixed(u32),
}

/// The value named `v` among `options`.
fn choice<T: Copy>(v: &str, options: &[(&str, T)]) -> Option<T> {
    options.iter().find(|(name, _)| *name == v).map(|&(_, x)| x)
}

/// What the last [`CudaGrid`] solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridStats {
    /// Discharge launches (rounds).
    pub rounds: u64,
    /// Tiles discharged, summed over the rounds whose worklist size was read back (the last of
    /// each batch), times the batch length: an estimate of the tiled work.
    pub tiles_discharged: u64,
    /// Global relabels.
    pub global_relabels: u64,
    /// Launches spent in global relabels (BFS levels or tile passes), over all of them.
    pub bfs_levels: u64,
    /// Milliseconds in global relabels (host clock, including the read-backs).
    pub relabel_ms: f64,
    /// Milliseconds in discharge rounds (host clock, including the read-backs).
    pub discharge_ms: f64,
    /// Milliseconds from the end of the last relabel to the cut on the host (the download).
    pub finish_ms: f64,
    /// Device bytes allocated for the graph.
    pub device_bytes: u64,
    /// Batches replayed from CUDA graphs (0 with [`Launch::Direct`] or after a fallback).
    pub graph_launches: u64,
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

/// The kernels of `kernels/grid_pr.cu` for one connectivity.
struct Kernels {
    pr_round: CudaFunction,
    bfs_init: CudaFunction,
    bfs_level: CudaFunction,
    init_terminals: CudaFunction,
    build_list: CudaFunction,
    bfs_seed: CudaFunction,
    bfs_tile: CudaFunction,
    mark_active: CudaFunction,
    discharge: CudaFunction,
    sink_side: CudaFunction,
}

/// The graph and the solver's state on the device.
struct DeviceGraph {
    rcap: CudaSlice<i32>,
    sink_r: CudaSlice<i32>,
    excess: CudaSlice<i64>,
    label: CudaSlice<u32>,
    flow: CudaSlice<u64>,
    counter: CudaSlice<u32>,
    flags: CudaSlice<u32>,
    list: CudaSlice<u32>,
    ntiles: u32,
    /// Blocks per launch of the tile kernels (see [`CudaGrid::fit_blocks`]).
    discharge_blocks: u32,
    bfs_blocks: u32,
}

impl Solver for CudaGrid {
    fn kind(&self) -> SolverKind {
        SolverKind::CudaGrid
    }

    /// The upload, module load and allocation count as build time. With flows, phase one is
    /// followed by phase two on the GPU: the excess left on source-side nodes flows back to the
    /// source by the same kernels with the source as the target (see [`Flows`]).
    fn run(&mut self, g: GraphRef<'_>, flows: bool) -> Result<Solved> {
        let GraphRef::Grid(g) = g else {
            return Err(Error::Unsupported(
                "the cuda-grid solver takes grid graphs only; use bk or cuda-csr for general \
                 graphs"
                    .into(),
            ));
        };
        timed(|| {
            let t0 = Instant::now();
            let dg = upload(g)?;
            let upload_time = t0.elapsed();
            let solved = self.phase_one(dg, flows)?;
            let mut s = Solved::new(solved.cut.clone(), SolverKind::CudaGrid);
            s.stats.build = upload_time + solved.setup;
            if flows {
                s.flows = Some(self.phase_two(g, solved)?);
            }
            s.stats.gpu = Some(GpuStats::Grid(self.stats.clone()));
            Ok(s)
        })
    }
}

/// Uploads a grid's capacities (validated first) to a new stream.
fn upload(g: &GridGraph) -> Result<DeviceGrid> {
    g.validate()?;
    check_shape(g.dims(), g.connectivity())?;
    let gpu = runtime::gpu()?;
    gpu.ctx
        .bind_to_thread()
        .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
    check_memory(gpu, g.num_nodes(), g.connectivity())?;
    let stream = gpu
        .ctx
        .new_stream()
        .map_err(|e| driver_err("cuStreamCreate", e))?;
    let n = g.num_nodes();
    let deg = g.connectivity().degree();
    let alloc_err = |e| driver_err("cuMemAlloc (capacities)", e);
    let mut caps = stream.alloc_zeros::<i32>(deg * n).map_err(alloc_err)?;
    for d in 0..deg {
        let mut dst = caps.slice_mut(d * n..(d + 1) * n);
        stream
            .memcpy_htod(g.caps(d), &mut dst)
            .map_err(|e| driver_err("cuMemcpyHtoD (capacities)", e))?;
    }
    let upload = |what: &str, v: &[i32]| {
        stream
            .clone_htod(v)
            .map_err(|e| driver_err(&format!("cuMemcpyHtoD ({what})"), e))
    };
    let dg = DeviceGrid {
        dims: g.dims(),
        conn: g.connectivity(),
        caps,
        source: upload("source capacities", g.source_caps())?,
        sink: upload("sink capacities", g.sink_caps())?,
        stream: stream.clone(),
    };
    // The host arrays are borrowed: finish the copies before the solve proper.
    stream
        .synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize (upload)", e))?;
    Ok(dg)
}

/// What phase one leaves for phase two: the preflow on the device and the source capacities.
struct PhaseOne {
    cut: Cut,
    setup: Duration,
    stream: Arc<CudaStream>,
    k: Kernels,
    shape: GridArgs,
    dev: DeviceGraph,
    source: Option<CudaSlice<i32>>,
}

impl CudaGrid {
    /// Solves a grid whose capacities are already on the GPU (see [`DeviceGrid`]); nothing goes
    /// back to the host but the cut. The module load and allocation count as build time.
    pub fn solve_device(&mut self, g: DeviceGrid) -> Result<Solved> {
        timed(|| {
            let solved = self.phase_one(g, false)?;
            let mut s = Solved::new(solved.cut, SolverKind::CudaGrid);
            s.stats.build = solved.setup;
            s.stats.gpu = Some(GpuStats::Grid(self.stats.clone()));
            Ok(s)
        })
    }

    /// Phase one of push-relabel: a maximum preflow and the canonical cut. With `keep_source`
    /// the source capacities stay on the device for phase two.
    fn phase_one(&mut self, g: DeviceGrid, keep_source: bool) -> Result<PhaseOne> {
        let t0 = Instant::now();
        let shape = check_shape(g.dims, g.conn)?;
        let gpu = runtime::gpu()?;
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let k = load_kernels(gpu, g.conn)?;
        let n = g.num_nodes();
        self.stats = GridStats {
            device_bytes: (n * grid_bytes_per_node(g.conn)) as u64,
            ..GridStats::default()
        };
        let stream = g.stream.clone();
        let [tx, ty, tz] = tile_shape(g.conn);
        let [w, h, d] = g.dims;
        let ntiles = w.div_ceil(tx) * h.div_ceil(ty) * d.div_ceil(tz);
        let alloc_err =
            |what: &'static str| move |e| driver_err(&format!("cuMemAlloc ({what})"), e);
        let mut dev = DeviceGraph {
            rcap: g.caps,
            sink_r: g.sink,
            excess: stream.alloc_zeros::<i64>(n).map_err(alloc_err("excess"))?,
            label: stream.alloc_zeros::<u32>(n).map_err(alloc_err("labels"))?,
            flow: stream.alloc_zeros::<u64>(1).map_err(alloc_err("flow"))?,
            counter: stream.alloc_zeros::<u32>(1).map_err(alloc_err("counter"))?,
            flags: stream
                .alloc_zeros::<u32>(ntiles)
                .map_err(alloc_err("tile flags"))?,
            list: stream
                .alloc_zeros::<u32>(ntiles)
                .map_err(alloc_err("tile list"))?,
            ntiles: ntiles as u32,
            discharge_blocks: self.tile_blocks(gpu, &k.discharge, ntiles as u32)?,
            bfs_blocks: self.tile_blocks(gpu, &k.bfs_tile, ntiles as u32)?,
        };
        let cfg = node_cfg(shape.n);
        // SAFETY: arguments match `init_terminals` in kernels/grid_pr.cu; the source and sink
        // arrays have n entries (the sink array becomes the sink residual in place).
        unsafe {
            stream
                .launch_builder(&k.init_terminals)
                .arg(&shape)
                .arg(&g.source)
                .arg(&mut dev.excess)
                .arg(&mut dev.sink_r)
                .arg(&mut dev.flow)
                .launch(cfg)
        }
        .map_err(|e| driver_err("cuLaunchKernel (init_terminals)", e))?;
        let source = keep_source.then_some(g.source);
        let setup = t0.elapsed();

        self.run(&stream, &k, shape, &mut dev)?;

        let t_finish = Instant::now();
        // A byte per node comes back, not the label: a quarter of the traffic.
        let mut side = stream
            .alloc_zeros::<u8>(n.max(1))
            .map_err(alloc_err("cut"))?;
        // SAFETY: arguments match `sink_side` in kernels/grid_pr.cu; label and out have n entries.
        unsafe {
            stream
                .launch_builder(&k.sink_side)
                .arg(&shape)
                .arg(&dev.label)
                .arg(&mut side)
                .launch(cfg)
        }
        .map_err(|e| driver_err("cuLaunchKernel (sink_side)", e))?;
        let mut side = stream
            .clone_dtoh(&side)
            .map_err(|e| driver_err("cuMemcpyDtoH (cut)", e))?;
        side.truncate(n);
        let pushed = stream
            .clone_dtoh(&dev.flow)
            .map_err(|e| driver_err("cuMemcpyDtoH (flow)", e))?;
        stream
            .synchronize()
            .map_err(|e| driver_err("cuStreamSynchronize", e))?;
        // At most n·(2^31 - 1) < 2^63 was pushed: the sum fits.
        let flow = pushed[0] as Flow;
        let sink_side = side.into_iter().map(|b| b != 0).collect();
        self.stats.finish_ms = t_finish.elapsed().as_secs_f64() * 1e3;
        if std::env::var_os("SEGCUT_GRID_STATS").is_some() {
            eprintln!("cuda-grid {:?} {:?}: {:?}", g.dims, g.conn, self.stats);
        }
        Ok(PhaseOne {
            cut: Cut { flow, sink_side },
            setup,
            stream,
            k,
            shape,
            dev,
            source,
        })
    }

    /// Phase two: the source becomes the target. Its "sink residual" for node `v` is the flow
    /// on `s → v`, all of `source[v]` after the saturating init, and the same push-relabel
    /// returns every unit of excess along residual paths (each such unit came from the source
    /// along a path whose reverse is residual, so none is stranded). The arcs into the real
    /// sink are left alone: no augmenting path remains, so the flow value does not change.
    fn phase_two(&mut self, g: &GridGraph, mut p: PhaseOne) -> Result<Flows> {
        let stream = p.stream.clone();
        let source = p
            .source
            .take()
            .ok_or_else(|| Error::Graph("cuda-grid: phase two without the source".into()))?;
        let sink_r = std::mem::replace(&mut p.dev.sink_r, source);
        stream
            .memset_zeros(&mut p.dev.flow)
            .map_err(|e| driver_err("cuMemsetD8Async", e))?;
        self.run(&stream, &p.k, p.shape, &mut p.dev)?;
        if std::env::var_os("SEGCUT_GRID_STATS").is_some() {
            eprintln!("cuda-grid after phase two (totals): {:?}", self.stats);
        }
        let down = |what: &str, e| driver_err(&format!("cuMemcpyDtoH ({what})"), e);
        let rcap = stream
            .clone_dtoh(&p.dev.rcap)
            .map_err(|e| down("residuals", e))?;
        let source_flow = stream
            .clone_dtoh(&p.dev.sink_r)
            .map_err(|e| down("source flows", e))?;
        let sink_r = stream
            .clone_dtoh(&sink_r)
            .map_err(|e| down("sink residuals", e))?;
        let excess = stream
            .clone_dtoh(&p.dev.excess)
            .map_err(|e| down("excess", e))?;
        stream
            .synchronize()
            .map_err(|e| driver_err("cuStreamSynchronize", e))?;
        if let Some(v) = excess.iter().position(|&e| e != 0) {
            return Err(Error::Graph(format!(
                "cuda-grid phase two left excess {} at node {v} (please report this graph)",
                excess[v]
            )));
        }
        let n = g.num_nodes();
        let deg = g.connectivity().degree();
        let mut arcs = Vec::with_capacity(deg * n);
        for d in 0..deg {
            let r = &rcap[d * n..(d + 1) * n];
            arcs.extend(g.caps(d).iter().zip(r).map(|(&c, &r)| (c - r).max(0)));
        }
        let sink = g.sink_caps().iter().zip(&sink_r).map(|(&c, &r)| c - r);
        Ok(Flows {
            value: p.cut.flow,
            source: source_flow,
            sink: sink.collect(),
            arcs,
        })
    }

    /// Blocks per launch of tile kernel `f` (see [`TileBlocks`]), at most one per tile.
    fn tile_blocks(&self, gpu: &runtime::Gpu, f: &CudaFunction, ntiles: u32) -> Result<u32> {
        match self.tile_blocks {
            TileBlocks::PerTile => return Ok(ntiles.max(1)),
            TileBlocks::Fixed(b) => return Ok(b.clamp(1, ntiles.max(1))),
            TileBlocks::Fit => {}
        }
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
            .map_err(|e| driver_err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        let sms = gpu
            .ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| driver_err("cuDeviceGetAttribute", e))?;
        Ok((per_sm.max(1) * sms.max(1) as u32).clamp(1, ntiles.max(1)))
    }

    /// Global relabels and discharge rounds until no node with excess reaches the sink.
    fn run(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        let cfg = node_cfg(shape.n);
        // Far beyond what push-relabel with global relabels needs; a guard against a hang.
        let max_rounds = 1_000_000u64.max(64 * shape.n as u64);
        // The graphs hold this call's device pointers (`dev`, whose `sink_r` a later call may
        // replace): captured here and dropped on return, never kept across calls.
        let mut batches = Batches::new(self.launch);
        loop {
            let t = Instant::now();
            let launches = match self.relabel {
                Relabel::Tiles => self.relabel_tiles(stream, k, shape, dev, &mut batches)?,
                Relabel::Levels => self.relabel_levels(stream, k, shape, dev, cfg)?,
            };
            self.stats.global_relabels += 1;
            self.stats.bfs_levels += launches as u64;
            set_zero(stream, &mut dev.counter)?;
            // SAFETY: arguments match `mark_active_nDEG` in kernels/grid_pr.cu; excess and
            // label have n entries, flags one per tile.
            unsafe {
                stream
                    .launch_builder(&k.mark_active)
                    .arg(&shape)
                    .arg(&dev.excess)
                    .arg(&dev.label)
                    .arg(&mut dev.flags)
                    .arg(&mut dev.counter)
                    .launch(cfg)
            }
            .map_err(|e| driver_err("cuLaunchKernel (mark_active)", e))?;
            let any = read_counter(stream, &dev.counter)?;
            self.stats.relabel_ms += t.elapsed().as_secs_f64() * 1e3;
            if any == 0 {
                self.stats.graph_launches = batches.replays;
                return Ok(());
            }
            let budget = (self.relabel_min_rounds.max(1) as f64)
                .max(self.relabel_ratio * launches as f64)
                .ceil() as u32;
            let discharge = match self.discharge {
                Discharge::Auto if shape.deg == 26 => Discharge::Sweep,
                Discharge::Auto => Discharge::Tiles,
                other => other,
            };
            let t = Instant::now();
            match discharge {
                Discharge::Auto | Discharge::Tiles => {
                    // The sweep kernels do not use the tile flags.
                    self.discharge_tiles(stream, k, shape, dev, budget, &mut batches)?
                }
                Discharge::Sweep => {
                    set_zero(stream, &mut dev.flags)?;
                    let budget = budget.max(MIN_ROUNDS);
                    self.discharge_sweep(stream, k, shape, dev, budget, cfg, &mut batches)?
                }
            }
            self.stats.discharge_ms += t.elapsed().as_secs_f64() * 1e3;
            if self.stats.rounds > max_rounds {
                return Err(Error::Graph(format!(
                    "cuda-grid did not converge in {} rounds (please report this graph)",
                    self.stats.rounds
                )));
            }
        }
    }

    /// Batches of tiled region discharge over the worklist, until it is empty or at least
    /// `budget` rounds have run.
    fn discharge_tiles(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        budget: u32,
        batches: &mut Batches,
    ) -> Result<()> {
        let per = self.check_every.max(1);
        let mut done = 0;
        while done < budget {
            batches.submit(stream, Batch::Discharge, || {
                self.record_discharge(stream, k, shape, dev, per)
            })?;
            self.stats.rounds += per as u64;
            done += per;
            let listed = read_counter(stream, &dev.counter)?;
            self.stats.tiles_discharged += listed as u64 * per as u64;
            if listed == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Puts `rounds` tiled discharge rounds on the stream (or into the graph being captured).
    fn record_discharge(
        &self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        rounds: u32,
    ) -> Result<()> {
        let tiles_cfg = tiles_cfg(dev.discharge_blocks);
        for _ in 0..rounds {
            self.build_list(stream, k, dev)?;
            // SAFETY: arguments match `discharge_nDEG` in kernels/grid_pr.cu; rcap has deg·n
            // entries, the node arrays n, list and flags one per tile; blocks past the list's
            // length (read on the device) return at once.
            unsafe {
                stream
                    .launch_builder(&k.discharge)
                    .arg(&shape)
                    .arg(&mut dev.rcap)
                    .arg(&mut dev.sink_r)
                    .arg(&mut dev.excess)
                    .arg(&mut dev.label)
                    .arg(&mut dev.flow)
                    .arg(&dev.list)
                    .arg(&dev.counter)
                    .arg(&mut dev.flags)
                    .arg(&self.tile_sweeps.max(1))
                    .launch(tiles_cfg)
            }
            .map_err(|e| driver_err("cuLaunchKernel (discharge)", e))?;
        }
        Ok(())
    }

    /// Turns the tile flags into the worklist (its length in `dev.counter`).
    fn build_list(
        &self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        set_zero(stream, &mut dev.counter)?;
        // SAFETY: arguments match `build_list` in kernels/grid_pr.cu; flags and list have
        // ntiles entries.
        unsafe {
            stream
                .launch_builder(&k.build_list)
                .arg(&dev.ntiles)
                .arg(&mut dev.flags)
                .arg(&mut dev.list)
                .arg(&mut dev.counter)
                .launch(node_cfg(dev.ntiles))
        }
        .map(|_| ())
        .map_err(|e| driver_err("cuLaunchKernel (build_list)", e))
    }

    /// Sweep-mode push-relabel over all nodes, until no node is active or `budget` launches.
    #[allow(clippy::too_many_arguments)]
    fn discharge_sweep(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        budget: u32,
        cfg: LaunchConfig,
        batches: &mut Batches,
    ) -> Result<()> {
        let mut done = 0;
        while done < budget {
            // Whole batches may be replayed; a shorter last one (the budget's remainder) is
            // launched directly, so both launch modes run the same rounds.
            let len = CHECK_EVERY.min(budget - done);
            if len == CHECK_EVERY {
                batches.submit(stream, Batch::Sweep, || {
                    self.record_sweep(stream, k, shape, dev, len, cfg)
                })?;
            } else {
                self.record_sweep(stream, k, shape, dev, len, cfg)?;
            }
            self.stats.rounds += len as u64;
            done += len;
            if read_counter(stream, &dev.counter)? == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Puts `rounds` sweep launches on the stream (or into the graph being captured); the last
    /// one counts the active nodes.
    fn record_sweep(
        &self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        rounds: u32,
        cfg: LaunchConfig,
    ) -> Result<()> {
        for r in 1..=rounds {
            let count = r == rounds;
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
        }
        Ok(())
    }

    /// Tiled global relabel; returns the number of passes.
    fn relabel_tiles(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        batches: &mut Batches,
    ) -> Result<u32> {
        // SAFETY: arguments match `bfs_seed_nDEG` in kernels/grid_pr.cu; sink_r and label have
        // n entries, flags one per tile.
        unsafe {
            stream
                .launch_builder(&k.bfs_seed)
                .arg(&shape)
                .arg(&dev.sink_r)
                .arg(&mut dev.label)
                .arg(&mut dev.flags)
                .launch(node_cfg(shape.n))
        }
        .map_err(|e| driver_err("cuLaunchKernel (bfs_seed)", e))?;
        let per = self.check_every.max(1);
        let mut passes = 0u32;
        loop {
            batches.submit(stream, Batch::Bfs, || {
                self.record_bfs(stream, k, shape, dev, per)
            })?;
            passes = passes.saturating_add(per);
            // An empty list means the pass before it changed nothing: the fixed point.
            if read_counter(stream, &dev.counter)? == 0 {
                return Ok(passes);
            }
            if passes as usize > 4 * shape.n as usize + 16 {
                return Err(Error::Graph(
                    "cuda-grid: the global relabel did not converge".into(),
                ));
            }
        }
    }

    /// Puts `passes` tiled BFS passes on the stream (or into the graph being captured).
    fn record_bfs(
        &self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        passes: u32,
    ) -> Result<()> {
        let tiles_cfg = tiles_cfg(dev.bfs_blocks);
        for _ in 0..passes {
            self.build_list(stream, k, dev)?;
            // SAFETY: arguments match `bfs_tile_nDEG` in kernels/grid_pr.cu; rcap has deg·n
            // entries, label n, list and flags one per tile.
            unsafe {
                stream
                    .launch_builder(&k.bfs_tile)
                    .arg(&shape)
                    .arg(&dev.rcap)
                    .arg(&mut dev.label)
                    .arg(&dev.list)
                    .arg(&dev.counter)
                    .arg(&mut dev.flags)
                    .launch(tiles_cfg)
            }
            .map_err(|e| driver_err("cuLaunchKernel (bfs_tile)", e))?;
        }
        Ok(())
    }

    /// Level-synchronous global relabel; returns the number of BFS levels launched.
    fn relabel_levels(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &Kernels,
        shape: GridArgs,
        dev: &mut DeviceGraph,
        cfg: LaunchConfig,
    ) -> Result<u32> {
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
            }
            // Levels beyond the last reached one label nothing, so a batch that reached no node
            // means the search is over.
            if read_counter(stream, &dev.counter)? == 0 || level > shape.n {
                return Ok(level);
            }
        }
    }
}

/// `blocks` blocks for a tile kernel; each takes listed tiles in turn until the list ends.
fn tiles_cfg(blocks: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The kinds of batch [`Batches`] keeps a graph for.
#[derive(Clone, Copy, Debug)]
enum Batch {
    /// `check_every` × {counter memset, `build_list`, `discharge`}.
    Discharge,
    /// `check_every` × {counter memset, `build_list`, `bfs_tile`}.
    Bfs,
    /// `CHECK_EVERY` × `pr_round`, the last after a counter memset.
    Sweep,
}

/// Set once capture has failed in this process: later solves launch directly at once.
static GRAPHS_FAILED: AtomicBool = AtomicBool::new(false);

/// The batches of one [`CudaGrid::run`] call as CUDA graphs, each captured on first use.
///
/// A batch's launch sequence does not depend on anything read back (kernels read the worklist's
/// length on the device), so one capture serves every replay. The graphs hold that call's device
/// pointers and launch parameters: they must not outlive the call.
struct Batches {
    /// Whether batches go through graphs (false: direct launches, chosen or after a failure).
    graphs_on: bool,
    graphs: [Option<CudaGraph>; 3],
    /// Graph launches so far.
    replays: u64,
}

impl Batches {
    fn new(launch: Launch) -> Self {
        Batches {
            graphs_on: launch == Launch::Graph && !GRAPHS_FAILED.load(Ordering::Relaxed),
            graphs: Default::default(),
            replays: 0,
        }
    }

    /// Runs one batch: replays its graph, capturing `record`'s launches into it first if need
    /// be; or, with graphs off, lets `record` launch them directly.
    fn submit(
        &mut self,
        stream: &Arc<CudaStream>,
        batch: Batch,
        mut record: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let slot = &mut self.graphs[batch as usize];
        if self.graphs_on && slot.is_none() {
            match capture(stream, &mut record) {
                Ok(graph) => *slot = Some(graph),
                Err(e) => {
                    // A driver without (this use of) graphs costs speed, not the solve.
                    if !GRAPHS_FAILED.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "segcut: note: cuda-grid cannot use CUDA graphs ({e}); launching \
                             kernels one by one"
                        );
                    }
                    self.graphs_on = false;
                }
            }
        }
        match slot {
            Some(graph) if self.graphs_on => {
                self.replays += 1;
                graph
                    .launch()
                    .map_err(|e| driver_err(&format!("cuGraphLaunch ({batch:?} batch)"), e))
            }
            _ => record(),
        }
    }
}

/// Captures what `record` puts on `stream` into an instantiated, uploaded graph.
///
/// Thread-local capture mode: other threads' solves (tests run several at once) may allocate
/// and synchronise meanwhile. Nothing recorded here allocates or records events (cudarc's event
/// tracking is off, see `runtime.rs`).
fn capture(stream: &Arc<CudaStream>, record: &mut impl FnMut() -> Result<()>) -> Result<CudaGraph> {
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(|e| driver_err("cuStreamBeginCapture", e))?;
    let recorded = record();
    // End the capture whatever happened, so that the stream leaves capture mode; cudarc first
    // reports any error stored earlier in the context, hence the second try when still capturing.
    let flags = CUgraphInstantiate_flags(0);
    let mut ended = stream.end_capture(flags);
    if ended.is_err()
        && stream
            .capture_status()
            .is_ok_and(|s| s != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    {
        ended = stream.end_capture(flags);
    }
    recorded?;
    let graph = ended
        .map_err(|e| driver_err("cuStreamEndCapture / cuGraphInstantiate", e))?
        .ok_or_else(|| Error::Graph("cuda-grid: an empty CUDA graph was captured".into()))?;
    graph.upload().map_err(|e| driver_err("cuGraphUpload", e))?;
    Ok(graph)
}

fn node_cfg(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(BLOCK).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn load_kernels(gpu: &runtime::Gpu, conn: Connectivity) -> Result<Kernels> {
    let module = gpu.module("grid_pr")?;
    let deg = conn.degree();
    let load = |name: String| {
        module
            .load_function(&name)
            .map_err(|e| driver_err(&format!("cuModuleGetFunction ({name})"), e))
    };
    Ok(Kernels {
        pr_round: load("pr_round".into())?,
        bfs_init: load("bfs_init".into())?,
        bfs_level: load("bfs_level".into())?,
        init_terminals: load("init_terminals".into())?,
        build_list: load("build_list".into())?,
        bfs_seed: load(format!("bfs_seed_n{deg}"))?,
        bfs_tile: load(format!("bfs_tile_n{deg}"))?,
        mark_active: load(format!("mark_active_n{deg}"))?,
        discharge: load(format!("discharge_n{deg}"))?,
        sink_side: load("sink_side".into())?,
    })
}

/// An error when the grid does not fit in the GPU's free memory.
fn check_memory(gpu: &runtime::Gpu, n: usize, conn: Connectivity) -> Result<()> {
    let needed = (n as u64) * grid_bytes_per_node(conn) as u64 + 64;
    let (free, _total) = gpu
        .ctx
        .mem_get_info()
        .map_err(|e| driver_err("cuMemGetInfo", e))?;
    if needed > free as u64 {
        return Err(Error::Unsupported(format!(
            "cuda-grid needs {needed} bytes of GPU memory for {n} nodes ({} bytes per {conn} \
             node) but {} has {free} free",
            grid_bytes_per_node(conn),
            gpu.name
        )));
    }
    Ok(())
}

/// The grid's shape for the kernels, or an error when it does not fit their 32-bit indices.
fn check_shape(dims: [usize; 3], conn: Connectivity) -> Result<GridArgs> {
    let [w, h, d] = dims;
    let n = w * h * d;
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
        deg: conn.degree() as u32,
        is3d: conn.is_3d() as u32,
    })
}

/// Saturates every source arc: returns the flow sent straight on through each node's own sink
/// arc, and the excesses and sink residuals left (what `init_terminals` does on the device).
#[cfg(test)]
fn saturate_terminals(g: &GridGraph) -> Result<(Flow, Vec<i64>, Vec<i32>)> {
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

fn set_zero(stream: &Arc<CudaStream>, c: &mut CudaSlice<u32>) -> Result<()> {
    stream
        .memset_zeros(c)
        .map_err(|e| driver_err("cuMemsetD8Async", e))
}

fn read_counter(stream: &Arc<CudaStream>, c: &CudaSlice<u32>) -> Result<u32> {
    let v = stream
        .clone_dtoh(c)
        .map_err(|e| driver_err("cuMemcpyDtoH (counter)", e))?;
    stream
        .synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize", e))?;
    Ok(v[0])
}

/// Test grids: each node gets a source arc, and independently a sink arc, with probability
/// `1 / odds`, of a random capacity below `max`.
#[cfg(test)]
fn random_terminals(g: &mut GridGraph, rng: &mut crate::rng::Rng, odds: u64, max: u64) {
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

/// A sequential emulation of the sweep kernels (`pr_round`, `bfs_init`, `bfs_level`) and of the
/// host loop around them, for machines without a GPU: every launch runs its threads' operations
/// in a random interleaving, optionally reading neighbour labels as they were when the launch
/// began (the stalest a GPU thread could see). It checks the algorithm, not the CUDA code: keep
/// it in step with the kernels.
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
}

#[cfg(test)]
mod tune_tests {
    use super::*;

    #[test]
    fn tune_sets_known_keys_and_ignores_the_rest() {
        let mut s = CudaGrid {
            discharge: Discharge::Auto,
            relabel: Relabel::Tiles,
            ops_per_launch: 4,
            tile_sweeps: 2,
            relabel_min_rounds: 8,
            relabel_ratio: 1.0,
            launch: Launch::Graph,
            check_every: 4,
            tile_blocks: TileBlocks::Fit,
            stats: GridStats::default(),
        };
        s.tune("discharge=sweep,relabel=levels,sweeps=7,min_rounds=3,ratio=0.5,ops=9");
        assert_eq!(s.discharge, Discharge::Sweep);
        assert_eq!(s.relabel, Relabel::Levels);
        assert_eq!(
            (s.tile_sweeps, s.relabel_min_rounds, s.ops_per_launch),
            (7, 3, 9)
        );
        assert_eq!(s.relabel_ratio, 0.5);
        // Unknown keys and values leave everything as it was.
        s.tune("discharge=fast,sweeps=x,colour=blue,,ratio");
        assert_eq!((s.discharge, s.tile_sweeps), (Discharge::Sweep, 7));
        s.tune("discharge=tiles");
        assert_eq!(s.discharge, Discharge::Tiles);
        s.tune("launch=direct,check=16");
        assert_eq!((s.launch, s.check_every), (Launch::Direct, 16));
        // A batch of no rounds would never read the worklist back: refused like a bad value.
        s.tune("launch=graphs,check=0,check=-2,launch=graph");
        assert_eq!((s.launch, s.check_every), (Launch::Graph, 16));
        s.tune("blocks=tiles,blocks=all,blocks=0");
        assert_eq!(s.tile_blocks, TileBlocks::PerTile);
        s.tune("blocks=3");
        assert_eq!(s.tile_blocks, TileBlocks::Fixed(3));
        s.tune("blocks=fit");
        assert_eq!(s.tile_blocks, TileBlocks::Fit);
    }
}

/// A sequential emulation of the tiled kernels (`bfs_seed`, `bfs_tile`, `mark_active`,
/// `discharge`) and of the host loop around them, for machines without a GPU: tiles of a launch
/// run one after another in a random order, reading halo labels as they were when the launch
/// began (as stale as a GPU block could see them). It checks the algorithm, not the CUDA code:
/// keep it in step with the kernels.
#[cfg(test)]
mod tiled_emulation {
    use super::*;
    use crate::maxflow::{bk::Bk, verify, verify_flows};
    use crate::rng::Rng;

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

        /// Tile-wise global relabel; returns the number of passes.
        fn relabel(&mut self, rng: &mut Rng) -> u32 {
            for v in 0..self.label.len() {
                self.label[v] = if self.sink_r[v] > 0 { 1 } else { self.inf };
                if self.sink_r[v] > 0 {
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
                    let mut lab: Vec<(usize, u32)> =
                        nodes.iter().map(|&v| (v, snapshot[v])).collect();
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
        let mut rounds = 0;
        loop {
            let passes = emu.relabel(rng);
            if !emu.mark_active() {
                break;
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

    /// Phase one, and with `flows` phase two as `CudaGrid::phase_two` runs it: the source
    /// capacities become the target's residuals and the same rounds return the excess.
    fn emulate_phases(
        g: &GridGraph,
        rng: &mut Rng,
        sweeps: usize,
        flows: bool,
    ) -> (Cut, Option<Flows>) {
        let (base, excess, sink_r) = saturate_terminals(g).unwrap();
        let tile = tile_shape(g.connectivity());
        let [w, h, d] = g.dims();
        let ntiles = [
            w.div_ceil(tile[0]),
            h.div_ceil(tile[1]),
            d.div_ceil(tile[2]),
        ];
        let n = g.num_nodes();
        let mut emu = Emu {
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
}
