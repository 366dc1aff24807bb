//! Benchmark suites: generated instances timed with several solvers, every result verified and
//! compared across solvers (flow value and canonical cut must agree exactly).
//!
//! ```
//! use segcut::bench::{run, BenchOptions, suite};
//! let instances = suite("tiny").unwrap();
//! let records = run(&instances, &["bk", "dinic"], &BenchOptions { runs: 1, ..Default::default() }, |_| {}).unwrap();
//! assert!(records.iter().all(|r| r.verified && r.agrees));
//! ```

use crate::gen::{self, InstanceSpec};
use crate::graph::{FlowNetwork, Network};
use crate::maxflow::{self, solver_by_name, verify, Cut};
use crate::{Error, Result};
use serde::Serialize;
use std::time::Instant;

/// The named suites.
pub const SUITES: &[&str] = &["tiny", "quick", "cpu", "standard"];

/// The instances of a named suite, as spec texts (see [`InstanceSpec`]'s `FromStr`).
///
/// - `tiny`: a few small grids and general graphs, for tests.
/// - `quick`: one of each connectivity at about 0.25 M nodes.
/// - `cpu`: 2D and 3D grids from 1 M to about 8 M nodes, for the CPU solvers.
/// - `standard`: the GPU suite: 2D 4- and 8-connected grids of 1, 4 and 16 Mpx, 3D 6-connected
///   128³, 256×256×119 and 512³, 26-connected 128³ and 256×256×119, each at scales c10 and c100.
pub fn suite(name: &str) -> Result<Vec<InstanceSpec>> {
    let specs: Vec<String> = match name {
        "tiny" => vec![
            "2d:24x24:n4:c10:s1".into(),
            "2d:20x20:n8:c100:s2".into(),
            "3d:8x8x8:n6:c10:s3".into(),
            "3d:6x6x6:n26:c10:s4".into(),
            "genrmf:a4:b6:s1".into(),
            "rlg:10x8:s1".into(),
        ],
        "quick" => vec![
            "2d:512x512:n4:c10:s1".into(),
            "2d:512x512:n8:c10:s1".into(),
            "3d:64x64x64:n6:c10:s1".into(),
            "3d:48x48x48:n26:c10:s1".into(),
        ],
        "cpu" => {
            let mut v = Vec::new();
            for c in ["c10", "c100"] {
                v.push(format!("2d:1024x1024:n4:{c}:s1"));
                v.push(format!("2d:2048x2048:n4:{c}:s1"));
                v.push(format!("2d:2896x2896:n4:{c}:s1"));
                v.push(format!("2d:1024x1024:n8:{c}:s1"));
                v.push(format!("2d:2048x2048:n8:{c}:s1"));
                v.push(format!("3d:128x128x128:n6:{c}:s1"));
                v.push(format!("3d:256x256x119:n6:{c}:s1"));
                v.push(format!("3d:256x256x128:n6:{c}:s1"));
                v.push(format!("3d:128x128x128:n26:{c}:s1"));
            }
            v
        }
        "standard" => {
            let mut v = Vec::new();
            for c in ["c10", "c100"] {
                for n in ["n4", "n8"] {
                    for s in [1024, 2048, 4096] {
                        v.push(format!("2d:{s}x{s}:{n}:{c}:s1"));
                    }
                }
                for d in ["128x128x128", "256x256x119", "512x512x512"] {
                    v.push(format!("3d:{d}:n6:{c}:s1"));
                }
                for d in ["128x128x128", "256x256x119"] {
                    v.push(format!("3d:{d}:n26:{c}:s1"));
                }
            }
            v
        }
        _ => {
            return Err(Error::Unsupported(format!(
                "unknown suite '{name}' (available: {})",
                SUITES.join(", ")
            )))
        }
    };
    specs.iter().map(|s| s.parse()).collect()
}

/// How to run a benchmark.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Timed runs per solver and instance; the median is reported.
    pub runs: usize,
    /// Instances with more nodes are skipped (reported as such).
    pub max_nodes: Option<usize>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            runs: 3,
            max_nodes: None,
        }
    }
}

/// One solver on one instance.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRecord {
    /// The instance's spec text.
    pub instance: String,
    /// Non-terminal nodes.
    pub nodes: usize,
    /// Arcs between non-terminal nodes.
    pub arcs: usize,
    /// Solver name.
    pub solver: String,
    /// Maximum flow value.
    pub flow: i64,
    /// Median solve time over the runs, milliseconds.
    pub solve_ms: f64,
    /// Every solve time, milliseconds.
    pub solve_ms_all: Vec<f64>,
    /// Median time to convert the graph into the solver's input form, milliseconds.
    pub build_ms: f64,
    /// Time to generate the instance, milliseconds.
    pub gen_ms: f64,
    /// The first solver's median time divided by this one's (a speed-up; 1 for the first solver).
    pub speedup_vs_first: f64,
    /// Every run's certificate held.
    pub verified: bool,
    /// Flow value and canonical cut equal to the first solver's in every run.
    pub agrees: bool,
}

/// Progress events, for a progress bar.
#[derive(Clone, Debug)]
pub enum Event<'a> {
    /// An instance is being generated.
    Generating(&'a str),
    /// An instance was skipped, with the reason.
    Skipped(&'a str, String),
    /// A solver run is starting.
    Solving(&'a str, &'a str, usize),
    /// A solver finished an instance.
    Done(&'a BenchRecord),
}

/// Runs `solvers` on every instance, `opts.runs` times each, verifying every result.
pub fn run(
    instances: &[InstanceSpec],
    solvers: &[&str],
    opts: &BenchOptions,
    mut progress: impl FnMut(Event<'_>),
) -> Result<Vec<BenchRecord>> {
    if solvers.is_empty() {
        return Err(Error::Unsupported("no solver named".into()));
    }
    let mut solvers: Vec<Box<dyn maxflow::Solver>> = solvers
        .iter()
        .map(|s| solver_by_name(s))
        .collect::<Result<_>>()?;
    let runs = opts.runs.max(1);
    let mut records = Vec::new();
    for spec in instances {
        let name = spec.to_string();
        let nodes = match spec {
            InstanceSpec::Vision(s) => s.num_nodes(),
            InstanceSpec::Genrmf(s) => s.num_nodes(),
            InstanceSpec::Washington(s) => s.num_nodes(),
        }
        .unwrap_or(usize::MAX);
        if let Some(max) = opts.max_nodes {
            if nodes > max {
                progress(Event::Skipped(
                    &name,
                    format!("{nodes} nodes > --max-nodes {max}"),
                ));
                continue;
            }
        }
        progress(Event::Generating(&name));
        let t = Instant::now();
        let net: Network = match gen::generate(spec) {
            Ok(net) => net,
            Err(e) => {
                progress(Event::Skipped(&name, e.to_string()));
                continue;
            }
        };
        let gen_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut reference: Option<(Cut, f64)> = None;
        for solver in solvers.iter_mut() {
            let mut times = Vec::with_capacity(runs);
            let mut builds = Vec::with_capacity(runs);
            let mut verified = true;
            let mut agrees = true;
            let mut flow = 0;
            for r in 0..runs {
                progress(Event::Solving(&name, solver.name(), r));
                let timed = maxflow::solve_timed(solver.as_mut(), &net)?;
                verified &= verify(&net, &timed.cut).is_ok();
                if let Some((cut, _)) = &reference {
                    agrees &= *cut == timed.cut;
                }
                flow = timed.cut.flow;
                times.push(timed.solve.as_secs_f64() * 1e3);
                builds.push(timed.build.as_secs_f64() * 1e3);
                if reference.is_none() && r + 1 == runs {
                    reference = Some((timed.cut, median(&times)));
                }
            }
            let solve_ms = median(&times);
            let first_ms = reference.as_ref().map_or(solve_ms, |r| r.1);
            let rec = BenchRecord {
                instance: name.clone(),
                nodes: net.num_nodes(),
                arcs: net.num_arcs(),
                solver: solver.name().to_string(),
                flow,
                solve_ms,
                solve_ms_all: times,
                build_ms: median(&builds),
                gen_ms,
                speedup_vs_first: first_ms / solve_ms.max(1e-9),
                verified,
                agrees,
            };
            progress(Event::Done(&rec));
            records.push(rec);
        }
    }
    Ok(records)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        0.0
    } else if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
    }
}
