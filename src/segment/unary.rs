//! Refining a per-pixel foreground probability (a neural network's output, say) with an exact
//! graph cut: the probability is the data term, the image's contrast gives the n-links, and
//! optional seeds are hard constraints.
//!
//! ```text
//! D_p(fg) = −ln max(P_p, ε),   D_p(bg) = −ln max(1 − P_p, ε),   ε = PROBABILITY_FLOOR
//! ```
//!
//! The floor keeps a pixel the network is certain about (`P = 0` or `1`) correctable by its
//! neighbours and seeds: its cost is at most `−ln ε ≈ 13.8` nats instead of infinite. The
//! n-links are those of [`super::energy`] (contrast-sensitive, `β` from the image) at the
//! options' `λ` (use [`UNARY_LAMBDA`]); one cut, no model refits (there are no colour models), the
//! certificate checked.
//!
//! ```
//! use segcut::segment::unary::{segment_probability, UNARY_LAMBDA};
//! use segcut::segment::{Image, SegmentOptions};
//! // A flat 6×1 image; the map says foreground on the left, with one noisy pixel.
//! let image = Image::new([6, 1, 1], 1, vec![80.0; 6]);
//! let prob = [0.9, 0.9, 0.45, 0.9, 0.1, 0.1];
//! let opts = SegmentOptions { lambda: UNARY_LAMBDA, ..SegmentOptions::default() };
//! let seg = segment_probability(&image, &prob, None, &opts).unwrap();
//! assert_eq!(seg.mask, [true, true, true, true, false, false]); // the dip is smoothed over
//! assert!(seg.verified);
//! ```

use super::color::to_color_space;
use super::energy::{self, EnergyOptions};
use super::pipeline::{IterationStats, SegmentOptions, SegmentStats, Segmentation};
use super::post::post_process;
use crate::io::{Image, Seeds};
use crate::maxflow::{solve, SolveOptions};
use crate::{Error, Result};
use std::time::Instant;

/// The smallest probability a data cost is computed from (see the module docs).
pub const PROBABILITY_FLOOR: f64 = 1e-6;

/// The `λ` to use with a probability data term (`segcut --unary` uses it unless `--lambda` is
/// given): the default [`SegmentOptions::lambda`] is calibrated against colour mixtures' costs
/// (tens of nats per pixel), a probability's are a few nats.
pub const UNARY_LAMBDA: f64 = 2.0;

/// Segments `image` with `prob` (foreground probability per pixel, in `[0, 1]`) as the data term
/// and `seeds`, if given, as hard constraints (soft seeds are ignored: there is no model to feed).
pub fn segment_probability(
    image: &Image,
    prob: &[f32],
    seeds: Option<&Seeds>,
    opts: &SegmentOptions,
) -> Result<Segmentation> {
    energy::check_image(image)?;
    let n = image.num_pixels();
    if prob.len() != n {
        return Err(Error::Input {
            file: "probability map".into(),
            msg: format!("{} values for an image of {n} pixels", prob.len()),
        });
    }
    if let Some(i) = prob.iter().position(|p| !(0.0..=1.0).contains(p)) {
        let [w, h, _] = image.dims;
        return Err(Error::Input {
            file: "probability map".into(),
            msg: format!(
                "pixel (x={}, y={}, z={}) has {}, not a probability in [0, 1]",
                i % w,
                (i / w) % h,
                i / (w * h),
                prob[i]
            ),
        });
    }
    let unknown;
    let seeds = match seeds {
        Some(s) => s,
        None => {
            unknown = Seeds::unknown(image.dims);
            &unknown
        }
    };
    energy::check_seeds(image, seeds)?;
    // No colour models, no prior and no warm start here: the rest of the estimate applies.
    let lean = SegmentOptions {
        warm_start: false,
        prior: super::prior::SpatialPrior {
            weight: 0.0,
            ..opts.prior
        },
        ..opts.clone()
    };
    super::budget::check(image, &lean)?;
    let t0 = Instant::now();
    let work = to_color_space(image, opts.color_space);
    let eopts = EnergyOptions {
        connectivity: opts.connectivity_for(image),
        lambda: opts.lambda,
        sigma: opts.sigma,
        scale: None,
    };
    let mut e = energy::build_nlinks(&work, &eopts)?;
    let prepare = t0.elapsed();
    let t1 = Instant::now();
    energy::set_tlinks_probability(&mut e, seeds, prob, PROBABILITY_FLOOR)?;
    let t2 = Instant::now();
    // The one solver entry point; it checks the certificate when asked.
    let solved = solve(
        &e.graph,
        &SolveOptions {
            solver: opts.solver,
            auto: opts.auto,
            flows: false,
            verify: opts.verify,
        },
    )?;
    let (cut, ran) = (solved.cut, solved.ran);
    let t3 = Instant::now();
    let t4 = t3;
    let cut_mask: Vec<bool> = cut.sink_side.iter().map(|&s| !s).collect();
    let foreground = cut_mask.iter().filter(|&&m| m).count();
    let energy = e.energy_of_flow(cut.flow);
    let (mask, post_changed) = post_process(&cut_mask, seeds, &opts.post)?;
    let stats = SegmentStats {
        dims: image.dims,
        connectivity: e.graph.connectivity(),
        nodes: n,
        edges: e.graph.num_edges(),
        seed_counts: seeds.counts(),
        beta: e.beta,
        scale: e.scale,
        hard: e.hard,
        prepare,
        gpu: None,
        gpu_build_declined: None,
        solver: ran,
        iterations: vec![IterationStats {
            models: std::time::Duration::ZERO,
            graph: t2 - t1,
            solve: t3 - t2,
            verify: t4 - t3,
            flow: cut.flow,
            energy,
            foreground,
            changed: foreground,
            warm: false,
        }],
        post_changed,
    };
    Ok(Segmentation {
        mask,
        flow: cut.flow,
        energy,
        verified: opts.verify,
        graph: opts.keep_graph.then_some(e.graph),
        stats,
    })
}
