//! `segcut eval`: error rate and foreground IoU against ground truth, for saved masks or for a
//! whole dataset segmented on the spot.

use super::segment::EnergyArgs;
use anyhow::{bail, Context, Result};
use segcut::io::{self, SeedOptions};
use segcut::segment::eval::{load_ground_truth, score, Score};
use segcut::segment::segment;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Ground truth: one mask file, or a folder of `<id>.png` (0 background, 255 foreground,
    /// 128 not scored).
    #[arg(long, value_name = "GT")]
    gt: Option<PathBuf>,
    /// Masks to score (with --gt): files, or folders; a mask is matched to the ground truth whose id
    /// starts its file name.
    #[arg(value_name = "MASK")]
    masks: Vec<PathBuf>,
    /// Segment and score a dataset laid out as DIR/images/<id>.jpg|png, DIR/gt/<id>.png and
    /// DIR/<scribbles>/<id>-anno.png (the layout of grabcut-bsds-dev).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["gt", "masks"])]
    dataset: Option<PathBuf>,
    /// The dataset's seed folder(s), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "scribbles-1,scribbles-2")]
    scribbles: Vec<String>,
    /// Write the per-image scores as JSON.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Cross-validate a parameter grid over one or more datasets (the --dataset layout): every
    /// candidate segments every photo with every scribble set, photos are split into --folds
    /// folds, and each fold is scored with the candidate that is best on the others.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["gt", "masks", "dataset"])]
    cv: Vec<PathBuf>,
    /// Folds of the cross-validation (photos, both scribble sets together).
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Add the candidates of earlier `--cv ... --json` outputs (same datasets, so the same folds)
    /// to the cross-validation; alone (without --grid), nothing is segmented.
    #[arg(long, value_name = "JSON")]
    merge: Vec<PathBuf>,
    /// A grid axis as KEY=V1,V2,... (any segmentation option; V1|V2|... for values with commas);
    /// repeat for more axes (the candidates are all combinations).
    /// Keys: every flag above (docs/options.md), e.g. lambda, prior-contrast, initial (seeds,
    /// nearest, background, nearer-background, nearer-unexplained), initial-enclosure,
    /// stroke-check, drop-unseeded, fill-holes. Put the post-processing keys last: consecutive
    /// candidates that differ only in them share one segmentation.
    #[arg(long, value_name = "KEY=VALUES")]
    grid: Vec<String>,
    #[command(flatten)]
    energy: EnergyArgs,
}

#[derive(Serialize)]
struct Row {
    set: String,
    id: String,
    error_rate: f64,
    iou: f64,
    scored: usize,
    ms: f64,
}

pub fn run(args: Args) -> Result<ExitCode> {
    // Checked before the (long) evaluation, not after it; the merged files are inputs.
    if let Some(p) = &args.json {
        let mut plan = segcut::io::OutputPlan::default();
        for m in &args.merge {
            plan.input(m, "--merge")?;
        }
        plan.output_as(p, "--json", &segcut::io::output_format::JSON)?;
    }
    if !args.cv.is_empty() {
        return super::cv::run(
            &args.cv,
            &args.scribbles,
            args.folds,
            &args.grid,
            &args.merge,
            &args.energy,
            args.json.as_deref(),
        );
    }
    let rows = if let Some(dir) = &args.dataset {
        dataset(dir, &args)?
    } else if let Some(gt) = &args.gt {
        masks(gt, &args.masks)?
    } else {
        bail!("give --gt GT with masks to score, or --dataset DIR to segment and score");
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<14} {:<10} {:>8} {:>8} {:>9}",
        "set", "image", "error %", "IoU %", "ms"
    )?;
    let mut sets: Vec<&str> = rows.iter().map(|r| r.set.as_str()).collect();
    sets.dedup();
    for set in sets {
        let these: Vec<&Row> = rows.iter().filter(|r| r.set == set).collect();
        for r in &these {
            writeln!(
                out,
                "{:<14} {:<10} {:>8.2} {:>8.2} {:>9.1}",
                r.set, r.id, r.error_rate, r.iou, r.ms
            )?;
        }
        let n = these.len() as f64;
        writeln!(
            out,
            "{:<14} {:<10} {:>8.2} {:>8.2}",
            set,
            "MEAN",
            these.iter().map(|r| r.error_rate).sum::<f64>() / n,
            these.iter().map(|r| r.iou).sum::<f64>() / n
        )?;
    }
    if let Some(p) = &args.json {
        let text = serde_json::to_string_pretty(&rows)?;
        io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    Ok(v)
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn masks(gt: &Path, masks: &[PathBuf]) -> Result<Vec<Row>> {
    if masks.is_empty() {
        bail!("no masks given to score against {}", gt.display());
    }
    let mut mask_files = Vec::new();
    for m in masks {
        if m.is_dir() {
            mask_files.extend(files_in(m)?);
        } else {
            mask_files.push(m.clone());
        }
    }
    let gts = if gt.is_dir() {
        files_in(gt)?
    } else {
        vec![gt.to_path_buf()]
    };
    let mut rows = Vec::new();
    for m in &mask_files {
        let name = stem(m);
        // The longest ground-truth id that starts the mask's name (`12-mask.png` ↔ `12.png`).
        let g = if gts.len() == 1 {
            gts[0].clone()
        } else {
            match gts
                .iter()
                .filter(|g| name.starts_with(&stem(g)))
                .max_by_key(|g| stem(g).len())
            {
                Some(g) => g.clone(),
                None => bail!(
                    "{}: no ground truth in {} matches its name",
                    m.display(),
                    gt.display()
                ),
            }
        };
        let truth = load_ground_truth(&g)?;
        let mask = load_mask(m, truth.dims)?;
        let s = score(&mask, &truth).with_context(|| format!("scoring {}", m.display()))?;
        rows.push(row("masks", &name, s, 0.0));
    }
    Ok(rows)
}

/// A saved mask: any value above half the range is foreground.
fn load_mask(path: &Path, dims: [usize; 3]) -> Result<Vec<bool>> {
    let img = io::load_image(path)?;
    if img.dims != dims {
        bail!(
            "{}: mask is {:?} but the ground truth is {:?}",
            path.display(),
            img.dims,
            dims
        );
    }
    let max = img.data.iter().fold(1.0f32, |m, &v| m.max(v));
    let half = if max > 255.0 {
        32767.5
    } else if max > 1.0 {
        127.5
    } else {
        0.5
    };
    Ok((0..img.num_pixels())
        .map(|i| img.pixel(i)[0] > half)
        .collect())
}

fn row(set: &str, id: &str, s: Score, ms: f64) -> Row {
    Row {
        set: set.to_string(),
        id: id.to_string(),
        error_rate: s.error_rate,
        iou: s.iou,
        scored: s.scored,
        ms,
    }
}

fn dataset(dir: &Path, args: &Args) -> Result<Vec<Row>> {
    let opts = args.energy.options()?;
    let images = files_in(&dir.join("images"))?;
    if images.is_empty() {
        bail!("{}: no images", dir.join("images").display());
    }
    let mut rows = Vec::new();
    for set in &args.scribbles {
        for img_path in &images {
            let id = stem(img_path);
            let seeds_path = dir.join(set).join(format!("{id}-anno.png"));
            let gt_path = dir.join("gt").join(format!("{id}.png"));
            let t = std::time::Instant::now();
            let image = io::load_image(img_path)?;
            let seeds = io::load_seeds(
                &seeds_path,
                image.dims,
                &SeedOptions {
                    image_file: Some(img_path.clone()),
                    ..SeedOptions::default()
                },
            )?;
            let seg = segment(&image, &seeds, &opts)
                .with_context(|| format!("segmenting {}", img_path.display()))?;
            let ms = super::ms(t.elapsed());
            let truth = load_ground_truth(&gt_path)?;
            rows.push(row(set, &id, score(&seg.mask, &truth)?, ms));
        }
    }
    Ok(rows)
}
