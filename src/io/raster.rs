//! 2D images through the `image` crate.

use super::{check_memory, input_err, LoadOptions};
use crate::io::Image;
use crate::{Error, Result};
use image::{DynamicImage, ImageDecoder, ImageReader};
use rayon::prelude::*;
use std::io::Cursor;
use std::path::Path;

/// Opens `path`, asks `before(dims, channels_kept, decoded_bytes)` whether to go on (memory and
/// size checks happen there, before the pixel buffer exists), then decodes.
pub(crate) fn decode(
    path: &Path,
    before: impl FnOnce([usize; 3], usize, u64) -> Result<()>,
) -> Result<DynamicImage> {
    let bad = |e: image::ImageError| input_err(path, format!("cannot read image: {e}"));
    // The file is read once: the JPEG check and the decoder share the bytes.
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let mut reader = ImageReader::new(Cursor::new(&bytes[..]));
    // As `ImageReader::open`: the extension's format unless the content says otherwise.
    if let Ok(format) = image::ImageFormat::from_path(path) {
        reader.set_format(format);
    }
    let mut reader = reader
        .with_guessed_format()
        .map_err(|e| Error::io(path, e))?;
    // Our own estimate (in `before`) replaces the crate's fixed allocation cap.
    reader.no_limits();
    if reader.format() == Some(image::ImageFormat::Jpeg) {
        check_jpeg_complete(path, &bytes)?;
    }
    let decoder = reader.into_decoder().map_err(bad)?;
    let (w, h) = decoder.dimensions();
    let channels = if decoder.color_type().has_color() {
        3
    } else {
        1
    };
    before([w as usize, h as usize, 1], channels, decoder.total_bytes())?;
    DynamicImage::from_decoder(decoder).map_err(bad)
}

/// The JPEG decoder fills a truncated file's missing rows with grey and says nothing, which turns
/// half an image into a plausible-looking but wrong input. A complete JPEG has an end-of-image
/// marker (`FF D9`) after its last scan header (`FF DA`); entropy-coded data cannot hold either
/// (an `FF` there is stuffed with `00`), and an embedded thumbnail's markers come before the
/// main image's scans.
fn check_jpeg_complete(path: &Path, bytes: &[u8]) -> Result<()> {
    let last_scan = bytes.windows(2).rposition(|w| w == [0xFF, 0xDA]);
    let complete = last_scan.is_some_and(|s| bytes[s..].windows(2).any(|w| w == [0xFF, 0xD9]));
    if complete {
        Ok(())
    } else {
        Err(input_err(
            path,
            format!(
                "the JPEG data is truncated or damaged: no end-of-image marker after the last \
                 scan ({} bytes read)",
                bytes.len()
            ),
        ))
    }
}

/// Loads a 2D image: grey stays one channel, colour becomes RGB; values in the file's range.
pub(crate) fn load(path: &Path, opts: &LoadOptions) -> Result<Image> {
    let img = decode(path, |dims, channels, extra| {
        check_memory(path, dims, channels, extra, true, opts)
    })?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (channels, data) = to_f32(img);
    Ok(Image {
        dims: [w, h, 1],
        channels,
        data,
        spacing: [1.0; 3],
        meta: crate::io::ImageMeta {
            format: Some(crate::io::ImageFormat::Raster),
            ..Default::default()
        },
    })
}

/// Keeps the first `keep` of every `stride` samples, as `f32` (in parallel: on a 4K photo this
/// is 25 million values).
fn take<T: Copy + Into<f64> + Sync>(raw: &[T], stride: usize, keep: usize) -> Vec<f32> {
    const ROWS: usize = 1 << 14;
    let pixels = raw.len() / stride;
    let mut out = vec![0f32; pixels * keep];
    out.par_chunks_mut(ROWS * keep)
        .zip(raw.par_chunks(ROWS * stride))
        .for_each(|(o, r)| {
            for (o, px) in o.chunks_exact_mut(keep).zip(r.chunks_exact(stride)) {
                for (o, &v) in o.iter_mut().zip(px) {
                    *o = v.into() as f32;
                }
            }
        });
    out
}

/// Channels and values of a decoded image, in its own range; alpha dropped.
pub(crate) fn to_f32(img: DynamicImage) -> (usize, Vec<f32>) {
    match img {
        DynamicImage::ImageLuma8(b) => (1, take(b.as_raw(), 1, 1)),
        DynamicImage::ImageLumaA8(b) => (1, take(b.as_raw(), 2, 1)),
        DynamicImage::ImageLuma16(b) => (1, take(b.as_raw(), 1, 1)),
        DynamicImage::ImageLumaA16(b) => (1, take(b.as_raw(), 2, 1)),
        DynamicImage::ImageRgb8(b) => (3, take(b.as_raw(), 3, 3)),
        DynamicImage::ImageRgba8(b) => (3, take(b.as_raw(), 4, 3)),
        DynamicImage::ImageRgb16(b) => (3, take(b.as_raw(), 3, 3)),
        DynamicImage::ImageRgba16(b) => (3, take(b.as_raw(), 4, 3)),
        DynamicImage::ImageRgb32F(b) => (3, take(b.as_raw(), 3, 3)),
        DynamicImage::ImageRgba32F(b) => (3, take(b.as_raw(), 4, 3)),
        // Future colour types of the crate: go through 32-bit float RGB, which loses nothing.
        other => {
            let b = other.to_rgb32f();
            (3, take(b.as_raw(), 3, 3))
        }
    }
}
