//! What a segmentation did, as one serialisable value: sizes, energy, flow, the solver and why
//! it was chosen, where the graph was built, and the time of each phase. `segcut segment
//! --stats-json` writes it (with the command's own phases: decoding and encoding files), the
//! batch summary takes its solver and flow, and Python's `mask.result` is made from it.
//!
//! ```
//! use segcut::segment::{segment, Image, Seed, Seeds, SegmentOptions};
//! use segcut::segment::report::Report;
//! let image = Image::new([4, 1, 1], 1, vec![10.0, 12.0, 200.0, 210.0]);
//! let mut seeds = Seeds::unknown(image.dims);
//! seeds.labels[0] = Seed::Foreground;
//! seeds.labels[3] = Seed::Background;
//! let opts = SegmentOptions::default();
//! let seg = segment(&image, &seeds, &opts).unwrap();
//! let r = Report::new(&seg, &opts);
//! assert_eq!(r.foreground_pixels, 2);
//! assert_eq!(r.solver, "bk");
//! assert_eq!(r.prior.on, "cpu"); // the stroke prior, computed with the graph on the CPU
//! let json = serde_json::to_value(&r).unwrap();
//! assert_eq!(json["flow"], seg.flow);
//! ```

use super::pipeline::{IterationStats, RoundCounts, SegmentOptions, Segmentation};
use crate::cuda::DeviceCounts;
use crate::options::{color_space_name, model_name};
use crate::segment::gpu_prior::{Adapted, PriorRun};
use crate::segment::model::ModelKind;
use serde::Serialize;
use std::time::Duration;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Seed counts by kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedCounts {
    /// Hard foreground seeds.
    pub foreground: usize,
    /// Hard background seeds.
    pub background: usize,
    /// Soft foreground seeds.
    pub probably_foreground: usize,
    /// Soft background seeds.
    pub probably_background: usize,
}

/// The model as reported: `{"kind": "gmm", "components": 5}` or `{"kind": "hist", "bins": 16}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelReport {
    /// `gmm` or `hist`.
    pub kind: &'static str,
    /// Mixture components (gmm).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub components: Option<usize>,
    /// Bins per channel (hist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<usize>,
}

/// The energy's parameters as they were used (the options given, and what the image decided).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnergyReport {
    /// `λ`.
    pub lambda: f64,
    /// `σ` if given (else `β` came from the image).
    pub sigma: Option<f64>,
    /// The contrast parameter `β` used.
    pub beta: f64,
    /// The colour model.
    pub model: ModelReport,
    /// `lab` or `rgb`.
    pub color_space: &'static str,
    /// Capacity units per nat.
    pub quantisation_scale: f64,
    /// The hard-seed capacity `K`.
    pub hard_constraint: i32,
    /// The stroke prior.
    pub prior: crate::segment::prior::SpatialPrior,
    /// The outlier weight.
    pub outlier: f64,
    /// Drop unseeded foreground components.
    pub drop_unseeded: bool,
    /// Fill holes smaller than this.
    pub fill_holes: usize,
}

/// Where the graph was built: `on` is `gpu` (with the GPU build's stage times) or `cpu`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphBuild {
    /// `gpu` or `cpu`.
    pub on: &'static str,
    /// Why the GPU build declined the input although the GPU solver ran, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declined: Option<String>,
    /// The host's pass over the image (GPU build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_ms: Option<f64>,
    /// Kernel loading and the memory check (GPU build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_ms: Option<f64>,
    /// Allocation and copies (GPU build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_ms: Option<f64>,
    /// Colour conversion and statistics (GPU build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convert_ms: Option<f64>,
    /// `β`, n-links and `K` (GPU build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nlinks_ms: Option<f64>,
    /// Whether the stream, kernels and buffers were kept from the last image (GPU build on a
    /// kept segmenter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reused: Option<bool>,
    /// Device buffers the build allocated (GPU build; 0 on a kept state of the same size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocations: Option<usize>,
}

/// Where and how the stroke-geometry prior was computed (`segment::gpu_prior::PriorRun`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PriorReport {
    /// `off`, `device`, `host` (the device handed it to the host) or `cpu` (no GPU graph).
    pub on: &'static str,
    /// The device's passes (sweeps along every axis both ways), the last one changing nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passes: Option<usize>,
    /// Why the device handed it to the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Its time, part of `phases_ms.prepare`.
    pub ms: f64,
    /// The strokes' enclosure the prior was scaled by (only when it follows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enclosure: Option<f64>,
    /// Where it was adapted to the strokes (the enclosure, the explained-colour share):
    /// `device` (it never left the device) or `host`; absent when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapted: Option<&'static str>,
}

impl PriorReport {
    fn new(
        run: &PriorRun,
        time: Duration,
        enclosure: Option<f64>,
        adapted: Option<Adapted>,
    ) -> Self {
        PriorReport {
            on: run.name(),
            passes: match run {
                PriorRun::Device { passes } => Some(*passes),
                _ => None,
            },
            fallback: match run {
                PriorRun::Host(why) => Some(why.clone()),
                _ => None,
            },
            ms: ms(time),
            enclosure,
            adapted: adapted.map(Adapted::name),
        }
    }
}

/// One fit-build-cut round.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoundReport {
    /// Fitting the models.
    pub models_ms: f64,
    /// Building or updating the graph (the t-links after the first round).
    pub graph_ms: f64,
    /// The solve.
    pub solve_ms: f64,
    /// The certificate check.
    pub verify_ms: f64,
    /// The round's flow.
    pub flow: i64,
    /// The round's energy (nats).
    pub energy: f64,
    /// Foreground pixels after the round.
    pub foreground: usize,
    /// Pixels whose label changed.
    pub changed: usize,
    /// Whether the solve continued from the last round's flow.
    pub warm: bool,
    /// The round's host waits for the GPU, by phase.
    pub host_waits: RoundCounts,
    /// The round's device allocations, by phase.
    pub device_allocations: RoundCounts,
}

impl From<&IterationStats> for RoundReport {
    fn from(it: &IterationStats) -> Self {
        RoundReport {
            models_ms: ms(it.models),
            graph_ms: ms(it.graph),
            solve_ms: ms(it.solve),
            verify_ms: ms(it.verify),
            flow: it.flow,
            energy: it.energy,
            foreground: it.foreground,
            changed: it.changed,
            warm: it.warm,
            host_waits: it.host_waits,
            device_allocations: it.device_allocations,
        }
    }
}

/// The library's phases, in ms: together they are the time [`super::segment`] took.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phases {
    /// Checking the seeds, the options and the memory budget.
    pub checks: f64,
    /// Choosing the solver (under `auto`, asking the GPU: its context is created here unless
    /// it was before).
    pub plan: f64,
    /// Converting the image (and, on the GPU, the upload and the n-links).
    pub prepare: f64,
    /// Fitting the models, all rounds.
    pub models: f64,
    /// Building the graph and its t-links, all rounds.
    pub graph: f64,
    /// Solve and certificate check of each round.
    pub rounds: Vec<f64>,
    /// Applying each cut to the mask and taking its energy, all rounds.
    pub mask: f64,
    /// Post-processing the mask (and reading the graph back when it is kept).
    pub post: f64,
}

impl Phases {
    /// Their sum.
    pub fn total(&self) -> f64 {
        self.checks
            + self.plan
            + self.prepare
            + self.models
            + self.graph
            + self.rounds.iter().sum::<f64>()
            + self.mask
            + self.post
    }
}

/// One device count (host waits, or device allocations) of a segmentation by phase, shaped like
/// [`Phases`] (`--stats-json`'s `host_waits` and `device_allocations`): all zero on the CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PhaseCounts {
    /// The upload, the conversion, the n-links and the prior.
    pub prepare: u64,
    /// Fitting the models, all rounds.
    pub models: u64,
    /// Setting the t-links, all rounds.
    pub graph: u64,
    /// Solve, certificate check and mask of each round.
    pub rounds: Vec<u64>,
    /// Post-processing (the kept graph's download).
    pub post: u64,
    /// Their sum.
    pub total: u64,
}

impl PhaseCounts {
    /// The count `f` picks of `seg`'s phases.
    fn new(
        st: &super::pipeline::SegmentStats,
        f: fn(DeviceCounts) -> u64,
        round: fn(&IterationStats) -> RoundCounts,
    ) -> Self {
        let rounds: Vec<RoundCounts> = st.iterations.iter().map(round).collect();
        let prepare = f(st.prepare_counts);
        let post = f(st.post_counts);
        PhaseCounts {
            prepare,
            models: rounds.iter().map(|r| r.models).sum(),
            graph: rounds.iter().map(|r| r.graph).sum(),
            rounds: rounds
                .iter()
                .map(|r| r.total - r.models - r.graph)
                .collect(),
            post,
            total: prepare + post + rounds.iter().map(|r| r.total).sum::<u64>(),
        }
    }
}

/// A whole `segcut segment` process's phases, in ms (`--stats-json`'s `phases_ms`): the
/// library's [`Phases`] with the command's own around them. Every field but `gpu_context`
/// adds up to `total`; `other` is what no phase names (writing the stats file itself comes
/// after the clock stops).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessPhases {
    /// From `main` to the subcommand's start (argument parsing).
    pub startup: f64,
    /// Reading and decoding the image.
    pub decode_image: f64,
    /// Reading and decoding the seeds.
    pub decode_seeds: f64,
    /// The library's phases.
    #[serde(flatten)]
    pub library: Phases,
    /// Encoding the outputs and staging them (written and synced beside their targets; the
    /// renames that put them in place come after the clock stops, with the stats file).
    pub encode: f64,
    /// The remainder.
    pub other: f64,
    /// From `main` to the outputs in place.
    pub total: f64,
    /// Creating the GPU context and loading the kernels on their own thread from the start,
    /// overlapping the phases above, so not part of their sum (what the main thread waited
    /// for it is in `plan`); `None` when no GPU was set up.
    pub gpu_context: Option<f64>,
}

impl ProcessPhases {
    /// The phases, with `other` the part of `total` that none of them names.
    pub fn new(
        startup: f64,
        decode: [f64; 2],
        library: Phases,
        encode: f64,
        total: f64,
        gpu_context: Option<f64>,
    ) -> Self {
        let named = startup + decode[0] + decode[1] + library.total() + encode;
        ProcessPhases {
            startup,
            decode_image: decode[0],
            decode_seeds: decode[1],
            library,
            encode,
            other: total - named,
            total,
            gpu_context,
        }
    }
}

/// What a segmentation did; see the module docs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// `[width, height, depth]`.
    pub dims: [usize; 3],
    /// 4, 8, 6 or 26.
    pub connectivity: u32,
    /// Graph nodes (pixels).
    pub nodes: usize,
    /// n-link edges.
    pub edges: usize,
    /// The seeds.
    pub seeds: SeedCounts,
    /// The energy's parameters.
    pub options: EnergyReport,
    /// Pixels the post-processing changed.
    pub post_changed_pixels: usize,
    /// The solver that ran the last cut.
    pub solver: &'static str,
    /// Why it was chosen.
    pub solver_reason: String,
    /// The solver asked for.
    pub solver_requested: &'static str,
    /// Why a GPU solver declined and the CPU solved instead, if one did.
    pub fallback: Option<String>,
    /// The last cut's flow.
    pub flow: i64,
    /// The mask's energy (nats).
    pub energy: f64,
    /// Whether every cut's certificate was checked.
    pub verified: bool,
    /// Foreground pixels of the mask.
    pub foreground_pixels: usize,
    /// Their fraction of all pixels.
    pub foreground_fraction: f64,
    /// Where the graph was built.
    pub graph_build: GraphBuild,
    /// Where the stroke-geometry prior was computed.
    pub prior: PriorReport,
    /// One entry per round.
    pub iterations: Vec<RoundReport>,
    /// The phases' times.
    pub phases_ms: Phases,
    /// The host's waits for the GPU (stream synchronisations, blocking downloads) by phase,
    /// counted on the segmenting thread ([`crate::cuda::host_waits`]).
    pub host_waits: PhaseCounts,
    /// Device buffers allocated by phase (none on a warm session's image of the same size).
    pub device_allocations: PhaseCounts,
}

impl Report {
    /// The report of `seg`, made with `opts`.
    pub fn new(seg: &Segmentation, opts: &SegmentOptions) -> Self {
        let st = &seg.stats;
        let fg = seg.mask.iter().filter(|&&m| m).count();
        let n = seg.mask.len().max(1);
        let sum = |f: fn(&IterationStats) -> Duration| {
            st.iterations.iter().map(|it| ms(f(it))).sum::<f64>()
        };
        let graph_build = match &st.gpu {
            Some(g) => GraphBuild {
                on: "gpu",
                declined: None,
                host_ms: Some(ms(g.host)),
                setup_ms: Some(ms(g.setup)),
                upload_ms: Some(ms(g.upload)),
                convert_ms: Some(ms(g.convert)),
                nlinks_ms: Some(ms(g.nlinks)),
                reused: Some(g.reused),
                allocations: Some(g.allocations),
            },
            None => GraphBuild {
                on: "cpu",
                declined: st.gpu_build_declined.clone(),
                host_ms: None,
                setup_ms: None,
                upload_ms: None,
                convert_ms: None,
                nlinks_ms: None,
                reused: None,
                allocations: None,
            },
        };
        let model = match opts.model {
            ModelKind::Gmm { components } => ModelReport {
                kind: model_name(opts.model),
                components: Some(components),
                bins: None,
            },
            ModelKind::Histogram { bins } => ModelReport {
                kind: model_name(opts.model),
                components: None,
                bins: Some(bins),
            },
        };
        Report {
            dims: st.dims,
            connectivity: st.connectivity.number(),
            nodes: st.nodes,
            edges: st.edges,
            seeds: SeedCounts {
                foreground: st.seed_counts[1],
                background: st.seed_counts[2],
                probably_foreground: st.seed_counts[3],
                probably_background: st.seed_counts[4],
            },
            options: EnergyReport {
                lambda: opts.lambda,
                sigma: opts.sigma,
                beta: st.beta,
                model,
                color_space: color_space_name(opts.color_space),
                quantisation_scale: st.scale,
                hard_constraint: st.hard,
                prior: opts.prior,
                outlier: opts.outlier,
                drop_unseeded: opts.post.drop_unseeded,
                fill_holes: opts.post.max_hole,
            },
            post_changed_pixels: st.post_changed,
            solver: st.solver.solver.name(),
            solver_reason: st.solver.reason.clone(),
            solver_requested: opts.solver.name(),
            fallback: st.solver.fallback.clone(),
            flow: seg.flow,
            energy: seg.energy,
            verified: seg.verified,
            foreground_pixels: fg,
            foreground_fraction: fg as f64 / n as f64,
            graph_build,
            prior: PriorReport::new(
                &st.prior_run,
                st.prior_time,
                st.prior_enclosure,
                st.prior_adapted,
            ),
            iterations: st.iterations.iter().map(RoundReport::from).collect(),
            phases_ms: Phases {
                checks: ms(st.checks),
                plan: ms(st.plan),
                prepare: ms(st.prepare),
                models: sum(|it| it.models),
                graph: sum(|it| it.graph),
                rounds: st
                    .iterations
                    .iter()
                    .map(|it| ms(it.solve + it.verify))
                    .collect(),
                mask: sum(|it| it.mask),
                post: ms(st.post),
            },
            host_waits: PhaseCounts::new(st, |c| c.host_waits, |it| it.host_waits),
            device_allocations: PhaseCounts::new(
                st,
                |c| c.device_allocations,
                |it| it.device_allocations,
            ),
        }
    }
}
