//! Graph-cut stereo: α-expansion (Boykov, Veksler & Zabih) on a Birchfield–Tomasi (+ census)
//! cost volume with a contrast-sensitive smoothness term, solved exactly move by move by any
//! max-flow solver; Middlebury evaluation ([`eval`]) and Waterloo-layout graph export
//! ([`export`]).
//!
//! [`stereo`] is the entry point: a rectified pair in, a disparity map out. The engine below it,
//! [`expand`], takes any [`CostVolume`] and [`PairwiseModel`], so it serves other labelling
//! problems too (see [`multilabel`]).
//!
//! ```
//! use segcut::io::Image;
//! use segcut::stereo::{stereo, StereoOptions};
//! // A textured 24×8 pair; the right view is the left shifted by 3 pixels.
//! let tex = |x: i64, y: i64| (((x * 37 + y * 11) % 23) * 11) as f32;
//! let left: Vec<f32> = (0..8).flat_map(|y| (0..24).map(move |x| tex(x, y))).collect();
//! let right: Vec<f32> = (0..8).flat_map(|y| (0..24).map(move |x| tex(x + 3, y))).collect();
//! let (l, r) = (Image::new([24, 8, 1], 1, left), Image::new([24, 8, 1], 1, right));
//! let opts = StereoOptions { num_disparities: 6, ..Default::default() };
//! let res = stereo(&l, &r, &opts).unwrap();
//! assert_eq!(res.disparity()[10 + 24 * 4], 3.0);
//! ```

pub mod budget;
pub mod cost;
pub mod eval;
pub mod expansion;
pub mod export;
pub mod gpu;
pub mod median;
pub mod multilabel;
pub mod occlusion;

pub use cost::{cost_volume, CostOptions, DataTerm};
pub use expansion::{
    build_move, energy, expand, expand_observed, CostVolume, Expansion, ExpansionOptions, GpuWork,
    MoveStats, Pairwise, PairwiseModel, PassStats, MAX_COST,
};
pub use median::WeightedMedian;

use crate::graph::Connectivity;
use crate::io::Image;
use crate::maxflow::{plan, GraphSize, SolverKind};
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// The smoothness term's label distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Smoothness {
    /// Contrast-sensitive Potts: any change of disparity costs the pair's weight.
    #[default]
    Potts,
    /// Truncated linear: `min(|d_p − d_q|, truncation)` times the weight.
    TruncatedLinear {
        /// `T ≥ 1` (in disparity steps).
        truncation: u32,
    },
}

impl Smoothness {
    /// The engine's pairwise distance.
    pub fn pairwise(self) -> Pairwise {
        match self {
            Smoothness::Potts => Pairwise::Potts,
            Smoothness::TruncatedLinear { truncation } => Pairwise::TruncatedLinear { truncation },
        }
    }
}

/// Everything [`stereo`] needs besides the pair. The defaults are the documented default
/// setting (docs/stereo.md).
#[derive(Clone, Debug, PartialEq)]
pub struct StereoOptions {
    /// The smallest disparity (label 0).
    pub min_disparity: i32,
    /// Number of disparities (labels `0..N`, disparities `min .. min + N`).
    pub num_disparities: usize,
    /// The data term.
    pub cost: CostOptions,
    /// The smoothness term's distance.
    pub smoothness: Smoothness,
    /// λ: the pair weight across an intensity edge (in cost units before [`CostOptions::scale`]).
    pub lambda: f32,
    /// Where neighbouring pixels differ by less than this (largest channel difference, 8-bit
    /// units) the weight is `contrast_factor · λ`.
    pub contrast_threshold: f32,
    /// The weight factor for similar neighbours (λ₁ = factor · λ₂, λ₂ = λ).
    pub contrast_factor: f32,
    /// 4- or 8-connected.
    pub connectivity: Connectivity,
    /// Solver, passes, starting labelling.
    pub expansion: ExpansionOptions,
    /// Left–right consistency check with this tolerance (disparity steps), and the left pixels it
    /// finds inconsistent filled from their row's background ([`occlusion`]); `None`: off. The
    /// right view's map costs a second α-expansion.
    pub left_right: Option<u32>,
    /// The joint weighted median filter applied last to the map, whatever the solver ([`median`];
    /// the device engine runs it on the GPU, with the same result); radius 0: off.
    pub median: median::WeightedMedian,
}

impl Default for StereoOptions {
    fn default() -> Self {
        StereoOptions {
            min_disparity: 0,
            num_disparities: 16,
            cost: CostOptions::default(),
            smoothness: Smoothness::default(),
            lambda: 10.0,
            contrast_threshold: 5.0,
            contrast_factor: 2.0,
            connectivity: Connectivity::N4,
            expansion: ExpansionOptions::default(),
            left_right: DEFAULT_LEFT_RIGHT,
            median: DEFAULT_MEDIAN,
        }
    }
}

/// The default of [`StereoOptions::left_right`], chosen by cross-validation over the dev scenes
/// (docs/stereo.md).
pub const DEFAULT_LEFT_RIGHT: Option<u32> = None;

/// The default of [`StereoOptions::median`], chosen by cross-validation over the dev scenes
/// (docs/stereo.md).
pub const DEFAULT_MEDIAN: median::WeightedMedian = median::WeightedMedian {
    radius: 4,
    sigma_colour: 10.0,
    sigma_space: 4.0,
};

/// Whether the left–right check of [`stereo`] fills mismatched pixels too, not only occluded
/// ones ([`occlusion::left_right_fill`]); chosen by cross-validation (docs/stereo.md).
pub const LEFT_RIGHT_MISMATCHES: bool = false;

/// What [`stereo`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct StereoResult {
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// Disparity of label 0.
    pub min_disparity: i32,
    /// The α-expansion result: labels (disparity − min), energy, per-pass and per-move stats.
    pub expansion: Expansion,
    /// Time to compute the cost volume and the pair weights (of the left view's run).
    pub cost_time: Duration,
    /// With [`StereoOptions::left_right`]: the check's result, whose labels are the disparities
    /// (the energy and the moves are the left view's α-expansion, before the filling).
    pub occlusions: Option<occlusion::Occlusions>,
    /// With [`StereoOptions::median`] on: the labels after the filter (the last step).
    pub filtered: Option<Vec<u16>>,
    /// Time of the weighted median filter.
    pub filter_time: Duration,
    /// Time of the whole call.
    pub total_time: Duration,
}

impl StereoResult {
    /// The final labels: after the filter if it ran, else after the left–right check if it ran,
    /// else the α-expansion's.
    pub fn labels(&self) -> &[u16] {
        match (&self.filtered, &self.occlusions) {
            (Some(f), _) => f,
            (None, Some(o)) => &o.labels,
            (None, None) => &self.expansion.labels,
        }
    }

    /// The disparity of every left-view pixel, row by row.
    pub fn disparity(&self) -> Vec<f32> {
        self.labels()
            .iter()
            .map(|&l| (self.min_disparity + l as i32) as f32)
            .collect()
    }
}

/// The contrast-sensitive pair weights of the left view: `factor · λ` where the neighbours'
/// largest channel difference is below `threshold`, else `λ`; both scaled like the costs.
pub fn pair_weights(left: &Image, opts: &StereoOptions) -> Result<PairwiseModel> {
    let planes = cost::Planes::of(left, "left view")?;
    let (w, h) = (planes.width, planes.height);
    let (lam1, lam2) = lambdas(opts);
    PairwiseModel::from_fn(
        w,
        h,
        opts.connectivity,
        opts.smoothness.pairwise(),
        |p, q| {
            let diff = planes
                .channels
                .iter()
                .map(|c| (c[p] - c[q]).abs())
                .fold(0f32, f32::max);
            if diff < opts.contrast_threshold {
                lam1
            } else {
                lam2
            }
        },
    )
}

/// The two pair weights, `(similar, across an edge)`: `round(factor · λ · scale)` and
/// `round(λ · scale)`.
pub(crate) fn lambdas(opts: &StereoOptions) -> (i32, i32) {
    let lam2 = (opts.lambda * opts.cost.scale).round() as i32;
    let lam1 = (opts.lambda * opts.contrast_factor * opts.cost.scale).round() as i32;
    (lam1, lam2)
}

/// Whether [`stereo`] runs on the device: the solver is `cuda-grid`, or `auto` picks it for a
/// grid of this size on this machine.
pub(crate) fn on_device(left: &Image, opts: &StereoOptions) -> bool {
    let solve = &opts.expansion.solve;
    let size = GraphSize::of_grid(left.dims, opts.connectivity.degree());
    plan(solve.solver, size, &solve.auto, solve.device).solver == SolverKind::CudaGrid
}

/// Disparity of a rectified pair: the cost volume ([`cost_volume`]), the contrast-sensitive
/// weights ([`pair_weights`]), then α-expansion ([`expand`]). When the solver is `cuda-grid` (or
/// `auto` picks it) all of it runs on the GPU ([`gpu::stereo_on_device`], the same result bit for
/// bit); `auto` falls back to the CPU where the GPU declines (no device, not enough memory).
pub fn stereo(left: &Image, right: &Image, opts: &StereoOptions) -> Result<StereoResult> {
    let t = Instant::now();
    budget_check(left, opts)?;
    opts.median.check()?;
    // With the left–right check the filter comes after it, on the host; without, the device
    // engine filters its own labelling (and only the host path is left to do it here).
    let view_opts = match opts.left_right {
        Some(_) => &StereoOptions {
            median: median::WeightedMedian::OFF,
            ..opts.clone()
        },
        None => opts,
    };
    let mut res = stereo_one_view(left, right, view_opts)?;
    if let Some(tolerance) = opts.left_right {
        // The right view as the reference: the mirrored pair (module occlusion).
        let r = stereo_one_view(
            &occlusion::mirror(right),
            &occlusion::mirror(left),
            view_opts,
        )?;
        let right_labels = occlusion::mirror_labels(&r.expansion.labels, r.width);
        res.occlusions = Some(occlusion::left_right_fill(
            &res.expansion.labels,
            &right_labels,
            res.width,
            opts.min_disparity,
            tolerance,
            LEFT_RIGHT_MISMATCHES,
        ));
    }
    if opts.median.is_on() && res.filtered.is_none() {
        let tf = Instant::now();
        res.filtered = Some(median::weighted_median(res.labels(), left, &opts.median)?);
        res.filter_time = tf.elapsed();
    }
    res.total_time = t.elapsed();
    Ok(res)
}

/// The memory budget [`stereo`] checks first, for a pair whose left view is `left`.
pub(crate) fn budget_check(left: &Image, opts: &StereoOptions) -> Result<()> {
    budget::check(left.dims, left.channels, opts)
}

/// [`stereo`] without the left–right check: the left view's map.
fn stereo_one_view(left: &Image, right: &Image, opts: &StereoOptions) -> Result<StereoResult> {
    if on_device(left, opts) {
        match gpu::stereo_on_device(left, right, opts) {
            Err(Error::Unsupported(_)) if opts.expansion.solve.solver == SolverKind::Auto => {}
            r => return r,
        }
    }
    let t = Instant::now();
    let cost = cost_volume(
        left,
        right,
        opts.min_disparity,
        opts.num_disparities,
        &opts.cost,
    )?;
    let model = pair_weights(left, opts)?;
    let cost_time = t.elapsed();
    let expansion = expand(&cost, &model, &opts.expansion)?;
    Ok(StereoResult {
        width: cost.width,
        height: cost.height,
        min_disparity: opts.min_disparity,
        expansion,
        cost_time,
        occlusions: None,
        filtered: None,
        filter_time: Duration::ZERO,
        total_time: t.elapsed(),
    })
}
