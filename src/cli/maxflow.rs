//! `segcut maxflow`: solve `.max` files and archives, one row per instance.

use anyhow::{bail, Context, Result};
use segcut::graph::FlowNetwork;
use segcut::io::dimacs::{self, MaxInstance, ReadOptions};
use segcut::maxflow::{self, verify, MaxFlow, SolveOptions, SolverKind};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Instance files: .max, .max.gz, .max.bz2, or Waterloo archives (.tbz2, .tar.bz2, .tar.gz,
    /// .tgz, .tar) holding many .max files and their .sol values.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Max-flow solver (`auto`: the GPU for graphs of at least --gpu-min-nodes nodes when one
    /// is usable, else BK).
    #[arg(long, default_value = "auto", value_parser = super::solver_parser())]
    solver: SolverKind,
    /// With `--solver auto`: graphs with fewer nodes are solved on the CPU, where the GPU's
    /// fixed costs would dominate.
    #[arg(long, value_name = "NODES", default_value_t = maxflow::AUTO_MIN_GPU_NODES)]
    gpu_min_nodes: usize,
    /// Check each result's certificate (cut capacity == flow); a failure exits with status 1.
    #[arg(long)]
    verify: bool,
    /// Write the source-side node ids (DIMACS numbering, the source included), one per line. With
    /// several instances, OUT must be an existing directory and gets one `<instance>.cut` each.
    #[arg(long, value_name = "OUT")]
    cut: Option<PathBuf>,
    /// Also compute a maximum flow arc by arc (push-relabel solvers run their phase two for it),
    /// check it (capacities, conservation, value) and write it in the DIMACS solution format:
    /// `s VALUE`, then `f FROM TO FLOW` for each arc with flow, terminal arcs included, in the
    /// file's numbering (parallel arcs of the file appear merged, as they are solved). With
    /// several instances, OUT must be an existing directory and gets one `<instance>.flow` each.
    #[arg(long, value_name = "OUT")]
    flows: Option<PathBuf>,
    /// Print one JSON object per instance instead of the table.
    #[arg(long)]
    json: bool,
    /// Say how each instance was loaded (a grid from the hint, a grid inferred from the arc
    /// offsets, or a general graph and why) and which solver ran and why, on stderr.
    #[arg(long)]
    explain: bool,
}

/// One solved instance, as printed in the table and in `--json`.
#[derive(Serialize, Debug)]
struct Row {
    file: String,
    instance: String,
    /// The key of the instance's `.sol` value (`MaxInstance::key`), unescaped.
    #[serde(skip)]
    key: String,
    graph: String,
    /// How the reader laid the file out (see `MaxInstance::layout`).
    layout: String,
    /// The solver that ran (what `auto` resolved to).
    solver: String,
    /// Why that solver: requested, or `auto`'s reason (size, GPU, fallback).
    solver_reason: String,
    nodes: usize,
    arcs: usize,
    flow: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matches: Option<bool>,
    parse_ms: f64,
    build_ms: f64,
    solve_ms: f64,
    verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cut_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flows_file: Option<String>,
}

/// Where one instance's output goes: `arg` itself, or `<key>.EXT` in it when it is a
/// directory, where the key keeps an archive member's directories (`DIR/a/dup.cut` and
/// `DIR/b/dup.cut` for `a/dup.max` and `b/dup.max`; the directories are made). A plain file
/// takes one instance only. The target is checked against the run's plan (no input, no other
/// output, a name of the format written) before it is written.
fn output_path(
    arg: &Path,
    inst: &MaxInstance,
    (ext, role, format): (&str, &str, &segcut::io::Format),
    written: usize,
    plan: &mut segcut::io::OutputPlan,
) -> segcut::Result<PathBuf> {
    if !arg.is_dir() {
        // Planned before the first instance was read.
        return if written == 0 {
            Ok(arg.to_path_buf())
        } else {
            Err(segcut::Error::Unsupported(format!(
                "{} names a file but there is more than one instance; pass an existing directory",
                arg.display()
            )))
        };
    }
    // Only plain components of the member's path: an archive must not write outside DIR
    // (`..`, absolute paths).
    let mut target = arg.to_path_buf();
    let key = Path::new(inst.key());
    let parts: Vec<_> = key
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let Some((file, dirs)) = parts.split_last() else {
        return Err(segcut::Error::Unsupported(format!(
            "{}: no usable output name",
            inst.name
        )));
    };
    for d in dirs {
        target.push(d);
    }
    if !dirs.is_empty() {
        std::fs::create_dir_all(&target).map_err(|e| segcut::Error::io(&target, e))?;
    }
    let mut name = file.to_os_string();
    name.push(format!(".{ext}"));
    target.push(name);
    // Two instances of one name would write one file: the plan refuses the second.
    plan.output_as(&target, role, format)?;
    Ok(target)
}

/// Checks every output known before reading (a `--cut` or `--flows` file, not a folder)
/// against the inputs (the graph files and the `.sol` files read beside them) and each other.
fn plan_outputs(args: &Args) -> segcut::Result<segcut::io::OutputPlan> {
    use segcut::io::output_format::{CUT, FLOWS};
    let mut plan = segcut::io::OutputPlan::default();
    for f in &args.files {
        plan.input(f, "graph")?;
        let stem = dimacs::stem_of(&f.to_string_lossy()).to_string();
        let sol = f.with_file_name(format!("{stem}.sol"));
        if sol.is_file() {
            plan.input(&sol, "solution (.sol)")?;
        }
    }
    for (out, role, format) in [(&args.cut, "--cut", &CUT), (&args.flows, "--flows", &FLOWS)] {
        if let Some(p) = out.as_deref().filter(|p| !p.is_dir()) {
            plan.output_as(p, role, format)?;
        }
    }
    Ok(plan)
}

pub fn run(args: Args) -> Result<ExitCode> {
    crate::fix_mmap_threshold();
    let mut solver = MaxFlow::new(SolveOptions {
        solver: args.solver,
        auto: maxflow::AutoPolicy {
            min_gpu_nodes: args.gpu_min_nodes,
            ..Default::default()
        },
        flows: args.flows.is_some(),
        // Checked below, so that a failed certificate is a row that says so, not an error.
        verify: false,
        ..SolveOptions::default()
    });
    let mut written = Written {
        plan: plan_outputs(&args)?,
        ..Written::default()
    };
    let mut all_ok = true;
    let mut printed_header = false;
    let stdout = std::io::stdout();

    for path in &args.files {
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let progress = super::bar(
            size,
            "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec})",
        );
        progress.set_message(path.display().to_string());
        let opts = ReadOptions {
            progress: Some(std::sync::Arc::new(super::Bar(progress.clone()))),
        };
        let mut rows: Vec<Row> = Vec::new();
        let mut mark = Instant::now();
        let sols = dimacs::read_instances(path, &opts, |inst: MaxInstance| {
            // Time since the previous instance finished: reading and decompressing this one.
            let parse = mark.elapsed();
            let row = solve_one(&mut solver, &inst, parse, &args, &mut written)?;
            rows.push(row);
            mark = Instant::now();
            Ok(())
        })
        .with_context(|| format!("while solving {}", path.display()))?;
        progress.finish_and_clear();
        if rows.is_empty() {
            bail!("{}: no .max instance found", path.display());
        }
        // A .sol can come after its .max in an archive: match those now.
        for row in &mut rows {
            if row.expected.is_none() {
                row.expected = sols.get(&row.key).copied();
            }
            row.matches = row.expected.map(|e| e == row.flow);
            all_ok &= row.matches != Some(false) && row.verified != Some(false);
        }
        if args.explain {
            for row in &rows {
                eprintln!("{}: {}", row.instance, row.layout);
                eprintln!(
                    "{}: solver {}: {}",
                    row.instance, row.solver, row.solver_reason
                );
            }
        }
        let mut out = stdout.lock();
        if args.json {
            for row in &rows {
                writeln!(out, "{}", serde_json::to_string(row)?)?;
            }
        } else {
            if !printed_header {
                print_header(&mut out)?;
                printed_header = true;
            }
            for row in &rows {
                print_row(&mut out, row)?;
            }
            // The reasons are long for a column: each distinct one once, under its rows.
            let mut reasons: Vec<(&str, &str)> = Vec::new();
            for row in &rows {
                let r = (row.solver.as_str(), row.solver_reason.as_str());
                if !reasons.contains(&r) {
                    reasons.push(r);
                }
            }
            for (solver, reason) in reasons.iter().take(MAX_REASONS) {
                writeln!(out, "  solver {solver}: {reason}")?;
            }
            if reasons.len() > MAX_REASONS {
                writeln!(
                    out,
                    "  ({} more solver reasons in --json)",
                    reasons.len() - MAX_REASONS
                )?;
            }
            if rows.len() > 1 {
                let total: f64 = rows.iter().map(|r| r.solve_ms).sum();
                let matched = rows.iter().filter(|r| r.matches == Some(true)).count();
                let known = rows.iter().filter(|r| r.matches.is_some()).count();
                writeln!(
                    out,
                    "{}: {} instances, total solve {:.1} ms, {matched}/{known} match their .sol",
                    path.display(),
                    rows.len(),
                    total
                )?;
            }
        }
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("segcut: some results did not match their .sol value or failed verification");
        ExitCode::from(1)
    })
}

/// How many cut and flow files were written so far.
#[derive(Default)]
struct Written {
    cuts: usize,
    flows: usize,
    /// The inputs and every output so far: no output may be an input or written twice.
    plan: segcut::io::OutputPlan,
}

fn solve_one(
    solver: &mut MaxFlow,
    inst: &MaxInstance,
    parse: Duration,
    args: &Args,
    written: &mut Written,
) -> segcut::Result<Row> {
    // With --flows, phase two is part of the solve.
    let solved = solver.solve(&inst.network)?;
    if let Some(flows) = &solved.flows {
        // Never write a flow that is not one: the check is linear in the arcs.
        maxflow::verify_flows(&inst.network, flows)?;
    }
    let (timed, flows, choice) = (&solved, &solved.flows, &solved.ran);
    let verified = if args.verify {
        Some(verify(&inst.network, &timed.cut).is_ok())
    } else {
        None
    };
    let mut cut_file = None;
    if let Some(out) = &args.cut {
        let what = ("cut", "--cut", &segcut::io::output_format::CUT);
        let target = output_path(out, inst, what, written.cuts, &mut written.plan)?;
        segcut::io::write_atomic(&target, |w| write_cut(w, inst, &timed.cut))?;
        written.cuts += 1;
        cut_file = Some(target.display().to_string());
    }
    let mut flows_file = None;
    if let (Some(out), Some(flows)) = (&args.flows, &flows) {
        let what = ("flow", "--flows", &segcut::io::output_format::FLOWS);
        let target = output_path(out, inst, what, written.flows, &mut written.plan)?;
        segcut::io::write_atomic(&target, |w| {
            write_flows(w, inst, flows, choice.solver.name())
        })?;
        written.flows += 1;
        flows_file = Some(target.display().to_string());
    }
    Ok(Row {
        file: inst.name.clone(),
        instance: segcut::io::escape_text(inst.key()),
        key: inst.key().to_string(),
        graph: inst.network.kind(),
        layout: inst.layout.to_string(),
        solver: choice.solver.to_string(),
        solver_reason: match &choice.fallback {
            Some(why) => format!("{} ({why})", choice.reason),
            None => choice.reason.clone(),
        },
        nodes: inst.network.num_nodes(),
        arcs: inst.network.num_arcs(),
        flow: timed.cut.flow,
        expected: inst.expected_flow,
        matches: None,
        parse_ms: round3(super::ms(parse)),
        build_ms: round3(super::ms(timed.stats.build)),
        solve_ms: round3(super::ms(timed.stats.solve)),
        verified,
        cut_file,
        flows_file,
    })
}

/// The flows in the DIMACS max-flow solution format, in the file's own numbering: `s VALUE`,
/// then `f FROM TO FLOW` for every arc that carries flow (source arcs, arcs between nodes, sink
/// arcs, and the direct source → sink arcs as one line).
fn write_flows(
    w: &mut dyn Write,
    inst: &MaxInstance,
    f: &maxflow::Flows,
    solver: &str,
) -> std::io::Result<()> {
    writeln!(w, "c arc flows of {} (segcut, solver {solver})", inst.name)?;
    writeln!(w, "s {}", f.value)?;
    let (s, t) = (inst.source_id, inst.sink_id);
    for (v, &x) in f.source.iter().enumerate() {
        if x > 0 {
            writeln!(w, "f {s} {} {x}", inst.dimacs_id(v))?;
        }
    }
    match &inst.network {
        segcut::graph::Network::Grid(g) => {
            let n = g.num_nodes();
            for v in 0..n {
                for d in 0..g.connectivity().degree() {
                    let x = f.arcs[d * n + v];
                    if let (true, Some(u)) = (x > 0, g.neighbor(v, d)) {
                        writeln!(w, "f {} {} {x}", inst.dimacs_id(v), inst.dimacs_id(u))?;
                    }
                }
            }
        }
        segcut::graph::Network::Csr(g) => {
            for v in 0..g.num_nodes() {
                for a in g.arcs_of(v) {
                    let x = f.arcs[a];
                    if x > 0 {
                        let u = g.heads()[a] as usize;
                        writeln!(w, "f {} {} {x}", inst.dimacs_id(v), inst.dimacs_id(u))?;
                    }
                }
            }
            if g.constant_flow() > 0 {
                writeln!(w, "f {s} {t} {}", g.constant_flow())?;
            }
        }
    }
    for (v, &x) in f.sink.iter().enumerate() {
        if x > 0 {
            writeln!(w, "f {} {t} {x}", inst.dimacs_id(v))?;
        }
    }
    w.flush()
}

/// Source-side ids in the file's own numbering, ascending, the source terminal included.
fn write_cut(w: &mut dyn Write, inst: &MaxInstance, cut: &maxflow::Cut) -> std::io::Result<()> {
    let mut ids: Vec<u64> = cut.source_side().map(|v| inst.dimacs_id(v)).collect();
    ids.push(inst.source_id);
    ids.sort_unstable();
    for id in ids {
        writeln!(w, "{id}")?;
    }
    Ok(())
}

/// Distinct solver reasons printed under a file's rows.
const MAX_REASONS: usize = 4;

fn print_header(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<28} {:>9} {:>10} {:>11} {:>12} {:>12} {:>5} {:>9} {:>9} {:>9} {:>8}",
        "instance",
        "solver",
        "nodes",
        "arcs",
        "flow",
        "expected",
        "match",
        "parse ms",
        "build ms",
        "solve ms",
        "verified"
    )
}

fn print_row(out: &mut impl Write, r: &Row) -> std::io::Result<()> {
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let yes = |b: Option<bool>| match b {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    };
    writeln!(
        out,
        "{:<28} {:>9} {:>10} {:>11} {:>12} {:>12} {:>5} {:>9.1} {:>9.1} {:>9.1} {:>8}",
        r.instance,
        r.solver,
        r.nodes,
        r.arcs,
        r.flow,
        opt(r.expected),
        yes(r.matches),
        r.parse_ms,
        r.build_ms,
        r.solve_ms,
        yes(r.verified)
    )
}

/// Milliseconds to the microsecond, so JSON shows `0.285`, not `0.28476199999999996`.
fn round3(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}
