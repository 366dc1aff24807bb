//! The launchers of `kernels/seg_model.cu` (driven by `src/segment/gpu_model.rs`).
//!
//! Both kernels take the pixels in contiguous chunks of `chunk` pixels (a multiple of
//! [`BLOCK`](super::BLOCK)), one block per chunk: `chunks` blocks with `chunks · chunk ≥ n`.
//! Buffers: `labels` `n` bytes, `img` `n·ch` values, `counts` and `first` two per block.

use cudarc::driver::{CudaSlice, CudaViewMut};

use super::seg_energy::strided;
use super::{blocks, kernel_file};
use crate::cuda::Gpu;
use crate::Result;

kernel_file! {
    /// The kernels of `kernels/seg_model.cu`.
    pub(crate) struct SegModel for "seg_model" {
        /// Each chunk's count of foreground and background pixels.
        ///
        /// # Safety
        /// `labels` has `n` entries, `counts` `2·chunks`; `chunks · chunk ≥ n`.
        fn count = "model_count" [chunks: u32](
            n: u32,
            labels: &CudaSlice<u8>,
            fg_set: u32,
            bg_set: u32,
            chunk: u32,
            counts: &mut CudaSlice<u32>,
        ) => blocks(chunks);

        /// Every `step`-th pixel of each class, in pixel order, into `out_fg` / `out_bg` (two
        /// disjoint views, usually of one buffer: the foreground's samples, then the
        /// background's, so that one copy brings both to the host).
        ///
        /// # Safety
        /// `labels` has `n` entries, `img` `n·ch`, `first` `2·chunks` (the exclusive prefix
        /// sums of [`SegModel::count`]'s counts, same `chunk`), `out_fg` and `out_bg` `ch` values
        /// per sample (`⌈total / step⌉` samples of each class) and not overlapping;
        /// `chunks · chunk ≥ n`; steps ≥ 1.
        fn gather = "model_gather" [chunks: u32](
            n: u32,
            ch: u32,
            img: &CudaSlice<f32>,
            labels: &CudaSlice<u8>,
            fg_set: u32,
            bg_set: u32,
            chunk: u32,
            first: &CudaSlice<u32>,
            step_fg: u32,
            step_bg: u32,
            out_fg: &mut CudaViewMut<'_, f32>,
            out_bg: &mut CudaViewMut<'_, f32>,
        ) => blocks(chunks);

        /// The nearer-background first fit's labels: `out[v]` is `seeds[v]`, or
        /// [`NEARER_BACKGROUND`] where `seeds[v]` is 0 (unlabelled) and `prior[v] > margin`.
        ///
        /// # Safety
        /// `seeds`, `prior` and `out` have `n` entries.
        fn nearer_labels = "model_nearer_labels"(
            n: u32,
            seeds: &CudaSlice<u8>,
            prior: &CudaSlice<f32>,
            margin: f32,
            out: &mut CudaSlice<u8>,
        ) => strided(n as u64);
    }
}

/// The label [`SegModel::nearer_labels`] gives an unlabelled pixel the background strokes reach
/// first by more than the margin (after the seed codes 0..=4).
pub(crate) const NEARER_BACKGROUND: u8 = 5;

impl SegModel {
    /// The kernels, for this device.
    pub(crate) fn load(gpu: &Gpu) -> Result<Self> {
        Self::load_with(gpu, str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::NEARER_BACKGROUND;
    use crate::io::Seed;

    /// The nearer-background label is none of the seed codes (so the seeds' classes keep their
    /// bits), and a bit of the 32-bit class sets the kernels take.
    #[test]
    fn the_nearer_label_is_past_the_seed_codes() {
        for s in [
            Seed::Unknown,
            Seed::Foreground,
            Seed::Background,
            Seed::ProbablyForeground,
            Seed::ProbablyBackground,
        ] {
            assert!((s as u8) < NEARER_BACKGROUND);
        }
        const { assert!(NEARER_BACKGROUND < 32) };
    }
}
