//! Writing masks and volumes, by the output file's extension.

use super::nifti::{save_nifti, NiftiOptions, NiftiType};
use super::tiff_stack::{read_meta, save_tiff};
use super::{check_image, dims_text, input_err, sniff, Kind};
use crate::io::Image;
use crate::{Error, Result};
use std::path::Path;

/// Output kinds by extension.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    Png,
    Tiff,
    Nifti,
    /// Another 2D format the `image` crate writes (BMP, PGM, ...).
    Other,
}

fn out_kind(path: &Path) -> Out {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".png") {
        Out::Png
    } else if name.ends_with(".tif") || name.ends_with(".tiff") {
        Out::Tiff
    } else if name.ends_with(".nii") || name.ends_with(".nii.gz") {
        Out::Nifti
    } else {
        Out::Other
    }
}

/// Writes a foreground mask (`true` = foreground) of `dims`, format by extension:
///
/// - `.png` (2D only): 8-bit grey, 255 foreground, 0 background;
/// - `.tif` / `.tiff`: one 8-bit page per slice, 255 / 0, with spacing;
/// - `.nii` / `.nii.gz`: uint8 0 / 1 with spacing in `pixdim`;
/// - any other extension the `image` crate writes (2D only): grey 255 / 0.
///
/// `like` is the input the mask belongs to: its spacing (TIFF or NIfTI) is copied, and, when it
/// is a NIfTI file, its orientation fields (qform, sform, units) too, so that viewers overlay the
/// mask on it. Its size must equal `dims`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use segcut::io::{load_image, save_mask};
/// let path = dir.path().join("mask.png");
/// save_mask(&path, &[true, false, false, true], [2, 2, 1], None)?;
/// assert_eq!(load_image(&path)?.data, vec![255.0, 0.0, 0.0, 255.0]);
/// # Ok::<(), segcut::Error>(())
/// ```
pub fn save_mask(path: &Path, mask: &[bool], dims: [usize; 3], like: Option<&Path>) -> Result<()> {
    let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if n != Some(mask.len()) || mask.is_empty() {
        return Err(input_err(
            path,
            format!(
                "cannot write: mask has {} values but its size is {}",
                mask.len(),
                dims_text(dims)
            ),
        ));
    }
    let kind = out_kind(path);
    let lower = path.to_string_lossy().to_ascii_lowercase();
    if lower.ends_with(".jpg") || lower.ends_with(".jpeg") {
        return Err(input_err(
            path,
            "JPEG is lossy and would blur the mask's 0/255 values; use .png, .tif or .nii",
        ));
    }
    let (mut spacing, mut unit) = ([1.0; 3], None);
    let mut nifti_like = None;
    if let Some(l) = like {
        let (ldims, lspacing) = match sniff(l)? {
            Kind::Nifti { .. } => {
                let h = super::nifti::header_of(l)?;
                nifti_like = Some(l.to_path_buf());
                (h.dims, h.spacing)
            }
            Kind::Tiff => {
                let m = read_meta(l)?;
                unit = m.unit;
                // Only the first page's header was read: the depth is not known here.
                (dims, m.spacing)
            }
            Kind::Raster => (dims, [1.0; 3]),
        };
        if ldims != dims {
            return Err(input_err(
                path,
                format!(
                    "mask is {} but {} is {}",
                    dims_text(dims),
                    l.display(),
                    dims_text(ldims)
                ),
            ));
        }
        spacing = lspacing;
    }
    let (on, off) = if kind == Out::Nifti {
        (1.0, 0.0)
    } else {
        (255.0, 0.0)
    };
    let img = Image {
        dims,
        channels: 1,
        data: mask.iter().map(|&m| if m { on } else { off }).collect(),
        spacing,
    };
    match kind {
        Out::Nifti => save_nifti(
            path,
            &img,
            &NiftiOptions {
                datatype: NiftiType::U8,
                like: nifti_like,
                ..NiftiOptions::default()
            },
        ),
        Out::Tiff => save_tiff(path, &img, unit.as_deref()),
        Out::Png | Out::Other => save_2d(path, &img),
    }
}

/// Writes any [`Image`] by extension: TIFF (8/16-bit or float, chosen by the values), NIfTI
/// (float32, or uint8 / int16 / uint16 when every value is an integer that fits), or for 2D
/// images any format of the `image` crate (values must be integers in 0–255, or 0–65535 for PNG
/// and TIFF grey).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use segcut::io::{load_image, save_volume, Image};
/// let vol = Image { dims: [3, 2, 2], channels: 1, data: (0..12).map(|v| v as f32).collect(),
///                   spacing: [0.5, 0.5, 2.0] };
/// let path = dir.path().join("vol.nii.gz");
/// save_volume(&path, &vol)?;
/// assert_eq!(load_image(&path)?, vol);
/// # Ok::<(), segcut::Error>(())
/// ```
pub fn save_volume(path: &Path, img: &Image) -> Result<()> {
    check_image(path, img)?;
    match out_kind(path) {
        Out::Tiff => save_tiff(path, img, None),
        Out::Nifti => {
            let fits = |lo: f32, hi: f32| {
                img.data
                    .iter()
                    .all(|&v| v.fract() == 0.0 && (lo..=hi).contains(&v))
            };
            let datatype = if img.channels == 3 {
                NiftiType::Rgb24
            } else if fits(0.0, 255.0) {
                NiftiType::U8
            } else if fits(-32768.0, 32767.0) {
                NiftiType::I16
            } else if fits(0.0, 65535.0) {
                NiftiType::U16
            } else {
                NiftiType::F32
            };
            let opts = NiftiOptions {
                datatype,
                ..NiftiOptions::default()
            };
            save_nifti(path, img, &opts)
        }
        Out::Png | Out::Other => save_2d(path, img),
    }
}

/// A 2D image through the `image` crate: 8-bit when the values allow, else 16-bit.
fn save_2d(path: &Path, img: &Image) -> Result<()> {
    if img.dims[2] > 1 {
        return Err(input_err(
            path,
            format!(
                "cannot write a {} volume as a 2D image; use .tif or .nii(.gz)",
                dims_text(img.dims)
            ),
        ));
    }
    let (w, h) = match (u32::try_from(img.dims[0]), u32::try_from(img.dims[1])) {
        (Ok(w), Ok(h)) => (w, h),
        _ => return Err(input_err(path, "image too large")),
    };
    let within = |hi: f32| {
        img.data
            .iter()
            .position(|&v| !(v.fract() == 0.0 && (0.0..=hi).contains(&v)))
    };
    let dynimg = match (img.channels, within(255.0), within(65535.0)) {
        (1, None, _) => {
            image::GrayImage::from_raw(w, h, img.data.iter().map(|&v| v as u8).collect())
                .map(image::DynamicImage::ImageLuma8)
        }
        (3, None, _) => {
            image::RgbImage::from_raw(w, h, img.data.iter().map(|&v| v as u8).collect())
                .map(image::DynamicImage::ImageRgb8)
        }
        (1, Some(_), None) => image::ImageBuffer::from_raw(
            w,
            h,
            img.data.iter().map(|&v| v as u16).collect::<Vec<u16>>(),
        )
        .map(image::DynamicImage::ImageLuma16),
        (3, Some(_), None) => image::ImageBuffer::from_raw(
            w,
            h,
            img.data.iter().map(|&v| v as u16).collect::<Vec<u16>>(),
        )
        .map(image::DynamicImage::ImageRgb16),
        (1 | 3, Some(_), Some(i)) => {
            return Err(input_err(
                path,
                format!(
                    "pixel {} has value {}, which an 8/16-bit image cannot hold; use .tif or .nii",
                    super::pixel_text(img.dims, i / img.channels),
                    img.data[i]
                ),
            ))
        }
        (c, ..) => {
            return Err(input_err(
                path,
                format!("cannot write {c} channels (1 or 3)"),
            ))
        }
    };
    let dynimg = dynimg.ok_or_else(|| input_err(path, "buffer does not match the image size"))?;
    dynimg.save(path).map_err(|e| match e {
        image::ImageError::IoError(io) => Error::io(path, io),
        other => input_err(path, format!("cannot write image: {other}")),
    })
}
