//! Middlebury v2 scoring: the bad-pixel rate `|d − gt| > threshold` over the `nonocc`, `all` and
//! `disc` masks, and scenes laid out as in `shared/data/stereo` (`imL.png`, `imR.png`, `gt.png`,
//! `nonocc.png`, `all.png`, `disc.png`; a scene without the three masks is scored over its ground
//! truth less a [`MASK_BORDER`]-pixel border, see [`MaskSource`]).
//!
//! ```
//! use segcut::stereo::eval::bad_pixels;
//! let gt = [1.0, 2.0, 3.0, 4.0];
//! let est = [1.0, 3.5, 3.0, 0.0];
//! let mask = [true, true, true, false];
//! assert_eq!(bad_pixels(&est, &gt, &mask, 1.0).unwrap(), (1, 3));
//! ```

use crate::io::{load_disparity, load_image, Image};
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// `(bad, counted)`: pixels where `mask` is set and `gt` is known (finite) whose estimate is
/// off by more than `threshold` (an unknown estimate counts as bad), and how many were counted.
pub fn bad_pixels(
    est: &[f32],
    gt: &[f32],
    mask: &[bool],
    threshold: f32,
) -> Result<(usize, usize)> {
    if est.len() != gt.len() || mask.len() != gt.len() {
        return Err(Error::Graph(format!(
            "disparity map of {} pixels against ground truth of {} and a mask of {}",
            est.len(),
            gt.len(),
            mask.len()
        )));
    }
    let (mut bad, mut n) = (0, 0);
    for ((&e, &g), &m) in est.iter().zip(gt).zip(mask) {
        if m && g.is_finite() {
            n += 1;
            if !e.is_finite() || (e - g).abs() > threshold {
                bad += 1;
            }
        }
    }
    Ok((bad, n))
}

/// Bad-pixel rates in percent, with the pixel counts. A rate over no pixel (the `disc` rate of a
/// scene without masks) is NaN, never a made-up 0 %.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct StereoScore {
    /// Over non-occluded pixels.
    pub nonocc: f64,
    /// Over all pixels with ground truth.
    pub all: f64,
    /// Over non-occluded pixels near depth discontinuities.
    pub disc: f64,
    /// Pixels counted in `nonocc`, `all`, `disc`.
    pub counted: [usize; 3],
    /// The threshold used.
    pub threshold: f32,
}

/// A scene: the pair, the ground truth (NaN where unknown) and the three masks.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The scene's name (its folder's name).
    pub name: String,
    /// Left view.
    pub left: Image,
    /// Right view.
    pub right: Image,
    /// Ground-truth disparity per left pixel; NaN where unknown.
    pub gt: Vec<f32>,
    /// Evaluation masks: non-occluded, all, near discontinuities.
    pub masks: Masks,
    /// Where the masks come from: the scene's files, or (without them) the ground truth less a
    /// border.
    pub mask_source: MaskSource,
    /// The number of disparities the scene is run with (Middlebury's own: tsukuba 16, venus 20,
    /// …; else one more than the largest ground-truth disparity).
    pub num_disparities: usize,
}

/// The Middlebury v2 evaluation masks.
#[derive(Clone, Debug, Default)]
pub struct Masks {
    /// `nonocc.png` at 255.
    pub nonocc: Vec<bool>,
    /// `all.png` at 255.
    pub all: Vec<bool>,
    /// `disc.png` at 255.
    pub disc: Vec<bool>,
}

/// Refuses a bad-pixel threshold that is not a finite number ≥ 0: with NaN no pixel compares as
/// bad (a perfect 0 %), with a negative one every pixel does.
///
/// ```
/// use segcut::stereo::eval::check_threshold;
/// assert!(check_threshold(1.0).is_ok() && check_threshold(0.0).is_ok());
/// assert!(check_threshold(f32::NAN).is_err());
/// assert!(check_threshold(f32::INFINITY).is_err());
/// assert!(check_threshold(-0.5).is_err());
/// ```
pub fn check_threshold(threshold: f32) -> Result<()> {
    // Written so that NaN fails the test.
    if threshold.is_finite() && threshold >= 0.0 {
        return Ok(());
    }
    Err(crate::Error::Input {
        file: "stereo evaluation".into(),
        msg: format!(
            "the bad-pixel threshold must be a finite number of disparity units ≥ 0, got \
             {threshold}"
        ),
    })
}

/// The border, in pixels, left out of the masks made for a scene that has none
/// ([`Masks::from_ground_truth`]): the smaller of Middlebury's own borders (tsukuba 18, venus
/// 10), where the cost volume clamps matches to the image.
pub const MASK_BORDER: usize = 10;

/// Where a scene's masks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MaskSource {
    /// `nonocc.png`, `all.png` and `disc.png`.
    Files,
    /// No mask files: `nonocc` and `all` are every pixel with ground truth except a border of
    /// this many pixels; `disc` is empty (not scored).
    Border(usize),
}

impl MaskSource {
    /// One line for a report.
    ///
    /// ```
    /// use segcut::stereo::eval::MaskSource;
    /// assert!(MaskSource::Border(10).describe().contains("10-pixel border"));
    /// ```
    pub fn describe(self) -> String {
        match self {
            MaskSource::Files => "masks: nonocc.png, all.png, disc.png".into(),
            MaskSource::Border(b) => format!(
                "no mask files: nonocc and all = pixels with ground truth, {b}-pixel border \
                 excluded (occlusions not known, so nonocc = all); disc not scored"
            ),
        }
    }
}

impl Masks {
    /// Masks for a scene without mask files: `nonocc` and `all` set where the ground truth is
    /// known, except a `border`-pixel frame; `disc` empty.
    ///
    /// ```
    /// use segcut::stereo::eval::Masks;
    /// let gt = vec![1.0; 5 * 4];
    /// let m = Masks::from_ground_truth(&gt, 5, 4, 1);
    /// assert_eq!(m.all.iter().filter(|&&b| b).count(), 3 * 2);
    /// assert!(m.disc.iter().all(|&b| !b));
    /// ```
    pub fn from_ground_truth(gt: &[f32], width: usize, height: usize, border: usize) -> Masks {
        let inside = |p: usize| {
            let (x, y) = (p % width, p / width);
            x >= border && y >= border && x + border < width && y + border < height
        };
        let known: Vec<bool> = (0..gt.len())
            .map(|p| inside(p) && gt[p].is_finite())
            .collect();
        Masks {
            nonocc: known.clone(),
            disc: vec![false; known.len()],
            all: known,
        }
    }
}

/// An error when a saved map's disparities cannot be at the ground truth's scale: where both
/// are known (and the mask is set), the map's median disparity is off the ground truth's by more
/// than a factor of 1.6 either way, as a wrong PNG scale makes it (an estimate with the right
/// scale, however poor, has its median near the truth's). The message gives the scale that would
/// match.
///
/// ```
/// use segcut::stereo::eval::check_scale;
/// let gt = vec![10.0, 12.0, 14.0, 9.0];
/// let mask = vec![true; 4];
/// assert!(check_scale(&[10.0, 11.0, 14.0, 9.0], &gt, &mask, 16.0).is_ok());
/// let e = check_scale(&[20.0, 24.0, 28.0, 18.0], &gt, &mask, 8.0).unwrap_err();
/// assert!(e.to_string().contains("16"));
/// ```
pub fn check_scale(est: &[f32], gt: &[f32], mask: &[bool], scale: f32) -> Result<()> {
    let mut pairs: Vec<(f32, f32)> = est
        .iter()
        .zip(gt)
        .zip(mask)
        .filter(|((e, g), &m)| m && e.is_finite() && g.is_finite())
        .map(|((&e, &g), _)| (e, g))
        .collect();
    if pairs.is_empty() {
        return Ok(());
    }
    let median = |v: &mut Vec<(f32, f32)>, first: bool| {
        let key = |p: &(f32, f32)| if first { p.0 } else { p.1 };
        v.sort_by(|a, b| key(a).total_cmp(&key(b)));
        key(&v[v.len() / 2])
    };
    let me = median(&mut pairs, true);
    let mg = median(&mut pairs, false);
    if mg <= 0.0 {
        return Ok(());
    }
    let ratio = me / mg;
    if (1.0 / 1.6..=1.6).contains(&ratio) {
        return Ok(());
    }
    Err(Error::Graph(format!(
        "the map's median disparity {me} is {ratio:.2} times the ground truth's {mg}: its scale \
         (PNG value per disparity) cannot be {scale}; {} would match",
        scale * ratio
    )))
}

/// Scores `est` against ground truth and masks; the threshold must pass [`check_threshold`].
pub fn score(est: &[f32], gt: &[f32], masks: &Masks, threshold: f32) -> Result<StereoScore> {
    check_threshold(threshold)?;
    let rate = |(b, n): (usize, usize)| {
        if n == 0 {
            f64::NAN
        } else {
            100.0 * b as f64 / n as f64
        }
    };
    let no = bad_pixels(est, gt, &masks.nonocc, threshold)?;
    let al = bad_pixels(est, gt, &masks.all, threshold)?;
    let di = bad_pixels(est, gt, &masks.disc, threshold)?;
    Ok(StereoScore {
        nonocc: rate(no),
        all: rate(al),
        disc: rate(di),
        counted: [no.1, al.1, di.1],
        threshold,
    })
}

/// The ground-truth scale and disparity count of the Middlebury 2001/2003 scenes by name.
pub fn known_scene(name: &str) -> Option<(f32, usize)> {
    Some(match name.to_ascii_lowercase().as_str() {
        "tsukuba" => (16.0, 16),
        "venus" | "sawtooth" | "bull" | "poster" | "barn1" | "barn2" => (8.0, 20),
        "map" => (8.0, 30),
        "cones" | "teddy" => (4.0, 60),
        _ => return None,
    })
}

fn load_mask(path: &Path, n: usize) -> Result<Vec<bool>> {
    let img = load_image(path)?;
    if img.num_pixels() != n {
        return Err(Error::Input {
            file: path.display().to_string(),
            msg: format!("mask has {} pixels, the scene {n}", img.num_pixels()),
        });
    }
    Ok((0..n).map(|p| img.pixel(p)[0] >= 255.0).collect())
}

/// Loads a scene folder. `gt_scale`: the ground truth's multiplier; `None`: from
/// [`known_scene`] by the folder's name (an error for other names).
pub fn load_scene(dir: &Path, gt_scale: Option<f32>) -> Result<Scene> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let known = known_scene(&name);
    let scale = gt_scale
        .or(known.map(|k| k.0))
        .ok_or_else(|| Error::Input {
            file: dir.display().to_string(),
            msg: "unknown scene: give the ground truth's scale".into(),
        })?;
    let f = |n: &str| -> PathBuf { dir.join(n) };
    let left = load_image(&f("imL.png"))?;
    let right = load_image(&f("imR.png"))?;
    let (w, h, gt) = load_disparity(&f("gt.png"), scale)?;
    if [w, h, 1] != left.dims {
        return Err(Error::Input {
            file: f("gt.png").display().to_string(),
            msg: format!("ground truth is {w}x{h}, the left view {:?}", left.dims),
        });
    }
    let n = w * h;
    let files = ["nonocc.png", "all.png", "disc.png"];
    let (masks, mask_source) = if files.iter().all(|m| !f(m).exists()) {
        (
            Masks::from_ground_truth(&gt, w, h, MASK_BORDER),
            MaskSource::Border(MASK_BORDER),
        )
    } else {
        // Some but not all mask files is a broken scene: loading the missing one says which.
        let masks = Masks {
            nonocc: load_mask(&f(files[0]), n)?,
            all: load_mask(&f(files[1]), n)?,
            disc: load_mask(&f(files[2]), n)?,
        };
        (masks, MaskSource::Files)
    };
    let num_disparities = known.map(|k| k.1).unwrap_or_else(|| {
        gt.iter()
            .filter(|d| d.is_finite())
            .fold(0f32, |a, &b| a.max(b))
            .ceil() as usize
            + 1
    });
    Ok(Scene {
        name,
        left,
        right,
        gt,
        masks,
        mask_source,
        num_disparities,
    })
}
