//! The segmentation options ([`SEGMENT`]) and how given values become [`SegmentOptions`] and
//! [`SeedOptions`].

use super::{DefaultValue, Kind, OptionError, Range, Spec, Table, Values};
use crate::graph::Connectivity;
use crate::io::{SeedFormat, SeedOptions};
use crate::maxflow::{SolverKind, AUTO_MIN_GPU_NODES};
use crate::segment::model::ModelKind;
use crate::segment::pipeline::{ColorSpace, InitialModels};
use crate::segment::SegmentOptions;

/// Gaussian components per mixture when `model` is `gmm` and `components` is not given.
pub const DEFAULT_COMPONENTS: usize = 5;
/// Histogram bins per channel when `model` is `hist` and `bins` is not given.
pub const DEFAULT_BINS: usize = 16;

fn d() -> SegmentOptions {
    SegmentOptions::default()
}

fn check_solver(s: &str) -> Result<(), String> {
    s.parse::<SolverKind>()
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Parses `R,G,B` (three whole numbers 0–255).
pub fn parse_color(s: &str) -> Result<[u8; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err("three numbers 0-255 separated by commas".into());
    }
    let mut c = [0u8; 3];
    for (i, p) in parts.iter().enumerate() {
        c[i] = p
            .parse()
            .map_err(|_| format!("'{p}' is not a number 0-255"))?;
    }
    Ok(c)
}

fn check_color(s: &str) -> Result<(), String> {
    parse_color(s).map(|_| ())
}

fn color_text(c: [u8; 3]) -> String {
    format!("{},{},{}", c[0], c[1], c[2])
}

const COLOR: Kind = Kind::Text {
    check: check_color,
    what: "R,G,B",
};

/// Every segmentation option, in the order they are applied (`model` before `components` and
/// `bins`).
pub static SEGMENT: &[Spec] = &[
    Spec {
        name: "connectivity",
        short: Some('c'),
        value_name: "N",
        example: "4",
        kind: Kind::Choice(&["4", "8", "6", "26"]),
        default: DefaultValue::Note("8 for images, 6 for volumes"),
        help: "Neighbourhood: 4 or 8 for images, 6 or 26 for volumes.",
        colour_models_only: false,
    },
    Spec {
        name: "lambda",
        short: None,
        value_name: "LAMBDA",
        example: "37",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| {
            format!(
                "{} ({} with a probability map)",
                d().lambda,
                crate::segment::unary::UNARY_LAMBDA
            )
        }),
        help: "Smoothness weight λ of the n-links.",
        colour_models_only: false,
    },
    Spec {
        name: "sigma",
        short: None,
        value_name: "SIGMA",
        example: "3",
        kind: Kind::Float(Range::POSITIVE),
        default: DefaultValue::Note("β = 1/(2⟨‖Ip−Iq‖²⟩) from the image"),
        help: "Contrast scale σ (β = 1/(2σ²)).",
        colour_models_only: false,
    },
    Spec {
        name: "model",
        short: None,
        value_name: "MODEL",
        example: "hist",
        kind: Kind::Choice(&["gmm", "hist"]),
        default: DefaultValue::Of(|| model_name(d().model).into()),
        help: "Colour model: gmm (Gaussian mixtures) or hist (joint histograms).",
        colour_models_only: true,
    },
    Spec {
        name: "components",
        short: None,
        value_name: "K",
        example: "3",
        kind: Kind::Int { min: 1, max: 64 },
        default: DefaultValue::Of(|| DEFAULT_COMPONENTS.to_string()),
        help: "Gaussian components per mixture (with model gmm).",
        colour_models_only: true,
    },
    Spec {
        name: "bins",
        short: None,
        value_name: "B",
        example: "8",
        kind: Kind::Int { min: 1, max: 256 },
        default: DefaultValue::Of(|| DEFAULT_BINS.to_string()),
        help: "Bins per channel (with model hist).",
        colour_models_only: true,
    },
    Spec {
        name: "color-space",
        short: None,
        value_name: "SPACE",
        example: "rgb",
        kind: Kind::Choice(&["rgb", "lab"]),
        default: DefaultValue::Of(|| color_space_name(d().color_space).into()),
        help: "Colour space of the models and contrasts: rgb (as stored) or lab.",
        colour_models_only: false,
    },
    Spec {
        name: "iterations",
        short: None,
        value_name: "N",
        example: "2",
        kind: Kind::Int { min: 1, max: 1000 },
        default: DefaultValue::Of(|| format!("{} (1 with a probability map)", d().iterations)),
        help: "Most cuts: after the first, GrabCut refits the models on the segmentation and \
               cuts again, stopping early when the mask settles.",
        colour_models_only: false,
    },
    Spec {
        name: "refit-steps",
        short: None,
        value_name: "N",
        example: "1",
        kind: Kind::Int { min: 0, max: 100 },
        default: DefaultValue::Of(|| d().refit_steps.to_string()),
        help: "EM iterations of the third and later rounds' Gaussian mixtures, continued from \
               the round before's (0: fit every round from scratch; the second round always \
               does).",
        colour_models_only: true,
    },
    Spec {
        name: "seed-weight",
        short: None,
        value_name: "W",
        example: "0.25",
        kind: Kind::Float(Range::UNIT),
        default: DefaultValue::Of(|| d().seed_weight.to_string()),
        help: "Weight of the seed-fitted models in the refit rounds (0: plain GrabCut, 1: the \
               seed models throughout).",
        colour_models_only: true,
    },
    Spec {
        name: "initial",
        short: None,
        value_name: "FIT",
        example: "nearest",
        kind: Kind::Choice(&[
            "seeds",
            "nearest",
            "background",
            "nearer-background",
            "nearer-unexplained",
        ]),
        default: DefaultValue::Of(|| initial_name(d().initial).into()),
        help: "What the first round's models are fitted on: the seeds, the seeds plus the \
               unlabelled pixels by their nearest stroke, every unlabelled pixel as background, \
               the unlabelled pixels the background strokes reach first as background, or those \
               of them whose colour the foreground strokes do not explain (the last two only \
               where initial-enclosure and initial-coverage allow).",
        colour_models_only: true,
    },
    Spec {
        name: "initial-enclosure",
        short: None,
        value_name: "E0",
        example: "0.5",
        kind: Kind::Float(Range::UNIT),
        default: DefaultValue::Of(|| d().initial_enclosure.to_string()),
        help: "With initial nearer-background or nearer-unexplained: the strokes' enclosure E \
               (share of the image border the background strokes reach first) up to which that \
               first fit applies; above it the first fit is the seeds' (1: every image).",
        colour_models_only: true,
    },
    Spec {
        name: "initial-coverage",
        short: None,
        value_name: "C1",
        example: "0.03",
        kind: Kind::Float(Range::UNIT),
        default: DefaultValue::Of(|| d().initial_coverage.to_string()),
        help: "With initial nearer-background or nearer-unexplained: the strokes' coverage \
               (share of the pixels with a hard seed) up to which that first fit applies; above \
               it the first fit is the seeds' (1: whatever the coverage).",
        colour_models_only: true,
    },
    Spec {
        name: "initial-margin",
        short: None,
        value_name: "T",
        example: "0.25",
        kind: Kind::Float(Range::UNIT_OPEN),
        default: DefaultValue::Of(|| d().initial_margin.to_string()),
        help: "With initial nearer-background or nearer-unexplained: only the unlabelled pixels \
               the background strokes reach first by more than T of the prior's normalised \
               distance difference (d_F - d_B) / (d_F + d_B + L) join the background's first fit \
               (0: every pixel they reach first).",
        colour_models_only: true,
    },
    Spec {
        name: "stroke-check",
        short: None,
        value_name: "RHO",
        example: "0.3",
        kind: Kind::Float(Range::UNIT),
        default: DefaultValue::Of(|| d().stroke_check.to_string()),
        help: "Drop a short hard stroke (a connected component of seeds with fewer than half \
               the pixels of another of its class) when the share of its pixels the other \
               class's strokes explain exceeds the share its own class's other strokes explain \
               by more than RHO (1: never).",
        colour_models_only: true,
    },
    Spec {
        name: "solver",
        short: None,
        value_name: "SOLVER",
        example: "bk",
        kind: Kind::Text {
            check: check_solver,
            what: "a solver name",
        },
        default: DefaultValue::Of(|| d().solver.name().into()),
        help: "Max-flow solver (auto: the GPU for images of at least gpu-min-nodes pixels when \
               one is usable, else BK).",
        colour_models_only: false,
    },
    Spec {
        name: "gpu-min-nodes",
        short: None,
        value_name: "PIXELS",
        example: "7",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        default: DefaultValue::Of(|| format!("{AUTO_MIN_GPU_NODES} (16384 in a batch on GPUs)")),
        help: "With solver auto: images with fewer pixels are cut on the CPU, where the GPU's \
               fixed costs would dominate.",
        colour_models_only: false,
    },
    Spec {
        name: "cpu-build",
        short: None,
        value_name: "BOOL",
        example: "true",
        kind: Kind::Flag,
        default: DefaultValue::Of(|| (!d().gpu_build).to_string()),
        help: "Build the graph on the CPU even when it is solved on the GPU.",
        colour_models_only: false,
    },
    Spec {
        name: "no-warm-start",
        short: None,
        value_name: "BOOL",
        example: "true",
        kind: Kind::Flag,
        default: DefaultValue::Of(|| (!d().warm_start).to_string()),
        help: "Solve every GrabCut round from scratch instead of continuing from the last \
               round's flow (the masks are the same; for comparison).",
        colour_models_only: false,
    },
    Spec {
        name: "verify",
        short: None,
        value_name: "BOOL",
        example: "false",
        kind: Kind::Flag,
        default: DefaultValue::Of(|| d().verify.to_string()),
        help: "Check every cut's optimality certificate.",
        colour_models_only: false,
    },
    Spec {
        name: "prior",
        short: None,
        value_name: "GAMMA",
        example: "4",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| d().prior.weight.to_string()),
        help: "Weight γ (nats) of the stroke-geometry prior: pixels geodesically nearer the \
               foreground strokes lean foreground, and the other way round (0: off).",
        colour_models_only: true,
    },
    Spec {
        name: "prior-contrast",
        short: None,
        value_name: "KAPPA",
        example: "1",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| d().prior.contrast.to_string()),
        help: "How much an image edge lengthens the prior's geodesic paths (0: plain distance).",
        colour_models_only: true,
    },
    Spec {
        name: "prior-softness",
        short: None,
        value_name: "S",
        example: "0.5",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| d().prior.softness.to_string()),
        help: "Softness of the prior, as a fraction of the image diagonal (0: plain ratio of \
               distances).",
        colour_models_only: true,
    },
    Spec {
        name: "prior-explained",
        short: None,
        value_name: "A",
        example: "0.5",
        kind: Kind::Float(Range::UNIT),
        default: DefaultValue::Of(|| d().prior.explained.to_string()),
        help: "The prior's share on pixels whose colour the strokes' own colour models explain \
               (1: the same prior everywhere; 0: the prior only on colours no stroke sampled).",
        colour_models_only: true,
    },
    Spec {
        name: "prior-enclosure",
        short: None,
        value_name: "K",
        example: "4",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| d().prior.enclosure.to_string()),
        help: "How strongly the prior follows how well the background strokes enclose the \
               foreground ones: the prior is scaled by E^K, E the share of the image border the \
               background strokes reach first (0: the same prior whatever the strokes' layout).",
        colour_models_only: true,
    },
    Spec {
        name: "prior-coverage",
        short: None,
        value_name: "C0",
        example: "0.03",
        kind: Kind::Float(Range::UNIT),
        default: DefaultValue::Of(|| d().prior.coverage.to_string()),
        help: "The strokes' coverage (share of the pixels with a hard seed) above which the prior \
               steps back: it is scaled by C0/c for a coverage c > C0 (0: off).",
        colour_models_only: true,
    },
    Spec {
        name: "outlier",
        short: None,
        value_name: "EPS",
        example: "0.1",
        kind: Kind::Float(Range::UNIT_OPEN),
        default: DefaultValue::Of(|| d().outlier.to_string()),
        help: "Weight ε of a uniform outlier component in both colour models (0: off).",
        colour_models_only: true,
    },
    Spec {
        name: "drop-unseeded",
        short: None,
        value_name: "BOOL",
        example: "false",
        kind: Kind::Bool,
        default: DefaultValue::Of(|| d().post.drop_unseeded.to_string()),
        help: "Drop foreground components that hold no foreground seed.",
        colour_models_only: false,
    },
    Spec {
        name: "fill-holes",
        short: None,
        value_name: "PIXELS",
        example: "9",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        default: DefaultValue::Of(|| d().post.max_hole.to_string()),
        help: "Fill enclosed background holes smaller than this many pixels (0: off).",
        colour_models_only: false,
    },
    Spec {
        name: "seed-format",
        short: None,
        value_name: "FORMAT",
        example: "opencv",
        kind: Kind::Choice(&["auto", "palette", "trimap", "opencv", "rgb", "labels"]),
        default: DefaultValue::Of(|| SeedOptions::default().format.name().into()),
        help: "The seeds' convention when auto-detection cannot tell.",
        colour_models_only: false,
    },
    Spec {
        name: "fg-color",
        short: None,
        value_name: "R,G,B",
        example: "1,2,3",
        kind: COLOR,
        default: DefaultValue::Of(|| color_text(SeedOptions::default().fg_color)),
        help: "Foreground scribble colour of RGB seeds.",
        colour_models_only: false,
    },
    Spec {
        name: "bg-color",
        short: None,
        value_name: "R,G,B",
        example: "4,5,6",
        kind: COLOR,
        default: DefaultValue::Of(|| color_text(SeedOptions::default().bg_color)),
        help: "Background scribble colour of RGB seeds.",
        colour_models_only: false,
    },
];

/// The `model` name of a model kind.
pub fn model_name(m: ModelKind) -> &'static str {
    match m {
        ModelKind::Gmm { .. } => "gmm",
        ModelKind::Histogram { .. } => "hist",
    }
}

/// The `color-space` name of a colour space.
pub fn color_space_name(c: ColorSpace) -> &'static str {
    match c {
        ColorSpace::Lab => "lab",
        ColorSpace::AsIs => "rgb",
    }
}

fn initial_name(i: InitialModels) -> &'static str {
    match i {
        InitialModels::Seeds => "seeds",
        InitialModels::NearestStroke => "nearest",
        InitialModels::UnlabelledBackground => "background",
        InitialModels::NearerBackground => "nearer-background",
        InitialModels::NearerUnexplained => "nearer-unexplained",
    }
}

impl Values {
    fn expect(&self, t: Table) {
        debug_assert_eq!(self.table, t, "options of another table");
    }

    /// The given segmentation options on top of `base` (the library's defaults, or a front
    /// end's derived ones: see the module docs).
    pub fn segment_options(&self, base: SegmentOptions) -> Result<SegmentOptions, OptionError> {
        self.expect(Table::Segment);
        let mut o = base;
        if let Some(c) = self.text("connectivity") {
            o.connectivity = c.parse().ok().and_then(Connectivity::from_number);
        }
        if let Some(x) = self.float("lambda") {
            o.lambda = x;
        }
        if let Some(x) = self.float("sigma") {
            o.sigma = Some(x);
        }
        match self.text("model") {
            Some("hist") if !matches!(o.model, ModelKind::Histogram { .. }) => {
                o.model = ModelKind::Histogram { bins: DEFAULT_BINS }
            }
            Some("gmm") if !matches!(o.model, ModelKind::Gmm { .. }) => {
                o.model = ModelKind::Gmm {
                    components: DEFAULT_COMPONENTS,
                }
            }
            _ => {}
        }
        if let Some(k) = self.int("components") {
            match &mut o.model {
                ModelKind::Gmm { components } => *components = k as usize,
                ModelKind::Histogram { .. } => {
                    return Err(self.error(
                        "components",
                        "sets the Gaussian mixtures of model gmm, not histograms (use bins)",
                    ))
                }
            }
        }
        if let Some(b) = self.int("bins") {
            match &mut o.model {
                ModelKind::Histogram { bins } => *bins = b as usize,
                ModelKind::Gmm { .. } => {
                    return Err(self.error(
                        "bins",
                        "sets the histograms of model hist; with Gaussian mixtures use components",
                    ))
                }
            }
        }
        match self.text("color-space") {
            Some("lab") => o.color_space = ColorSpace::Lab,
            Some("rgb") => o.color_space = ColorSpace::AsIs,
            _ => {}
        }
        if let Some(n) = self.int("iterations") {
            o.iterations = n as usize;
        }
        if let Some(x) = self.float("seed-weight") {
            o.seed_weight = x;
        }
        if let Some(n) = self.int("refit-steps") {
            o.refit_steps = n as usize;
        }
        match self.text("initial") {
            Some("seeds") => o.initial = InitialModels::Seeds,
            Some("nearest") => o.initial = InitialModels::NearestStroke,
            Some("background") => o.initial = InitialModels::UnlabelledBackground,
            Some("nearer-background") => o.initial = InitialModels::NearerBackground,
            Some("nearer-unexplained") => o.initial = InitialModels::NearerUnexplained,
            _ => {}
        }
        if let Some(x) = self.float("initial-enclosure") {
            o.initial_enclosure = x;
        }
        if let Some(x) = self.float("initial-coverage") {
            o.initial_coverage = x;
        }
        if let Some(x) = self.float("initial-margin") {
            o.initial_margin = x;
        }
        if let Some(x) = self.float("stroke-check") {
            o.stroke_check = x;
        }
        if let Some(s) = self.text("solver") {
            o.solver = s
                .parse()
                .map_err(|e: crate::Error| self.error("solver", e.to_string()))?;
        }
        if let Some(n) = self.int("gpu-min-nodes") {
            o.auto.min_gpu_nodes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(b) = self.boolean("cpu-build") {
            o.gpu_build = !b;
        }
        if let Some(b) = self.boolean("no-warm-start") {
            o.warm_start = !b;
        }
        if let Some(b) = self.boolean("verify") {
            o.verify = b;
        }
        if let Some(x) = self.float("prior") {
            o.prior.weight = x;
        }
        if let Some(x) = self.float("prior-contrast") {
            o.prior.contrast = x;
        }
        if let Some(x) = self.float("prior-softness") {
            o.prior.softness = x;
        }
        if let Some(x) = self.float("prior-explained") {
            o.prior.explained = x;
        }
        if let Some(x) = self.float("prior-enclosure") {
            o.prior.enclosure = x;
        }
        if let Some(x) = self.float("prior-coverage") {
            o.prior.coverage = x;
        }
        if let Some(x) = self.float("outlier") {
            o.outlier = x;
        }
        if let Some(b) = self.boolean("drop-unseeded") {
            o.post.drop_unseeded = b;
        }
        if let Some(n) = self.int("fill-holes") {
            o.post.max_hole = usize::try_from(n).unwrap_or(usize::MAX);
        }
        Ok(o)
    }

    /// The options of a segmentation whose data term is a probability map: the defaults for one
    /// ([`SegmentOptions::for_probability`]) under what was given, refusing what only the colour
    /// models use (there are none to fit or refit).
    pub fn probability_options(&self, base: SegmentOptions) -> Result<SegmentOptions, OptionError> {
        self.expect(Table::Segment);
        for name in self.names() {
            let spec = self
                .table
                .find(name)
                .expect("given options are in the table");
            if spec.colour_models_only {
                return Err(self.error(
                    name,
                    "does not apply with a probability map as the data term (there are no colour \
                     models to fit)",
                ));
            }
        }
        if let Some(n) = self.int("iterations").filter(|&n| n > 1) {
            return Err(self.error(
                "iterations",
                format!("{n}: a probability map is cut once (there are no colour models to refit)"),
            ));
        }
        self.segment_options(base.for_probability())
    }

    /// How to read the seed file.
    pub fn seed_options(&self) -> SeedOptions {
        self.seed_options_on(SeedOptions::default())
    }

    /// How to read the seed file: the given options on top of `base`.
    pub fn seed_options_on(&self, base: SeedOptions) -> SeedOptions {
        self.expect(Table::Segment);
        let mut s = base;
        if let Some(f) = self.text("seed-format") {
            s.format = f.parse::<SeedFormat>().unwrap_or_default();
        }
        if let Some(c) = self.text("fg-color").and_then(|c| parse_color(c).ok()) {
            s.fg_color = c;
        }
        if let Some(c) = self.text("bg-color").and_then(|c| parse_color(c).ok()) {
            s.bg_color = c;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_changes_what_it_sets() {
        let base_opts = Values::segment().segment_options(d()).unwrap();
        let base_seeds = Values::segment().seed_options();
        for spec in SEGMENT {
            let mut v = Values::segment();
            // components needs gmm (the default), bins needs hist.
            if spec.name == "bins" {
                v.set("model", "hist").unwrap();
            }
            let before = v.segment_options(d()).unwrap();
            v.set(spec.name, spec.example).unwrap();
            let o = v.segment_options(d()).unwrap();
            let changed = o != before || v.seed_options() != base_seeds;
            assert!(changed, "option {} changed nothing", spec.name);
            let _ = &base_opts;
        }
    }

    #[test]
    fn choices_parse_into_the_library_types() {
        for f in ["auto", "palette", "trimap", "opencv", "rgb", "labels"] {
            assert_eq!(f.parse::<SeedFormat>().unwrap().name(), f);
        }
        let mut v = Values::segment();
        v.set("model", "hist").unwrap();
        v.set("components", "3").unwrap();
        assert!(v.segment_options(d()).is_err());
    }

    #[test]
    fn a_value_equal_to_the_default_is_kept() {
        let mut v = Values::segment();
        v.set("lambda", &d().lambda.to_string()).unwrap();
        let o = v.probability_options(d()).unwrap();
        assert_eq!(
            o.lambda,
            d().lambda,
            "given, so not replaced by the unary default"
        );
        let o = Values::segment().probability_options(d()).unwrap();
        assert_eq!(o.lambda, crate::segment::unary::UNARY_LAMBDA);
    }

    #[test]
    fn colour_model_options_are_refused_with_a_probability_map() {
        for (k, val) in [
            ("model", "gmm"),
            ("components", "5"),
            ("iterations", "3"),
            ("prior", "1"),
        ] {
            let mut v = Values::segment();
            v.set(k, val).unwrap();
            let e = v.probability_options(d()).unwrap_err();
            assert_eq!(e.option, k);
        }
        let mut v = Values::segment();
        v.set("iterations", "1").unwrap();
        assert!(v.probability_options(d()).is_ok());
    }
}
