//! Disparity maps in and out: 8- or 16-bit grey PNG with a scale (Middlebury v2 style,
//! `value = d · scale`), PFM (Middlebury v3 style, 32-bit float, bottom row first, `inf` for
//! unknown), and a colour-mapped PNG to look at.
//!
//! ```
//! use segcut::io::{decode_disparity, encode_disparity, DisparityFormat};
//! let disp = vec![0.5, 1.5, 3.0, 15.0];
//! let png = encode_disparity(&disp, 2, 2, DisparityFormat::Png16 { scale: 256.0 }).unwrap();
//! let back = decode_disparity(&png, "d.png", 256.0).unwrap();
//! assert_eq!(back.2, disp);
//! // In PNG, 0 means "no disparity": it decodes as NaN.
//! let zero = encode_disparity(&[0.0], 1, 1, DisparityFormat::Png8 { scale: 16.0 }).unwrap();
//! assert!(decode_disparity(&zero, "z.png", 16.0).unwrap().2[0].is_nan());
//! let pfm = encode_disparity(&disp, 2, 2, DisparityFormat::Pfm).unwrap();
//! assert_eq!(decode_disparity(&pfm, "d.pfm", 1.0).unwrap().2, disp);
//! ```

use super::input_err;
use crate::{Error, Result};
use std::path::Path;

/// How a disparity map is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DisparityFormat {
    /// 8-bit grey PNG, `round(d · scale)` clamped to 0–255.
    Png8 {
        /// Multiplier.
        scale: f32,
    },
    /// 16-bit grey PNG, `round(d · scale)` clamped to 0–65535.
    Png16 {
        /// Multiplier.
        scale: f32,
    },
    /// Little-endian grey PFM, float disparities.
    Pfm,
    /// RGB PNG, disparities colour-mapped (blue far … red near) between the map's own minimum
    /// and maximum.
    Color,
}

impl DisparityFormat {
    /// The format a path's extension names: `.pfm` → PFM, else PNG (16-bit when `scale · max`
    /// does not fit 8 bits).
    pub fn for_path(path: &Path, scale: f32, max_disparity: f32) -> Self {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        if ext == "pfm" {
            DisparityFormat::Pfm
        } else if (max_disparity * scale).round() > 255.0 {
            DisparityFormat::Png16 { scale }
        } else {
            DisparityFormat::Png8 { scale }
        }
    }
}

fn png_bytes(
    w: usize,
    h: usize,
    color: png::ColorType,
    depth: png::BitDepth,
    data: &[u8],
) -> Result<Vec<u8>> {
    let err = |e: png::EncodingError| Error::Unsupported(format!("cannot encode PNG: {e}"));
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w as u32, h as u32);
    enc.set_color(color);
    enc.set_depth(depth);
    enc.set_compression(png::Compression::Fast);
    let mut wr = enc.write_header().map_err(err)?;
    wr.write_image_data(data).map_err(err)?;
    wr.finish().map_err(err)?;
    Ok(out)
}

/// The colour of `t` in 0..=1 on a blue–cyan–yellow–red ramp.
fn ramp(t: f32) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0) * 3.0;
    let (r, g, b) = if t < 1.0 {
        (0.0, t, 1.0)
    } else if t < 2.0 {
        (t - 1.0, 1.0, 2.0 - t)
    } else {
        (1.0, 3.0 - t, 0.0)
    };
    [(r * 255.0) as u8, (g * 255.0) as u8, (b * 255.0) as u8]
}

/// Encodes a `w × h` disparity map (row by row; non-finite values are "unknown": 0 in PNG,
/// `inf` in PFM, black in colour).
pub fn encode_disparity(disp: &[f32], w: usize, h: usize, fmt: DisparityFormat) -> Result<Vec<u8>> {
    if w == 0 || h == 0 || disp.len() != w * h {
        return Err(Error::Graph(format!(
            "disparity map {w}x{h} needs {} values, got {}",
            w * h,
            disp.len()
        )));
    }
    let q = |d: f32, scale: f32, max: f32| {
        if d.is_finite() {
            (d * scale).round().clamp(0.0, max)
        } else {
            0.0
        }
    };
    // A PNG holds no negative values: clamping them to 0 would write a map of zeros.
    if matches!(
        fmt,
        DisparityFormat::Png8 { .. } | DisparityFormat::Png16 { .. }
    ) {
        if let Some(i) = disp.iter().position(|&d| d < 0.0) {
            return Err(Error::Unsupported(format!(
                "disparity {} at (x={}, y={}) is negative, which a PNG cannot hold: write a \
                 .pfm map (or search from disparity 0)",
                disp[i],
                i % w,
                i / w
            )));
        }
    }
    match fmt {
        DisparityFormat::Png8 { scale } => {
            let data: Vec<u8> = disp.iter().map(|&d| q(d, scale, 255.0) as u8).collect();
            png_bytes(w, h, png::ColorType::Grayscale, png::BitDepth::Eight, &data)
        }
        DisparityFormat::Png16 { scale } => {
            let data: Vec<u8> = disp
                .iter()
                .flat_map(|&d| (q(d, scale, 65535.0) as u16).to_be_bytes())
                .collect();
            png_bytes(
                w,
                h,
                png::ColorType::Grayscale,
                png::BitDepth::Sixteen,
                &data,
            )
        }
        DisparityFormat::Pfm => {
            let mut out = format!("Pf\n{w} {h}\n-1\n").into_bytes();
            for row in disp.chunks(w).rev() {
                for &d in row {
                    let v = if d.is_finite() { d } else { f32::INFINITY };
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Ok(out)
        }
        DisparityFormat::Color => {
            let finite = disp.iter().filter(|d| d.is_finite());
            let lo = finite.clone().cloned().fold(f32::INFINITY, f32::min);
            let hi = finite.cloned().fold(f32::NEG_INFINITY, f32::max);
            let span = if hi > lo { hi - lo } else { 1.0 };
            let data: Vec<u8> = disp
                .iter()
                .flat_map(|&d| {
                    if d.is_finite() {
                        ramp((d - lo) / span)
                    } else {
                        [0, 0, 0]
                    }
                })
                .collect();
            png_bytes(w, h, png::ColorType::Rgb, png::BitDepth::Eight, &data)
        }
    }
}

/// Writes a disparity map atomically (see [`write_atomic`](super::write_atomic)).
pub fn save_disparity(
    path: &Path,
    disp: &[f32],
    w: usize,
    h: usize,
    fmt: DisparityFormat,
) -> Result<()> {
    let bytes = encode_disparity(disp, w, h, fmt)?;
    super::write_atomic(path, |f| f.write_all(&bytes))
}

/// Decodes a disparity map from a PFM (by its `Pf`/`PF` magic) or a grey PNG (values divided by
/// `scale`; 0 is "unknown" and becomes NaN). `name` is the file named in errors. Returns
/// `(width, height, disparities)`.
pub fn decode_disparity(bytes: &[u8], name: &str, scale: f32) -> Result<(usize, usize, Vec<f32>)> {
    let path = Path::new(name);
    if bytes.starts_with(b"Pf") || bytes.starts_with(b"PF") {
        return decode_pfm(bytes, path);
    }
    if scale.is_nan() || scale <= 0.0 {
        return Err(input_err(
            path,
            format!("scale must be positive, got {scale}"),
        ));
    }
    let img = image::load_from_memory(bytes)
        .map_err(|e| input_err(path, format!("cannot read disparity image: {e}")))?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    let grey = img.into_luma16();
    let is16 = bytes.len() > 25 && bytes.starts_with(b"\x89PNG") && bytes[24] == 16;
    let div = if is16 { 1.0 } else { 257.0 };
    let disp = grey
        .into_raw()
        .into_iter()
        .map(|v| {
            let v = (v as f32 / div).round();
            if v == 0.0 {
                f32::NAN
            } else {
                v / scale
            }
        })
        .collect();
    Ok((w, h, disp))
}

fn decode_pfm(bytes: &[u8], path: &Path) -> Result<(usize, usize, Vec<f32>)> {
    // Header: three whitespace-separated tokens after the magic, then one whitespace byte.
    let mut tokens = Vec::new();
    let mut i = 2;
    while tokens.len() < 3 {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if start == i {
            return Err(input_err(path, "PFM header ends early"));
        }
        tokens.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
    }
    i += 1;
    let channels = if bytes.starts_with(b"PF") { 3 } else { 1 };
    let parse = |t: &str, what: &str| {
        t.parse::<usize>()
            .map_err(|_| input_err(path, format!("PFM {what} '{t}' is not a number")))
    };
    let (w, h) = (parse(&tokens[0], "width")?, parse(&tokens[1], "height")?);
    let order: f32 = tokens[2]
        .parse()
        .map_err(|_| input_err(path, format!("PFM scale '{}' is not a number", tokens[2])))?;
    let need = w
        .checked_mul(h)
        .and_then(|n| n.checked_mul(4 * channels))
        .filter(|&n| w > 0 && h > 0 && i.checked_add(n).is_some_and(|e| e <= bytes.len()))
        .ok_or_else(|| {
            input_err(
                path,
                format!(
                    "PFM of {w}x{h} needs more data than the file's {} bytes",
                    bytes.len()
                ),
            )
        })?;
    let data = &bytes[i..i + need];
    let mut disp = vec![0f32; w * h];
    for (r, row) in disp.chunks_mut(w).enumerate() {
        let src_row = h - 1 - r; // bottom row first
        for (x, d) in row.iter_mut().enumerate() {
            let o = 4 * channels * (x + w * src_row);
            let b = [data[o], data[o + 1], data[o + 2], data[o + 3]];
            let v = if order < 0.0 {
                f32::from_le_bytes(b)
            } else {
                f32::from_be_bytes(b)
            };
            *d = if v.is_finite() { v } else { f32::NAN };
        }
    }
    Ok((w, h, disp))
}

/// Reads a disparity map file (see [`decode_disparity`]).
pub fn load_disparity(path: &Path, scale: f32) -> Result<(usize, usize, Vec<f32>)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    decode_disparity(&bytes, &path.display().to_string(), scale)
}
