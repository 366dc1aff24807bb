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
//! let opts = SegmentOptions::default().for_probability();
//! assert_eq!(opts.lambda, UNARY_LAMBDA);
//! let seg = segment_probability(&image, &prob, None, &opts).unwrap();
//! assert_eq!(seg.mask, [true, true, true, true, false, false]); // the dip is smoothed over
//! assert!(seg.verified);
//! ```

use super::pipeline::{segment_with, DataTerm, SegmentOptions, Segmentation};
use crate::io::{Image, Seeds};
use crate::Result;

pub use super::energy::PROBABILITY_FLOOR;

/// The `λ` to use with a probability data term (the default of
/// [`SegmentOptions::for_probability`], which every front end starts from unless `lambda` is
/// given): the default [`SegmentOptions::lambda`] is calibrated against colour mixtures' costs
/// (tens of nats per pixel), a probability's are a few nats.
pub const UNARY_LAMBDA: f64 = 2.0;

impl SegmentOptions {
    /// These options as the defaults of a probability data term: `λ` [`UNARY_LAMBDA`], one cut
    /// (there are no colour models to refit) and no stroke prior (it leans on the colour
    /// models' seeds). Front ends apply what the user gave on top of this.
    pub fn for_probability(self) -> Self {
        SegmentOptions {
            lambda: UNARY_LAMBDA,
            iterations: 1,
            prior: crate::segment::prior::SpatialPrior {
                weight: 0.0,
                ..self.prior
            },
            ..self
        }
    }
}

/// Segments `image` with `prob` (foreground probability per pixel, in `[0, 1]`) as the data term
/// and `seeds`, if given, as hard constraints (soft seeds are ignored: there is no model to feed),
/// through the one segmentation pipeline ([`segment_with`]): the same GPU build, solver choice
/// and statistics as colour models. `opts.iterations` must be 1.
pub fn segment_probability(
    image: &Image,
    prob: &[f32],
    seeds: Option<&Seeds>,
    opts: &SegmentOptions,
) -> Result<Segmentation> {
    let unknown;
    let seeds = match seeds {
        Some(s) => s,
        None => {
            unknown = Seeds::unknown(image.dims);
            &unknown
        }
    };
    segment_with(image, seeds, DataTerm::Probability(prob), opts)
}
