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
//! foreground strokes by an edge takes the background's side. The distances are the exact
//! shortest-path distances in `f32` (the unique fixed point of the relaxation): raster sweeps as
//! in Criminisi et al.'s GeoS while a forward–backward pair lowers more than 1/64 of the pixels
//! (1–4 pairs on photos), then a distance-ordered queue from the pixels the last pair lowered
//! (the rest of a photo's winding paths; a maze's or spiral's after 8 pairs at most). Every
//! step's length is computed once per image and shared by both classes. Any schedule that runs
//! to convergence gives the same bits, which is what lets another device reproduce them.
//!
//! **Stepping back where the strokes say enough** (issue 25). Colour models fitted on dense strokes
//! have seen most of the image's colours, and there a geometric guess mostly overrules evidence
//! the user gave. [`adapt_to_colours`] scales `ℓ` by the share `a` ([`SpatialPrior::explained`])
//! on every pixel whose colour one of the seeds' models explains (a cost no higher than 95 % of
//! that class's own stroke pixels get); colours no stroke sampled keep the full prior. The
//! pipeline applies it after the first fit. The full definition, as a device port must reproduce
//! it, is in docs/segmentation.md ("The adaptive prior, precisely").
//!
//! **Stepping back where the strokes do not enclose the object** (issue 25). The prior's guess
//! holds for strokes drawn *around* the object, not for strokes dropped anywhere inside each
//! region. [`scale_by_enclosure`] scales the whole prior by `E^k` ([`SpatialPrior::enclosure`]),
//! `E` ([`enclosure`]) the share of the image's border that the background strokes reach first
//! (geodesically, by the prior's own distances). It too is applied after the first fit, before
//! the explained share; where the prior lives on the device, there
//! ([`GpuEnergy::scale_prior_by_enclosure`](super::gpu::GpuEnergy::scale_prior_by_enclosure)),
//! from the same counts ([`enclosure_of_counts`]) and factor ([`enclosure_gain`]).
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
//! let prior = SpatialPrior { weight: 2.0, contrast: 0.0, softness: 0.0, explained: 1.0, enclosure: 0.0, coverage: 0.0 };
//! let delta = prior_costs(&image, &seeds, &prior).unwrap().unwrap();
//! assert!(delta[1] < 0.0 && delta[7] > 0.0); // foreground cheaper on the left, dearer on the right
//! assert_eq!(delta[4], 0.0); // half way: no preference
//! assert!((delta[7] - 2.0 * 6.0 / 8.0).abs() < 1e-6); // γ (d_F − d_B) / (d_F + d_B)
//! ```
//!
//! [`Energy::unary_constant`]: super::energy::Energy::unary_constant

use super::energy::{direction_distances, mean_sq_diff};
use super::model::ColorModel;
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
    /// `a`: the prior's share on pixels whose colour the strokes' own models explain
    /// ([`adapt_to_colours`]; 1: the same prior everywhere, 0: the prior only on colours no
    /// stroke sampled).
    pub explained: f64,
    /// `k`: how strongly the prior follows how well the background strokes enclose the
    /// foreground strokes; the whole prior is scaled by `E^k`, `E` the [`enclosure`] (0: the
    /// same prior whatever the strokes' layout).
    pub enclosure: f64,
    /// `c₀`: the strokes' coverage (the share of the pixels that carry a hard seed) above which
    /// the prior steps back, scaled by `c₀ / c` for a coverage `c > c₀` ([`coverage_gain`]):
    /// strokes that cover much of the image have sampled its colours, and the prior's guess
    /// should weigh less (0: the same prior however much the strokes cover).
    pub coverage: f64,
}

impl SpatialPrior {
    /// Checks the values: both finite and non-negative.
    pub fn check(&self) -> Result<()> {
        for (name, v) in [
            ("weight", self.weight),
            ("contrast", self.contrast),
            ("softness", self.softness),
            ("explained share", self.explained),
            ("enclosure exponent", self.enclosure),
            ("coverage", self.coverage),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::Input {
                    file: "segment options".into(),
                    msg: format!("prior {name} must be a finite number >= 0, got {v}"),
                });
            }
        }
        if self.coverage > 1.0 {
            return Err(Error::Input {
                file: "segment options".into(),
                msg: format!("prior coverage must be at most 1, got {}", self.coverage),
            });
        }
        if self.explained > 1.0 {
            return Err(Error::Input {
                file: "segment options".into(),
                msg: format!(
                    "prior explained share must be at most 1, got {}",
                    self.explained
                ),
            });
        }
        Ok(())
    }

    /// Whether the prior is adapted to the strokes after the distances: the prior is on and
    /// either its share on explained colours is below 1 ([`adapt_to_colours`]) or it follows
    /// the strokes' enclosure or coverage ([`scale_by_enclosure`]).
    pub fn adapts(&self) -> bool {
        self.weight > 0.0 && (self.explained < 1.0 || self.scales())
    }

    /// Whether the whole prior is scaled by a factor of the strokes' layout
    /// ([`scale_by_enclosure`]): it follows their enclosure or their coverage.
    pub fn scales(&self) -> bool {
        self.enclosure > 0.0 || self.coverage > 0.0
    }
}

/// The quantile of a class's own stroke pixels' costs up to which a colour counts as explained
/// by that class's model: a colour at least as likely as 95 % of the strokes' pixels.
pub const EXPLAINED_QUANTILE: f64 = 0.95;

/// The cost up to which a model explains a colour: the [`EXPLAINED_QUANTILE`] of its costs
/// `D(x)` over `samples` (the pixels it was fitted on, `channels` values each), precisely the
/// `⌈q·m⌉`-th smallest of the `m` costs. `None` without samples.
pub fn explained_threshold<M: ColorModel>(
    model: &M,
    samples: &[f32],
    channels: usize,
) -> Option<f64> {
    let mut costs: Vec<f64> = samples
        .chunks_exact(channels.max(1))
        .map(|x| model.neg_log_likelihood(x))
        .collect();
    if costs.is_empty() {
        return None;
    }
    costs.sort_unstable_by(f64::total_cmp);
    let rank = (EXPLAINED_QUANTILE * costs.len() as f64).ceil() as usize;
    Some(costs[rank.clamp(1, costs.len()) - 1])
}

/// Scales the prior `δ` by `a` = [`SpatialPrior::explained`] on every pixel whose colour the
/// strokes already explain (`explained(p)`: one of the seeds' models gives it a cost at most its
/// [`explained_threshold`]); pixels of colours no stroke sampled keep the full prior. The
/// product is taken in `f32` (`a` rounded to `f32` first), as every device must.
///
/// ```
/// use segcut::segment::prior::{adapt_to_colours, SpatialPrior};
/// let prior = SpatialPrior { weight: 10.0, contrast: 3.0, softness: 0.15, explained: 0.25, enclosure: 0.0, coverage: 0.0 };
/// let mut delta = vec![4.0f32, -8.0, 2.0];
/// adapt_to_colours(&mut delta, &prior, |p| p != 1); // pixel 1's colour is in no stroke
/// assert_eq!(delta, vec![1.0, -8.0, 0.5]);
/// ```
pub fn adapt_to_colours(
    delta: &mut [f32],
    prior: &SpatialPrior,
    explained: impl Fn(usize) -> bool + Sync,
) {
    use rayon::prelude::*;
    let a = prior.explained as f32;
    delta
        .par_iter_mut()
        .enumerate()
        .filter(|(p, _)| explained(*p))
        .for_each(|(_, d)| *d *= a);
}

/// How well the background strokes enclose the foreground strokes, from the prior's own
/// geodesic distances: the share of the image's border pixels (the outermost rows and columns,
/// the six faces of a volume) that the background strokes reach first, `δ > 0` (a tie, `δ = 0`,
/// counts half). In `[0, 1]`; `None` for an empty image.
///
/// Strokes drawn *around* an object leave every path from the object to the border crossing a
/// background stroke (`E` near 1), and there "nearer a foreground stroke" is a good guess for
/// the pixels no colour decides. Strokes dropped anywhere inside each region leave much of the
/// border nearer a foreground stroke (`E` about ½ for one stroke per class), and there the same
/// guess claims background for the foreground.
///
/// ```
/// use segcut::segment::prior::enclosure;
/// // A 3×3 image: 8 border pixels, 6 nearer the background, one tie, one nearer the foreground.
/// let delta = [1.0f32, 2.0, 1.0, 0.0, -5.0, 3.0, 1.0, -1.0, 1.0];
/// assert_eq!(enclosure(&delta, [3, 3, 1]), Some(6.5 / 8.0));
/// ```
pub fn enclosure(delta: &[f32], dims: [usize; 3]) -> Option<f64> {
    let [halves, border] = enclosure_counts(delta, dims);
    enclosure_of_counts(halves, border)
}

/// What [`enclosure`] counts: the border pixels' halves (2 where `δ > 0`, 1 where `δ = 0`, 0
/// otherwise, a NaN included) and the border pixels. Integers, so that any order of adding
/// them (a device's reduction) gives the same counts.
pub(crate) fn enclosure_counts(delta: &[f32], dims: [usize; 3]) -> [u64; 2] {
    let [w, h, d] = dims;
    let (mut halves, mut border) = (0u64, 0u64);
    let mut count = |v: f32| {
        halves += enclosure_halves(v);
        border += 1;
    };
    for z in 0..d {
        for y in 0..h {
            let row = &delta[w * (y + h * z)..][..w];
            if row_on_border(dims, y, z) || w <= 2 {
                row.iter().for_each(|&v| count(v));
            } else {
                // An inner row meets the border only at its two ends.
                count(row[0]);
                count(row[w - 1]);
            }
        }
    }
    [halves, border]
}

/// A border pixel's share of [`enclosure`] in halves: 2 nearer the background strokes, 1 on a
/// tie, 0 nearer the foreground strokes (or NaN). `prior_enclosure` in `kernels/seg_prior.cu`
/// counts the same.
#[inline]
pub(crate) fn enclosure_halves(v: f32) -> u64 {
    if v > 0.0 {
        2
    } else {
        u64::from(v == 0.0)
    }
}

/// Whether the whole row `(y, z)` of an image of `dims` lies on its border (the outermost rows,
/// and in a volume every row of the first and last slices); other rows meet it at their ends.
#[inline]
pub(crate) fn row_on_border(dims: [usize; 3], y: usize, z: usize) -> bool {
    let [_, h, d] = dims;
    y == 0 || y + 1 == h || (d > 1 && (z == 0 || z + 1 == d))
}

/// [`enclosure`] from its integer counts, however they were added up (the border pixels'
/// halves and the border pixels): `halves / (2 · border)`, `None` without border pixels. One
/// expression for every device.
///
/// ```
/// use segcut::segment::prior::enclosure_of_counts;
/// assert_eq!(enclosure_of_counts(13, 8), Some(13.0 / 16.0)); // 6 nearer the background, 1 tie
/// assert_eq!(enclosure_of_counts(0, 0), None);
/// ```
pub fn enclosure_of_counts(halves: u64, border: u64) -> Option<f64> {
    (border > 0).then(|| halves as f64 / (2 * border) as f64)
}

/// The strokes' coverage `c`: the share of the pixels that carry a hard seed (either class),
/// in `f64`. The input of [`coverage_gain`]; computed on the host for every device (the seeds
/// are there).
///
/// ```
/// use segcut::segment::prior::stroke_coverage;
/// use segcut::segment::{Seed, Seeds};
/// let mut seeds = Seeds::unknown([4, 2, 1]);
/// seeds.labels[0] = Seed::Foreground;
/// seeds.labels[7] = Seed::Background;
/// seeds.labels[3] = Seed::ProbablyBackground; // soft: not a stroke
/// assert_eq!(stroke_coverage(&seeds), 0.25);
/// ```
pub fn stroke_coverage(seeds: &Seeds) -> f64 {
    let c = seeds.counts();
    let hard = c[Seed::Foreground as usize] + c[Seed::Background as usize];
    hard as f64 / seeds.labels.len().max(1) as f64
}

/// The coverage factor `min(1, c₀ / c)` for the strokes' coverage `c` ([`stroke_coverage`])
/// and `c₀` = [`SpatialPrior::coverage`], in `f64` (1 when `c₀` is 0 or `c ≤ c₀`): above `c₀`
/// the prior's total weight over the image falls as the strokes' own evidence grows.
///
/// ```
/// use segcut::segment::prior::{coverage_gain, SpatialPrior};
/// let prior = SpatialPrior { weight: 15.0, contrast: 3.0, softness: 0.15, explained: 1.0, enclosure: 8.0, coverage: 0.02 };
/// assert_eq!(coverage_gain(0.01, &prior), 1.0);
/// assert_eq!(coverage_gain(0.04, &prior), 0.5);
/// ```
pub fn coverage_gain(coverage: f64, prior: &SpatialPrior) -> f64 {
    if prior.coverage > 0.0 && coverage > prior.coverage {
        prior.coverage / coverage
    } else {
        1.0
    }
}

/// The factor `g = E^k · min(1, c₀ / c)` the whole prior is scaled by ([`scale_by_enclosure`];
/// `E` the [`enclosure`], `c` the strokes' coverage, [`coverage_gain`]): computed in `f64`,
/// rounded to `f32` once, on the host for every device (a device's `pow` may differ in the
/// last bit).
///
/// ```
/// use segcut::segment::prior::{enclosure_gain, SpatialPrior};
/// let prior = SpatialPrior { weight: 15.0, contrast: 3.0, softness: 0.15, explained: 1.0, enclosure: 2.0, coverage: 0.0 };
/// assert_eq!(enclosure_gain(0.5, 0.05, &prior), 0.25);
/// let prior = SpatialPrior { coverage: 0.025, ..prior };
/// assert_eq!(enclosure_gain(0.5, 0.05, &prior), 0.125);
/// ```
pub fn enclosure_gain(e: f64, coverage: f64, prior: &SpatialPrior) -> f32 {
    (e.powf(prior.enclosure) * coverage_gain(coverage, prior)) as f32
}

/// Scales the whole prior `δ` by `g = E^k · min(1, c₀ / c)` ([`enclosure_gain`]; [`enclosure`]
/// `E`, `k` = [`SpatialPrior::enclosure`], `coverage` `c` = [`stroke_coverage`] of the seeds,
/// `c₀` = [`SpatialPrior::coverage`]), `g` computed in `f64` and rounded to `f32`, the product
/// taken in `f32`, as every device must. Returns `E` (`None`: `k` and `c₀` are both 0 or the
/// image is empty, and nothing changed).
///
/// ```
/// use segcut::segment::prior::{scale_by_enclosure, SpatialPrior};
/// let prior = SpatialPrior { weight: 10.0, contrast: 3.0, softness: 0.15, explained: 1.0, enclosure: 2.0, coverage: 0.0 };
/// // A 2×2 image is all border: two pixels nearer the background, two nearer the foreground.
/// let mut delta = vec![4.0f32, 2.0, -8.0, -2.0];
/// assert_eq!(scale_by_enclosure(&mut delta, [2, 2, 1], &prior, 0.5), Some(0.5));
/// assert_eq!(delta, vec![1.0, 0.5, -2.0, -0.5]); // g = 0.5² = 0.25
/// ```
pub fn scale_by_enclosure(
    delta: &mut [f32],
    dims: [usize; 3],
    prior: &SpatialPrior,
    coverage: f64,
) -> Option<f64> {
    use rayon::prelude::*;
    if !prior.scales() {
        return None;
    }
    let e = enclosure(delta, dims)?;
    let g = enclosure_gain(e, coverage, prior);
    delta.par_iter_mut().for_each(|d| *d *= g);
    Some(e)
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
/// physical lengths, the colour term's factor `(κ/σ)²`, and every edge's length, computed once.
pub(super) struct StepLengths {
    pub(super) conn: Connectivity,
    /// Read by the device schedule's emulation (tests), which evaluates its steps itself.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) dist2: Vec<f32>,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) colour: f32,
    /// The offsets (indices into `conn.offsets()`) that precede a pixel in raster order: the
    /// forward sweep's directions; the backward sweep takes the opposite ones.
    before: Vec<usize>,
    /// Per direction of `before` (`j`), the length of the step from each pixel `v` to its
    /// neighbour `v + offset` ([`step_length`]; infinite where there is none). Every edge of
    /// the neighbourhood is here once: from its other end it has the same bits. Both classes'
    /// distances and all their sweeps read them instead of evaluating a square root per step
    /// (4 values per pixel in 2D, 13 in 3D, freed with the distances, before the graph is built).
    edges: Vec<Vec<f32>>,
}

impl StepLengths {
    pub(super) fn new(image: &Image, contrast: f64) -> Self {
        use rayon::prelude::*;
        let conn = if image.is_volume() {
            Connectivity::N26
        } else {
            Connectivity::N8
        };
        let dist2: Vec<f32> = direction_distances(conn, image.spacing)
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
        let offsets = conn.offsets();
        let before: Vec<usize> = (0..offsets.len())
            .filter(|&k| {
                let [x, y, z] = offsets[k];
                (z, y, x) < (0, 0, 0)
            })
            .collect();
        let [w, h, _] = image.dims;
        let (data, ch) = (&image.data, image.channels);
        let edges = before
            .iter()
            .map(|&k| {
                let o = offsets[k];
                let [xr, yr, zr] = valid_box(image.dims, o);
                let step =
                    o[0] as isize + w as isize * (o[1] as isize + h as isize * o[2] as isize);
                let mut e = vec![f32::INFINITY; image.num_pixels()];
                // One row (fixed y, z) per task: where the neighbour exists, its step length.
                e.par_chunks_mut(w.max(1))
                    .enumerate()
                    .for_each(|(row, line)| {
                        let (y, z) = (row % h.max(1), row / h.max(1));
                        if !(yr.contains(&y) && zr.contains(&z)) {
                            return;
                        }
                        for x in xr.clone() {
                            let v = row * w + x;
                            let q = (v as isize + step) as usize;
                            line[x] = step_length(data, ch, v, q, dist2[k], colour);
                        }
                    });
                e
            })
            .collect();
        StepLengths {
            conn,
            dist2,
            colour,
            before,
            edges,
        }
    }

    /// For each offset of `conn.offsets()`, where its steps' lengths are: the direction of
    /// `edges` and whether the edge is stored at the neighbour's end (the offset does not
    /// precede in raster order, so its opposite does).
    fn edge_table(&self) -> Vec<(usize, bool)> {
        let offsets = self.conn.offsets();
        offsets
            .iter()
            .map(|o| {
                let back = o.map(|c| -c);
                let at = |target: [i32; 3]| self.before.iter().position(|&b| offsets[b] == target);
                match at(*o) {
                    Some(j) => (j, false),
                    None => (
                        at(back).expect("an offset or its opposite precedes in raster order"),
                        true,
                    ),
                }
            })
            .collect()
    }
}

/// Sweep pairs at most before [`settle`] takes over: photos converge in 2–5 pairs; a path that
/// winds back and forth more often (a maze, a spiral) needs one pair per turn, so a hostile image
/// could otherwise cost `O(n)` sweeps.
const MAX_SWEEP_PAIRS: usize = 8;

/// A sweep pair that lowers at most one pixel in this many hands the rest to [`settle`]'s queue:
/// the last pairs of a photo lower a few hundred pixels, and a final pair that lowers nothing
/// would only confirm the fixed point, which the queue does by running empty.
const QUEUE_SHARE: usize = 64;

/// Geodesic distance from every pixel to the nearest pixel labelled `class` (infinite where
/// there is none): the exact shortest-path distance over the neighbourhood graph, in `f32`.
///
/// It is the unique solution of `d(p) = 0` on the class's seeds and
/// `d(p) = min_q fl(d(q) + step(p, q))` elsewhere (`fl`: `f32` rounding; unique because every
/// step is at least 1), so any order of relaxations that runs until nothing changes reaches the
/// same bits. Raster sweeps (forward then backward, as in Criminisi et al.'s GeoS) are repeated
/// while a pair lowers many pixels; then [`settle`] relaxes from the pixels the last pair
/// lowered until nothing changes (after [`MAX_SWEEP_PAIRS`] pairs at most).
pub(super) fn geodesic_distance(
    image: &Image,
    seeds: &Seeds,
    class: Seed,
    len: &StepLengths,
) -> Vec<f32> {
    let mut d: Vec<f32> = seeds
        .labels
        .iter()
        .map(|&s| if s == class { 0.0 } else { f32::INFINITY })
        .collect();
    let dims = image.dims;
    // The pair (from 1) that last lowered each pixel.
    let mut lowered_in = vec![0u8; d.len()];
    for pair in 1..=MAX_SWEEP_PAIRS as u8 {
        let lowered = sweep(&mut d, len, false, dims, &mut lowered_in, pair)
            + sweep(&mut d, len, true, dims, &mut lowered_in, pair);
        if lowered == 0 {
            return d;
        }
        if lowered <= d.len() / QUEUE_SHARE || pair as usize == MAX_SWEEP_PAIRS {
            let from = lowered_in
                .iter()
                .enumerate()
                .filter(|&(_, &p)| p == pair)
                .map(|(v, _)| v);
            settle(dims, &mut d, len, from);
            return d;
        }
    }
    unreachable!("the last pair hands over to the queue")
}

/// The length of the step between neighbours `v` and `q` whose squared physical length is
/// `dist2`: `√(dist² + (κ/σ)² ‖I_v − I_q‖²)`, the channels summed in order (the same bits
/// whichever end the step is taken from).
#[inline]
pub(super) fn step_length(
    data: &[f32],
    ch: usize,
    v: usize,
    q: usize,
    dist2: f32,
    colour: f32,
) -> f32 {
    let mut c2 = 0.0f32;
    for c in 0..ch {
        let diff = data[v * ch + c] - data[q * ch + c];
        c2 += diff * diff;
    }
    (dist2 + colour * c2).sqrt()
}

/// Relaxes `d` from the pixels `from` until no step lowers anything: the fixed point of
/// [`geodesic_distance`] when every step that could still lower a pixel starts at one of
/// `from`. A sweep pair leaves exactly that: a pixel `u` it did not lower kept its value through
/// both sweeps, one of which visited each neighbour `v` of `u` and lowered it to at most
/// `d(u) + step` (it is never raised). The queue is ordered by distance (Dijkstra's order; a
/// binary heap of `f32` bit patterns, which order like the non-negative values; stale entries
/// skipped), so each pixel settles about once; its order is for speed only, since any order that
/// runs until nothing changes reaches the same fixed point.
fn settle(dims: [usize; 3], d: &mut [f32], len: &StepLengths, from: impl Iterator<Item = usize>) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let [w, h, depth] = dims;
    let offsets = len.conn.offsets();
    let table = len.edge_table();
    let mut heap: BinaryHeap<Reverse<(u32, usize)>> =
        from.map(|v| Reverse((d[v].to_bits(), v))).collect();
    while let Some(Reverse((bits, v))) = heap.pop() {
        if bits != d[v].to_bits() {
            continue;
        }
        let (x, y, z) = (v % w, (v / w) % h, v / (w * h));
        for (k, o) in offsets.iter().enumerate() {
            let (qx, qy, qz) = (
                x as isize + o[0] as isize,
                y as isize + o[1] as isize,
                z as isize + o[2] as isize,
            );
            if qx < 0
                || qy < 0
                || qz < 0
                || qx >= w as isize
                || qy >= h as isize
                || qz >= depth as isize
            {
                continue;
            }
            let q = qx as usize + w * (qy as usize + h * qz as usize);
            let (j, at_q) = table[k];
            let next = d[v] + len.edges[j][if at_q { q } else { v }];
            if next < d[q] {
                d[q] = next;
                heap.push(Reverse((next.to_bits(), q)));
            }
        }
    }
}

/// A direction of a sweep from another row: where its neighbour exists, its index offset, and
/// its edges' lengths with the offset from the pixel to the edge's entry (0 forward; the
/// neighbour's backward).
struct Direction<'a> {
    valid: [std::ops::Range<usize>; 3],
    step: isize,
    edges: &'a [f32],
    at: isize,
}

/// One raster sweep (forward, or backward with the directions reversed); marks each pixel it
/// lowers with `pair` in `lowered_in` and returns how many it lowered.
///
/// Each pixel takes the least of its value and `d(q) + step` over the neighbours `q` the sweep
/// has visited. All of them but the one before it in its row lie in rows the sweep has
/// finished, so a row is done in two passes: those candidates for every pixel at once (a loop
/// the compiler vectorises), then the in-row neighbour from pixel to pixel. The least of the
/// same candidates is the same value whatever the order (a NaN step is never taken, as
/// `f32::min` keeps the other operand).
fn sweep(
    d: &mut [f32],
    len: &StepLengths,
    backward: bool,
    dims: [usize; 3],
    lowered_in: &mut [u8],
    pair: u8,
) -> usize {
    let [w, h, depth] = dims;
    if d.is_empty() {
        return 0;
    }
    let offsets = len.conn.offsets();
    let mut others = Vec::new();
    let mut along = None;
    for (&k, edges) in len.before.iter().zip(&len.edges) {
        let o = offsets[k];
        let o = if backward { o.map(|c| -c) } else { o };
        let step = o[0] as isize + w as isize * (o[1] as isize + h as isize * o[2] as isize);
        // The edge between v and q is stored at its forward end: v forward, q backward.
        let at = if backward { step } else { 0 };
        if o[1] == 0 && o[2] == 0 {
            along = Some(edges);
        } else {
            others.push(Direction {
                valid: valid_box(dims, o),
                step,
                edges,
                at,
            });
        }
    }
    let mut row = vec![0.0f32; w];
    let mut lowered = 0;
    let mut sweep_row = |y: usize, z: usize| {
        let base = w * (y + h * z);
        row.copy_from_slice(&d[base..base + w]);
        for dir in &others {
            let [xr, yr, zr] = &dir.valid;
            if !(yr.contains(&y) && zr.contains(&z)) || xr.is_empty() {
                continue;
            }
            let first = base + xr.start;
            let from = &d[(first as isize + dir.step) as usize..][..xr.len()];
            let edges = &dir.edges[(first as isize + dir.at) as usize..][..xr.len()];
            for ((r, &f), &e) in row[xr.clone()].iter_mut().zip(from).zip(edges) {
                *r = r.min(f + e);
            }
        }
        if let Some(edges) = along {
            let edges = &edges[base..base + w];
            if backward {
                // From x + 1, across the edge stored at x + 1.
                let mut prev = row[w - 1];
                for x in (0..w - 1).rev() {
                    prev = row[x].min(prev + edges[x + 1]);
                    row[x] = prev;
                }
            } else {
                let mut prev = row[0];
                for x in 1..w {
                    prev = row[x].min(prev + edges[x]);
                    row[x] = prev;
                }
            }
        }
        for ((dv, &r), mark) in d[base..base + w]
            .iter_mut()
            .zip(&row)
            .zip(&mut lowered_in[base..base + w])
        {
            if r < *dv {
                *dv = r;
                *mark = pair;
                lowered += 1;
            }
        }
    };
    if backward {
        for z in (0..depth).rev() {
            for y in (0..h).rev() {
                sweep_row(y, z);
            }
        }
    } else {
        for z in 0..depth {
            for y in 0..h {
                sweep_row(y, z);
            }
        }
    }
    lowered
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::test_maze::maze_open;
    use super::*;
    use crate::rng::Rng;

    /// Dijkstra from the seeds, every step's length evaluated where it is taken: the plain
    /// algorithm the sweeps, the edge table and the queue must reproduce bit for bit.
    fn reference(image: &Image, seeds: &Seeds, class: Seed, len: &StepLengths) -> Vec<f32> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let [w, h, depth] = image.dims;
        let mut d = vec![f32::INFINITY; seeds.labels.len()];
        let mut heap = BinaryHeap::new();
        for (v, &s) in seeds.labels.iter().enumerate() {
            if s == class {
                d[v] = 0.0;
                heap.push(Reverse((0u32, v)));
            }
        }
        while let Some(Reverse((bits, v))) = heap.pop() {
            if bits != d[v].to_bits() {
                continue;
            }
            let (x, y, z) = (v % w, (v / w) % h, v / (w * h));
            for (k, o) in len.conn.offsets().iter().enumerate() {
                let q = [
                    x as i64 + o[0] as i64,
                    y as i64 + o[1] as i64,
                    z as i64 + o[2] as i64,
                ];
                if q.iter()
                    .zip([w, h, depth])
                    .any(|(&c, n)| c < 0 || c >= n as i64)
                {
                    continue;
                }
                let q = q[0] as usize + w * (q[1] as usize + h * q[2] as usize);
                let step = step_length(&image.data, image.channels, q, v, len.dist2[k], len.colour);
                if d[v] + step < d[q] {
                    d[q] = d[v] + step;
                    heap.push(Reverse((d[q].to_bits(), q)));
                }
            }
        }
        d
    }

    fn same_bits(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// Random images (grey and colour, 2D and 3D, smooth and noisy) with a few random seeds of
    /// each class, and no seed of a class: the distances equal plain Dijkstra's bit for bit,
    /// whichever way they were reached (a pair that converges, the queue after a few pairs).
    #[test]
    fn distances_equal_plain_dijkstra_bit_for_bit() {
        let mut rng = Rng::new(41);
        for case in 0..60 {
            let volume = case % 5 == 4;
            let dims = if volume {
                [
                    2 + rng.below(12) as usize,
                    2 + rng.below(12) as usize,
                    2 + rng.below(6) as usize,
                ]
            } else {
                [1 + rng.below(90) as usize, 1 + rng.below(70) as usize, 1]
            };
            let channels = if case % 2 == 0 { 3 } else { 1 };
            let n: usize = dims.iter().product();
            let noise = [0.0, 5.0, 80.0][case % 3];
            let data = (0..n * channels)
                .map(|i| ((i / channels) % 17) as f32 * 3.0 + rng.unit_f64() as f32 * noise)
                .collect();
            let image = Image::new(dims, channels, data);
            let mut seeds = Seeds::unknown(dims);
            for _ in 0..rng.below(6) {
                seeds.labels[rng.below(n as u64) as usize] = Seed::Foreground;
            }
            for _ in 0..rng.below(4) {
                seeds.labels[rng.below(n as u64) as usize] = Seed::Background;
            }
            let len = StepLengths::new(&image, [0.0, 1.0, 4.0][case % 3]);
            for class in [Seed::Foreground, Seed::Background] {
                let got = geodesic_distance(&image, &seeds, class, &len);
                let want = reference(&image, &seeds, class, &len);
                assert!(same_bits(&got, &want), "case {case} {dims:?} {class:?}");
            }
        }
    }

    /// A maze ([`maze_open`]): open pixels bright, walls dark, the strokes in the first and
    /// the last cell (shared with the device schedule's emulation tests).
    pub(in crate::segment) fn maze(cells: [usize; 2], seed: u64) -> (Image, Seeds) {
        let mut rng = Rng::new(seed);
        let (w, h, open) = maze_open(cells, |k| rng.below(k as u64) as usize);
        let data = open.iter().map(|&o| if o { 255.0 } else { 0.0 }).collect();
        let img = Image::new([w, h, 1], 1, data);
        let mut seeds = Seeds::unknown(img.dims);
        seeds.labels[w + 1] = Seed::Foreground;
        seeds.labels[(w - 2) + w * (h - 2)] = Seed::Background;
        (img, seeds)
    }

    /// Mazes (κ = 500: a wall costs more than any detour): the paths turn at every cell, so the
    /// sweeps run out of pairs and the queue finishes from what the last pair lowered.
    #[test]
    fn mazes_finish_in_the_queue_with_the_same_bits() {
        for (cells, seed) in [([40, 40], 1), ([60, 8], 2), ([6, 60], 3)] {
            let (image, seeds) = maze(cells, seed);
            let [w, h, _] = image.dims;
            let len = StepLengths::new(&image, 500.0);
            for class in [Seed::Foreground, Seed::Background] {
                let got = geodesic_distance(&image, &seeds, class, &len);
                let want = reference(&image, &seeds, class, &len);
                assert!(same_bits(&got, &want), "maze {w}x{h} {class:?}");
            }
        }
    }

    /// The edge table names, for every offset, the stored edge whose length is that step's.
    #[test]
    fn every_offset_finds_its_edge() {
        let mut rng = Rng::new(5);
        for dims in [[9, 7, 1], [5, 4, 3]] {
            let n: usize = dims.iter().product();
            let data = (0..n * 3).map(|_| rng.unit_f64() as f32 * 255.0).collect();
            let image = Image::new(dims, 3, data);
            let len = StepLengths::new(&image, 2.0);
            let [w, h, depth] = dims;
            for (k, o) in len.conn.offsets().iter().enumerate() {
                let (j, at_q) = len.edge_table()[k];
                for z in 0..depth {
                    for y in 0..h {
                        for x in 0..w {
                            let q = [
                                x as i64 + o[0] as i64,
                                y as i64 + o[1] as i64,
                                z as i64 + o[2] as i64,
                            ];
                            if q.iter().zip(dims).any(|(&c, n)| c < 0 || c >= n as i64) {
                                continue;
                            }
                            let v = x + w * (y + h * z);
                            let q = q[0] as usize + w * (q[1] as usize + h * q[2] as usize);
                            let want = step_length(&image.data, 3, v, q, len.dist2[k], len.colour);
                            let got = len.edges[j][if at_q { q } else { v }];
                            assert_eq!(got.to_bits(), want.to_bits(), "{dims:?} offset {o:?}");
                        }
                    }
                }
            }
        }
    }
}
