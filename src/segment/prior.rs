//! A prior on the unlabelled pixels from the strokes' geometry: a pixel geodesically closer to
//! the foreground strokes than to the background strokes is more likely foreground, and the
//! other way round, whatever the colour models say.
//!
//! Colour models fitted on strokes see only the colours under the strokes. A region whose colour
//! is in neither stroke (a sky, a bank of earth) is then labelled by whichever model's tail happens
//! to be heavier there, often the foreground's. The strokes also say *where* each class is: the
//! user draws the foreground strokes inside the object and the background strokes around it. This
//! module turns that into a per-pixel log-odds added to the data term (the geodesic unary of
//! Price, Morse & Cohen, "Geodesic graph cut for interactive image segmentation", CVPR 2010, in a
//! scale-free form):
//!
//! ```text
//! d_F(p), d_B(p)  geodesic distance from p to the nearest hard foreground / background seed
//! ℓ(p)            = γ · (d_B(p) − d_F(p)) / (d_B(p) + d_F(p) + L)        ∈ [−γ, γ] nats
//! L               = s · (the image's diagonal in pixels)
//! D_p(fg) += max(0, −ℓ(p)),   D_p(bg) += max(0, ℓ(p))
//! ```
//!
//! With `L = 0`, `ℓ` is `+γ` on a foreground stroke, `−γ` on a background one and 0 half way.
//! Being a ratio of distances it does not depend on the image's size or resolution. The softness
//! `L` keeps the prior gentle where both strokes are near (dense scribbles, where the colour
//! models and the contrast know where the boundary is, and a pure ratio would snap it to the half-way
//! line between the strokes), while far from both strokes the ratio takes over. The prior is added
//! in its net form (the likelier label pays nothing), so it shifts
//! [`Energy::unary_constant`] by nothing.
//!
//! **Geodesic distance.** A path's length is `Σ √(dist(p,q)² + (κ ‖I_p − I_q‖ / σ)²)` over its
//! steps between 8-neighbours (26 in volumes), `dist` the step's physical length in units of the
//! smallest spacing (as for the n-links), `σ² = ⟨‖I_p − I_q‖²⟩` the image's mean squared
//! neighbour difference (the same statistic as `β`), and `κ` ([`SpatialPrior::contrast`]) how
//! much crossing an edge costs: 0 gives the chamfer approximation of the Euclidean distance
//! (within 8 % of it). A path that crosses a strong edge is long, so a region cut off from the
//! foreground strokes by an edge takes the background's side. Computed by raster scans (two
//! forward–backward sweep pairs, as in Criminisi et al.'s GeoS): `O(n)` per sweep, about 10 ms for
//! a 640×480 photo on one core.
//!
//! Seeds without a hard label ([`Seed::ProbablyForeground`], [`Seed::ProbablyBackground`]) are
//! not strokes. Without hard seeds of both classes (a GrabCut rectangle, say) there is no prior.
//!
//! ```
//! use segcut::segment::prior::{prior_costs, SpatialPrior};
//! use segcut::segment::{Image, Seed, Seeds};
//! // A flat 9×1 strip: foreground stroke at the left end, background at the right.
//! let image = Image::new([9, 1, 1], 1, vec![50.0; 9]);
//! let mut seeds = Seeds::unknown(image.dims);
//! seeds.labels[0] = Seed::Foreground;
//! seeds.labels[8] = Seed::Background;
//! let prior = SpatialPrior { weight: 2.0, contrast: 0.0, softness: 0.0 };
//! let delta = prior_costs(&image, &seeds, &prior).unwrap().unwrap();
//! assert!(delta[1] < 0.0 && delta[7] > 0.0); // foreground cheaper on the left, dearer on the right
//! assert_eq!(delta[4], 0.0); // half way: no preference
//! assert!((delta[7] - 2.0 * 6.0 / 8.0).abs() < 1e-6); // γ (d_F − d_B) / (d_F + d_B)
//! ```
//!
//! [`Energy::unary_constant`]: super::energy::Energy::unary_constant

use super::energy::{direction_distances, mean_sq_diff};
use crate::graph::{valid_box, Connectivity};
use crate::io::{Image, Seed, Seeds};
use crate::{Error, Result};

/// The stroke-geometry prior's settings (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SpatialPrior {
    /// `γ`: the prior's log-odds on a stroke, in nats (0: no prior).
    pub weight: f64,
    /// `κ`: how much an image edge lengthens a path, in units of the image's RMS neighbour
    /// difference per pixel step (0: chamfer distance, colours ignored).
    pub contrast: f64,
    /// `s`: the length `L = s · diagonal` added to the denominator, as a fraction of the image's
    /// diagonal (0: the plain ratio).
    pub softness: f64,
}

impl SpatialPrior {
    /// Checks the values: both finite and non-negative.
    pub fn check(&self) -> Result<()> {
        for (name, v) in [
            ("weight", self.weight),
            ("contrast", self.contrast),
            ("softness", self.softness),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::Input {
                    file: "segment options".into(),
                    msg: format!("prior {name} must be a finite number >= 0, got {v}"),
                });
            }
        }
        Ok(())
    }
}

/// Per pixel, the prior's cost of foreground minus its cost of background, `δ = −ℓ` in nats
/// (`D_fg += max(0, δ)`, `D_bg += max(0, −δ)`); `None` when the prior is off (weight 0) or
/// a class has no hard seed. `image` is the working image (the models' colour space).
pub fn prior_costs(image: &Image, seeds: &Seeds, prior: &SpatialPrior) -> Result<Option<Vec<f32>>> {
    prior.check()?;
    super::energy::check_seeds(image, seeds)?;
    let counts = seeds.counts();
    if prior.weight == 0.0 || counts[Seed::Foreground as usize] == 0 {
        return Ok(None);
    }
    if counts[Seed::Background as usize] == 0 {
        return Ok(None);
    }
    let lengths = StepLengths::new(image, prior.contrast);
    let (d_fg, d_bg) = rayon::join(
        || geodesic_distance(image, seeds, Seed::Foreground, &lengths),
        || geodesic_distance(image, seeds, Seed::Background, &lengths),
    );
    let gamma = prior.weight as f32;
    let [w, h, d] = image.dims;
    let depth2 = if d > 1 { d * d } else { 0 };
    let diagonal = ((w * w + h * h + depth2) as f64).sqrt();
    let soft = (prior.softness * diagonal) as f32;
    Ok(Some(
        d_fg.iter()
            .zip(&d_bg)
            .map(|(&f, &b)| {
                let sum = f + b + soft;
                if sum > 0.0 {
                    gamma * (f - b) / sum
                } else {
                    0.0
                }
            })
            .collect(),
    ))
}

/// What one step of a path costs: the directions of the scan's neighbourhood with their
/// physical lengths, and the colour term's factor `(κ/σ)²`.
struct StepLengths {
    conn: Connectivity,
    dist2: Vec<f32>,
    colour: f32,
}

impl StepLengths {
    fn new(image: &Image, contrast: f64) -> Self {
        let conn = if image.is_volume() {
            Connectivity::N26
        } else {
            Connectivity::N8
        };
        let dist2 = direction_distances(conn, image.spacing)
            .iter()
            .map(|d| (d * d) as f32)
            .collect();
        let colour = if contrast > 0.0 {
            let (mean, _) = mean_sq_diff(image, conn);
            if mean > 0.0 {
                (contrast * contrast / mean) as f32
            } else {
                0.0
            }
        } else {
            0.0
        };
        StepLengths {
            conn,
            dist2,
            colour,
        }
    }
}

/// Geodesic distance from every pixel to the nearest pixel labelled `class` (infinite where
/// there is none). Raster scans: each sweep relaxes every pixel from its neighbours that the
/// sweep has already visited; two forward–backward pairs reach the fixed point for all but
/// paths that wind back and forth more than twice, which on images means almost all.
fn geodesic_distance(image: &Image, seeds: &Seeds, class: Seed, len: &StepLengths) -> Vec<f32> {
    let mut d: Vec<f32> = seeds
        .labels
        .iter()
        .map(|&s| if s == class { 0.0 } else { f32::INFINITY })
        .collect();
    // The neighbours that precede a pixel in raster order (the forward sweep's), with their
    // offsets' valid boxes; the backward sweep uses the opposite directions.
    let dims = image.dims;
    let offsets = len.conn.offsets();
    let before: Vec<usize> = (0..offsets.len())
        .filter(|&k| {
            let [x, y, z] = offsets[k];
            (z, y, x) < (0, 0, 0)
        })
        .collect();
    for _ in 0..2 {
        sweep(image, &mut d, len, &before, false, dims);
        sweep(image, &mut d, len, &before, true, dims);
    }
    d
}

/// A direction of a sweep: where its neighbour exists, its index offset, its squared length.
struct Direction {
    valid: [std::ops::Range<usize>; 3],
    step: isize,
    dist2: f32,
}

/// One raster sweep (forward, or backward with the directions reversed).
fn sweep(
    image: &Image,
    d: &mut [f32],
    len: &StepLengths,
    before: &[usize],
    backward: bool,
    dims: [usize; 3],
) {
    let [w, h, depth] = dims;
    let ch = image.channels;
    let data = &image.data;
    let offsets = len.conn.offsets();
    let dirs: Vec<Direction> = before
        .iter()
        .map(|&k| {
            let o = offsets[k];
            let o = if backward { o.map(|c| -c) } else { o };
            let step = o[0] as isize + w as isize * (o[1] as isize + h as isize * o[2] as isize);
            Direction {
                valid: valid_box(dims, o),
                step,
                dist2: len.dist2[k],
            }
        })
        .collect();
    let interior = |x: usize, y: usize, z: usize| {
        x > 0 && y > 0 && x + 1 < w && y + 1 < h && (depth == 1 || (z > 0 && z + 1 < depth))
    };
    let mut visit = |x: usize, y: usize, z: usize| {
        let v = x + w * (y + h * z);
        // Away from the borders every neighbour exists: skip the per-direction box checks.
        let inside = interior(x, y, z);
        let mut best = d[v];
        for dir in &dirs {
            let [xr, yr, zr] = &dir.valid;
            if !(inside || xr.contains(&x) && yr.contains(&y) && zr.contains(&z)) {
                continue;
            }
            let q = (v as isize + dir.step) as usize;
            let from = d[q];
            // An unreached neighbour (infinite) cannot improve anything.
            if from >= best {
                continue;
            }
            let mut c2 = 0.0f32;
            for c in 0..ch {
                let diff = data[v * ch + c] - data[q * ch + c];
                c2 += diff * diff;
            }
            best = best.min(from + (dir.dist2 + len.colour * c2).sqrt());
        }
        d[v] = best;
    };
    if backward {
        for z in (0..depth).rev() {
            for y in (0..h).rev() {
                for x in (0..w).rev() {
                    visit(x, y, z);
                }
            }
        }
    } else {
        for z in 0..depth {
            for y in 0..h {
                for x in 0..w {
                    visit(x, y, z);
                }
            }
        }
    }
}
