//! Colour spaces: which one the models and the contrast term work in ([`ColorSpace`]), the sRGB
//! to CIE L*a*b* conversion of whole images ([`to_color_space`]) and of single pixels
//! ([`WorkSpace`], what the GPU builder's host side needs), shared by the CPU and GPU builders
//! (`kernels/seg_energy.cu` redoes the pixel conversion operation for operation).
//!
//! ```
//! use segcut::segment::color::{to_color_space, ColorSpace};
//! use segcut::segment::Image;
//! let white = Image::new([1, 1, 1], 3, vec![255.0; 3]);
//! let lab = to_color_space(&white, ColorSpace::Lab);
//! assert!((lab.data[0] - 100.0).abs() < 0.01); // L* of white
//! ```

use std::borrow::Cow;

use rayon::prelude::*;

use crate::io::Image;

/// Colour space the models and the contrast term work in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorSpace {
    /// The image's own values.
    AsIs,
    /// CIE L*a*b* (D65) for 3-channel images whose values are 8-bit or 16-bit sRGB (a maximum
    /// above 255 means 16-bit); other images (grey, values outside `0..=65535`) are used as they
    /// are.
    Lab,
}

/// `image` in the colour space `space` (borrowed when nothing changes: [`ColorSpace::AsIs`], or
/// Lab asked of an image that is not 3-channel 8/16-bit data).
pub fn to_color_space(image: &Image, space: ColorSpace) -> Cow<'_, Image> {
    match space {
        ColorSpace::Lab if image.channels == 3 && srgb_range(&image.data) => {
            let max = image.data.iter().fold(0.0f32, |m, &v| m.max(v));
            let full = if max > 255.0 { 65535.0 } else { 255.0 };
            let mut out = image.clone();
            out.data.par_chunks_mut(3 * 4096).for_each(|chunk| {
                for px in chunk.chunks_exact_mut(3) {
                    let lab = srgb_to_lab([px[0] / full, px[1] / full, px[2] / full]);
                    px.copy_from_slice(&lab);
                }
            });
            Cow::Owned(out)
        }
        _ => Cow::Borrowed(image),
    }
}

/// Whether `data` can be 8- or 16-bit sRGB: nothing below 0 or above 65535.
fn srgb_range(data: &[f32]) -> bool {
    data.iter().all(|&v| (0.0..=65535.0).contains(&v))
}

/// The sRGB transfer function inverted: a channel in `[0, 1]` → linear light.
pub(crate) fn srgb_linear(c: f32) -> f32 {
    let c = c.clamp(0.0, 1.0);
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// sRGB in `[0, 1]` → CIE L*a*b* (D65 white).
pub(crate) fn srgb_to_lab(rgb: [f32; 3]) -> [f32; 3] {
    let [r, g, b] = rgb.map(srgb_linear);
    let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
    let f = |t: f32| {
        if t > 0.008856 {
            t.cbrt()
        } else {
            7.787 * t + 16.0 / 116.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

/// How the pixels' working values (the colour space the models and contrasts use) are obtained
/// from the original image: the same rule as [`to_color_space`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WorkSpace {
    /// The image's own values.
    AsIs,
    /// Lab from sRGB of this full scale (255 or 65535).
    Lab(f32),
}

impl WorkSpace {
    /// The space [`to_color_space`] would use for an image of
    /// `channels` channels whose values span `[lo, hi]`.
    pub fn of(channels: usize, lo: f32, hi: f32, space: ColorSpace) -> Self {
        if space == ColorSpace::Lab && channels == 3 && lo >= 0.0 && hi <= 65535.0 {
            return WorkSpace::Lab(if hi > 255.0 { 65535.0 } else { 255.0 });
        }
        WorkSpace::AsIs
    }

    /// Pixel `i` of `image` in this space, appended to `out`.
    pub fn push_pixel(self, image: &Image, i: usize, out: &mut Vec<f32>) {
        let px = image.pixel(i);
        match self {
            WorkSpace::AsIs => out.extend_from_slice(px),
            WorkSpace::Lab(full) => {
                out.extend_from_slice(&srgb_to_lab([px[0] / full, px[1] / full, px[2] / full]))
            }
        }
    }
}
