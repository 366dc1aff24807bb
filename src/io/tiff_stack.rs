//! TIFF images and multi-page TIFF volumes (one page per z slice), with ImageJ spacing.

use super::{check_memory, input_err, LoadOptions};
use crate::io::Image;
use crate::{Error, Result};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use tiff::decoder::{Decoder, DecodingResult, Limits};
use tiff::encoder::{colortype, Rational, TiffEncoder};
use tiff::tags::{ResolutionUnit, Tag};
use tiff::ColorType;

/// Spacing and unit found in a TIFF's first page.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TiffMeta {
    pub spacing: [f64; 3],
    pub unit: Option<String>,
}

fn open(path: &Path) -> Result<Decoder<BufReader<File>>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    Decoder::new(BufReader::new(f)).map_err(|e| input_err(path, format!("cannot read TIFF: {e}")))
}

/// Samples per pixel stored, and how many we keep (alpha dropped).
fn layout(path: &Path, page: usize, ct: ColorType) -> Result<(usize, usize)> {
    match ct {
        ColorType::Gray(_) => Ok((1, 1)),
        ColorType::GrayA(_) => Ok((2, 1)),
        ColorType::RGB(_) => Ok((3, 3)),
        ColorType::RGBA(_) => Ok((4, 3)),
        other => Err(input_err(
            path,
            format!(
                "page {page}: colour type {other:?} is not supported (grey, grey+alpha, RGB or \
                 RGBA expected)"
            ),
        )),
    }
}

/// The longest ImageDescription read for its ImageJ spacing (real ones are a few hundred bytes).
const MAX_DESCRIPTION: u64 = 1 << 20;

/// The declared byte count of the first page's ImageDescription tag (270), read from the first
/// IFD of a classic or Big TIFF without the decoder; `None` when the file has no such tag or
/// cannot be read that far.
fn description_len(path: &Path) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path).ok()?;
    let mut head = [0u8; 16];
    f.read_exact(&mut head).ok()?;
    let le = match &head[..2] {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let u = |b: &[u8]| -> u64 {
        let mut v = 0u64;
        for i in 0..b.len() {
            let byte = if le { b[b.len() - 1 - i] } else { b[i] };
            v = (v << 8) | byte as u64;
        }
        v
    };
    let big = match u(&head[2..4]) {
        42 => false,
        43 => true,
        _ => return None,
    };
    let (ifd, count_size, entry_size) = if big {
        (u(&head[8..16]), 8usize, 20usize)
    } else {
        (u(&head[4..8]), 2, 12)
    };
    f.seek(SeekFrom::Start(ifd)).ok()?;
    let mut n = [0u8; 8];
    f.read_exact(&mut n[..count_size]).ok()?;
    let entries = u(&n[..count_size]).min(4096) as usize;
    let mut entry = [0u8; 20];
    for _ in 0..entries {
        f.read_exact(&mut entry[..entry_size]).ok()?;
        if u(&entry[..2]) == 270 {
            return Some(if big {
                u(&entry[4..12])
            } else {
                u(&entry[4..8])
            });
        }
    }
    None
}

/// Reads spacing from the current page: `1 / XResolution`, `1 / YResolution` and ImageJ's
/// `spacing=` for z. Without `spacing=` a volume's voxels are taken as cubic in z (z spacing =
/// x spacing), since the resolution tags alone say nothing about z.
fn meta(dec: &mut Decoder<BufReader<File>>, read_description: bool) -> TiffMeta {
    let mut spacing = [1.0f64; 3];
    let mut unit = None;
    let mut z = None;
    let description = if read_description {
        dec.find_tag(Tag::ImageDescription)
    } else {
        Ok(None)
    };
    if let Ok(Some(v)) = description {
        if let Ok(desc) = v.into_string() {
            if desc.starts_with("ImageJ=") {
                for line in desc.lines() {
                    if let Some((k, v)) = line.split_once('=') {
                        match k.trim() {
                            "spacing" => z = v.trim().parse::<f64>().ok(),
                            "unit" => unit = Some(v.trim().to_string()),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    for (axis, tag) in [(0, Tag::XResolution), (1, Tag::YResolution)] {
        let res = match dec.find_tag(tag) {
            Ok(Some(tiff::decoder::ifd::Value::Rational(n, d))) if d != 0 => n as f64 / d as f64,
            Ok(Some(v)) => v.into_f64().unwrap_or(0.0),
            _ => 0.0,
        };
        if res.is_finite() && res > 0.0 {
            spacing[axis] = 1.0 / res;
        }
    }
    spacing[2] = match z {
        Some(s) if s.is_finite() && s > 0.0 => s,
        _ => spacing[0],
    };
    TiffMeta { spacing, unit }
}

/// Loads all pages of a TIFF as z slices; every page must match the first in size and type.
pub(crate) fn load(path: &Path, opts: &LoadOptions) -> Result<Image> {
    let mut dec = open(path)?;
    let tiff_err = |page: usize, e: tiff::TiffError| {
        input_err(path, format!("page {page}: cannot read TIFF: {e}"))
    };
    // Pass 1: headers only, so that a bad page or a too large stack fails before any pixel.
    let (w, h) = dec.dimensions().map_err(|e| tiff_err(1, e))?;
    let ct = dec.colortype().map_err(|e| tiff_err(1, e))?;
    let (stored, kept) = layout(path, 1, ct)?;
    // The decoder allocates a tag's declared length before reading it (and its size check prints
    // a debugging line): a description longer than the file, or than any ImageJ header, is
    // skipped unread.
    let file_len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let sane = description_len(path).is_some_and(|n| n <= file_len.min(MAX_DESCRIPTION));
    let tm = meta(&mut dec, sane);
    let mut pages = 1usize;
    while dec.more_images() {
        dec.next_image().map_err(|e| tiff_err(pages + 1, e))?;
        pages += 1;
        let (pw, ph) = dec.dimensions().map_err(|e| tiff_err(pages, e))?;
        if (pw, ph) != (w, h) {
            return Err(input_err(
                path,
                format!("page {pages} is {pw}×{ph} but page 1 is {w}×{h}; all slices of a volume must have one size"),
            ));
        }
        let pct = dec.colortype().map_err(|e| tiff_err(pages, e))?;
        if pct != ct {
            return Err(input_err(
                path,
                format!(
                    "page {pages} is {pct:?} but page 1 is {ct:?}; all slices must have one type"
                ),
            ));
        }
    }
    let dims = [w as usize, h as usize, pages];
    check_memory(path, dims, kept, 0, true, opts)?;

    let mut dec = open(path)?.with_limits(Limits::unlimited());
    let per_page = dims[0]
        .checked_mul(dims[1])
        .and_then(|p| p.checked_mul(kept));
    let mut data = super::alloc(path, per_page.and_then(|p| p.checked_mul(pages)))?;
    let per_page = per_page.unwrap_or(0);
    for page in 1..=pages {
        if page > 1 {
            dec.next_image().map_err(|e| tiff_err(page, e))?;
        }
        let before = data.len();
        match dec.read_image().map_err(|e| tiff_err(page, e))? {
            DecodingResult::U8(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::U16(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::U32(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::I8(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::I16(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::I32(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::F32(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::F64(v) => extend(&mut data, &v, stored, kept),
            DecodingResult::U64(v) => data.extend(
                v.chunks_exact(stored)
                    .flat_map(|p| p[..kept].iter().map(|&x| x as f32)),
            ),
            DecodingResult::I64(v) => data.extend(
                v.chunks_exact(stored)
                    .flat_map(|p| p[..kept].iter().map(|&x| x as f32)),
            ),
            DecodingResult::F16(v) => data.extend(
                v.chunks_exact(stored)
                    .flat_map(|p| p[..kept].iter().map(|&x| f32::from(x))),
            ),
        }
        if data.len() - before != per_page {
            return Err(input_err(
                path,
                format!(
                    "page {page}: decoded {} values, expected {per_page}",
                    data.len() - before
                ),
            ));
        }
    }
    Ok(Image {
        dims,
        channels: kept,
        data,
        spacing: tm.spacing,
        meta: crate::io::ImageMeta {
            format: Some(crate::io::ImageFormat::Tiff),
            unit: tm.unit,
            nifti: None,
        },
    })
}

fn extend<T: Copy + Into<f64>>(data: &mut Vec<f32>, raw: &[T], stored: usize, kept: usize) {
    data.extend(
        raw.chunks_exact(stored)
            .flat_map(|p| p[..kept].iter().map(|&x| x.into() as f32)),
    );
}

/// Pixels per unit for a spacing, as the TIFF rational closest to `1 / spacing`.
fn resolution(spacing: f64) -> Rational {
    let res = if spacing.is_finite() && spacing > 0.0 {
        1.0 / spacing
    } else {
        1.0
    };
    let res = res.clamp(1.0 / u32::MAX as f64, u32::MAX as f64);
    // The largest denominator that keeps the numerator in range: best precision.
    let d = (u32::MAX as f64 / res.max(1.0))
        .floor()
        .min(u32::MAX as f64);
    let n = (res * d).round().clamp(1.0, u32::MAX as f64);
    Rational {
        n: n as u32,
        d: d.max(1.0) as u32,
    }
}

/// How sample values will be stored.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sample {
    U8,
    U16,
    F32,
}

/// Writes an image as TIFF (one page per z slice) with its spacing as X/YResolution and an ImageJ
/// description (`spacing=` for z, `unit=`); samples are 8-bit when every value is an integer in
/// 0–255, 16-bit for integers in 0–65535, else 32-bit float. Channels must be 1 or 3.
///
/// ```no_run
/// use segcut::io::{save_tiff, Image};
/// let mut vol = Image::new([4, 4, 3], 1, vec![7.0; 48]);
/// vol.spacing = [0.5, 0.5, 2.0];
/// save_tiff(std::path::Path::new("vol.tif"), &vol, None)?;
/// # Ok::<(), segcut::Error>(())
/// ```
pub fn save_tiff(path: &Path, img: &Image, unit: Option<&str>) -> Result<()> {
    let bytes = encode_tiff(path, img, unit)?;
    crate::io::write_atomic(path, |w| std::io::Write::write_all(w, &bytes))
}

/// The bytes [`save_tiff`] writes (`path` only names the file in errors).
pub fn encode_tiff(path: &Path, img: &Image, unit: Option<&str>) -> Result<Vec<u8>> {
    img.check_shape(path)?;
    let integral = |max: f32| {
        img.data
            .iter()
            .all(|&v| v.fract() == 0.0 && (0.0..=max).contains(&v))
    };
    let sample = if integral(255.0) {
        Sample::U8
    } else if integral(65535.0) {
        Sample::U16
    } else {
        Sample::F32
    };
    let mut out = std::io::Cursor::new(Vec::new());
    let werr = |e: tiff::TiffError| input_err(path, format!("cannot write TIFF: {e}"));
    let mut enc = TiffEncoder::new(&mut out).map_err(werr)?;
    let [w, h, d] = img.dims;
    let (w32, h32) = match (u32::try_from(w), u32::try_from(h)) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return Err(input_err(path, "image too large for TIFF")),
    };
    let desc = format!(
        "ImageJ=1.11a\nimages={d}\nslices={d}\nunit={}\nspacing={}\nloop=false\n",
        unit.unwrap_or("pixel"),
        img.spacing[2]
    );
    let plane = w * h * img.channels;
    for z in 0..d {
        let page = &img.data[z * plane..(z + 1) * plane];
        macro_rules! write_page {
            ($ct:ty, $conv:expr) => {{
                let mut ie = enc.new_image::<$ct>(w32, h32).map_err(werr)?;
                ie.resolution_unit(ResolutionUnit::None);
                ie.x_resolution(resolution(img.spacing[0]));
                ie.y_resolution(resolution(img.spacing[1]));
                if z == 0 {
                    ie.encoder()
                        .write_tag(Tag::ImageDescription, desc.as_str())
                        .map_err(werr)?;
                }
                let buf: Vec<_> = page.iter().map($conv).collect();
                ie.write_data(&buf).map_err(werr)?;
            }};
        }
        match (img.channels, sample) {
            (1, Sample::U8) => write_page!(colortype::Gray8, |&v| v as u8),
            (1, Sample::U16) => write_page!(colortype::Gray16, |&v| v as u16),
            (1, Sample::F32) => write_page!(colortype::Gray32Float, |&v| v),
            (3, Sample::U8) => write_page!(colortype::RGB8, |&v| v as u8),
            (3, Sample::U16) => write_page!(colortype::RGB16, |&v| v as u16),
            (3, Sample::F32) => write_page!(colortype::RGB32Float, |&v| v),
            (c, _) => {
                return Err(input_err(
                    path,
                    format!("cannot write {c} channels to TIFF (1 or 3)"),
                ))
            }
        }
    }
    Ok(out.into_inner())
}
