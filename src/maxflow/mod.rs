//! Max-flow solvers, the canonical minimum cut they all return, and its certificate.
//!
//! Every solver returns the same [`Cut`]: its sink side is exactly the set of nodes that can reach
//! the sink in the final residual graph. That set is the same for every maximum flow (it is the
//! smallest sink side of any minimum cut), so masks and cut files are bit-identical whichever
//! solver produced them. [`verify`] then proves a result optimal: the capacity of the returned cut,
//! computed from the original capacities, must equal the flow value (max-flow/min-cut duality).

pub mod bk;
pub mod cuda;
mod flows;
pub mod reference;

pub use bk::Bk;
pub use flows::{verify_flows, Flows};

use crate::graph::{Cap, CsrGraph, Flow, FlowNetwork, GridGraph, Network};
use crate::{Error, Result};

/// A minimum cut and the maximum flow value that proves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The maximum flow value (including direct source → sink arcs).
    pub flow: Flow,
    /// `sink_side[v]` is true when node `v` can reach the sink in the final residual graph.
    pub sink_side: Vec<bool>,
}

impl Cut {
    /// Whether node `v` is on the sink side.
    pub fn is_sink(&self, v: usize) -> bool {
        self.sink_side[v]
    }

    /// The source-side nodes, in increasing order.
    pub fn source_side(&self) -> impl Iterator<Item = usize> + '_ {
        self.sink_side
            .iter()
            .enumerate()
            .filter(|(_, &s)| !s)
            .map(|(v, _)| v)
    }

    /// How many nodes are on the sink side.
    pub fn num_sink_side(&self) -> usize {
        self.sink_side.iter().filter(|&&s| s).count()
    }
}

/// A maximum-flow solver. Solvers take the graph by reference and never change it.
pub trait Solver {
    /// The name used on the command line (`bk`, `dinic`, ...).
    fn name(&self) -> &'static str;

    /// Solves a general graph.
    fn solve_csr(&mut self, g: &CsrGraph) -> Result<Cut>;

    /// Solves a general graph like [`solve_csr`](Self::solve_csr) and also reports how long
    /// building the solver's own input from it took (zero for solvers that work on the CSR as it
    /// is), so that [`solve_timed`] can report it as build time rather than solve time.
    fn solve_csr_timed(&mut self, g: &CsrGraph) -> Result<(Cut, std::time::Duration)> {
        Ok((self.solve_csr(g)?, std::time::Duration::ZERO))
    }

    /// Solves a grid; solvers without a grid path solve its CSR form.
    fn solve_grid(&mut self, g: &GridGraph) -> Result<Cut> {
        self.solve_csr(&g.to_csr()?)
    }

    /// Solves a grid like [`solve_grid`](Self::solve_grid) and also reports how long building the
    /// solver's own input took (for solvers without a grid path, the CSR conversion), so that
    /// [`solve_timed`] can report it as build time rather than solve time.
    fn solve_grid_timed(&mut self, g: &GridGraph) -> Result<(Cut, std::time::Duration)> {
        let t = std::time::Instant::now();
        let csr = g.to_csr()?;
        let build = t.elapsed();
        Ok((self.solve_csr(&csr)?, build))
    }

    /// Solves `net` and returns a maximum flow arc by arc with the cut (see [`Flows`]). The
    /// push-relabel solvers run phase two for this (returning the excess of phase one to the
    /// source), which the cut alone does not need; solvers that cannot give flows say so.
    fn solve_flows(&mut self, net: &Network) -> Result<(Cut, Flows)> {
        self.solve_flows_timed(net)
            .map(|(cut, flows, _)| (cut, flows))
    }

    /// [`solve_flows`](Self::solve_flows), also reporting the time spent building the solver's
    /// input (conversion, upload), as [`solve_timed`] does. Solvers implement this one.
    fn solve_flows_timed(&mut self, net: &Network) -> Result<(Cut, Flows, std::time::Duration)> {
        let _ = net;
        Err(Error::Unsupported(format!(
            "the {} solver does not compute arc flows",
            self.name()
        )))
    }

    /// For a solver that delegates (`auto`): the solver its last solve ran, and why. Other
    /// solvers return `None`: they are what ran.
    fn last_choice(&self) -> Option<Choice> {
        None
    }

    /// Solves either kind of graph.
    fn solve(&mut self, net: &Network) -> Result<Cut> {
        match net {
            Network::Grid(g) => self.solve_grid(g),
            Network::Csr(g) => self.solve_csr(g),
        }
    }
}

/// A solve with its time split into preparing the solver's input and solving.
#[derive(Clone, Debug)]
pub struct Timed {
    /// The result.
    pub cut: Cut,
    /// Converting the graph into the form the solver works on (e.g. grid → CSR for BK).
    pub build: std::time::Duration,
    /// The solve itself, canonical cut included.
    pub solve: std::time::Duration,
}

/// Solves `net` with `solver`, timing the input conversion and the solve separately.
pub fn solve_timed(solver: &mut dyn Solver, net: &Network) -> Result<Timed> {
    let t0 = std::time::Instant::now();
    let (cut, build) = match net {
        Network::Grid(g) => solver.solve_grid_timed(g)?,
        Network::Csr(g) => solver.solve_csr_timed(g)?,
    };
    Ok(Timed {
        cut,
        build,
        solve: t0.elapsed().saturating_sub(build),
    })
}

/// The names accepted by [`solver_by_name`].
pub const SOLVER_NAMES: &[&str] = &["auto", "bk", "dinic", "cuda-grid", "cuda-csr"];

/// A solver by its command-line name. `auto` picks the best solver available on this machine
/// (`cuda-grid` for grids when a GPU is usable, BK otherwise; see [`cuda::Auto`]).
pub fn solver_by_name(name: &str) -> Result<Box<dyn Solver>> {
    match name {
        "auto" => Ok(Box::new(cuda::Auto::default())),
        "bk" => Ok(Box::new(bk::Bk::default())),
        "cuda-grid" => Ok(Box::new(cuda::CudaGrid::default())),
        "cuda-csr" => Ok(Box::new(cuda::CudaCsr::default())),
        "dinic" => Ok(Box::new(reference::Dinic)),
        _ => Err(Error::Unsupported(format!(
            "unknown solver '{name}' (available: {})",
            SOLVER_NAMES.join(", ")
        ))),
    }
}

/// Graphs with fewer nodes than this are solved by BK even when `auto` could use a GPU: below it
/// the GPU's fixed costs (uploads, launches, read-backs) outweigh its speed. Measured with
/// `segcut bench --suite crossover` on an H100 with a 16-core Xeon (total time, build + solve, per
/// solve in a running process): the GPU solvers draw level with BK at about 4 K nodes and win from
/// 16 K (256² grid: 3.4 ms against 15.4; 65 K-node sparse graph: 15 ms against 163). The threshold
/// sits higher, at 2^16, because a process's first GPU solve also pays about 0.3 s of start-up
/// (CUDA context, kernel module from the disk cache), which a one-off small solve never wins back.
/// Overridden at run time by the environment variable `SEGCUT_AUTO_MIN_GPU_NODES`.
pub const AUTO_MIN_GPU_NODES: usize = 1 << 16;

/// The environment variable that overrides [`AUTO_MIN_GPU_NODES`].
pub const AUTO_MIN_GPU_NODES_ENV: &str = "SEGCUT_AUTO_MIN_GPU_NODES";

/// The GPU threshold in force: `SEGCUT_AUTO_MIN_GPU_NODES` when it holds a number, else
/// [`AUTO_MIN_GPU_NODES`]. A value that is not a number is ignored (with one note on stderr).
pub fn auto_min_gpu_nodes() -> usize {
    static VALUE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *VALUE.get_or_init(|| match std::env::var(AUTO_MIN_GPU_NODES_ENV) {
        Ok(text) => text.trim().parse().unwrap_or_else(|_| {
            eprintln!(
                "segcut: {AUTO_MIN_GPU_NODES_ENV}='{text}' is not a node count; using \
                 {AUTO_MIN_GPU_NODES}"
            );
            AUTO_MIN_GPU_NODES
        }),
        Err(_) => AUTO_MIN_GPU_NODES,
    })
}

/// Which solver runs and why: what [`choose_solver`] decides, and what `segcut maxflow` and
/// `segcut segment --stats-json` report (`solver`, `solver_reason`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The solver that runs: a name of [`SOLVER_NAMES`] other than `auto` (`unknown` for a
    /// requested name that [`solver_by_name`] would reject).
    pub solver: &'static str,
    /// One line for the user, e.g. `auto: grid of 4194304 nodes and a GPU (NVIDIA H100)`.
    pub reason: String,
}

/// The shape of a graph as far as the solver choice cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphSize {
    /// A [`Network::Grid`] (else a general graph).
    pub grid: bool,
    /// Non-terminal nodes.
    pub nodes: usize,
    /// Arcs between non-terminal nodes.
    pub arcs: usize,
}

impl GraphSize {
    /// The size of `net`.
    pub fn of(net: &Network) -> Self {
        use crate::graph::FlowNetwork;
        GraphSize {
            grid: matches!(net, Network::Grid(_)),
            nodes: net.num_nodes(),
            arcs: net.num_arcs(),
        }
    }
}

/// The solver that `requested` runs on `net` on this machine, and why.
///
/// A named solver is itself. `auto` takes BK for graphs under [`auto_min_gpu_nodes`] nodes
/// (without touching the GPU), else `cuda-grid` for grids and `cuda-csr` for general graphs when
/// a GPU is usable, else BK. When the GPU solver then declines the graph (out of memory, or
/// `cuda-csr` not available yet), [`cuda::Auto`] solves with BK and says so; its
/// [`Solver::last_choice`] reports what actually ran.
///
/// ```
/// use segcut::graph::{GridGraph, Connectivity, Network};
/// use segcut::maxflow::choose_solver;
/// let net = Network::Grid(GridGraph::new_2d(8, 8, Connectivity::N4).unwrap());
/// let c = choose_solver("auto", &net);
/// assert_eq!(c.solver, "bk"); // 64 nodes: GPU fixed costs would dominate
/// assert!(c.reason.contains("64 nodes"));
/// assert_eq!(choose_solver("dinic", &net).solver, "dinic");
/// ```
pub fn choose_solver(requested: &str, net: &Network) -> Choice {
    choose_solver_for(
        requested,
        GraphSize::of(net),
        auto_min_gpu_nodes(),
        crate::cuda::gpu_unavailable_reason,
    )
}

/// [`choose_solver`] as a pure function of the graph's size, the GPU threshold and the GPU's
/// state: `gpu_unavailable` says why no GPU is usable (`None` when one is) and is only called
/// for `auto` on graphs at or above `min_gpu_nodes`, so small graphs never initialise CUDA.
///
/// ```
/// use segcut::maxflow::{choose_solver_for, GraphSize};
/// let big = GraphSize { grid: false, nodes: 1 << 20, arcs: 1 << 22 };
/// assert_eq!(choose_solver_for("auto", big, 1000, || None).solver, "cuda-csr");
/// let no_gpu = choose_solver_for("auto", big, 1000, || Some("no CUDA driver".into()));
/// assert_eq!(no_gpu.solver, "bk");
/// assert!(no_gpu.reason.contains("no CUDA driver"));
/// ```
pub fn choose_solver_for(
    requested: &str,
    size: GraphSize,
    min_gpu_nodes: usize,
    gpu_unavailable: impl FnOnce() -> Option<String>,
) -> Choice {
    if requested != "auto" {
        // `cuda-csr` is what `auto` itself may pick, so it is known here in any case.
        let solver = SOLVER_NAMES
            .iter()
            .chain(&["cuda-csr"])
            .copied()
            .find(|&s| s == requested)
            .unwrap_or("unknown");
        return Choice {
            solver,
            reason: format!("requested with --solver {requested}"),
        };
    }
    let what = if size.grid { "grid" } else { "general graph" };
    let nodes = size.nodes;
    if nodes < min_gpu_nodes {
        return Choice {
            solver: "bk",
            reason: format!(
                "auto: {what} of {nodes} nodes, under the GPU threshold of {min_gpu_nodes} \
                 ({AUTO_MIN_GPU_NODES_ENV}), where GPU fixed costs dominate"
            ),
        };
    }
    if let Some(why) = gpu_unavailable() {
        return Choice {
            solver: "bk",
            reason: format!("auto: {what} of {nodes} nodes, no usable GPU ({why})"),
        };
    }
    let solver = if size.grid { "cuda-grid" } else { "cuda-csr" };
    Choice {
        solver,
        reason: format!(
            "auto: {what} of {nodes} nodes (threshold {min_gpu_nodes}) and a usable GPU"
        ),
    }
}

/// The solver that `requested` runs on this machine for a large grid (`grid = true`) or a large
/// general graph; see [`choose_solver`], which also knows the graph's size.
pub fn resolved_solver_name(requested: &str, grid: bool) -> &str {
    let size = GraphSize {
        grid,
        nodes: usize::MAX,
        arcs: 0,
    };
    match choose_solver_for(
        requested,
        size,
        auto_min_gpu_nodes(),
        crate::cuda::gpu_unavailable_reason,
    )
    .solver
    {
        "unknown" => requested,
        s => s,
    }
}

/// Proof of optimality: a flow value and a cut of the same capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// The flow value reported by the solver.
    pub flow: Flow,
    /// The capacity of the returned cut, from the original capacities.
    pub cut_capacity: Flow,
}

/// Checks that `cut`'s capacity in `g` equals its flow value, which proves both optimal.
///
/// ```
/// use segcut::graph::{CsrBuilder, Vertex};
/// use segcut::maxflow::{verify, Cut};
/// let mut b = CsrBuilder::new(1).unwrap();
/// b.add_terminals(0, 3, 2).unwrap();
/// let g = b.build().unwrap();
/// let good = Cut { flow: 2, sink_side: vec![false] };
/// assert!(verify(&g, &good).is_ok());
/// let bad = Cut { flow: 2, sink_side: vec![true] }; // cuts the source arc, capacity 3
/// assert!(verify(&g, &bad).is_err());
/// ```
pub fn verify(g: &impl FlowNetwork, cut: &Cut) -> Result<Certificate> {
    if cut.sink_side.len() != g.num_nodes() {
        return Err(Error::Graph(format!(
            "cut has {} nodes but the graph has {}",
            cut.sink_side.len(),
            g.num_nodes()
        )));
    }
    let cap = g.cut_capacity(&cut.sink_side);
    let cut_capacity = Flow::try_from(cap).unwrap_or(Flow::MAX);
    if cap != cut.flow as i128 {
        return Err(Error::Certificate {
            flow: cut.flow,
            cut_capacity,
        });
    }
    Ok(Certificate {
        flow: cut.flow,
        cut_capacity,
    })
}

/// The canonical sink side from a final residual graph in CSR layout: a reverse breadth-first
/// search from every node with residual capacity to the sink (`reaches_sink[v]`), following arcs
/// `u → w` that still have residual capacity (`rcap[sister[a]] > 0` for arc `a = w → u`).
///
/// `reaches_sink` is taken as the initial marking and returned extended.
pub fn sink_reachable(
    first: &[u32],
    head: &[u32],
    sister: &[u32],
    rcap: &[Cap],
    mut reaches_sink: Vec<bool>,
) -> Vec<bool> {
    let mut queue: Vec<u32> = (0..reaches_sink.len() as u32)
        .filter(|&v| reaches_sink[v as usize])
        .collect();
    let mut i = 0;
    while i < queue.len() {
        let w = queue[i] as usize;
        i += 1;
        for a in first[w] as usize..first[w + 1] as usize {
            let u = head[a] as usize;
            if !reaches_sink[u] && rcap[sister[a] as usize] > 0 {
                reaches_sink[u] = true;
                queue.push(u as u32);
            }
        }
    }
    reaches_sink
}
