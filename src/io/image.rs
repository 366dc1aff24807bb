//! The images, volumes and seeds that every application reads: what [`load_image`](super::load_image)
//! and [`load_seeds`](super::load_seeds) return.

/// An image (depth 1) or a volume, channels interleaved per pixel, as `f32` in the file's own
/// value range (0–255 for 8-bit, 0–65535 for 16-bit, raw values for float volumes).
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// `[width, height, depth]`; depth is 1 for a 2D image.
    pub dims: [usize; 3],
    /// Values per pixel: 1 (grey), 3 (RGB); alpha is dropped on load.
    pub channels: usize,
    /// `dims[0]·dims[1]·dims[2]·channels` values, pixel `x + W·(y + H·z)` at `channels·index`.
    pub data: Vec<f32>,
    /// Voxel spacing `[sx, sy, sz]` in the file's units (1, 1, 1 for ordinary images).
    pub spacing: [f64; 3],
}

impl Image {
    /// Number of pixels / voxels.
    pub fn num_pixels(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether this is a volume (depth > 1).
    pub fn is_volume(&self) -> bool {
        self.dims[2] > 1
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
        let mut c = [0; 5];
        for &l in &self.labels {
            c[l as usize] += 1;
        }
        c
    }
}
