//! Colour models: how likely a pixel value is under the foreground or the background.
//!
//! Two kinds, both fitted on a flat list of samples (`channels` values per sample):
//!
//! - [`Gmm`]: a Gaussian mixture with full covariance over the channels (GrabCut's model).
//!   Initialised by k-means++ from a fixed seed, refined by Lloyd steps and a few EM iterations.
//!   Every covariance gets `ε·I` added, with `ε` relative to the *image's* variance
//!   ([`ModelParams::variance_floor`]), so a class of one flat colour, or of a single pixel, still
//!   has a proper density.
//! - [`Histogram`]: a joint histogram over the channels with `bins` bins per channel over the
//!   image's value range, smoothed by one pass of a `[1, 2, 1] / 4` kernel along each channel (mass-preserving at the ends) and an
//!   additive count of [`HISTOGRAM_PRIOR`] per bin.
//!
//! Both answer [`ColorModel::neg_log_likelihood`], in nats; the energy uses it as a data cost.
//!
//! ```
//! use segcut::segment::model::{ColorModel, Gmm};
//! // Two grey clusters, around 10 and around 200.
//! let samples: Vec<f32> = (0..100).map(|i| if i % 2 == 0 { 10.0 } else { 200.0 } + (i % 5) as f32).collect();
//! let gmm = Gmm::fit(&samples, 1, 2, 1.0).unwrap();
//! assert!(gmm.neg_log_likelihood(&[12.0]) < gmm.neg_log_likelihood(&[100.0]));
//! ```

use crate::rng::Rng;
use crate::{Error, Result};
use rayon::prelude::*;

/// Fits on more samples than this use an evenly strided subset: the fit costs `O(samples)` per EM
/// step, and a few tens of thousands of samples pin down five Gaussians in a few dimensions.
pub const MAX_FIT_SAMPLES: usize = 12_000;

/// The seed of the k-means++ initialisation: fits are deterministic.
pub const GMM_SEED: u64 = 0x5E6C_u64;

/// Lloyd (k-means) steps after the k-means++ seeding.
pub(crate) const KMEANS_STEPS: usize = 8;

/// EM iterations after k-means.
pub(crate) const EM_STEPS: usize = 6;

/// Pseudo-count added to every histogram bin after smoothing.
pub const HISTOGRAM_PRIOR: f64 = 0.5;

/// Histograms with more bins than this in total are refused (memory, and hopelessly sparse fits).
pub const MAX_HISTOGRAM_BINS: usize = 1 << 24;

/// The most Gaussian components a mixture may have. GrabCut uses 5 and more than a few dozen
/// only overfit the at most [`MAX_FIT_SAMPLES`] samples, while every component costs time per
/// pixel in each round's t-links and `MAX_FIT_SAMPLES × components` responsibilities in the fit.
pub const MAX_GMM_COMPONENTS: usize = 64;

/// Which colour model to fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// A Gaussian mixture with this many components (fewer if there are fewer distinct samples).
    Gmm {
        /// Number of components; 5 is GrabCut's choice.
        components: usize,
    },
    /// A joint histogram with this many bins per channel.
    Histogram {
        /// Bins per channel (16 gives 4096 bins for RGB).
        bins: usize,
    },
}

impl ModelKind {
    /// Refuses a GMM of 0 or more than [`MAX_GMM_COMPONENTS`] components and a histogram of 0
    /// bins, before any work.
    ///
    /// ```
    /// use segcut::segment::model::ModelKind;
    /// assert!(ModelKind::Gmm { components: 5 }.check().is_ok());
    /// assert!(ModelKind::Gmm { components: 1_000_000_000 }.check().is_err());
    /// ```
    pub fn check(self) -> Result<()> {
        let bad = |msg: String| {
            Err(Error::Input {
                file: "colour model".into(),
                msg,
            })
        };
        match self {
            ModelKind::Gmm { components } if components == 0 || components > MAX_GMM_COMPONENTS => {
                bad(format!(
                    "a GMM has 1 to {MAX_GMM_COMPONENTS} components, not {components}"
                ))
            }
            ModelKind::Histogram { bins: 0 } => bad("a histogram needs at least 1 bin".into()),
            _ => Ok(()),
        }
    }
}

impl Default for ModelKind {
    /// A 5-component GMM.
    fn default() -> Self {
        ModelKind::Gmm { components: 5 }
    }
}

/// Anything that scores a pixel value.
pub trait ColorModel: Sync {
    /// `−ln p(pixel)` in nats (a density for the GMM, a bin probability for the histogram).
    fn neg_log_likelihood(&self, pixel: &[f32]) -> f64;
}

/// What a fit needs to know about the whole image, so that models are comparable across classes.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelParams {
    /// Values per sample.
    pub channels: usize,
    /// Added to every covariance diagonal (GMM).
    pub variance_floor: f64,
    /// Per-channel `[min, max]` of the image (histogram bin ranges).
    pub range: Vec<[f32; 2]>,
}

impl ModelParams {
    /// Parameters for `data` (`channels` values per pixel): the variance floor is `1e-3` times
    /// the mean per-channel variance of the image (1 when the image is flat), the histogram
    /// range its per-channel extent.
    pub fn from_image(data: &[f32], channels: usize) -> Self {
        let n = data.len() / channels.max(1);
        let ch = channels.max(1);
        // Per channel: [min, max, Σv, Σv²], over chunks in parallel.
        let stats = data
            .par_chunks(ch * 4096)
            .map(|chunk| {
                let mut s = vec![[f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0]; ch];
                for px in chunk.chunks_exact(ch) {
                    for (st, &v) in s.iter_mut().zip(px) {
                        let v = v as f64;
                        st[0] = st[0].min(v);
                        st[1] = st[1].max(v);
                        st[2] += v;
                        st[3] += v * v;
                    }
                }
                s
            })
            .reduce(
                || vec![[f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0]; ch],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(&b) {
                        *x = [x[0].min(y[0]), x[1].max(y[1]), x[2] + y[2], x[3] + y[3]];
                    }
                    a
                },
            );
        let range: Vec<[f32; 2]> = stats.iter().map(|s| [s[0] as f32, s[1] as f32]).collect();
        let sum: Vec<f64> = stats.iter().map(|s| s[2]).collect();
        let sum2: Vec<f64> = stats.iter().map(|s| s[3]).collect();
        let mut var = 0.0;
        for c in 0..channels {
            let m = sum[c] / n.max(1) as f64;
            var += (sum2[c] / n.max(1) as f64 - m * m).max(0.0);
        }
        var /= channels.max(1) as f64;
        ModelParams {
            channels,
            variance_floor: if var > 0.0 { 1e-3 * var } else { 1.0 },
            range,
        }
    }
}

/// A fitted model of either kind.
#[derive(Clone, Debug)]
pub enum Model {
    /// A Gaussian mixture.
    Gmm(Gmm),
    /// A joint histogram.
    Histogram(Histogram),
}

impl ColorModel for Model {
    fn neg_log_likelihood(&self, pixel: &[f32]) -> f64 {
        match self {
            Model::Gmm(g) => g.neg_log_likelihood(pixel),
            Model::Histogram(h) => h.neg_log_likelihood(pixel),
        }
    }
}

impl Model {
    /// Fits a model of `kind` on `samples` (`params.channels` values each). `class` names the
    /// class in errors ("foreground", "background").
    pub fn fit(
        kind: ModelKind,
        samples: &[f32],
        params: &ModelParams,
        class: &str,
    ) -> Result<Self> {
        Model::refit(kind, samples, params, class, None)
    }

    /// Fits as [`Model::fit`] does, continuing a mixture's EM from `warm`'s model where that is
    /// a mixture too ([`Gmm::refit`]: a refit round starts from the last round's model);
    /// histograms, and `None`, fit from scratch.
    pub fn refit(
        kind: ModelKind,
        samples: &[f32],
        params: &ModelParams,
        class: &str,
        warm: Option<Warm<'_>>,
    ) -> Result<Self> {
        let channels = params.channels;
        if channels == 0 || !samples.len().is_multiple_of(channels) {
            return Err(model_error(
                class,
                format!(
                    "{} values do not split into pixels of {channels} channels",
                    samples.len()
                ),
            ));
        }
        if samples.is_empty() {
            return Err(model_error(class, "no samples to fit the model on".into()));
        }
        match kind {
            ModelKind::Gmm { components } => {
                if components == 0 || components > MAX_GMM_COMPONENTS {
                    return Err(model_error(
                        class,
                        format!("a GMM has 1 to {MAX_GMM_COMPONENTS} components, not {components}"),
                    ));
                }
                let floor = params.variance_floor;
                Ok(Model::Gmm(match warm {
                    Some(Warm {
                        from: Model::Gmm(g),
                        steps,
                    }) => g.refit(samples, channels, components, floor, steps)?,
                    _ => Gmm::fit(samples, channels, components, floor)?,
                }))
            }
            ModelKind::Histogram { bins } => Ok(Model::Histogram(Histogram::fit(
                samples,
                &params.range,
                bins,
                class,
            )?)),
        }
    }
}

/// Where a refit starts: the model of the last round, and how many EM iterations continue
/// from it ([`Model::refit`]).
#[derive(Clone, Copy, Debug)]
pub struct Warm<'a> {
    /// The last round's model of the class.
    pub from: &'a Model,
    /// EM iterations from it; 0 fits from scratch.
    pub steps: usize,
}

/// Where a refit round's pair of models (foreground, background) starts: the last round's
/// models and the EM iterations from them ([`Model::refit`]); `None` fits from scratch.
pub type WarmPair<'a> = Option<(&'a (Model, Model), usize)>;

/// The foreground and background models of their samples, fitted side by side (from `warm`'s
/// models where given).
pub fn fit_pair(
    kind: ModelKind,
    params: &ModelParams,
    fg: &[f32],
    bg: &[f32],
    warm: WarmPair<'_>,
) -> Result<(Model, Model)> {
    let start = |class: fn(&(Model, Model)) -> &Model| {
        warm.map(|(m, steps)| Warm {
            from: class(m),
            steps,
        })
    };
    let (fg, bg) = rayon::join(
        || Model::refit(kind, fg, params, "foreground", start(|m| &m.0)),
        || Model::refit(kind, bg, params, "background", start(|m| &m.1)),
    );
    Ok((fg?, bg?))
}

fn model_error(class: &str, msg: String) -> Error {
    Error::Input {
        file: format!("{class} model"),
        msg,
    }
}

/// One Gaussian: weight, mean, and the inverse of the Cholesky factor of its covariance.
#[derive(Clone, Debug)]
struct Component {
    /// `ln(weight) − ½(d·ln 2π + ln det Σ)`: everything but the Mahalanobis term.
    log_coef: f64,
    mean: Vec<f64>,
    /// `L⁻¹` (lower triangular, row-major `d×d`) with `Σ = L·Lᵀ`, so `‖L⁻¹(x − μ)‖²` is the
    /// Mahalanobis distance.
    inv_chol: Vec<f64>,
}

/// A Gaussian mixture model with full covariances.
#[derive(Clone, Debug)]
pub struct Gmm {
    dim: usize,
    components: Vec<Component>,
    /// RGB / Lab fast path: per component `[log_coef, μ0, μ1, μ2, l00, l10, l11, l20, l21, l22]`
    /// (`l` = `L⁻¹`), so the hot loop of the t-links has fixed sizes.
    packed3: Vec<[f64; 10]>,
}

impl Gmm {
    /// Fits up to `k` components on `samples` (`dim` values each), adding `variance_floor` to
    /// every covariance diagonal. Uses fewer components when there are fewer distinct samples.
    pub fn fit(samples: &[f32], dim: usize, k: usize, variance_floor: f64) -> Result<Self> {
        let (xs, k, floor) = fit_input(samples, dim, k, variance_floor)?;
        Ok(Gmm::from_scratch(&xs, dim, k, floor))
    }

    /// k-means++ seeding and Lloyd steps, the hard assignment's moments, then EM: each a single
    /// pass of moments about the current means (see `Moments`), on [`fit_input`]'s samples.
    fn from_scratch(xs: &[f64], dim: usize, k: usize, floor: f64) -> Gmm {
        let centers = kmeans(xs, dim, k);
        let n = xs.len() / dim;
        let gmm = Gmm::from_moments(&hard_moments(xs, dim, &centers), &centers, n, floor);
        gmm.em(xs, EM_STEPS, floor)
    }

    /// Fits on `samples` as [`Gmm::fit`] does, but starting EM from this mixture instead of
    /// k-means: `steps` EM iterations, each one pass over the samples. GrabCut's refit rounds
    /// move the classes a little between rounds, so the last round's mixture is already close
    /// to the next one's optimum, and continuing EM from it costs `steps` passes against
    /// k-means++ seeding, 8 Lloyd steps and 6 EM iterations from scratch (about 4× fewer with 2
    /// steps).
    ///
    /// Falls back to [`Gmm::fit`] (with `k` components) where this mixture cannot start the
    /// fit: another dimension, or fewer components than the samples would get from scratch (a
    /// component dropped in an earlier fit is not brought back by EM); and with `steps` 0.
    ///
    /// ```
    /// use segcut::segment::model::Gmm;
    /// let a: Vec<f32> = (0..200).map(|i| if i % 2 == 0 { 10.0 } else { 200.0 } + (i % 7) as f32).collect();
    /// let first = Gmm::fit(&a, 1, 2, 1.0).unwrap();
    /// // The classes moved a little: continue from the first fit.
    /// let b: Vec<f32> = a.iter().map(|v| v + 3.0).collect();
    /// let next = first.refit(&b, 1, 2, 1.0, 2).unwrap();
    /// let mut means: Vec<f64> = next.means().into_iter().map(|m| m[0]).collect();
    /// means.sort_by(f64::total_cmp);
    /// assert!((means[0] - 16.0).abs() < 1.0 && (means[1] - 205.0).abs() < 1.0);
    /// ```
    pub fn refit(
        &self,
        samples: &[f32],
        dim: usize,
        k: usize,
        variance_floor: f64,
        steps: usize,
    ) -> Result<Self> {
        let (xs, k, floor) = fit_input(samples, dim, k, variance_floor)?;
        if steps == 0 || dim != self.dim || self.components.len() < k {
            return Ok(Gmm::from_scratch(&xs, dim, k, floor));
        }
        Ok(self.clone().em(&xs, steps, floor))
    }

    /// `steps` EM iterations from this mixture on `xs` (`f64` samples).
    fn em(mut self, xs: &[f64], steps: usize, floor: f64) -> Gmm {
        let n = xs.len() / self.dim;
        for _ in 0..steps {
            let means: Vec<f64> = self
                .components
                .iter()
                .flat_map(|c| c.mean.clone())
                .collect();
            self = Gmm::from_moments(&self.em_moments(xs), &means, n, floor);
        }
        self
    }

    /// Number of components actually used.
    pub fn num_components(&self) -> usize {
        self.components.len()
    }

    /// The component means, one `Vec` of `dim` values each.
    pub fn means(&self) -> Vec<Vec<f64>> {
        self.components.iter().map(|c| c.mean.clone()).collect()
    }

    /// Values per sample.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The mixture a device fit wrote (`model_fit` in `kernels/seg_model.cu`): `[count, then
    /// per component (stride `comp`) log_coef, the mean in slots 1.., L⁻¹ (d×d, row-major) from
    /// slot 4]`. `None` where the values cannot be a mixture of dimension `d` (no component,
    /// more than fit, a value not finite).
    pub(crate) fn from_device(d: usize, comp: usize, values: &[f64]) -> Option<Gmm> {
        let count = *values.first()?;
        if !(1.0..=((values.len() - 1) / comp) as f64).contains(&count) || d > 3 {
            return None;
        }
        let components: Vec<Component> = values[1..]
            .chunks_exact(comp)
            .take(count as usize)
            .map(|c| Component {
                log_coef: c[0],
                mean: c[1..1 + d].to_vec(),
                inv_chol: c[4..4 + d * d].to_vec(),
            })
            .collect();
        let finite = components.iter().all(|c| {
            c.log_coef.is_finite() && c.mean.iter().chain(&c.inv_chol).all(|v| v.is_finite())
        });
        finite.then(|| Gmm::from_components(d, components))
    }

    /// This mixture in [`Gmm::from_device`]'s layout (`1 + most · comp` values), the start of a
    /// device refit; `None` with more than `most` components or more than 3 dimensions.
    pub(crate) fn to_device(&self, comp: usize, most: usize) -> Option<Vec<f64>> {
        let d = self.dim;
        if self.components.len() > most || d > 3 {
            return None;
        }
        let mut out = vec![0.0; 1 + most * comp];
        out[0] = self.components.len() as f64;
        for (c, o) in self.components.iter().zip(out[1..].chunks_exact_mut(comp)) {
            o[0] = c.log_coef;
            o[1..1 + d].copy_from_slice(&c.mean);
            o[4..4 + d * d].copy_from_slice(&c.inv_chol);
        }
        Some(out)
    }

    /// Each component as `(log_coef, mean, inv_chol)`: `log_coef = ln w − ½(d ln 2π + ln det Σ)`
    /// and `inv_chol` the row-major `d×d` lower-triangular `L⁻¹` with `Σ = L·Lᵀ`, so that
    /// `ln(w·N(x)) = log_coef − ½‖L⁻¹(x − μ)‖²`. For evaluating the mixture elsewhere (the GPU
    /// energy builder).
    pub fn components(&self) -> impl Iterator<Item = (f64, &[f64], &[f64])> + '_ {
        self.components
            .iter()
            .map(|c| (c.log_coef, &c.mean[..], &c.inv_chol[..]))
    }

    /// The component weights (summing to 1).
    pub fn weights(&self) -> Vec<f64> {
        let w: Vec<f64> = self.components.iter().map(|c| self.log_weight(c)).collect();
        w.into_iter().map(f64::exp).collect()
    }

    fn log_weight(&self, c: &Component) -> f64 {
        // log_coef = ln w − ½ ln det Σ − ½ d ln 2π; ln det Σ = −2 Σ ln (L⁻¹)_ii.
        let d = self.dim;
        let log_det: f64 = -2.0 * (0..d).map(|i| c.inv_chol[i * d + i].ln()).sum::<f64>();
        c.log_coef + 0.5 * (log_det + d as f64 * (2.0 * std::f64::consts::PI).ln())
    }

    /// Log densities of `x` under each component (weights included) into `out`; returns the max.
    fn component_logs(&self, x: &[f64], out: &mut [f64]) -> f64 {
        let d = self.dim;
        let mut best = f64::NEG_INFINITY;
        let mut diff = [0.0f64; 8];
        let mut diff_vec = Vec::new();
        let diff: &mut [f64] = if d <= 8 {
            &mut diff[..d]
        } else {
            diff_vec.resize(d, 0.0);
            &mut diff_vec
        };
        for (c, o) in self.components.iter().zip(out.iter_mut()) {
            for j in 0..d {
                diff[j] = x[j] - c.mean[j];
            }
            let mut maha = 0.0;
            for i in 0..d {
                let row = &c.inv_chol[i * d..i * d + i + 1];
                let y: f64 = row.iter().zip(diff.iter()).map(|(a, b)| a * b).sum();
                maha += y * y;
            }
            *o = c.log_coef - 0.5 * maha;
            best = best.max(*o);
        }
        best
    }

    /// One EM iteration's pass: each sample's responsibilities under this mixture (the E-step),
    /// summed into moments about each component's mean (what the M-step needs).
    fn em_moments(&self, xs: &[f64]) -> Moments {
        let (d, k) = (self.dim, self.components.len());
        // Per component `[log_coef, mean, L⁻¹ lower triangle by rows]`, contiguous.
        let packed: Vec<f64> = self
            .components
            .iter()
            .flat_map(|c| {
                let tri = (0..d).flat_map(move |i| c.inv_chol[i * d..i * d + i + 1].iter());
                std::iter::once(&c.log_coef)
                    .chain(&c.mean)
                    .chain(tri)
                    .copied()
            })
            .collect();
        chunked_sum(xs, d, Moments::zero(k, d), |chunk, m| {
            let mut logs = vec![0.0; k];
            let mut diffs = vec![0.0; k * d];
            // The same code with `d` a constant where it is 1 or 3 (grey, colour).
            let mut run = |d| em_chunk(&packed, d, chunk, &mut m.sums, &mut logs, &mut diffs);
            match d {
                1 => run(1),
                3 => run(3),
                _ => run(d),
            }
        })
    }

    /// The mixture from per-component moments about `shifts` (`k × d`) over `n` samples:
    /// weight `w / n`, mean `shift + s₁ / w`, covariance `s₂ / w − δδᵀ` (`δ = s₁ / w`) plus the
    /// floor on the diagonal. Components without weight are dropped.
    fn from_moments(m: &Moments, shifts: &[f64], n: usize, floor: f64) -> Gmm {
        let d = m.d;
        let mut components = Vec::with_capacity(m.k);
        for (j, shift) in shifts.chunks_exact(d).enumerate().take(m.k) {
            let (w, s1, s2) = m.get(j);
            if w < 1e-9 {
                continue;
            }
            let delta: Vec<f64> = s1.iter().map(|s| s / w).collect();
            let mean: Vec<f64> = shift.iter().zip(&delta).map(|(c, e)| c + e).collect();
            let mut cov = vec![0.0; d * d];
            for a in 0..d {
                for b in 0..=a {
                    cov[a * d + b] = s2[a * d + b] / w - delta[a] * delta[b];
                    cov[b * d + a] = cov[a * d + b];
                }
                // Rounding may leave a flat class's variance a hair below zero.
                cov[a * d + a] = cov[a * d + a].max(0.0) + floor;
            }
            let (inv_chol, log_det) = inverse_cholesky(&cov, d, floor);
            let log_coef = (w / n as f64).ln() - 0.5 * (log_det + d_ln_2pi(d));
            components.push(Component {
                log_coef,
                mean,
                inv_chol,
            });
        }
        Gmm::from_components(d, components)
    }

    /// The mixture of these components (`d` values each), with its fast-path packing.
    fn from_components(d: usize, components: Vec<Component>) -> Gmm {
        let packed3 = if d == 3 {
            components
                .iter()
                .map(|c: &Component| {
                    let (m, l) = (&c.mean, &c.inv_chol);
                    [
                        c.log_coef, m[0], m[1], m[2], l[0], l[3], l[4], l[6], l[7], l[8],
                    ]
                })
                .collect()
        } else {
            Vec::new()
        };
        Gmm {
            dim: d,
            components,
            packed3,
        }
    }
}

/// Samples per chunk of the fit's parallel passes. Fixed, so that which samples are summed
/// together, and in which order the chunks' sums are added, does not depend on the number of
/// threads: a fit gives the same parameters on any machine and in any thread pool.
pub const FIT_CHUNK: usize = 512;

/// Partial sums over the samples: each [`FIT_CHUNK`] samples of `xs` (`d` values each) are
/// summed into a copy of `zero` by `part` (in parallel), and the chunks' sums added in chunk
/// order.
fn chunked_sum<P: Summable>(
    xs: &[f64],
    d: usize,
    zero: P,
    part: impl Fn(&[f64], &mut P) + Sync,
) -> P {
    let parts: Vec<P> = xs
        .par_chunks(FIT_CHUNK * d)
        .map(|chunk| {
            let mut p = zero.clone();
            part(chunk, &mut p);
            p
        })
        .collect();
    parts.into_iter().fold(zero, |mut acc, p| {
        acc.add_all(&p);
        acc
    })
}

/// What [`chunked_sum`] adds: element-wise sums.
trait Summable: Clone + Send + Sync {
    fn add_all(&mut self, other: &Self);
}

/// Per component `j` of `k`: the weight `w = Σ rᵢ`, `s₁ = Σ rᵢ (xᵢ − cⱼ)` and the lower
/// triangle of `s₂ = Σ rᵢ (xᵢ − cⱼ)(xᵢ − cⱼ)ᵀ`, about a shift `cⱼ` close to the component's mean
/// (its current mean, or its k-means centre), so that `s₂ / w − δδᵀ` loses nothing to
/// cancellation. One pass over the samples gives the M-step everything.
#[derive(Clone)]
struct Moments {
    k: usize,
    d: usize,
    /// `[w, s₁ (d), s₂ (d × d, lower triangle set)]` per component.
    sums: Vec<f64>,
}

impl Moments {
    fn zero(k: usize, d: usize) -> Self {
        Moments {
            k,
            d,
            sums: vec![0.0; k * (1 + d + d * d)],
        }
    }

    fn get(&self, j: usize) -> (f64, &[f64], &[f64]) {
        let d = self.d;
        let s = &self.sums[j * (1 + d + d * d)..(j + 1) * (1 + d + d * d)];
        (s[0], &s[1..1 + d], &s[1 + d..])
    }
}

impl Summable for Moments {
    fn add_all(&mut self, other: &Self) {
        for (a, b) in self.sums.iter_mut().zip(&other.sums) {
            *a += b;
        }
    }
}

/// [`Gmm::em_moments`] over one chunk: components packed as `[log_coef, mean (d), L⁻¹ lower
/// triangle by rows]`, moments added into `sums` (a [`Moments`]' layout) about each mean.
#[inline(always)]
fn em_chunk(
    packed: &[f64],
    d: usize,
    chunk: &[f64],
    sums: &mut [f64],
    logs: &mut [f64],
    diffs: &mut [f64],
) {
    let stride = 1 + d + d * (d + 1) / 2;
    for x in chunk.chunks_exact(d) {
        let mut best = f64::NEG_INFINITY;
        for ((c, o), diff) in packed
            .chunks_exact(stride)
            .zip(logs.iter_mut())
            .zip(diffs.chunks_exact_mut(d))
        {
            let (mean, tri) = c[1..].split_at(d);
            for j in 0..d {
                diff[j] = x[j] - mean[j];
            }
            let mut maha = 0.0;
            let mut row = 0;
            for i in 0..d {
                let mut y = 0.0;
                for j in 0..=i {
                    y += tri[row + j] * diff[j];
                }
                row += i + 1;
                maha += y * y;
            }
            *o = c[0] - 0.5 * maha;
            best = best.max(*o);
        }
        let mut total = 0.0;
        for l in logs.iter_mut() {
            let t = *l - best;
            *l = if t < -700.0 { 0.0 } else { t.exp() };
            total += *l;
        }
        for (j, (&l, diff)) in logs.iter().zip(diffs.chunks_exact(d)).enumerate() {
            add_moment(sums, d, j, l / total, diff);
        }
    }
}

/// Adds sample `diff = x − cⱼ` with responsibility `r` to component `j` of a [`Moments`]' sums.
#[inline(always)]
fn add_moment(sums: &mut [f64], d: usize, j: usize, r: f64, diff: &[f64]) {
    if r == 0.0 {
        return;
    }
    let len = 1 + d + d * d;
    let s = &mut sums[j * len..(j + 1) * len];
    s[0] += r;
    let (s1, s2) = s[1..].split_at_mut(d);
    for a in 0..d {
        let ra = r * diff[a];
        s1[a] += ra;
        for b in 0..=a {
            s2[a * d + b] += ra * diff[b];
        }
    }
}

/// The moments of the hard assignment to the nearest of `centers`, about each centre.
fn hard_moments(xs: &[f64], d: usize, centers: &[f64]) -> Moments {
    let k = centers.len() / d;
    chunked_sum(xs, d, Moments::zero(k, d), |chunk, m| {
        let mut diff = vec![0.0; d];
        for x in chunk.chunks_exact(d) {
            let j = nearest(centers, d, x).0;
            for ((o, a), c) in diff.iter_mut().zip(x).zip(&centers[j * d..(j + 1) * d]) {
                *o = a - c;
            }
            add_moment(&mut m.sums, d, j, 1.0, &diff);
        }
    })
}

impl ColorModel for Gmm {
    fn neg_log_likelihood(&self, pixel: &[f32]) -> f64 {
        if self.dim == 3 && self.packed3.len() <= 16 {
            return self.nll3([pixel[0] as f64, pixel[1] as f64, pixel[2] as f64]);
        }
        let d = self.dim;
        let mut x = [0.0f64; 8];
        let mut logs = [0.0f64; 16];
        if d > 8 || self.components.len() > 16 {
            let xv: Vec<f64> = pixel.iter().map(|&v| v as f64).collect();
            let mut lv = vec![0.0; self.components.len()];
            let m = self.component_logs(&xv, &mut lv);
            return -(m + lv.iter().map(|l| (l - m).exp()).sum::<f64>().ln());
        }
        for (xi, &p) in x.iter_mut().zip(pixel) {
            *xi = p as f64;
        }
        let k = self.components.len();
        let m = self.component_logs(&x[..d], &mut logs[..k]);
        -(m + logs[..k].iter().map(|l| (l - m).exp()).sum::<f64>().ln())
    }
}

impl Gmm {
    /// [`ColorModel::neg_log_likelihood`] for 3 channels, from [`Gmm::packed3`].
    #[inline]
    fn nll3(&self, x: [f64; 3]) -> f64 {
        let mut logs = [0.0f64; 16];
        let mut best = f64::NEG_INFINITY;
        for (c, o) in self.packed3.iter().zip(logs.iter_mut()) {
            let (d0, d1, d2) = (x[0] - c[1], x[1] - c[2], x[2] - c[3]);
            let y0 = c[4] * d0;
            let y1 = c[5] * d0 + c[6] * d1;
            let y2 = c[7] * d0 + c[8] * d1 + c[9] * d2;
            *o = c[0] - 0.5 * (y0 * y0 + y1 * y1 + y2 * y2);
            best = best.max(*o);
        }
        let k = self.packed3.len();
        let sum: f64 = logs[..k].iter().map(|l| (l - best).exp()).sum();
        -(best + sum.ln())
    }
}

/// `L⁻¹` of the Cholesky factor of the SPD matrix `a` (`d×d`) and `ln det a`. Should rounding
/// make a pivot non-positive, the pivot is raised to `floor` (the matrix had `floor·I` added, so
/// that is its smallest possible eigenvalue).
fn inverse_cholesky(a: &[f64], d: usize, floor: f64) -> (Vec<f64>, f64) {
    let mut l = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let mut s = a[i * d + j];
            for p in 0..j {
                s -= l[i * d + p] * l[j * d + p];
            }
            if i == j {
                l[i * d + i] = s.max(floor).sqrt();
            } else {
                l[i * d + j] = s / l[j * d + j];
            }
        }
    }
    let log_det = 2.0 * (0..d).map(|i| l[i * d + i].ln()).sum::<f64>();
    // Forward substitution, column by column of the identity.
    let mut inv = vec![0.0; d * d];
    for col in 0..d {
        for i in col..d {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for p in col..i {
                s -= l[i * d + p] * inv[p * d + col];
            }
            inv[i * d + col] = s / l[i * d + i];
        }
    }
    (inv, log_det)
}

/// How many distinct samples there are, counting no further than `limit`.
fn count_distinct(xs: &[f64], d: usize, limit: usize) -> usize {
    // `limit` comes from the caller's options: never reserve more than there are samples.
    let mut seen: Vec<&[f64]> = Vec::with_capacity(limit.min(xs.len() / d.max(1)));
    for x in xs.chunks_exact(d) {
        if !seen.contains(&x) {
            seen.push(x);
            if seen.len() >= limit {
                break;
            }
        }
    }
    seen.len()
}

/// What every mixture fit starts from, checked: the samples as `f64` (all of them up to
/// [`MAX_FIT_SAMPLES`], else every `⌈n / MAX_FIT_SAMPLES⌉`-th), the components to use (at most
/// the samples' distinct values) and the variance floor (1 where the given one is not a positive
/// number).
fn fit_input(
    samples: &[f32],
    dim: usize,
    k: usize,
    variance_floor: f64,
) -> Result<(Vec<f64>, usize, f64)> {
    if dim == 0 || !samples.len().is_multiple_of(dim) || samples.is_empty() {
        return Err(Error::Input {
            file: "GMM".into(),
            msg: format!("cannot fit on {} values of dimension {dim}", samples.len()),
        });
    }
    if k == 0 || k > MAX_GMM_COMPONENTS {
        return Err(Error::Input {
            file: "GMM".into(),
            msg: format!("a GMM has 1 to {MAX_GMM_COMPONENTS} components, not {k}"),
        });
    }
    let floor = fit_floor(variance_floor);
    let step = (samples.len() / dim).div_ceil(MAX_FIT_SAMPLES).max(1);
    let xs: Vec<f64> = samples
        .chunks_exact(dim)
        .step_by(step)
        .flatten()
        .map(|&v| v as f64)
        .collect();
    let k = k.min(count_distinct(&xs, dim, k)).max(1);
    Ok((xs, k, floor))
}

/// `d·ln 2π`, the normalising term of a `d`-dimensional Gaussian's log density.
pub(crate) fn d_ln_2pi(d: usize) -> f64 {
    d as f64 * (2.0 * std::f64::consts::PI).ln()
}

/// The variance floor a fit uses: the given one, or 1 where it is not a positive number.
pub(crate) fn fit_floor(variance_floor: f64) -> f64 {
    if variance_floor.is_finite() && variance_floor > 0.0 {
        variance_floor
    } else {
        1.0
    }
}

/// The random draws [`kmeans`]' seeding makes on `n` samples for `k` centres, in order: the
/// first centre's index, then one uniform per further centre (a device fit takes them from
/// here, so that it seeds as the host does).
pub(crate) fn kmeans_draws(n: usize, k: usize) -> (usize, Vec<f64>) {
    let mut rng = Rng::new(GMM_SEED);
    let first = rng.below(n.max(1) as u64) as usize;
    (first, (1..k).map(|_| rng.unit_f64()).collect())
}

/// The nearest center to `x` and its squared distance.
#[inline(always)]
fn nearest(centers: &[f64], d: usize, x: &[f64]) -> (usize, f64) {
    let mut best = (0, f64::INFINITY);
    for (j, c) in centers.chunks_exact(d).enumerate() {
        let dist: f64 = c.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum();
        if dist < best.1 {
            best = (j, dist);
        }
    }
    best
}

/// Per-chunk sums of squared distances (k-means++) or per-centre sums and counts (Lloyd).
#[derive(Clone)]
struct Sums(Vec<f64>);

impl Summable for Sums {
    fn add_all(&mut self, other: &Self) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a += b;
        }
    }
}

/// k-means++ seeding from [`GMM_SEED`], then [`KMEANS_STEPS`] Lloyd steps. Needs at least `k`
/// distinct samples. Every pass is split into [`FIT_CHUNK`]-sample chunks (see [`chunked_sum`]).
fn kmeans(xs: &[f64], d: usize, k: usize) -> Vec<f64> {
    let n = xs.len() / d;
    let (first, draws) = kmeans_draws(n, k);
    let mut centers: Vec<f64> = xs[first * d..(first + 1) * d].to_vec();
    // Each sample's squared distance to its nearest centre so far, and each chunk's sum of them.
    let mut d2 = vec![f64::INFINITY; n];
    let mut chunk_d2 = Vec::new();
    let update = |c: &[f64], d2: &mut [f64], chunk_d2: &mut Vec<f64>| {
        *chunk_d2 = d2
            .par_chunks_mut(FIT_CHUNK)
            .zip(xs.par_chunks(FIT_CHUNK * d))
            .map(|(dd, x)| {
                let mut sum = 0.0;
                for (dd, x) in dd.iter_mut().zip(x.chunks_exact(d)) {
                    let dist: f64 = c.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum();
                    *dd = dd.min(dist);
                    sum += *dd;
                }
                sum
            })
            .collect();
    };
    update(&centers, &mut d2, &mut chunk_d2);
    while centers.len() < k * d {
        let total: f64 = chunk_d2.iter().sum();
        if total <= 0.0 {
            break;
        }
        // D² sampling: a sample with probability proportional to its squared distance, found
        // chunk by chunk, then within the chunk.
        let mut target = draws[centers.len() / d - 1] * total;
        let mut pick = None;
        for (c, &w) in chunk_d2.iter().enumerate() {
            if target < w {
                let start = c * FIT_CHUNK;
                for (i, &v) in d2[start..n.min(start + FIT_CHUNK)].iter().enumerate() {
                    if target < v {
                        pick = Some(start + i);
                        break;
                    }
                    target -= v;
                }
                break;
            }
            target -= w;
        }
        // Rounding can leave the target past the end: the last sample not yet a centre.
        let pick = pick
            .or_else(|| d2.iter().rposition(|&v| v > 0.0))
            .unwrap_or(n - 1);
        centers.extend_from_slice(&xs[pick * d..(pick + 1) * d]);
        let c = centers[centers.len() - d..].to_vec();
        update(&c, &mut d2, &mut chunk_d2);
    }
    let k = centers.len() / d;
    for _ in 0..KMEANS_STEPS {
        // Per centre: d coordinate sums, then the count.
        let Sums(sums) = chunked_sum(xs, d, Sums(vec![0.0; k * (d + 1)]), |chunk, s| {
            let run = |d, s: &mut [f64]| lloyd_chunk(&centers, d, chunk, s);
            match d {
                1 => run(1, &mut s.0),
                3 => run(3, &mut s.0),
                _ => run(d, &mut s.0),
            }
        });
        for (c, row) in centers.chunks_exact_mut(d).zip(sums.chunks_exact(d + 1)) {
            // A center that lost all its samples keeps its place (it is still a sample).
            if row[d] > 0.0 {
                for (c, s) in c.iter_mut().zip(row) {
                    *c = s / row[d];
                }
            }
        }
    }
    centers
}

/// One Lloyd step over a chunk: each sample's coordinates and a count added to its nearest
/// centre's row of `sums` (`d + 1` values per centre).
#[inline(always)]
fn lloyd_chunk(centers: &[f64], d: usize, chunk: &[f64], sums: &mut [f64]) {
    for x in chunk.chunks_exact(d) {
        let j = nearest(centers, d, x).0;
        let row = &mut sums[j * (d + 1)..(j + 1) * (d + 1)];
        for (r, v) in row.iter_mut().zip(x) {
            *r += v;
        }
        row[d] += 1.0;
    }
}

/// A smoothed joint histogram over the channels.
#[derive(Clone, Debug)]
pub struct Histogram {
    bins: usize,
    range: Vec<[f32; 2]>,
    /// `−ln P(bin)`, one per joint bin (channel 0 varies fastest).
    nll: Vec<f64>,
}

impl Histogram {
    /// Fits a histogram with `bins` bins per channel over `range` (one `[min, max]` per channel;
    /// values outside fall into the end bins). `class` names the class in errors.
    pub fn fit(samples: &[f32], range: &[[f32; 2]], bins: usize, class: &str) -> Result<Self> {
        let d = range.len();
        if bins == 0 {
            return Err(model_error(
                class,
                "a histogram needs at least 1 bin".into(),
            ));
        }
        let total = (0..d)
            .try_fold(1usize, |t, _| t.checked_mul(bins))
            .filter(|&t| t <= MAX_HISTOGRAM_BINS)
            .ok_or_else(|| {
                model_error(
                    class,
                    format!(
                        "{bins} bins per channel over {d} channels exceed {MAX_HISTOGRAM_BINS} bins"
                    ),
                )
            })?;
        if d == 0 || samples.is_empty() || !samples.len().is_multiple_of(d) {
            return Err(model_error(class, "no samples to fit the model on".into()));
        }
        let mut h = Histogram {
            bins,
            range: range.to_vec(),
            nll: Vec::new(),
        };
        let mut counts = vec![0.0f64; total];
        for px in samples.chunks_exact(d) {
            counts[h.bin(px)] += 1.0;
        }
        // One [1, 2, 1] / 4 pass along each channel axis, so that near colours share evidence;
        // at the ends the share that would leave the range stays in the end bin (mass is kept).
        let mut stride = 1;
        let mut tmp = counts.clone();
        for _ in 0..d {
            if bins > 1 {
                for (i, t) in tmp.iter_mut().enumerate() {
                    let b = (i / stride) % bins;
                    let lo = if b > 0 { i - stride } else { i };
                    let hi = if b + 1 < bins { i + stride } else { i };
                    *t = 0.25 * counts[lo] + 0.5 * counts[i] + 0.25 * counts[hi];
                }
                std::mem::swap(&mut counts, &mut tmp);
            }
            stride *= bins;
        }
        let norm: f64 = counts.iter().sum::<f64>() + HISTOGRAM_PRIOR * total as f64;
        h.nll = counts
            .iter()
            .map(|&c| -((c + HISTOGRAM_PRIOR) / norm).ln())
            .collect();
        Ok(h)
    }

    fn bin(&self, px: &[f32]) -> usize {
        let mut idx = 0;
        let mut stride = 1;
        for (&v, &[lo, hi]) in px.iter().zip(&self.range) {
            let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
            let b = ((t * self.bins as f32) as isize).clamp(0, self.bins as isize - 1) as usize;
            idx += b * stride;
            stride *= self.bins;
        }
        idx
    }
}

impl ColorModel for Histogram {
    fn neg_log_likelihood(&self, pixel: &[f32]) -> f64 {
        self.nll[self.bin(pixel)]
    }
}

/// A refitted model blended with the seed-fitted one: `p = (1 − w)·p_refit + w·p_seeds`. The
/// seeds are the only labels the user vouched for; keeping their model in the mix stops a round
/// that drifted from pulling the next one further away.
pub struct Blend<'a> {
    pub(crate) refit: Model,
    pub(crate) seeds: Option<&'a Model>,
    /// `ln(1 − w)` and `ln w`.
    pub(crate) log_w: [f64; 2],
    /// `ln(1 − ε)` and `ln(ε u)` of the outlier component ([`Blend::with_outlier`]).
    pub(crate) outlier: Option<[f64; 2]>,
}

impl<'a> Blend<'a> {
    /// `refit` blended with `seeds` at weight `w` (0: `refit` alone).
    pub fn new(refit: Model, seeds: &'a Model, w: f64) -> Self {
        Blend {
            refit,
            seeds: (w > 0.0).then_some(seeds),
            log_w: [(1.0 - w).ln(), w.ln()],
            outlier: None,
        }
    }

    /// Mixes in a uniform density `u` over the image's value box (`params.range`, each side at
    /// least 1) at weight `ε`: `p' = (1 − ε)·p + ε·u`. A colour that neither class's model has
    /// seen then costs about `−ln(ε u)` in both, instead of whatever the models' tails say, and
    /// the prior and the n-links decide. `ε = 0` changes nothing.
    pub fn with_outlier(mut self, eps: f64, params: &ModelParams) -> Self {
        if eps > 0.0 {
            let ln_u: f64 = -params
                .range
                .iter()
                .map(|r| ((r[1] - r[0]) as f64).max(1.0).ln())
                .sum::<f64>();
            self.outlier = Some([(1.0 - eps).ln(), eps.ln() + ln_u]);
        }
        self
    }
}

/// `−ln(e^{la} + e^{lb})`, from the larger term for stability.
fn neg_log_sum_exp(la: f64, lb: f64) -> f64 {
    let m = la.max(lb);
    -(m + ((la - m).exp() + (lb - m).exp()).ln())
}

impl ColorModel for Blend<'_> {
    fn neg_log_likelihood(&self, p: &[f32]) -> f64 {
        let a = self.refit.neg_log_likelihood(p);
        let c = match self.seeds {
            None => a,
            Some(seeds) => {
                let b = seeds.neg_log_likelihood(p);
                // −ln((1 − w)e^{−a} + w e^{−b}).
                neg_log_sum_exp(self.log_w[0] - a, self.log_w[1] - b)
            }
        };
        match self.outlier {
            None => c,
            Some([keep, out]) => neg_log_sum_exp(keep - c, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{kmeans_draws, Gmm, GMM_SEED};
    use crate::rng::Rng;

    /// A mixture written in the device fit's layout and read back is the same mixture; the
    /// reader refuses what cannot be one.
    #[test]
    fn the_device_layout_round_trips_and_refuses_bad_values() {
        let samples: Vec<f32> = (0..600)
            .map(|i| ((i * 37) % 251) as f32 + (i % 3) as f32 * 40.0)
            .collect();
        for d in [1, 3] {
            let g = Gmm::fit(&samples, d, 4, 1.0).unwrap();
            let v = g.to_device(13, 16).unwrap();
            assert_eq!(v.len(), 1 + 16 * 13);
            let back = Gmm::from_device(d, 13, &v).unwrap();
            assert_eq!(back.num_components(), g.num_components());
            for (a, b) in g.components().zip(back.components()) {
                assert_eq!(a, b);
            }
            assert!(g.to_device(13, g.num_components() - 1).is_none());
            let mut bad = v.clone();
            bad[0] = 0.0;
            assert!(Gmm::from_device(d, 13, &bad).is_none(), "no component");
            bad[0] = 17.0;
            assert!(Gmm::from_device(d, 13, &bad).is_none(), "more than fit");
            let mut bad = v.clone();
            bad[2] = f64::NAN;
            assert!(Gmm::from_device(d, 13, &bad).is_none(), "not finite");
            assert!(Gmm::from_device(d, 13, &[]).is_none(), "empty");
        }
    }

    /// The draws handed to a device fit are the seeding's own stream: the first index, then one
    /// uniform per further centre, whatever the count asked for.
    #[test]
    fn kmeans_draws_follow_the_seeded_stream() {
        let (first, u) = kmeans_draws(1000, 5);
        let mut rng = Rng::new(GMM_SEED);
        assert_eq!(first as u64, rng.below(1000));
        assert_eq!(u.len(), 4);
        for x in &u {
            assert_eq!(*x, rng.unit_f64());
        }
        let (first2, u2) = kmeans_draws(1000, 16);
        assert_eq!(first2, first);
        assert_eq!(&u2[..4], &u[..]);
    }
}
