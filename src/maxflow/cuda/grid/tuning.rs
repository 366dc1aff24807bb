//! The settings of `cuda-grid` that trade work for launches: typed, with the defaults measured on
//! an H100 (docs/gpu.md, "Tuning"), and a `key=value,...` text form for experiments
//! (`segcut bench --grid-tune`).

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// How many blocks a tiled kernel launches; each block takes the listed tiles `b`, `b + blocks`,
/// … in turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TileBlocks {
    /// As many as the GPU holds at once (occupancy × multiprocessors, at most one per tile), so
    /// a short worklist does not pay for idle blocks. The default.
    #[default]
    Fit,
    /// A fixed number (at most one per tile). Tests use a few, so that each block takes many
    /// tiles and reuses its shared memory.
    Fixed(u32),
}

impl TileBlocks {
    /// Blocks per launch of a tile kernel on a GPU that holds `resident` of them at once: at
    /// least one, at most one per tile. [`TileBlocks::Fit`] asks for every resident block also
    /// when a batch's workers share the GPU ([`crate::cuda::Device::shared_by`]): an ordinary
    /// launch does not wait for the GPU to empty (the blocks of several workers' launches
    /// interleave as blocks retire), and a launch cut to a share left each block several tiles
    /// to run in turn (docs/batch.md). Only the cooperative launch is cut to the share.
    ///
    /// ```
    /// use segcut::maxflow::cuda::TileBlocks;
    /// assert_eq!(TileBlocks::Fit.blocks(528, 300), 300);
    /// assert_eq!(TileBlocks::Fit.blocks(528, 2000), 528);
    /// assert_eq!(TileBlocks::Fixed(0).blocks(528, 2000), 1);
    /// ```
    pub fn blocks(self, resident: u32, ntiles: u32) -> u32 {
        let wanted = match self {
            TileBlocks::Fit => resident,
            TileBlocks::Fixed(b) => b,
        };
        wanted.clamp(1, ntiles.max(1))
    }
}

/// The tuning of [`CudaGrid`](super::CudaGrid). None of it changes the result (every setting
/// gives the same canonical cut); it changes how many launches and read-backs a solve takes.
///
/// | key | field | default | what |
/// |---|---|---|---|
/// | `sweeps` | [`tile_sweeps`](Self::tile_sweeps) | 2 | sweeps over a tile's colour classes per discharge launch |
/// | `ops` | [`node_ops`](Self::node_ops) | 4 | pushes or relabels per node and launch of the node sweep (26-connected grids) |
/// | `min_rounds` | [`relabel_min_rounds`](Self::relabel_min_rounds) | 8 | fewest discharge rounds between global relabels |
/// | `ratio` | [`relabel_ratio`](Self::relabel_ratio) | 1 | … or this many times the launches of the last relabel, if more |
/// | `check` | [`check_every`](Self::check_every) | 4 | tiled rounds (or relabel passes) between read-backs of the worklist's length |
/// | `blocks` | [`tile_blocks`](Self::tile_blocks) | `fit` | blocks per tiled launch: `fit` or a number |
/// | `graphs` | [`graphs`](Self::graphs) | 1 | replay each batch of tiled launches as a captured CUDA graph (0: launch one by one) |
/// | `warm_local` | [`warm_local`](Self::warm_local) | 0 | a warm start begins with a local relabel of the region whose sink arcs grew (1; 0: a full relabel, the default) |
/// | `persistent` | [`persistent_max_nodes`](Self::persistent_max_nodes) | 262144 | grids of at most this many nodes are solved by one cooperative launch (0: never) |
/// | `warp_bfs` | [`warp_bfs`](Self::warp_bfs) | 1 | 2D grids: global relabel passes with a warp per tile over packed residual bits (0: a block per tile) |
/// | `tail` | [`tail_active`](Self::tail_active) | 0 | once a global relabel finds at most this share of the nodes active, carry their excess down whole paths (`push_paths`) instead of tile rounds (0: never; an experiment that did not pay, see the field) |
/// | `tail_pushes` | [`tail_pushes`](Self::tail_pushes) | 4 | at most this many path launches between two global relabels of the tail finish |
/// | `queue` | [`queue`](Self::queue) | 0 | 2D grids: each global relabel is one launch whose warps take tiles from a queue, not a launch per pass (1; an experiment that did not pay, see the field) |
///
/// ```
/// use segcut::maxflow::cuda::{GridTuning, TileBlocks};
/// let t: GridTuning = "sweeps=4,blocks=3".parse().unwrap();
/// assert_eq!((t.tile_sweeps, t.tile_blocks), (4, TileBlocks::Fixed(3)));
/// assert_eq!(t.check_every, GridTuning::default().check_every);
/// assert_eq!(
///     t.to_string(),
///     "sweeps=4,ops=4,min_rounds=8,ratio=1,check=4,blocks=3,graphs=1,warm_local=0,persistent=262144,warp_bfs=1,tail=0,tail_pushes=4,queue=0"
/// );
/// assert!("sweep=4".parse::<GridTuning>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GridTuning {
    /// Tiled discharge: sweeps over a tile's colour classes per launch (at least 1).
    pub tile_sweeps: u32,
    /// Node-sweep discharge (26-connected grids): push or relabel operations each node's thread
    /// may do per launch (at least 1).
    pub node_ops: u32,
    /// Discharge rounds between global relabels: at least this many...
    pub relabel_min_rounds: u32,
    /// ... or this many times the launches the last global relabel took, whichever is more.
    pub relabel_ratio: f64,
    /// Tiled rounds (or relabel passes) per batch, i.e. between two read-backs of the
    /// worklist's length. Discharge batches always run whole, so the rounds between global
    /// relabels are rounded up to a multiple of this (at least 1).
    pub check_every: u32,
    /// How many blocks each tiled kernel launches.
    pub tile_blocks: TileBlocks,
    /// Run each batch of tiled launches (a relabel batch, a discharge batch: `check_every`
    /// times a counter reset, the worklist build and the tile kernel) as one CUDA graph,
    /// captured once per solve shape and buffers and replayed: one launch instead of
    /// `3 · check_every`, which is what a small grid's round costs. Kernels past an empty
    /// worklist return at once, so a replay never does more than the launches would.
    pub graphs: bool,
    /// A warm start ([`WarmGrid`](super::WarmGrid)) begins with a local relabel instead of a
    /// global one: the last solve's final labels stay, and only the nodes whose sink residual
    /// grew seed passes that lower the labels around them. Discharge then starts on that
    /// (valid, not exact) labelling; the solve still ends only on a full relabel that finds no
    /// active node, so the cut is the canonical one either way. Off by default: on the 4K
    /// rounds of six dev photos (H200) it did not pay overall (rounds 2-5 warm against scratch,
    /// summed: 0.67× with it, 0.64× without; docs/benchmarks.md).
    pub warm_local: bool,
    /// A from-scratch solve of a tiled grid of at most this many nodes runs as one persistent
    /// cooperative launch (`solve_coop` in `kernels/grid_pr.cu`): the same relabel, discharge
    /// and stop test, with grid-wide barriers on the device where the host loop reads a
    /// counter back, so a small grid's solve does not wait on a host round trip per relabel
    /// pass and per discharge round. 0 turns it off; devices without cooperative launches
    /// and warm starts use the host loop.
    pub persistent_max_nodes: usize,
    /// 2D grids (N4, N8): each pass of a global relabel computes a tile's fixed point with one
    /// warp, as a search by levels over bit masks of the residual arcs (packed once per
    /// relabel), instead of a block iterating colour classes with a barrier after each. Same
    /// labels, same cut; on the 4K photo graphs the block version spent most of its time at
    /// those barriers. Local relabels (warm starts) and 3D grids always use the block version.
    pub warp_bfs: bool,
    /// The tail finish of the host loop (not the persistent solve): after a global relabel
    /// that finds at most this share of the nodes active, the excess is moved by `push_paths`
    /// launches, each active node's thread carrying its excess down admissible arcs as far as
    /// they go, instead of by tile rounds, which move it about a tile per round and spend most
    /// of a 4K photo graph's solve on the last percent of active nodes. The labels stay valid
    /// and the solve still ends only on a global relabel that finds no active node, so the cut
    /// is the same. 0 turns it off (the default); 1 uses it from the first relabel on.
    ///
    /// Off because it did not pay: on the 4K first-round graphs of three dev photos (H200) it
    /// needed 10-25× the global relabels and made the solves 3-6× slower, and run between a
    /// relabel and the tile rounds it changed nothing beyond the run-to-run spread. The
    /// tail's excess is not far from the sink: it is stuck behind saturated arcs, so it needs
    /// relabels, which the tile rounds do locally and a carrier cannot (docs/benchmarks.md).
    pub tail_active: f64,
    /// Path launches between two global relabels of the tail finish, at most; fewer when a
    /// launch moves nothing (at least 1).
    pub tail_pushes: u32,
    /// 2D grids with [`warp_bfs`](Self::warp_bfs), host loop: a global relabel is one launch
    /// (`bfs_wqueue`) whose warps take tiles from a queue and queue every tile whose halo they
    /// lowered, instead of passes of `bfs_wtile` over the flagged tiles with a launch and a
    /// list build each. Same labels (the exact distances), same cut. In the tail of a 4K photo
    /// graph's solve a relabel took about 180 passes of 70 µs, each waiting for its slowest
    /// tile and then for the launch of the next; the queue lets a tile start as soon as its
    /// halo fell.
    ///
    /// Off because it did not pay: on the 4K photo graphs (H200, 2026-11-27) whole
    /// segmentations took 7-15 s instead of 1-2.4 s with it (docs/benchmarks.md, sixth
    /// session); the passes stay the default.
    pub queue: bool,
}

impl Default for GridTuning {
    fn default() -> Self {
        GridTuning {
            tile_sweeps: 2,
            node_ops: 4,
            relabel_min_rounds: 8,
            relabel_ratio: 1.0,
            check_every: 4,
            tile_blocks: TileBlocks::Fit,
            graphs: true,
            warm_local: false,
            persistent_max_nodes: 1 << 18,
            warp_bfs: true,
            tail_active: 0.0,
            tail_pushes: 4,
            queue: false,
        }
    }
}

/// The keys of the text form, in the order [`Display`](fmt::Display) writes them.
const KEYS: [&str; 13] = [
    "sweeps",
    "ops",
    "min_rounds",
    "ratio",
    "check",
    "blocks",
    "graphs",
    "warm_local",
    "persistent",
    "warp_bfs",
    "tail",
    "tail_pushes",
    "queue",
];

impl GridTuning {
    /// Sets `key` to `value` (see the type's table).
    fn set(&mut self, key: &str, value: &str) -> Option<()> {
        let count = || value.parse::<u32>().ok().filter(|&x| x > 0);
        let flag = || match value {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        };
        match key {
            "sweeps" => self.tile_sweeps = count()?,
            "ops" => self.node_ops = count()?,
            "min_rounds" => self.relabel_min_rounds = count()?,
            "ratio" => {
                self.relabel_ratio = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| r.is_finite() && *r >= 0.0)?
            }
            "check" => self.check_every = count()?,
            "blocks" if value == "fit" => self.tile_blocks = TileBlocks::Fit,
            "blocks" => self.tile_blocks = TileBlocks::Fixed(count()?),
            "graphs" => self.graphs = flag()?,
            "warm_local" => self.warm_local = flag()?,
            "persistent" => self.persistent_max_nodes = value.parse().ok()?,
            "warp_bfs" => self.warp_bfs = flag()?,
            "tail" => {
                self.tail_active = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))?
            }
            "tail_pushes" => self.tail_pushes = count()?,
            "queue" => self.queue = flag()?,
            _ => return None,
        }
        Some(())
    }
}

impl FromStr for GridTuning {
    type Err = Error;

    /// Parses `key=value` settings separated by commas, each over the default (see the type's
    /// table); an unknown key or a bad value is an error naming it.
    fn from_str(s: &str) -> Result<Self> {
        let mut t = GridTuning::default();
        for kv in s.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            t.set(k.trim(), v.trim()).ok_or_else(|| {
                Error::Unsupported(format!(
                    "grid tuning '{kv}': expected one of {} with a positive value (ratio: a \
                     number ≥ 0, blocks: fit or a count, persistent: a node count, 0 for off; tail: a share of the nodes from 0 to 1)",
                    KEYS.join(", ")
                ))
            })?;
        }
        Ok(t)
    }
}

impl fmt::Display for GridTuning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let blocks = match self.tile_blocks {
            TileBlocks::Fit => "fit".to_string(),
            TileBlocks::Fixed(b) => b.to_string(),
        };
        let values = [
            self.tile_sweeps.to_string(),
            self.node_ops.to_string(),
            self.relabel_min_rounds.to_string(),
            self.relabel_ratio.to_string(),
            self.check_every.to_string(),
            blocks,
            u8::from(self.graphs).to_string(),
            u8::from(self.warm_local).to_string(),
            self.persistent_max_nodes.to_string(),
            u8::from(self.warp_bfs).to_string(),
            self.tail_active.to_string(),
            self.tail_pushes.to_string(),
            u8::from(self.queue).to_string(),
        ];
        let parts: Vec<String> = KEYS
            .iter()
            .zip(values)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_parses_and_prints_back() {
        let t: GridTuning =
            "sweeps=7, ops=9,min_rounds=3,ratio=0.5,check=16,blocks=2,graphs=0,warm_local=1,persistent=5000,warp_bfs=0,tail=0.25,tail_pushes=3,queue=0"
                .parse()
                .unwrap();
        let want = GridTuning {
            tile_sweeps: 7,
            node_ops: 9,
            relabel_min_rounds: 3,
            relabel_ratio: 0.5,
            check_every: 16,
            tile_blocks: TileBlocks::Fixed(2),
            graphs: false,
            warm_local: true,
            persistent_max_nodes: 5000,
            warp_bfs: false,
            tail_active: 0.25,
            tail_pushes: 3,
            queue: false,
        };
        assert_eq!(t, want);
        assert_eq!(t.to_string().parse::<GridTuning>().unwrap(), want);
        assert_eq!("".parse::<GridTuning>().unwrap(), GridTuning::default());
        assert_eq!(
            "blocks=fit".parse::<GridTuning>().unwrap().tile_blocks,
            TileBlocks::Fit
        );
    }

    #[test]
    fn bad_settings_are_errors_that_name_them() {
        for bad in [
            "sweep=2",
            "sweeps=0",
            "sweeps=-1",
            "sweeps=x",
            "check=0",
            "ratio=-1",
            "ratio=nan",
            "blocks=tiles",
            "blocks=0",
            "graphs=2",
            "warm_local=yes",
            "persistent=-1",
            "persistent=x",
            "tail=1.5",
            "tail=-0.1",
            "tail=nan",
            "tail_pushes=0",
            "queue=2",
            "discharge=sweep",
            "ratio",
        ] {
            let e = bad.parse::<GridTuning>().unwrap_err().to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }
}
