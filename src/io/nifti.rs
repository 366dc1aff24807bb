//! NIfTI-1 single-file volumes (`.nii`, `.nii.gz`): reader and writer.
//!
//! The 348-byte header is read field by field at its fixed offsets, in the byte order that makes
//! `sizeof_hdr` equal 348. Voxel data starts at `vox_offset`, x fastest, then y, then z: the
//! same order as [`Image`]. Stored values `v` become `v · scl_slope + scl_inter` when
//! `scl_slope` is neither 0 nor NaN (the standard's rule).

use super::{check_memory, dims_text, input_err, pixel_text, LoadOptions};
use crate::io::Image;
use crate::{Error, Result};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

const HEADER_SIZE: usize = 348;

/// A NIfTI-1 voxel type (the header's `datatype` code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NiftiType {
    /// `DT_UINT8` (2).
    U8,
    /// `DT_INT8` (256).
    I8,
    /// `DT_INT16` (4).
    I16,
    /// `DT_UINT16` (512).
    U16,
    /// `DT_INT32` (8).
    I32,
    /// `DT_UINT32` (768).
    U32,
    /// `DT_FLOAT32` (16).
    F32,
    /// `DT_FLOAT64` (64).
    F64,
    /// `DT_RGB24` (128): three `u8` per voxel, read as 3 channels.
    Rgb24,
}

impl NiftiType {
    /// The header's `datatype` code.
    pub fn code(self) -> i16 {
        match self {
            NiftiType::U8 => 2,
            NiftiType::I8 => 256,
            NiftiType::I16 => 4,
            NiftiType::U16 => 512,
            NiftiType::I32 => 8,
            NiftiType::U32 => 768,
            NiftiType::F32 => 16,
            NiftiType::F64 => 64,
            NiftiType::Rgb24 => 128,
        }
    }

    /// The type with header code `code`, if supported.
    pub fn from_code(code: i16) -> Option<Self> {
        [
            NiftiType::U8,
            NiftiType::I8,
            NiftiType::I16,
            NiftiType::U16,
            NiftiType::I32,
            NiftiType::U32,
            NiftiType::F32,
            NiftiType::F64,
            NiftiType::Rgb24,
        ]
        .into_iter()
        .find(|t| t.code() == code)
    }

    /// Bytes per voxel.
    pub fn size(self) -> usize {
        match self {
            NiftiType::U8 | NiftiType::I8 => 1,
            NiftiType::I16 | NiftiType::U16 => 2,
            NiftiType::Rgb24 => 3,
            NiftiType::I32 | NiftiType::U32 | NiftiType::F32 => 4,
            NiftiType::F64 => 8,
        }
    }

    /// Values per voxel: 3 for RGB24, else 1.
    pub fn channels(self) -> usize {
        if self == NiftiType::Rgb24 {
            3
        } else {
            1
        }
    }

    /// The stored range of an integer type (`None` for floats).
    fn range(self) -> Option<(f64, f64)> {
        match self {
            NiftiType::U8 | NiftiType::Rgb24 => Some((0.0, 255.0)),
            NiftiType::I8 => Some((-128.0, 127.0)),
            NiftiType::I16 => Some((-32768.0, 32767.0)),
            NiftiType::U16 => Some((0.0, 65535.0)),
            NiftiType::I32 => Some((i32::MIN as f64, i32::MAX as f64)),
            NiftiType::U32 => Some((0.0, u32::MAX as f64)),
            NiftiType::F32 | NiftiType::F64 => None,
        }
    }
}

/// The parts of a header segcut reads or carries over.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Header {
    pub big_endian: bool,
    pub dims: [usize; 3],
    pub datatype: NiftiType,
    pub spacing: [f64; 3],
    pub vox_offset: u64,
    pub scl_slope: f32,
    pub scl_inter: f32,
    /// Orientation, copied verbatim into masks written "like" this file.
    pub orient: Orientation,
}

/// A NIfTI header's orientation fields: `dim_info`, `pixdim[0]` (qfac), `xyzt_units`,
/// `qform_code`, `sform_code`, the quaternion and offsets, the three `srow` rows. Carried verbatim
/// from a loaded volume into the masks written like it.
#[derive(Clone, Debug, PartialEq)]
pub struct Orientation {
    /// `dim_info`.
    pub dim_info: u8,
    /// `pixdim[0]`: the handedness of the qform, 1 or -1.
    pub qfac: f32,
    /// `xyzt_units`.
    pub xyzt_units: u8,
    /// `qform_code`.
    pub qform_code: i16,
    /// `sform_code`.
    pub sform_code: i16,
    /// quatern_b, c, d, qoffset_x, y, z.
    pub quatern: [f32; 6],
    /// `srow_x`, `srow_y`, `srow_z`.
    pub srow: [f32; 12],
}

impl Default for Orientation {
    fn default() -> Self {
        Orientation {
            dim_info: 0,
            qfac: 1.0,
            // NIFTI_UNITS_MM: spacing has no unit in segcut, millimetres is the common reading.
            xyzt_units: 2,
            qform_code: 0,
            sform_code: 0,
            quatern: [0.0; 6],
            srow: [0.0; 12],
        }
    }
}

/// Reads fields of a header buffer in its byte order.
struct Fields<'a> {
    b: &'a [u8; HEADER_SIZE],
    be: bool,
}

impl Fields<'_> {
    fn i16(&self, at: usize) -> i16 {
        let w = [self.b[at], self.b[at + 1]];
        if self.be {
            i16::from_be_bytes(w)
        } else {
            i16::from_le_bytes(w)
        }
    }
    fn word(&self, at: usize) -> [u8; 4] {
        [self.b[at], self.b[at + 1], self.b[at + 2], self.b[at + 3]]
    }
    fn f32(&self, at: usize) -> f32 {
        if self.be {
            f32::from_be_bytes(self.word(at))
        } else {
            f32::from_le_bytes(self.word(at))
        }
    }
}

fn reader(path: &Path, gz: bool) -> Result<Box<dyn Read>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(if gz {
        Box::new(BufReader::new(MultiGzDecoder::new(BufReader::new(f))))
    } else {
        Box::new(BufReader::new(f))
    })
}

/// Fills `buf` from `r`; returns how many bytes came (less than `buf.len()` only at the end).
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Parses and checks a header; `r` is left just after it.
fn read_header(path: &Path, r: &mut dyn Read) -> Result<Header> {
    let bad = |msg: String| input_err(path, msg);
    let mut b = [0u8; HEADER_SIZE];
    let got = read_full(r, &mut b).map_err(|e| bad(format!("cannot read NIfTI header: {e}")))?;
    if got < HEADER_SIZE {
        return Err(bad(format!(
            "not a NIfTI-1 file: {got} bytes, shorter than the 348-byte header"
        )));
    }
    let first = [b[0], b[1], b[2], b[3]];
    let be = match (i32::from_le_bytes(first), i32::from_be_bytes(first)) {
        (348, _) => false,
        (_, 348) => true,
        (540, _) | (_, 540) => {
            return Err(bad(
                "NIfTI-2 files are not supported; save the volume as NIfTI-1".into(),
            ))
        }
        (le, _) => {
            return Err(bad(format!(
                "not a NIfTI-1 file: sizeof_hdr is {le}, expected 348"
            )))
        }
    };
    let f = Fields { b: &b, be };
    match &b[344..348] {
        b"n+1\0" => {}
        b"ni1\0" => {
            return Err(bad(
                "header-only NIfTI pair (.hdr/.img) is not supported; save as a single .nii".into(),
            ))
        }
        m => {
            return Err(bad(format!(
                "not a NIfTI-1 file: magic is {:?}, expected \"n+1\"",
                String::from_utf8_lossy(m)
            )))
        }
    }
    let ndim = f.i16(40);
    if !(1..=7).contains(&ndim) {
        return Err(bad(format!("dim[0] is {ndim}, expected 1 to 7")));
    }
    let mut dims = [1usize; 3];
    for k in 1..=ndim as usize {
        let d = f.i16(40 + 2 * k);
        if d < 1 {
            return Err(bad(format!("dim[{k}] is {d}, expected at least 1")));
        }
        if k <= 3 {
            dims[k - 1] = d as usize;
        } else if d > 1 {
            return Err(bad(format!(
                "dim[{k}] is {d}: the file holds {d} volumes (or components) but segcut segments \
                 one 3D volume; extract one first (e.g. fslroi)"
            )));
        }
    }
    let code = f.i16(70);
    let datatype = NiftiType::from_code(code).ok_or_else(|| {
        bad(format!(
            "datatype {code} is not supported (uint8, int8, int16, uint16, int32, uint32, \
             float32, float64, rgb24)"
        ))
    })?;
    // The voxel size weighs the n-links, so a wrong one changes the result: refuse what is not
    // a size instead of guessing. A 0 on an axis of one voxel (pixdim[3] of a 2D file) is unset.
    let mut spacing = [1.0f64; 3];
    for (k, s) in spacing.iter_mut().enumerate() {
        let p = f.f32(76 + 4 * (k + 1));
        if p == 0.0 && dims[k] == 1 {
            continue;
        }
        if !(p.is_finite() && p > 0.0) {
            return Err(bad(format!(
                "pixdim[{}] (the voxel size along axis {}) is {p}; voxel sizes must be positive \
                 numbers",
                k + 1,
                ["x", "y", "z"][k]
            )));
        }
        *s = p as f64;
    }
    let vo = f.f32(108);
    if !(vo.is_finite() && vo >= HEADER_SIZE as f32 && vo.fract() == 0.0) {
        return Err(bad(format!(
            "vox_offset is {vo}, expected a whole number of at least 348"
        )));
    }
    let mut srow = [0f32; 12];
    for (k, s) in srow.iter_mut().enumerate() {
        *s = f.f32(280 + 4 * k);
    }
    let mut quatern = [0f32; 6];
    for (k, q) in quatern.iter_mut().enumerate() {
        *q = f.f32(256 + 4 * k);
    }
    let qfac = f.f32(76);
    Ok(Header {
        big_endian: be,
        dims,
        datatype,
        spacing,
        vox_offset: vo as u64,
        scl_slope: f.f32(112),
        scl_inter: f.f32(116),
        orient: Orientation {
            dim_info: b[39],
            qfac: if qfac == -1.0 { -1.0 } else { 1.0 },
            xyzt_units: b[123],
            qform_code: f.i16(252),
            sform_code: f.i16(254),
            quatern,
            srow,
        },
    })
}

/// Loads a NIfTI-1 volume; see the module doc.
pub(crate) fn load(path: &Path, gz: bool, opts: &LoadOptions) -> Result<Image> {
    let mut r = reader(path, gz)?;
    let h = read_header(path, &mut *r)?;
    let channels = h.datatype.channels();
    check_memory(path, h.dims, channels, 0, true, opts)?;
    // Skip the extensions between the header and the data.
    let skip = h.vox_offset - HEADER_SIZE as u64;
    let skipped = std::io::copy(&mut (&mut r).take(skip), &mut std::io::sink())
        .map_err(|e| input_err(path, format!("cannot read NIfTI data: {e}")))?;
    let n = h.dims.iter().product::<usize>();
    let total = n * h.datatype.size();
    if skipped < skip {
        return Err(truncated(path, &h, total, 0));
    }
    let scale = if h.scl_slope != 0.0 && !h.scl_slope.is_nan() {
        Some((h.scl_slope, h.scl_inter))
    } else {
        None
    };
    let mut data = super::alloc(path, n.checked_mul(channels))?;
    // Convert in chunks: no second full-size buffer for the raw bytes.
    let size = h.datatype.size();
    let mut chunk = vec![0u8; size * 65536];
    let mut done = 0usize;
    while done < total {
        let want = chunk.len().min(total - done);
        let got = read_full(&mut *r, &mut chunk[..want])
            .map_err(|e| input_err(path, format!("cannot read NIfTI data: {e}")))?;
        if got < want {
            return Err(truncated(path, &h, total, done + got));
        }
        decode(&chunk[..want], h.datatype, h.big_endian, &mut data);
        done += want;
    }
    if let Some((slope, inter)) = scale {
        for v in &mut data {
            *v = *v * slope + inter;
        }
    }
    Ok(Image {
        dims: h.dims,
        channels,
        data,
        spacing: h.spacing,
        meta: crate::io::ImageMeta {
            format: Some(crate::io::ImageFormat::Nifti),
            unit: None,
            nifti: Some(h.orient),
        },
    })
}

fn truncated(path: &Path, h: &Header, total: usize, got: usize) -> Error {
    input_err(
        path,
        format!(
            "truncated: a {} volume of {:?} needs {total} bytes of voxel data from offset {}, \
             found {got}",
            dims_text(h.dims),
            h.datatype,
            h.vox_offset
        ),
    )
}

/// Appends the values of whole voxels in `raw`.
fn decode(raw: &[u8], t: NiftiType, be: bool, out: &mut Vec<f32>) {
    macro_rules! conv {
        ($ty:ty, $n:expr) => {
            out.extend(raw.chunks_exact($n).map(|c| {
                let w: [u8; $n] = c.try_into().unwrap_or([0; $n]);
                (if be {
                    <$ty>::from_be_bytes(w)
                } else {
                    <$ty>::from_le_bytes(w)
                }) as f32
            }))
        };
    }
    match t {
        NiftiType::U8 | NiftiType::Rgb24 => out.extend(raw.iter().map(|&v| v as f32)),
        NiftiType::I8 => out.extend(raw.iter().map(|&v| v as i8 as f32)),
        NiftiType::I16 => conv!(i16, 2),
        NiftiType::U16 => conv!(u16, 2),
        NiftiType::I32 => conv!(i32, 4),
        NiftiType::U32 => conv!(u32, 4),
        NiftiType::F32 => conv!(f32, 4),
        NiftiType::F64 => conv!(f64, 8),
    }
}

/// How [`save_nifti`] stores a volume.
#[derive(Clone, Debug, PartialEq)]
pub struct NiftiOptions {
    /// Voxel type; values must fit it after scaling (else an error names the voxel).
    pub datatype: NiftiType,
    /// Write big-endian (readers detect the order by `sizeof_hdr`).
    pub big_endian: bool,
    /// Stored value = `(value - scl_inter) / scl_slope`, rounded for integer types; 0 or 1 with
    /// `scl_inter` 0 store values as they are.
    pub scl_slope: f32,
    /// See `scl_slope`.
    pub scl_inter: f32,
    /// Orientation fields (qform, sform, units) to write, e.g. those of the input volume
    /// ([`ImageMeta::nifti`](crate::io::ImageMeta::nifti)); `None`: none (identity).
    pub orientation: Option<Orientation>,
}

impl Default for NiftiOptions {
    fn default() -> Self {
        NiftiOptions {
            datatype: NiftiType::F32,
            big_endian: false,
            scl_slope: 0.0,
            scl_inter: 0.0,
            orientation: None,
        }
    }
}

/// Writes `img` as a single-file NIfTI-1 volume (gzipped when the name ends in `.gz`), spacing in
/// `pixdim[1..3]`. A 3-channel image needs [`NiftiType::Rgb24`]; 1-channel any other type.
///
/// ```no_run
/// use segcut::io::{save_nifti, Image, NiftiOptions, NiftiType};
/// let mut vol = Image::new([8, 8, 4], 1, vec![3.0; 256]);
/// vol.spacing = [1.0, 1.0, 2.5];
/// let opts = NiftiOptions { datatype: NiftiType::I16, ..Default::default() };
/// save_nifti(std::path::Path::new("vol.nii.gz"), &vol, &opts)?;
/// # Ok::<(), segcut::Error>(())
/// ```
pub fn save_nifti(path: &Path, img: &Image, opts: &NiftiOptions) -> Result<()> {
    let bytes = encode_nifti(path, img, opts)?;
    crate::io::write_atomic(path, |w| w.write_all(&bytes))
}

/// The bytes [`save_nifti`] writes to `path` (gzipped when its name ends in `.gz`).
pub fn encode_nifti(path: &Path, img: &Image, opts: &NiftiOptions) -> Result<Vec<u8>> {
    img.check_shape(path)?;
    let t = opts.datatype;
    if img.channels != t.channels() {
        return Err(input_err(
            path,
            format!(
                "a {}-channel image cannot be stored as NIfTI {t:?} ({} channel(s))",
                img.channels,
                t.channels()
            ),
        ));
    }
    for (k, &d) in img.dims.iter().enumerate() {
        if d > i16::MAX as usize {
            return Err(input_err(
                path,
                format!("dimension {k} is {d}, more than NIfTI-1's 32767"),
            ));
        }
    }
    let orient = opts.orientation.clone().unwrap_or_default();
    let be = opts.big_endian;
    let mut b = [0u8; HEADER_SIZE];
    let mut put = |at: usize, bytes: &[u8]| b[at..at + bytes.len()].copy_from_slice(bytes);
    macro_rules! bytes {
        ($v:expr) => {
            if be {
                $v.to_be_bytes()
            } else {
                $v.to_le_bytes()
            }
        };
    }
    put(0, &bytes!(HEADER_SIZE as i32));
    put(38, b"r"); // "regular", kept for Analyze readers
    put(39, &[orient.dim_info]);
    let ndim: i16 = if img.dims[2] > 1 { 3 } else { 2 };
    let mut dim = [1i16; 8];
    dim[0] = ndim;
    for k in 0..3 {
        dim[k + 1] = img.dims[k] as i16;
    }
    for (k, d) in dim.iter().enumerate() {
        put(40 + 2 * k, &bytes!(*d));
    }
    put(70, &bytes!(t.code()));
    put(72, &bytes!((t.size() * 8) as i16));
    let mut pixdim = [1f32; 8];
    pixdim[0] = orient.qfac;
    for k in 0..3 {
        pixdim[k + 1] = img.spacing[k] as f32;
    }
    for (k, p) in pixdim.iter().enumerate() {
        put(76 + 4 * k, &bytes!(*p));
    }
    put(108, &bytes!(352f32));
    put(112, &bytes!(opts.scl_slope));
    put(116, &bytes!(opts.scl_inter));
    put(123, &[orient.xyzt_units]);
    put(148, b"segcut");
    put(252, &bytes!(orient.qform_code));
    put(254, &bytes!(orient.sform_code));
    for (k, q) in orient.quatern.iter().enumerate() {
        put(256 + 4 * k, &bytes!(*q));
    }
    for (k, s) in orient.srow.iter().enumerate() {
        put(280 + 4 * k, &bytes!(*s));
    }
    put(344, b"n+1\0");

    // Stored values, checked against the type's range before anything is written.
    let (slope, inter) = if opts.scl_slope != 0.0 && !opts.scl_slope.is_nan() {
        (opts.scl_slope as f64, opts.scl_inter as f64)
    } else {
        (1.0, 0.0)
    };
    let mut data = Vec::with_capacity(img.data.len() * t.size() / t.channels());
    for (i, &v) in img.data.iter().enumerate() {
        let s = (v as f64 - inter) / slope;
        let s = match t.range() {
            Some((lo, hi)) => {
                let r = s.round();
                if !(lo..=hi).contains(&r) {
                    return Err(input_err(
                        path,
                        format!(
                            "voxel {} has value {v}, which NIfTI {t:?} cannot hold (stored {s})",
                            pixel_text(img.dims, i / img.channels)
                        ),
                    ));
                }
                r
            }
            None => s,
        };
        match t {
            NiftiType::U8 | NiftiType::Rgb24 => data.push(s as u8),
            NiftiType::I8 => data.push(s as i8 as u8),
            NiftiType::I16 => data.extend_from_slice(&bytes!(s as i16)),
            NiftiType::U16 => data.extend_from_slice(&bytes!(s as u16)),
            NiftiType::I32 => data.extend_from_slice(&bytes!(s as i32)),
            NiftiType::U32 => data.extend_from_slice(&bytes!(s as u32)),
            NiftiType::F32 => data.extend_from_slice(&bytes!(s as f32)),
            NiftiType::F64 => data.extend_from_slice(&bytes!(s)),
        }
    }

    let gz = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().to_ascii_lowercase().ends_with(".gz"));
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        w.write_all(&b)?;
        w.write_all(&[0; 4])?; // no extensions
        w.write_all(&data)?;
        w.flush()
    };
    let mut out = Vec::with_capacity(HEADER_SIZE + 4 + data.len());
    let res = if gz {
        let mut enc = flate2::write::GzEncoder::new(&mut out, flate2::Compression::fast());
        write(&mut enc).and_then(|_| enc.finish().map(|_| ()))
    } else {
        write(&mut out)
    };
    res.map_err(|e| Error::io(path, e))?;
    Ok(out)
}
