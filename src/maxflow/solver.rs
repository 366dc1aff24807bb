//! One way to solve: [`SolverKind`] names a solver, [`SolveOptions`] says what to compute,
//! [`solve`] (or a [`MaxFlow`] held across many solves) runs it, and the [`Solved`] result says
//! which solver ran and why ([`Choice`]), with its times and statistics. Every caller reports
//! `ran`; none works the choice out again.
//!
//! ```
//! use segcut::graph::{Connectivity, GridGraph};
//! use segcut::maxflow::{solve, SolveOptions, SolverKind};
//! let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
//! g.set_terminals(0, 5, 0);
//! g.set_terminals(1, 0, 5);
//! g.set_arc(0, 1, 2).unwrap();
//! let solved = solve(&g, &SolveOptions::default()).unwrap();
//! assert_eq!(solved.cut.flow, 2);
//! assert_eq!(solved.ran.solver, SolverKind::Bk); // 2 nodes: under auto's GPU threshold
//! assert!(solved.certificate.is_some()); // verified by default
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use super::cuda::{CsrStats, CudaCsr, CudaGrid, GridStats};
use super::{bk::Bk, reference::Dinic, verify, verify_flows, Certificate, Cut, Flows};
use crate::graph::{CsrGraph, FlowNetwork, GridGraph, Network};
use crate::{Error, Result};

/// The max-flow solvers segcut ships, by the names the command line and the Python package use.
///
/// | kind | name | runs on | takes |
/// |------|------|---------|-------|
/// | [`Auto`](SolverKind::Auto) | `auto` | picks one of the others per graph ([`AutoPolicy`]) | any graph |
/// | [`Bk`](SolverKind::Bk) | `bk` | CPU: Boykov–Kolmogorov | any graph |
/// | [`Dinic`](SolverKind::Dinic) | `dinic` | CPU: Dinic's blocking flows, a simple reference | any graph |
/// | [`CudaGrid`](SolverKind::CudaGrid) | `cuda-grid` | GPU: tiled push-relabel | grids only |
/// | [`CudaCsr`](SolverKind::CudaCsr) | `cuda-csr` | GPU: worklist push-relabel | any graph |
///
/// ```
/// use segcut::maxflow::SolverKind;
/// let k: SolverKind = "cuda-grid".parse().unwrap();
/// assert_eq!(k, SolverKind::CudaGrid);
/// assert_eq!(k.to_string(), "cuda-grid");
/// assert!("cuda".parse::<SolverKind>().unwrap_err().to_string().contains("cuda-grid"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SolverKind {
    /// The best solver for each graph on this machine (see [`AutoPolicy`]).
    #[default]
    Auto,
    /// Boykov–Kolmogorov on the CPU.
    Bk,
    /// Dinic's algorithm on the CPU.
    Dinic,
    /// The tiled GPU push-relabel for grids.
    CudaGrid,
    /// The worklist GPU push-relabel for general graphs.
    CudaCsr,
}

impl SolverKind {
    /// Every kind with its name, in the order help texts list them.
    pub const ALL: [(SolverKind, &'static str); 5] = [
        (SolverKind::Auto, "auto"),
        (SolverKind::Bk, "bk"),
        (SolverKind::Dinic, "dinic"),
        (SolverKind::CudaGrid, "cuda-grid"),
        (SolverKind::CudaCsr, "cuda-csr"),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("auto", |(_, n)| n)
    }

    /// Every name, for help texts and parsers.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|(_, n)| *n)
    }

    /// Whether the solver runs on a GPU.
    pub fn is_gpu(self) -> bool {
        matches!(self, SolverKind::CudaGrid | SolverKind::CudaCsr)
    }

    /// Whether the solver takes grid graphs only.
    pub fn grids_only(self) -> bool {
        self == SolverKind::CudaGrid
    }
}

impl fmt::Display for SolverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Serialised as its name (`"cuda-grid"`), as the command line and the JSON outputs show it.
impl serde::Serialize for SolverKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl FromStr for SolverKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "unknown solver '{s}' (available: {})",
                    Self::names().collect::<Vec<_>>().join(", ")
                ))
            })
    }
}

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
/// ([`Solved::ran`]); `segcut maxflow` and `segment --stats-json` print it as `solver` and
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

/// A borrowed graph of either kind: what every solver takes.
#[derive(Clone, Copy, Debug)]
pub enum GraphRef<'a> {
    /// A regular grid.
    Grid(&'a GridGraph),
    /// Any graph.
    Csr(&'a CsrGraph),
}

impl<'a> From<&'a GridGraph> for GraphRef<'a> {
    fn from(g: &'a GridGraph) -> Self {
        GraphRef::Grid(g)
    }
}

impl<'a> From<&'a CsrGraph> for GraphRef<'a> {
    fn from(g: &'a CsrGraph) -> Self {
        GraphRef::Csr(g)
    }
}

impl<'a> From<&'a Network> for GraphRef<'a> {
    fn from(net: &'a Network) -> Self {
        match net {
            Network::Grid(g) => GraphRef::Grid(g),
            Network::Csr(g) => GraphRef::Csr(g),
        }
    }
}

impl GraphRef<'_> {
    /// The size that [`choose`] looks at.
    pub fn size(&self) -> GraphSize {
        GraphSize {
            grid: matches!(self, GraphRef::Grid(_)),
            nodes: self.num_nodes(),
            arcs: self.num_arcs(),
            terminal_nodes: match self {
                GraphRef::Grid(g) => g.num_nodes(),
                GraphRef::Csr(g) => g
                    .source_caps()
                    .iter()
                    .zip(g.sink_caps())
                    .filter(|&(&s, &t)| s != 0 || t != 0)
                    .count(),
            },
            one_way_arcs: match self {
                GraphRef::Grid(_) => 0,
                GraphRef::Csr(g) => {
                    let (cap, sister) = (g.caps(), g.sisters());
                    (0..cap.len())
                        .filter(|&a| cap[a] > 0 && cap[sister[a] as usize] == 0)
                        .count()
                }
            },
        }
    }

    /// The graph as a CSR graph (converted if it is a grid).
    pub fn to_csr(&self) -> Result<std::borrow::Cow<'_, CsrGraph>> {
        match self {
            GraphRef::Grid(g) => Ok(std::borrow::Cow::Owned(g.to_csr()?)),
            GraphRef::Csr(g) => Ok(std::borrow::Cow::Borrowed(*g)),
        }
    }
}

impl FlowNetwork for GraphRef<'_> {
    fn num_nodes(&self) -> usize {
        match self {
            GraphRef::Grid(g) => g.num_nodes(),
            GraphRef::Csr(g) => g.num_nodes(),
        }
    }
    fn num_arcs(&self) -> usize {
        match self {
            GraphRef::Grid(g) => g.num_arcs(),
            GraphRef::Csr(g) => g.num_arcs(),
        }
    }
    fn cut_capacity(&self, sink_side: &[bool]) -> i128 {
        match self {
            GraphRef::Grid(g) => g.cut_capacity(sink_side),
            GraphRef::Csr(g) => g.cut_capacity(sink_side),
        }
    }
}

/// What a GPU solver reports about its last solve.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuStats {
    /// From `cuda-grid`.
    Grid(GridStats),
    /// From `cuda-csr`.
    Csr(CsrStats),
}

/// Where a solve's time went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolveStats {
    /// Converting the graph into the solver's own form (BK's arcs, a CSR copy of a grid, the
    /// upload to the GPU, kernel set-up).
    pub build: Duration,
    /// The solve itself, the canonical cut (and flows, when asked) included.
    pub solve: Duration,
    /// Checking the certificate (zero when not asked).
    pub verify: Duration,
    /// The GPU solver's own statistics (rounds, relabels, device memory).
    pub gpu: Option<GpuStats>,
}

/// The result of a solve.
#[derive(Clone, Debug)]
pub struct Solved {
    /// The canonical minimum cut and the flow value.
    pub cut: Cut,
    /// A maximum flow arc by arc, when asked for ([`SolveOptions::flows`]).
    pub flows: Option<Flows>,
    /// The optimality certificate, when checked ([`SolveOptions::verify`]).
    pub certificate: Option<Certificate>,
    /// Times and statistics.
    pub stats: SolveStats,
    /// The solver that ran, and why.
    pub ran: Choice,
}

impl Solved {
    /// A result of `solver` with no flows, certificate or statistics yet: what solvers start
    /// from.
    pub fn new(cut: Cut, solver: SolverKind) -> Self {
        Solved {
            cut,
            flows: None,
            certificate: None,
            stats: SolveStats::default(),
            ran: Choice::requested(solver),
        }
    }
}

/// A maximum-flow solver. Solvers take the graph by reference and never change it; a solver
/// value may keep buffers between solves (a GPU solver keeps its device memory), so hold one
/// across many solves of a batch.
///
/// [`run`](Solver::run) is the one entry point; the `solve_*` methods are shorthands for it that
/// keep only the cut.
pub trait Solver {
    /// Which solver this is (for `auto`, [`SolverKind::Auto`]; what ran is in [`Solved::ran`]).
    fn kind(&self) -> SolverKind;

    /// Solves `g`: the canonical cut, and with `flows` a maximum flow arc by arc (the
    /// push-relabel solvers run phase two for it). `stats.build` and `stats.solve` are filled
    /// in; `ran` names the solver that ran. Verification is the caller's (see [`MaxFlow`]).
    fn run(&mut self, g: GraphRef<'_>, flows: bool) -> Result<Solved>;

    /// The command-line name.
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Shorthand: the cut of a grid.
    fn solve_grid(&mut self, g: &GridGraph) -> Result<Cut> {
        Ok(self.run(g.into(), false)?.cut)
    }

    /// Shorthand: the cut of a general graph.
    fn solve_csr(&mut self, g: &CsrGraph) -> Result<Cut> {
        Ok(self.run(g.into(), false)?.cut)
    }

    /// Shorthand: the cut of either kind of graph.
    fn solve(&mut self, net: &Network) -> Result<Cut> {
        Ok(self.run(net.into(), false)?.cut)
    }

    /// Shorthand: the cut and a maximum flow arc by arc.
    fn solve_flows(&mut self, net: &Network) -> Result<(Cut, Flows)> {
        let s = self.run(net.into(), true)?;
        let flows = s.flows.ok_or_else(|| {
            Error::Unsupported(format!("the {} solver returned no flows", self.name()))
        })?;
        Ok((s.cut, flows))
    }
}

/// What to compute and with which solver.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveOptions {
    /// The solver (default `auto`).
    pub solver: SolverKind,
    /// How `auto` chooses.
    pub auto: AutoPolicy,
    /// Also compute a maximum flow arc by arc ([`Solved::flows`]); with `verify`, the flows are
    /// checked too ([`verify_flows`]).
    pub flows: bool,
    /// Check the certificate (cut capacity == flow value): a failure is an error. On by default.
    pub verify: bool,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            solver: SolverKind::Auto,
            auto: AutoPolicy::default(),
            flows: false,
            verify: true,
        }
    }
}

impl SolveOptions {
    /// The default options with `solver`.
    pub fn with_solver(solver: SolverKind) -> Self {
        SolveOptions {
            solver,
            ..Default::default()
        }
    }
}

/// A solver of [`SolverKind`] (for `auto`, one that chooses with `policy`).
pub fn solver_of(kind: SolverKind, policy: AutoPolicy) -> Box<dyn Solver + Send> {
    match kind {
        SolverKind::Auto => Box::new(super::Auto::new(policy)),
        SolverKind::Bk => Box::<Bk>::default(),
        SolverKind::Dinic => Box::new(Dinic),
        SolverKind::CudaGrid => Box::<CudaGrid>::default(),
        SolverKind::CudaCsr => Box::<CudaCsr>::default(),
    }
}

/// A solver held across many solves, with the options it was made for: each [`solve`]
/// (MaxFlow::solve) runs it, checks the certificate when asked, and reports what ran.
///
/// ```
/// use segcut::graph::{Connectivity, GridGraph};
/// use segcut::maxflow::{MaxFlow, SolveOptions, SolverKind};
/// let mut mf = MaxFlow::new(SolveOptions::with_solver(SolverKind::Bk));
/// for cap in 1..4 {
///     let mut g = GridGraph::new_2d(2, 1, Connectivity::N4).unwrap();
///     g.set_terminals(0, 5, 0);
///     g.set_terminals(1, 0, 5);
///     g.set_arc(0, 1, cap).unwrap();
///     let s = mf.solve(&g).unwrap();
///     assert_eq!(s.cut.flow, cap as i64);
///     assert_eq!(s.certificate.unwrap().cut_capacity, cap as i64);
/// }
/// ```
pub struct MaxFlow {
    opts: SolveOptions,
    solver: Box<dyn Solver + Send>,
}

impl MaxFlow {
    /// A solver for `opts`.
    pub fn new(opts: SolveOptions) -> Self {
        MaxFlow {
            solver: solver_of(opts.solver, opts.auto),
            opts,
        }
    }

    /// The options.
    pub fn options(&self) -> &SolveOptions {
        &self.opts
    }

    /// Solves `g` as the options say, checking the certificate (and the flows) when asked.
    pub fn solve<'a>(&mut self, g: impl Into<GraphRef<'a>>) -> Result<Solved> {
        let g = g.into();
        let mut solved = self.solver.run(g, self.opts.flows)?;
        if self.opts.verify {
            let t = Instant::now();
            solved.certificate = Some(verify(&g, &solved.cut)?);
            if let Some(flows) = &solved.flows {
                verify_flows(g, flows)?;
            }
            solved.stats.verify = t.elapsed();
        }
        Ok(solved)
    }
}

/// Solves `g` once as `opts` say: the one entry point for a single graph (hold a [`MaxFlow`] to
/// solve many).
pub fn solve<'a>(g: impl Into<GraphRef<'a>>, opts: &SolveOptions) -> Result<Solved> {
    MaxFlow::new(opts.clone()).solve(g)
}

/// Times `f` and stores the time as the result's solve time, minus the build time the solver
/// reported: the helper every solver's [`Solver::run`] uses.
pub(crate) fn timed(f: impl FnOnce() -> Result<Solved>) -> Result<Solved> {
    let t = Instant::now();
    let mut s = f()?;
    s.stats.solve = t.elapsed().saturating_sub(s.stats.build);
    Ok(s)
}
