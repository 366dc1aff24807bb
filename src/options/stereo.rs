//! The stereo options ([`STEREO`]) and how given values become [`StereoOptions`].

use super::{DefaultValue, Kind, OptionError, Range, Spec, Table, Values};
use crate::graph::Connectivity;
use crate::maxflow::{SolverKind, AUTO_MIN_GPU_NODES};
use crate::stereo::median::MAX_RADIUS;
use crate::stereo::{CostOptions, DataTerm, Smoothness, StereoOptions};

/// The front ends' stereo defaults: the library's [`StereoOptions::default`] with solver `auto`
/// (the library's own default stays BK, which its tests rely on).
pub fn stereo_base() -> StereoOptions {
    let mut o = StereoOptions::default();
    o.expansion.solve.solver = SolverKind::Auto;
    o
}

fn d() -> StereoOptions {
    stereo_base()
}

fn check_solver(s: &str) -> Result<(), String> {
    s.parse::<SolverKind>()
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Parses `potts` or `linear:T` (`T ≥ 1`).
pub fn parse_smoothness(s: &str) -> Result<Smoothness, String> {
    match s {
        "potts" => Ok(Smoothness::Potts),
        s => match s.strip_prefix("linear:").map(str::parse::<u32>) {
            Some(Ok(t)) if t >= 1 => Ok(Smoothness::TruncatedLinear { truncation: t }),
            _ => Err("not potts or linear:T with T ≥ 1".into()),
        },
    }
}

fn smoothness_name(s: Smoothness) -> String {
    match s {
        Smoothness::Potts => "potts".into(),
        Smoothness::TruncatedLinear { truncation } => format!("linear:{truncation}"),
    }
}

/// Every stereo option, in the order they are applied.
pub static STEREO: &[Spec] = &[
    Spec {
        name: "disparities",
        short: Some('n'),
        value_name: "N",
        example: "9",
        kind: Kind::Int {
            min: 1,
            max: u16::MAX as i64,
        },
        default: DefaultValue::Of(|| d().num_disparities.to_string()),
        help: "Number of disparities (labels 0..N−1, offset by min-disparity).",
        colour_models_only: false,
    },
    Spec {
        name: "min-disparity",
        short: None,
        value_name: "D",
        example: "2",
        kind: Kind::Int {
            min: i16::MIN as i64,
            max: i16::MAX as i64,
        },
        default: DefaultValue::Of(|| d().min_disparity.to_string()),
        help: "Smallest disparity (negative ones need a .pfm output: PNG holds none).",
        colour_models_only: false,
    },
    Spec {
        name: "max-disparity",
        short: None,
        value_name: "D",
        example: "30",
        kind: Kind::Int {
            min: i16::MIN as i64,
            max: i16::MAX as i64,
        },
        default: DefaultValue::Note("min-disparity + disparities − 1"),
        help: "Largest disparity (instead of disparities).",
        colour_models_only: false,
    },
    Spec {
        name: "data",
        short: None,
        value_name: "TERM",
        example: "bt",
        kind: Kind::Choice(&["bt", "bt-census"]),
        default: DefaultValue::Of(|| d().cost.data.name().into()),
        help: "Data term: bt (Birchfield–Tomasi) or bt-census (BT plus a 5×5 census Hamming \
               distance).",
        colour_models_only: false,
    },
    Spec {
        name: "truncation",
        short: None,
        value_name: "T",
        example: "7",
        kind: Kind::Float(Range::POSITIVE),
        default: DefaultValue::Of(|| CostOptions::default().truncation.to_string()),
        help: "BT truncation (8-bit intensity units).",
        colour_models_only: false,
    },
    Spec {
        name: "census-weight",
        short: None,
        value_name: "W",
        example: "2",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| CostOptions::default().census_weight.to_string()),
        help: "Weight of one differing census bit (with data bt-census).",
        colour_models_only: false,
    },
    Spec {
        name: "cost-scale",
        short: None,
        value_name: "S",
        example: "4",
        kind: Kind::Float(Range::POSITIVE),
        default: DefaultValue::Of(|| CostOptions::default().scale.to_string()),
        help: "Integer cost units per intensity unit (costs and weights are rounded after \
               scaling).",
        colour_models_only: false,
    },
    Spec {
        name: "smoothness",
        short: None,
        value_name: "DIST",
        example: "linear:2",
        kind: Kind::Text {
            check: |s| parse_smoothness(s).map(|_| ()),
            what: "potts or linear:T",
        },
        default: DefaultValue::Of(|| smoothness_name(d().smoothness)),
        help: "Smoothness: potts (contrast-sensitive Potts) or linear:T (truncated linear).",
        colour_models_only: false,
    },
    Spec {
        name: "lambda",
        short: None,
        value_name: "LAMBDA",
        example: "3",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| d().lambda.to_string()),
        help: "λ: the pair weight across an intensity edge.",
        colour_models_only: false,
    },
    Spec {
        name: "contrast-threshold",
        short: None,
        value_name: "T",
        example: "9",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| d().contrast_threshold.to_string()),
        help: "Neighbours closer than this (largest channel difference) get contrast-factor × λ.",
        colour_models_only: false,
    },
    Spec {
        name: "contrast-factor",
        short: None,
        value_name: "F",
        example: "3",
        kind: Kind::Float(Range::NON_NEGATIVE),
        default: DefaultValue::Of(|| d().contrast_factor.to_string()),
        help: "The weight factor for similar neighbours.",
        colour_models_only: false,
    },
    Spec {
        name: "connectivity",
        short: Some('c'),
        value_name: "N",
        example: "8",
        kind: Kind::Choice(&["4", "8"]),
        default: DefaultValue::Of(|| d().connectivity.number().to_string()),
        help: "Neighbourhood: 4 or 8.",
        colour_models_only: false,
    },
    Spec {
        name: "iterations",
        short: None,
        value_name: "N",
        example: "2",
        kind: Kind::Int { min: 1, max: 1000 },
        default: DefaultValue::Note("until a pass lowers the energy no more"),
        help: "Passes over all labels.",
        colour_models_only: false,
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
        default: DefaultValue::Of(|| d().expansion.solve.solver.name().into()),
        help: "Max-flow solver for every expansion move (auto: cuda-grid for images of at least \
               gpu-min-nodes pixels when a GPU is usable, else BK).",
        colour_models_only: false,
    },
    Spec {
        name: "gpu-min-nodes",
        short: None,
        value_name: "PIXELS",
        example: "5",
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        default: DefaultValue::Of(|| AUTO_MIN_GPU_NODES.to_string()),
        help: "With solver auto: images with fewer pixels are cut on the CPU.",
        colour_models_only: false,
    },
    Spec {
        name: "verify",
        short: None,
        value_name: "BOOL",
        example: "true",
        kind: Kind::Flag,
        default: DefaultValue::Of(|| d().expansion.solve.verify.to_string()),
        help: "Check every move's optimality certificate (cut capacity = flow).",
        colour_models_only: false,
    },
    Spec {
        name: "left-right",
        short: None,
        value_name: "TOL|off",
        example: "1",
        kind: Kind::Text {
            check: |s| parse_left_right(s).map(|_| ()),
            what: "a tolerance (0, 1, ...) or off",
        },
        default: DefaultValue::Of(|| left_right_name(d().left_right)),
        help: "Left–right consistency check: the right view's map too, and left pixels whose \
               match does not point back (within TOL disparity steps) filled from their row's \
               background.",
        colour_models_only: false,
    },
    Spec {
        name: "median-radius",
        short: None,
        value_name: "R",
        example: "9",
        kind: Kind::Int {
            min: 0,
            max: MAX_RADIUS as i64,
        },
        default: DefaultValue::Of(|| d().median.radius.to_string()),
        help: "Joint weighted median filter of the final map, guided by the left view: window \
               (2R+1)², each neighbour weighing exp(−colour distance / median-colour − pixel \
               distance / median-space); 0: off.",
        colour_models_only: false,
    },
    Spec {
        name: "median-colour",
        short: None,
        value_name: "SIGMA",
        example: "20",
        kind: Kind::Float(Range::POSITIVE),
        default: DefaultValue::Of(|| d().median.sigma_colour.to_string()),
        help: "The weighted median's colour scale σ_c (8-bit units).",
        colour_models_only: false,
    },
    Spec {
        name: "median-space",
        short: None,
        value_name: "SIGMA",
        example: "9",
        kind: Kind::Float(Range::POSITIVE),
        default: DefaultValue::Of(|| d().median.sigma_space.to_string()),
        help: "The weighted median's spatial scale σ_s (pixels).",
        colour_models_only: false,
    },
];

/// Parses `off` or a tolerance in disparity steps.
pub fn parse_left_right(s: &str) -> Result<Option<u32>, String> {
    match s {
        "off" => Ok(None),
        t => t
            .parse::<u32>()
            .map(Some)
            .map_err(|_| "not a tolerance (0, 1, ...) or off".into()),
    }
}

fn left_right_name(t: Option<u32>) -> String {
    t.map_or("off".into(), |t| t.to_string())
}

impl Values {
    /// The given stereo options on top of `base` (usually [`stereo_base`]).
    pub fn stereo_options(&self, base: StereoOptions) -> Result<StereoOptions, OptionError> {
        self.expect_stereo();
        let mut o = base;
        if let Some(n) = self.int("disparities") {
            o.num_disparities = n as usize;
        }
        if let Some(m) = self.int("min-disparity") {
            o.min_disparity = m as i32;
        }
        if let Some(max) = self.int("max-disparity") {
            if self.is_given("disparities") {
                return Err(self.error(
                    "max-disparity",
                    "give disparities or max-disparity, not both",
                ));
            }
            let min = o.min_disparity as i64;
            if max < min {
                return Err(self.error(
                    "max-disparity",
                    format!("{max} is below min-disparity {min}"),
                ));
            }
            o.num_disparities = (max - min + 1) as usize;
        }
        if let Some(t) = self.text("data") {
            o.cost.data = DataTerm::parse(t).unwrap_or_default();
        }
        if let Some(x) = self.float("truncation") {
            o.cost.truncation = x as f32;
        }
        if let Some(x) = self.float("census-weight") {
            o.cost.census_weight = x as f32;
        }
        if let Some(x) = self.float("cost-scale") {
            o.cost.scale = x as f32;
        }
        if let Some(s) = self.text("smoothness") {
            o.smoothness = parse_smoothness(s).map_err(|m| self.error("smoothness", m))?;
        }
        if let Some(x) = self.float("lambda") {
            o.lambda = x as f32;
        }
        if let Some(x) = self.float("contrast-threshold") {
            o.contrast_threshold = x as f32;
        }
        if let Some(x) = self.float("contrast-factor") {
            o.contrast_factor = x as f32;
        }
        if let Some(c) = self.text("connectivity") {
            o.connectivity = if c == "8" {
                Connectivity::N8
            } else {
                Connectivity::N4
            };
        }
        if let Some(n) = self.int("iterations") {
            o.expansion.max_passes = Some(n as usize);
        }
        if let Some(s) = self.text("solver") {
            o.expansion.solve.solver = s
                .parse()
                .map_err(|e: crate::Error| self.error("solver", e.to_string()))?;
        }
        if let Some(n) = self.int("gpu-min-nodes") {
            o.expansion.solve.auto.min_gpu_nodes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(b) = self.boolean("verify") {
            o.expansion.solve.verify = b;
        }
        if let Some(t) = self.text("left-right") {
            o.left_right = parse_left_right(t).map_err(|m| self.error("left-right", m))?;
        }
        if let Some(r) = self.int("median-radius") {
            o.median.radius = r as u32;
        }
        if let Some(x) = self.float("median-colour") {
            o.median.sigma_colour = x as f32;
        }
        if let Some(x) = self.float("median-space") {
            o.median.sigma_space = x as f32;
        }
        // Costs and weights are rounded to integers after scaling: refuse what overflows.
        let most = (o.cost.truncation + 24.0 * o.cost.census_weight) * o.cost.scale;
        let pair = o.lambda * o.contrast_factor.max(1.0) * o.cost.scale;
        if !(most.is_finite() && most < 1e6 && pair.is_finite() && pair < 1e6) {
            return Err(self.error(
                "cost-scale",
                format!(
                    "costs up to {most} and pair weights up to {pair} cost units: keep both \
                     below 10⁶ (lower cost-scale, truncation, census-weight or lambda)"
                ),
            ));
        }
        Ok(o)
    }

    fn expect_stereo(&self) {
        debug_assert_eq!(self.table, Table::Stereo, "options of another table");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_changes_what_it_sets() {
        let before = Values::stereo().stereo_options(d()).unwrap();
        for spec in STEREO {
            let mut v = Values::stereo();
            v.set(spec.name, spec.example).unwrap();
            let o = v.stereo_options(d()).unwrap();
            assert!(o != before, "option {} changed nothing", spec.name);
        }
        for name in ["bt", "bt-census"] {
            assert_eq!(DataTerm::parse(name).unwrap().name(), name);
        }
    }

    #[test]
    fn max_below_min_and_both_counts_are_refused() {
        let mut v = Values::stereo();
        v.set("min-disparity", "5").unwrap();
        v.set("max-disparity", "3").unwrap();
        assert!(v.stereo_options(d()).is_err());
        let mut v = Values::stereo();
        v.set("disparities", "5").unwrap();
        v.set("max-disparity", "9").unwrap();
        assert!(v.stereo_options(d()).is_err());
    }
}
