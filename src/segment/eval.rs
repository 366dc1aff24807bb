//! Scoring masks against ground truth, as in the interactive-segmentation literature.
//!
//! Ground truth is a grey image with exactly three values: 0 background, 255 foreground and 128
//! for pixels that are not scored (a thin band along object boundaries in the GrabCut benchmark).
//! Any other value is refused with an error naming the pixel, rather than thresholded: a
//! resampled or lossy-compressed truth would otherwise be scored silently wrong. RGB files whose
//! three channels are equal are read as grey.
//!
//! ```
//! use segcut::segment::eval::{score, GroundTruth};
//! let gt = GroundTruth { dims: [4, 1, 1], values: vec![0, 255, 255, 128] };
//! let s = score(&[false, true, false, true], &gt).unwrap();
//! assert_eq!(s.scored, 3);
//! assert!((s.error_rate - 100.0 / 3.0).abs() < 1e-9);
//! assert!((s.iou - 50.0).abs() < 1e-9);
//! ```

use crate::{Error, Result};
use std::path::Path;

/// The ground-truth value of an unscored pixel.
pub const UNSCORED: u8 = 128;

/// A ground-truth mask: one of 0 / 128 / 255 per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroundTruth {
    /// `[width, height, depth]`.
    pub dims: [usize; 3],
    /// 0 background, 255 foreground, 128 not scored; in pixel order.
    pub values: Vec<u8>,
}

/// How good a mask is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    /// Percentage of scored pixels labelled wrong.
    pub error_rate: f64,
    /// Foreground intersection over union of the scored pixels, in percent (100 when both are
    /// empty).
    pub iou: f64,
    /// Number of scored pixels (ground truth not 128).
    pub scored: usize,
}

/// Scores `mask` (true = foreground) against `gt`.
pub fn score(mask: &[bool], gt: &GroundTruth) -> Result<Score> {
    if mask.len() != gt.values.len() {
        return Err(Error::Input {
            file: "ground truth".into(),
            msg: format!(
                "mask has {} pixels but the ground truth {:?} has {}",
                mask.len(),
                gt.dims,
                gt.values.len()
            ),
        });
    }
    let (mut scored, mut wrong, mut inter, mut union) = (0usize, 0usize, 0usize, 0usize);
    for (&m, &g) in mask.iter().zip(&gt.values) {
        if g == UNSCORED {
            continue;
        }
        let truth = g == 255;
        scored += 1;
        wrong += (m != truth) as usize;
        inter += (m && truth) as usize;
        union += (m || truth) as usize;
    }
    let pct = |a: usize, b: usize, empty: f64| {
        if b == 0 {
            empty
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    Ok(Score {
        error_rate: pct(wrong, scored, 0.0),
        iou: pct(inter, union, 100.0),
        scored,
    })
}

/// Loads a ground-truth PNG (or any 8-bit image the `image` crate reads): grey, or RGB(A) with
/// R = G = B; values must be 0, 128 or 255.
pub fn load_ground_truth(path: &Path) -> Result<GroundTruth> {
    let file = path.display().to_string();
    let bad = |msg: String| Error::Input {
        file: file.clone(),
        msg,
    };
    let img = image::open(path).map_err(|e| bad(format!("cannot read ground truth: {e}")))?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    let values: Vec<u8> = match img {
        image::DynamicImage::ImageLuma8(g) => g.into_raw(),
        image::DynamicImage::ImageLumaA8(g) => g.into_raw().chunks_exact(2).map(|p| p[0]).collect(),
        image::DynamicImage::ImageRgb8(_) | image::DynamicImage::ImageRgba8(_) => {
            let rgba = img.to_rgba8();
            let mut out = Vec::with_capacity(w * h);
            for (i, p) in rgba.pixels().enumerate() {
                if p[0] != p[1] || p[1] != p[2] {
                    return Err(bad(format!(
                        "pixel (x={}, y={}) is ({}, {}, {}); colour ground truth must have R = G = B",
                        i % w,
                        i / w,
                        p[0],
                        p[1],
                        p[2]
                    )));
                }
                out.push(p[0]);
            }
            out
        }
        other => {
            return Err(bad(format!(
                "expected an 8-bit grey or RGB ground truth, got {:?}",
                other.color()
            )))
        }
    };
    if let Some(i) = values.iter().position(|&v| v != 0 && v != 128 && v != 255) {
        return Err(bad(format!(
            "pixel (x={}, y={}) has value {}; ground truth values are 0 (background), 128 \
             (not scored) and 255 (foreground)",
            i % w,
            i / w,
            values[i]
        )));
    }
    Ok(GroundTruth {
        dims: [w, h, 1],
        values,
    })
}
