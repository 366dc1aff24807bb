//! `segcut convert IN OUT`: between `.max` (plain, `.gz`, `.bz2`) and the binary `.sgb`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;
use segcut::io::dimacs::{self, MaxInstance, ReadOptions};
use segcut::io::AtomicFile;

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
    let ext_ok = {
        let name = args.output.to_string_lossy().to_ascii_lowercase();
        [".sgb", ".max", ".max.gz", ".max.bz2"]
            .iter()
            .any(|e| name.ends_with(e))
    };
    if !ext_ok {
        bail!(
            "{}: unknown output format: name it .sgb, .max, .max.gz or .max.bz2",
            args.output.display()
        );
    }
    let same = match (args.input.canonicalize(), args.output.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        bail!(
            "{}: the output is the input; write to another file",
            args.output.display()
        );
    }
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
    println!("wrote {} ({})", args.output.display(), inst.layout);
    Ok(ExitCode::SUCCESS)
}
