//! Joint weighted median filter of a label map, guided by the left view: each pixel takes the
//! weighted median of the labels in a `(2r + 1)²` window, each neighbour `q` of `p` weighing
//! `exp(−‖I_p − I_q‖ / σ_c − ‖p − q‖ / σ_s)` (Euclidean colour distance over the channels in
//! 8-bit units, Euclidean pixel distance): Yoon & Kweon's adaptive support weights (PAMI 2006),
//! used as a weighted median as in the post-processing of cost-volume filtering (Rhemann et al.,
//! CVPR 2011; Ma et al., ICCV 2013).
//!
//! Why it helps a graph-cut map: the contrast-sensitive Potts term lets a disparity edge run a
//! pixel or two beside the image edge (foreground fattening) and leaves small wrong islands in
//! textureless regions; the median moves each pixel to the label that most of its same-coloured
//! neighbourhood holds, so disparity edges snap to colour edges. A median (not a mean) never
//! invents a disparity between two surfaces.
//!
//! It acts on the final labelling only, on the host, so every solver (BK, the GPU engine) gets
//! the same result from the same labelling.

use super::cost::Planes;
use crate::io::Image;
use crate::{Error, Result};

/// The largest accepted [`WeightedMedian::radius`]: the work per pixel grows as `(2r + 1)²`.
pub const MAX_RADIUS: u32 = 32;

/// The weighted median filter's setting; `radius` 0 turns it off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WeightedMedian {
    /// Window half-size `r` (window `(2r + 1)²`); 0: off.
    pub radius: u32,
    /// σ_c: the colour distance (8-bit units) over which a weight falls by `e`.
    pub sigma_colour: f32,
    /// σ_s: the pixel distance over which a weight falls by `e`.
    pub sigma_space: f32,
}

impl WeightedMedian {
    /// The filter off.
    pub const OFF: WeightedMedian = WeightedMedian {
        radius: 0,
        sigma_colour: 10.0,
        sigma_space: 4.0,
    };

    /// Whether the filter does anything.
    pub fn is_on(&self) -> bool {
        self.radius > 0
    }

    /// Refuses a radius above [`MAX_RADIUS`] and σ's that are not finite and positive (with NaN
    /// every weight would be NaN and the median undefined).
    pub fn check(&self) -> Result<()> {
        let ok = |s: f32| s.is_finite() && s > 0.0;
        if self.radius > MAX_RADIUS || !ok(self.sigma_colour) || !ok(self.sigma_space) {
            return Err(Error::Input {
                file: "weighted median".into(),
                msg: format!(
                    "radius must be at most {MAX_RADIUS} and both σ finite and > 0, got radius \
                     {}, σ colour {}, σ space {}",
                    self.radius, self.sigma_colour, self.sigma_space
                ),
            });
        }
        Ok(())
    }
}

/// The joint weighted median of `labels` (rows of the guide's width) with `guide` (the left
/// view) giving the colours: per pixel, the smallest label whose window weight, summed over the
/// labels up to it, reaches half of the window's total. The window is clipped at the image
/// border. With `radius` 0 the labels come back unchanged.
///
/// ```
/// use segcut::io::Image;
/// use segcut::stereo::median::{weighted_median, WeightedMedian};
/// // A dark left half (label 1) and a bright right half (label 4); the map's edge is one
/// // pixel too far left on every row.
/// let guide: Vec<f32> = (0..6 * 4).map(|p| if p % 6 < 3 { 20.0 } else { 200.0 }).collect();
/// let guide = Image::new([6, 4, 1], 1, guide);
/// let labels: Vec<u16> = (0..6 * 4).map(|p| if p % 6 < 2 { 1 } else { 4 }).collect();
/// let f = WeightedMedian { radius: 2, sigma_colour: 10.0, sigma_space: 9.0 };
/// let out = weighted_median(&labels, &guide, &f).unwrap();
/// assert_eq!(&out[..6], &[1, 1, 1, 4, 4, 4]);
/// ```
pub fn weighted_median(labels: &[u16], guide: &Image, f: &WeightedMedian) -> Result<Vec<u16>> {
    use rayon::prelude::*;
    f.check()?;
    let planes = Planes::of(guide, "guide view")?;
    let (w, h) = (planes.width, planes.height);
    if labels.len() != w * h {
        return Err(Error::Graph(format!(
            "{} labels for a {w}x{h} guide",
            labels.len()
        )));
    }
    if !f.is_on() || labels.is_empty() {
        return Ok(labels.to_vec());
    }
    let r = f.radius as i64;
    // Window offsets and their spatial weights, in a fixed order (the sums are deterministic).
    let offsets: Vec<(i64, i64, f32)> = (-r..=r)
        .flat_map(|dy| (-r..=r).map(move |dx| (dx, dy)))
        .map(|(dx, dy)| {
            let d = ((dx * dx + dy * dy) as f32).sqrt();
            (dx, dy, (-d / f.sigma_space).exp())
        })
        .collect();
    // Pixel-interleaved colours: one cache line per neighbour.
    let c = planes.channels.len();
    let colours: Vec<f32> = (0..w * h)
        .flat_map(|p| planes.channels.iter().map(move |ch| ch[p]))
        .collect();
    let colour_weight = ColourWeight::new(&colours, c, f.sigma_colour);
    let mut out = vec![0u16; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        // (label, weight) of the labels seen in the window: few distinct ones in practice.
        let mut seen: Vec<(u16, f64)> = Vec::new();
        for (x, o) in row.iter_mut().enumerate() {
            let p = x + w * y;
            let cp = &colours[p * c..p * c + c];
            seen.clear();
            let mut total = 0f64;
            for &(dx, dy, ws) in &offsets {
                let (qx, qy) = (x as i64 + dx, y as i64 + dy);
                if qx < 0 || qy < 0 || qx >= w as i64 || qy >= h as i64 {
                    continue;
                }
                let q = qx as usize + w * qy as usize;
                let cq = &colours[q * c..q * c + c];
                let d2: f32 = cp.iter().zip(cq).map(|(a, b)| (a - b) * (a - b)).sum();
                let wt = (colour_weight.of(d2) * ws) as f64;
                total += wt;
                let l = labels[q];
                match seen.iter_mut().find(|e| e.0 == l) {
                    Some(e) => e.1 += wt,
                    None => seen.push((l, wt)),
                }
            }
            seen.sort_unstable_by_key(|e| e.0);
            let half = total / 2.0;
            let mut acc = 0f64;
            *o = seen.last().map_or(labels[p], |e| e.0);
            for &(l, wt) in &seen {
                acc += wt;
                if acc >= half {
                    *o = l;
                    break;
                }
            }
        }
    });
    Ok(out)
}

/// `exp(−√d² / σ_c)` of a squared colour distance: from a table when every colour is a whole
/// number in 0–255 (8-bit views, so `d²` is a whole number), which saves an `exp` and a square
/// root per pair; computed otherwise. Both give the same value for the same `d²`.
struct ColourWeight {
    table: Option<Vec<f32>>,
    inv_sigma: f32,
}

impl ColourWeight {
    fn new(colours: &[f32], channels: usize, sigma: f32) -> Self {
        let inv_sigma = 1.0 / sigma;
        let whole = colours
            .iter()
            .all(|&v| (0.0..=255.0).contains(&v) && v.fract() == 0.0);
        let table = whole.then(|| {
            (0..=channels * 255 * 255)
                .map(|d2| Self::compute(d2 as f32, inv_sigma))
                .collect()
        });
        ColourWeight { table, inv_sigma }
    }

    fn compute(d2: f32, inv_sigma: f32) -> f32 {
        (-(d2.sqrt() * inv_sigma)).exp()
    }

    fn of(&self, d2: f32) -> f32 {
        match &self.table {
            // d2 is a whole number ≤ channels · 255² here (a sum of squared whole differences).
            Some(t) => t[d2 as usize],
            None => Self::compute(d2, self.inv_sigma),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_and_constant_maps_are_unchanged() {
        let guide = Image::new([5, 3, 1], 1, (0..15).map(|v| (v * 17) as f32).collect());
        let labels: Vec<u16> = (0..15).map(|v| (v % 4) as u16).collect();
        assert_eq!(
            weighted_median(&labels, &guide, &WeightedMedian::OFF).unwrap(),
            labels
        );
        let f = WeightedMedian {
            radius: 3,
            ..WeightedMedian::OFF
        };
        let flat = vec![7u16; 15];
        assert_eq!(weighted_median(&flat, &guide, &f).unwrap(), flat);
    }

    #[test]
    fn an_isolated_wrong_pixel_is_removed() {
        let guide = Image::new([7, 7, 1], 1, vec![100.0; 49]);
        let mut labels = vec![3u16; 49];
        labels[24] = 9;
        let f = WeightedMedian {
            radius: 1,
            ..WeightedMedian::OFF
        };
        let out = weighted_median(&labels, &guide, &f).unwrap();
        assert!(out.iter().all(|&l| l == 3), "{out:?}");
    }

    #[test]
    fn the_colour_table_gives_the_computed_weights() {
        let colours: Vec<f32> = (0..=255).map(|v| v as f32).collect();
        let table = ColourWeight::new(&colours, 3, 7.0);
        assert!(table.table.is_some());
        let computed = ColourWeight::new(&[0.5], 3, 7.0);
        assert!(computed.table.is_none());
        for d2 in [0.0, 1.0, 2.0, 99.0, 3.0 * 255.0 * 255.0] {
            assert_eq!(table.of(d2), computed.of(d2), "{d2}");
        }
    }

    #[test]
    fn bad_settings_and_sizes_are_refused() {
        let guide = Image::new([4, 2, 1], 1, vec![0.0; 8]);
        let labels = vec![0u16; 8];
        for f in [
            WeightedMedian {
                radius: MAX_RADIUS + 1,
                ..WeightedMedian::OFF
            },
            WeightedMedian {
                sigma_colour: f32::NAN,
                ..WeightedMedian::OFF
            },
            WeightedMedian {
                sigma_space: 0.0,
                ..WeightedMedian::OFF
            },
            WeightedMedian {
                sigma_space: f32::INFINITY,
                ..WeightedMedian::OFF
            },
        ] {
            assert!(weighted_median(&labels, &guide, &f).is_err(), "{f:?}");
        }
        let f = WeightedMedian {
            radius: 1,
            ..WeightedMedian::OFF
        };
        assert!(weighted_median(&labels[..7], &guide, &f).is_err());
    }
}
