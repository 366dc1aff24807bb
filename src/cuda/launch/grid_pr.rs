//! The launchers of `kernels/grid_pr.cu` (driven by `src/maxflow/cuda/grid.rs`).
//!
//! Buffers, for a grid of `n` nodes and degree `deg` cut into `ntiles` tiles: `rcap` `deg·n`
//! residual capacities (direction-major), `sink_r`, `source`, `excess`, `label` `n` each, `flags`
//! and `list` `ntiles` each, `flow`, `count` and the other counters one each.

use cudarc::driver::CudaSlice;

use super::{blocks, cooperative, kernel_file, per_item, BLOCK};
use crate::cuda::runtime::Call;
use crate::cuda::{Gpu, GridShape};
use crate::graph::Connectivity;
use crate::Result;

kernel_file! {
    /// The kernels of `kernels/grid_pr.cu` for one connectivity (the tile kernels exist once per
    /// degree, as `NAME_nDEG`).
    pub(crate) struct GridPr for "grid_pr" {
        /// Saturates every source arc and sends at once what can leave through the node's own
        /// sink arc: `sink_r` holds the sink capacities on entry and their residuals after.
        ///
        /// # Safety
        /// `source`, `excess` and `sink_r` have `g.n` entries, `flow` one.
        fn init_terminals = "init_terminals"(
            g: GridShape,
            source: &CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            sink_r: &mut CudaSlice<i32>,
            flow: &mut CudaSlice<u64>,
        ) => per_item(g.n);

        /// Warm start: node `v`'s terminal capacities change from `old_source[v]`,
        /// `old_sink[v]` to `source[v]`, `sink[v]`; the excess and the sink residual follow
        /// (with the constant that keeps both non-negative; a negative excess left by
        /// [`GridPr::update_arcs`] is settled the same way) and `flow` moves by the change of
        /// the node's sink flow, in two's complement. Sets `overflow` where a sink residual would
        /// pass `i32::MAX`.
        ///
        /// # Safety
        /// `source`, `sink`, `old_source`, `old_sink`, `excess` and `sink_r` have `g.n`
        /// entries, `flow` and `overflow` one.
        fn update_terminals = "update_terminals"(
            g: GridShape,
            source: &CudaSlice<i32>,
            sink: &CudaSlice<i32>,
            old_source: &CudaSlice<i32>,
            old_sink: &CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            sink_r: &mut CudaSlice<i32>,
            flow: &mut CudaSlice<u64>,
            overflow: &mut CudaSlice<u32>,
        ) => per_item(g.n);

        /// Warm start with new arc capacities: `rcap` holds them on entry and the residuals on
        /// return; the net flow of each pair (from `old_caps` and `old_rcap`) stays where it
        /// fits, else it is clamped and the difference moves between the pair's excesses, which
        /// may turn negative (`update_terminals` settles them).
        ///
        /// # Safety
        /// `old_caps`, `old_rcap` and `rcap` have `deg·g.n` entries, `excess` `g.n`.
        fn update_arcs = "update_arcs"(
            g: GridShape,
            old_caps: &CudaSlice<i32>,
            old_rcap: &CudaSlice<i32>,
            rcap: &mut CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
        ) => per_item(g.n);

        /// Global relabel, start: distance 1 where the sink residual is positive, INF elsewhere;
        /// flags the tiles holding or touching a distance-1 node.
        ///
        /// # Safety
        /// `sink_r`, `label` have `g.n` entries, `flags` one per tile.
        fn bfs_seed = "bfs_seed_n{deg}"(
            g: GridShape,
            sink_r: &CudaSlice<i32>,
            label: &mut CudaSlice<u32>,
            flags: &mut CudaSlice<u32>,
        ) => per_item(g.n);

        /// Local relabel after a warm start: label 1 where a node gained a sink residual and
        /// had more; flags those nodes' tiles and the tiles next to them.
        ///
        /// # Safety
        /// `sink_r`, `label` have `g.n` entries, `flags` one per tile.
        fn bfs_reseed = "bfs_reseed_n{deg}"(
            g: GridShape,
            sink_r: &CudaSlice<i32>,
            label: &mut CudaSlice<u32>,
            flags: &mut CudaSlice<u32>,
        ) => per_item(g.n);

        /// Turns the tile flags into a list (its length added to `count`, which must be zero)
        /// and clears them.
        ///
        /// # Safety
        /// `flags` and `list` have `ntiles` entries, `count` one.
        fn build_list = "build_list"(
            ntiles: u32,
            flags: &mut CudaSlice<u32>,
            list: &mut CudaSlice<u32>,
            count: &mut CudaSlice<u32>,
        ) => per_item(ntiles);

        /// One pass of the tile-wise global relabel over the listed tiles, `grid_blocks` blocks
        /// each taking listed tiles in turn.
        ///
        /// # Safety
        /// `rcap` has `deg·g.n` entries, `label` `g.n`, `list` and `flags` one per tile; `count`
        /// holds the list's length and `list` tile numbers.
        fn bfs_tile = "bfs_tile_n{deg}" [grid_blocks: u32](
            g: GridShape,
            rcap: &CudaSlice<i32>,
            label: &mut CudaSlice<u32>,
            list: &CudaSlice<u32>,
            count: &CudaSlice<u32>,
            flags: &mut CudaSlice<u32>,
        ) => blocks(grid_blocks);

        /// 2D grids, before the passes of a global relabel: packs which arcs have residual
        /// capacity into `bits`, word `(d·h + y)·ceil(w/32) + x/32`, bit `x % 32`.
        ///
        /// # Safety
        /// `rcap` has `deg·g.n` entries, `bits` `deg·h·ceil(w/32)`; `h·ceil(w/32)·32` fits in
        /// `u32`.
        fn res_bits = "res_bits_n{deg}"(
            g: GridShape,
            rcap: &CudaSlice<i32>,
            bits: &mut CudaSlice<u32>,
        ) => per_item(g.h * g.w.div_ceil(32) * 32);

        /// 2D grids: one pass of the global relabel over the listed tiles, a warp per tile
        /// (a search by levels over the packed residual `bits` of [`GridPr::res_bits`]),
        /// `grid_blocks` blocks of 8 warps taking listed tiles in turn. Seeds are the label-1
        /// nodes and the halo: for global relabels (after `bfs_seed`), not the local one.
        ///
        /// # Safety
        /// `bits` as [`GridPr::res_bits`] wrote it for the current residuals, `label` `g.n`
        /// entries, `list` and `flags` one per tile; `count` holds the list's length and `list`
        /// tile numbers.
        fn bfs_wtile = "bfs_wtile_n{deg}" [grid_blocks: u32](
            g: GridShape,
            bits: &CudaSlice<u32>,
            label: &mut CudaSlice<u32>,
            list: &CudaSlice<u32>,
            count: &CudaSlice<u32>,
            flags: &mut CudaSlice<u32>,
        ) => blocks(grid_blocks);

        /// Queued global relabel, start: puts the flagged tiles into the empty `ring` (their
        /// flags stay set), counting them in `ctl`'s queue words (`QCTL_*` in the kernel).
        ///
        /// # Safety
        /// `flags`, `ring` and `depth` have `ntiles` entries, `ring` zeroed; `ctl` has 16
        /// entries, zeroed.
        fn queue_fill = "queue_fill"(
            ntiles: u32,
            flags: &CudaSlice<u32>,
            ring: &mut CudaSlice<u32>,
            ctl: &mut CudaSlice<u32>,
            depth: &mut CudaSlice<u32>,
        ) => per_item(ntiles);

        /// 2D grids: the whole global relabel in one launch (after `bfs_seed`, `res_bits` and
        /// [`GridPr::queue_fill`]): `grid_blocks` blocks of 8 warps take tiles from the ring
        /// and queue the tiles next to every border label they lower, until none is queued or
        /// in work. `ctl` then holds the tiles processed and the deepest chain of queuings.
        ///
        /// # Safety
        /// As [`GridPr::bfs_wtile`]; `ring`, `depth` as [`GridPr::queue_fill`] left them, `ctl`
        /// 16 entries; no other kernel touches these buffers meanwhile.
        fn bfs_wqueue = "bfs_wqueue_n{deg}" [grid_blocks: u32](
            g: GridShape,
            bits: &CudaSlice<u32>,
            label: &mut CudaSlice<u32>,
            flags: &mut CudaSlice<u32>,
            ring: &mut CudaSlice<u32>,
            ctl: &mut CudaSlice<u32>,
            depth: &mut CudaSlice<u32>,
            ntiles: u32,
        ) => blocks(grid_blocks);

        /// After a global relabel: flags the tiles holding an active node, and adds the
        /// number of active nodes to `count`.
        ///
        /// # Safety
        /// `excess` and `label` have `g.n` entries, `flags` one per tile, `count` one.
        fn mark_active = "mark_active_n{deg}"(
            g: GridShape,
            excess: &CudaSlice<i64>,
            label: &CudaSlice<u32>,
            flags: &mut CudaSlice<u32>,
            count: &mut CudaSlice<u32>,
        ) => per_item(g.n);

        /// Region discharge of the listed tiles (`iters` sweeps over the colour classes),
        /// `grid_blocks` blocks each taking listed tiles in turn.
        ///
        /// # Safety
        /// As [`GridPr::bfs_tile`], and `sink_r`, `excess` have `g.n` entries, `flow` one.
        fn discharge = "discharge_n{deg}" [grid_blocks: u32](
            g: GridShape,
            rcap: &mut CudaSlice<i32>,
            sink_r: &mut CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            label: &mut CudaSlice<u32>,
            flow: &mut CudaSlice<u64>,
            list: &CudaSlice<u32>,
            count: &CudaSlice<u32>,
            flags: &mut CudaSlice<u32>,
            iters: i32,
        ) => blocks(grid_blocks);

        /// The persistent solve of phase one (after `init_terminals`, tile flags clear, `ctl`
        /// zeroed): global relabels, active tiles and discharge rounds (`iters` sweeps each,
        /// at least `min_rounds` or `ratio` times the last relabel's passes between relabels)
        /// until a fresh relabel finds no active node, or `max_rounds` rounds (then `ctl[5]` is
        /// 1). `ctl[6]`, `ctl[7]`, `ctl[8]`: rounds, relabels, relabel passes. Tiled
        /// connectivities (N4, N8, N6; N26 only when it is tiled).
        ///
        /// # Safety
        /// As [`GridPr::discharge`]; `bits` as [`GridPr::res_bits`] sizes it for 2D grids (any
        /// length for 3D ones, which do not use it); `ctl` has 16 entries; `grid_blocks` is at most
        /// [`GridPr::coop_resident_blocks`] and the device runs cooperative launches.
        fn solve_coop = "solve_coop_n{deg}" [grid_blocks: u32](
            g: GridShape,
            rcap: &mut CudaSlice<i32>,
            sink_r: &mut CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            label: &mut CudaSlice<u32>,
            flow: &mut CudaSlice<u64>,
            flags: &mut CudaSlice<u32>,
            list: &mut CudaSlice<u32>,
            ntiles: u32,
            bits: &mut CudaSlice<u32>,
            ctl: &mut CudaSlice<u32>,
            iters: i32,
            min_rounds: u32,
            ratio: f32,
            max_rounds: u32,
        ) => cooperative(grid_blocks);

        /// The node-sweep discharge (26-connected grids): up to `max_ops` pushes or relabels per
        /// node; with `count != 0` the nodes still active are added to `active`.
        ///
        /// # Safety
        /// `rcap` has `deg·g.n` entries, `sink_r`, `excess`, `label` `g.n`, `flow` and `active`
        /// one.
        fn pr_round = "pr_round"(
            g: GridShape,
            rcap: &mut CudaSlice<i32>,
            sink_r: &mut CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            label: &mut CudaSlice<u32>,
            flow: &mut CudaSlice<u64>,
            active: &mut CudaSlice<u32>,
            count: i32,
            max_ops: i32,
        ) => per_item(g.n);

        /// The tail finish: every active node's excess is carried down admissible arcs of the
        /// current (exact, from a global relabel) labels towards the sink, one thread per node,
        /// arcs claimed by compare-and-swap; `moved` gains the number of carriers that pushed.
        ///
        /// # Safety
        /// `rcap` has `deg·g.n` entries, `sink_r`, `excess`, `label` `g.n`, `flow` and `moved`
        /// one; no other kernel runs on these buffers meanwhile.
        fn push_paths = "push_paths"(
            g: GridShape,
            rcap: &mut CudaSlice<i32>,
            sink_r: &mut CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            label: &CudaSlice<u32>,
            flow: &mut CudaSlice<u64>,
            moved: &mut CudaSlice<u32>,
        ) => per_item(g.n);

        /// The canonical cut from the final labels: `out[v]` is 1 where `v` reaches the sink.
        ///
        /// # Safety
        /// `label` and `out` have `g.n` entries.
        fn sink_side = "sink_side"(
            g: GridShape,
            label: &CudaSlice<u32>,
            out: &mut CudaSlice<u8>,
        ) => per_item(g.n);
    }
}

impl GridPr {
    /// The kernels for grids of connectivity `conn`.
    pub(crate) fn load(gpu: &Gpu, conn: Connectivity) -> Result<Self> {
        let deg = conn.degree().to_string();
        Self::load_with(gpu, |name| name.replace("{deg}", &deg))
    }

    /// How many blocks of the tiled discharge the GPU runs at once (occupancy per multiprocessor
    /// times the multiprocessors): the most a launch should ask for.
    pub(crate) fn discharge_resident_blocks(&self, gpu: &Gpu) -> Result<u32> {
        resident(&self.discharge, gpu)
    }

    /// As [`GridPr::discharge_resident_blocks`], for the persistent solve: the most blocks its
    /// cooperative launch may have.
    pub(crate) fn coop_resident_blocks(&self, gpu: &Gpu) -> Result<u32> {
        resident(&self.solve_coop, gpu)
    }

    /// As [`GridPr::discharge_resident_blocks`], for the tiled relabel pass.
    pub(crate) fn bfs_tile_resident_blocks(&self, gpu: &Gpu) -> Result<u32> {
        resident(&self.bfs_tile, gpu)
    }

    /// As [`GridPr::discharge_resident_blocks`], for the warp-per-tile relabel pass.
    pub(crate) fn bfs_wtile_resident_blocks(&self, gpu: &Gpu) -> Result<u32> {
        resident(&self.bfs_wtile, gpu)
    }
}

fn resident(f: &cudarc::driver::CudaFunction, gpu: &Gpu) -> Result<u32> {
    let per_sm = f
        .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
        .call("cuOccupancyMaxActiveBlocksPerMultiprocessor")?;
    Ok(per_sm.max(1) * gpu.multiprocessors)
}
