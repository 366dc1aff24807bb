//! Waterloo-layout export of the first α-expansion pass: one `.max` file per label move
//! (`<name><k>.max`, source 1, sink 2, pixel `3 + x + W·y`, as the BVZ-* instances) with its
//! `.sol` (`c Flow value` / `s <flow>`), optionally packed into one `<name>.tbz2` archive, so that
//! `segcut maxflow DIR` (or the archive) replays them.
//!
//! ```no_run
//! use segcut::stereo::export::{export_first_pass, ExportOptions};
//! use segcut::stereo::{cost_volume, pair_weights, StereoOptions};
//! # let (left, right) = (segcut::io::Image::new([4, 4, 1], 1, vec![0.0; 16]), segcut::io::Image::new([4, 4, 1], 1, vec![0.0; 16]));
//! let opts = StereoOptions::default();
//! let cost = cost_volume(&left, &right, 0, 16, &opts.cost)?;
//! let model = pair_weights(&left, &opts)?;
//! let ex = ExportOptions { name: "mine-tsukuba".into(), tbz2: false };
//! let files = export_first_pass(&cost, &model, &opts.expansion, std::path::Path::new("out"), &ex)?;
//! let _line = format!("{} graphs, first flow {}", files.len(), files[0].flow);
//! # Ok::<(), segcut::Error>(())
//! ```

use super::{expand_observed, CostVolume, ExpansionOptions, PairwiseModel};
use crate::graph::Network;
use crate::io::{commit_all, dimacs, stage, AtomicFile};
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Options of [`export_first_pass`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportOptions {
    /// The instance name prefix (`BVZ-tsukuba` gives `BVZ-tsukuba0.max`, …).
    pub name: String,
    /// Also write `<name>.tbz2` holding every `.max` and `.sol` (instead of loose files).
    pub tbz2: bool,
}

/// One exported graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// The `.max` file (inside the archive when packed).
    pub path: PathBuf,
    /// The expansion label.
    pub label: u16,
    /// Its max-flow value, as written to the `.sol`.
    pub flow: i64,
}

/// The `.sol` text of a flow value.
pub fn sol_text(flow: i64) -> String {
    format!("c Flow value\ns {flow}\n")
}

/// Runs the first pass of α-expansion (as [`expand`](super::expand) with `max_passes = 1` does)
/// and writes each move's graph into `dir`. Every file is staged and put in place only when all
/// are complete.
pub fn export_first_pass(
    cost: &CostVolume,
    model: &PairwiseModel,
    opts: &ExpansionOptions,
    dir: &Path,
    ex: &ExportOptions,
) -> Result<Vec<Exported>> {
    if ex.name.is_empty() || ex.name.contains(['/', '\\']) {
        return Err(Error::Input {
            file: dir.display().to_string(),
            msg: format!("export name '{}' must be a plain file name", ex.name),
        });
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut first = opts.clone();
    first.max_passes = Some(1);
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut out = Vec::new();
    expand_observed(cost, model, &first, &mut |m, g| {
        let name = format!("{}{}", ex.name, m.label);
        let mut bytes = Vec::new();
        let comment = format!(
            "segcut stereo: alpha-expansion move to label {} (pass 1), {}x{} grid",
            m.label, cost.width, cost.height
        );
        dimacs::write_max(&mut bytes, &Network::Grid(g.clone()), &[&comment])
            .map_err(|e| Error::io(dir.join(format!("{name}.max")), e))?;
        // The .sol first: a reader of the archive then knows the value when the graph arrives.
        files.push((
            dir.join(format!("{name}.sol")),
            sol_text(m.flow).into_bytes(),
        ));
        files.push((dir.join(format!("{name}.max")), bytes));
        out.push(Exported {
            path: dir.join(format!("{name}.max")),
            label: m.label,
            flow: m.flow,
        });
        Ok(())
    })?;
    if ex.tbz2 {
        let path = dir.join(format!("{}.tbz2", ex.name));
        let mut file = AtomicFile::create(&path)?;
        {
            let io = |e| Error::io(&path, e);
            let enc = bzip2::write::BzEncoder::new(&mut file, bzip2::Compression::default());
            let mut tar = tar::Builder::new(enc);
            for (p, bytes) in &files {
                let mut h = tar::Header::new_gnu();
                h.set_size(bytes.len() as u64);
                h.set_mode(0o644);
                h.set_cksum();
                let member = format!(
                    "{}/{}",
                    ex.name,
                    p.file_name().unwrap_or_default().to_string_lossy()
                );
                tar.append_data(&mut h, member, bytes.as_slice())
                    .map_err(io)?;
            }
            tar.into_inner().map_err(io)?.finish().map_err(io)?;
        }
        file.sync().map_err(|e| Error::io(&path, e))?;
        file.commit()?;
    } else {
        let staged = files
            .iter()
            .map(|(p, b)| stage(p, b))
            .collect::<Result<Vec<_>>>()?;
        commit_all(staged)?;
    }
    Ok(out)
}
