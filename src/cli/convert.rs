//! `segcut convert IN OUT`: between `.max` (plain, `.gz`, `.bz2`) and the binary `.sgb`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;
use segcut::io::dimacs::{self, MaxInstance, ReadOptions};
use segcut::io::{output_format, AtomicFile, OutputPlan};
use std::io::Write;

#[derive(Parser, Debug)]
pub struct Args {
    /// The graph to read: `.max`, `.max.gz`, `.max.bz2` or `.sgb` (by content, whatever the name).
    input: PathBuf,
    /// Where to write it; the format follows the extension: `.sgb` for the binary format,
    /// `.max` / `.max.gz` / `.max.bz2` for DIMACS text. Written atomically (a temporary file
    /// renamed into place when complete).
    output: PathBuf,
}

/// Whether `p` names the binary format.
fn is_sgb(p: &Path) -> bool {
    p.to_string_lossy().to_ascii_lowercase().ends_with(".sgb")
}

pub fn run(args: Args) -> Result<ExitCode> {
    crate::fix_mmap_threshold();
    // The output is checked before reading: its name says the format written, and it is
    // not the input under any name (a link, a hard link, `dir/../g.max`).
    let mut plan = OutputPlan::default();
    plan.input(&args.input, "graph")?;
    plan.output_as(&args.output, "converted graph", &output_format::GRAPH)?;
    let mut instances: Vec<MaxInstance> = Vec::new();
    dimacs::read_instances(&args.input, &ReadOptions::default(), |inst| {
        instances.push(inst);
        Ok(())
    })
    .with_context(|| format!("while reading {}", args.input.display()))?;
    if instances.len() != 1 {
        bail!(
            "{}: holds {} instances; convert takes a file of one graph",
            args.input.display(),
            instances.len()
        );
    }
    let inst = &instances[0];
    if is_sgb(&args.output) {
        let mut file = AtomicFile::create(&args.output)?;
        dimacs::write_sgb(&mut file, inst).map_err(|e| segcut::Error::io(&args.output, e))?;
        file.commit()?;
    } else {
        let from = format!("converted by segcut from {}", args.input.display());
        dimacs::write_max_file(&args.output, &inst.network, &[&from])?;
    }
    writeln!(
        std::io::stdout(),
        "wrote {} ({})",
        args.output.display(),
        inst.layout
    )?;
    Ok(ExitCode::SUCCESS)
}
