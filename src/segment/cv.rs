//! Choosing settings by cross-validation: every candidate setting segments every case (a photo
//! with one scribble set), the photos are split into `k` folds, and for each fold the candidate
//! with the lowest mean error on the *other* folds is scored on this one. The held-out numbers are
//! what a setting chosen this way would do on photos it never saw; the setting chosen on all
//! photos is the default.
//!
//! A photo's cases (both scribble sets) are always in the same fold, so no photo is ever both
//! chosen on and scored on. The folds depend only on the photos' names and `k` ([`folds`]), so
//! every candidate and every run sees the same split.
//!
//! ```
//! use segcut::segment::cv::{cross_validate, folds};
//! use segcut::segment::eval::Score;
//! // Two candidates, four photos of one case each: candidate 1 is better on every photo.
//! let s = |e: f64| Score { error_rate: e, iou: 100.0 - e, scored: 100 };
//! let scores = vec![vec![s(3.0), s(2.0)], vec![s(4.0), s(1.0)], vec![s(5.0), s(2.0)], vec![s(1.0), s(0.5)]];
//! let photos = ["a", "b", "c", "d"];
//! let fold_of = folds(&photos, 2);
//! let cv = cross_validate(&scores, &fold_of, 2);
//! assert_eq!(cv.chosen_all, 1);
//! assert!(cv.chosen_per_fold.iter().all(|&c| c == 1));
//! assert_eq!(cv.held_out[1].error_rate, 1.0);
//! ```

use super::eval::{load_ground_truth, score, GroundTruth, Score};
use super::pipeline::{segment, SegmentOptions};
use crate::io::{self, Image, SeedOptions, Seeds};
use crate::{Error, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One photo with one scribble set and its ground truth.
#[derive(Clone, Debug)]
pub struct Case {
    /// The dataset folder's name (`grabcut-bsds-dev`).
    pub dataset: String,
    /// The scribble folder's name (`scribbles-1`).
    pub scribbles: String,
    /// The photo's name without extension.
    pub photo: String,
    /// The photo.
    pub image: Image,
    /// Its seeds from this scribble set.
    pub seeds: Seeds,
    /// Its ground truth.
    pub truth: GroundTruth,
}

impl Case {
    /// `dataset/photo`: the unit of the folds.
    pub fn photo_key(&self) -> String {
        format!("{}/{}", self.dataset, self.photo)
    }
}

/// The photo file `DIR/images/<name>.jpg|.png|.bmp`.
fn image_file(dir: &Path, name: &str) -> Option<PathBuf> {
    ["jpg", "png", "bmp", "JPG"]
        .iter()
        .map(|e| dir.join("images").join(format!("{name}.{e}")))
        .find(|p| p.is_file())
}

/// Loads every photo of a dataset laid out as `DIR/images/<name>.jpg|png`, `DIR/gt/<name>.png`
/// and `DIR/<scribbles>/<name>-anno.png` (the layout of the GrabCut dev sets), once per
/// scribble folder. Photos are listed from `gt/`, sorted by name.
pub fn load_dataset(dir: &Path, scribbles: &[String]) -> Result<Vec<Case>> {
    let gt_dir = dir.join("gt");
    let listing = std::fs::read_dir(&gt_dir).map_err(|e| Error::Input {
        file: gt_dir.display().to_string(),
        msg: format!("cannot list the ground truth: {e}"),
    })?;
    let mut names: Vec<String> = listing
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            (p.extension()? == "png").then_some(stem)
        })
        .collect();
    names.sort();
    let dataset = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cases = Vec::new();
    for name in &names {
        let path = image_file(dir, name).ok_or_else(|| Error::Input {
            file: dir.join("images").display().to_string(),
            msg: format!("no image for the ground truth {name}.png"),
        })?;
        let image = io::load_image(&path)?;
        let truth = load_ground_truth(&gt_dir.join(format!("{name}.png")))?;
        if truth.dims != image.dims {
            return Err(Error::Input {
                file: gt_dir.join(format!("{name}.png")).display().to_string(),
                msg: format!(
                    "ground truth is {:?}, the image {:?}",
                    truth.dims, image.dims
                ),
            });
        }
        for set in scribbles {
            let seeds = io::load_seeds(
                &dir.join(set).join(format!("{name}-anno.png")),
                image.dims,
                &SeedOptions {
                    image_file: Some(path.clone()),
                    ..SeedOptions::default()
                },
            )?;
            cases.push(Case {
                dataset: dataset.clone(),
                scribbles: set.clone(),
                photo: name.clone(),
                image: image.clone(),
                seeds,
                truth: truth.clone(),
            });
        }
    }
    Ok(cases)
}

/// One candidate's result on one case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    /// Its score.
    pub score: Score,
    /// Wall time of the segmentation.
    pub time: Duration,
}

/// Segments every case with `opts` (cases in parallel) and scores the masks.
pub fn run_all(cases: &[Case], opts: &SegmentOptions) -> Result<Vec<Run>> {
    let masks = segment_all(cases, opts)?;
    cases
        .iter()
        .zip(masks)
        .map(|(c, (mask, time))| {
            Ok(Run {
                score: score(&mask, &c.truth)?,
                time,
            })
        })
        .collect()
}

/// Segments every case with `opts` (cases in parallel): the masks and wall times. Candidates
/// that differ only in [`SegmentOptions::post`] can share one call and apply
/// [`post_process`](super::post::post_process) to its masks.
pub fn segment_all(cases: &[Case], opts: &SegmentOptions) -> Result<Vec<(Vec<bool>, Duration)>> {
    cases
        .par_iter()
        .map(|c| {
            let t = Instant::now();
            let seg = segment(&c.image, &c.seeds, opts).map_err(|e| Error::Input {
                file: c.photo_key(),
                msg: format!("{} ({}): {e}", c.photo, c.scribbles),
            })?;
            Ok((seg.mask, t.elapsed()))
        })
        .collect()
}

/// The fold of each photo: photos sorted by name, then dealt out in a fixed pseudo-random order
/// (seeded [`crate::rng::Rng`]) round-robin into `k` folds, so folds differ in size by at most one
/// and mix the datasets. `photos` may repeat a name (one per case); the result is per entry.
pub fn folds<S: AsRef<str>>(photos: &[S], k: usize) -> Vec<usize> {
    let mut unique: Vec<&str> = photos.iter().map(|p| p.as_ref()).collect();
    unique.sort_unstable();
    unique.dedup();
    // Fisher–Yates with the project's deterministic generator.
    let mut rng = crate::rng::Rng::new(0x5e9c_f01d);
    for i in (1..unique.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        unique.swap(i, j);
    }
    let k = k.max(1);
    photos
        .iter()
        .map(|p| {
            let pos = unique
                .iter()
                .position(|u| *u == p.as_ref())
                .expect("every photo is listed");
            pos % k
        })
        .collect()
}

/// The outcome of [`cross_validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct CrossValidation {
    /// Per fold, the candidate with the lowest mean error on the other folds.
    pub chosen_per_fold: Vec<usize>,
    /// Per case, its score under the candidate its fold chose (chosen without it).
    pub held_out: Vec<Score>,
    /// The candidate with the lowest mean error on all cases: the default.
    pub chosen_all: usize,
}

/// The candidate with the lowest mean error over the cases `keep` selects (the first on ties).
fn best(scores: &[Vec<Score>], keep: impl Fn(usize) -> bool) -> usize {
    let candidates = scores.first().map_or(0, |r| r.len());
    let mean = |c: usize| {
        let (sum, n) = scores
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .fold((0.0, 0usize), |(s, n), (_, r)| (s + r[c].error_rate, n + 1));
        sum / n.max(1) as f64
    };
    (0..candidates)
        .min_by(|&a, &b| mean(a).total_cmp(&mean(b)).then(a.cmp(&b)))
        .unwrap_or(0)
}

/// Cross-validates: `scores[case][candidate]`, `fold_of[case]` in `0..k`.
pub fn cross_validate(scores: &[Vec<Score>], fold_of: &[usize], k: usize) -> CrossValidation {
    let chosen_per_fold: Vec<usize> = (0..k).map(|f| best(scores, |i| fold_of[i] != f)).collect();
    let held_out = scores
        .iter()
        .zip(fold_of)
        .map(|(row, &f)| row[chosen_per_fold[f]])
        .collect();
    CrossValidation {
        chosen_per_fold,
        held_out,
        chosen_all: best(scores, |_| true),
    }
}

/// Mean error and IoU of the scores `keep` selects, and how many there were.
pub fn mean_score(scores: &[Score], keep: impl Fn(usize) -> bool) -> (f64, f64, usize) {
    let (e, u, n) = scores
        .iter()
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .fold((0.0, 0.0, 0), |(e, u, n), (_, s)| {
            (e + s.error_rate, u + s.iou, n + 1)
        });
    let d = n.max(1) as f64;
    (e / d, u / d, n)
}
