//! `cuda-grid`: exact push-relabel max-flow on a [`GridGraph`], on the GPU. The kernels are in
//! `kernels/grid_pr.cu`, launched through their typed launchers (`src/cuda/launch/grid_pr.rs`);
//! this module drives them.
//!
//! The algorithm, driven from the host (docs/gpu.md has the correctness argument):
//! 1. *Start* (`init_terminals`): every source arc is saturated, and the part of it that can
//!    leave through the node's own sink arc, `min(source, sink)`, is counted as flow at once.
//! 2. *Global relabel* ([`CudaGrid::relabel`]): exact distances to the sink over residual arcs,
//!    `INF = n + 1` for nodes with none. Each listed tile iterates the distance equations to a
//!    fixed point in shared memory, and tiles whose border changed list their neighbours for the
//!    next pass, until a pass lists no tile.
//! 3. *Stop test*: if no node with excess reaches the sink, the preflow is maximum: stop. The
//!    canonical cut is read off this relabel.
//! 4. *Discharge*, for a number of rounds that follows the cost of the last relabel, then back to
//!    2: each round launches only the tiles on the worklist (tiles with active nodes or that
//!    received excess), each running push/relabel sweeps in shared memory
//!    ([`CudaGrid::discharge_tiles`]); 26-connected grids, whose 8 colour classes would leave
//!    most of a tile's block idle, are discharged by a node sweep instead, every node's thread
//!    doing a few Hong-style operations per launch ([`CudaGrid::discharge_nodes`]).
//!
//! Phase one (steps 1-4) finds the cut and the flow value. Phase two, which returns the
//! remaining excess to the source so that the preflow becomes a flow, runs only when flows are
//! asked for ([`Solver::run`] with `flows`): the same loop with the source as the target.
//!
//! Exactness does not rest on the concurrent labels: the stop test of step 3 is the max-flow
//! condition itself, checked on a fresh global relabel.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};

use crate::cuda::launch::grid_pr::GridPr;
use crate::cuda::{self, grid_bytes_per_node, Call, Device, DeviceGrid, Gpu, GridShape, Session};
use crate::graph::{Connectivity, Flow, GridGraph};
use crate::maxflow::solved::timed;
use crate::maxflow::{Cut, Flows, GpuStats, GraphRef, Solved, Solver, SolverKind};
use crate::{Error, Result};

mod tuning;
pub use tuning::{GridTuning, TileBlocks};

#[cfg(test)]
mod emulation;
#[cfg(test)]
mod tiled_emulation;

/// Fewest node-sweep launches between two global relabels.
const MIN_SWEEP_ROUNDS: u32 = 16;
/// Node-sweep launches between two read-backs of the active counter.
const SWEEP_BATCH: u32 = 8;

/// The tile shape of the tiled kernels for a connectivity (`Tile<DEG>` in `kernels/grid_pr.cu`,
/// which must agree).
fn tile_shape(conn: Connectivity) -> [usize; 3] {
    match conn {
        Connectivity::N4 => [32, 16, 1],
        Connectivity::N8 => [32, 16, 1],
        Connectivity::N6 => [32, 4, 4],
        Connectivity::N26 => [16, 4, 4],
    }
}

/// Whether a grid is discharged by the node sweep rather than by tiles: 26-connected ones, where
/// a tile's 8 colour classes leave most of its block idle (H100, 128³ N26: 25 ms against 49 ms;
/// docs/benchmarks.md).
fn node_sweep(shape: &GridShape) -> bool {
    shape.deg == Connectivity::N26.degree() as u32
}

/// The GPU grid solver (`--solver cuda-grid`). Solves [`GridGraph`]s only; general graphs get
/// [`Error::Unsupported`].
///
/// It runs on the [`Device`] it was made for, in a [`Session`] of that device opened on the
/// first solve and kept: grids are uploaded on its stream.
///
/// ```no_run
/// use segcut::cuda::Device;
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{cuda::CudaGrid, verify, Solver};
/// let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(1, 0, 5);
/// g.set_arc(0, 1, 2).unwrap();
/// let cut = CudaGrid::on(Device::new(0)).solve_grid(&g).unwrap(); // an error without a GPU
/// assert_eq!(cut.flow, 2);
/// verify(&g, &cut).unwrap();
/// ```
#[derive(Debug)]
pub struct CudaGrid {
    /// Launch and batch sizes (defaults measured on an H100).
    pub tuning: GridTuning,
    /// Statistics of the last solve (also in [`SolveStats::gpu`](crate::maxflow::SolveStats)).
    pub stats: GridStats,
    device: Device,
    session: Option<Session>,
    replays: Replays,
}

/// A solver with the same device and tuning and no statistics; it opens its own session.
impl Clone for CudaGrid {
    fn clone(&self) -> Self {
        CudaGrid::new(self.device, self.tuning.clone())
    }
}

/// What the last [`CudaGrid`] solve did; with flows, the totals over both phases.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridStats {
    /// Discharge launches (rounds).
    pub rounds: u64,
    /// Tiles discharged, summed over the rounds whose worklist size was read back (the last of
    /// each batch), times the batch length: an estimate of the tiled work.
    pub tiles_discharged: u64,
    /// Global relabels.
    pub global_relabels: u64,
    /// Local relabels (the first of a warm start, see [`GridTuning::warm_local`]).
    pub local_relabels: u64,
    /// Tile passes launched by the global relabels, over all of them (for a queued relabel,
    /// see [`GridTuning::queue`], its deepest chain of queuings: the passes it stands for).
    pub bfs_levels: u64,
    /// Tiles processed by queued global relabels, over all of them.
    pub queue_visits: u64,
    /// Milliseconds in global relabels (host clock, including the read-backs).
    pub relabel_ms: f64,
    /// Milliseconds in discharge rounds (host clock, including the read-backs).
    pub discharge_ms: f64,
    /// Milliseconds from the end of the last relabel to the cut on the host (the download).
    pub finish_ms: f64,
    /// Device bytes allocated for the graph.
    pub device_bytes: u64,
    /// Tiled batches run as a replayed CUDA graph (see [`GridTuning::graphs`]).
    pub graph_replays: u64,
    /// The worklist's length (tiles with active nodes or new excess) read back after each
    /// discharge batch, in order: the solve's activity profile, whose long low tail is where
    /// rounds are spent on little work.
    pub active_tiles: Vec<u32>,
    /// Milliseconds of each discharge batch, launch to read-back, beside `active_tiles`.
    pub batch_ms: Vec<f32>,
    /// The active nodes (excess, a path to the sink) after each global relabel of the host
    /// loop, in order, the last one 0: how the excess left to move shrinks from relabel to
    /// relabel (the persistent solve does not record it).
    pub active_nodes: Vec<u32>,
    /// Launches of the tail finish (`push_paths`, see [`GridTuning::tail_active`]).
    pub tail_launches: u64,
    /// Milliseconds in the tail finish (host clock, including the read-backs).
    pub tail_ms: f64,
}

impl GridStats {
    /// One line about the solve's activity: rounds, global relabels, graph replays, the low
    /// tail of the discharge (the batches whose worklist held at most 1 % of its peak length,
    /// how many they were and what share of the discharge time they took), and the active
    /// nodes after the relabels (the first, the largest, then the relabels that found at most
    /// 1 % of that largest count).
    ///
    /// ```
    /// use segcut::maxflow::cuda::GridStats;
    /// let s = GridStats {
    ///     rounds: 16,
    ///     active_tiles: vec![1000, 400, 5, 2],
    ///     batch_ms: vec![1.0, 1.0, 1.0, 1.0],
    ///     ..GridStats::default()
    /// };
    /// assert!(s.profile().contains("tail 2 of 4 batches, 50% of discharge time"));
    /// let s = GridStats { active_nodes: vec![5000, 9000, 80, 3, 0], ..GridStats::default() };
    /// assert!(s.profile().contains("active nodes 5000 first, 9000 at most, 2 of 4 relabels at <= 1%"));
    /// ```
    pub fn profile(&self) -> String {
        let peak = self.active_tiles.iter().copied().max().unwrap_or(0);
        let low = |t: u32| (t as u64) * 100 <= peak as u64;
        let (mut tail, mut tail_ms, mut all_ms) = (0usize, 0f64, 0f64);
        for (&t, &ms) in self.active_tiles.iter().zip(&self.batch_ms) {
            all_ms += ms as f64;
            if low(t) {
                tail += 1;
                tail_ms += ms as f64;
            }
        }
        format!(
            "{} rounds, {} relabels ({} local, {} passes, {} queued tiles, {:.1} ms), discharge {:.1} ms, {} graph replays, \
             peak {} tiles, tail {} of {} batches, {:.0}% of discharge time, \
             {} path launches ({:.1} ms)",
            self.rounds,
            self.global_relabels + self.local_relabels,
            self.local_relabels,
            self.bfs_levels,
            self.queue_visits,
            self.relabel_ms,
            self.discharge_ms,
            self.graph_replays,
            peak,
            tail,
            self.active_tiles.len(),
            100.0 * tail_ms / all_ms.max(1e-12),
            self.tail_launches,
            self.tail_ms
        ) + &self.active_profile()
    }

    /// The active-node part of [`GridStats::profile`] (empty when none was recorded).
    fn active_profile(&self) -> String {
        // The last relabel, which found none, ends the solve: not part of the profile.
        let counts = match self.active_nodes.split_last() {
            Some((0, rest)) => rest,
            _ => &self.active_nodes[..],
        };
        let Some(&first) = counts.first() else {
            return String::new();
        };
        let most = counts.iter().copied().max().unwrap_or(0);
        let low = counts
            .iter()
            .filter(|&&c| (c as u64) * 100 <= most as u64)
            .count();
        format!(
            ", active nodes {first} first, {most} at most, {low} of {} relabels at <= 1%",
            counts.len()
        )
    }
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
    /// Blocks per launch of the tile kernels (see [`TileBlocks`]).
    discharge_blocks: u32,
    bfs_blocks: u32,
    /// Blocks per launch of the warp-per-tile relabel pass (eight tiles at a time each).
    wbfs_blocks: u32,
    /// The residual arcs packed as bits for the warp-per-tile relabel (`res_bits`); one unused
    /// word where that relabel does not run.
    bits: CudaSlice<u32>,
    /// Whether global relabels run the warp-per-tile pass (2D grids, [`GridTuning::warp_bfs`]).
    warp_bfs: bool,
    /// The persistent solve's control words (`CTL_WORDS` in `kernels/grid_pr.cu`), also the
    /// queued relabel's (`QCTL_*`; the two never run at once).
    ctl: CudaSlice<u32>,
    /// The queued relabel's depth per tile (the ring is `list`).
    depth: CudaSlice<u32>,
    /// Blocks of the persistent solve's cooperative launch; 0 where the device has none.
    coop_blocks: u32,
}

/// Entries of [`DeviceGraph::ctl`] (`CTL_*` in `kernels/grid_pr.cu`).
const CTL_WORDS: usize = 16;
const CTL_STATUS: usize = 5;
const CTL_ROUNDS: usize = 6;
const CTL_RELABELS: usize = 7;
const CTL_PASSES: usize = 8;
/// Entries of [`DeviceGraph::ctl`] written by the queued relabel (`QCTL_*`).
const QCTL_VISITS: usize = 13;
const QCTL_DEPTH: usize = 14;

impl CudaGrid {
    /// A solver on `device` with the default tuning.
    pub fn on(device: Device) -> Self {
        CudaGrid::new(device, GridTuning::default())
    }

    /// A solver on `device` with the given tuning.
    pub fn new(device: Device, tuning: GridTuning) -> Self {
        CudaGrid {
            tuning,
            stats: GridStats::default(),
            device,
            session: None,
            replays: Replays::default(),
        }
    }

    /// The device it runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The solver's session, opened on first use.
    fn session(&mut self) -> Result<&mut Session> {
        match &mut self.session {
            Some(s) => {
                s.bind()?;
                Ok(s)
            }
            none => Ok(none.insert(self.device.session()?)),
        }
    }

    /// The solver's session on `other`'s stream (a sibling of it, replacing a session on another
    /// stream): a caller that writes its grids on that stream (the segmentation's GPU build)
    /// gets its solves' buffers kept from one solve, and image, to the next.
    pub(crate) fn session_on(&mut self, other: &Session) -> Result<&mut Session> {
        let same = self
            .session
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s.stream(), other.stream()));
        if !same {
            self.session = Some(other.sibling());
        }
        self.session()
    }

    /// Device buffers the solver's session has allocated so far ([`Session::allocations`]).
    pub(crate) fn allocations(&self) -> usize {
        self.session.as_ref().map_or(0, Session::allocations)
    }
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
            // Input errors come before any device error (a machine without a GPU included).
            g.validate()?;
            let dg = upload(self.session()?, g)?;
            // Copies from pageable memory return before they finish: wait, so that the upload
            // is counted as build time and not as the solve's.
            cuda::sync(&dg.stream)?;
            let upload_time = t0.elapsed();
            let solved = self.phase_one(dg)?;
            let mut s = Solved::new(solved.cut.clone(), SolverKind::CudaGrid);
            s.stats.build = upload_time + solved.setup;
            if flows {
                s.flows = Some(self.phase_two(g, solved)?);
            } else {
                self.recycle(solved.dev, Some(solved.source));
            }
            s.stats.gpu = Some(GpuStats::Grid(self.stats.clone()));
            Ok(s)
        })
    }
}

/// Uploads a grid's capacities (validated first) on the session's stream, into buffers the
/// session kept from the last solve of this size when it has them.
/// The caller has validated `g` (before opening the session, so that input errors come first).
fn upload(session: &mut Session, g: &GridGraph) -> Result<DeviceGrid> {
    let shape = GridShape::new(g.dims(), g.connectivity())?;
    let n = g.num_nodes();
    let deg = g.connectivity().degree();
    // Kept buffers of another size only hold memory the new grid may need.
    if session.kept_len("grid caps") != Some(deg * n) {
        session.release();
    }
    check_memory(session.gpu(), &shape, g.connectivity())?;
    let stream = session.stream().clone();
    let mut caps = session.take::<i32>("grid caps", deg * n)?;
    for d in 0..deg {
        let mut dst = caps.slice_mut(d * n..(d + 1) * n);
        stream
            .memcpy_htod(g.caps(d), &mut dst)
            .call("cuMemcpyHtoD (capacities)")?;
    }
    let mut source = session.take::<i32>("grid source", n)?;
    let mut sink = session.take::<i32>("grid sink", n)?;
    let up = "cuMemcpyHtoD (terminal capacities)";
    stream.memcpy_htod(g.source_caps(), &mut source).call(up)?;
    stream.memcpy_htod(g.sink_caps(), &mut sink).call(up)?;
    let dg = DeviceGrid {
        dims: g.dims(),
        conn: g.connectivity(),
        caps,
        source,
        sink,
        stream: stream.clone(),
    };
    // The host arrays are borrowed: finish the copies before the solve proper.
    cuda::sync(&stream)?;
    Ok(dg)
}

/// Words of the packed residual bits of a 2D grid's warp-per-tile relabel (`res_bits` in
/// `kernels/grid_pr.cu`: `deg · h · ceil(w / 32)`), or `None` where that relabel does not apply:
/// 3D grids, and grids so wide and tall that its thread count would pass `u32`.
fn res_bits_words(shape: &GridShape) -> Option<usize> {
    if shape.is3d != 0 {
        return None;
    }
    let words_per_row = shape.w.div_ceil(32) as u64;
    let threads = shape.h as u64 * words_per_row * 32;
    (threads <= u32::MAX as u64)
        .then(|| (shape.deg as u64 * shape.h as u64 * words_per_row) as usize)
}

/// An error when the grid does not fit in the GPU's free memory.
fn check_memory(gpu: &Gpu, shape: &GridShape, conn: Connectivity) -> Result<()> {
    let n = shape.num_nodes();
    let bits = 4 * res_bits_words(shape).unwrap_or(1) as u64;
    // The tile arrays: flags, list (also the queued relabel's ring) and depth, a word each.
    let [tx, ty, tz] = tile_shape(conn);
    let ntiles = (shape.w as u64).div_ceil(tx as u64)
        * (shape.h as u64).div_ceil(ty as u64)
        * (shape.d as u64).div_ceil(tz as u64);
    let needed = (n as u64) * grid_bytes_per_node(conn) as u64 + bits + 12 * ntiles + 64;
    let free = gpu.free_memory()?;
    if needed > free {
        return Err(Error::Unsupported(format!(
            "cuda-grid needs {needed} bytes of GPU memory for {n} nodes ({} bytes per {conn} \
             node) but {} has {free} free",
            grid_bytes_per_node(conn),
            gpu.name
        )));
    }
    Ok(())
}

/// An error unless a device grid's arrays have the lengths its shape says: the kernels index
/// them by node and direction without bounds checks.
/// How many blocks of each tile kernel fit on the GPU at once.
#[derive(Clone, Copy, Debug)]
struct Resident {
    discharge: u32,
    bfs: u32,
    wbfs: u32,
    /// The persistent solve; 0 where the device has no cooperative launches.
    coop: u32,
}

fn resident_blocks(k: &GridPr, gpu: &Gpu) -> Result<Resident> {
    let coop = if gpu.cooperative {
        k.coop_resident_blocks(gpu)?
    } else {
        0
    };
    Ok(Resident {
        discharge: k.discharge_resident_blocks(gpu)?,
        bfs: k.bfs_tile_resident_blocks(gpu)?,
        wbfs: k.bfs_wtile_resident_blocks(gpu)?,
        coop,
    })
}

fn check_lengths(g: &DeviceGrid) -> Result<()> {
    let n = g.num_nodes();
    let want = [g.conn.degree() * n, n, n];
    let have = [g.caps.len(), g.source.len(), g.sink.len()];
    if have != want {
        return Err(Error::Graph(format!(
            "device grid {:?} {}: capacity, source and sink arrays have {have:?} entries, not \
             {want:?}",
            g.dims, g.conn
        )));
    }
    Ok(())
}

/// The two kinds of tiled batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Batch {
    /// Relabel passes, a block per tile (`bfs_tile`).
    Relabel,
    /// Relabel passes, a warp per tile (`bfs_wtile`, 2D global relabels).
    WarpRelabel,
    /// Discharge rounds (`discharge`).
    Discharge,
}

/// What a captured batch depends on: the stream, every buffer's device address, the shape, the
/// launch sizes and the tuning. A graph is replayed only for the same key (buffers kept by the
/// session make it recur across solves of one size).
#[derive(Clone, Debug, PartialEq, Eq)]
struct BatchKey {
    which: Batch,
    stream: usize,
    buffers: [u64; 9],
    shape: GridShape,
    launch: [u32; 6],
}

impl BatchKey {
    fn new(
        which: Batch,
        stream: &Arc<CudaStream>,
        shape: GridShape,
        dev: &DeviceGraph,
        t: &GridTuning,
    ) -> Self {
        use cudarc::driver::DevicePtr;
        // The addresses only; with event tracking off the guards record nothing.
        let at = |p: (u64, _)| p.0;
        BatchKey {
            which,
            stream: stream.cu_stream() as usize,
            buffers: [
                at(dev.rcap.device_ptr(stream)),
                at(dev.sink_r.device_ptr(stream)),
                at(dev.excess.device_ptr(stream)),
                at(dev.label.device_ptr(stream)),
                at(dev.flow.device_ptr(stream)),
                at(dev.counter.device_ptr(stream)),
                at(dev.flags.device_ptr(stream)),
                at(dev.list.device_ptr(stream)),
                at(dev.bits.device_ptr(stream)),
            ],
            shape,
            launch: [
                dev.ntiles,
                dev.discharge_blocks,
                dev.bfs_blocks,
                dev.wbfs_blocks,
                t.check_every,
                t.tile_sweeps,
            ],
        }
    }
}

/// A captured, instantiated batch.
struct Replay(cudarc::driver::CudaGraph);

// SAFETY: a CUDA graph must not be used from two threads at once; a `Replay` is owned by one
// solver and only used through `&mut CudaGrid`, so uses are serialised.
unsafe impl Send for Replay {}

/// The batches a solver has captured (see [`GridTuning::graphs`]).
#[derive(Default)]
struct Replays {
    relabel: Option<(BatchKey, Replay)>,
    warp_relabel: Option<(BatchKey, Replay)>,
    discharge: Option<(BatchKey, Replay)>,
    /// Capture failed once on this solver: launch directly from then on.
    failed: bool,
}

impl std::fmt::Debug for Replays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replays")
            .field("relabel", &self.relabel.is_some())
            .field("warp_relabel", &self.warp_relabel.is_some())
            .field("discharge", &self.discharge.is_some())
            .field("failed", &self.failed)
            .finish()
    }
}

/// Where a solve's buffers come from: the solver's session when the solve runs on its stream
/// (buffers kept from the last solve of the same size), else new ones on the solve's stream.
struct Pool<'a> {
    session: Option<&'a mut Session>,
    stream: &'a Arc<CudaStream>,
}

impl<'a> Pool<'a> {
    /// The pool of a solve on `stream`: `session` when that is its stream.
    fn new(session: &'a mut Option<Session>, stream: &'a Arc<CudaStream>) -> Self {
        Pool {
            session: session.as_mut().filter(|s| Arc::ptr_eq(s.stream(), stream)),
            stream,
        }
    }

    /// A zeroed buffer of `len` entries for `what`.
    fn zeros<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + 'static>(
        &mut self,
        what: &'static str,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        match self.session.as_deref_mut() {
            Some(s) => {
                let mut b = s.take::<T>(what, len)?;
                cuda::clear(self.stream, &mut b)?;
                Ok(b)
            }
            None => cuda::zeros(self.stream, len, what),
        }
    }
}

/// What phase one leaves for phase two: the preflow on the device and the source capacities.
struct PhaseOne {
    cut: Cut,
    setup: Duration,
    stream: Arc<CudaStream>,
    k: GridPr,
    shape: GridShape,
    dev: DeviceGraph,
    source: CudaSlice<i32>,
}

impl CudaGrid {
    /// Solves a grid whose capacities are already on the GPU (see [`DeviceGrid`]); nothing goes
    /// back to the host but the cut. The module load and allocation count as build time.
    pub fn solve_device(&mut self, g: DeviceGrid) -> Result<Solved> {
        timed(|| {
            let solved = self.phase_one(g)?;
            let mut s = Solved::new(solved.cut.clone(), SolverKind::CudaGrid);
            s.stats.build = solved.setup;
            s.stats.gpu = Some(GpuStats::Grid(self.stats.clone()));
            self.recycle(solved.dev, Some(solved.source));
            Ok(s)
        })
    }

    /// Phase one of push-relabel: a maximum preflow and the canonical cut. The source
    /// capacities stay on the device for phase two (and a warm start).
    fn phase_one(&mut self, g: DeviceGrid) -> Result<PhaseOne> {
        let t0 = Instant::now();
        let shape = GridShape::new(g.dims, g.conn)?;
        check_lengths(&g)?;
        let gpu = self.device.gpu()?;
        if g.stream.context().ordinal() != self.device.ordinal() {
            return Err(Error::Unsupported(format!(
                "the grid is on cuda:{} but this cuda-grid solver runs on {}",
                g.stream.context().ordinal(),
                self.device
            )));
        }
        let k = GridPr::load(gpu, g.conn)?;
        self.stats = GridStats {
            device_bytes: (shape.num_nodes() * grid_bytes_per_node(g.conn)) as u64,
            ..GridStats::default()
        };
        let stream = g.stream.clone();
        let blocks = resident_blocks(&k, gpu)?;
        let (mut dev, source) = self.allocate(blocks, g)?;
        // SAFETY: the source, excess and sink arrays have n entries (the sink array becomes the
        // sink residual in place), flow one.
        unsafe {
            k.init_terminals(
                &stream,
                shape,
                &source,
                &mut dev.excess,
                &mut dev.sink_r,
                &mut dev.flow,
            )?
        };
        let setup = t0.elapsed();

        self.run(&stream, &k, shape, &mut dev, false)?;

        let t_finish = Instant::now();
        let cut = self.download_cut(&stream, &k, shape, &dev)?;
        self.stats.finish_ms = t_finish.elapsed().as_secs_f64() * 1e3;
        Ok(PhaseOne {
            cut,
            setup,
            stream,
            k,
            shape,
            dev,
            source,
        })
    }

    /// The solver's state around the grid's arrays, which it takes over: the capacities become
    /// the residuals and the sink capacities the sink residuals, in place. `resident` is how
    /// many blocks of each tile kernel fit on the GPU at once. The
    /// buffers come from the solver's session when the grid is on its stream (kept from the
    /// last solve of this size, zeroed), else new. Returns the state and the source capacities.
    fn allocate(
        &mut self,
        resident: Resident,
        g: DeviceGrid,
    ) -> Result<(DeviceGraph, CudaSlice<i32>)> {
        let n = g.num_nodes();
        let [tx, ty, tz] = tile_shape(g.conn);
        let [w, h, d] = g.dims;
        let ntiles = (w.div_ceil(tx) * h.div_ceil(ty) * d.div_ceil(tz)) as u32;
        let discharge_blocks = self.tile_blocks(resident.discharge, ntiles);
        let bfs_blocks = self.tile_blocks(resident.bfs, ntiles);
        // Eight tiles per block, a warp each.
        let wbfs_blocks = self.tile_blocks(resident.wbfs, ntiles.div_ceil(8));
        let bits_words = res_bits_words(&GridShape::new(g.dims, g.conn)?);
        let stream = &g.stream;
        let mut pool = Pool::new(&mut self.session, stream);
        let dev = DeviceGraph {
            excess: pool.zeros("grid excess", n)?,
            label: pool.zeros("grid labels", n)?,
            flow: pool.zeros("grid flow", 1)?,
            counter: pool.zeros("grid counter", 1)?,
            flags: pool.zeros("grid tile flags", ntiles as usize)?,
            list: pool.zeros("grid tile list", ntiles as usize)?,
            ctl: pool.zeros("grid control", CTL_WORDS)?,
            depth: pool.zeros("grid tile depth", ntiles as usize)?,
            ntiles,
            discharge_blocks,
            bfs_blocks,
            wbfs_blocks,
            bits: pool.zeros("grid residual bits", bits_words.unwrap_or(1))?,
            warp_bfs: self.tuning.warp_bfs && bits_words.is_some(),
            // 0: the device has no cooperative launches.
            coop_blocks: coop_blocks(self.device, resident.coop, ntiles),
            rcap: g.caps,
            sink_r: g.sink,
        };
        Ok((dev, g.source))
    }

    /// Hands a finished solve's buffers back to the session for the next solve of this size
    /// (buffers on another stream are simply freed).
    fn recycle(&mut self, dev: DeviceGraph, source: Option<CudaSlice<i32>>) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        if !Arc::ptr_eq(s.stream(), dev.rcap.stream()) {
            return;
        }
        s.keep("grid caps", dev.rcap);
        s.keep("grid sink", dev.sink_r);
        s.keep("grid excess", dev.excess);
        s.keep("grid labels", dev.label);
        s.keep("grid flow", dev.flow);
        s.keep("grid counter", dev.counter);
        s.keep("grid tile flags", dev.flags);
        s.keep("grid tile list", dev.list);
        s.keep("grid control", dev.ctl);
        s.keep("grid tile depth", dev.depth);
        s.keep("grid residual bits", dev.bits);
        if let Some(src) = source {
            s.keep("grid source", src);
        }
    }

    /// The canonical cut and the flow value after phase one: a byte per node comes back (the
    /// `sink_side` kernel), a quarter of the labels' traffic, through the session's pinned
    /// staging buffer when the solve runs on its stream.
    fn download_cut(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &DeviceGraph,
    ) -> Result<Cut> {
        let n = shape.num_nodes();
        let mut pool = Pool::new(&mut self.session, stream);
        let mut side = pool.zeros::<u8>("grid cut", n)?;
        // SAFETY: label and side have n entries.
        unsafe { k.sink_side(stream, shape, &dev.label, &mut side)? };
        let pushed = cuda::download(stream, &dev.flow, "flow")?[0];
        let sink_side = match pool.session.as_deref_mut() {
            Some(session) => {
                let staging = session.staging(side.len())?;
                stream
                    .memcpy_dtoh(&side, staging)
                    .call("cuMemcpyDtoH (cut)")?;
                // With event tracking off the copy records no event for the staging buffer
                // to wait on: wait for the stream before reading it (without this the host
                // read the previous solve's cut).
                cuda::sync(stream)?;
                let bytes = staging.as_slice().call("cuMemcpyDtoH (cut)")?;
                let out = bytes[..n].iter().map(|&b| b != 0).collect();
                session.keep("grid cut", side);
                out
            }
            None => {
                let host = cuda::download(stream, &side, "cut")?;
                host[..n].iter().map(|&b| b != 0).collect()
            }
        };
        // At most n·(2^31 - 1) < 2^63 was pushed: the sum fits.
        Ok(Cut {
            flow: pushed as Flow,
            sink_side,
        })
    }

    /// Blocks per launch of a tile kernel that fits `resident` blocks on the GPU at once (see
    /// [`TileBlocks::blocks`]: every resident block, also on a shared device).
    fn tile_blocks(&self, resident: u32, ntiles: u32) -> u32 {
        self.tuning.tile_blocks.blocks(resident, ntiles)
    }
}

impl CudaGrid {
    /// Phase two: the source becomes the target. Its "sink residual" for node `v` is the flow
    /// on `s → v`, all of `source[v]` after the saturating start, and the same push-relabel
    /// returns every unit of excess along residual paths (each such unit came from the source
    /// along a path whose reverse is residual, so none is stranded). The arcs into the real
    /// sink are left alone: no augmenting path remains, so the flow value does not change.
    fn phase_two(&mut self, g: &GridGraph, p: PhaseOne) -> Result<Flows> {
        let PhaseOne {
            cut,
            stream,
            k,
            shape,
            mut dev,
            source,
            ..
        } = p;
        let sink_dev = std::mem::replace(&mut dev.sink_r, source);
        cuda::clear(&stream, &mut dev.flow)?;
        self.run(&stream, &k, shape, &mut dev, false)?;
        // Each a host wait (counted): the residual read-back is the kept-graph path's.
        let rcap = cuda::download(&stream, &dev.rcap, "residuals")?;
        let source_flow = cuda::download(&stream, &dev.sink_r, "source flows")?;
        let sink_r = cuda::download(&stream, &sink_dev, "sink residuals")?;
        let excess = cuda::download(&stream, &dev.excess, "excess")?;
        self.recycle(dev, Some(sink_dev));
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
            value: cut.flow,
            source: source_flow,
            sink: sink.collect(),
            arcs,
        })
    }

    /// Global relabels and discharge rounds until no node with excess reaches the target (the
    /// sink in phase one, the source in phase two): the loop of steps 2-4.
    /// `local_first`: the labels on the device are those of the last exact relabel of the same
    /// grid, and the first relabel may be local (see [`CudaGrid::relabel`]).
    fn run(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
        local_first: bool,
    ) -> Result<()> {
        // Far beyond what push-relabel with global relabels needs; a guard against a hang.
        let max_rounds = 1_000_000u64.max(64 * shape.n as u64);
        if !local_first && self.persistent(&shape, dev) {
            return self.run_persistent(stream, k, shape, dev, max_rounds);
        }
        // The labels of the next relabel are exact (a full relabel), or only valid (the local
        // one a warm start may begin with): only an exact one may end the solve.
        let mut exact = !local_first;
        loop {
            let t = Instant::now();
            let passes = if exact {
                self.stats.global_relabels += 1;
                self.relabel(stream, k, shape, dev, false)?
            } else {
                self.stats.local_relabels += 1;
                self.relabel(stream, k, shape, dev, true)?
            };
            self.stats.bfs_levels += passes as u64;
            let active = self.mark_active(stream, k, shape, dev)?;
            self.stats.relabel_ms += t.elapsed().as_secs_f64() * 1e3;
            if active == 0 && exact {
                return Ok(());
            }
            if active == 0 {
                exact = true;
                continue;
            }
            exact = true;
            let t = Instant::now();
            if self.tail(&shape, active) {
                // The finish moves excess by paths, not tiles: mark_active's tile flags must
                // not reach the next relabel's first pass.
                cuda::clear(stream, &mut dev.flags)?;
                self.push_paths(stream, k, shape, dev)?;
                self.stats.tail_ms += t.elapsed().as_secs_f64() * 1e3;
                if self.stats.global_relabels > max_rounds {
                    return Err(Error::Graph(format!(
                        "cuda-grid did not converge in {} relabels (please report this graph)",
                        self.stats.global_relabels
                    )));
                }
                continue;
            }
            let budget = (self.tuning.relabel_min_rounds.max(1) as f64)
                .max(self.tuning.relabel_ratio * passes as f64)
                .ceil() as u32;
            if node_sweep(&shape) {
                // The sweep does not use the tile flags mark_active set.
                cuda::clear(stream, &mut dev.flags)?;
                self.discharge_nodes(stream, k, shape, dev, budget.max(MIN_SWEEP_ROUNDS))?;
            } else {
                self.discharge_tiles(stream, k, shape, dev, budget)?;
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

    /// Whether the excess left after an exact global relabel that found `active` active nodes
    /// is moved by the tail finish ([`GridTuning::tail_active`]). Not for the node sweep of
    /// 26-connected grids, whose rounds are per node already.
    fn tail(&self, shape: &GridShape, active: u32) -> bool {
        !node_sweep(shape)
            && self.tuning.tail_active > 0.0
            && active as f64 <= self.tuning.tail_active * shape.num_nodes() as f64
    }

    /// The tail finish: up to [`GridTuning::tail_pushes`] `push_paths` launches, stopping
    /// early when one moves nothing (what is left waits for the next global relabel).
    fn push_paths(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        for _ in 0..self.tuning.tail_pushes.max(1) {
            cuda::clear(stream, &mut dev.counter)?;
            // SAFETY: rcap has deg·n entries, sink_r, excess and label n, flow and counter one;
            // the stream runs nothing else on them meanwhile.
            unsafe {
                k.push_paths(
                    stream,
                    shape,
                    &mut dev.rcap,
                    &mut dev.sink_r,
                    &mut dev.excess,
                    &dev.label,
                    &mut dev.flow,
                    &mut dev.counter,
                )?
            };
            self.stats.tail_launches += 1;
            if cuda::read_words::<1>(stream, &dev.counter, "counter")?[0] == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Whether this solve runs as one persistent launch (see
    /// [`GridTuning::persistent_max_nodes`]): a tiled grid within the size, on a device with
    /// cooperative launches.
    fn persistent(&self, shape: &GridShape, dev: &DeviceGraph) -> bool {
        dev.coop_blocks > 0
            && !node_sweep(shape)
            && shape.num_nodes() <= self.tuning.persistent_max_nodes
            // Its 2D relabel is the warp pass, which needs the packed bits.
            && (shape.is3d != 0 || res_bits_words(shape).is_some_and(|w| dev.bits.len() >= w))
    }

    /// Steps 2-4 as one cooperative launch (`solve_coop`): the same relabels, discharge rounds
    /// and stop test as the host loop, with grid barriers instead of read-backs; the counters
    /// come back once at the end. Its time is counted as discharge time.
    fn run_persistent(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
        max_rounds: u64,
    ) -> Result<()> {
        let t = Instant::now();
        cuda::clear(stream, &mut dev.ctl)?;
        let sweeps = self.tuning.tile_sweeps.clamp(1, i32::MAX as u32) as i32;
        // SAFETY: the graph's arrays as DeviceGraph sizes them (rcap deg·n, node arrays n,
        // flags and list ntiles, flow one, ctl CTL_WORDS, zeroed); coop_blocks is at most the
        // kernel's resident blocks on a device with cooperative launches (allocate).
        unsafe {
            k.solve_coop(
                stream,
                dev.coop_blocks,
                shape,
                &mut dev.rcap,
                &mut dev.sink_r,
                &mut dev.excess,
                &mut dev.label,
                &mut dev.flow,
                &mut dev.flags,
                &mut dev.list,
                dev.ntiles,
                &mut dev.bits,
                &mut dev.ctl,
                sweeps,
                self.tuning.relabel_min_rounds,
                self.tuning.relabel_ratio as f32,
                max_rounds.min(u32::MAX as u64 - 1) as u32,
            )?
        };
        let ctl = cuda::read_words::<CTL_WORDS>(stream, &dev.ctl, "grid control")?;
        self.stats.rounds += ctl[CTL_ROUNDS] as u64;
        self.stats.global_relabels += ctl[CTL_RELABELS] as u64;
        self.stats.bfs_levels += ctl[CTL_PASSES] as u64;
        self.stats.discharge_ms += t.elapsed().as_secs_f64() * 1e3;
        if ctl[CTL_STATUS] != 0 {
            return Err(Error::Graph(format!(
                "cuda-grid did not converge in {} rounds (please report this graph)",
                ctl[CTL_ROUNDS]
            )));
        }
        Ok(())
    }

    /// Step 2, the tiled global relabel: seeds, then passes over the listed tiles until a pass
    /// lists none. Returns the number of passes. `local`: the labels left by the last exact
    /// relabel stay and only nodes that gained a sink residual seed the passes (`bfs_reseed`):
    /// the region whose distances fell is relabelled, the rest is not visited; the labels are
    /// then valid but may be below the distances.
    fn relabel(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
        local: bool,
    ) -> Result<u32> {
        // SAFETY: sink_r and label have n entries, flags one per tile (all clear: the last
        // pass of a relabel lists and clears them, and no active tile was flagged since).
        unsafe {
            if local {
                k.bfs_reseed(stream, shape, &dev.sink_r, &mut dev.label, &mut dev.flags)?
            } else {
                k.bfs_seed(stream, shape, &dev.sink_r, &mut dev.label, &mut dev.flags)?
            }
        };
        // The warp pass seeds only from label-1 nodes and the halo, which holds for a global
        // relabel; a local one keeps labels from the last solve and takes the block pass.
        let which = if dev.warp_bfs && !local {
            // SAFETY: rcap has deg·n entries; bits was sized by res_bits_words for this
            // shape (warp_bfs is set only then).
            unsafe { k.res_bits(stream, shape, &dev.rcap, &mut dev.bits)? };
            if self.tuning.queue {
                return self.relabel_queued(stream, k, shape, dev);
            }
            Batch::WarpRelabel
        } else {
            Batch::Relabel
        };
        let per = self.tuning.check_every.max(1);
        let mut passes = 0u32;
        loop {
            self.batch(which, stream, k, shape, dev)?;
            passes = passes.saturating_add(per);
            // An empty list means the pass before it changed nothing: the fixed point.
            if cuda::read_words::<1>(stream, &dev.counter, "counter")?[0] == 0 {
                return Ok(passes);
            }
            if passes as usize > 4 * shape.num_nodes() + 16 {
                return Err(Error::Graph(
                    "cuda-grid: the global relabel did not converge".into(),
                ));
            }
        }
    }

    /// The queued form of a global relabel's passes ([`GridTuning::queue`]): the flagged
    /// tiles go into a ring (`list`), one launch works through it, queuing every tile whose
    /// halo falls, and the control words come back once. Returns the deepest chain of
    /// queuings, the passes this relabel stands for (the discharge budget follows it).
    fn relabel_queued(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<u32> {
        cuda::clear(stream, &mut dev.list)?;
        cuda::clear(stream, &mut dev.ctl)?;
        // SAFETY: flags, list (the ring, zeroed) and depth have ntiles entries, ctl CTL_WORDS
        // (16, zeroed); bits as res_bits just wrote it; the stream runs nothing else on these
        // buffers meanwhile.
        unsafe {
            k.queue_fill(
                stream,
                dev.ntiles,
                &dev.flags,
                &mut dev.list,
                &mut dev.ctl,
                &mut dev.depth,
            )?;
            k.bfs_wqueue(
                stream,
                dev.wbfs_blocks,
                shape,
                &dev.bits,
                &mut dev.label,
                &mut dev.flags,
                &mut dev.list,
                &mut dev.ctl,
                &mut dev.depth,
                dev.ntiles,
            )?;
        }
        let ctl = cuda::read_words::<CTL_WORDS>(stream, &dev.ctl, "grid control")?;
        self.stats.queue_visits += ctl[QCTL_VISITS] as u64;
        Ok(ctl[QCTL_DEPTH] + 1)
    }

    /// Step 3: flags the tiles holding an active node (excess, finite label); how many there
    /// are (also recorded in the activity profile).
    fn mark_active(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<u32> {
        cuda::clear(stream, &mut dev.counter)?;
        // SAFETY: excess and label have n entries, flags one per tile, counter one.
        unsafe {
            k.mark_active(
                stream,
                shape,
                &dev.excess,
                &dev.label,
                &mut dev.flags,
                &mut dev.counter,
            )?
        };
        let active = cuda::read_words::<1>(stream, &dev.counter, "counter")?[0];
        self.stats.active_nodes.push(active);
        Ok(active)
    }

    /// Step 4, tiled: batches of region discharge over the worklist, until it is empty or at
    /// least `budget` rounds have run.
    fn discharge_tiles(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
        budget: u32,
    ) -> Result<()> {
        let per = self.tuning.check_every.max(1);
        let mut done = 0;
        while done < budget {
            let t = Instant::now();
            self.batch(Batch::Discharge, stream, k, shape, dev)?;
            self.stats.rounds += per as u64;
            done += per;
            let listed = cuda::read_words::<1>(stream, &dev.counter, "counter")?[0];
            self.stats.tiles_discharged += listed as u64 * per as u64;
            self.stats.active_tiles.push(listed);
            self.stats
                .batch_ms
                .push((t.elapsed().as_secs_f64() * 1e3) as f32);
            if listed == 0 {
                break;
            }
        }
        Ok(())
    }

    /// One batch of `check_every` tiled launches (each a counter reset, the worklist build and
    /// the tile kernel): replayed as a CUDA graph when [`GridTuning::graphs`] is on (captured
    /// on first use for these buffers, shape and tuning, and kept), else launched one by one.
    /// The graph holds exactly the launches, so the result is the same either way.
    fn batch(
        &mut self,
        which: Batch,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        if !self.tuning.graphs || self.replays.failed {
            return self.batch_launches(which, stream, k, shape, dev);
        }
        let key = BatchKey::new(which, stream, shape, dev, &self.tuning);
        let slot = match which {
            Batch::Relabel => &self.replays.relabel,
            Batch::WarpRelabel => &self.replays.warp_relabel,
            Batch::Discharge => &self.replays.discharge,
        };
        if let Some((kept, graph)) = slot {
            if *kept == key {
                self.stats.graph_replays += 1;
                return graph.0.launch().call("cuGraphLaunch");
            }
        }
        let mode = cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        if stream.begin_capture(mode).is_err() {
            // No capture here (an old driver, a stream in another capture): launch directly.
            self.replays.failed = true;
            return self.batch_launches(which, stream, k, shape, dev);
        }
        let launched = self.batch_launches(which, stream, k, shape, dev);
        let flags = cudarc::driver::sys::CUgraphInstantiate_flags(0);
        let captured = stream.end_capture(flags);
        launched?;
        let graph = match captured {
            Ok(Some(g)) => Replay(g),
            _ => {
                self.replays.failed = true;
                return self.batch_launches(which, stream, k, shape, dev);
            }
        };
        graph.0.launch().call("cuGraphLaunch")?;
        self.stats.graph_replays += 1;
        let slot = match which {
            Batch::Relabel => &mut self.replays.relabel,
            Batch::WarpRelabel => &mut self.replays.warp_relabel,
            Batch::Discharge => &mut self.replays.discharge,
        };
        *slot = Some((key, graph));
        Ok(())
    }

    /// The launches of one batch (see [`CudaGrid::batch`]).
    fn batch_launches(
        &self,
        which: Batch,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        let per = self.tuning.check_every.max(1);
        let sweeps = self.tuning.tile_sweeps.clamp(1, i32::MAX as u32) as i32;
        for _ in 0..per {
            self.build_list(stream, k, dev)?;
            match which {
                // SAFETY: rcap has deg·n entries, label n, list and flags one per tile; the
                // list holds `counter` tile numbers.
                Batch::Relabel => unsafe {
                    k.bfs_tile(
                        stream,
                        dev.bfs_blocks,
                        shape,
                        &dev.rcap,
                        &mut dev.label,
                        &dev.list,
                        &dev.counter,
                        &mut dev.flags,
                    )?
                },
                // SAFETY: bits as res_bits wrote them at the start of this global relabel (the
                // residuals do not change during it), label n entries, list and flags one per
                // tile; the list holds `counter` tile numbers.
                Batch::WarpRelabel => unsafe {
                    k.bfs_wtile(
                        stream,
                        dev.wbfs_blocks,
                        shape,
                        &dev.bits,
                        &mut dev.label,
                        &dev.list,
                        &dev.counter,
                        &mut dev.flags,
                    )?
                },
                // SAFETY: rcap has deg·n entries, the node arrays n, list and flags one per
                // tile; blocks past the list's length (read on the device) return at once.
                Batch::Discharge => unsafe {
                    k.discharge(
                        stream,
                        dev.discharge_blocks,
                        shape,
                        &mut dev.rcap,
                        &mut dev.sink_r,
                        &mut dev.excess,
                        &mut dev.label,
                        &mut dev.flow,
                        &dev.list,
                        &dev.counter,
                        &mut dev.flags,
                        sweeps,
                    )?
                },
            }
        }
        Ok(())
    }

    /// Turns the tile flags into the worklist (its length in `dev.counter`).
    fn build_list(
        &self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        cuda::clear(stream, &mut dev.counter)?;
        // SAFETY: flags and list have ntiles entries, the counter one.
        unsafe {
            k.build_list(
                stream,
                dev.ntiles,
                &mut dev.flags,
                &mut dev.list,
                &mut dev.counter,
            )
        }
    }

    /// Step 4, node sweep (26-connected grids): batches of [`SWEEP_BATCH`] launches over all
    /// nodes, the last of each counting the active nodes, until none is or `budget` launches
    /// have run.
    fn discharge_nodes(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
        budget: u32,
    ) -> Result<()> {
        let ops = self.tuning.node_ops.clamp(1, i32::MAX as u32) as i32;
        let mut done = 0;
        while done < budget {
            let len = SWEEP_BATCH.min(budget - done);
            for r in 1..=len {
                let count = r == len;
                if count {
                    cuda::clear(stream, &mut dev.counter)?;
                }
                // SAFETY: rcap has deg·n entries, the other arrays n, flow and counter one.
                unsafe {
                    k.pr_round(
                        stream,
                        shape,
                        &mut dev.rcap,
                        &mut dev.sink_r,
                        &mut dev.excess,
                        &mut dev.label,
                        &mut dev.flow,
                        &mut dev.counter,
                        count as i32,
                        ops,
                    )?
                };
            }
            self.stats.rounds += len as u64;
            done += len;
            if cuda::read_words::<1>(stream, &dev.counter, "counter")?[0] == 0 {
                break;
            }
        }
        Ok(())
    }
}

/// What a warm-starting [`WarmGrid`] keeps on the device between solves: the preflow (residual
/// n-links, sink residuals, excesses, the flow counter), the kernels, and the terminal
/// capacities the preflow belongs to.
struct Kept {
    stream: Arc<CudaStream>,
    k: GridPr,
    shape: GridShape,
    dev: DeviceGraph,
    source: CudaSlice<i32>,
    sink: CudaSlice<i32>,
    dims: [usize; 3],
    conn: Connectivity,
}

/// `cuda-grid` with warm starts (dynamic graph cuts): the preflow stays on the GPU between solves
/// of a grid whose terminal capacities change, the `update_terminals` kernel applies the changes
/// (the excess follows the saturated source arc, the sink residual the sink arc; where either
/// would turn negative, the same constant is added to both terminal capacities, which leaves the
/// minimum cut where it is), and push-relabel continues from a fresh global relabel. The stop test
/// is the max-flow condition itself, so the answer is the canonical cut of the new graph, as from
/// scratch. Used through [`Dynamic`](crate::maxflow::Dynamic) and by the segmentation rounds.
///
/// ```no_run
/// use segcut::cuda::Device;
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{Dynamic, SolverKind};
/// let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
/// g.set_arc(0, 1, 2).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(1, 0, 5);
/// let mut gpu = Dynamic::new(SolverKind::CudaGrid, true, Device::new(0)).unwrap();
/// assert_eq!(gpu.solve(&g).unwrap().cut.flow, 2); // an error without a GPU
/// let s = gpu.update_terminals(&mut g, &[(0, 1, 0)]).unwrap(); // the preflow stays on the GPU
/// assert_eq!(s.cut.flow, 1);
/// assert!(gpu.last_was_warm());
/// ```
pub struct WarmGrid {
    solver: CudaGrid,
    kept: Option<Kept>,
}

impl std::fmt::Debug for WarmGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmGrid")
            .field("kept", &self.kept.is_some())
            .finish()
    }
}

impl WarmGrid {
    /// A warm-starting solver on `device`.
    pub fn on(device: Device) -> Self {
        WarmGrid::new(device, GridTuning::default())
    }

    /// A warm-starting solver on `device` with the given tuning.
    pub fn new(device: Device, tuning: GridTuning) -> Self {
        WarmGrid {
            solver: CudaGrid::new(device, tuning),
            kept: None,
        }
    }

    /// Solves `g` from scratch and keeps the preflow on the device for
    /// [`resolve_grid`](WarmGrid::resolve_grid).
    pub fn solve_grid(&mut self, g: &GridGraph) -> Result<Solved> {
        self.solve(g)
    }

    /// Solves `g`, equal to the last solved grid but for its terminal capacities, from the
    /// kept preflow; `Ok(None)` when nothing usable is kept (solve from scratch then).
    pub fn resolve_grid(&mut self, g: &GridGraph) -> Result<Option<Solved>> {
        self.resolve(g)
    }

    /// Forgets the device state (its buffers go back to the solver's session, for the next
    /// solve of this size).
    pub fn reset(&mut self) {
        if let Some(k) = self.kept.take() {
            self.solver.recycle(k.dev, Some(k.source));
            if let Some(s) = self.solver.session.as_mut() {
                if Arc::ptr_eq(s.stream(), k.sink.stream()) {
                    s.keep("warm sink", k.sink);
                }
            }
        }
    }

    /// See [`CudaGrid::session_on`].
    pub(crate) fn session_on(&mut self, other: &Session) -> Result<&mut Session> {
        self.solver.session_on(other)
    }

    /// See [`CudaGrid::allocations`].
    pub(crate) fn allocations(&self) -> usize {
        self.solver.allocations()
    }

    /// Solves `g` from scratch and keeps the preflow on the device.
    pub(crate) fn solve(&mut self, g: &GridGraph) -> Result<Solved> {
        self.kept = None;
        let t0 = Instant::now();
        g.validate()?;
        let dg = upload(self.solver.session()?, g)?;
        let upload_time = t0.elapsed();
        let mut s = self.solve_device(dg)?;
        s.stats.build += upload_time;
        Ok(s)
    }

    /// Solves a grid already on the GPU from scratch (as [`CudaGrid::solve_device`]) and keeps
    /// the preflow and a copy of the terminal capacities on the device.
    pub fn solve_device(&mut self, g: DeviceGrid) -> Result<Solved> {
        self.reset();
        timed(|| {
            let t0 = Instant::now();
            let n = g.num_nodes();
            let mut pool = Pool::new(&mut self.solver.session, &g.stream);
            let mut sink = pool.zeros::<i32>("warm sink", n)?;
            g.stream
                .memcpy_dtod(&g.sink, &mut sink)
                .call("cuMemcpyDtoD (sink copy)")?;
            let (dims, conn) = (g.dims, g.conn);
            let copy = t0.elapsed();
            let one = self.solver.phase_one(g)?;
            let mut s = Solved::new(one.cut, SolverKind::CudaGrid);
            s.stats.build = copy + one.setup;
            s.stats.gpu = Some(GpuStats::Grid(self.solver.stats.clone()));
            let source = one.source;
            self.kept = Some(Kept {
                stream: one.stream,
                k: one.k,
                shape: one.shape,
                dev: one.dev,
                source,
                sink,
                dims,
                conn,
            });
            Ok(s)
        })
    }

    /// Solves `g`, equal to the last solved grid but for its terminal capacities, from the kept
    /// preflow. `Ok(None)` when nothing usable is kept (no solve yet, another shape) or a sink
    /// residual would overflow: the caller then solves from scratch.
    pub(crate) fn resolve(&mut self, g: &GridGraph) -> Result<Option<Solved>> {
        let Some(kept) = self.kept.as_ref() else {
            return Ok(None);
        };
        if (kept.dims, kept.conn) != (g.dims(), g.connectivity()) {
            return Ok(None);
        }
        if g.source_caps().iter().chain(g.sink_caps()).any(|&c| c < 0) {
            self.kept = None;
            return Err(g
                .validate()
                .err()
                .unwrap_or_else(|| Error::Graph("negative terminal capacity".into())));
        }
        let t0 = Instant::now();
        let stream = kept.stream.clone();
        let source = cuda::upload(&stream, g.source_caps(), "source capacities")?;
        let sink = cuda::upload(&stream, g.sink_caps(), "sink capacities")?;
        let upload_time = t0.elapsed();
        let solved = self.resolve_device(g.dims(), g.connectivity(), &source, &sink)?;
        Ok(solved.map(|mut s| {
            s.stats.build += upload_time;
            s
        }))
    }

    /// A warm solve (as [`Dynamic::resolve`](crate::maxflow::Dynamic::resolve)) with the new
    /// terminal capacities already on the device (written on the stream of the first solve,
    /// non-negative: the kernel does not check). `Ok(None)` when nothing usable is kept or a
    /// sink residual would overflow: solve from scratch with
    /// [`solve_device`](WarmGrid::solve_device) then.
    pub fn resolve_device(
        &mut self,
        dims: [usize; 3],
        conn: Connectivity,
        source: &CudaSlice<i32>,
        sink: &CudaSlice<i32>,
    ) -> Result<Option<Solved>> {
        let Some(kept) = self.kept.as_mut() else {
            return Ok(None);
        };
        let n = kept.shape.num_nodes();
        if (kept.dims, kept.conn) != (dims, conn) || source.len() != n || sink.len() != n {
            return Ok(None);
        }
        let solver = &mut self.solver;
        let result = timed(|| {
            let t0 = Instant::now();
            let stream = kept.stream.clone();
            let mut overflow =
                Pool::new(&mut solver.session, &stream).zeros::<u32>("overflow flag", 1)?;
            let dev = &mut kept.dev;
            // SAFETY: source, sink, the kept copies, excess and sink_r have n entries (checked
            // above against the kept shape), flow and overflow one.
            unsafe {
                kept.k.update_terminals(
                    &stream,
                    kept.shape,
                    source,
                    sink,
                    &kept.source,
                    &kept.sink,
                    &mut dev.excess,
                    &mut dev.sink_r,
                    &mut dev.flow,
                    &mut overflow,
                )?
            };
            let flag = cuda::download(&stream, &overflow, "overflow flag")?;
            if let Some(s) = solver.session.as_mut() {
                if Arc::ptr_eq(s.stream(), &stream) {
                    s.keep("overflow flag", overflow);
                }
            }
            if flag[0] != 0 {
                return Err(Error::Overflow("sink residual past i32".into()));
            }
            // The new capacities are what the kept preflow belongs to from now on.
            stream
                .memcpy_dtod(source, &mut kept.source)
                .call("cuMemcpyDtoD (source copy)")?;
            stream
                .memcpy_dtod(sink, &mut kept.sink)
                .call("cuMemcpyDtoD (sink copy)")?;
            let setup = t0.elapsed();
            solver.stats = GridStats {
                device_bytes: (n * grid_bytes_per_node(kept.conn)) as u64,
                ..GridStats::default()
            };
            let local = solver.tuning.warm_local;
            solver.run(&stream, &kept.k, kept.shape, dev, local)?;
            let t_finish = Instant::now();
            let cut = solver.download_cut(&stream, &kept.k, kept.shape, dev)?;
            solver.stats.finish_ms = t_finish.elapsed().as_secs_f64() * 1e3;
            let mut s = Solved::new(cut, SolverKind::CudaGrid);
            s.stats.build = setup;
            s.stats.gpu = Some(GpuStats::Grid(solver.stats.clone()));
            Ok(s)
        });
        match result {
            Ok(s) => Ok(Some(s)),
            Err(Error::Overflow(_)) => {
                self.kept = None;
                Ok(None)
            }
            Err(e) => {
                // The device state may be half updated.
                self.kept = None;
                Err(e)
            }
        }
    }
}

/// A grid whose capacities a kernel rewrites on the device before every solve, and the solver's
/// state around it, allocated once: the entry for callers that keep everything on the GPU
/// (α-expansion, `src/stereo/gpu.rs`). Nothing comes back to the host: after
/// [`solve`](ResidentGrid::solve) the solver's labels ([`side`](ResidentGrid::side): at most `n`
/// exactly on the canonical cut's sink side) and the flow value ([`flow`](ResidentGrid::flow))
/// stay on the device for the caller's kernels. The capacities must keep [`DeviceGrid`]'s
/// contract; the solve overwrites the arcs and the sink capacities with residuals.
pub(crate) struct ResidentGrid {
    stream: Arc<CudaStream>,
    k: GridPr,
    shape: GridShape,
    conn: Connectivity,
    dev: DeviceGraph,
    source: CudaSlice<i32>,
    /// Buffers of warm starts ([`ResidentGrid::solve_keeping`]), made on first use.
    scratch: Option<Scratch>,
}

/// What a warm start of a [`ResidentGrid`] needs beside the kept flow: the new capacities set
/// aside while the kept preflow is updated, and the overflow flag.
struct Scratch {
    caps: CudaSlice<i32>,
    sink: CudaSlice<i32>,
    overflow: CudaSlice<u32>,
}

/// A solved graph's capacities and the maximum preflow its solve ended with, kept on the device
/// by [`ResidentGrid::solve_keeping`] for a later solve of a graph of the same grid (one per
/// label in α-expansion: the move for α in the next pass starts from it).
pub(crate) struct KeptFlow {
    caps: CudaSlice<i32>,
    rcap: CudaSlice<i32>,
    sink_r: CudaSlice<i32>,
    excess: CudaSlice<i64>,
    flow: CudaSlice<u64>,
    source: CudaSlice<i32>,
    sink: CudaSlice<i32>,
}

impl ResidentGrid {
    /// Allocates a `dims` grid of connectivity `conn` on `stream` (on `solver`'s device), after
    /// a check against the GPU's free memory, with `solver`'s launch sizes.
    pub(crate) fn new(
        solver: &mut CudaGrid,
        dims: [usize; 3],
        conn: Connectivity,
        stream: &Arc<CudaStream>,
    ) -> Result<Self> {
        let shape = GridShape::new(dims, conn)?;
        let gpu = solver.device().gpu()?;
        gpu.bind()?;
        if stream.context().ordinal() != solver.device().ordinal() {
            return Err(Error::Unsupported(format!(
                "the stream is on cuda:{} but the solver runs on {}",
                stream.context().ordinal(),
                solver.device()
            )));
        }
        let n = shape.num_nodes();
        check_memory(gpu, &shape, conn)?;
        let k = GridPr::load(gpu, conn)?;
        let g = DeviceGrid {
            dims,
            conn,
            caps: cuda::zeros(stream, conn.degree() * n, "capacities")?,
            source: cuda::zeros(stream, n, "source capacities")?,
            sink: cuda::zeros(stream, n, "sink capacities")?,
            stream: stream.clone(),
        };
        let blocks = resident_blocks(&k, gpu)?;
        let (dev, source) = solver.allocate(blocks, g)?;
        Ok(ResidentGrid {
            stream: stream.clone(),
            k,
            shape,
            conn,
            dev,
            source,
            scratch: None,
        })
    }

    /// The arrays to write the next graph into: arc capacities (`deg·n`, direction-major),
    /// source and sink capacities (`n` each).
    pub(crate) fn capacities_mut(
        &mut self,
    ) -> (
        &mut CudaSlice<i32>,
        &mut CudaSlice<i32>,
        &mut CudaSlice<i32>,
    ) {
        (&mut self.dev.rcap, &mut self.source, &mut self.dev.sink_r)
    }

    /// Phase one on the graph written into [`capacities_mut`](ResidentGrid::capacities_mut),
    /// from scratch, with `solver`'s tuning (its stats are this solve's). Returns when the
    /// preflow is maximum (the stop test reads counters back); the cut stays on the device.
    pub(crate) fn solve(&mut self, solver: &mut CudaGrid) -> Result<()> {
        solver.stats = GridStats {
            device_bytes: (self.shape.num_nodes() * grid_bytes_per_node(self.conn)) as u64,
            ..GridStats::default()
        };
        let stream = &self.stream;
        let dev = &mut self.dev;
        cuda::clear(stream, &mut dev.flow)?;
        cuda::clear(stream, &mut dev.flags)?;
        // SAFETY: the source, excess and sink arrays have n entries, flow one.
        unsafe {
            self.k.init_terminals(
                stream,
                self.shape,
                &self.source,
                &mut dev.excess,
                &mut dev.sink_r,
                &mut dev.flow,
            )?
        };
        solver.run(stream, &self.k, self.shape, dev, false)
    }

    /// Device bytes one [`KeptFlow`] of this grid holds.
    pub(crate) fn kept_bytes(&self) -> u64 {
        let n = self.shape.num_nodes() as u64;
        let deg = self.conn.degree() as u64;
        // caps and residuals (deg·n i32 each), sink residual, source and sink (i32), excess (i64)
        (2 * deg + 5) * n * 4 + 8
    }

    /// A copy of `from` on this grid's stream (to start another label's move from it).
    pub(crate) fn copy_kept(&self, from: &KeptFlow) -> Result<KeptFlow> {
        let s = &self.stream;
        let dup_i32 = |a: &CudaSlice<i32>, what: &str| -> Result<CudaSlice<i32>> {
            let mut d = cuda::zeros::<i32>(s, a.len(), what)?;
            s.memcpy_dtod(a, &mut d).call("cuMemcpyDtoD (kept copy)")?;
            Ok(d)
        };
        let mut excess = cuda::zeros::<i64>(s, from.excess.len(), "kept excesses")?;
        s.memcpy_dtod(&from.excess, &mut excess)
            .call("cuMemcpyDtoD (kept copy)")?;
        let mut flow = cuda::zeros::<u64>(s, from.flow.len(), "kept flow")?;
        s.memcpy_dtod(&from.flow, &mut flow)
            .call("cuMemcpyDtoD (kept copy)")?;
        Ok(KeptFlow {
            caps: dup_i32(&from.caps, "kept capacities")?,
            rcap: dup_i32(&from.rcap, "kept residuals")?,
            sink_r: dup_i32(&from.sink_r, "kept sink residuals")?,
            excess,
            flow,
            source: dup_i32(&from.source, "kept source capacities")?,
            sink: dup_i32(&from.sink, "kept sink capacities")?,
        })
    }

    /// As [`solve`](ResidentGrid::solve), and the graph's capacities and the maximum preflow
    /// it ends with are kept in `slot`; when `slot` already holds those of an earlier graph of
    /// this grid, the solve starts from that preflow instead of from scratch (dynamic graph
    /// cuts, Kohli & Torr): `update_arcs` moves each arc's flow within its new capacities,
    /// `update_terminals` settles the terminals, and push-relabel goes on from a fresh global
    /// relabel. The cut is the canonical one and the flow the graph's either way; only the time
    /// differs. Falls back to a scratch solve where a sink residual would pass `i32::MAX`.
    /// Returns whether the solve was warm.
    pub(crate) fn solve_keeping(
        &mut self,
        solver: &mut CudaGrid,
        slot: &mut Option<KeptFlow>,
    ) -> Result<bool> {
        let n = self.shape.num_nodes();
        let deg = self.conn.degree();
        let s = self.stream.clone();
        let warm = match slot.as_mut() {
            Some(kept) => self.warm_start(kept)?,
            None => false,
        };
        if warm {
            solver.stats = GridStats {
                device_bytes: (n * grid_bytes_per_node(self.conn)) as u64,
                ..GridStats::default()
            };
            cuda::clear(&s, &mut self.dev.flags)?;
            solver.run(&s, &self.k, self.shape, &mut self.dev, false)?;
        } else {
            if slot.is_none() {
                *slot = Some(KeptFlow {
                    caps: cuda::zeros(&s, deg * n, "kept capacities")?,
                    rcap: cuda::zeros(&s, deg * n, "kept residuals")?,
                    sink_r: cuda::zeros(&s, n, "kept sink residuals")?,
                    excess: cuda::zeros(&s, n, "kept excesses")?,
                    flow: cuda::zeros(&s, 1, "kept flow")?,
                    source: cuda::zeros(&s, n, "kept source capacities")?,
                    sink: cuda::zeros(&s, n, "kept sink capacities")?,
                });
            }
            let Some(kept) = slot.as_mut() else {
                unreachable!("the slot was filled above")
            };
            // The capacities, before the solve turns them into residuals in place.
            s.memcpy_dtod(&self.dev.rcap, &mut kept.caps)
                .call("cuMemcpyDtoD (kept capacities)")?;
            s.memcpy_dtod(&self.source, &mut kept.source)
                .call("cuMemcpyDtoD (kept source)")?;
            s.memcpy_dtod(&self.dev.sink_r, &mut kept.sink)
                .call("cuMemcpyDtoD (kept sink)")?;
            self.solve(solver)?;
        }
        let Some(kept) = slot.as_mut() else {
            unreachable!("a kept flow exists after either branch")
        };
        s.memcpy_dtod(&self.dev.rcap, &mut kept.rcap)
            .call("cuMemcpyDtoD (kept residuals)")?;
        s.memcpy_dtod(&self.dev.sink_r, &mut kept.sink_r)
            .call("cuMemcpyDtoD (kept sink residuals)")?;
        s.memcpy_dtod(&self.dev.excess, &mut kept.excess)
            .call("cuMemcpyDtoD (kept excesses)")?;
        s.memcpy_dtod(&self.dev.flow, &mut kept.flow)
            .call("cuMemcpyDtoD (kept flow)")?;
        Ok(warm)
    }

    /// Turns the kept preflow into a preflow of the graph written into
    /// [`capacities_mut`](ResidentGrid::capacities_mut), in the solver's arrays, and makes the
    /// new capacities the kept ones. `false` (and the new graph left as written) where a sink
    /// residual would overflow.
    fn warm_start(&mut self, kept: &mut KeptFlow) -> Result<bool> {
        let n = self.shape.num_nodes();
        let deg = self.conn.degree();
        let s = self.stream.clone();
        if self.scratch.is_none() {
            self.scratch = Some(Scratch {
                caps: cuda::zeros(&s, deg * n, "new capacities")?,
                sink: cuda::zeros(&s, n, "new sink capacities")?,
                overflow: cuda::zeros(&s, 1, "overflow flag")?,
            });
        }
        let Some(new) = self.scratch.as_mut() else {
            unreachable!("the scratch buffers were made above")
        };
        let dev = &mut self.dev;
        // The new capacities aside; the kept preflow into the solver's arrays.
        s.memcpy_dtod(&dev.rcap, &mut new.caps)
            .call("cuMemcpyDtoD (new capacities)")?;
        s.memcpy_dtod(&dev.sink_r, &mut new.sink)
            .call("cuMemcpyDtoD (new sink)")?;
        s.memcpy_dtod(&kept.sink_r, &mut dev.sink_r)
            .call("cuMemcpyDtoD (sink residuals)")?;
        s.memcpy_dtod(&kept.excess, &mut dev.excess)
            .call("cuMemcpyDtoD (excesses)")?;
        s.memcpy_dtod(&kept.flow, &mut dev.flow)
            .call("cuMemcpyDtoD (flow)")?;
        cuda::clear(&s, &mut new.overflow)?;
        // SAFETY: old caps and residuals and rcap have deg·n entries, excess n; source, sink,
        // the kept terminal capacities, excess and sink_r n, flow and overflow one.
        unsafe {
            self.k.update_arcs(
                &s,
                self.shape,
                &kept.caps,
                &kept.rcap,
                &mut dev.rcap,
                &mut dev.excess,
            )?;
            self.k.update_terminals(
                &s,
                self.shape,
                &self.source,
                &new.sink,
                &kept.source,
                &kept.sink,
                &mut dev.excess,
                &mut dev.sink_r,
                &mut dev.flow,
                &mut new.overflow,
            )?;
        }
        if cuda::read_words::<1>(&s, &new.overflow, "overflow flag")?[0] != 0 {
            // Back to the graph as written; the caller solves it from scratch.
            s.memcpy_dtod(&new.caps, &mut dev.rcap)
                .call("cuMemcpyDtoD (capacities back)")?;
            s.memcpy_dtod(&new.sink, &mut dev.sink_r)
                .call("cuMemcpyDtoD (sink back)")?;
            return Ok(false);
        }
        // The new graph's capacities are the kept ones from now on.
        std::mem::swap(&mut kept.caps, &mut new.caps);
        std::mem::swap(&mut kept.sink, &mut new.sink);
        s.memcpy_dtod(&self.source, &mut kept.source)
            .call("cuMemcpyDtoD (kept source)")?;
        Ok(true)
    }

    /// The solver's labels after a solve: node `v` is on the sink side when `side[v] ≤ n`.
    pub(crate) fn side(&self) -> &CudaSlice<u32> {
        &self.dev.label
    }

    /// The flow value after a solve (one entry).
    pub(crate) fn flow(&self) -> &CudaSlice<u64> {
        &self.dev.flow
    }
}

/// Blocks of the persistent solve's cooperative launch on `device`, which holds `resident` of
/// them at once (0: no cooperative launches): the device handle's share of them (a cooperative
/// launch cannot start until every block it asks for is free, so the workers that share a GPU
/// ask for a part each), at most one per tile.
fn coop_blocks(device: Device, resident: u32, ntiles: u32) -> u32 {
    match resident {
        0 => 0,
        r => device.share_of(r).min(ntiles),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_cooperative_launch_is_cut_to_a_shared_devices_share() {
        let (alone, shared) = (Device::new(0), Device::new(0).shared_by(4));
        // 528 resident blocks, 2000 tiles: the tile kernels take every resident block either way.
        assert_eq!(TileBlocks::Fit.blocks(528, 2000), 528);
        assert_eq!(coop_blocks(alone, 528, 2000), 528);
        assert_eq!(coop_blocks(shared, 528, 2000), 132);
        // Never more blocks than tiles, never none where cooperative launches exist.
        assert_eq!(coop_blocks(shared, 528, 100), 100);
        assert_eq!(coop_blocks(Device::new(0).shared_by(1000), 528, 100), 1);
        assert_eq!(coop_blocks(shared, 0, 100), 0);
        assert_eq!(TileBlocks::Fit.blocks(528, 0), 1);
        assert_eq!(TileBlocks::Fixed(3).blocks(528, 2000), 3);
    }
}
