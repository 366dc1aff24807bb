//! Matching costs of a rectified pair: the cost volume `D_p(d)` that [`expand`](super::expand)
//! minimises with the smoothness term.
//!
//! - **Birchfield–Tomasi** (PAMI 1998): the dissimilarity between left pixel `x` and right pixel
//!   `x − d`, insensitive to image sampling: the distance from each one's value to the range that
//!   the other's linearly interpolated half-pixel neighbourhood spans, the smaller of the two.
//!   On colour, the mean over the channels. Truncated at [`CostOptions::truncation`] so
//!   occluded pixels do not pull their neighbours.
//! - **Census** (Zabih & Woodfill, ECCV 1994), optional: the Hamming distance between the 5×5
//!   census signatures of the two pixels (which neighbours are darker than the centre), robust to
//!   gain and bias differences between the views. Added to BT with a weight.
//!
//! Costs are integers: `round(scale · cost)`.

use super::CostVolume;
use crate::io::Image;
use crate::{Error, Result};

/// The data term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DataTerm {
    /// Birchfield–Tomasi, truncated.
    Bt,
    /// Birchfield–Tomasi plus a weighted census Hamming distance.
    #[default]
    BtCensus,
}

impl DataTerm {
    /// The names the command line uses.
    pub const NAMES: [(DataTerm, &'static str); 2] =
        [(DataTerm::Bt, "bt"), (DataTerm::BtCensus, "bt-census")];

    /// Parses `bt` or `bt-census`.
    ///
    /// ```
    /// use segcut::stereo::DataTerm;
    /// assert_eq!(DataTerm::parse("bt"), Some(DataTerm::Bt));
    /// assert_eq!(DataTerm::parse("sad"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(_, n)| *n == s).map(|(d, _)| *d)
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(d, _)| *d == self)
            .map_or("bt", |(_, n)| n)
    }
}

/// How the cost volume is computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostOptions {
    /// Which dissimilarity.
    pub data: DataTerm,
    /// BT is truncated at this value (intensity units of an 8-bit image).
    pub truncation: f32,
    /// Weight of one differing census bit, in the same units (with [`DataTerm::BtCensus`]).
    pub census_weight: f32,
    /// Costs are stored as `round(scale · cost)`.
    pub scale: f32,
}

impl Default for CostOptions {
    fn default() -> Self {
        CostOptions {
            data: DataTerm::default(),
            truncation: 20.0,
            census_weight: 0.5,
            scale: 1.0,
        }
    }
}

/// The image as `channels` planes of 0–255 values (16-bit and float images rescaled by their
/// range), plus the image's grey plane.
pub(crate) struct Planes {
    pub width: usize,
    pub height: usize,
    pub channels: Vec<Vec<f32>>,
    pub grey: Vec<f32>,
}

/// A view's size and the factor that brings its values to 0–255 (16-bit and float images
/// rescaled by their range): what both the host and the device cost volume start from.
pub(crate) struct View {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub factor: f32,
}

impl View {
    pub(crate) fn of(img: &Image, what: &str) -> Result<Self> {
        if img.is_volume() {
            return Err(Error::Unsupported(format!(
                "{what}: a volume of depth {} is not a stereo view",
                img.dims[2]
            )));
        }
        let [w, h, _] = img.dims;
        let c = img.channels.max(1);
        if img.data.len() != w * h * c {
            return Err(Error::Graph(format!(
                "{what}: {w}x{h} × {c} channels needs {} values, got {}",
                w * h * c,
                img.data.len()
            )));
        }
        let max = img.data.iter().cloned().fold(0f32, f32::max);
        let factor = if max > 255.0 {
            255.0 / if max > 65535.0 { max } else { 65535.0 }
        } else if max <= 1.0 && img.data.iter().any(|&v| v.fract() != 0.0) {
            255.0 // float images in 0..1
        } else {
            1.0
        };
        Ok(View {
            width: w,
            height: h,
            channels: c,
            factor,
        })
    }
}

impl Planes {
    pub(crate) fn of(img: &Image, what: &str) -> Result<Self> {
        let View {
            width: w,
            height: h,
            channels: c,
            factor: k,
        } = View::of(img, what)?;
        let channels: Vec<Vec<f32>> = (0..c)
            .map(|ch| (0..w * h).map(|p| img.data[p * c + ch] * k).collect())
            .collect();
        let grey = (0..w * h)
            .map(|p| channels.iter().map(|pl| pl[p]).sum::<f32>() / c as f32)
            .collect();
        Ok(Planes {
            width: w,
            height: h,
            channels,
            grey,
        })
    }
}

/// The checks of a pair and of the cost options that both cost volumes make: the same size and
/// channels, a count of disparities that fits a label, options that keep every cost within
/// [`MAX_COST`](super::MAX_COST).
pub(crate) fn check_pair(l: &View, r: &View, count: usize, opts: &CostOptions) -> Result<()> {
    if (l.width, l.height) != (r.width, r.height) {
        return Err(Error::Graph(format!(
            "the views differ in size: left {}x{}, right {}x{}",
            l.width, l.height, r.width, r.height
        )));
    }
    if l.channels != r.channels {
        return Err(Error::Graph(format!(
            "the views differ in channels: left {}, right {}",
            l.channels, r.channels
        )));
    }
    if count == 0 || count > u16::MAX as usize {
        return Err(Error::Graph(format!(
            "the number of disparities must be 1..={}, got {count}",
            u16::MAX
        )));
    }
    // Written so that NaN fails every test.
    let in_range = opts.truncation > 0.0
        && opts.scale > 0.0
        && opts.census_weight >= 0.0
        && (opts.truncation + 24.0 * opts.census_weight) * opts.scale
            < super::expansion::MAX_COST as f32;
    if !in_range {
        return Err(Error::Graph(format!(
            "cost options out of range: truncation {}, scale {}, census weight {}",
            opts.truncation, opts.scale, opts.census_weight
        )));
    }
    Ok(())
}

/// Per-channel min and max of the interpolated half-pixel neighbourhood of every pixel.
fn bt_ranges(plane: &[f32], w: usize) -> (Vec<f32>, Vec<f32>) {
    let mut lo = vec![0.0; plane.len()];
    let mut hi = vec![0.0; plane.len()];
    for (row, (lo_r, hi_r)) in plane.chunks(w).zip(lo.chunks_mut(w).zip(hi.chunks_mut(w))) {
        for x in 0..w {
            let c = row[x];
            let m = 0.5 * (c + row[x.saturating_sub(1)]);
            let p = 0.5 * (c + row[(x + 1).min(w - 1)]);
            lo_r[x] = c.min(m).min(p);
            hi_r[x] = c.max(m).max(p);
        }
    }
    (lo, hi)
}

/// 5×5 census signatures of a grey plane (24 bits: neighbour darker than the centre), the
/// window clamped at the border.
fn census(grey: &[f32], w: usize, h: usize) -> Vec<u32> {
    let mut out = vec![0u32; w * h];
    for y in 0..h {
        for x in 0..w {
            let c = grey[x + w * y];
            let mut bits = 0u32;
            for dy in -2i64..=2 {
                for dx in -2i64..=2 {
                    if dx == 0 && dy == 0 {
                        continue;
                    }
                    let nx = (x as i64 + dx).clamp(0, w as i64 - 1) as usize;
                    let ny = (y as i64 + dy).clamp(0, h as i64 - 1) as usize;
                    bits = (bits << 1) | (grey[nx + w * ny] < c) as u32;
                }
            }
            out[x + w * y] = bits;
        }
    }
    out
}

/// The cost volume of a rectified pair for disparities `min_disparity .. min_disparity + count`
/// (label `l` is disparity `min_disparity + l`): left pixel `x` against right pixel `x − d`,
/// clamped to the image where it falls outside.
///
/// ```
/// use segcut::io::Image;
/// use segcut::stereo::{cost_volume, CostOptions, DataTerm};
/// // A ramp shifted by 2 pixels: disparity 2 matches exactly.
/// let left: Vec<f32> = (0..16).map(|x| (x * 10) as f32).collect();
/// let right: Vec<f32> = (0..16).map(|x| ((x + 2) * 10) as f32).collect();
/// let (l, r) = (Image::new([16, 1, 1], 1, left), Image::new([16, 1, 1], 1, right));
/// let opts = CostOptions { data: DataTerm::Bt, ..Default::default() };
/// let c = cost_volume(&l, &r, 0, 4, &opts).unwrap();
/// assert_eq!(c.cost(2, 8), 0);
/// assert!(c.cost(0, 8) > 0);
/// ```
pub fn cost_volume(
    left: &Image,
    right: &Image,
    min_disparity: i32,
    count: usize,
    opts: &CostOptions,
) -> Result<CostVolume> {
    check_pair(
        &View::of(left, "left view")?,
        &View::of(right, "right view")?,
        count,
        opts,
    )?;
    let l = Planes::of(left, "left view")?;
    let r = Planes::of(right, "right view")?;
    let (w, h) = (l.width, l.height);
    let nc = l.channels.len() as f32;
    let lr: Vec<_> = l.channels.iter().map(|p| bt_ranges(p, w)).collect();
    let rr: Vec<_> = r.channels.iter().map(|p| bt_ranges(p, w)).collect();
    let cen = match opts.data {
        DataTerm::BtCensus => Some((census(&l.grey, w, h), census(&r.grey, w, h))),
        DataTerm::Bt => None,
    };
    let n = w * h;
    let mut data = crate::io::try_vec(n.saturating_mul(count), 0i32, "the cost volume")?;
    use rayon::prelude::*;
    data.par_chunks_mut(n).enumerate().for_each(|(k, plane)| {
        let d = min_disparity as i64 + k as i64;
        for y in 0..h {
            for x in 0..w {
                let p = x + w * y;
                let xr = (x as i64 - d).clamp(0, w as i64 - 1) as usize;
                let q = xr + w * y;
                let mut bt = 0f32;
                for (ch, ((llo, lhi), (rlo, rhi))) in lr.iter().zip(&rr).enumerate() {
                    let (il, ir) = (l.channels[ch][p], r.channels[ch][q]);
                    let d1 = (il - rhi[q]).max(rlo[q] - il).max(0.0);
                    let d2 = (ir - lhi[p]).max(llo[p] - ir).max(0.0);
                    bt += d1.min(d2);
                }
                let mut c = (bt / nc).min(opts.truncation);
                if let Some((cl, cr)) = &cen {
                    c += opts.census_weight * (cl[p] ^ cr[q]).count_ones() as f32;
                }
                plane[p] = (c * opts.scale).round() as i32;
            }
        }
    });
    CostVolume::new(w, h, count, data)
}
