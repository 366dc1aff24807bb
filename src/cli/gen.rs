//! `segcut gen`: deterministic instances written as `.max` files.

use anyhow::{Context, Result};
use segcut::gen::{self, GenrmfSpec, GridSpec, WashingtonSpec};
use segcut::graph::{FlowNetwork, Network};
use segcut::io::dimacs;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// A vision-like grid from a synthetic noisy image or volume, e.g. `2d:1024x1024:n4:c10:s1`
    /// or `3d:128x128x128:n6:c100:s7` (dimension, size, connectivity, capacity scale, seed).
    Grid {
        /// The grid's spec text.
        spec: GridSpec,
        #[command(flatten)]
        out: Output,
    },
    /// genrmf (first DIMACS challenge): `b` frames of a×a grids linked by random permutations.
    Genrmf {
        /// Frame side.
        #[arg(long)]
        a: usize,
        /// Number of frames.
        #[arg(long)]
        b: usize,
        /// Smallest inter-frame capacity.
        #[arg(long, default_value_t = 1)]
        c1: i32,
        /// Largest inter-frame capacity (in-frame arcs get c2·a²).
        #[arg(long, default_value_t = 1000)]
        c2: i32,
        /// Random seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        out: Output,
    },
    /// Washington random level graph: `levels` levels of `width` nodes, each node linked to
    /// `degree` random nodes of the next level.
    Washington {
        /// Nodes per level.
        #[arg(long)]
        width: usize,
        /// Number of levels.
        #[arg(long)]
        levels: usize,
        /// Arcs from each node to the next level.
        #[arg(long, default_value_t = 3)]
        degree: usize,
        /// Largest arc capacity (capacities are uniform in 1..=max-cap).
        #[arg(long, default_value_t = 10000)]
        max_cap: i32,
        /// Random seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        out: Output,
    },
}

#[derive(clap::Args, Debug)]
pub struct Output {
    /// Output file (`.max`, `.max.gz` or `.max.bz2`).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    path: PathBuf,
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    // The output is checked before generating: a name of the format written, a folder that
    // takes a new file.
    let out = match &cmd {
        Command::Grid { out, .. }
        | Command::Genrmf { out, .. }
        | Command::Washington { out, .. } => out.path.clone(),
    };
    segcut::io::OutputPlan::default().output_as(
        &out,
        "generated graph",
        &segcut::io::output_format::DIMACS,
    )?;
    let (net, out, what) = match cmd {
        Command::Grid { spec, out } => {
            let what = format!("segcut gen grid {spec}");
            (Network::Grid(gen::vision_grid(&spec)?), out, what)
        }
        Command::Genrmf {
            a,
            b,
            c1,
            c2,
            seed,
            out,
        } => {
            let what =
                format!("segcut gen genrmf --a {a} --b {b} --c1 {c1} --c2 {c2} --seed {seed}");
            let spec = GenrmfSpec { a, b, c1, c2, seed };
            (Network::Csr(gen::genrmf(&spec)?), out, what)
        }
        Command::Washington {
            width,
            levels,
            degree,
            max_cap,
            seed,
            out,
        } => {
            let what = format!(
                "segcut gen washington --width {width} --levels {levels} --degree {degree} --max-cap {max_cap} --seed {seed}"
            );
            let spec = WashingtonSpec {
                width,
                levels,
                degree,
                max_cap,
                seed,
            };
            (Network::Csr(gen::washington_rlg(&spec)?), out, what)
        }
    };
    dimacs::write_max_file(&out.path, &net, &[&what])
        .with_context(|| format!("writing {}", out.path.display()))?;
    eprintln!(
        "wrote {} ({}, {} nodes, {} arcs)",
        out.path.display(),
        net.kind(),
        net.num_nodes(),
        net.num_arcs()
    );
    Ok(ExitCode::SUCCESS)
}
