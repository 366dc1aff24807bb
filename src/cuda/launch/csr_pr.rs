//! The launchers of `kernels/csr_pr.cu` (driven by `src/maxflow/cuda/csr.rs`).
//!
//! Buffers, for a layout of `n` nodes and `m` forward arcs (see `CsrLayout`): `fwd_first` and
//! `rev_first` `n + 1` offsets into the `m`-entry `fwd_head` / `rev_tail` / `rev_arc`, `rf` and
//! `tot` `m` each; `sink_r`, `excess`, `label`, `stamp` and each list `n`; the counter rings
//! `counts` three entries, `state` two, `flow` one. Lists and frontiers hold node numbers below
//! `n`; the ring entry at the round's (level's) index holds the current list's length.

use cudarc::driver::{CudaSlice, CudaViewMut, LaunchConfig};

use super::{blocks, kernel_file, one_block, per_item, BLOCK};
use crate::cuda::Gpu;
use crate::Result;

/// Threads of the one-block loops (`SMALL_THREADS` in `kernels/csr_pr.cu`).
pub(crate) const SMALL_THREADS: u32 = 1024;

/// Worklist kernels stride over their list with groups of `2^log_g` lanes: enough blocks for a
/// group per node, capped at 8 blocks per multiprocessor (no more fill the GPU).
fn worklist(n: u32, log_g: u32, sms: u32) -> LaunchConfig {
    let lanes = (n as u64) << log_g;
    blocks((lanes.div_ceil(BLOCK as u64) as u32).clamp(1, sms.max(1) * 8))
}

kernel_file! {
    /// The kernels of `kernels/csr_pr.cu`.
    pub(crate) struct CsrPr for "csr_pr" {
        /// Global relabel, first level: distance 1 where the sink residual is positive (those
        /// nodes form the frontier, their number added to `count`), INF elsewhere.
        ///
        /// # Safety
        /// `sink_r`, `label`, `frontier` have `n` entries, `count` one.
        fn bfs_init = "bfs_init"(
            n: u32,
            sink_r: &CudaSlice<i32>,
            label: &mut CudaSlice<u32>,
            frontier: &mut CudaSlice<u32>,
            count: &mut CudaViewMut<'_, u32>,
        ) => per_item(n);

        /// One BFS level from the frontier (length in `counts[level % 3]`) into `next`.
        ///
        /// # Safety
        /// The layout's arrays as in the module's doc; `counts` three entries.
        fn bfs_level = "bfs_level" [sms: u32](
            n: u32,
            fwd_first: &CudaSlice<u32>,
            fwd_head: &CudaSlice<u32>,
            rev_first: &CudaSlice<u32>,
            rev_tail: &CudaSlice<u32>,
            rev_arc: &CudaSlice<u32>,
            rf: &CudaSlice<i32>,
            tot: &CudaSlice<i32>,
            label: &mut CudaSlice<u32>,
            frontier: &CudaSlice<u32>,
            next: &mut CudaSlice<u32>,
            counts: &mut CudaSlice<u32>,
            level: u32,
            log_g: u32,
        ) => worklist(n, log_g, sms);

        /// The worklist of epoch `ep`: every node with excess that reaches the sink.
        ///
        /// # Safety
        /// `excess`, `label`, `stamp`, `list` have `n` entries, `count` one.
        fn compact_active = "compact_active"(
            n: u32,
            excess: &CudaSlice<i64>,
            label: &CudaSlice<u32>,
            stamp: &mut CudaSlice<u32>,
            list: &mut CudaSlice<u32>,
            count: &mut CudaViewMut<'_, u32>,
            ep: u32,
        ) => per_item(n);

        /// One push-relabel round over the worklist of epoch `ep` (length in `counts[ep % 3]`).
        ///
        /// # Safety
        /// The layout's arrays as in the module's doc; `counts` three entries.
        fn pr_round = "pr_round" [sms: u32](
            n: u32,
            fwd_first: &CudaSlice<u32>,
            fwd_head: &CudaSlice<u32>,
            rev_first: &CudaSlice<u32>,
            rev_tail: &CudaSlice<u32>,
            rev_arc: &CudaSlice<u32>,
            rf: &mut CudaSlice<i32>,
            tot: &CudaSlice<i32>,
            sink_r: &mut CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            label: &mut CudaSlice<u32>,
            stamp: &mut CudaSlice<u32>,
            flow: &mut CudaSlice<u64>,
            list: &CudaSlice<u32>,
            next: &mut CudaSlice<u32>,
            counts: &mut CudaSlice<u32>,
            ep: u32,
            log_g: u32,
            max_ops: i32,
            spread: i32,
        ) => worklist(n, log_g, sms);

        /// Rounds of `pr_round`'s work in one block while the list is non-empty and at most
        /// `limit` long, at most `max_steps` of them; `state` gets the epoch reached and the
        /// rounds run.
        ///
        /// # Safety
        /// As [`CsrPr::pr_round`], with both lists and `state` two entries.
        fn pr_small = "pr_small"(
            n: u32,
            fwd_first: &CudaSlice<u32>,
            fwd_head: &CudaSlice<u32>,
            rev_first: &CudaSlice<u32>,
            rev_tail: &CudaSlice<u32>,
            rev_arc: &CudaSlice<u32>,
            rf: &mut CudaSlice<i32>,
            tot: &CudaSlice<i32>,
            sink_r: &mut CudaSlice<i32>,
            excess: &mut CudaSlice<i64>,
            label: &mut CudaSlice<u32>,
            stamp: &mut CudaSlice<u32>,
            flow: &mut CudaSlice<u64>,
            list0: &mut CudaSlice<u32>,
            list1: &mut CudaSlice<u32>,
            counts: &mut CudaSlice<u32>,
            state: &mut CudaSlice<u32>,
            ep: u32,
            log_g: u32,
            max_ops: i32,
            spread: i32,
            limit: u32,
            max_steps: u32,
        ) => one_block(SMALL_THREADS);

        /// BFS levels in one block while the frontier is non-empty and at most `limit` long, at
        /// most `max_steps` of them; `state[0]` gets the level reached.
        ///
        /// # Safety
        /// As [`CsrPr::bfs_level`], with both lists and `state` two entries.
        fn bfs_small = "bfs_small"(
            n: u32,
            fwd_first: &CudaSlice<u32>,
            fwd_head: &CudaSlice<u32>,
            rev_first: &CudaSlice<u32>,
            rev_tail: &CudaSlice<u32>,
            rev_arc: &CudaSlice<u32>,
            rf: &CudaSlice<i32>,
            tot: &CudaSlice<i32>,
            label: &mut CudaSlice<u32>,
            list0: &mut CudaSlice<u32>,
            list1: &mut CudaSlice<u32>,
            counts: &mut CudaSlice<u32>,
            state: &mut CudaSlice<u32>,
            level: u32,
            log_g: u32,
            limit: u32,
            max_steps: u32,
        ) => one_block(SMALL_THREADS);
    }
}

impl CsrPr {
    /// The kernels, for this device.
    pub(crate) fn load(gpu: &Gpu) -> Result<Self> {
        Self::load_with(gpu, str::to_string)
    }
}
