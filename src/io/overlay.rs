//! A picture of a segmentation for people who would rather look than read: the image with a
//! translucent tint over the foreground and the boundary drawn.

use super::Image;
use crate::{Error, Result};
use image::{Rgb, RgbImage};
use std::path::Path;

/// Tint of the foreground and colour of the boundary.
const TINT: [f32; 3] = [30.0, 150.0, 255.0];
const BOUNDARY: Rgb<u8> = Rgb([255, 230, 0]);
/// Share of the tint in a foreground pixel's colour.
const ALPHA: f32 = 0.45;

/// Renders `mask` over slice `z` of `image` (the middle slice for volumes when `z` is `None`).
///
/// ```
/// use segcut::io::{overlay::render, Image};
/// let image = Image::new([4, 3, 1], 1, vec![100.0; 12]);
/// let mask: Vec<bool> = (0..12).map(|i| i % 4 >= 2).collect();
/// let pic = render(&image, &mask, None).unwrap();
/// assert_eq!(pic.dimensions(), (4, 3));
/// assert_ne!(pic.get_pixel(0, 0), pic.get_pixel(3, 0)); // background untouched, foreground tinted
/// ```
pub fn render(image: &Image, mask: &[bool], z: Option<usize>) -> Result<RgbImage> {
    let [w, h, d] = image.dims;
    if mask.len() != image.num_pixels() {
        return Err(Error::Graph(format!(
            "mask has {} pixels but the image has {}",
            mask.len(),
            image.num_pixels()
        )));
    }
    let z = z.unwrap_or(d / 2);
    if z >= d {
        return Err(Error::Graph(format!(
            "slice {z} is outside a volume of depth {d}"
        )));
    }
    // Values are in the file's range: scale to 8 bits by the largest value present (≥ 255).
    let max = image.data.iter().fold(255.0f32, |m, &v| m.max(v));
    let k = 255.0 / max;
    let base = w * h * z;
    let inside = |x: usize, y: usize| mask[base + x + w * y];
    let mut out = RgbImage::new(w as u32, h as u32);
    for y in 0..h {
        for x in 0..w {
            let p = image.pixel(base + x + w * y);
            let grey = |c: usize| p[c.min(image.channels - 1)] * k;
            let rgb = [grey(0), grey(1), grey(2)];
            let fg = inside(x, y);
            // A boundary pixel is a foreground pixel with a 4-neighbour outside the foreground.
            let edge = fg
                && ((x > 0 && !inside(x - 1, y))
                    || (x + 1 < w && !inside(x + 1, y))
                    || (y > 0 && !inside(x, y - 1))
                    || (y + 1 < h && !inside(x, y + 1)));
            let px = if edge {
                BOUNDARY
            } else if fg {
                Rgb(std::array::from_fn(|c| {
                    ((1.0 - ALPHA) * rgb[c] + ALPHA * TINT[c])
                        .round()
                        .clamp(0.0, 255.0) as u8
                }))
            } else {
                Rgb(std::array::from_fn(|c| {
                    (0.8 * rgb[c]).round().clamp(0.0, 255.0) as u8
                }))
            };
            out.put_pixel(x as u32, y as u32, px);
        }
    }
    Ok(out)
}

/// Renders and saves the overlay (format by the extension: PNG, JPEG, ...), atomically.
pub fn save(path: &Path, image: &Image, mask: &[bool], z: Option<usize>) -> Result<()> {
    let bytes = encode(path, image, mask, z)?;
    super::write_atomic(path, |w| w.write_all(&bytes))
}

/// The format an overlay file's name asks for; an error names the file when there is none.
pub fn format_of(path: &Path) -> Result<image::ImageFormat> {
    image::ImageFormat::from_path(path)
        .ok()
        .filter(|f| f.writing_enabled())
        .ok_or_else(|| Error::Input {
            file: path.display().to_string(),
            msg: "unknown picture format: name the overlay .png or .jpg".into(),
        })
}

/// The bytes [`save`] writes.
pub fn encode(path: &Path, image: &Image, mask: &[bool], z: Option<usize>) -> Result<Vec<u8>> {
    let format = format_of(path)?;
    let mut out = std::io::Cursor::new(Vec::new());
    render(image, mask, z)?
        .write_to(&mut out, format)
        .map_err(|e| Error::Input {
            file: path.display().to_string(),
            msg: format!("cannot write the overlay: {e}"),
        })?;
    Ok(out.into_inner())
}
