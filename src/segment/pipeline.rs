//! Image + seeds → mask: fit the colour models, build the energy, cut it, and (GrabCut) refit the
//! models on the result and cut again until the mask settles.
//!
//! ```
//! use segcut::segment::{segment, Image, Seed, Seeds, SegmentOptions};
//! // A dark square on a bright background, one seed in each.
//! let (w, h) = (12, 10);
//! let data: Vec<f32> = (0..w * h)
//!     .map(|i| if (3..8).contains(&(i % w)) && (3..7).contains(&(i / w)) { 20.0 } else { 230.0 })
//!     .collect();
//! let image = Image::new([w, h, 1], 1, data);
//! let mut seeds = Seeds::unknown(image.dims);
//! seeds.labels[5 + w * 5] = Seed::Foreground;
//! seeds.labels[0] = Seed::Background;
//! let seg = segment(&image, &seeds, &SegmentOptions::default()).unwrap();
//! assert!(seg.verified);
//! assert_eq!(seg.mask.iter().filter(|&&m| m).count(), 5 * 4);
//! ```

pub use super::color::ColorSpace;
use super::color::{to_color_space, WorkSpace};
use super::energy::{self, Energy, EnergyOptions, Palette, PROBABILITY_FLOOR};
use super::gpu::{
    stack_grid, stack_terminals, stackable, stacked_bytes, stacked_dims, EnergyKeep, GpuEnergy,
    GpuTimes,
};
use super::gpu_model::{FitLabels, FitStarted};
use super::gpu_prior::{Adapted, PriorRun};
use super::model::{
    fit_pair, Blend, ColorModel, Model, ModelKind, ModelParams, WarmPair, MAX_FIT_SAMPLES,
};
use super::post::{post_process, PostProcess};
use super::prior::{
    adapt_to_colours, explained_threshold, prior_costs, scale_by_enclosure, stroke_coverage,
    SpatialPrior,
};
use crate::cuda::{Device, DeviceCounts};
use crate::graph::{Connectivity, GridGraph};
use crate::io::{Image, Seed, Seeds};
use crate::maxflow::cuda::{CudaGrid, WarmGrid};
use crate::maxflow::{
    declined, fall_back, plan, verify, AutoPolicy, Certificate, Choice, Cut, Dynamic, GraphSize,
    MaxFlow, SolveOptions, Solved, SolverKind,
};
use crate::{Error, Result};
use cudarc::driver::CudaSlice;
use rayon::prelude::*;
use std::borrow::Cow;
use std::time::{Duration, Instant};

/// Everything [`segment`] can be told.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentOptions {
    /// Neighbourhood; `None` picks N8 for images and N6 for volumes.
    pub connectivity: Option<Connectivity>,
    /// n-link weight `λ` (nats per unit of contrast-weighted boundary).
    pub lambda: f64,
    /// Contrast scale `σ` (`β = 1/(2σ²)`); `None` estimates `β` from the image.
    pub sigma: Option<f64>,
    /// Colour model.
    pub model: ModelKind,
    /// Colour space for the models and the n-links.
    pub color_space: ColorSpace,
    /// Most cuts to make: 1 is plain Boykov–Jolly; more refit the models on the last mask
    /// (GrabCut) and stop early when the mask no longer changes.
    pub iterations: usize,
    /// Weight `w` of the seed-fitted model in the refit rounds: each class's likelihood is
    /// `(1 − w)·p_refit + w·p_seeds`. 0 is plain GrabCut; 1 keeps the seed models throughout.
    pub seed_weight: f64,
    /// EM iterations of the third and later rounds' mixtures, continued from the round
    /// before's ([`Gmm::refit`](super::model::Gmm::refit)); 0 fits every round from scratch
    /// (k-means++, Lloyd steps and EM). The second round's refit always starts from scratch:
    /// the mask's classes differ most from the seeds' there, and k-means++ places components
    /// on colours the seeds never sampled, which EM from the seeds' mixtures does not.
    pub refit_steps: usize,
    /// Max-flow solver; `auto` (the default) uses the GPU grid solver when a GPU is usable and
    /// the image is large enough ([`SegmentOptions::auto`]), BK otherwise.
    pub solver: SolverKind,
    /// How `auto` chooses.
    pub auto: AutoPolicy,
    /// Check every cut's optimality certificate with [`verify`].
    pub verify: bool,
    /// Keep the last iteration's graph in [`Segmentation::graph`].
    pub keep_graph: bool,
    /// Build the graph on the GPU when the solver that runs is `cuda-grid` (named, or chosen by
    /// `auto`) and the input is covered ([`gpu::supported`](super::gpu::supported)); false
    /// builds on the CPU.
    pub gpu_build: bool,
    /// The stroke-geometry prior on the unlabelled pixels ([`super::prior`]); weight 0 turns it
    /// off.
    pub prior: SpatialPrior,
    /// Weight `ε` of a uniform outlier component in each class's colour likelihood
    /// ([`Blend::with_outlier`]); 0 turns it off.
    pub outlier: f64,
    /// Clean-up of the final mask ([`super::post`]); the default changes nothing.
    pub post: PostProcess,
    /// Which pixels the first round's models are fitted on.
    pub initial: InitialModels,
    /// The enclosure `E₀` up to which [`InitialModels::NearerBackground`] and
    /// [`InitialModels::NearerUnexplained`] apply: on an image whose strokes' enclosure `E`
    /// ([`super::prior::enclosure`]) is above it, the first round's models are the seeds'.
    /// 1 applies them on every image.
    pub initial_enclosure: f64,
    /// The strokes' coverage `c₀` ([`super::prior::stroke_coverage`]: the share of the pixels
    /// with a hard seed) up to which [`InitialModels::NearerBackground`] and
    /// [`InitialModels::NearerUnexplained`] apply: strokes that cover more have sampled the
    /// image's colours well enough on their own, and the first round's models are the seeds'.
    /// 1 applies them whatever the coverage.
    pub initial_coverage: f64,
    /// The margin `t` of [`InitialModels::NearerBackground`] and
    /// [`InitialModels::NearerUnexplained`]: only the unlabelled pixels the background strokes
    /// reach first by more than `t` of the prior's normalised distance difference
    /// (`(d_F − d_B) / (d_F + d_B + L) > t`, i.e. `δ_geo > t·γ`) join the background's first
    /// model. 0 takes every pixel with `δ_geo > 0`.
    pub initial_margin: f64,
    /// The threshold `ρ` of the stroke check ([`super::strokes`]): a short hard stroke whose
    /// pixels the opposite class's strokes explain more often than the other strokes of its own
    /// class, by a share above `ρ`, is dropped before the models, the prior and the constraints
    /// see the seeds. 1 turns the check off.
    pub stroke_check: f64,
    /// Warm-start rounds 2.. from the last round's flow: only the t-links change between rounds,
    /// so the solve continues instead of starting over. Applies to BK, to `cuda-grid` on a graph
    /// built on the GPU ([`WarmGrid`]: the preflow stays on the
    /// device), and to `cuda-grid` on a host-built graph when named
    /// ([`maxflow::Dynamic`](crate::maxflow::Dynamic)). The masks are the same either way
    /// (the canonical cut); false solves every round from scratch, for comparison.
    pub warm_start: bool,
    /// The GPU the graph is built and cut on when a GPU solver runs (default device 0); `auto`
    /// asks this device whether it is usable.
    pub device: Device,
}

impl Default for SegmentOptions {
    /// Chosen by cross-validation over the 39 dev photos (GrabCut-BSDS dev and extra dev, both
    /// scribble sets; see `docs/segmentation.md`).
    fn default() -> Self {
        SegmentOptions {
            connectivity: None,
            lambda: 100.0,
            sigma: None,
            model: ModelKind::Gmm { components: 5 },
            color_space: ColorSpace::Lab,
            iterations: 5,
            seed_weight: 0.5,
            refit_steps: 0,
            solver: SolverKind::Auto,
            auto: AutoPolicy::default(),
            verify: true,
            keep_graph: false,
            gpu_build: true,
            // Chosen by 5-fold cross-validation over the 39 dev photos and both scribble sets
            // (docs/segmentation.md); γ, the enclosure exponent and the coverage threshold by
            // nested cross-validation (issue 25, "A prior that follows the strokes' enclosure"
            // and "A prior that steps back for strokes that cover much of the image").
            prior: SpatialPrior {
                weight: 15.0,
                contrast: 3.0,
                softness: 0.15,
                explained: 1.0,
                enclosure: 8.0,
                coverage: 0.025,
            },
            outlier: 0.0,
            post: PostProcess {
                drop_unseeded: true,
                max_hole: 0,
            },
            // The first fit's gate (enclosure, coverage, margin) and the stroke check: nested
            // cross-validation over the dev and synthetic strokes (issue 25, "A first fit gated
            // by how much the strokes say").
            initial: InitialModels::NearerBackground,
            initial_enclosure: 0.8,
            initial_coverage: 0.05,
            initial_margin: 0.2,
            stroke_check: 0.5,
            warm_start: true,
            device: Device::default(),
        }
    }
}

impl SegmentOptions {
    /// What of these options the memory estimate depends on ([`super::budget::memory_needed`]).
    pub fn memory_needs(&self) -> super::budget::Needs {
        super::budget::Needs {
            connectivity: self.connectivity,
            warm_start: self.warm_start,
            prior: self.prior.weight > 0.0,
        }
    }

    /// The connectivity used for `image`.
    pub fn connectivity_for(&self, image: &Image) -> Connectivity {
        self.connectivity.unwrap_or(if image.is_volume() {
            Connectivity::N6
        } else {
            Connectivity::N8
        })
    }

    /// The energy's options for `image` (what every round's graph is built with).
    pub(crate) fn energy_options(&self, image: &Image) -> EnergyOptions {
        EnergyOptions {
            connectivity: self.connectivity_for(image),
            lambda: self.lambda,
            sigma: self.sigma,
            scale: None,
        }
    }
}

/// Time and outcome of one fit-build-cut round.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationStats {
    /// Fitting the two models.
    pub models: Duration,
    /// Building (or updating) the graph.
    pub graph: Duration,
    /// The solve (the cut's download from the GPU included).
    pub solve: Duration,
    /// Checking the cut's certificate (zero when not asked).
    pub verify: Duration,
    /// Applying the cut to the mask and taking the round's energy.
    pub mask: Duration,
    /// Maximum flow (capacity units).
    pub flow: i64,
    /// Energy of the mask, in nats.
    pub energy: f64,
    /// Foreground pixels.
    pub foreground: usize,
    /// Pixels whose label differs from the previous round (all foreground pixels in round 1).
    pub changed: usize,
    /// Whether the cut continued from the last round's flow ([`SegmentOptions::warm_start`]).
    pub warm: bool,
    /// The round's host waits for the GPU ([`crate::cuda::host_waits`]), by phase (0 on the
    /// CPU).
    pub host_waits: RoundCounts,
    /// The round's device allocations ([`crate::cuda::device_allocations`]), by phase (0 on
    /// the CPU, and on a warm session's rounds).
    pub device_allocations: RoundCounts,
}

/// One count (host waits, or device allocations) of a round, by phase, counted on the thread
/// that segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RoundCounts {
    /// Fitting the models (the sample gather on the device).
    pub models: u64,
    /// Setting the t-links.
    pub graph: u64,
    /// The solve and the cut's download.
    pub solve: u64,
    /// The certificate check.
    pub verify: u64,
    /// The whole round (the above and anything between them).
    pub total: u64,
}

impl RoundCounts {
    /// The host waits and the device allocations of a round from the thread's counts at its
    /// start and after each phase (`[start, models, graph, solve, verify]`).
    pub fn of(marks: [DeviceCounts; 5]) -> (RoundCounts, RoundCounts) {
        let d = |i: usize| marks[i + 1].since(marks[i]);
        let total = marks[4].since(marks[0]);
        let pick = |f: fn(DeviceCounts) -> u64| RoundCounts {
            models: f(d(0)),
            graph: f(d(1)),
            solve: f(d(2)),
            verify: f(d(3)),
            total: f(total),
        };
        (pick(|c| c.host_waits), pick(|c| c.device_allocations))
    }
}

/// Sizes and timings of a [`segment`] run.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentStats {
    /// `[width, height, depth]`.
    pub dims: [usize; 3],
    /// Connectivity used.
    pub connectivity: Connectivity,
    /// Graph nodes (pixels).
    pub nodes: usize,
    /// Neighbour pairs (n-link edges).
    pub edges: usize,
    /// Seed counts `[unknown, fg, bg, probably fg, probably bg]`.
    pub seed_counts: [usize; 5],
    /// Contrast parameter `β`.
    pub beta: f64,
    /// Capacity units per nat.
    pub scale: f64,
    /// Hard-seed capacity `K`.
    pub hard: i32,
    /// Checking the seeds, the options and the memory budget.
    pub checks: Duration,
    /// Choosing the solver: under `auto` this asks the GPU whether it is usable, which creates
    /// its context unless something did before (the command line starts that at process
    /// start: see [`warm_up`](super::session::warm_up)).
    pub plan: Duration,
    /// Converting the image (colour space), before the first round; with the GPU build, the
    /// upload, the conversion and the n-links (see [`SegmentStats::gpu`]).
    pub prepare: Duration,
    /// Where the graph was built, with the GPU build's stage times; `None`: on the CPU.
    pub gpu: Option<GpuTimes>,
    /// Where the stroke-geometry prior was computed (with the device's passes, or why the
    /// host took over).
    pub prior_run: PriorRun,
    /// Computing the prior (and the nearest-stroke geometry), part of [`SegmentStats::prepare`].
    pub prior_time: Duration,
    /// The strokes' enclosure `E` the prior was scaled by ([`super::prior::enclosure`]); `None`
    /// when the prior does not follow it ([`SpatialPrior::enclosure`] 0, or no prior).
    pub prior_enclosure: Option<f64>,
    /// Where the prior was adapted to the strokes (the enclosure, the explained-colour share);
    /// `None` when it was not ([`SpatialPrior::adapts`], or no prior).
    pub prior_adapted: Option<Adapted>,
    /// Why the graph was built on the CPU although the GPU solver runs (the GPU build declined
    /// the input), if it was.
    pub gpu_build_declined: Option<String>,
    /// The solver that ran the last round's cut, and why.
    pub solver: Choice,
    /// One entry per round run.
    pub iterations: Vec<IterationStats>,
    /// Pixels that [`SegmentOptions::post`] changed after the last cut.
    pub post_changed: usize,
    /// The post-processing and the graph's read-back (when kept).
    pub post: Duration,
    /// Host waits and device allocations of [`SegmentStats::prepare`] (the upload, the
    /// conversion, the n-links, the prior), counted on the thread that segments.
    pub prepare_counts: DeviceCounts,
    /// Host waits and device allocations of [`SegmentStats::post`] (the kept graph's
    /// download, handing the state back).
    pub post_counts: DeviceCounts,
}

impl SegmentStats {
    /// Rounds run.
    pub fn iterations_run(&self) -> usize {
        self.iterations.len()
    }
}

/// The result of [`segment`].
#[derive(Clone, Debug)]
pub struct Segmentation {
    /// One per pixel: true = foreground (the source side of the last cut, then
    /// [`SegmentOptions::post`] if it is set: see [`SegmentStats::post_changed`]).
    pub mask: Vec<bool>,
    /// Maximum flow of the last cut (capacity units).
    pub flow: i64,
    /// Energy of the mask in nats (last round's models).
    pub energy: f64,
    /// Whether every cut's certificate was checked (and passed: a failure is an error).
    pub verified: bool,
    /// The last round's graph, if [`SegmentOptions::keep_graph`].
    pub graph: Option<GridGraph>,
    /// Sizes and timings.
    pub stats: SegmentStats,
}

fn seed_error(msg: String) -> Error {
    Error::Input {
        file: "seeds".into(),
        msg,
    }
}

/// Checks the seeds: sizes match, and both classes have something to fit a model on.
fn check_seeds(image: &Image, seeds: &Seeds) -> Result<[usize; 5]> {
    energy::check_seeds(image, seeds)?;
    let c = seeds.counts();
    let (fg, bg) = (c[1] + c[3], c[2] + c[4]);
    if fg == 0 {
        return Err(seed_error(format!(
            "no foreground seeds ({} background, {} probably-background, {} unlabelled pixels)",
            c[2], c[4], c[0]
        )));
    }
    if bg == 0 {
        return Err(seed_error(format!(
            "no background seeds ({} foreground, {} probably-foreground, {} unlabelled pixels)",
            c[1], c[3], c[0]
        )));
    }
    Ok(c)
}

/// The image in the models' colour space: converted in full (the CPU build), or pixel by pixel
/// from the original when asked (the GPU build converts the whole image on the device; the host
/// only needs the pixels the models are fitted on).
enum Work<'a> {
    Host(Cow<'a, Image>),
    Lazy(&'a Image, WorkSpace),
}

impl Work<'_> {
    fn image(&self) -> &Image {
        match self {
            Work::Host(i) => i,
            Work::Lazy(i, _) => i,
        }
    }
}

/// Collects the values of the pixels of one class (per `label`) into `out`. A mixture is fitted
/// on every `step`-th sample of at most [`MAX_FIT_SAMPLES`] (see [`Gmm::fit`](super::model::Gmm)),
/// so for one only those pixels are collected: the same samples, without copying the rest.
fn gather(work: &Work, kind: ModelKind, label: impl Fn(usize) -> bool + Sync, out: &mut Vec<f32>) {
    const CHUNK: usize = 1 << 16;
    out.clear();
    let n = work.image().num_pixels();
    let counts: Vec<usize> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            (c * CHUNK..n.min((c + 1) * CHUNK))
                .filter(|&i| label(i))
                .count()
        })
        .collect();
    let total: usize = counts.iter().sum();
    let step = match kind {
        ModelKind::Gmm { .. } => total.div_ceil(MAX_FIT_SAMPLES).max(1),
        ModelKind::Histogram { .. } => 1,
    };
    let mut first = Vec::with_capacity(counts.len());
    let mut seen = 0;
    for c in &counts {
        first.push(seen);
        seen += c;
    }
    let picked: Vec<Vec<usize>> = first
        .par_iter()
        .enumerate()
        .map(|(c, &ordinal)| {
            let mut k = ordinal;
            let mut v = Vec::new();
            for i in c * CHUNK..n.min((c + 1) * CHUNK) {
                if label(i) {
                    if k % step == 0 {
                        v.push(i);
                    }
                    k += 1;
                }
            }
            v
        })
        .collect();
    for i in picked.into_iter().flatten() {
        match work {
            Work::Host(image) => out.extend_from_slice(image.pixel(i)),
            Work::Lazy(image, space) => space.push_pixel(image, i, out),
        }
    }
}

fn fit_models(
    work: &Work,
    params: &ModelParams,
    kind: ModelKind,
    fg_pixel: impl Fn(usize) -> bool + Sync,
    bg_pixel: impl Fn(usize) -> bool + Sync,
    buf: &mut Vec<f32>,
    warm: WarmPair<'_>,
) -> Result<(Model, Model)> {
    let mut other = Vec::new();
    gather(work, kind, fg_pixel, buf);
    gather(work, kind, bg_pixel, &mut other);
    fit_pair(kind, params, buf, &other, warm)
}

/// The models fitted on the seeds alone: hard and soft foreground seeds for one, background for
/// the other (the first round's models, and the blend partner of later rounds).
fn fit_seed_models(
    work: &Work,
    params: &ModelParams,
    kind: ModelKind,
    seeds: &Seeds,
    buf: &mut Vec<f32>,
) -> Result<(Model, Model)> {
    fit_models(
        work,
        params,
        kind,
        |i| matches!(seeds.labels[i], Seed::Foreground | Seed::ProbablyForeground),
        |i| matches!(seeds.labels[i], Seed::Background | Seed::ProbablyBackground),
        buf,
        None,
    )
}

/// Which pixels the first round's models are fitted on.
///
/// | choice | foreground model | background model |
/// |--------|------------------|------------------|
/// | `Seeds` | foreground seeds (hard and soft) | background seeds |
/// | `NearestStroke` | + unlabelled pixels geodesically nearer a foreground stroke ([`super::prior`]) | + the other unlabelled pixels |
/// | `UnlabelledBackground` | foreground seeds | + every unlabelled pixel (GrabCut's rectangle rule) |
/// | `NearerBackground` | foreground seeds | + the unlabelled pixels geodesically nearer a background stroke (`δ_geo > 0`) |
/// | `NearerUnexplained` | foreground seeds | + those of them whose colour the foreground seeds' model does not explain |
///
/// The last two apply only where the strokes' enclosure `E` is at most
/// [`SegmentOptions::initial_enclosure`] and their coverage at most
/// [`SegmentOptions::initial_coverage`] (elsewhere: `Seeds`), and hand over only the pixels
/// beyond [`SegmentOptions::initial_margin`]. The refit rounds' blend partner
/// ([`SegmentOptions::seed_weight`]) is always the seeds' model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitialModels {
    /// The seeds alone.
    #[default]
    Seeds,
    /// Seeds plus the unlabelled pixels by their nearest stroke.
    NearestStroke,
    /// Seeds, and every unlabelled pixel in the background.
    UnlabelledBackground,
    /// The foreground seeds; the background seeds plus the unlabelled pixels the background
    /// strokes reach first (geodesically, the prior's `δ_geo > 0`), where the strokes do not
    /// enclose the object.
    NearerBackground,
    /// As [`InitialModels::NearerBackground`], but of those unlabelled pixels only the ones whose
    /// colour the foreground seeds' model does not explain (a cost above its
    /// [`explained_threshold`]): a large object that reaches past the background strokes keeps
    /// its own colours out of the background's first model.
    NearerUnexplained,
}

impl InitialModels {
    /// Whether the first fit needs the strokes' geodesic geometry (the prior's `δ_geo`).
    pub fn needs_geometry(self) -> bool {
        matches!(
            self,
            InitialModels::NearestStroke
                | InitialModels::NearerBackground
                | InitialModels::NearerUnexplained
        )
    }
}

/// Whether this segmentation's first fit needs `δ_geo` on the host: the nearer-background rules
/// do not where the strokes' coverage is above [`SegmentOptions::initial_coverage`] (their first
/// models are the seeds' there), which spares the GPU build the download.
fn first_fit_needs_geometry(opts: &SegmentOptions, seeds: &Seeds) -> bool {
    match opts.initial {
        InitialModels::NearerBackground | InitialModels::NearerUnexplained => {
            super::prior::stroke_coverage(seeds) <= opts.initial_coverage
        }
        other => other.needs_geometry(),
    }
}

/// The prior's per-pixel `δ` when the prior or the initial fit needs it (weight 1 when only the
/// initial fit does: it uses the sign).
fn initial_geometry(
    image: &Image,
    seeds: &Seeds,
    opts: &SegmentOptions,
) -> Result<Option<Vec<f32>>> {
    if opts.prior.weight > 0.0 {
        return prior_costs(image, seeds, &opts.prior);
    }
    if opts.initial.needs_geometry() {
        let unit = SpatialPrior {
            weight: 1.0,
            ..opts.prior
        };
        return prior_costs(image, seeds, &unit);
    }
    Ok(None)
}

/// [`initial_geometry`] computed on the device, which keeps it as the t-links' prior; brought
/// to the host only when `download` (a host step needs it: the nearest-stroke fit, the adaptive
/// prior), as it costs a copy of the whole image's values.
fn device_geometry(
    d: &mut GpuEnergy,
    image: &Image,
    seeds: &Seeds,
    opts: &SegmentOptions,
    download: bool,
) -> Result<(Option<Vec<f32>>, PriorRun)> {
    let prior = match (opts.prior.weight > 0.0, opts.initial.needs_geometry()) {
        (true, _) => opts.prior,
        (false, true) => SpatialPrior {
            weight: 1.0,
            ..opts.prior
        },
        (false, false) => return Ok((None, PriorRun::Off)),
    };
    let run = d.compute_prior(image, seeds, &prior)?;
    let host = if download { d.prior_host()? } else { None };
    Ok((host, run))
}

/// Whether adapting the prior to the strokes ([`SpatialPrior::adapts`]) needs the host's copy
/// of it: the explained-colour share does (the seeds' models judge every pixel's colour on the
/// host); the enclosure and coverage alone do not, the device counts and scales it
/// ([`GpuEnergy::scale_prior_by_enclosure`]).
fn adapts_on_host(prior: &SpatialPrior) -> bool {
    prior.adapts() && prior.explained < 1.0
}

/// The geometry `δ` split between its two users: the nearest-stroke fit (`geometry`) and the
/// host's copy of the prior (`prior`), moved where only one needs it.
fn split_geometry(
    delta: Option<Vec<f32>>,
    geometry: bool,
    prior: bool,
) -> (Option<Vec<f32>>, Option<Vec<f32>>) {
    match (geometry, prior) {
        (true, true) => (delta.clone(), delta),
        (true, false) => (delta, None),
        (false, true) => (None, delta),
        (false, false) => (None, None),
    }
}

/// The first round's models when [`SegmentOptions::initial`] asks for more than the seeds
/// (`None`: the seeds' models are the first round's). `fitted` are the seeds' models (the
/// foreground one is kept by the nearer-background rules), `geometry` the prior's `δ_geo`
/// before any scaling (its sign is what the rules use).
fn fit_initial_models(
    work: &Work,
    params: &ModelParams,
    opts: &SegmentOptions,
    seeds: &Seeds,
    fitted: &(Model, Model),
    geometry: Option<&[f32]>,
    buf: &mut Vec<f32>,
) -> Result<Option<(Model, Model)>> {
    let l = &seeds.labels;
    let is_fg = |i: usize| matches!(l[i], Seed::Foreground | Seed::ProbablyForeground);
    let is_bg = |i: usize| matches!(l[i], Seed::Background | Seed::ProbablyBackground);
    let models = match (opts.initial, geometry) {
        (InitialModels::Seeds, _) => return Ok(None),
        (InitialModels::UnlabelledBackground, _) => fit_models(
            work,
            params,
            opts.model,
            is_fg,
            |i| is_bg(i) || l[i] == Seed::Unknown,
            buf,
            None,
        )?,
        // The geometric rules without geometry (a class has no hard seed): the seeds' models.
        (_, None) => return Ok(None),
        (InitialModels::NearestStroke, Some(g)) => fit_models(
            work,
            params,
            opts.model,
            |i| is_fg(i) || (l[i] == Seed::Unknown && g[i] < 0.0),
            |i| is_bg(i) || (l[i] == Seed::Unknown && g[i] >= 0.0),
            buf,
            None,
        )?,
        (InitialModels::NearerBackground | InitialModels::NearerUnexplained, Some(g)) => {
            match nearer_background(work, params, opts, seeds, &fitted.0, g, buf)? {
                Some(bg) => (fitted.0.clone(), bg),
                None => return Ok(None),
            }
        }
    };
    Ok(Some(models))
}

/// The first background model of [`InitialModels::NearerBackground`] and
/// [`InitialModels::NearerUnexplained`]: the background seeds plus the unlabelled pixels with
/// `δ_geo > t·γ` (`t` = [`SegmentOptions::initial_margin`]; for the second, only those whose
/// colour `fg`, the foreground seeds' model, does not explain: a cost above its
/// [`explained_threshold`] over its own samples). `None` where the strokes' enclosure `E` of
/// `δ_geo` is above [`SegmentOptions::initial_enclosure`] or their coverage above
/// [`SegmentOptions::initial_coverage`] (the seeds' models are the first round's there).
fn nearer_background(
    work: &Work,
    params: &ModelParams,
    opts: &SegmentOptions,
    seeds: &Seeds,
    fg: &Model,
    geometry: &[f32],
    buf: &mut Vec<f32>,
) -> Result<Option<Model>> {
    let image = work.image();
    let e = super::prior::enclosure(geometry, image.dims);
    if e.is_none_or(|e| e > opts.initial_enclosure)
        || super::prior::stroke_coverage(seeds) > opts.initial_coverage
    {
        return Ok(None);
    }
    let l = &seeds.labels;
    let is_bg = |i: usize| matches!(l[i], Seed::Background | Seed::ProbablyBackground);
    // `geometry` is `δ_geo` at the prior's weight γ (1 when only the first fit needs it).
    let unit = if opts.prior.weight > 0.0 {
        opts.prior.weight
    } else {
        1.0
    };
    let margin = (opts.initial_margin * unit) as f32;
    let nearer = |i: usize| l[i] == Seed::Unknown && geometry[i] > margin;
    let bg = if opts.initial == InitialModels::NearerUnexplained {
        // The threshold from the very samples the foreground model was fitted on.
        let fg_seed = |i: usize| matches!(l[i], Seed::Foreground | Seed::ProbablyForeground);
        gather(work, opts.model, fg_seed, buf);
        let t_fg = explained_threshold(fg, buf, image.channels).unwrap_or(f64::INFINITY);
        let ch = image.channels;
        // Judged once per pixel, in parallel (the GPU build converts each pixel on the host).
        let handed: Vec<bool> = (0..image.num_pixels())
            .into_par_iter()
            .map_init(Vec::new, |px, i| {
                nearer(i) && {
                    let x: &[f32] = match work {
                        Work::Host(image) => image.pixel(i),
                        Work::Lazy(image, space) => {
                            px.clear();
                            space.push_pixel(image, i, px);
                            px
                        }
                    };
                    fg.neg_log_likelihood(&x[..ch]) > t_fg
                }
            })
            .collect();
        gather(work, opts.model, |i| is_bg(i) || handed[i], buf);
        Model::fit(opts.model, buf, params, "background")?
    } else {
        gather(work, opts.model, |i| is_bg(i) || nearer(i), buf);
        Model::fit(opts.model, buf, params, "background")?
    };
    Ok(Some(bg))
}

/// Fits the models on the seeds and builds the plain Boykov–Jolly graph of them: no stroke
/// prior, no blend or outlier terms ([`first_round_graph`] is the graph a segmentation's first
/// round cuts, what `--export-graph` writes).
pub fn build_graph(image: &Image, seeds: &Seeds, opts: &SegmentOptions) -> Result<Energy> {
    energy::check_image(image)?;
    check_seeds(image, seeds)?;
    let work = Work::Host(to_color_space(image, opts.color_space));
    let w = work.image();
    let params = ModelParams::from_image(&w.data, w.channels);
    let mut buf = Vec::new();
    let (fg, bg) = fit_seed_models(&work, &params, opts.model, seeds, &mut buf)?;
    energy::build_graph(w, seeds, &fg, &bg, &opts.energy_options(w))
}

/// The solver that runs on `image`'s graph, and whether the graph is built on the GPU: only
/// when that solver is `cuda-grid` and the GPU builder covers the input.
fn plan_solve(image: &Image, opts: &SegmentOptions, data: DataTerm) -> (Choice, bool) {
    // A probability map needs no models on the device: any model the builder covers will do.
    let model = match data {
        DataTerm::ColourModels => opts.model,
        DataTerm::Probability(_) => ModelKind::Gmm { components: 1 },
    };
    let size = GraphSize::of_grid(image.dims, opts.connectivity_for(image).degree());
    let choice = plan(opts.solver, size, &opts.auto, opts.device);
    let on_gpu = opts.gpu_build
        && choice.solver == SolverKind::CudaGrid
        && super::gpu::supported(image, model).is_ok();
    (choice, on_gpu)
}

/// Whether `image`'s graph is built and cut on the GPU with `opts` (the `cuda-grid` solver,
/// named or chosen by `auto`, and a GPU build that covers the input): where packing images
/// ([`Segmenter::segment_packed`](super::session::Segmenter::segment_packed)) stacks their
/// graphs on the device. Under `auto` this asks the GPU whether it is usable.
pub fn builds_on_gpu(image: &Image, opts: &SegmentOptions) -> bool {
    plan_solve(image, opts, DataTerm::ColourModels).1
}

/// The graph being cut: on the host, or on the GPU.
enum Graph {
    Host(Energy),
    Device(Box<GpuEnergy>),
}

/// What the rounds share: the image in the models' space, the graph, and the host solvers.
struct Rounds<'a> {
    image: &'a Image,
    seeds: &'a Seeds,
    opts: &'a SegmentOptions,
    work: Work<'a>,
    params: ModelParams,
    eopts: EnergyOptions,
    graph: Option<Graph>,
    choice: Choice,
    host: MaxFlow,
    /// The warm-starting host solver, when BK cuts a host graph and warm starts are on.
    dynamic: Option<Dynamic>,
    buf: Vec<f32>,
    /// The stroke-geometry prior's `δ` per pixel when the prior or the first fit needs it.
    geometry: Option<Vec<f32>>,
    /// The host's copy of the prior the t-links add, where a host step needs it (`None`: off,
    /// or kept on the device only).
    prior: Option<Vec<f32>>,
    /// Where the prior was computed.
    prior_run: PriorRun,
    /// What computing it took (part of the preparation).
    prior_time: Duration,
    /// Where it was adapted to the strokes, once it was.
    prior_adapted: Option<Adapted>,
    /// The nearer-background first fit is decided on the device (the prior stays there).
    nearer_on_device: bool,
    /// The strokes' enclosure of the device's prior once counted (by the nearer-background
    /// check), for the prior's scaling to reuse: counted once per image.
    enclosure: Option<Option<f64>>,
    /// The working image's colours, made at the first host t-links (`Some(None)`: too many
    /// to pay), so that every round evaluates its models once per colour.
    palette: Option<Option<Palette>>,
}

/// What [`Rounds::first_models`] gives the first round.
struct FirstModels {
    /// The models the first round cuts with.
    models: (Model, Model),
    /// The seeds' models (what later rounds blend in).
    seeds: (Model, Model),
    /// The enclosure the prior was scaled by, when it was.
    enclosure: Option<f64>,
}

/// The most distinct colours, as a share of the pixels, for which a host graph's t-links are
/// evaluated per colour ([`Palette`]): above it, sorting the pixels by colour costs more than
/// it saves.
const PALETTE_MAX_SHARE: f64 = 0.5;

/// Sets a host graph's t-links for one round (the prior, when there is one, on top of the
/// models' terms).
fn set_host_tlinks(
    e: &mut Energy,
    work: &Work,
    seeds: &Seeds,
    prior: Option<&[f32]>,
    tlinks: TLinks,
    palette: Option<&Palette>,
) -> Result<()> {
    match tlinks {
        TLinks::Models(fg, bg) => match palette {
            Some(p) => energy::set_tlinks_palette(e, work.image(), p, seeds, fg, bg, prior),
            None => energy::set_tlinks_with_prior(e, work.image(), seeds, fg, bg, prior),
        },
        TLinks::Probability(p) => energy::set_tlinks_probability(e, seeds, p, PROBABILITY_FLOOR),
    }
}

/// The first round's graph exactly as [`segment`] cuts it (the seeds' models, the stroke prior
/// and its adaptation, the blend and outlier terms), built on the host and not solved: the
/// product graph `segcut bench` times. [`build_graph`] is the plain Boykov–Jolly graph without
/// the prior.
///
/// ```
/// use segcut::io::{Image, Seed, Seeds};
/// use segcut::segment::{pipeline::first_round_graph, SegmentOptions};
/// let data = (0..32 * 3).map(|i| if (i / 3) % 8 < 4 { 0.1 } else { 0.9 }).collect();
/// let image = Image::new([8, 4, 1], 3, data);
/// let mut seeds = Seeds::unknown([8, 4, 1]);
/// seeds.labels[0] = Seed::Background;
/// seeds.labels[7] = Seed::Foreground;
/// let g = first_round_graph(&image, &seeds, &SegmentOptions::default()).unwrap();
/// assert_eq!(g.num_nodes(), 32);
/// ```
pub fn first_round_graph(
    image: &Image,
    seeds: &Seeds,
    opts: &SegmentOptions,
) -> Result<crate::graph::GridGraph> {
    check_seeds(image, seeds)?;
    let opts = SegmentOptions {
        gpu_build: false,
        ..opts.clone()
    };
    check_options(image, &opts)?;
    // The seeds the segmentation's first round sees.
    let checked = checked_seeds(image, seeds, &opts)?;
    let seeds = checked.as_ref().unwrap_or(seeds);
    let data = DataTerm::ColourModels;
    let (choice, _) = plan_solve(image, &opts, data);
    let mut solvers = Solvers::on(opts.device);
    let (mut r, _) = Rounds::prepare(image, seeds, &opts, data, choice, false, &mut solvers)?;
    let first = r.first_models()?;
    let (fg, bg) = first.models;
    let (sf, sb) = &first.seeds;
    // The first round blends nothing of the seeds' models in (weight 0), as in segment.
    let fg = Blend::new(fg, sf, 0.0).with_outlier(opts.outlier, &r.params);
    let bg = Blend::new(bg, sb, 0.0).with_outlier(opts.outlier, &r.params);
    let mut e = energy::build_nlinks(r.work.image(), &r.eopts)?;
    set_host_tlinks(
        &mut e,
        &r.work,
        seeds,
        r.prior.as_deref(),
        TLinks::Models(&fg, &bg),
        None,
    )?;
    Ok(e.graph)
}

/// What one round's t-links are made of.
#[derive(Clone, Copy)]
enum TLinks<'b> {
    /// The two classes' models.
    Models(&'b Blend<'b>, &'b Blend<'b>),
    /// A foreground probability per pixel.
    Probability(&'b [f32]),
}

/// One round's cut and the solver that made it.
struct RoundCut {
    solved: Solved,
    /// Continued from the last round's flow.
    warm: bool,
    graph: Duration,
    solve: Duration,
    verify: Duration,
    /// The thread's device counts when the models were ready (the cut's start), after the
    /// t-links, and after the solve.
    marks: [DeviceCounts; 3],
}

fn check_options(image: &Image, opts: &SegmentOptions) -> Result<()> {
    let bad = |msg: String| {
        Err(Error::Input {
            file: "segment options".into(),
            msg,
        })
    };
    if let Some(c) = opts.connectivity {
        if c.is_3d() != image.is_volume() {
            let (what, fits) = if image.is_volume() {
                ("a volume", "6 or 26")
            } else {
                ("a 2D image", "4 or 8")
            };
            return bad(format!(
                "connectivity {} does not apply to {what}: use {fits}",
                c.number()
            ));
        }
    }
    if !(0.0..=1.0).contains(&opts.seed_weight) {
        return bad(format!(
            "seed_weight must be in [0, 1], got {}",
            opts.seed_weight
        ));
    }
    if opts.iterations == 0 {
        return bad("iterations must be at least 1".into());
    }
    opts.model.check()?;
    if !(0.0..1.0).contains(&opts.outlier) {
        return bad(format!("outlier must be in [0, 1), got {}", opts.outlier));
    }
    if !(0.0..=1.0).contains(&opts.initial_enclosure) {
        return bad(format!(
            "initial_enclosure must be in [0, 1], got {}",
            opts.initial_enclosure
        ));
    }
    if !(0.0..=1.0).contains(&opts.initial_coverage) {
        return bad(format!(
            "initial_coverage must be in [0, 1], got {}",
            opts.initial_coverage
        ));
    }
    if !(0.0..1.0).contains(&opts.initial_margin) {
        return bad(format!(
            "initial_margin must be in [0, 1), got {}",
            opts.initial_margin
        ));
    }
    if !(0.0..=1.0).contains(&opts.stroke_check) {
        return bad(format!(
            "stroke_check must be in [0, 1], got {}",
            opts.stroke_check
        ));
    }
    opts.prior.check()
}

/// What the t-links are made of.
#[derive(Clone, Copy, Debug)]
pub enum DataTerm<'a> {
    /// Colour models fitted on the seeds (and refitted on the mask: GrabCut).
    ColourModels,
    /// A foreground probability per pixel, in `[0, 1]` ([`super::unary`]): one cut, the seeds
    /// (optional) as hard constraints.
    Probability(&'a [f32]),
}

/// Segments `image` given `seeds`, with colour models.
pub fn segment(image: &Image, seeds: &Seeds, opts: &SegmentOptions) -> Result<Segmentation> {
    segment_with(image, seeds, DataTerm::ColourModels, opts)
}

/// The seeds without the strokes [`SegmentOptions::stroke_check`] drops ([`super::strokes`]),
/// or `None` when it drops none.
fn checked_seeds(image: &Image, seeds: &Seeds, opts: &SegmentOptions) -> Result<Option<Seeds>> {
    super::strokes::check_strokes(
        image,
        seeds,
        opts.color_space,
        opts.model,
        opts.stroke_check,
    )
}

/// Checks a probability map against the image: one value per pixel, each in `[0, 1]`.
fn check_probability(image: &Image, prob: &[f32]) -> Result<()> {
    let n = image.num_pixels();
    let bad = |msg: String| Error::Input {
        file: "probability map".into(),
        msg,
    };
    if prob.len() != n {
        return Err(bad(format!(
            "{} values for an image of {n} pixels",
            prob.len()
        )));
    }
    if let Some(i) = prob.iter().position(|p| !(0.0..=1.0).contains(p)) {
        let [w, h, _] = image.dims;
        return Err(bad(format!(
            "pixel (x={}, y={}, z={}) has {}, not a probability in [0, 1]",
            i % w,
            (i / w) % h,
            i / (w * h),
            prob[i]
        )));
    }
    Ok(())
}

/// Segments `image` given `seeds` and a data term: the one entry point of every segmentation
/// (the same graph build, on the GPU when it runs there, warm starts and statistics).
pub fn segment_with(
    image: &Image,
    seeds: &Seeds,
    data: DataTerm,
    opts: &SegmentOptions,
) -> Result<Segmentation> {
    segment_in(image, seeds, data, opts, &mut Solvers::on(opts.device))
}

/// The GPU solvers a segmentation cuts with, kept between images by a
/// [`Segmenter`](super::session::Segmenter): their sessions (streams, pinned staging, the
/// buffers kept for the next solve of the same size) outlive one image. Nothing of one image's
/// flow carries to the next: the warm solver is reset at each image's start.
pub(crate) struct Solvers {
    pub(crate) device: Device,
    /// Cold solves (warm starts off).
    cold: CudaGrid,
    /// Rounds 2.. from the last round's preflow.
    warm: WarmGrid,
    /// What the last image's GPU build left: its stream (the solvers' sessions are siblings on
    /// it), kernels and buffers.
    energy: Option<EnergyKeep>,
    /// What a pack's other GPU builds left: sibling sessions on the same stream, so that a
    /// pack's graphs are written in one stream order and stack without waits.
    pack_energy: Vec<EnergyKeep>,
}

impl Solvers {
    pub(crate) fn on(device: Device) -> Self {
        Solvers {
            device,
            cold: CudaGrid::on(device),
            warm: WarmGrid::on(device),
            energy: None,
            pack_energy: Vec::new(),
        }
    }

    /// Device buffers allocated so far through the kept sessions (the GPU build's and the
    /// solvers'); what reuse across images leaves unchanged.
    pub(crate) fn allocations(&self) -> usize {
        let energy = self
            .energy
            .as_ref()
            .map_or(0, |k| k.session().allocations());
        let pack: usize = self
            .pack_energy
            .iter()
            .map(|k| k.session().allocations())
            .sum();
        energy + pack + self.cold.allocations() + self.warm.allocations()
    }
}

/// [`segment_with`] on the caller's solvers (a [`Segmenter`](super::session::Segmenter)'s): a
/// pack of one ([`segment_pack_in`]), which takes the lone path at every step.
pub(crate) fn segment_in(
    image: &Image,
    seeds: &Seeds,
    data: DataTerm,
    opts: &SegmentOptions,
    solvers: &mut Solvers,
) -> Result<Segmentation> {
    let mut out = segment_pack_in(&[(image, seeds, data)], opts, solvers)?;
    out.pop().expect("one result per job")
}

/// What one job's checks hand its rounds: the seeds' counts, the seeds the stroke check left
/// (`None`: all of them) and what checking took.
struct Checked {
    seed_counts: [usize; 5],
    seeds: Option<Seeds>,
    checks: Duration,
}

/// Checks one job: its seeds, data term, the options against it and the memory budget; drops
/// the strokes [`SegmentOptions::stroke_check`] refuses.
fn check_job(
    image: &Image,
    seeds: &Seeds,
    data: DataTerm,
    opts: &SegmentOptions,
) -> Result<Checked> {
    let t_checks = Instant::now();
    let seed_counts = match data {
        DataTerm::ColourModels => check_seeds(image, seeds)?,
        DataTerm::Probability(p) => {
            energy::check_seeds(image, seeds)?;
            check_probability(image, p)?;
            seeds.counts()
        }
    };
    check_options(image, opts)?;
    // Strokes the others contradict are dropped here, on the host, before either device's
    // build sees the seeds: both are handed the same seeds.
    let checked = match data {
        DataTerm::ColourModels => checked_seeds(image, seeds, opts)?,
        DataTerm::Probability(_) => None,
    };
    if matches!(data, DataTerm::Probability(_)) && opts.iterations > 1 {
        return Err(Error::Input {
            file: "segment options".into(),
            msg: format!(
                "iterations {}: a probability map is cut once (there are no colour models to \
                 refit)",
                opts.iterations
            ),
        });
    }
    // A probability map has no colour models, prior or warm start: the rest of the estimate applies.
    let lean;
    let budgeted = match data {
        DataTerm::ColourModels => opts,
        DataTerm::Probability(_) => {
            lean = SegmentOptions {
                warm_start: false,
                prior: super::prior::SpatialPrior {
                    weight: 0.0,
                    ..opts.prior
                },
                ..opts.clone()
            };
            &lean
        }
    };
    super::budget::check(image, budgeted.memory_needs())?;
    Ok(Checked {
        seed_counts,
        seeds: checked,
        checks: t_checks.elapsed(),
    })
}

/// One job of a pack in progress: its rounds' state, what its result will report, and whether
/// it has stopped (the round a lone run would break after, or an error of its own).
struct Part<'a> {
    r: Rounds<'a>,
    data: DataTerm<'a>,
    seed_counts: [usize; 5],
    checks: Duration,
    plan: Duration,
    prepare: Duration,
    prepare_counts: DeviceCounts,
    gpu_times: Option<GpuTimes>,
    gpu_build_declined: Option<String>,
    mask: Vec<bool>,
    rounds: Vec<IterationStats>,
    /// The seeds' models (set in round 0): every later round blends them in.
    seed_models: Option<(Model, Model)>,
    /// The last refit round's models before the blend: where the next refit starts
    /// ([`SegmentOptions::refit_steps`]).
    last_fit: Option<(Model, Model)>,
    prior_enclosure: Option<f64>,
    flow: i64,
    value: f64,
    ran: Choice,
    /// Stopped: its graph is left as its last round set it (its slice of later packed solves
    /// is its final cut again).
    done: bool,
    /// Its own error, which stops it and no other part.
    failed: Option<Error>,
}

impl<'a> Part<'a> {
    /// Plans the solve and prepares the rounds (the GPU build when planned).
    fn new(
        image: &'a Image,
        seeds: &'a Seeds,
        data: DataTerm<'a>,
        opts: &'a SegmentOptions,
        checked: &Checked,
        solvers: &mut Solvers,
    ) -> Result<Self> {
        // Asked first: creating the GPU context is its own phase, not preparation.
        let t = Instant::now();
        let (choice, on_gpu) = plan_solve(image, opts, data);
        let plan = t.elapsed();
        let t = Instant::now();
        let c_prepare = DeviceCounts::on_this_thread();
        let (r, gpu_build_declined) =
            Rounds::prepare(image, seeds, opts, data, choice, on_gpu, solvers)?;
        let prepare_counts = DeviceCounts::on_this_thread().since(c_prepare);
        let gpu_times = match &r.graph {
            Some(Graph::Device(d)) => Some(d.times.clone()),
            _ => None,
        };
        let ran = r.choice.clone();
        Ok(Part {
            r,
            data,
            seed_counts: checked.seed_counts,
            checks: checked.checks,
            plan,
            prepare: t.elapsed(),
            prepare_counts,
            gpu_times,
            gpu_build_declined,
            mask: vec![false; image.num_pixels()],
            rounds: Vec::new(),
            seed_models: None,
            last_fit: None,
            prior_enclosure: None,
            flow: 0,
            value: 0.0,
            ran,
            done: false,
            failed: None,
        })
    }

    /// Stops the part on its own error (the others run on).
    fn stop(&mut self, e: Error) {
        self.failed = Some(e);
        self.done = true;
    }

    /// The round's models (`None` for a probability map), fitted and blended.
    fn models(&mut self, round: usize) -> Result<Option<(Model, Model)>> {
        if let DataTerm::Probability(_) = self.data {
            return Ok(None);
        }
        Ok(Some(if round == 0 {
            let first = self.r.first_models()?;
            self.seed_models = Some(first.seeds);
            self.prior_enclosure = first.enclosure;
            first.models
        } else {
            let warm = warm_pair(&self.last_fit, self.r.opts);
            self.r.fit(round, &self.mask, warm)?
        }))
    }

    /// Applies the round's cut: the mask, the flow and energy, the round's statistics; stops
    /// the part where a lone run breaks out of its loop.
    fn apply(&mut self, round: usize, cut: RoundCut, models: Duration, c0: DeviceCounts) {
        let t_mask = Instant::now();
        let (changed, foreground) = apply_cut(&mut self.mask, &cut.solved.cut.sink_side);
        self.flow = cut.solved.cut.flow;
        self.value = self.r.energy_of_flow(self.flow);
        self.ran = cut.solved.ran;
        let mask_time = t_mask.elapsed();
        let [c_models, c_graph, c_solve] = cut.marks;
        // The mask and the energy count with the certificate check (the round's tail).
        let c_end = DeviceCounts::on_this_thread();
        let (host_waits, device_allocations) =
            RoundCounts::of([c0, c_models, c_graph, c_solve, c_end]);
        self.rounds.push(IterationStats {
            models,
            graph: cut.graph,
            solve: cut.solve,
            verify: cut.verify,
            mask: mask_time,
            flow: self.flow,
            energy: self.value,
            foreground,
            changed,
            warm: cut.warm,
            host_waits,
            device_allocations,
        });
        let n = self.mask.len();
        // No change: the next round would fit the same models. A class emptied by the cut
        // cannot be refitted: keep this mask.
        self.done = (round > 0 && changed == 0)
            || foreground == 0
            || foreground == n
            || round + 1 == self.r.opts.iterations;
    }

    /// The part's segmentation: post-processing, the graph's statistics, the kept graph.
    fn finish(self, solvers: &mut Solvers) -> Result<Segmentation> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let opts = self.r.opts;
        let r = self.r;
        let image = r.image;
        let prior_adapted = r.prior_adapted;
        let (prior_run, prior_time) = (r.prior_run.clone(), r.prior_time);
        let t_post = Instant::now();
        let c_post = DeviceCounts::on_this_thread();
        let (mask, post_changed) = post_process(&self.mask, r.seeds, &opts.post)?;
        let (mut stats, kept) = r.finish(
            SegmentStats {
                dims: image.dims,
                connectivity: opts.connectivity_for(image),
                nodes: image.num_pixels(),
                edges: 0,
                seed_counts: self.seed_counts,
                beta: 0.0,
                scale: 0.0,
                hard: 0,
                checks: self.checks,
                plan: self.plan,
                prepare: self.prepare,
                gpu: self.gpu_times,
                prior_run,
                prior_time,
                prior_enclosure: self.prior_enclosure,
                prior_adapted,
                gpu_build_declined: self.gpu_build_declined,
                solver: self.ran,
                iterations: self.rounds,
                post_changed,
                post: Duration::ZERO,
                prepare_counts: self.prepare_counts,
                post_counts: DeviceCounts::ZERO,
            },
            solvers,
        )?;
        stats.post = t_post.elapsed();
        stats.post_counts = DeviceCounts::on_this_thread().since(c_post);
        Ok(Segmentation {
            mask,
            flow: self.flow,
            energy: self.value,
            verified: opts.verify,
            graph: kept,
            stats,
        })
    }
}

/// The pack's own solver state across rounds: the warm-starting host solver of the stacked
/// host graph.
#[derive(Default)]
struct PackSolver {
    dynamic: Option<Dynamic>,
    /// The stacked GPU grid's terminals.
    stack: Option<DeviceStack>,
    /// The cold host solver (warm starts off).
    host: Option<MaxFlow>,
}

/// The terminals of a pack's GPU graphs stacked along y, rewritten each round for the warm
/// solver (allocated once per pack, on the parts' stream).
struct DeviceStack {
    dims: [usize; 3],
    source: CudaSlice<i32>,
    sink: CudaSlice<i32>,
}

impl PackSolver {
    fn host(&mut self, choice: &Choice, opts: &SegmentOptions) -> &mut MaxFlow {
        self.host.get_or_insert_with(|| host_solver(choice, opts))
    }
}

/// The host solver of a graph on the host: what was chosen (BK, or cuda-grid on a CPU-built
/// graph); the certificate is checked by the rounds, on whichever graph was cut.
fn host_solver(choice: &Choice, opts: &SegmentOptions) -> MaxFlow {
    MaxFlow::new(SolveOptions {
        solver: choice.solver,
        auto: opts.auto,
        flows: false,
        verify: false,
        device: opts.device,
    })
}

/// Segments several images with the same options in lockstep: each round runs every live
/// part's models and t-links, then one solve of the parts' graphs stacked along y
/// ([`crate::batch::pack`]), then each part's slice of the cut. A pack of one is
/// [`segment_in`] (the lone path at every step).
///
/// Why each part's result is its lone run's: the stacked graph is the disjoint union of the
/// parts' graphs (the seams are the parts' own border arcs, which are zero), so its maximum
/// flow restricted to a part is a maximum flow of that part, and the canonical cut (the sink
/// side: the nodes that reach the sink in the residual graph) is decided inside each part. A
/// part's flow is its slice's cut capacity; the slices' capacities sum to the packed flow (an
/// error otherwise), so each is at its part's maximum flow, certified by the packed solve's
/// certificate. A part that stopped keeps its t-links, so its slice of every later solve is its
/// last cut again, and its statistics record only the rounds a lone run makes. What differs
/// from lone runs: the timings (a packed round's solve time is the one shared solve) and, for
/// parts on the GPU that cannot be stacked, the `warm` flags (solved cold, one by one).
///
/// The outer error is the pack's (its shared solve failed); a job refused on its own input
/// gets its own error in its place. Jobs of different widths or connectivities still pack
/// (narrower grids are padded with unconnected nodes), but only jobs of one width pay.
pub(crate) fn segment_pack_in(
    jobs: &[(&Image, &Seeds, DataTerm)],
    opts: &SegmentOptions,
    solvers: &mut Solvers,
) -> Result<Vec<Result<Segmentation>>> {
    if solvers.device != opts.device {
        *solvers = Solvers::on(opts.device);
    }
    // The last image's preflow is no start for this one.
    solvers.warm.reset();
    // The checks first (their dropped strokes are the seeds the parts borrow), then the parts.
    // Each job's checks are its own (host work only): side by side.
    let (checked, errors): (Vec<Option<Checked>>, Vec<Option<Error>>) = jobs
        .par_iter()
        .map(
            |&(image, seeds, data)| match check_job(image, seeds, data, opts) {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e)),
            },
        )
        .unzip();
    // Each slot: the part, or the job's own error.
    let mut slots: Vec<Result<Part>> = Vec::with_capacity(jobs.len());
    for ((&(image, seeds, data), c), e) in jobs.iter().zip(&checked).zip(errors) {
        slots.push(match (c, e) {
            (Some(c), _) => {
                let seeds = c.seeds.as_ref().unwrap_or(seeds);
                let part = Part::new(image, seeds, data, opts, c, solvers);
                // The next part's GPU build goes on this one's stream (a stacked solve reads
                // every part's buffers in one stream order).
                if let Ok(Part {
                    r:
                        Rounds {
                            graph: Some(Graph::Device(d)),
                            ..
                        },
                    ..
                }) = &part
                {
                    if jobs.len() > 1 && solvers.pack_energy.is_empty() {
                        // Without one the next part gets a stream of its own: one by one.
                        solvers.pack_energy.extend(d.sibling_keep().ok());
                    }
                }
                part
            }
            (None, e) => Err(e.expect("a job without checks has its error")),
        });
    }
    let mut pack = PackSolver::default();
    let mut parts: Vec<&mut Part> = slots.iter_mut().filter_map(|s| s.as_mut().ok()).collect();
    for round in 0..opts.iterations {
        if parts.iter().all(|p| p.done) {
            break;
        }
        run_round(&mut parts, round, &mut pack, solvers)?;
    }
    Ok(slots
        .into_iter()
        .map(|s| s.and_then(|p| p.finish(solvers)))
        .collect())
}

/// One round: models and t-links of every part still running, the solve (the lone path for a
/// pack of one part, one stacked solve otherwise), each running part's slice of the cut.
fn run_round(
    parts: &mut [&mut Part],
    round: usize,
    pack: &mut PackSolver,
    solvers: &mut Solvers,
) -> Result<()> {
    let lone = parts.len() == 1;
    let opts = parts[0].r.opts;
    // Per running part: its round's start and its fitted models.
    let mut starts = Vec::with_capacity(parts.len());
    let fitted = if round > 0 && !lone {
        refit_parts(parts, &mut starts)
    } else {
        let mut fitted = Vec::with_capacity(parts.len());
        for p in parts.iter_mut() {
            let t0 = Instant::now();
            let c0 = DeviceCounts::on_this_thread();
            starts.push((t0, c0));
            if p.done {
                fitted.push(None);
                continue;
            }
            match p.models(round) {
                Ok(m) => fitted.push(m),
                Err(e) => {
                    p.stop(e);
                    fitted.push(None);
                }
            }
        }
        fitted
    };
    // The first refit starts from scratch (the mask's classes are far from the seeds' there);
    // the later ones continue from the refit before.
    if opts.refit_steps > 0 && round > 0 {
        for (p, m) in parts.iter_mut().zip(&fitted) {
            if m.is_some() {
                p.last_fit.clone_from(m);
            }
        }
    }
    let w = if round > 0 { opts.seed_weight } else { 0.0 };
    // Lent to the round's blends while the parts are cut; handed back at its end.
    let seed_models: Vec<Option<(Model, Model)>> =
        parts.iter_mut().map(|p| p.seed_models.take()).collect();
    let blends: Vec<Option<(Blend, Blend)>> = parts
        .iter()
        .zip(fitted)
        .zip(&seed_models)
        .map(|((p, m), s)| {
            let (fg, bg) = m?;
            let (sf, sb) = s.as_ref().expect("set in round 0");
            Some((
                Blend::new(fg, sf, w).with_outlier(opts.outlier, &p.r.params),
                Blend::new(bg, sb, w).with_outlier(opts.outlier, &p.r.params),
            ))
        })
        .collect();
    let tlinks: Vec<Option<TLinks>> = parts
        .iter()
        .zip(&blends)
        .map(|(p, b)| match (p.data, b) {
            _ if p.done => None,
            (DataTerm::Probability(prob), _) => Some(TLinks::Probability(prob)),
            (DataTerm::ColourModels, Some((fg, bg))) => Some(TLinks::Models(fg, bg)),
            (DataTerm::ColourModels, None) => None,
        })
        .collect();
    let models: Vec<Duration> = starts.iter().map(|(t0, _)| t0.elapsed()).collect();
    let cuts = match lone {
        true => vec![tlinks[0]
            .as_ref()
            .map(|t| parts[0].r.cut(t, solvers, opts.warm_start))],
        false => cut_packed(parts, &tlinks, pack, solvers)?,
    };
    drop(tlinks);
    drop(blends);
    for (p, s) in parts.iter_mut().zip(seed_models) {
        p.seed_models = s;
    }
    for (((p, cut), m), (_, c0)) in parts.iter_mut().zip(cuts).zip(models).zip(starts) {
        match cut {
            Some(Ok(cut)) => p.apply(round, cut, m, c0),
            Some(Err(e)) => p.stop(e),
            None => {}
        }
    }
    Ok(())
}

/// Where a part's next refit starts: its last round's models, when
/// [`SegmentOptions::refit_steps`] asks to continue from them.
fn warm_pair<'m>(last_fit: &'m Option<(Model, Model)>, opts: &SegmentOptions) -> WarmPair<'m> {
    let steps = opts.refit_steps;
    last_fit.as_ref().filter(|_| steps > 0).map(|m| (m, steps))
}

/// A refit round's models of a pack's running parts: each part's fit started one part after
/// another (on the device: its samples gathered and its fit launched on its stream, from this
/// thread, where the round's device counts are taken), then read back; the fits that come to
/// the host as samples are fitted side by side. The models are those of [`Part::models`] (a fit
/// depends on its samples only), but a pack's fits no longer wait for one another: in a batch
/// they were a worker's longest stretch of host work (docs/batch.md). `starts` gains each part's
/// round start.
fn refit_parts(
    parts: &mut [&mut Part],
    starts: &mut Vec<(Instant, DeviceCounts)>,
) -> Vec<Option<(Model, Model)>> {
    let mut started = Vec::with_capacity(parts.len());
    for p in parts.iter_mut() {
        starts.push((Instant::now(), DeviceCounts::on_this_thread()));
        started.push(match p.data {
            _ if p.done => None,
            DataTerm::Probability(_) => None,
            DataTerm::ColourModels => {
                let warm = warm_pair(&p.last_fit, p.r.opts);
                match p.r.refit_start(&p.mask, warm) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        p.stop(e);
                        None
                    }
                }
            }
        });
    }
    // The device's fits, read back in launch order (each waits for its own stream only).
    let mut fits: Vec<Option<Result<(Model, Model)>>> = Vec::with_capacity(parts.len());
    let mut samples = Vec::with_capacity(parts.len());
    for (p, s) in parts.iter_mut().zip(started) {
        let (fit, host) = match s {
            Some(FitStarted::Samples(fg, bg)) => (None, Some((fg, bg))),
            Some(d) => {
                let warm = warm_pair(&p.last_fit, p.r.opts);
                (Some(p.r.refit_finish(d, &p.mask, warm)), None)
            }
            None => (None, None),
        };
        fits.push(fit);
        samples.push(host);
    }
    // A part is not shared across threads (it holds device state): its fit's inputs are.
    let specs: Vec<(ModelKind, &ModelParams, WarmPair)> = parts
        .iter()
        .map(|p| {
            (
                p.r.opts.model,
                &p.r.params,
                warm_pair(&p.last_fit, p.r.opts),
            )
        })
        .collect();
    let host: Vec<Option<Result<(Model, Model)>>> = specs
        .par_iter()
        .zip(&samples)
        .map(|(&(kind, params, warm), s)| {
            let (fg, bg) = s.as_ref()?;
            Some(fit_pair(kind, params, fg, bg, warm))
        })
        .collect();
    drop(specs);
    drop(samples);
    let fits: Vec<Option<Result<(Model, Model)>>> =
        fits.into_iter().zip(host).map(|(d, h)| d.or(h)).collect();
    parts
        .iter_mut()
        .zip(fits)
        .map(|(p, f)| match f? {
            Ok(m) => Some(m),
            Err(e) => {
                p.stop(e);
                None
            }
        })
        .collect()
}

/// Sets the running parts' t-links and cuts them: stacked into one host graph when every
/// part's graph is on the host (the stopped parts' graphs too, unchanged: a fixed stack keeps
/// the warm start); one by one otherwise (GPU graphs, solved cold: the warm solver keeps one
/// grid's preflow). `None` for a part not cut this round.
fn cut_packed(
    parts: &mut [&mut Part],
    tlinks: &[Option<TLinks>],
    pack: &mut PackSolver,
    solvers: &mut Solvers,
) -> Result<Vec<Option<Result<RoundCut>>>> {
    let opts = parts[0].r.opts;
    let t1 = Instant::now();
    let c1 = DeviceCounts::on_this_thread();
    let mut out: Vec<Option<Result<RoundCut>>> = Vec::with_capacity(parts.len());
    for (p, t) in parts.iter_mut().zip(tlinks) {
        out.push(t.as_ref().and_then(|t| p.r.set_tlinks(t).err().map(Err)));
    }
    let stacked = |p: &Part, o: &Option<Result<RoundCut>>| {
        p.failed.is_none() && o.is_none() && matches!(p.r.graph, Some(Graph::Host(_)))
    };
    let on_device = parts
        .iter()
        .any(|p| matches!(p.r.graph, Some(Graph::Device(_))));
    let device_members: Vec<usize> = (0..parts.len())
        .filter(|&i| {
            parts[i].failed.is_none()
                && out[i].is_none()
                && matches!(parts[i].r.graph, Some(Graph::Device(_)))
        })
        .collect();
    let all_device = (0..parts.len())
        .all(|i| device_members.contains(&i) || parts[i].failed.is_some() || out[i].is_some());
    if on_device && all_device && stackable(&device_parts(parts, &device_members)) {
        return cut_stacked(parts, tlinks, &device_members, out, pack, solvers, (t1, c1));
    }
    if on_device {
        for ((p, t), o) in parts.iter_mut().zip(tlinks).zip(out.iter_mut()) {
            if let (Some(t), None) = (t, &o) {
                *o = Some(p.r.solve_set(t, solvers, false, t1, c1));
            }
        }
        return Ok(out);
    }
    let members: Vec<usize> = (0..parts.len())
        .filter(|&i| stacked(parts[i], &out[i]))
        .collect();
    let graphs: Vec<&GridGraph> = members
        .iter()
        .map(|&i| match &parts[i].r.graph {
            Some(Graph::Host(e)) => &e.graph,
            _ => unreachable!("members are host graphs"),
        })
        .collect();
    let t2 = Instant::now();
    let c2 = DeviceCounts::on_this_thread();
    let (packed, packing) = crate::batch::pack::pack(&graphs)?;
    let choice = parts[0].r.choice.clone();
    let (mut whole, warm) = match (&mut pack.dynamic, warm_kind(&choice, opts)) {
        (Some(d), _) => (d.resolve(&packed)?, d.last_was_warm()),
        (None, Some(kind)) if opts.warm_start => {
            let d = pack.dynamic.insert(Dynamic::new(kind, false, opts.device)?);
            (d.solve(&packed)?, false)
        }
        (None, _) => (pack.host(&choice, opts).solve(&packed)?, false),
    };
    let t3 = Instant::now();
    let c3 = DeviceCounts::on_this_thread();
    if opts.verify {
        whole.certificate = Some(verify(&packed, &whole.cut)?);
    }
    if opts.solver == SolverKind::Auto && whole.ran.fallback.is_none() {
        whole.ran = choice;
    }
    let solved = crate::batch::pack::split_packed(&graphs, &packing, &whole)?;
    let verify_time = t3.elapsed();
    for (i, solved) in members.into_iter().zip(solved) {
        if tlinks[i].is_some() {
            out[i] = Some(Ok(RoundCut {
                solved,
                warm,
                graph: t2 - t1,
                solve: t3 - t2,
                verify: verify_time,
                marks: [c1, c2, c3],
            }));
        }
    }
    Ok(out)
}

/// The GPU graphs of `members` (device graphs all).
fn device_parts<'p>(parts: &'p [&mut Part], members: &[usize]) -> Vec<&'p GpuEnergy> {
    members
        .iter()
        .map(|&i| match &parts[i].r.graph {
            Some(Graph::Device(d)) => &**d,
            _ => unreachable!("members are GPU graphs"),
        })
        .collect()
}

/// Cuts the parts' GPU graphs (`members`, [`stackable`]) in one solve of the grid they make
/// stacked along y, on the device: the terminals are copied into the stack's buffers each
/// round (kept across the pack's rounds) and the warm solver continues from the last round's
/// preflow; a cold solve copies the n-links too. Each member's slice of the cut is its cut;
/// its flow is its slice's capacity, computed on the device, and the slices' capacities must
/// add up to the solver's flow (the certificate of every part).
fn cut_stacked(
    parts: &mut [&mut Part],
    tlinks: &[Option<TLinks>],
    members: &[usize],
    mut out: Vec<Option<Result<RoundCut>>>,
    pack: &mut PackSolver,
    solvers: &mut Solvers,
    (t1, c1): (Instant, DeviceCounts),
) -> Result<Vec<Option<Result<RoundCut>>>> {
    let opts = parts[0].r.opts;
    let choice = parts[0].r.choice.clone();
    let t2 = Instant::now();
    let c2 = DeviceCounts::on_this_thread();
    let (whole, warm, blocks) = {
        let devs = device_parts(parts, members);
        let dims = stacked_dims(&devs);
        let conn = devs[0].connectivity();
        let total = dims[0] * dims[1];
        if pack.stack.as_ref().is_none_or(|s| s.dims != dims) {
            let gpu = devs[0].pool.gpu();
            let (need, free) = (stacked_bytes(total, conn), gpu.free_memory()?);
            if need > free {
                return Err(Error::Unsupported(format!(
                    "a stacked solve of {} images ({total} nodes) needs about {need} bytes, {} \
                     has {free} free",
                    devs.len(),
                    gpu.name
                )));
            }
            let mut session = devs[0].pool.sibling();
            let source = session.take::<i32>("stacked source", total)?;
            let sink = session.take::<i32>("stacked sink", total)?;
            pack.stack = Some(DeviceStack { dims, source, sink });
        }
        let stack = pack.stack.as_mut().expect("allocated above");
        let warm_solved = match opts.warm_start {
            true => {
                stack_terminals(&devs, &mut stack.source, &mut stack.sink)?;
                solvers
                    .warm
                    .resolve_device(dims, conn, &stack.source, &stack.sink)?
            }
            false => None,
        };
        let warm = warm_solved.is_some();
        let whole = match warm_solved {
            Some(s) => s,
            None if opts.warm_start => {
                let g = stack_grid(&devs, solvers.warm.session_on(&devs[0].pool)?)?;
                solvers.warm.solve_device(g)?
            }
            None => {
                let g = stack_grid(&devs, solvers.cold.session_on(&devs[0].pool)?)?;
                solvers.cold.solve_device(g)?
            }
        };
        let mut off = 0;
        let blocks: Vec<(usize, usize)> = devs
            .iter()
            .map(|d| {
                let n = d.dims[0] * d.dims[1];
                off += n;
                (off - n, n)
            })
            .collect();
        (whole, warm, blocks)
    };
    let t3 = Instant::now();
    let c3 = DeviceCounts::on_this_thread();
    let mut total: i128 = 0;
    let mut cut = Vec::with_capacity(members.len());
    for (&i, &(off, n)) in members.iter().zip(&blocks) {
        let p = &mut *parts[i];
        let Some(Graph::Device(d)) = p.r.graph.as_mut() else {
            unreachable!("members are GPU graphs")
        };
        if let Some(TLinks::Models(fg, bg)) = tlinks[i] {
            // The solve waited for the stream: this reads what is there already.
            d.finish_tlinks(p.r.image, fg, bg)?;
        }
        let side = whole.cut.sink_side[off..off + n].to_vec();
        let cap = d.cut_capacity(&side)?;
        total += cap;
        cut.push((i, side, cap));
    }
    // Zero seams make the parts' capacities add up to the stacked flow; anything else is an
    // arc between parts, or a cut that is not minimal.
    if total != whole.cut.flow as i128 {
        return Err(Error::Certificate {
            flow: whole.cut.flow,
            cut_capacity: i64::try_from(total).unwrap_or(i64::MAX),
        });
    }
    let verify_time = t3.elapsed();
    for (i, sink_side, cap) in cut {
        let flow = i64::try_from(cap).map_err(|_| {
            Error::Overflow(format!("a part's cut capacity {cap} does not fit i64"))
        })?;
        if tlinks[i].is_some() {
            out[i] = Some(Ok(RoundCut {
                solved: Solved {
                    cut: Cut { flow, sink_side },
                    flows: None,
                    certificate: opts.verify.then_some(Certificate {
                        flow,
                        cut_capacity: flow,
                    }),
                    stats: whole.stats.clone(),
                    ran: choice.clone(),
                },
                warm,
                graph: t2 - t1,
                solve: t3 - t2,
                verify: verify_time,
                marks: [c1, c2, c3],
            }));
        }
    }
    Ok(out)
}

/// The solver that warm-starts a host graph's rounds: BK, or `cuda-grid` when named (under
/// `auto` a GPU solver that declines falls back to BK through the host solver, which a kept GPU
/// state cannot).
fn warm_kind(choice: &Choice, opts: &SegmentOptions) -> Option<SolverKind> {
    match (choice.solver, opts.solver) {
        (SolverKind::Bk, _) => Some(SolverKind::Bk),
        (SolverKind::CudaGrid, SolverKind::CudaGrid) => Some(SolverKind::CudaGrid),
        _ => None,
    }
}

/// Sets `mask` to the source side of a cut; returns how many labels changed and how many
/// pixels are foreground.
fn apply_cut(mask: &mut [bool], sink_side: &[bool]) -> (usize, usize) {
    // In chunks on every core: on a 4K photo one pass over 10 M labels is ~10 ms per round.
    const CHUNK: usize = 1 << 16;
    mask.par_chunks_mut(CHUNK)
        .zip(sink_side.par_chunks(CHUNK))
        .map(|(mask, sink_side)| {
            let (mut changed, mut foreground) = (0, 0);
            for (m, &s) in mask.iter_mut().zip(sink_side) {
                changed += (*m == s) as usize; // the new label is !s
                *m = !s;
                foreground += *m as usize;
            }
            (changed, foreground)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

impl<'a> Rounds<'a> {
    /// Converts the image and, when planned, builds the n-links on the GPU (the CPU build makes
    /// them in the first round). Returns why the GPU build declined, if it did.
    fn prepare(
        image: &'a Image,
        seeds: &'a Seeds,
        opts: &'a SegmentOptions,
        data: DataTerm,
        choice: Choice,
        on_gpu: bool,
        solvers: &mut Solvers,
    ) -> Result<(Self, Option<String>)> {
        let eopts = opts.energy_options(image);
        // The GPU build checks the image in its own (parallel) pass over it.
        let mut device = None;
        let mut declined = None;
        if on_gpu {
            // A pack's first graph takes the kept stream; the others its siblings.
            let keep = solvers.energy.take().or_else(|| solvers.pack_energy.pop());
            match GpuEnergy::new_kept(opts.device, keep, image, seeds, opts.color_space, &eopts) {
                Ok(e) => device = Some(e),
                Err(Error::Unsupported(reason)) => declined = Some(reason),
                Err(e) => return Err(e),
            }
        }
        let (work, params) = match &device {
            Some(d) => (Work::Lazy(image, d.space), d.params.clone()),
            None => {
                energy::check_image(image)?;
                let work = to_color_space(image, opts.color_space);
                let params = ModelParams::from_image(&work.data, work.channels);
                (Work::Host(work), params)
            }
        };
        // From the input image (checked by now), not the working space: the GPU build never
        // converts the whole image on the host.
        let t_prior = Instant::now();
        let geometric = first_fit_needs_geometry(opts, seeds);
        let (geometry, prior, prior_run, nearer_on_device) = match (data, device.as_mut()) {
            // On the device (gpu_prior.rs): the same values, left there for the t-links; the
            // host gets a copy only for a geometric first fit or the explained-colour share
            // (the enclosure alone scales it on the device).
            (DataTerm::ColourModels, Some(d)) => {
                let on_host = adapts_on_host(&opts.prior);
                // The nearer-background rule is a per-pixel comparison of the prior the
                // t-links use: made on the device (first_models), the prior not downloaded.
                let nearer_on_device = geometric
                    && !on_host
                    && opts.initial == InitialModels::NearerBackground
                    && opts.prior.weight > 0.0;
                let host_geometry = geometric && !nearer_on_device;
                let (delta, run) =
                    device_geometry(d, image, seeds, opts, host_geometry || on_host)?;
                if opts.prior.weight == 0.0 {
                    // The unit prior of a geometric first fit is no t-link.
                    d.set_prior(None)?;
                }
                let (geometry, prior) = split_geometry(delta, host_geometry, on_host);
                (geometry, prior, run, nearer_on_device)
            }
            (DataTerm::ColourModels, None) => {
                let delta = initial_geometry(image, seeds, opts)?;
                let run = match &delta {
                    Some(_) => PriorRun::Cpu,
                    None => PriorRun::Off,
                };
                let (geometry, prior) = split_geometry(delta, geometric, opts.prior.weight > 0.0);
                (geometry, prior, run, false)
            }
            (DataTerm::Probability(_), _) => (None, None, PriorRun::Off, false),
        };
        let prior_time = t_prior.elapsed();
        // Only the geometry of a geometric first fit: no prior on the t-links.
        let prior_run = match opts.prior.weight > 0.0 {
            true => prior_run,
            false => PriorRun::Off,
        };
        let host = host_solver(&choice, opts);
        let rounds = Rounds {
            image,
            seeds,
            opts,
            work,
            params,
            eopts,
            graph: device.map(|d| Graph::Device(Box::new(d))),
            choice,
            host,
            dynamic: None,
            buf: Vec::new(),
            geometry,
            prior,
            prior_run,
            prior_time,
            prior_adapted: None,
            nearer_on_device,
            enclosure: None,
            palette: None,
        };
        Ok((rounds, declined))
    }

    /// The first round's models: fitted on the seeds (the seeds' models, kept for the blend
    /// of later rounds), or the initial models when [`SegmentOptions::initial`] asks for more;
    /// the prior is adapted to the seeds' models here, once.
    fn first_models(&mut self) -> Result<FirstModels> {
        let (fg, bg) = self.fit(0, &[], None)?;
        let seeds = (fg, bg);
        let initial = match self.nearer_on_device {
            true => self.nearer_background_on_device(&seeds)?,
            false => self.initial_models(&seeds)?,
        };
        let models = initial.unwrap_or_else(|| seeds.clone());
        let enclosure = self.adapt_prior(&seeds.0, &seeds.1)?;
        Ok(FirstModels {
            models,
            seeds,
            enclosure,
        })
    }

    /// [`InitialModels::NearerBackground`]'s first models decided where the prior is (the
    /// device): its enclosure counted there (kept for the prior's scaling), the background
    /// class made there by the same comparison as the host's and fitted on the samples the
    /// host would gather ([`GpuEnergy::fit_nearer_background`]). The coverage gate was passed
    /// in `prepare` (only then is this chosen). Where the device cannot, the prior comes to the
    /// host and the host's rule decides.
    fn nearer_background_on_device(
        &mut self,
        fitted: &(Model, Model),
    ) -> Result<Option<(Model, Model)>> {
        let Some(Graph::Device(d)) = self.graph.as_mut() else {
            return self.initial_models(fitted);
        };
        let e = d.prior_enclosure()?;
        self.enclosure = Some(e);
        if e.is_none_or(|e| e > self.opts.initial_enclosure) {
            return Ok(None);
        }
        // `δ_geo` is at the prior's weight γ > 0 (nearer_background's `unit`).
        let margin = (self.opts.initial_margin * self.opts.prior.weight) as f32;
        match d.fit_nearer_background(self.opts.model, &self.params, margin) {
            Ok(bg) => Ok(Some((fitted.0.clone(), bg))),
            Err(Error::Unsupported(_)) => {
                self.geometry = d.prior_host()?;
                self.initial_models(fitted)
            }
            Err(e) => Err(e),
        }
    }

    /// A refit round's models begun on the mask's classes ([`refit_parts`]): on the device
    /// (`GpuEnergy::fit_start`), or the samples gathered on the host for [`fit_pair`] to fit
    /// where the device cannot.
    fn refit_start(&mut self, mask: &[bool], warm: WarmPair<'_>) -> Result<FitStarted> {
        if let Some(Graph::Device(d)) = self.graph.as_mut() {
            match d.fit_start(self.opts.model, &self.params, FitLabels::Mask(mask), warm) {
                Err(Error::Unsupported(_)) => {}
                started => return started,
            }
        }
        let kind = self.opts.model;
        let (mut fg, mut bg) = (Vec::new(), Vec::new());
        gather(&self.work, kind, |i| mask[i], &mut fg);
        gather(&self.work, kind, |i| !mask[i], &mut bg);
        Ok(FitStarted::Samples(fg, bg))
    }

    /// The models of a fit [`Rounds::refit_start`] began; where the device cannot finish it,
    /// the host gathers and fits (as [`Rounds::fit`] does).
    fn refit_finish(
        &mut self,
        started: FitStarted,
        mask: &[bool],
        warm: WarmPair<'_>,
    ) -> Result<(Model, Model)> {
        let (kind, params) = (self.opts.model, &self.params);
        if let (FitStarted::Device(_), Some(Graph::Device(d))) = (&started, self.graph.as_mut()) {
            match d.fit_finish(kind, params, started, warm) {
                Err(Error::Unsupported(_)) => {}
                fitted => return fitted,
            }
        } else if let FitStarted::Samples(fg, bg) = started {
            return fit_pair(kind, params, &fg, &bg, warm);
        }
        let (fg, bg) = (|i: usize| mask[i], |i: usize| !mask[i]);
        fit_models(&self.work, params, kind, fg, bg, &mut self.buf, warm)
    }

    /// The models of `round`: fitted on the seeds in the first, on the last mask after (from
    /// `warm`'s models where given).
    fn fit(&mut self, round: usize, mask: &[bool], warm: WarmPair<'_>) -> Result<(Model, Model)> {
        // With the graph on the device, the samples are gathered there (gpu_model.rs); the
        // host gathers them if the device cannot.
        if let Some(Graph::Device(d)) = self.graph.as_mut() {
            let labels = match round {
                0 => FitLabels::Seeds,
                _ => FitLabels::Mask(mask),
            };
            match d.fit(self.opts.model, &self.params, labels, warm) {
                Err(Error::Unsupported(_)) => {}
                fitted => return fitted,
            }
        }
        let (work, params, kind) = (&self.work, &self.params, self.opts.model);
        if round == 0 {
            fit_seed_models(work, params, kind, self.seeds, &mut self.buf)
        } else {
            let (fg, bg) = (|i: usize| mask[i], |i: usize| !mask[i]);
            fit_models(work, params, kind, fg, bg, &mut self.buf, warm)
        }
    }

    /// Adapts the prior to the strokes: scales it by their enclosure
    /// ([`super::prior::scale_by_enclosure`]), then lets it step back on the colours the strokes
    /// explain ([`super::prior::adapt_to_colours`]), judged by the seeds' models `fg`, `bg`;
    /// hands the result to the GPU graph when there is one. With the enclosure alone and the
    /// graph on the GPU, the device scales the prior where it is ([`adapts_on_host`]). Returns
    /// the enclosure when the prior followed it.
    fn adapt_prior(&mut self, fg: &Model, bg: &Model) -> Result<Option<f64>> {
        if !self.opts.prior.adapts() {
            return Ok(None);
        }
        if let (false, Some(Graph::Device(d))) =
            (adapts_on_host(&self.opts.prior), self.graph.as_mut())
        {
            // The enclosure alone: counted and applied where the prior is (gpu_prior.rs).
            let coverage = stroke_coverage(self.seeds);
            let e =
                d.scale_prior_by_counted_enclosure(&self.opts.prior, coverage, self.enclosure)?;
            self.prior_adapted = e.map(|_| Adapted::Device);
            return Ok(e);
        }
        let Some(delta) = self.prior.as_mut() else {
            return Ok(None);
        };
        self.prior_adapted = Some(Adapted::Host);
        let coverage = stroke_coverage(self.seeds);
        let enclosure = scale_by_enclosure(delta, self.image.dims, &self.opts.prior, coverage);
        if self.opts.prior.explained >= 1.0 {
            // The CPU build's (a GPU graph scaled its own above).
            return Ok(enclosure);
        }
        let (work, kind, labels) = (&self.work, self.opts.model, &self.seeds.labels);
        let ch = work.image().channels;
        // The thresholds come from the very samples the models were fitted on.
        let mut threshold = |model: &Model, class: [Seed; 2]| {
            gather(work, kind, |i| class.contains(&labels[i]), &mut self.buf);
            explained_threshold(model, &self.buf, ch).unwrap_or(f64::INFINITY)
        };
        let t_fg = threshold(fg, [Seed::Foreground, Seed::ProbablyForeground]);
        let t_bg = threshold(bg, [Seed::Background, Seed::ProbablyBackground]);
        let explained = |p: usize| {
            let mut px = Vec::with_capacity(ch);
            let x: &[f32] = match work {
                Work::Host(image) => image.pixel(p),
                Work::Lazy(image, space) => {
                    space.push_pixel(image, p, &mut px);
                    &px
                }
            };
            fg.neg_log_likelihood(x) <= t_fg || bg.neg_log_likelihood(x) <= t_bg
        };
        adapt_to_colours(delta, &self.opts.prior, explained);
        if let Some(Graph::Device(d)) = self.graph.as_mut() {
            d.set_prior(Some(delta))?;
        }
        Ok(enclosure)
    }

    /// The first round's models when [`SegmentOptions::initial`] asks for more than the seeds.
    fn initial_models(&mut self, fitted: &(Model, Model)) -> Result<Option<(Model, Model)>> {
        let g = self.geometry.as_deref();
        fit_initial_models(
            &self.work,
            &self.params,
            self.opts,
            self.seeds,
            fitted,
            g,
            &mut self.buf,
        )
    }

    /// Sets the t-links from the models (building the n-links on first use) and cuts.
    fn cut(
        &mut self,
        tlinks: &TLinks,
        solvers: &mut Solvers,
        device_warm: bool,
    ) -> Result<RoundCut> {
        let t1 = Instant::now();
        let c1 = DeviceCounts::on_this_thread();
        self.set_tlinks(tlinks)?;
        self.solve_set(tlinks, solvers, device_warm, t1, c1)
    }

    /// Sets the t-links (building the n-links on first use); on the GPU they are queued, to be
    /// finished by [`Rounds::solve_set`].
    fn set_tlinks(&mut self, tlinks: &TLinks) -> Result<()> {
        // The n-links do not depend on the models: build them once, redo only the t-links.
        let g = match self.graph.as_mut() {
            Some(g) => g,
            None => self.graph.insert(Graph::Host(energy::build_nlinks(
                self.work.image(),
                &self.eopts,
            )?)),
        };
        match g {
            Graph::Host(e) => {
                let palette = match tlinks {
                    TLinks::Models(..) => self
                        .palette
                        .get_or_insert_with(|| Palette::new(self.work.image(), PALETTE_MAX_SHARE))
                        .as_ref(),
                    TLinks::Probability(_) => None,
                };
                let prior = self.prior.as_deref();
                set_host_tlinks(e, &self.work, self.seeds, prior, *tlinks, palette)
            }
            Graph::Device(d) => match *tlinks {
                // Queued: its flag and constant are read after the solve's wait.
                TLinks::Models(fg, bg) => d.queue_tlinks(fg, bg),
                TLinks::Probability(p) => {
                    // The same capacities as the CPU graph's, made on the host.
                    let (source, sink, constant) = energy::probability_terminals(
                        self.seeds,
                        p,
                        PROBABILITY_FLOOR,
                        d.scale,
                        d.hard,
                    )?;
                    d.set_terminals(&source, &sink, constant)
                }
            },
        }
    }

    /// Cuts the graph [`Rounds::set_tlinks`] set (started at `t1`, `c1`); a GPU graph's rounds
    /// warm-start on the device when `device_warm`.
    fn solve_set(
        &mut self,
        tlinks: &TLinks,
        solvers: &mut Solvers,
        device_warm: bool,
        t1: Instant,
        c1: DeviceCounts,
    ) -> Result<RoundCut> {
        let t2 = Instant::now();
        let c2 = DeviceCounts::on_this_thread();
        let g = self.graph.as_mut().expect("t-links set");
        let (solved, warm, t3, c3) = match g {
            Graph::Host(e) => {
                let (mut solved, warm) =
                    match (&mut self.dynamic, warm_kind(&self.choice, self.opts)) {
                        (Some(dynamic), _) => (dynamic.resolve(&e.graph)?, dynamic.last_was_warm()),
                        (None, Some(kind)) if self.opts.warm_start => {
                            // The first round solves from scratch and keeps the solver's state.
                            let dynamic =
                                self.dynamic
                                    .insert(Dynamic::new(kind, false, self.opts.device)?);
                            (dynamic.solve(&e.graph)?, false)
                        }
                        (None, _) => (self.host.solve(&e.graph)?, false),
                    };
                let t3 = Instant::now();
                let c3 = DeviceCounts::on_this_thread();
                if self.opts.verify {
                    solved.certificate = Some(verify(&e.graph, &solved.cut)?);
                }
                if self.opts.solver == SolverKind::Auto && solved.ran.fallback.is_none() {
                    solved.ran = self.choice.clone();
                }
                (solved, warm, t3, c3)
            }
            Graph::Device(d) => {
                // Warm: rounds 2.. continue from the preflow kept on the device; the first
                // round (or one after an overflow) solves from scratch and keeps it.
                let (dims, conn, source, sink) = d.terminals();
                let warm_solved = match device_warm {
                    true => solvers.warm.resolve_device(dims, conn, source, sink)?,
                    false => None,
                };
                let warm = warm_solved.is_some();
                // The solvers run on the build's stream, in buffers kept from their last solve.
                let attempt = match warm_solved {
                    Some(s) => Ok(s),
                    None if device_warm => {
                        let g = d.device_grid_in(solvers.warm.session_on(&d.pool)?)?;
                        solvers.warm.solve_device(g)
                    }
                    None => {
                        let g = d.device_grid_in(solvers.cold.session_on(&d.pool)?)?;
                        solvers.cold.solve_device(g)
                    }
                };
                let mut solved = match attempt {
                    Ok(s) => Solved {
                        ran: self.choice.clone(),
                        ..s
                    },
                    // Out of GPU memory for the solver, say: `auto` may still solve on the CPU.
                    Err(e) => match declined(self.opts.solver, &e) {
                        Some(why) => {
                            fall_back(&self.choice, why.into(), (&d.download()?).into(), false)?
                        }
                        None => return Err(e),
                    },
                };
                if let TLinks::Models(fg, bg) = *tlinks {
                    // The solve waited for the stream: this reads what is there already.
                    d.finish_tlinks(self.image, fg, bg)?;
                }
                let t3 = Instant::now();
                let c3 = DeviceCounts::on_this_thread();
                if self.opts.verify {
                    d.verify(&solved.cut)?;
                    solved.certificate = Some(Certificate {
                        flow: solved.cut.flow,
                        cut_capacity: solved.cut.flow,
                    });
                }
                (solved, warm, t3, c3)
            }
        };
        Ok(RoundCut {
            solved,
            warm,
            graph: t2 - t1,
            solve: t3 - t2,
            verify: t3.elapsed(),
            marks: [c1, c2, c3],
        })
    }

    /// The energy of a cut of this graph, in nats.
    fn energy_of_flow(&self, flow: i64) -> f64 {
        match self.graph.as_ref().expect("cut before") {
            Graph::Host(e) => e.energy_of_flow(flow),
            Graph::Device(d) => d.energy_of_flow(flow),
        }
    }

    /// Fills in what the graph knows, and hands back its host copy when asked to keep it.
    fn finish(
        self,
        stats: SegmentStats,
        solvers: &mut Solvers,
    ) -> Result<(SegmentStats, Option<GridGraph>)> {
        let keep = self.opts.keep_graph;
        Ok(match self.graph.expect("at least one round ran") {
            Graph::Host(e) => (
                SegmentStats {
                    edges: e.graph.num_edges(),
                    beta: e.beta,
                    scale: e.scale,
                    hard: e.hard,
                    ..stats
                },
                keep.then_some(e.graph),
            ),
            Graph::Device(d) => {
                let graph = if keep { Some(d.download()?) } else { None };
                let stats = SegmentStats {
                    edges: d.num_edges(),
                    beta: d.beta,
                    scale: d.scale,
                    hard: d.hard,
                    ..stats
                };
                // Stream, kernels and buffers for the next image.
                match solvers.energy {
                    None => solvers.energy = Some(d.into_keep()),
                    Some(_) => solvers.pack_energy.push(d.into_keep()),
                }
                (stats, graph)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// A 40×20 grey image: an object of value 200 (columns 0–13) that reaches the border,
    /// background of 100 (14–25) and of 30 (26–39) that no stroke samples. A short foreground
    /// stroke in the object's top corner, a background stroke down column 16: with plain
    /// distances (no contrast term) the object's lower part is nearer the background stroke.
    fn object_past_the_strokes() -> (Image, Seeds, Vec<f32>) {
        let (w, h) = (40, 20);
        let data = (0..w * h)
            .map(|i| match i % w {
                0..14 => 200.0,
                14..26 => 100.0,
                _ => 30.0,
            })
            .collect();
        let image = Image::new([w, h, 1], 1, data);
        let mut seeds = Seeds::unknown(image.dims);
        for x in 10..13 {
            seeds.labels[x + w] = Seed::Foreground;
        }
        for y in 0..h {
            seeds.labels[16 + w * y] = Seed::Background;
        }
        let unit = SpatialPrior {
            weight: 1.0,
            contrast: 0.0,
            ..SegmentOptions::default().prior
        };
        let geometry = prior_costs(&image, &seeds, &unit).unwrap().unwrap();
        (image, seeds, geometry)
    }

    #[test]
    fn nearer_unexplained_keeps_the_objects_colours_out_of_the_background() {
        let (image, seeds, geometry) = object_past_the_strokes();
        // Part of the object is handed to the background by the geometry alone.
        assert!(geometry[40 * 19] > 0.0 && geometry[13 + 40 * 19] > 0.0);
        let work = Work::Host(Cow::Borrowed(&image));
        let params = ModelParams::from_image(&image.data, 1);
        let mut buf = Vec::new();
        let base = SegmentOptions::default();
        let fitted = fit_seed_models(&work, &params, base.model, &seeds, &mut buf).unwrap();
        // The rules without the coverage gate and the margin (tested on their own below).
        let first = |initial, initial_enclosure| {
            let opts = SegmentOptions {
                initial,
                initial_enclosure,
                initial_coverage: 1.0,
                initial_margin: 0.0,
                ..base.clone()
            };
            let mut buf = Vec::new();
            fit_initial_models(
                &work,
                &params,
                &opts,
                &seeds,
                &fitted,
                Some(&geometry),
                &mut buf,
            )
            .unwrap()
        };
        let (nb_fg, nb_bg) = first(InitialModels::NearerBackground, 1.0).unwrap();
        let (nu_fg, nu_bg) = first(InitialModels::NearerUnexplained, 1.0).unwrap();
        let cost = |m: &Model, v: f32| m.neg_log_likelihood(&[v]);
        // Both keep the seeds' foreground model.
        for v in [30.0, 100.0, 200.0] {
            assert_eq!(cost(&nb_fg, v), cost(&fitted.0, v));
            assert_eq!(cost(&nu_fg, v), cost(&fitted.0, v));
        }
        // Both teach the background the colour no stroke sampled...
        assert!(cost(&nb_bg, 30.0) + 5.0 < cost(&fitted.1, 30.0));
        assert!(cost(&nu_bg, 30.0) + 5.0 < cost(&fitted.1, 30.0));
        // ...but only the plain rule the object's own colour.
        assert!(cost(&nb_bg, 200.0) + 5.0 < cost(&nu_bg, 200.0));
        assert!(cost(&nu_bg, 200.0) > cost(&nu_fg, 200.0) + 5.0);
        // Above the enclosure threshold the first models are the seeds'.
        let e = crate::segment::prior::enclosure(&geometry, image.dims).unwrap();
        assert!(e > 0.0 && e < 1.0, "{e}");
        for initial in [
            InitialModels::NearerBackground,
            InitialModels::NearerUnexplained,
        ] {
            assert!(first(initial, e).is_some());
            assert!(first(initial, e - 1e-9).is_none());
        }
    }

    #[test]
    fn coverage_and_margin_limit_the_nearer_background_fit() {
        let (image, seeds, geometry) = object_past_the_strokes();
        let work = Work::Host(Cow::Borrowed(&image));
        let params = ModelParams::from_image(&image.data, 1);
        let mut buf = Vec::new();
        // `geometry` is `δ_geo` at weight 1: the margin is in its units with a prior of weight 1.
        let base = SegmentOptions {
            initial: InitialModels::NearerBackground,
            prior: SpatialPrior {
                weight: 1.0,
                ..SegmentOptions::default().prior
            },
            ..SegmentOptions::default()
        };
        let fitted = fit_seed_models(&work, &params, base.model, &seeds, &mut buf).unwrap();
        let first = |initial_coverage, initial_margin| {
            let opts = SegmentOptions {
                initial_coverage,
                initial_margin,
                ..base.clone()
            };
            let mut buf = Vec::new();
            fit_initial_models(
                &work,
                &params,
                &opts,
                &seeds,
                &fitted,
                Some(&geometry),
                &mut buf,
            )
            .unwrap()
        };
        // 23 hard seeds of 800 pixels: the rule applies up to that coverage, not below it.
        let c = crate::segment::prior::stroke_coverage(&seeds);
        assert_eq!(c, 23.0 / 800.0);
        assert!(first(c, 0.0).is_some());
        assert!(first(c - 1e-9, 0.0).is_none());
        let cost = |m: &Model, v: f32| m.neg_log_likelihood(&[v]);
        let (_, all) = first(1.0, 0.0).unwrap();
        // A margin above every `δ_geo` hands nothing over, so the background's first model is
        // fitted on its seeds alone, bit for bit.
        let top = geometry.iter().copied().fold(f32::MIN, f32::max);
        assert!(top > 0.0 && top < 0.99, "{top}");
        let (_, none) = first(0.99, 0.99).unwrap();
        for v in [30.0, 100.0, 200.0] {
            assert_eq!(cost(&none, v), cost(&fitted.1, v));
        }
        // A margin just below the unsampled colour's smallest `δ_geo` still hands all of it
        // to the background, but keeps the object's pixels nearer the tie out.
        let far = (0..800)
            .filter(|&i| i % 40 >= 26)
            .map(|i| geometry[i])
            .fold(f32::MAX, f32::min);
        let t = far as f64 * 0.999;
        let kept_out = (0..800)
            .filter(|&i| i % 40 < 14 && geometry[i] > 0.0 && geometry[i] as f64 <= t)
            .count();
        assert!(kept_out >= 10, "{kept_out}");
        let (_, some) = first(1.0, t).unwrap();
        let (a, b) = (cost(&all, 200.0), cost(&some, 200.0));
        assert!(
            b > a,
            "object colour's background cost {b} with the margin, {a} without"
        );
        assert!(cost(&some, 30.0) + 5.0 < cost(&fitted.1, 30.0));
    }

    #[test]
    fn nearer_background_rules_reach_the_first_round() {
        let (image, seeds, _) = object_past_the_strokes();
        let run = |initial, initial_enclosure| {
            let opts = SegmentOptions {
                initial,
                initial_enclosure,
                solver: SolverKind::Bk,
                ..SegmentOptions::default()
            };
            segment(&image, &seeds, &opts).unwrap()
        };
        let seeds_only = run(InitialModels::Seeds, 1.0);
        for initial in [
            InitialModels::NearerBackground,
            InitialModels::NearerUnexplained,
        ] {
            // Gated off: the seeds' first models, the same cut.
            let first = |s: &Segmentation| s.stats.iterations[0].energy.to_bits();
            let off = run(initial, 0.0);
            assert_eq!(first(&off), first(&seeds_only));
            assert_eq!(off.mask, seeds_only.mask);
            // On: another first model, another first energy.
            let on = run(initial, 1.0);
            assert_ne!(first(&on), first(&seeds_only), "{initial:?}");
        }
    }

    #[test]
    fn apply_cut_counts_across_chunks() {
        let mut rng = Rng::new(7);
        for n in [0, 1, 65_535, 65_536, 200_001] {
            let mut mask: Vec<bool> = (0..n).map(|_| rng.below(2) == 1).collect();
            let sink: Vec<bool> = (0..n).map(|_| rng.below(3) == 0).collect();
            let changed = mask.iter().zip(&sink).filter(|(m, s)| **m == **s).count();
            let (c, f) = apply_cut(&mut mask, &sink);
            assert_eq!(c, changed, "n {n}");
            assert_eq!(f, sink.iter().filter(|s| !**s).count(), "n {n}");
            assert!(mask.iter().zip(&sink).all(|(m, s)| *m != *s), "n {n}");
        }
    }
}
