//! Which solver runs, and why: the one place that decides ([`choose`], [`plan`]) and the rule
//! for falling back from a GPU solver to the CPU ([`declined`]; the CPU solve itself is
//! [`fall_back`](super::fall_back)). Segmentation, stereo and batch ask these; none works the
//! choice out again.

use super::kind::SolverKind;
use crate::cuda::Device;
use crate::Error;

/// Graphs with fewer nodes than this are solved by BK even when `auto` could use a GPU: below it
/// the GPU's fixed costs (uploads, launches, read-backs) outweigh its speed. Measured with
/// `segcut bench --suite crossover` on an H100 with a 16-core Xeon (total time, build + solve, per
/// solve in a running process): the GPU solvers draw level with BK at about 4 K nodes and win from
/// 16 K (256² grid: 3.4 ms against 15.4; 65 K-node sparse graph: 15 ms against 163). The threshold
/// sits higher, at 2^16, because a process's first GPU solve also pays for start-up (CUDA
/// context, kernel module from the disk cache), which a one-off small solve never wins back. A
/// process that solves many graphs (a batch) may lower it through [`AutoPolicy::min_gpu_nodes`].
pub const AUTO_MIN_GPU_NODES: usize = 1 << 16;

/// How [`SolverKind::Auto`] chooses: BK under `min_gpu_nodes` nodes or without a usable GPU,
/// else `cuda-grid` for grids and `cuda-csr` for general graphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoPolicy {
    /// Graphs with fewer nodes stay on the CPU (default [`AUTO_MIN_GPU_NODES`]).
    pub min_gpu_nodes: usize,
    /// Whether a GPU may be used at all; `false` keeps `auto` on the CPU without touching CUDA.
    pub use_gpu: bool,
}

impl Default for AutoPolicy {
    fn default() -> Self {
        AutoPolicy {
            min_gpu_nodes: AUTO_MIN_GPU_NODES,
            use_gpu: true,
        }
    }
}

/// Which solver ran and why: what [`choose`] decides and what every result carries
/// ([`Solved::ran`](super::Solved::ran)); `segcut maxflow` and `segment --stats-json` print it as `solver` and
/// `solver_reason`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The solver that ran: never [`SolverKind::Auto`].
    pub solver: SolverKind,
    /// One line for the user, e.g. `auto: grid of 4194304 nodes (threshold 65536) and a usable
    /// GPU`, or `requested`.
    pub reason: String,
    /// When `auto` picked a GPU solver that then declined the graph (no memory, no device), why:
    /// the graph was solved by BK instead.
    pub fallback: Option<String>,
}

impl Choice {
    /// A solver that was named, not chosen.
    pub fn requested(solver: SolverKind) -> Self {
        Choice {
            solver,
            reason: "requested".into(),
            fallback: None,
        }
    }
}

/// The shape of a graph as far as the solver choice cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphSize {
    /// A grid (else a general graph).
    pub grid: bool,
    /// Non-terminal nodes.
    pub nodes: usize,
    /// Arcs between non-terminal nodes.
    pub arcs: usize,
    /// Nodes with a source or a sink arc (for a grid, all of them: it is not counted). Few
    /// terminal nodes mean long augmenting paths, where Dinic beats BK (see [`cpu_choice`]).
    pub terminal_nodes: usize,
    /// Arcs with capacity whose reverse has none (for a grid, 0: it is not counted). Where at
    /// least half the arc pairs are one-way the graph is a flow network rather than a vision
    /// graph (see [`cpu_choice`]).
    pub one_way_arcs: usize,
}

/// Below this share of nodes with a terminal arc (in percent), a general graph goes to Dinic on
/// the CPU; see [`cpu_choice`].
pub const DINIC_MAX_TERMINAL_PERCENT: usize = 10;

/// The CPU solver for a graph of `size`, and why: a rule fitted to BK and Dinic timed on the
/// generic suite and larger instances of its families (`segcut bench --solvers bk,dinic`, 2-core
/// AMD EPYC VM, 2026-11-26, one run each; docs/benchmarks.md has the table):
///
/// | family | terminal nodes | one-way arcs | BK ms | Dinic ms | picked |
/// |---|---:|---:|---:|---:|---|
/// | Washington RLG 100 levels × 1000 | 2 % | 50 % | 488 662 | 12 042 | Dinic |
/// | Washington RLG 1000 levels × 100 | 0.2 % | 50 % | 54 079 | 101 064 | Dinic |
/// | Washington RLG long (1024×32, 2048×32) | 0.1–0.2 % | 50 % | 1437, 39 888 | 920, 26 761 | Dinic |
/// | Washington RLG 512×128 | 0.4 % | 50 % | 25 224 | 37 660 | Dinic |
/// | Washington RLG wide (16×1024) | 12 % | 50 % | 180 | 130 | BK |
/// | GENRMF long (a13 b181, a16 b256) | ≈ 0 | 17 % | 1026, 46 133 | 2041, 138 403 | BK |
/// | GENRMF wide (a64 b8) | ≈ 0 | 17 % | 1882 | 1460 | BK |
/// | random sparse, degree 8 / 4 | 50 % | 0 | 1763 / 372 | 2471 / 3251 | BK |
/// | 2D/3D vision grids as general graphs | ≈ 100 % | 0 | 305–9840 | 27 396–162 931 | BK |
///
/// BK grows two search trees from the terminals and reuses them, which pays where most nodes
/// touch a terminal (vision graphs: Dinic is 8–270× slower there) and where most arcs go both
/// ways; on layered one-way networks whose terminals are a thin first and last layer (the
/// Washington RLGs) its paths grow long and it falls up to 41× behind Dinic (100 levels ×
/// 1000: 489 s against 12 s; issue 11 saw 289 s against 14.5 s). So: Dinic for a general graph
/// with under [`DINIC_MAX_TERMINAL_PERCENT`] % of its nodes on a terminal arc and at least
/// [`DINIC_MIN_ONE_WAY_PERCENT`] % of its arcs one-way (half its arc pairs), BK otherwise;
/// grids always go to BK. The worst pick measured is 1.9× (RLG 1000 levels × 100, Dinic); a
/// `.max` file whose reverse arcs are not on adjacent lines has all its pairs one-way, so a
/// GENRMF read from such a file goes to Dinic (3× slower there).
///
/// ```
/// use segcut::maxflow::{cpu_choice, GraphSize, SolverKind};
/// let rlg = GraphSize { grid: false, nodes: 32768, arcs: 196416, terminal_nodes: 64, one_way_arcs: 98208 };
/// assert_eq!(cpu_choice(rlg).0, SolverKind::Dinic);
/// let vision = GraphSize { grid: false, nodes: 1 << 20, arcs: 1 << 23, terminal_nodes: 1 << 20, one_way_arcs: 0 };
/// assert_eq!(cpu_choice(vision).0, SolverKind::Bk);
/// ```
pub fn cpu_choice(size: GraphSize) -> (SolverKind, String) {
    if size.grid {
        return (SolverKind::Bk, "BK for grids".into());
    }
    let terminal = size.terminal_nodes.saturating_mul(100) / size.nodes.max(1);
    let one_way = size.one_way_arcs.saturating_mul(100) / size.arcs.max(1);
    if size.nodes > 0
        && terminal < DINIC_MAX_TERMINAL_PERCENT
        && one_way >= DINIC_MIN_ONE_WAY_PERCENT
    {
        (
            SolverKind::Dinic,
            format!(
                "Dinic: a one-way network ({one_way}% of arcs one-way) with {terminal}% of \
                 nodes on a terminal arc, where BK's paths grow long"
            ),
        )
    } else {
        (
            SolverKind::Bk,
            format!("BK: {terminal}% of nodes on a terminal arc, {one_way}% of arcs one-way"),
        )
    }
}

/// At least this share of arcs (in percent) must be one-way for Dinic; see [`cpu_choice`].
pub const DINIC_MIN_ONE_WAY_PERCENT: usize = 25;

/// The solver that `requested` runs on a graph of `size`, and why: a pure function of the size,
/// the policy and the GPU's state. `gpu_unavailable` says why no GPU is usable (`None` when one
/// is) and is only called for `auto` on graphs at or above the threshold, so small graphs never
/// initialise CUDA.
///
/// ```
/// use segcut::maxflow::{choose, AutoPolicy, GraphSize, SolverKind};
/// let policy = AutoPolicy { min_gpu_nodes: 1000, use_gpu: true };
/// let big = GraphSize { grid: false, nodes: 1 << 20, arcs: 1 << 22, terminal_nodes: 1 << 19, one_way_arcs: 0 };
/// assert_eq!(choose(SolverKind::Auto, big, &policy, || None).solver, SolverKind::CudaCsr);
/// let no_gpu = choose(SolverKind::Auto, big, &policy, || Some("no CUDA driver".into()));
/// assert_eq!(no_gpu.solver, SolverKind::Bk);
/// assert!(no_gpu.reason.contains("no CUDA driver"));
/// let small = GraphSize { grid: true, nodes: 64, arcs: 112, terminal_nodes: 64, one_way_arcs: 0 };
/// assert_eq!(choose(SolverKind::Auto, small, &policy, || unreachable!()).solver, SolverKind::Bk);
/// ```
pub fn choose(
    requested: SolverKind,
    size: GraphSize,
    policy: &AutoPolicy,
    gpu_unavailable: impl FnOnce() -> Option<String>,
) -> Choice {
    if requested != SolverKind::Auto {
        return Choice::requested(requested);
    }
    let what = if size.grid { "grid" } else { "general graph" };
    let (nodes, min) = (size.nodes, policy.min_gpu_nodes);
    let cpu = |reason: String| {
        let (solver, why) = cpu_choice(size);
        Choice {
            solver,
            reason: format!("{reason}; {why}"),
            fallback: None,
        }
    };
    if !policy.use_gpu {
        return cpu(format!("auto: {what} of {nodes} nodes, GPU not allowed"));
    }
    if nodes < min {
        return cpu(format!(
            "auto: {what} of {nodes} nodes, under the GPU threshold of {min}, where GPU fixed \
             costs dominate"
        ));
    }
    if let Some(why) = gpu_unavailable() {
        return cpu(format!(
            "auto: {what} of {nodes} nodes, no usable GPU ({why})"
        ));
    }
    Choice {
        solver: if size.grid {
            SolverKind::CudaGrid
        } else {
            SolverKind::CudaCsr
        },
        reason: format!("auto: {what} of {nodes} nodes (threshold {min}) and a usable GPU"),
        fallback: None,
    }
}

/// [`choose`] for a graph that will run on `device`: `auto` asks that device whether it is
/// usable (and only for graphs at or above the threshold). What segmentation, stereo and the
/// `auto` solver call before they build or solve.
///
/// ```
/// use segcut::cuda::Device;
/// use segcut::maxflow::{plan, AutoPolicy, GraphSize, SolverKind};
/// let small = GraphSize::of_grid([64, 64, 1], 8);
/// let c = plan(SolverKind::Auto, small, &AutoPolicy::default(), Device::new(0));
/// assert_eq!(c.solver, SolverKind::Bk); // under the threshold: CUDA is not touched
/// assert!(c.reason.contains("threshold"));
/// ```
pub fn plan(requested: SolverKind, size: GraphSize, policy: &AutoPolicy, device: Device) -> Choice {
    choose(requested, size, policy, || device.unavailable_reason())
}

/// Whether the failure `err` of a GPU solver lets the solve go on on the CPU, and why: only
/// when `requested` was `auto` (a named solver's failure is the answer the user asked for) and
/// only when the GPU solver declined ([`Error::Unsupported`]: no usable device, too little device
/// memory), never for input errors. The CPU solve is [`fall_back`](super::fall_back).
///
/// ```
/// use segcut::maxflow::{declined, SolverKind};
/// use segcut::Error;
/// let oom = Error::Unsupported("cuda-grid needs 9 GB".into());
/// assert_eq!(declined(SolverKind::Auto, &oom), Some("cuda-grid needs 9 GB"));
/// assert_eq!(declined(SolverKind::CudaGrid, &oom), None);
/// assert_eq!(declined(SolverKind::Auto, &Error::Graph("negative capacity".into())), None);
/// ```
pub fn declined(requested: SolverKind, err: &Error) -> Option<&str> {
    match err {
        Error::Unsupported(why) if requested == SolverKind::Auto => Some(why),
        _ => None,
    }
}

impl GraphSize {
    /// The size of a grid of `dims` whose nodes have `degree` neighbours, before it is built
    /// (every node of a segmentation or stereo grid has terminal arcs).
    ///
    /// ```
    /// use segcut::maxflow::GraphSize;
    /// let s = GraphSize::of_grid([4, 3, 1], 4);
    /// assert_eq!((s.nodes, s.arcs, s.terminal_nodes), (12, 48, 12));
    /// ```
    pub fn of_grid(dims: [usize; 3], degree: usize) -> Self {
        let nodes = dims.iter().product::<usize>();
        GraphSize {
            grid: true,
            nodes,
            arcs: nodes * degree,
            terminal_nodes: nodes,
            one_way_arcs: 0,
        }
    }
}
