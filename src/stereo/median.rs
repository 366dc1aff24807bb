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
//! It acts on the final labelling only, so every solver (BK, the GPU engine) gets the same result
//! from the same labelling. The weights are fixed-point integers ([`weighted_median`] says how),
//! so the sums do not depend on their order and the device engine runs the same filter on its
//! labelling (`kernels/stereo.cu`, `weighted_median`) with the same result bit for bit.

use super::cost::Planes;
use crate::io::Image;
use crate::{Error, Result};
use std::sync::{Arc, Mutex};

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

/// The fixed-point scale of the colour and of the spatial weights: each is stored as
/// `round(w · 2²⁴)`, so a neighbour's weight, their product, is below 2⁴⁸ and a window's sum (at
/// most 65² neighbours) below 2⁶¹.
const ONE: f64 = (1u64 << 24) as f64;

/// The most channels a guide may have (grey, RGB, RGBA): the colour table has an entry per
/// squared distance up to `channels · 255²`.
pub const MAX_GUIDE_CHANNELS: usize = 4;

/// The most labels the device filter (`kernels/stereo.cu`, `weighted_median`) takes: each thread
/// keeps a histogram of this many sums (`MEDIAN_MAX_LABELS` there). With more, the engine brings
/// its labels back and the host filters them, with the same result.
pub const DEVICE_MAX_LABELS: usize = 128;

/// The filter's integer weights for one setting and channel count: what the host loop and the
/// device kernel both read, so neither computes an `exp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Weights {
    /// `colour[d²] = round(exp(−√d² / σ_c) · 2²⁴)` for a squared colour distance `d²` (8-bit
    /// units, a whole number); 0 past the table's end (the table stops where the entries reach 0).
    pub colour: Arc<Vec<u32>>,
    /// `space[(dy + r)·(2r + 1) + (dx + r)] = round(exp(−√(dx² + dy²) / σ_s) · 2²⁴)`.
    pub space: Vec<u32>,
    /// The window's half-size.
    pub radius: u32,
}

/// A colour table with its key: σ_c's bits and the channel count.
type CachedColour = (u32, usize, Arc<Vec<u32>>);

impl Weights {
    /// The tables of `f` (checked) for a guide of `channels` channels (at most
    /// [`MAX_GUIDE_CHANNELS`]). The colour table's entries are 0 from `d = σ_c · ln 2²⁵` on (the
    /// weight is below half a unit), so it stops there: about 30 000 entries for σ_c = 10, built
    /// in parallel and kept for the next call with the same σ_c and channels.
    pub(crate) fn new(f: &WeightedMedian, channels: usize) -> Result<Self> {
        use rayon::prelude::*;
        f.check()?;
        if channels == 0 || channels > MAX_GUIDE_CHANNELS {
            return Err(Error::Input {
                file: "weighted median".into(),
                msg: format!(
                    "the guide view must have 1 to {MAX_GUIDE_CHANNELS} channels, got {channels}"
                ),
            });
        }
        let weight =
            |d2: u64, sigma: f32| ((-(d2 as f64).sqrt() / sigma as f64).exp() * ONE).round();
        // The last colour table made, for its σ and channel count: a run filters with one
        // setting, so later calls reuse it.
        static LAST: Mutex<Option<CachedColour>> = Mutex::new(None);
        let key = (f.sigma_colour.to_bits(), channels);
        let cached = LAST.lock().ok().and_then(|l| {
            l.as_ref()
                .filter(|e| (e.0, e.1) == key)
                .map(|e| e.2.clone())
        });
        let colour = match cached {
            Some(c) => c,
            None => {
                // Past this distance every weight rounds to 0 (exp(−d/σ) · 2²⁴ < 1/2); a
                // margin of one.
                let last = (f.sigma_colour as f64 * (2.0 * ONE).ln() + 1.0).powi(2);
                let len = (channels as f64 * 255.0 * 255.0).min(last) as usize + 1;
                let mut colour: Vec<u32> = (0..len as u64)
                    .into_par_iter()
                    .map(|d2| weight(d2, f.sigma_colour) as u32)
                    .collect();
                while colour.last() == Some(&0) {
                    colour.pop();
                }
                let colour = Arc::new(colour);
                if let Ok(mut l) = LAST.lock() {
                    *l = Some((key.0, key.1, colour.clone()));
                }
                colour
            }
        };
        let r = f.radius as i64;
        let space = (-r..=r)
            .flat_map(|dy| (-r..=r).map(move |dx| (dx * dx + dy * dy) as u64))
            .map(|d2| weight(d2, f.sigma_space) as u32)
            .collect();
        Ok(Weights {
            colour,
            space,
            radius: f.radius,
        })
    }

    /// The colour weight of a squared distance.
    #[cfg(test)]
    fn colour(&self, d2: u32) -> u32 {
        self.colour.get(d2 as usize).copied().unwrap_or(0)
    }
}

/// A plane value (0–255, as [`Planes`] gives it) as the filter's whole 8-bit colour: rounded half
/// away from zero, below 0 (and NaN) to 0, above 255 to 255; `kernels/stereo.cu`'s `guide_bytes`
/// does the same.
#[inline]
pub(crate) fn guide_byte(v: f32) -> u8 {
    let v = v.round();
    if v > 0.0 {
        if v < 255.0 {
            v as u8
        } else {
            255
        }
    } else {
        0
    }
}

/// The guide's colours as whole 8-bit values, pixel-interleaved (`[p · channels + c]`).
pub(crate) fn guide_bytes(planes: &Planes) -> Vec<u8> {
    let n = planes.width * planes.height;
    (0..n)
        .flat_map(|p| planes.channels.iter().map(move |ch| guide_byte(ch[p])))
        .collect()
}

/// The joint weighted median of `labels` (rows of the guide's width) with `guide` (the left
/// view) giving the colours: per pixel, the smallest label whose window weight, summed over the
/// labels up to it, reaches half of the window's total. The window is clipped at the image
/// border. With `radius` 0 the labels come back unchanged.
///
/// The weights are integers (module [`Weights`](self)): the colours are rounded to whole 8-bit
/// values, and the colour and spatial factors are each `round(w · 2²⁴)`, their product summed in
/// 64 bits. So the result does not depend on the order of the sums, and the device filter of
/// [`gpu`](super::gpu) gives the same map bit for bit.
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
    let weights = Weights::new(f, planes.channels.len())?;
    Ok(filter(labels, &guide_bytes(&planes), w, &weights))
}

/// The filter on whole 8-bit colours (`guide`, pixel-interleaved, `labels.len()` pixels in rows
/// of `w`, `guide.len() / labels.len()` channels, 1 to [`MAX_GUIDE_CHANNELS`]) with the given
/// weights.
pub(crate) fn filter(labels: &[u16], guide: &[u8], w: usize, weights: &Weights) -> Vec<u16> {
    match guide.len() / labels.len().max(1) {
        1 => filter_c::<1>(labels, guide, w, weights),
        2 => filter_c::<2>(labels, guide, w, weights),
        3 => filter_c::<3>(labels, guide, w, weights),
        _ => filter_c::<4>(labels, guide, w, weights),
    }
}

/// [`filter`] for `C` channels (a fixed count, so the distance loop unrolls).
fn filter_c<const C: usize>(labels: &[u16], guide: &[u8], w: usize, weights: &Weights) -> Vec<u16> {
    use rayon::prelude::*;
    let guide: Vec<[u8; C]> = guide
        .chunks_exact(C)
        .map(|c| c.try_into().expect("C bytes"))
        .collect();
    let n = labels.len();
    let h = n / w;
    let r = weights.radius as usize;
    let side = 2 * r + 1;
    let top = labels.iter().copied().max().unwrap_or(0) as usize;
    let colour = &weights.colour[..];
    let mut out = vec![0u16; n];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        // Per label, the window's summed weight; `seen` lists the labels with a sum, to find the
        // median among them and clear them after (a neighbour of weight 0 adds nothing).
        let mut hist = vec![0u64; top + 1];
        let mut seen: Vec<u16> = Vec::new();
        let (y0, y1) = (y.saturating_sub(r), (y + r).min(h - 1));
        for (x, o) in row.iter_mut().enumerate() {
            let (x0, x1) = (x.saturating_sub(r), (x + r).min(w - 1));
            let p = x + w * y;
            let cp = guide[p];
            let mut total = 0u64;
            for qy in y0..=y1 {
                // The window's row qy: colours, labels and spatial weights side by side.
                let s0 = (qy + r - y) * side + (x0 + r - x);
                let srow = &weights.space[s0..s0 + (x1 - x0 + 1)];
                let (g0, g1) = (x0 + w * qy, x1 + w * qy);
                let neighbours = guide[g0..=g1].iter().zip(&labels[g0..=g1]).zip(srow);
                for ((cq, &l), &sw) in neighbours {
                    let mut d2 = 0u32;
                    for k in 0..C {
                        let d = cp[k] as i32 - cq[k] as i32;
                        d2 += (d * d) as u32;
                    }
                    let cw = colour.get(d2 as usize).copied().unwrap_or(0);
                    let wt = cw as u64 * sw as u64;
                    if wt == 0 {
                        continue;
                    }
                    let e = &mut hist[l as usize];
                    if *e == 0 {
                        seen.push(l);
                    }
                    *e += wt;
                    total += wt;
                }
            }
            // The centre weighs 2⁴⁸ (distance 0 both ways), so the total is positive.
            seen.sort_unstable();
            let mut acc = 0u64;
            *o = labels[p];
            let mut found = false;
            for &l in &seen {
                let e = &mut hist[l as usize];
                acc += *e;
                *e = 0;
                if !found && 2 * acc >= total {
                    *o = l;
                    found = true;
                }
            }
            seen.clear();
        }
    });
    out
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
    fn the_weight_tables() {
        let f = WeightedMedian {
            radius: 2,
            sigma_colour: 10.0,
            sigma_space: 3.0,
        };
        let t = Weights::new(&f, 3).unwrap();
        assert_eq!((t.colour[0], t.space[12]), (1 << 24, 1 << 24));
        assert_eq!(t.space.len(), 25);
        // exp(−1/3) and exp(−√8/3) of 2²⁴, exp(−√2/10) likewise.
        assert_eq!(t.space[13], 12_021_401);
        assert_eq!(t.space[0], 6_535_264);
        assert_eq!(t.colour[2], 14_564_695);
        assert!(t.colour.windows(2).all(|p| p[0] >= p[1]));
        // The table stops at its last non-zero entry, at about (σ · ln 2²⁵)² ≈ 30 028.
        assert!(*t.colour.last().unwrap() > 0);
        assert!(
            (30_000..30_100).contains(&t.colour.len()),
            "{}",
            t.colour.len()
        );
        assert_eq!(t.colour(t.colour.len() as u32), 0);
        // A huge σ keeps every distance up to channels · 255².
        let wide = WeightedMedian {
            sigma_colour: 1e30,
            ..f
        };
        assert_eq!(
            Weights::new(&wide, 2).unwrap().colour.len(),
            2 * 255 * 255 + 1
        );
        assert!(Weights::new(&f, 5).is_err());
        assert!(Weights::new(&f, 0).is_err());
    }

    #[test]
    fn guide_values_round_to_bytes() {
        let cases = [
            (0.0, 0),
            (0.49, 0),
            (0.5, 1),
            (254.5, 255),
            (300.0, 255),
            (-3.0, 0),
            (f32::NAN, 0),
            (f32::INFINITY, 255),
            (f32::NEG_INFINITY, 0),
            (17.0, 17),
        ];
        for (v, b) in cases {
            assert_eq!(guide_byte(v), b, "{v}");
        }
    }

    /// The filter by its definition: every label's sum over the whole clipped window, the
    /// smallest label whose running sum reaches half.
    fn reference(labels: &[u16], guide: &[u8], w: usize, t: &Weights) -> Vec<u16> {
        let (n, r) = (labels.len(), t.radius as i64);
        let (h, c) = (n / w, guide.len() / n);
        let top = *labels.iter().max().unwrap() as usize;
        (0..n)
            .map(|p| {
                let (x, y) = ((p % w) as i64, (p / w) as i64);
                let mut hist = vec![0u64; top + 1];
                for dy in -r..=r {
                    for dx in -r..=r {
                        let (qx, qy) = (x + dx, y + dy);
                        if qx < 0 || qy < 0 || qx >= w as i64 || qy >= h as i64 {
                            continue;
                        }
                        let q = (qx + w as i64 * qy) as usize;
                        let d2: u32 = (0..c)
                            .map(|k| (guide[p * c + k] as i32 - guide[q * c + k] as i32).pow(2))
                            .sum::<i32>() as u32;
                        let s = t.space[((dy + r) * (2 * r + 1) + dx + r) as usize];
                        hist[labels[q] as usize] += t.colour(d2) as u64 * s as u64;
                    }
                }
                let total: u64 = hist.iter().sum();
                let mut acc = 0;
                (0..=top)
                    .find(|&l| {
                        acc += hist[l];
                        2 * acc >= total
                    })
                    .unwrap() as u16
            })
            .collect()
    }

    #[test]
    fn the_filter_meets_its_definition_on_random_maps() {
        let mut rng = crate::rng::Rng::new(28);
        for case in 0..24 {
            let (w, h) = (1 + rng.below(40) as usize, 1 + rng.below(30) as usize);
            let c = 1 + case % 4;
            let top = [1u64, 3, 16, 300, 65_535][case % 5];
            let labels: Vec<u16> = (0..w * h).map(|_| rng.below(top + 1) as u16).collect();
            // Few grey levels, so that neighbours share colours and sums tie.
            let guide: Vec<u8> = (0..w * h * c).map(|_| (rng.below(4) * 60) as u8).collect();
            let f = WeightedMedian {
                radius: 1 + rng.below(6) as u32,
                sigma_colour: [0.5f32, 10.0, 1e6][case % 3],
                sigma_space: [0.1f32, 4.0, 100.0][(case / 3) % 3],
            };
            let t = Weights::new(&f, c).unwrap();
            assert_eq!(
                filter(&labels, &guide, w, &t),
                reference(&labels, &guide, w, &t),
                "case {case}: {w}x{h}x{c}, {f:?}"
            );
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
