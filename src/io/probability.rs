//! Per-pixel foreground probability maps (`segcut --unary PROB`), e.g. a neural network's output,
//! read into `[0, 1]` by an explicit rule per file type:
//!
//! | file | stored | probability |
//! |------|--------|-------------|
//! | PNG (or another `image` crate format), 8-bit grey | 0–255 | `v / 255` |
//! | PNG, 16-bit grey | 0–65535 | `v / 65535` |
//! | TIFF (float pages) or NIfTI (any type, `scl_slope` applied) | values in `[0, 1]` | as stored |
//!
//! A colour raster, a TIFF or NIfTI value outside `[0, 1]` (an integer 8-bit TIFF holding 0–255,
//! say) or a NaN is refused with an error naming the file and the pixel: guessing a scale would
//! give a silently wrong data term. The map must have the image's size.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use segcut::io::load_probability;
//! let path = dir.path().join("prob.png");
//! image::GrayImage::from_raw(2, 1, vec![0, 255]).unwrap().save(&path).unwrap();
//! assert_eq!(load_probability(&path, [2, 1, 1])?, vec![0.0, 1.0]);
//! # Ok::<(), segcut::Error>(())
//! ```

use super::{
    dims_text, input_err, nifti, pixel_text, raster, sniff, tiff_stack, Kind, LoadOptions,
};
use crate::{Error, Result};
use image::DynamicImage;
use std::path::Path;

/// Loads a probability map of `dims` (see the module docs for the rule per file type).
pub fn load_probability(path: &Path, dims: [usize; 3]) -> Result<Vec<f32>> {
    let opts = LoadOptions::default();
    let (got, values, full) = match sniff(path)? {
        Kind::Raster => {
            let img = raster::decode(path, |_, _, _| Ok(()))?;
            let dims = [img.width() as usize, img.height() as usize, 1];
            match img {
                DynamicImage::ImageLuma8(g) => (
                    dims,
                    g.into_raw().into_iter().map(f32::from).collect(),
                    255.0,
                ),
                DynamicImage::ImageLuma16(g) => (
                    dims,
                    g.into_raw().into_iter().map(f32::from).collect(),
                    65535.0,
                ),
                other => {
                    return Err(input_err(
                        path,
                        format!(
                            "a probability map must be 8- or 16-bit grey (or a float TIFF / \
                             NIfTI), got {:?}",
                            other.color()
                        ),
                    ))
                }
            }
        }
        Kind::Tiff => {
            let img = tiff_stack::load(path, &opts)?;
            one_channel(path, &img)?;
            (img.dims, img.data, 1.0)
        }
        Kind::Nifti { gz } => {
            let img = nifti::load(path, gz, &opts)?;
            one_channel(path, &img)?;
            (img.dims, img.data, 1.0)
        }
    };
    if got != dims {
        return Err(input_err(
            path,
            format!(
                "probability map is {} but the image is {}",
                dims_text(got),
                dims_text(dims)
            ),
        ));
    }
    if let Some(i) = values.iter().position(|v| !(0.0..=full).contains(v)) {
        return Err(input_err(
            path,
            format!(
                "{} has the value {}; a float TIFF or NIfTI probability map holds values in \
                 [0, 1] (8/16-bit PNG maps are scaled by 255 / 65535)",
                pixel_text(dims, i),
                values[i]
            ),
        ));
    }
    Ok(if full == 1.0 {
        values
    } else {
        values.into_iter().map(|v| v / full).collect()
    })
}

fn one_channel(path: &Path, img: &crate::io::Image) -> Result<()> {
    if img.channels != 1 {
        return Err(Error::Input {
            file: path.display().to_string(),
            msg: format!(
                "a probability map has one value per pixel, this file has {}",
                img.channels
            ),
        });
    }
    Ok(())
}
