//! A picture of a segmentation for people who would rather look than read: the image with a
//! translucent tint over the foreground, optionally the seeds, and the boundary drawn with
//! imageproc (the traced contours of [`super::contours`] as closed polylines).

use super::{contours, Image, Seed, Seeds};
use crate::{Error, Result};
use image::{Rgb, RgbImage};
use imageproc::drawing::draw_line_segment_mut;
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
    render_with_seeds(image, mask, None, z)
}

/// [`render`], with the seeds painted on top (foreground green, background red, the "probably"
/// kinds lighter) so a reviewer sees what the user marked next to what the cut made of it.
pub fn render_with_seeds(
    image: &Image,
    mask: &[bool],
    seeds: Option<&Seeds>,
    z: Option<usize>,
) -> Result<RgbImage> {
    let [w, h, d] = image.dims;
    if mask.len() != image.num_pixels() || seeds.is_some_and(|s| s.labels.len() != mask.len()) {
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
    let slice = &mask[base..base + w * h];
    let mut out = RgbImage::new(w as u32, h as u32);
    for (i, px) in out.pixels_mut().enumerate() {
        let p = image.pixel(base + i);
        let rgb: [f32; 3] = std::array::from_fn(|c| p[c.min(image.channels - 1)] * k);
        *px = if slice[i] {
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
    }
    if let Some(s) = seeds {
        for (i, px) in out.pixels_mut().enumerate() {
            if let Some(c) = seed_colour(s.labels[base + i]) {
                *px = c;
            }
        }
    }
    // The boundary: every traced border (outer and hole) as a closed polyline, drawn last.
    for c in contours(slice, [w, h, 1])? {
        let pts = &c.points;
        for (a, b) in pts.iter().zip(pts.iter().cycle().skip(1)) {
            let (a, b) = ((a[0] as f32, a[1] as f32), (b[0] as f32, b[1] as f32));
            draw_line_segment_mut(&mut out, a, b, BOUNDARY);
        }
    }
    Ok(out)
}

fn seed_colour(s: Seed) -> Option<Rgb<u8>> {
    match s {
        Seed::Foreground => Some(Rgb([0, 200, 0])),
        Seed::Background => Some(Rgb([220, 0, 0])),
        Seed::ProbablyForeground => Some(Rgb([150, 240, 150])),
        Seed::ProbablyBackground => Some(Rgb([250, 150, 150])),
        Seed::Unknown => None,
    }
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
    encode_with_seeds(path, image, mask, None, z)
}

/// The bytes of [`render_with_seeds`] in the format `path` asks for.
pub fn encode_with_seeds(
    path: &Path,
    image: &Image,
    mask: &[bool],
    seeds: Option<&Seeds>,
    z: Option<usize>,
) -> Result<Vec<u8>> {
    let format = format_of(path)?;
    let mut out = std::io::Cursor::new(Vec::new());
    render_with_seeds(image, mask, seeds, z)?
        .write_to(&mut out, format)
        .map_err(|e| Error::Input {
            file: path.display().to_string(),
            msg: format!("cannot write the overlay: {e}"),
        })?;
    Ok(out.into_inner())
}
