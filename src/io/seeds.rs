//! User seeds: scribble files in their common conventions, and GrabCut rectangles.

use super::{dims_text, input_err, pixel_text, raster, sniff, Kind, LoadOptions};
use crate::io::{Seed, Seeds};
use crate::{Error, Result};
use rayon::prelude::*;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Default foreground scribble colour for [`SeedFormat::Rgb`]: pure red.
pub const DEFAULT_FG_COLOR: [u8; 3] = [255, 0, 0];
/// Default background scribble colour for [`SeedFormat::Rgb`]: pure blue.
pub const DEFAULT_BG_COLOR: [u8; 3] = [0, 0, 255];

/// How a seed file encodes its labels.
///
/// | format | values | source |
/// |--------|--------|--------|
/// | `palette` | palette PNG **index** 0 unlabelled, 1 foreground, 2 background (colours ignored) | MedPy, imcut, GrabCut/BSDS scribbles |
/// | `labels` | grey value (or index) 0 unlabelled, 1 foreground, 2 background; also volumes | same convention, grey images / TIFF / NIfTI |
/// | `trimap` | grey 0 or 64 background, 128 unknown, 255 foreground | GrabCut lasso trimaps |
/// | `opencv` | 0 background, 1 foreground, 2 probably background, 3 probably foreground | `cv::grabCut` masks |
/// | `rgb` | pixels of exactly `fg_color` / `bg_color`, all else unknown; alpha 0 = unknown | coloured scribbles |
///
/// Values are taken as stored: a 16-bit or float file is not rescaled to 0–255 first, so a
/// 16-bit trimap must still use the values 0/64/128/255.
///
/// "Probably" values become the soft seeds [`Seed::ProbablyBackground`] /
/// [`Seed::ProbablyForeground`].
///
/// [`SeedFormat::Auto`] decides as follows, and refuses every file that reads two plausible
/// ways, naming both readings (the caller then names the format):
/// 1. a palette PNG → `palette` (an index above 2 is an error that suggests `rgb`); refused when
///    index 1 is drawn in the background scribble colour or index 2 in the foreground one (as
///    coloured scribbles the strokes would mean the opposite);
/// 2. a colour image with any pixel whose R, G, B differ → `rgb`;
/// 3. otherwise (grey, or colour with R = G = B everywhere) the set of values present decides:
///    every convention among `labels`, `opencv`, `trimap` that gives all of them a meaning is a
///    candidate; if the candidates agree on what every present value means, that meaning is used
///    (e.g. {0, 128, 255} → trimap; {0, 1, 2, 3} → opencv), if they disagree (e.g. {0, 1, 2}:
///    0 is unlabelled for `labels` but background for `opencv`) the error names the candidates
///    and asks for the format; if none fits, the error names, for each convention, the
///    first pixel and value it cannot read;
/// 4. a trimap without its unknown value 128 is refused: every pixel would be a hard seed, and
///    such a file (white strokes, perhaps 64-grey ones, on black) is far more likely strokes on
///    an unmarked background, which the trimap reading turns into hard background everywhere;
/// 5. scribble colours that are grey (R = G = B: chosen by the caller, the defaults are not)
///    make `rgb` a reading of grey files too; where it and a grey convention give a present
///    value different meanings the file is refused, where they agree it is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeedFormat {
    /// Decide from the file (see the type's doc).
    #[default]
    Auto,
    /// Palette PNG indices 0/1/2.
    Palette,
    /// Grey 0/64 background, 128 unknown, 255 foreground.
    Trimap,
    /// OpenCV grabCut mask values 0–3.
    OpenCv,
    /// Coloured scribbles matched against `fg_color` / `bg_color`.
    Rgb,
    /// Grey or volume labels 0/1/2.
    Labels,
}

impl SeedFormat {
    const ALL: [(SeedFormat, &'static str); 6] = [
        (SeedFormat::Auto, "auto"),
        (SeedFormat::Palette, "palette"),
        (SeedFormat::Trimap, "trimap"),
        (SeedFormat::OpenCv, "opencv"),
        (SeedFormat::Rgb, "rgb"),
        (SeedFormat::Labels, "labels"),
    ];

    /// The name used by `--seed-format`.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("auto", |(_, n)| n)
    }
}

impl fmt::Display for SeedFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SeedFormat {
    type Err = Error;

    /// Parses `auto`, `palette`, `trimap`, `opencv`, `rgb` or `labels` (any case).
    fn from_str(s: &str) -> Result<Self> {
        let low = s.trim().to_ascii_lowercase();
        Self::ALL
            .iter()
            .find(|(_, n)| *n == low)
            .map(|(f, _)| *f)
            .ok_or_else(|| Error::Input {
                file: "seed format".into(),
                msg: format!(
                    "unknown seed format '{s}'; expected one of auto, palette, trimap, opencv, \
                     rgb, labels"
                ),
            })
    }
}

/// Options for [`load_seeds`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedOptions {
    /// The file's convention; [`SeedFormat::Auto`] detects it.
    pub format: SeedFormat,
    /// Foreground colour of RGB scribbles (default [`DEFAULT_FG_COLOR`], red).
    pub fg_color: [u8; 3],
    /// Background colour of RGB scribbles (default [`DEFAULT_BG_COLOR`], blue).
    pub bg_color: [u8; 3],
    /// The image the seeds belong to, named in size-mismatch errors.
    pub image_file: Option<PathBuf>,
}

impl Default for SeedOptions {
    fn default() -> Self {
        SeedOptions {
            format: SeedFormat::Auto,
            fg_color: DEFAULT_FG_COLOR,
            bg_color: DEFAULT_BG_COLOR,
            image_file: None,
        }
    }
}

/// A seed file's pixels before any convention is applied.
enum Raw {
    /// Palette PNG: indices and the palette's colours.
    Indexed { idx: Vec<u8>, palette: Vec<[u8; 3]> },
    /// Grey values (images, volumes).
    Grey(Vec<f32>),
    /// Colour pixels with alpha (255 where the file has none).
    Rgba(Vec<[u8; 4]>),
}

/// The three grey-value conventions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grey {
    Labels,
    OpenCv,
    Trimap,
}

impl Grey {
    const ALL: [Grey; 3] = [Grey::Labels, Grey::OpenCv, Grey::Trimap];

    fn map(self, v: f32) -> Option<Seed> {
        if v.fract() != 0.0 {
            return None;
        }
        match (self, v as i64) {
            (Grey::Labels, 0) => Some(Seed::Unknown),
            (Grey::Labels, 1) => Some(Seed::Foreground),
            (Grey::Labels, 2) => Some(Seed::Background),
            (Grey::OpenCv, 0) => Some(Seed::Background),
            (Grey::OpenCv, 1) => Some(Seed::Foreground),
            (Grey::OpenCv, 2) => Some(Seed::ProbablyBackground),
            (Grey::OpenCv, 3) => Some(Seed::ProbablyForeground),
            (Grey::Trimap, 0 | 64) => Some(Seed::Background),
            (Grey::Trimap, 128) => Some(Seed::Unknown),
            (Grey::Trimap, 255) => Some(Seed::Foreground),
            _ => None,
        }
    }

    fn format(self) -> SeedFormat {
        match self {
            Grey::Labels => SeedFormat::Labels,
            Grey::OpenCv => SeedFormat::OpenCv,
            Grey::Trimap => SeedFormat::Trimap,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Grey::Labels => "labels (0 unlabelled, 1 foreground, 2 background)",
            Grey::OpenCv => {
                "opencv (0 background, 1 foreground, 2 probably background, 3 probably foreground)"
            }
            Grey::Trimap => "trimap (0 or 64 background, 128 unknown, 255 foreground)",
        }
    }
}

/// Loads seeds for an image of `dims` from a PNG (palette, grey, RGB(A)), any other 2D format,
/// a TIFF stack or a NIfTI volume, in the convention `opts.format` names (see [`SeedFormat`] for
/// the conventions and the auto-detection rules).
///
/// Errors name the seed file; a size mismatch names both sizes (and the image file when
/// `opts.image_file` is set); a value outside the convention names the pixel `(x, y[, z])` and
/// the value.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use segcut::io::{load_seeds, Seed, SeedOptions};
/// // A 3×1 OpenCV grabCut mask: background, foreground, probably foreground.
/// let path = dir.path().join("mask.png");
/// image::GrayImage::from_raw(3, 1, vec![0, 1, 3]).unwrap().save(&path).unwrap();
/// let seeds = load_seeds(&path, [3, 1, 1], &SeedOptions::default())?;
/// assert_eq!(seeds.labels, [Seed::Background, Seed::Foreground, Seed::ProbablyForeground]);
/// # Ok::<(), segcut::Error>(())
/// ```
pub fn load_seeds(path: &Path, dims: [usize; 3], opts: &SeedOptions) -> Result<Seeds> {
    refuse_lossy(path)?;
    let raw = read_raw(path, dims, opts)?;
    let labels =
        match (opts.format, raw) {
            (SeedFormat::Auto, Raw::Indexed { idx, palette }) => {
                // An index above 2 is its own error (which suggests rgb) first.
                let labels = palette_labels(path, dims, &idx)?;
                palette_or_colours(path, &idx, &palette, opts)?;
                labels
            }
            (SeedFormat::Palette, Raw::Indexed { idx, .. }) => palette_labels(path, dims, &idx)?,
            (SeedFormat::Palette, _) => return Err(input_err(
                path,
                "the palette seed format needs a palette (indexed) PNG, and this file is not one; \
                 try the seed formats auto, labels, trimap, opencv or rgb",
            )),
            (SeedFormat::Auto, Raw::Rgba(px)) => match grey_of(&px) {
                Some(values) => auto_grey(path, dims, &values, opts)?,
                None => rgb_labels(path, dims, &px, opts)?,
            },
            (SeedFormat::Auto, Raw::Grey(values)) => auto_grey(path, dims, &values, opts)?,
            (SeedFormat::Rgb, raw) => {
                let px = colours(path, dims, raw)?;
                rgb_labels(path, dims, &px, opts)?
            }
            (SeedFormat::Labels | SeedFormat::OpenCv | SeedFormat::Trimap, raw) => {
                let conv = match opts.format {
                    SeedFormat::Labels => Grey::Labels,
                    SeedFormat::OpenCv => Grey::OpenCv,
                    _ => Grey::Trimap,
                };
                let values = match raw {
                    Raw::Indexed { idx, .. } => idx.iter().map(|&i| i as f32).collect(),
                    Raw::Grey(v) => v,
                    Raw::Rgba(px) => grey_of(&px).ok_or_else(|| {
                        let i = px.iter().position(|p| !is_grey(p)).unwrap_or(0);
                        let p = px[i];
                        input_err(
                            path,
                            format!(
                                "the {} seed format needs grey values, but pixel {} is the colour \
                             ({}, {}, {}); coloured scribbles are the rgb seed format",
                                conv.format(),
                                pixel_text(dims, i),
                                p[0],
                                p[1],
                                p[2]
                            ),
                        )
                    })?,
                };
                grey_labels(path, dims, &values, conv)?
            }
        };
    Ok(Seeds { dims, labels })
}

fn is_grey(p: &[u8; 4]) -> bool {
    p[0] == p[1] && p[1] == p[2] && p[3] == 255
}

/// The grey values of a colour image whose pixels all have R = G = B (and are opaque).
fn grey_of(px: &[[u8; 4]]) -> Option<Vec<f32>> {
    px.iter()
        .all(is_grey)
        .then(|| px.iter().map(|p| p[0] as f32).collect())
}

fn mismatch(path: &Path, dims: [usize; 3], got: [usize; 3], opts: &SeedOptions) -> Error {
    let image = match &opts.image_file {
        Some(p) => format!("the image {}", p.display()),
        None => "the image".to_string(),
    };
    input_err(
        path,
        format!(
            "seeds are {} but {image} is {}; seed files must have the image's size",
            dims_text(got),
            dims_text(dims)
        ),
    )
}

/// Seeds must hold exact values: JPEG compression shifts labels and colours around every stroke,
/// so a JPEG seed file would be read wrong in ways no check can see. Refused by its bytes.
fn refuse_lossy(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut head = [0u8; 3];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| Error::io(path, e))?;
    if n == 3 && head == [0xFF, 0xD8, 0xFF] {
        return Err(input_err(
            path,
            "this seed file is a JPEG, which is lossy: compression changes the label values and \
             scribble colours near every stroke. Save seeds in a lossless format (PNG, TIFF, \
             NIfTI)",
        ));
    }
    Ok(())
}

/// Reads the seed file's pixels, checking its size against `dims` as early as the format allows.
fn read_raw(path: &Path, dims: [usize; 3], opts: &SeedOptions) -> Result<Raw> {
    // Volumes (or TIFF images): the image loaders, then the grey or RGB values.
    let volume = match sniff(path)? {
        Kind::Tiff => Some(super::tiff_stack::load(path, &LoadOptions::default())?),
        Kind::Nifti { gz } => Some(super::nifti::load(path, gz, &LoadOptions::default())?),
        Kind::Raster => None,
    };
    if let Some(img) = volume {
        if img.dims != dims {
            return Err(mismatch(path, dims, img.dims, opts));
        }
        if img.channels == 1 {
            return Ok(Raw::Grey(img.data));
        }
        let mut px = Vec::with_capacity(img.num_pixels());
        for (i, c) in img.data.chunks_exact(img.channels).enumerate() {
            let mut p = [0u8, 0, 0, 255];
            for (k, &v) in c.iter().take(3).enumerate() {
                if !(v.fract() == 0.0 && (0.0..=255.0).contains(&v)) {
                    return Err(input_err(
                        path,
                        format!(
                            "pixel {} has colour value {v}; colour seeds must be 8-bit",
                            pixel_text(dims, i)
                        ),
                    ));
                }
                p[k] = v as u8;
            }
            px.push(p);
        }
        return Ok(Raw::Rgba(px));
    }
    if let Some(raw) = read_indexed_png(path, dims, opts)? {
        return Ok(raw);
    }
    let img = raster::decode(path, |got, _, _| {
        if got != dims {
            Err(mismatch(path, dims, got, opts))
        } else {
            Ok(())
        }
    })?;
    use image::DynamicImage as D;
    Ok(match img {
        D::ImageLuma8(_) | D::ImageLumaA8(_) | D::ImageLuma16(_) | D::ImageLumaA16(_) => {
            Raw::Grey(raster::to_f32(img).1)
        }
        other => Raw::Rgba(other.to_rgba8().pixels().map(|p| p.0).collect()),
    })
}

/// A palette PNG's indices (any bit depth) and palette; `None` for other files.
fn read_indexed_png(path: &Path, dims: [usize; 3], opts: &SeedOptions) -> Result<Option<Raw>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut dec = png::Decoder::new(std::io::BufReader::new(f));
    dec.set_transformations(png::Transformations::IDENTITY);
    let Ok(mut reader) = dec.read_info() else {
        // Not a PNG (or a broken one): the image crate reports it.
        return Ok(None);
    };
    let info = reader.info();
    if info.color_type != png::ColorType::Indexed {
        return Ok(None);
    }
    let got = [info.width as usize, info.height as usize, 1];
    if got != dims {
        return Err(mismatch(path, dims, got, opts));
    }
    let palette: Vec<[u8; 3]> = info
        .palette
        .as_ref()
        .map(|p| p.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
        .unwrap_or_default();
    let bits = info.bit_depth as usize;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| input_err(path, "PNG too large"))?;
    let mut buf = vec![0; size];
    let frame = reader
        .next_frame(&mut buf)
        .map_err(|e| input_err(path, format!("cannot decode PNG: {e}")))?;
    let (w, h) = (got[0], got[1]);
    let mut idx = vec![0u8; w * h];
    // Rows on every core: a 4K seed file unpacked pixel by pixel took longer than its inflate.
    let rows = buf.par_chunks(frame.line_size).take(h);
    idx.par_chunks_mut(w)
        .zip(rows)
        .for_each(|(out, row)| match bits {
            1 => unpack_row::<1>(row, out),
            2 => unpack_row::<2>(row, out),
            4 => unpack_row::<4>(row, out),
            _ => out.copy_from_slice(&row[..w]),
        });
    Ok(Some(Raw::Indexed { idx, palette }))
}

/// The indices of one row of a `BITS`-bit palette PNG (1, 2 or 4), packed from each byte's most
/// significant bits down, into `out` (the row's width).
fn unpack_row<const BITS: usize>(row: &[u8], out: &mut [u8]) {
    let per_byte = 8 / BITS;
    let mask = ((1u16 << BITS) - 1) as u8;
    for (pixels, &byte) in out.chunks_mut(per_byte).zip(row) {
        for (k, p) in pixels.iter_mut().enumerate() {
            *p = (byte >> (8 - BITS * (k + 1))) & mask;
        }
    }
}

fn palette_labels(path: &Path, dims: [usize; 3], idx: &[u8]) -> Result<Vec<Seed>> {
    // The common case in one branch-free pass; the error path below names the first bad pixel.
    if idx.par_iter().all(|&v| v <= 2) {
        const BY_INDEX: [Seed; 3] = [Seed::Unknown, Seed::Foreground, Seed::Background];
        return Ok(idx.par_iter().map(|&v| BY_INDEX[v as usize]).collect());
    }
    idx.iter()
        .enumerate()
        .map(|(i, &v)| match v {
            0 => Ok(Seed::Unknown),
            1 => Ok(Seed::Foreground),
            2 => Ok(Seed::Background),
            other => Err(input_err(
                path,
                format!(
                    "pixel {} has palette index {other}; palette seeds use index 0 (unlabelled), \
                     1 (foreground) and 2 (background). If the scribbles are meant by colour, \
                     read them as the rgb seed format (with their two colours)",
                    pixel_text(dims, i)
                ),
            )),
        })
        .collect()
}

fn grey_labels(path: &Path, dims: [usize; 3], values: &[f32], conv: Grey) -> Result<Vec<Seed>> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            conv.map(v).ok_or_else(|| {
                input_err(
                    path,
                    format!(
                        "pixel {} has value {v}, which the {} seed format does not use: {}",
                        pixel_text(dims, i),
                        conv.format(),
                        conv.describe()
                    ),
                )
            })
        })
        .collect()
}

/// Seeds from values handed over in memory (a Python array) in one of the grey conventions:
/// [`SeedFormat::Labels`], [`SeedFormat::OpenCv`] (2 is *probably* background, 3 probably
/// foreground) or [`SeedFormat::Trimap`]. `what` names the values in errors. The other formats
/// describe files (palettes, colours, auto-detection) and are refused.
///
/// ```
/// use segcut::io::{seeds_from_values, Seed, SeedFormat};
/// let s = seeds_from_values([4, 1, 1], &[0.0, 1.0, 2.0, 3.0], SeedFormat::OpenCv, "seeds").unwrap();
/// assert_eq!(s.labels, [Seed::Background, Seed::Foreground, Seed::ProbablyBackground, Seed::ProbablyForeground]);
/// ```
pub fn seeds_from_values(
    dims: [usize; 3],
    values: &[f32],
    format: SeedFormat,
    what: &str,
) -> Result<Seeds> {
    let conv = match format {
        SeedFormat::Labels => Grey::Labels,
        SeedFormat::OpenCv => Grey::OpenCv,
        SeedFormat::Trimap => Grey::Trimap,
        f => {
            return Err(Error::Input {
                file: what.into(),
                msg: format!(
                    "seed format {} describes files; values in memory are labels, opencv or \
                     trimap",
                    f.name()
                ),
            })
        }
    };
    if values.len() != dims.iter().product::<usize>() {
        return Err(Error::Input {
            file: what.into(),
            msg: format!("{} values for {dims:?}", values.len()),
        });
    }
    Ok(Seeds {
        dims,
        labels: grey_labels(Path::new(what), dims, values, conv)?,
    })
}

/// A palette PNG whose stroke colours say the opposite of its indices reads two ways: index 1
/// is foreground as a palette, but drawn in the background scribble colour (or index 2 in the
/// foreground colour) it is background as coloured scribbles. Auto-detection refuses it.
fn palette_or_colours(
    path: &Path,
    idx: &[u8],
    palette: &[[u8; 3]],
    opts: &SeedOptions,
) -> Result<()> {
    let used = |k: u8| idx.contains(&k);
    let colour = |k: usize| palette.get(k).copied();
    let crossed = (colour(1) == Some(opts.bg_color) && used(1))
        || (colour(2) == Some(opts.fg_color) && used(2));
    if !crossed {
        return Ok(());
    }
    let c = |k: usize| {
        colour(k).map_or("none".to_string(), |c| {
            format!("({}, {}, {})", c[0], c[1], c[2])
        })
    };
    Err(input_err(
        path,
        format!(
            "ambiguous seeds: this palette PNG reads two ways. As the palette seed format, index 1 \
             {} is foreground and index 2 {} background; as the rgb seed format (coloured \
             scribbles, foreground ({}, {}, {}), background ({}, {}, {})) the same strokes mean \
             the opposite. Name the seed format",
            c(1),
            c(2),
            opts.fg_color[0],
            opts.fg_color[1],
            opts.fg_color[2],
            opts.bg_color[0],
            opts.bg_color[1],
            opts.bg_color[2]
        ),
    ))
}

/// The rgb seed format's reading of grey value `v` when both scribble colours are grey (R = G =
/// B: never the defaults, so the user chose them): the colours are seeds, every other 8-bit
/// value unmarked. `None` where the colours are not grey or `v` is no 8-bit value.
fn grey_scribble(v: f32, opts: &SeedOptions) -> Option<Seed> {
    let grey = |c: [u8; 3]| (c[0] == c[1] && c[1] == c[2]).then_some(c[0] as f32);
    let (fg, bg) = (grey(opts.fg_color)?, grey(opts.bg_color)?);
    if v.fract() != 0.0 || !(0.0..=255.0).contains(&v) {
        return None;
    }
    Some(if v == fg {
        Seed::Foreground
    } else if v == bg {
        Seed::Background
    } else {
        Seed::Unknown
    })
}

/// Auto-detection among the grey conventions; see [`SeedFormat`].
fn auto_grey(
    path: &Path,
    dims: [usize; 3],
    values: &[f32],
    opts: &SeedOptions,
) -> Result<Vec<Seed>> {
    // Distinct values: at most 5 can fit any convention, so stop collecting after 6.
    let mut present: Vec<f32> = Vec::new();
    for &v in values {
        if !present.contains(&v) {
            present.push(v);
            if present.len() > 5 {
                break;
            }
        }
    }
    present.sort_by(f32::total_cmp);
    let fits: Vec<Grey> = Grey::ALL
        .into_iter()
        .filter(|c| present.iter().all(|&v| c.map(v).is_some()))
        .collect();
    // Grey scribble colours the user chose make the rgb format a reading too.
    let scribbles = present.iter().all(|&v| grey_scribble(v, opts).is_some())
        && present
            .iter()
            .any(|&v| grey_scribble(v, opts) != Some(Seed::Unknown));
    if scribbles {
        let differs = fits
            .iter()
            .find(|c| present.iter().any(|&v| c.map(v) != grey_scribble(v, opts)));
        if let Some(c) = differs {
            let shown: Vec<String> = present.iter().map(|v| v.to_string()).collect();
            return Err(input_err(
                path,
                format!(
                    "ambiguous seeds: the values {{{}}} read two ways, as {} and as the rgb seed \
                     format with the grey scribble colours {} (foreground) and {} \
                     (background), everything else unmarked; name the seed format: {} or rgb",
                    shown.join(", "),
                    c.describe(),
                    opts.fg_color[0],
                    opts.bg_color[0],
                    c.format()
                ),
            ));
        }
        return values
            .iter()
            .map(|&v| grey_scribble(v, opts).ok_or_else(|| input_err(path, "not 8-bit")))
            .collect();
    }
    let Some(&first) = fits.first() else {
        let why: Vec<String> = Grey::ALL
            .iter()
            .map(|c| {
                let i = values.iter().position(|&v| c.map(v).is_none()).unwrap_or(0);
                format!(
                    "{}: pixel {} has {}",
                    c.format(),
                    pixel_text(dims, i),
                    values[i]
                )
            })
            .collect();
        return Err(input_err(
            path,
            format!(
                "the seed values fit no convention ({}); seed files use labels 0/1/2, OpenCV \
                 0–3, trimap 0/64/128/255, palette indices or coloured scribbles \
                 (the rgb seed format)",
                why.join("; ")
            ),
        ));
    };
    let agree = fits
        .iter()
        .all(|c| present.iter().all(|&v| c.map(v) == first.map(v)));
    // A trimap without its unknown value 128 makes every pixel a hard seed, leaving nothing to
    // segment: far more likely the file is strokes (255, perhaps 64) drawn on an unmarked black
    // background, which a trimap reading would turn into a hard background everywhere.
    if agree && first == Grey::Trimap && !present.contains(&128.0) {
        let shown: Vec<String> = present.iter().map(|v| v.to_string()).collect();
        return Err(input_err(
            path,
            format!(
                "ambiguous seeds: the values {{{}}} read two ways. As a {} every pixel is a hard \
                 seed (the unknown value 128 is absent) and nothing is left to segment; as \
                 strokes on an unmarked background (the rgb seed format with the scribble \
                 colours (255, 255, 255) and, if the background strokes are 64, (64, 64, 64)) \
                 the value 0 is unmarked. Name the seed format: trimap or rgb",
                shown.join(", "),
                Grey::Trimap.describe(),
            ),
        ));
    }
    if !agree {
        let shown: Vec<String> = present.iter().map(|v| v.to_string()).collect();
        let cands: Vec<&str> = fits.iter().map(|c| c.describe()).collect();
        let flags: Vec<String> = fits.iter().map(|c| c.format().to_string()).collect();
        return Err(input_err(
            path,
            format!(
                "ambiguous seeds: the values {{{}}} fit {} with different meanings; name the seed \
                 format: {}",
                shown.join(", "),
                cands.join(" and "),
                flags.join(" or ")
            ),
        ));
    }
    grey_labels(path, dims, values, first)
}

/// Colours of every pixel (palette entries, grey as R = G = B) for [`SeedFormat::Rgb`].
fn colours(path: &Path, dims: [usize; 3], raw: Raw) -> Result<Vec<[u8; 4]>> {
    match raw {
        Raw::Rgba(px) => Ok(px),
        Raw::Indexed { idx, palette } => idx
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                palette
                    .get(k as usize)
                    .map(|c| [c[0], c[1], c[2], 255])
                    .ok_or_else(|| {
                        input_err(
                            path,
                            format!(
                                "pixel {} has palette index {k} but the palette has {} colours",
                                pixel_text(dims, i),
                                palette.len()
                            ),
                        )
                    })
            })
            .collect(),
        Raw::Grey(values) => values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if v.fract() == 0.0 && (0.0..=255.0).contains(&v) {
                    Ok([v as u8, v as u8, v as u8, 255])
                } else {
                    Err(input_err(
                        path,
                        format!(
                            "pixel {} has grey value {v}; colour scribbles must be 8-bit",
                            pixel_text(dims, i)
                        ),
                    ))
                }
            })
            .collect(),
    }
}

fn rgb_labels(
    path: &Path,
    dims: [usize; 3],
    px: &[[u8; 4]],
    opts: &SeedOptions,
) -> Result<Vec<Seed>> {
    let (fg, bg) = (opts.fg_color, opts.bg_color);
    if fg == bg {
        return Err(input_err(
            path,
            format!("foreground and background scribble colours are both {fg:?}"),
        ));
    }
    let labels: Vec<Seed> = px
        .iter()
        .map(|p| {
            let c = [p[0], p[1], p[2]];
            match (p[3], c) {
                (0, _) => Seed::Unknown,
                (_, c) if c == fg => Seed::Foreground,
                (_, c) if c == bg => Seed::Background,
                _ => Seed::Unknown,
            }
        })
        .collect();
    if labels.iter().all(|&l| l == Seed::Unknown) {
        // Most likely other colours were used: show the most common ones that are not grey.
        let mut counts: std::collections::HashMap<[u8; 3], usize> = Default::default();
        for p in px
            .iter()
            .filter(|p| p[3] != 0 && !(p[0] == p[1] && p[1] == p[2]))
        {
            *counts.entry([p[0], p[1], p[2]]).or_default() += 1;
        }
        let mut common: Vec<_> = counts.into_iter().collect();
        common.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let shown: Vec<String> = common
            .iter()
            .take(4)
            .map(|(c, n)| format!("({}, {}, {}) ×{n}", c[0], c[1], c[2]))
            .collect();
        let seen = if shown.is_empty() {
            "it has only grey pixels".to_string()
        } else {
            format!("its most common colours are {}", shown.join(", "))
        };
        return Err(input_err(
            path,
            format!(
                "no {} pixel has the foreground colour ({}, {}, {}) or the background colour \
                 ({}, {}, {}); {seen}; name the scribble colours",
                dims_text(dims),
                fg[0],
                fg[1],
                fg[2],
                bg[0],
                bg[1],
                bg[2]
            ),
        ));
    }
    Ok(labels)
}

/// A GrabCut rectangle: `x, y` top-left corner, `w × h` pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Width in pixels.
    pub w: usize,
    /// Height in pixels.
    pub h: usize,
}

impl FromStr for Rect {
    type Err = Error;

    /// Parses `"x,y,w,h"` (non-negative integers; spaces allowed).
    ///
    /// ```
    /// use segcut::io::Rect;
    /// let r: Rect = "10, 20,30,40".parse()?;
    /// assert_eq!(r, Rect { x: 10, y: 20, w: 30, h: 40 });
    /// assert!("10,20,30".parse::<Rect>().is_err());
    /// # Ok::<(), segcut::Error>(())
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        let bad = |msg: String| Error::Input {
            file: "rectangle".into(),
            msg,
        };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() != 4 {
            return Err(bad(format!(
                "'{s}' has {} fields; expected x,y,w,h (e.g. 10,20,200,150)",
                parts.len()
            )));
        }
        let mut v = [0usize; 4];
        for (k, (p, name)) in parts.iter().zip(["x", "y", "w", "h"]).enumerate() {
            v[k] = p.parse().map_err(|_| {
                bad(format!(
                    "{name} = '{p}' in '{s}' is not a non-negative integer"
                ))
            })?;
        }
        Ok(Rect {
            x: v[0],
            y: v[1],
            w: v[2],
            h: v[3],
        })
    }
}

impl fmt::Display for Rect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{},{}", self.x, self.y, self.w, self.h)
    }
}

/// GrabCut seeds from a rectangle: outside hard [`Seed::Background`], inside
/// [`Seed::ProbablyForeground`]. For a volume the rectangle spans every slice.
///
/// The rectangle must be non-empty, lie inside the image and leave some background.
///
/// ```
/// use segcut::io::{rect_seeds, Rect, Seed};
/// let s = rect_seeds([4, 3, 1], &Rect { x: 1, y: 1, w: 2, h: 1 })?;
/// assert_eq!(s.counts()[Seed::ProbablyForeground as usize], 2);
/// assert_eq!(s.counts()[Seed::Background as usize], 10);
/// # Ok::<(), segcut::Error>(())
/// ```
pub fn rect_seeds(dims: [usize; 3], rect: &Rect) -> Result<Seeds> {
    let bad = |msg: String| Error::Input {
        file: "rectangle".into(),
        msg,
    };
    let [w, h, d] = dims;
    if rect.w == 0 || rect.h == 0 {
        return Err(bad(format!(
            "rectangle {rect} is empty (width and height must be at least 1 in the {w}×{h} image)"
        )));
    }
    let right = rect.x.checked_add(rect.w);
    let bottom = rect.y.checked_add(rect.h);
    if !matches!((right, bottom), (Some(r), Some(b)) if r <= w && b <= h) {
        return Err(bad(format!(
            "rectangle {rect} (x {}..{}, y {}..{}) does not fit in the {w}×{h} image",
            rect.x,
            rect.x.saturating_add(rect.w),
            rect.y,
            rect.y.saturating_add(rect.h)
        )));
    }
    if rect.w == w && rect.h == h {
        return Err(bad(format!(
            "rectangle {rect} covers the whole {w}×{h} image and leaves no background; draw it \
             inside the image border"
        )));
    }
    let mut labels = vec![Seed::Background; w * h * d];
    for z in 0..d {
        for y in rect.y..rect.y + rect.h {
            let row = (z * h + y) * w;
            labels[row + rect.x..row + rect.x + rect.w].fill(Seed::ProbablyForeground);
        }
    }
    Ok(Seeds { dims, labels })
}

/// A rectangle combined with seeds from a file: start from [`rect_seeds`], then the file's hard
/// seeds replace whatever the rectangle says, and its soft seeds replace the rectangle's soft
/// inside (they cannot undo the hard background outside).
///
/// ```
/// use segcut::io::{rect_with_seeds, Rect, Seed, Seeds};
/// let mut file = Seeds::unknown([3, 1, 1]);
/// file.labels[0] = Seed::Foreground; // outside the rectangle: the hard seed wins
/// let s = rect_with_seeds(&Rect { x: 1, y: 0, w: 2, h: 1 }, &file)?;
/// assert_eq!(s.labels, [Seed::Foreground, Seed::ProbablyForeground, Seed::ProbablyForeground]);
/// # Ok::<(), segcut::Error>(())
/// ```
pub fn rect_with_seeds(rect: &Rect, seeds: &Seeds) -> Result<Seeds> {
    let mut out = rect_seeds(seeds.dims, rect)?;
    if seeds.labels.len() != out.labels.len() {
        return Err(Error::Input {
            file: "rectangle".into(),
            msg: format!(
                "seeds hold {} labels but their size {} has {} pixels",
                seeds.labels.len(),
                dims_text(seeds.dims),
                out.labels.len()
            ),
        });
    }
    for (o, &s) in out.labels.iter_mut().zip(&seeds.labels) {
        match s {
            Seed::Foreground | Seed::Background => *o = s,
            Seed::ProbablyForeground | Seed::ProbablyBackground if *o != Seed::Background => *o = s,
            _ => {}
        }
    }
    Ok(out)
}
