//! Multi-label segmentation: more than two seed classes → a label map, by α-expansion on
//! per-label colour models and a contrast-sensitive Potts term (the multi-class form of the
//! binary `segment` energy).
//!
//! Unary: `D_p(k) = −s · ln P(colour_p | k)`, `P` a smoothed 16×16×16 colour histogram of label
//! `k`'s seeds; a seed pixel costs 0 for its own label and [`MultilabelOptions::seed_cost`] for
//! the others. Pairwise: `w_pq = s · λ · exp(−β‖I_p − I_q‖²)`, `β = 1 / (2·mean‖I_p − I_q‖²)`
//! (Rother et al., GrabCut), on 8 neighbours with the diagonal weights divided by √2.
//!
//! ```
//! use segcut::io::Image;
//! use segcut::stereo::multilabel::{multilabel, MultilabelOptions};
//! // Three vertical stripes of grey 0, 128, 255; one seed in each.
//! let (w, h) = (12, 4);
//! let data: Vec<f32> = (0..w * h).map(|p| [0.0, 128.0, 255.0][(p % w) / 4]).collect();
//! let img = Image::new([w, h, 1], 1, data);
//! let mut seeds = vec![0u16; w * h];
//! seeds[1] = 1;
//! seeds[5] = 2;
//! seeds[10] = 3;
//! let r = multilabel(&img, &seeds, 3, &MultilabelOptions::default()).unwrap();
//! assert!((0..w * h).all(|p| r.labels[p] as usize == (p % w) / 4));
//! ```

use super::{expand, CostVolume, Expansion, ExpansionOptions, Pairwise, PairwiseModel};
use crate::graph::Connectivity;
use crate::io::Image;
use crate::{Error, Result};

/// Options of [`multilabel`].
#[derive(Clone, Debug, PartialEq)]
pub struct MultilabelOptions {
    /// Smoothness weight λ (relative to the unary's nats).
    pub lambda: f32,
    /// Cost units per nat (costs are integers).
    pub scale: f32,
    /// Cost of giving a seed pixel another label than its seed's, in nats.
    pub seed_cost: f32,
    /// 4 or 8 neighbours.
    pub connectivity: Connectivity,
    /// Solver and passes.
    pub expansion: ExpansionOptions,
}

impl Default for MultilabelOptions {
    fn default() -> Self {
        MultilabelOptions {
            lambda: 2.0,
            scale: 16.0,
            seed_cost: 1000.0,
            connectivity: Connectivity::N8,
            expansion: ExpansionOptions::default(),
        }
    }
}

/// What [`multilabel`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct MultilabelResult {
    /// Label `0..K` of every pixel (seed value minus one).
    pub labels: Vec<u16>,
    /// The α-expansion's statistics.
    pub expansion: Expansion,
}

const BINS: usize = 16;

fn bin(img: &Image, p: usize, k: f32) -> usize {
    let px = img.pixel(p);
    let q = |v: f32| ((v * k) as usize * BINS / 256).min(BINS - 1);
    match px.len() {
        1 | 2 => {
            let g = q(px[0]);
            g * (BINS * BINS + BINS + 1)
        }
        _ => q(px[0]) * BINS * BINS + q(px[1]) * BINS + q(px[2]),
    }
}

/// The cost volume and pairwise model of a multi-label segmentation, for callers that run
/// [`expand`] themselves. `seeds[p]`: 0 unlabelled, `k ≥ 1` a seed of label `k − 1`.
pub fn multilabel_energy(
    img: &Image,
    seeds: &[u16],
    num_labels: usize,
    opts: &MultilabelOptions,
) -> Result<(CostVolume, PairwiseModel)> {
    if img.is_volume() {
        return Err(Error::Unsupported(
            "multi-label segmentation takes 2D images".into(),
        ));
    }
    let [w, h, _] = img.dims;
    let n = w * h;
    if seeds.len() != n {
        return Err(Error::Graph(format!(
            "seed map has {} pixels, the image {n}",
            seeds.len()
        )));
    }
    if num_labels < 2 || num_labels > u16::MAX as usize {
        return Err(Error::Graph(format!(
            "multi-label segmentation needs 2..={} labels, got {num_labels}",
            u16::MAX
        )));
    }
    if let Some(p) = seeds.iter().position(|&s| s as usize > num_labels) {
        return Err(Error::Graph(format!(
            "seed {} at pixel (x={}, y={}) names a label beyond {num_labels}",
            seeds[p],
            p % w,
            p / w
        )));
    }
    for k in 1..=num_labels as u16 {
        if !seeds.contains(&k) {
            return Err(Error::Graph(format!("label {k} has no seed pixel")));
        }
    }
    let max = img.data.iter().cloned().fold(0f32, f32::max);
    let k = if max > 255.0 { 255.0 / 65535.0 } else { 1.0 };
    let nb = BINS * BINS * BINS;
    let mut hist = vec![vec![1.0f64; nb]; num_labels]; // Laplace smoothing
    for p in 0..n {
        if seeds[p] > 0 {
            hist[seeds[p] as usize - 1][bin(img, p, k)] += 1.0;
        }
    }
    let nll: Vec<Vec<f64>> = hist
        .iter()
        .map(|hh| {
            let total: f64 = hh.iter().sum();
            hh.iter().map(|&c| -(c / total).ln()).collect()
        })
        .collect();
    let seed_c = (opts.seed_cost * opts.scale).round() as i32;
    let cost = CostVolume::from_fn(w, h, num_labels, |x, y, l| {
        let p = x + w * y;
        match seeds[p] {
            0 => (nll[l][bin(img, p, k)] * opts.scale as f64).round() as i32,
            s if s as usize - 1 == l => 0,
            _ => seed_c,
        }
    })?;
    let diff2 = |p: usize, q: usize| -> f32 {
        img.pixel(p)
            .iter()
            .zip(img.pixel(q))
            .map(|(a, b)| ((a - b) * k).powi(2))
            .sum()
    };
    let mut sum = 0f64;
    let mut cnt = 0usize;
    let _ = PairwiseModel::from_fn(w, h, opts.connectivity, Pairwise::Potts, |p, q| {
        sum += diff2(p, q) as f64;
        cnt += 1;
        0
    })?;
    let beta = if sum > 0.0 {
        cnt as f64 / (2.0 * sum)
    } else {
        0.0
    };
    let model = PairwiseModel::from_fn(w, h, opts.connectivity, Pairwise::Potts, |p, q| {
        let diagonal = p % w != q % w && p / w != q / w;
        let dist = if diagonal {
            std::f64::consts::SQRT_2
        } else {
            1.0
        };
        let wt = opts.lambda as f64 * opts.scale as f64 * (-beta * diff2(p, q) as f64).exp() / dist;
        wt.round() as i32
    })?;
    Ok((cost, model))
}

/// Segments `img` into `num_labels` regions from a seed map (`seeds[p]`: 0 unlabelled, `k ≥ 1`
/// a seed of label `k − 1`).
pub fn multilabel(
    img: &Image,
    seeds: &[u16],
    num_labels: usize,
    opts: &MultilabelOptions,
) -> Result<MultilabelResult> {
    let (cost, model) = multilabel_energy(img, seeds, num_labels, opts)?;
    let expansion = expand(&cost, &model, &opts.expansion)?;
    Ok(MultilabelResult {
        labels: expansion.labels.clone(),
        expansion,
    })
}

/// A seed map from a scribble image: pixels whose colour is `colors[k]` (exactly, RGB or grey
/// replicated) get `k + 1`, the rest 0.
///
/// ```
/// use segcut::io::Image;
/// use segcut::stereo::multilabel::seeds_from_colors;
/// let s = Image::new([3, 1, 1], 3, vec![255., 0., 0., 0., 0., 0., 0., 255., 0.]);
/// assert_eq!(seeds_from_colors(&s, &[[255, 0, 0], [0, 255, 0]]).unwrap(), [1, 0, 2]);
/// ```
pub fn seeds_from_colors(scribbles: &Image, colors: &[[u8; 3]]) -> Result<Vec<u16>> {
    if colors.len() > u16::MAX as usize - 1 {
        return Err(Error::Graph("too many seed colours".into()));
    }
    Ok((0..scribbles.num_pixels())
        .map(|p| {
            let px = scribbles.pixel(p);
            let rgb = match px.len() {
                1 | 2 => [px[0]; 3],
                _ => [px[0], px[1], px[2]],
            };
            colors
                .iter()
                .position(|c| (0..3).all(|i| rgb[i] == c[i] as f32))
                .map_or(0, |k| k as u16 + 1)
        })
        .collect())
}
