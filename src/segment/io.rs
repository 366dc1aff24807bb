//! Reading images, volumes and seeds; writing masks.

use super::{Image, Seed, Seeds};
use crate::{Error, Result};
use std::path::Path;

/// Loads a 2D image that the `image` crate reads (8/16-bit, grey, RGB, RGBA; alpha dropped).
pub fn load_image(path: &Path) -> Result<Image> {
    let img = image::open(path).map_err(|e| Error::Input {
        file: path.display().to_string(),
        msg: format!("cannot read image: {e}"),
    })?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (channels, data): (usize, Vec<f32>) = if img.color().has_color() {
        let rgb = img.to_rgb32f();
        let scale = if img.color().bytes_per_pixel() / img.color().channel_count() as u8 >= 2 {
            65535.0
        } else {
            255.0
        };
        (3, rgb.into_raw().into_iter().map(|v| v * scale).collect())
    } else if img.color().bytes_per_pixel() / img.color().channel_count() as u8 >= 2 {
        let l = img.to_luma16();
        (1, l.into_raw().into_iter().map(|v| v as f32).collect())
    } else {
        let l = img.to_luma8();
        (1, l.into_raw().into_iter().map(|v| v as f32).collect())
    };
    Ok(Image {
        dims: [w, h, 1],
        channels,
        data,
        spacing: [1.0; 3],
    })
}

/// Loads seeds for an image of `dims` (placeholder: palette-index PNGs only; 0 unlabelled,
/// 1 foreground, 2 background).
pub fn load_seeds(path: &Path, dims: [usize; 3]) -> Result<Seeds> {
    let file = path.display().to_string();
    let bad = |msg: String| Error::Input {
        file: file.clone(),
        msg,
    };
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut dec = png::Decoder::new(std::io::BufReader::new(f));
    dec.set_transformations(png::Transformations::IDENTITY);
    let mut reader = dec.read_info().map_err(|e| bad(format!("cannot read PNG: {e}")))?;
    let info = reader.info();
    let (w, h) = (info.width as usize, info.height as usize);
    if info.color_type != png::ColorType::Indexed || info.bit_depth != png::BitDepth::Eight {
        return Err(bad("expected an 8-bit palette PNG".into()));
    }
    if [w, h, 1] != dims {
        return Err(bad(format!(
            "seeds are {w}x{h} but the image is {}x{}",
            dims[0], dims[1]
        )));
    }
    let mut buf = vec![0; reader.output_buffer_size().unwrap_or(w * h)];
    let frame = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(format!("cannot decode PNG: {e}")))?;
    let mut labels = Vec::with_capacity(w * h);
    for y in 0..h {
        let row = &buf[y * frame.line_size..y * frame.line_size + w];
        for (x, &v) in row.iter().enumerate() {
            labels.push(match v {
                0 => Seed::Unknown,
                1 => Seed::Foreground,
                2 => Seed::Background,
                other => {
                    return Err(bad(format!(
                        "pixel (x={x}, y={y}) has palette index {other}; expected 0, 1 or 2"
                    )))
                }
            });
        }
    }
    Ok(Seeds { dims, labels })
}
