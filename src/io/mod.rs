//! Every format in and out: images, volumes and seeds ([`load_image`], [`load_seeds`]), masks and
//! volumes ([`save_mask`], [`save_volume`]), overlays ([`overlay`]), and DIMACS / Waterloo
//! max-flow files ([`dimacs`]).
//!
//! [`load_image`] opens anything segcut segments, chosen by the file's first bytes (then its
//! extension):
//!
//! | file | reader | result |
//! |------|--------|--------|
//! | PNG, JPEG, BMP, ... | `image` crate | 2D, grey (1 channel) or RGB (3); alpha dropped, palette expanded |
//! | TIFF (one or more pages) | `tiff` crate | one page per z slice, spacing from ImageJ tags |
//! | NIfTI-1 `.nii`, `.nii.gz` | [`nifti`] | 3D volume, spacing from `pixdim`, `scl_slope` applied |
//!
//! Values stay in the file's own range (0–255, 0–65535, raw floats). Before any pixel buffer is
//! allocated the loader estimates what the image *and the graph built on it* will need
//! ([`memory_needed`]) and refuses, naming both numbers, when that exceeds the available memory.
//!
//! [`load_seeds`] reads user seeds in every common convention (palette scribbles, trimaps, OpenCV
//! grabCut masks, coloured scribbles, label volumes); [`rect_seeds`] turns a GrabCut rectangle into
//! seeds. [`save_mask`] and [`save_volume`] write results as PNG, TIFF or NIfTI.
//!
//! ```no_run
//! use segcut::io::{load_image, load_seeds, save_mask, SeedOptions};
//! use std::path::Path;
//!
//! let image = load_image(Path::new("photo.jpg"))?;
//! let seeds = load_seeds(Path::new("scribbles.png"), image.dims, &SeedOptions::default())?;
//! let [_unknown, fg, bg, ..] = seeds.counts();
//! let _line = format!("{fg} foreground and {bg} background seeds");
//! let mask: Vec<bool> = vec![false; image.num_pixels()];
//! save_mask(Path::new("mask.png"), &mask, image.dims, None)?;
//! # Ok::<(), segcut::Error>(())
//! ```

pub mod dimacs;
mod disparity;
mod escape;
mod export;
mod image;
mod mask;
mod memory;
pub mod nifti;
mod output;
pub mod overlay;
mod probability;
mod raster;
mod seeds;
mod tiff_stack;

pub use disparity::{
    decode_disparity, encode_disparity, load_disparity, save_disparity, DisparityFormat,
};
pub use escape::escape_text;
pub use export::{
    contours, encode_contours, encode_mask_as, save_contours, save_mask_as, Contour, MaskFormat,
};
pub use mask::{check_mask_path, encode_mask, encode_volume, save_mask, save_volume};
pub use nifti::{encode_nifti, save_nifti, NiftiOptions, NiftiType, Orientation};
pub use probability::load_probability;
pub use seeds::{
    load_seeds, rect_seeds, rect_with_seeds, seeds_from_values, Rect, SeedFormat, SeedOptions,
    DEFAULT_BG_COLOR, DEFAULT_FG_COLOR,
};
pub use tiff_stack::{encode_tiff, save_tiff};

use crate::graph::Connectivity;
use crate::{Error, Result};
pub use image::{Image, ImageFormat, ImageMeta, Seed, Seeds};
pub(crate) use memory::advise_huge_pages;
use memory::bytes_text;
pub use memory::{
    budget_from, check_budget, memory_budget, release_freed_memory, try_reserve, try_vec, Budget,
};
pub use output::{
    commit_all, output_format, stage, write_all_atomic, write_atomic, AtomicFile, Format,
    OutputPlan,
};
use std::io::Read;
use std::path::Path;

/// Options for [`load_image_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Refuse inputs whose estimated need ([`memory_needed`]) exceeds this many bytes. `None`:
    /// the process's [`memory_budget`] (available memory, `ulimit -v`, the cgroup's limit; no
    /// check where none can be read).
    pub memory_limit: Option<u64>,
    /// The connectivity of the graph the caller will build, for the estimate. `None`: 8 in 2D,
    /// 6 in 3D (the `segment` defaults).
    pub connectivity: Option<Connectivity>,
}

/// Bytes per pixel for each value per pixel: the decoded `f32` image and its copy in the models'
/// colour space.
pub const BYTES_PER_CHANNEL: u64 = 12;
/// Bytes per pixel for each neighbour direction of the graph: the grid's capacity and the
/// solver's arc (BK keeps a residual, a sister and a head per arc).
pub const BYTES_PER_DIRECTION: u64 = 16;
/// Bytes per pixel of a segmentation besides those: terminal capacities, the solver's node,
/// seeds, the mask and the cut.
pub const BYTES_PER_NODE: u64 = 40;

/// Bytes a segmentation of an image of `dims` with `channels` values per pixel needs, with a
/// graph of `neighbours` directions (0: the image alone). The constants were measured as the
/// peak resident memory of `segcut` on the CPU path (BK), per pixel, on 1 and 4 Mpx images with
/// 1 and 3 channels at 4 and 8 neighbours and on 64³ and 128³ volumes at 6 and 26: 111, 175,
/// 132 and 196 bytes (2D), 145 and 460 (3D), which `40 + 16·neighbours + 12·channels` covers
/// within 5 %. Saturates instead of overflowing.
///
/// ```
/// use segcut::io::{memory_needed, BYTES_PER_CHANNEL, BYTES_PER_DIRECTION, BYTES_PER_NODE};
/// let per_pixel = BYTES_PER_NODE + 4 * BYTES_PER_DIRECTION + 3 * BYTES_PER_CHANNEL;
/// assert_eq!(memory_needed([100, 100, 1], 3, 4), 10_000 * per_pixel);
/// assert_eq!(memory_needed([100, 100, 1], 3, 0), 10_000 * 3 * BYTES_PER_CHANNEL);
/// ```
pub fn memory_needed(dims: [usize; 3], channels: usize, neighbours: usize) -> u64 {
    let pixels = dims
        .iter()
        .fold(1u64, |acc, &d| acc.saturating_mul(d as u64));
    let graph = if neighbours > 0 {
        BYTES_PER_NODE + neighbours as u64 * BYTES_PER_DIRECTION
    } else {
        0
    };
    pixels.saturating_mul(channels as u64 * BYTES_PER_CHANNEL + graph)
}

/// Loads an image or volume with default [`LoadOptions`]; see [`load_image_with`].
pub fn load_image(path: &Path) -> Result<Image> {
    load_image_with(path, &LoadOptions::default())
}

/// Loads a 2D image (formats of the `image` crate), a multi-page TIFF volume or a NIfTI-1 volume
/// (`.nii`, `.nii.gz`), chosen by the file's first bytes and then by its extension.
///
/// Grey stays 1 channel, colour becomes 3 (alpha dropped, palettes expanded); values keep the
/// file's range. Errors name the file (and the TIFF page or NIfTI field at fault); inputs that
/// would not fit in memory together with their graph are refused before allocation.
pub fn load_image_with(path: &Path, opts: &LoadOptions) -> Result<Image> {
    match sniff(path)? {
        Kind::Tiff => tiff_stack::load(path, opts),
        Kind::Nifti { gz } => nifti::load(path, gz, opts),
        Kind::Raster => raster::load(path, opts),
    }
}

/// What a file holds, by its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tiff,
    Nifti { gz: bool },
    Raster,
}

/// Decides the reader from the first bytes; the extension only settles files whose bytes say
/// nothing we know (the `image` crate then guesses from content itself).
pub(crate) fn sniff(path: &Path) -> Result<Kind> {
    let mut head = Vec::with_capacity(348);
    std::fs::File::open(path)
        .and_then(|f| f.take(348).read_to_end(&mut head))
        .map_err(|e| Error::io(path, e))?;
    let tiff_magic: [&[u8]; 4] = [b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"];
    if tiff_magic.iter().any(|m| head.starts_with(m)) {
        return Ok(Kind::Tiff);
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        // Only NIfTI arrives gzipped here; the NIfTI reader says so if the content is not.
        return Ok(Kind::Nifti { gz: true });
    }
    if head.len() >= 4 {
        let w = [head[0], head[1], head[2], head[3]];
        if i32::from_le_bytes(w) == 348 || i32::from_be_bytes(w) == 348 {
            return Ok(Kind::Nifti { gz: false });
        }
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".nii") {
        return Ok(Kind::Nifti { gz: false });
    }
    if name.ends_with(".nii.gz") {
        return Ok(Kind::Nifti { gz: true });
    }
    if name.ends_with(".tif") || name.ends_with(".tiff") {
        return Ok(Kind::Tiff);
    }
    Ok(Kind::Raster)
}

/// The neighbour count the memory estimate assumes.
fn neighbours(opts: &LoadOptions, dims: [usize; 3]) -> usize {
    match opts.connectivity {
        Some(c) => c.degree(),
        None if dims[2] > 1 => 6,
        None => 8,
    }
}

/// Refuses an input of `dims` × `channels` whose image, decode buffer (`extra` bytes) and graph
/// would not fit; called by every reader before it allocates pixels.
pub(crate) fn check_memory(
    path: &Path,
    dims: [usize; 3],
    channels: usize,
    extra: u64,
    graph: bool,
    opts: &LoadOptions,
) -> Result<()> {
    let file = path.display().to_string();
    if dims.contains(&0) {
        return Err(Error::Input {
            file,
            msg: format!("empty image ({})", dims_text(dims)),
        });
    }
    let n = if graph { neighbours(opts, dims) } else { 0 };
    let image = memory_needed(dims, channels, 0);
    let graph_bytes = memory_needed(dims, channels, n).saturating_sub(image);
    let need = image.saturating_add(graph_bytes).saturating_add(extra);
    let budget = match opts.memory_limit {
        Some(bytes) => memory::Budget {
            bytes,
            source: "the memory limit",
        },
        None => match memory::memory_budget() {
            Some(b) => b,
            None => return Ok(()),
        },
    };
    if need > budget.bytes {
        let graph_text = if graph {
            format!(
                " + graph and solver {} ({n} neighbours)",
                bytes_text(graph_bytes)
            )
        } else {
            String::new()
        };
        return Err(Error::Input {
            file,
            msg: format!(
                "{} × {channels} channel(s) needs about {} (pixels {}{graph_text}{}), more than \
                 the {} of {}; crop or downsample the input, or use a smaller connectivity",
                dims_text(dims),
                bytes_text(need),
                bytes_text(image),
                if extra > 0 {
                    format!(" + decode buffer {}", bytes_text(extra))
                } else {
                    String::new()
                },
                bytes_text(budget.bytes),
                budget.source,
            ),
        });
    }
    Ok(())
}

/// An empty `Vec` with room for `n` values, or an error naming the file where the allocation
/// fails (a header may promise more than any machine holds, and the memory check is skipped where
/// `/proc/meminfo` cannot be read).
pub(crate) fn alloc<T>(path: &Path, n: Option<usize>) -> Result<Vec<T>> {
    let mut v = Vec::new();
    match n {
        Some(n) if v.try_reserve_exact(n).is_ok() => Ok(v),
        _ => Err(input_err(
            path,
            format!(
                "cannot allocate {} values for the pixels",
                n.map_or("too many".to_string(), |n| n.to_string())
            ),
        )),
    }
}

/// `W×H` or `W×H×D`.
pub(crate) fn dims_text(dims: [usize; 3]) -> String {
    if dims[2] > 1 {
        format!("{}×{}×{}", dims[0], dims[1], dims[2])
    } else {
        format!("{}×{}", dims[0], dims[1])
    }
}

/// A pixel index as `(x, y)` or `(x, y, z)`.
pub(crate) fn pixel_text(dims: [usize; 3], i: usize) -> String {
    let (x, y, z) = (
        i % dims[0],
        (i / dims[0]) % dims[1],
        i / (dims[0] * dims[1]),
    );
    if dims[2] > 1 {
        format!("({x}, {y}, {z})")
    } else {
        format!("({x}, {y})")
    }
}

/// An [`Error::Input`] about `path`.
pub(crate) fn input_err(path: &Path, msg: impl Into<String>) -> Error {
    Error::Input {
        file: path.display().to_string(),
        msg: msg.into(),
    }
}
