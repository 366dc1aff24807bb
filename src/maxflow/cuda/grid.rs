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
use crate::cuda::{self, grid_bytes_per_node, Call, DeviceGrid, Gpu, GridShape};
use crate::graph::{Connectivity, Flow, GridGraph};
use crate::maxflow::solver::timed;
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
        Connectivity::N4 => [32, 32, 1],
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
#[derive(Clone, Debug, Default)]
pub struct CudaGrid {
    /// Launch and batch sizes (defaults measured on an H100).
    pub tuning: GridTuning,
    /// Statistics of the last solve (also in [`SolveStats::gpu`](crate::maxflow::SolveStats)).
    pub stats: GridStats,
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
    /// Tile passes launched by the global relabels, over all of them.
    pub bfs_levels: u64,
    /// Milliseconds in global relabels (host clock, including the read-backs).
    pub relabel_ms: f64,
    /// Milliseconds in discharge rounds (host clock, including the read-backs).
    pub discharge_ms: f64,
    /// Milliseconds from the end of the last relabel to the cut on the host (the download).
    pub finish_ms: f64,
    /// Device bytes allocated for the graph.
    pub device_bytes: u64,
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
}

impl CudaGrid {
    /// A solver with the given tuning.
    pub fn new(tuning: GridTuning) -> Self {
        CudaGrid {
            tuning,
            stats: GridStats::default(),
        }
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
            let dg = upload(g)?;
            // Copies from pageable memory return before they finish: wait, so that the upload
            // is counted as build time and not as the solve's.
            cuda::sync(&dg.stream)?;
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
    GridShape::new(g.dims(), g.connectivity())?;
    let gpu = cuda::gpu()?;
    gpu.bind()?;
    check_memory(gpu, g.num_nodes(), g.connectivity())?;
    let stream = gpu.ctx.new_stream().call("cuStreamCreate")?;
    let n = g.num_nodes();
    let deg = g.connectivity().degree();
    let mut caps = cuda::zeros::<i32>(&stream, deg * n, "capacities")?;
    for d in 0..deg {
        let mut dst = caps.slice_mut(d * n..(d + 1) * n);
        stream
            .memcpy_htod(g.caps(d), &mut dst)
            .call("cuMemcpyHtoD (capacities)")?;
    }
    let dg = DeviceGrid {
        dims: g.dims(),
        conn: g.connectivity(),
        caps,
        source: cuda::upload(&stream, g.source_caps(), "source capacities")?,
        sink: cuda::upload(&stream, g.sink_caps(), "sink capacities")?,
        stream: stream.clone(),
    };
    // The host arrays are borrowed: finish the copies before the solve proper.
    stream.synchronize().call("cuStreamSynchronize (upload)")?;
    Ok(dg)
}

/// An error when the grid does not fit in the GPU's free memory.
fn check_memory(gpu: &Gpu, n: usize, conn: Connectivity) -> Result<()> {
    let needed = (n as u64) * grid_bytes_per_node(conn) as u64 + 64;
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

/// What phase one leaves for phase two: the preflow on the device and the source capacities.
struct PhaseOne {
    cut: Cut,
    setup: Duration,
    stream: Arc<CudaStream>,
    k: GridPr,
    shape: GridShape,
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
        let shape = GridShape::new(g.dims, g.conn)?;
        check_lengths(&g)?;
        let gpu = cuda::gpu()?;
        gpu.bind()?;
        let k = GridPr::load(gpu, g.conn)?;
        self.stats = GridStats {
            device_bytes: (shape.num_nodes() * grid_bytes_per_node(g.conn)) as u64,
            ..GridStats::default()
        };
        let stream = g.stream.clone();
        let (mut dev, source) = self.allocate(gpu, &k, g)?;
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
        let source = keep_source.then_some(source);
        let setup = t0.elapsed();

        self.run(&stream, &k, shape, &mut dev)?;

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
    /// the residuals and the sink capacities the sink residuals, in place. Returns the state and
    /// the source capacities.
    fn allocate(
        &self,
        gpu: &Gpu,
        k: &GridPr,
        g: DeviceGrid,
    ) -> Result<(DeviceGraph, CudaSlice<i32>)> {
        let n = g.num_nodes();
        let [tx, ty, tz] = tile_shape(g.conn);
        let [w, h, d] = g.dims;
        let ntiles = (w.div_ceil(tx) * h.div_ceil(ty) * d.div_ceil(tz)) as u32;
        let stream = &g.stream;
        let dev = DeviceGraph {
            excess: cuda::zeros(stream, n, "excess")?,
            label: cuda::zeros(stream, n, "labels")?,
            flow: cuda::zeros(stream, 1, "flow")?,
            counter: cuda::zeros(stream, 1, "counter")?,
            flags: cuda::zeros(stream, ntiles as usize, "tile flags")?,
            list: cuda::zeros(stream, ntiles as usize, "tile list")?,
            ntiles,
            discharge_blocks: self.tile_blocks(k.discharge_resident_blocks(gpu)?, ntiles),
            bfs_blocks: self.tile_blocks(k.bfs_tile_resident_blocks(gpu)?, ntiles),
            rcap: g.caps,
            sink_r: g.sink,
        };
        Ok((dev, g.source))
    }

    /// The canonical cut and the flow value after phase one: a byte per node comes back (the
    /// `sink_side` kernel), a quarter of the labels' traffic.
    fn download_cut(
        &self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &DeviceGraph,
    ) -> Result<Cut> {
        let n = shape.num_nodes();
        let mut side = cuda::zeros::<u8>(stream, n, "cut")?;
        // SAFETY: label and side have n entries.
        unsafe { k.sink_side(stream, shape, &dev.label, &mut side)? };
        let mut side = stream.clone_dtoh(&side).call("cuMemcpyDtoH (cut)")?;
        side.truncate(n);
        let pushed = stream.clone_dtoh(&dev.flow).call("cuMemcpyDtoH (flow)")?;
        cuda::sync(stream)?;
        // At most n·(2^31 - 1) < 2^63 was pushed: the sum fits.
        Ok(Cut {
            flow: pushed[0] as Flow,
            sink_side: side.into_iter().map(|b| b != 0).collect(),
        })
    }

    /// Blocks per launch of a tile kernel that fits `resident` blocks on the GPU at once (see
    /// [`TileBlocks`]): at least one, at most one per tile.
    fn tile_blocks(&self, resident: u32, ntiles: u32) -> u32 {
        let wanted = match self.tuning.tile_blocks {
            TileBlocks::Fit => resident,
            TileBlocks::Fixed(b) => b,
        };
        wanted.clamp(1, ntiles.max(1))
    }
}

impl CudaGrid {
    /// Phase two: the source becomes the target. Its "sink residual" for node `v` is the flow
    /// on `s → v`, all of `source[v]` after the saturating start, and the same push-relabel
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
        cuda::clear(&stream, &mut p.dev.flow)?;
        self.run(&stream, &p.k, p.shape, &mut p.dev)?;
        let down = |what: &str| format!("cuMemcpyDtoH ({what})");
        let rcap = stream.clone_dtoh(&p.dev.rcap).call(&down("residuals"))?;
        let source_flow = stream
            .clone_dtoh(&p.dev.sink_r)
            .call(&down("source flows"))?;
        let sink_r = stream.clone_dtoh(&sink_r).call(&down("sink residuals"))?;
        let excess = stream.clone_dtoh(&p.dev.excess).call(&down("excess"))?;
        cuda::sync(&stream)?;
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

    /// Global relabels and discharge rounds until no node with excess reaches the target (the
    /// sink in phase one, the source in phase two): the loop of steps 2-4.
    fn run(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<()> {
        // Far beyond what push-relabel with global relabels needs; a guard against a hang.
        let max_rounds = 1_000_000u64.max(64 * shape.n as u64);
        loop {
            let t = Instant::now();
            let passes = self.relabel(stream, k, shape, dev)?;
            self.stats.global_relabels += 1;
            self.stats.bfs_levels += passes as u64;
            let active = self.mark_active(stream, k, shape, dev)?;
            self.stats.relabel_ms += t.elapsed().as_secs_f64() * 1e3;
            if !active {
                return Ok(());
            }
            let t = Instant::now();
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

    /// Step 2, the tiled global relabel: seeds, then passes over the listed tiles until a pass
    /// lists none. Returns the number of passes.
    fn relabel(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<u32> {
        // SAFETY: sink_r and label have n entries, flags one per tile.
        unsafe { k.bfs_seed(stream, shape, &dev.sink_r, &mut dev.label, &mut dev.flags)? };
        let per = self.tuning.check_every.max(1);
        let mut passes = 0u32;
        loop {
            for _ in 0..per {
                self.build_list(stream, k, dev)?;
                // SAFETY: rcap has deg·n entries, label n, list and flags one per tile; the
                // list holds `counter` tile numbers.
                unsafe {
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
                };
            }
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

    /// Step 3: flags the tiles holding an active node (excess, finite label); whether any is.
    fn mark_active(
        &mut self,
        stream: &Arc<CudaStream>,
        k: &GridPr,
        shape: GridShape,
        dev: &mut DeviceGraph,
    ) -> Result<bool> {
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
        Ok(cuda::read_words::<1>(stream, &dev.counter, "counter")?[0] != 0)
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
        let sweeps = self.tuning.tile_sweeps.clamp(1, i32::MAX as u32) as i32;
        let mut done = 0;
        while done < budget {
            for _ in 0..per {
                self.build_list(stream, k, dev)?;
                // SAFETY: rcap has deg·n entries, the node arrays n, list and flags one per
                // tile; blocks past the list's length (read on the device) return at once.
                unsafe {
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
                };
            }
            self.stats.rounds += per as u64;
            done += per;
            let listed = cuda::read_words::<1>(stream, &dev.counter, "counter")?[0];
            self.stats.tiles_discharged += listed as u64 * per as u64;
            if listed == 0 {
                break;
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
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{Dynamic, SolverKind};
/// let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
/// g.set_arc(0, 1, 2).unwrap();
/// g.set_terminals(0, 5, 0);
/// g.set_terminals(1, 0, 5);
/// let mut gpu = Dynamic::new(SolverKind::CudaGrid, true).unwrap();
/// assert_eq!(gpu.solve(&g).unwrap().cut.flow, 2); // an error without a GPU
/// let s = gpu.update_terminals(&mut g, &[(0, 1, 0)]).unwrap(); // the preflow stays on the GPU
/// assert_eq!(s.cut.flow, 1);
/// assert!(gpu.last_was_warm());
/// ```
#[derive(Default)]
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
    /// Forgets the device state.
    pub fn reset(&mut self) {
        self.kept = None;
    }

    /// Solves `g` from scratch and keeps the preflow on the device.
    pub(crate) fn solve(&mut self, g: &GridGraph) -> Result<Solved> {
        self.kept = None;
        let t0 = Instant::now();
        let dg = upload(g)?;
        let upload_time = t0.elapsed();
        let mut s = self.solve_device(dg)?;
        s.stats.build += upload_time;
        Ok(s)
    }

    /// Solves a grid already on the GPU from scratch (as [`CudaGrid::solve_device`]) and keeps
    /// the preflow and a copy of the terminal capacities on the device.
    pub fn solve_device(&mut self, g: DeviceGrid) -> Result<Solved> {
        self.kept = None;
        timed(|| {
            let t0 = Instant::now();
            let sink = g
                .stream
                .clone_dtod(&g.sink)
                .call("cuMemcpyDtoD (sink copy)")?;
            let (dims, conn) = (g.dims, g.conn);
            let copy = t0.elapsed();
            let one = self.solver.phase_one(g, true)?;
            let mut s = Solved::new(one.cut, SolverKind::CudaGrid);
            s.stats.build = copy + one.setup;
            s.stats.gpu = Some(GpuStats::Grid(self.solver.stats.clone()));
            let source = one.source.expect("phase one keeps the source when asked");
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
            let mut overflow = cuda::zeros::<u32>(&stream, 1, "overflow flag")?;
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
            let flag = stream
                .clone_dtoh(&overflow)
                .call("cuMemcpyDtoH (overflow flag)")?;
            cuda::sync(&stream)?;
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
            solver.run(&stream, &kept.k, kept.shape, dev)?;
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
}

impl ResidentGrid {
    /// Allocates a `dims` grid of connectivity `conn` on `stream` (the current GPU's), after a
    /// check against the GPU's free memory, with `solver`'s launch sizes.
    pub(crate) fn new(
        solver: &CudaGrid,
        dims: [usize; 3],
        conn: Connectivity,
        stream: &Arc<CudaStream>,
    ) -> Result<Self> {
        let shape = GridShape::new(dims, conn)?;
        let gpu = cuda::gpu()?;
        gpu.bind()?;
        let n = shape.num_nodes();
        check_memory(gpu, n, conn)?;
        let k = GridPr::load(gpu, conn)?;
        let g = DeviceGrid {
            dims,
            conn,
            caps: cuda::zeros(stream, conn.degree() * n, "capacities")?,
            source: cuda::zeros(stream, n, "source capacities")?,
            sink: cuda::zeros(stream, n, "sink capacities")?,
            stream: stream.clone(),
        };
        let (dev, source) = solver.allocate(gpu, &k, g)?;
        Ok(ResidentGrid {
            stream: stream.clone(),
            k,
            shape,
            conn,
            dev,
            source,
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
        solver.run(stream, &self.k, self.shape, dev)
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
