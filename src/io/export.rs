//! Richer mask outputs: the value convention of a written mask ([`MaskFormat`]), OpenCV's
//! 4-state grabCut mask, and the mask's contours as polygons in JSON (for annotation tools).
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use segcut::io::{load_image, save_mask_as, MaskFormat, Seed, Seeds};
//! let mut seeds = Seeds::unknown([4, 1, 1]);
//! seeds.labels[0] = Seed::Foreground;
//! seeds.labels[3] = Seed::Background;
//! let path = dir.path().join("grabcut.png");
//! save_mask_as(&path, &[true, true, false, false], &seeds, MaskFormat::OpenCv, None)?;
//! // definite fg (seed), probably fg, probably bg, definite bg (seed)
//! assert_eq!(load_image(&path)?.data, vec![1.0, 3.0, 2.0, 0.0]);
//! # Ok::<(), segcut::Error>(())
//! ```

use super::{dims_text, encode_mask, encode_volume, input_err, Image, Seed, Seeds};
use crate::{Error, Result};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The values a written mask uses.
///
/// | format | PNG, TIFF, other 2D | NIfTI | why |
/// |--------|---------------------|-------|-----|
/// | `mask` (default) | 0 background, 255 foreground | 0 / 1 | image viewers show 255 as white; medical viewers read NIfTI values as label numbers, where the foreground is label 1 |
/// | `binary` | 0 / 1 | 0 / 1 | label maps for training data and scripts |
/// | `opencv` | 0 background seed, 1 foreground seed, 2 probably background, 3 probably foreground | same | `cv::grabCut`'s mask, so a session can go on in OpenCV: the hard seeds stay definite, every other pixel is "probably" what the cut said |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MaskFormat {
    /// 0/255 for images, 0/1 for NIfTI.
    #[default]
    Mask,
    /// 0/1 everywhere.
    Binary,
    /// OpenCV grabCut's four states.
    OpenCv,
}

impl MaskFormat {
    const ALL: [(MaskFormat, &'static str); 3] = [
        (MaskFormat::Mask, "mask"),
        (MaskFormat::Binary, "binary"),
        (MaskFormat::OpenCv, "opencv"),
    ];

    /// The name used by `--output-format`.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("mask", |(_, n)| n)
    }
}

impl fmt::Display for MaskFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MaskFormat {
    type Err = Error;

    /// Parses `mask`, `binary` or `opencv` (any case).
    fn from_str(s: &str) -> Result<Self> {
        let low = s.trim().to_ascii_lowercase();
        Self::ALL
            .iter()
            .find(|(_, n)| *n == low)
            .map(|(f, _)| *f)
            .ok_or_else(|| Error::Input {
                file: "output format".into(),
                msg: format!("unknown output format '{s}'; expected one of mask, binary, opencv"),
            })
    }
}

/// OpenCV's `GC_BGD`, `GC_FGD`, `GC_PR_BGD`, `GC_PR_FGD`.
const GC: [u8; 4] = [0, 1, 2, 3];

/// The value of each pixel in `format` (for [`MaskFormat::Mask`], the NIfTI convention is left to
/// [`save_mask`]).
fn values(mask: &[bool], seeds: &Seeds, format: MaskFormat) -> Vec<f32> {
    mask.iter()
        .zip(&seeds.labels)
        .map(|(&m, &s)| match format {
            MaskFormat::OpenCv => match s {
                Seed::Foreground => GC[1],
                Seed::Background => GC[0],
                _ if m => GC[3],
                _ => GC[2],
            },
            _ => m as u8,
        } as f32)
        .collect()
}

/// Writes `mask` in `format` (see [`MaskFormat`]), atomically; see [`encode_mask_as`].
pub fn save_mask_as(
    path: &Path,
    mask: &[bool],
    seeds: &Seeds,
    format: MaskFormat,
    like: Option<&Image>,
) -> Result<()> {
    let bytes = encode_mask_as(path, mask, seeds, format, like)?;
    super::write_atomic(path, |w| w.write_all(&bytes))
}

/// The bytes of `mask` in `format`; the file type comes from the extension as for
/// [`save_mask`](super::save_mask), and so does the use of `like` (the input whose spacing, and
/// NIfTI orientation with `mask`, the file takes).
pub fn encode_mask_as(
    path: &Path,
    mask: &[bool],
    seeds: &Seeds,
    format: MaskFormat,
    like: Option<&Image>,
) -> Result<Vec<u8>> {
    if mask.len() != seeds.labels.len() {
        return Err(input_err(
            path,
            format!(
                "cannot write: mask has {} values but the seeds {}",
                mask.len(),
                seeds.labels.len()
            ),
        ));
    }
    if format == MaskFormat::Mask {
        return encode_mask(path, mask, seeds.dims, like);
    }
    let img = Image {
        dims: seeds.dims,
        channels: 1,
        data: values(mask, seeds, format),
        spacing: like.map_or([1.0; 3], |l| l.spacing),
        meta: like.map(|l| l.meta.clone()).unwrap_or_default(),
    };
    encode_volume(path, &img)
}

/// One closed border of the mask, as imageproc traces it: pixel centres in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Contour {
    /// `"outer"` (a component's outline) or `"hole"` (a hole's outline, inside its parent).
    pub kind: &'static str,
    /// Index of the enclosing contour, if any.
    pub parent: Option<usize>,
    /// `[x, y]` of the border pixels, in order around the region.
    pub points: Vec<[u32; 2]>,
}

/// The borders of a 2D mask's foreground (imageproc's `find_contours`, Suzuki–Abe border
/// following): each component's outer border and each hole's border, with their nesting.
pub fn contours(mask: &[bool], dims: [usize; 3]) -> Result<Vec<Contour>> {
    let [w, h, d] = dims;
    if d > 1 || mask.len() != w * h {
        return Err(Error::Unsupported(format!(
            "contours of a {} mask: only 2D masks are traced",
            dims_text(dims)
        )));
    }
    let raw = mask.iter().map(|&m| if m { 255 } else { 0 }).collect();
    let img = image::GrayImage::from_raw(w as u32, h as u32, raw)
        .ok_or_else(|| Error::Unsupported("mask too large for a 2D image".into()))?;
    Ok(imageproc::contours::find_contours::<u32>(&img)
        .into_iter()
        .map(|c| Contour {
            kind: match c.border_type {
                imageproc::contours::BorderType::Outer => "outer",
                imageproc::contours::BorderType::Hole => "hole",
            },
            parent: c.parent,
            points: c.points.iter().map(|p| [p.x, p.y]).collect(),
        })
        .collect())
}

/// [`contours`] as JSON: `{"width": W, "height": H, "contours": [{"kind": "outer"|"hole",
/// "parent": index|null, "points": [[x, y], ...]}]}`.
pub fn encode_contours(mask: &[bool], dims: [usize; 3]) -> Result<Vec<u8>> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        width: usize,
        height: usize,
        contours: &'a [Contour],
    }
    let list = contours(mask, dims)?;
    let doc = Doc {
        width: dims[0],
        height: dims[1],
        contours: &list,
    };
    let mut out = serde_json::to_vec(&doc).map_err(|e| Error::Unsupported(e.to_string()))?;
    out.push(b'\n');
    Ok(out)
}

/// Writes [`encode_contours`] to `path`, atomically.
pub fn save_contours(path: &Path, mask: &[bool], dims: [usize; 3]) -> Result<()> {
    let bytes = encode_contours(mask, dims)?;
    super::write_atomic(path, |w| w.write_all(&bytes))
}
