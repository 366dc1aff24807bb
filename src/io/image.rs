//! The images, volumes and seeds that every application reads: what [`load_image`](super::load_image)
//! and [`load_seeds`](super::load_seeds) return.

/// An image (depth 1) or a volume, channels interleaved per pixel, as `f32` in the file's own
/// value range (0–255 for 8-bit, 0–65535 for 16-bit, raw values for float volumes).
///
/// Two images are equal when their sizes, pixels and spacing are: [`meta`](Image::meta) says
/// where an image came from, not what it is.
#[derive(Clone, Debug)]
pub struct Image {
    /// `[width, height, depth]`; depth is 1 for a 2D image.
    pub dims: [usize; 3],
    /// Values per pixel: 1 (grey), 3 (RGB); alpha is dropped on load.
    pub channels: usize,
    /// `dims[0]·dims[1]·dims[2]·channels` values, pixel `x + W·(y + H·z)` at `channels·index`.
    pub data: Vec<f32>,
    /// Voxel spacing `[sx, sy, sz]` in the file's units (1, 1, 1 for ordinary images).
    pub spacing: [f64; 3],
    /// What the file said beyond the pixels, kept so that results are written like it.
    pub meta: ImageMeta,
}

impl PartialEq for Image {
    fn eq(&self, other: &Self) -> bool {
        self.dims == other.dims
            && self.channels == other.channels
            && self.spacing == other.spacing
            && self.data == other.data
    }
}

/// What a loaded file says beyond its pixels and spacing: enough to write a result "like" it
/// without reading it again (see [`save_mask`](super::save_mask)).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImageMeta {
    /// The format it was read from (`None` for an image built in memory).
    pub format: Option<ImageFormat>,
    /// The length unit of the spacing, when the file names one (ImageJ TIFF `unit=`).
    pub unit: Option<String>,
    /// A NIfTI file's orientation fields, copied into NIfTI results so that viewers overlay
    /// them on the input.
    pub nifti: Option<super::nifti::Orientation>,
}

/// The file formats images and volumes are read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG, JPEG, BMP, ... through the `image` crate.
    Raster,
    /// TIFF, one page per z slice.
    Tiff,
    /// NIfTI-1 (`.nii`, `.nii.gz`).
    Nifti,
}

impl Image {
    /// An image built in memory: spacing 1, no file metadata.
    ///
    /// ```
    /// let img = segcut::io::Image::new([2, 1, 1], 1, vec![0.0, 255.0]);
    /// assert_eq!(img.num_pixels(), 2);
    /// ```
    pub fn new(dims: [usize; 3], channels: usize, data: Vec<f32>) -> Self {
        Image {
            dims,
            channels,
            data,
            spacing: [1.0; 3],
            meta: ImageMeta::default(),
        }
    }

    /// Number of pixels / voxels.
    pub fn num_pixels(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether this is a volume (depth > 1).
    pub fn is_volume(&self) -> bool {
        self.dims[2] > 1
    }

    /// Checks that `data` matches `dims` and `channels` (an image built by a caller may not);
    /// `path` names the file being written in the error.
    pub(crate) fn check_shape(&self, path: &std::path::Path) -> crate::Result<()> {
        let n = self
            .dims
            .iter()
            .try_fold(self.channels, |a, &d| a.checked_mul(d));
        if n != Some(self.data.len()) || self.data.is_empty() {
            return Err(super::input_err(
                path,
                format!(
                    "cannot write: image of {} × {} channel(s) has {} values",
                    super::dims_text(self.dims),
                    self.channels,
                    self.data.len()
                ),
            ));
        }
        Ok(())
    }

    /// The values of pixel `i`.
    pub fn pixel(&self, i: usize) -> &[f32] {
        &self.data[i * self.channels..(i + 1) * self.channels]
    }
}

/// What a seed says about one pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Seed {
    /// No information.
    #[default]
    Unknown = 0,
    /// Hard foreground constraint.
    Foreground = 1,
    /// Hard background constraint.
    Background = 2,
    /// Soft: used to fit the foreground model, no constraint (OpenCV's GC_PR_FGD).
    ProbablyForeground = 3,
    /// Soft: used to fit the background model, no constraint (OpenCV's GC_PR_BGD).
    ProbablyBackground = 4,
}

/// One [`Seed`] per pixel of an [`Image`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// Same as the image's dims.
    pub dims: [usize; 3],
    /// One label per pixel, in the image's pixel order.
    pub labels: Vec<Seed>,
}

impl Seeds {
    /// All pixels [`Seed::Unknown`].
    pub fn unknown(dims: [usize; 3]) -> Self {
        Seeds {
            dims,
            labels: vec![Seed::Unknown; dims.iter().product()],
        }
    }

    /// How many pixels carry each label: `[unknown, fg, bg, probably fg, probably bg]`.
    pub fn counts(&self) -> [usize; 5] {
        use rayon::prelude::*;
        // In chunks on every core: a 4K photo's seeds are 10 M labels.
        self.labels
            .par_chunks(1 << 16)
            .map(|chunk| {
                let mut c = [0; 5];
                for &l in chunk {
                    c[l as usize] += 1;
                }
                c
            })
            .reduce(
                || [0; 5],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    a
                },
            )
    }
}
