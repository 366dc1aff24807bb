//! The launchers of `kernels/seg_model.cu` (driven by `src/segment/gpu_model.rs`).
//!
//! Both kernels take the pixels in contiguous chunks of `chunk` pixels (a multiple of
//! [`BLOCK`](super::BLOCK)), one block per chunk: `chunks` blocks with `chunks · chunk ≥ n`.
//! Buffers: `labels` `n` bytes, `img` `n·ch` values, `counts` and `first` two per block.

use cudarc::driver::{CudaSlice, CudaViewMut, LaunchConfig};

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

        /// A Gaussian mixture fitted on each of `classes` sample sets, one block each (the
        /// whole fit of `Gmm::fit`, or `Gmm::refit` from `start`, in one launch).
        /// `desc[3b..3b+3]` = block `b`'s first sample (in samples of `ch` values), its sample
        /// count and its k-means++ first index; `draws` [`FIT_DRAWS`] k-means++ uniforms per
        /// block; `start` (optional) a warm start per block in the output's layout; `out`
        /// [`FIT_OUT`] values per block (see `kernels/seg_model.cu`, `model_fit`).
        ///
        /// # Safety
        /// `ch` is 1 or 3, `k` 1 to [`FIT_MAX_K`]; every block's samples lie in `samples`, its
        /// count is 1 to [`FIT_MAX_N`] and its first index below the count; `draws` holds
        /// `classes · FIT_DRAWS` values, `start` (if any) `classes · FIT_OUT` with at most
        /// [`FIT_MAX_K`] components each, `scratch` `classes · FIT_SCRATCH`, `out`
        /// `classes · FIT_OUT`.
        fn fit = "model_fit" [classes: u32](
            ch: u32,
            k: u32,
            floor: f64,
            d_ln_2pi: f64,
            kmeans_steps: u32,
            em_steps: u32,
            samples: &CudaSlice<f32>,
            desc: &CudaSlice<u32>,
            draws: &CudaSlice<f64>,
            start: Option<&CudaSlice<f64>>,
            warm_steps: u32,
            scratch: &mut CudaSlice<f64>,
            out: &mut CudaSlice<f64>,
        ) => fit_blocks(classes);
    }
}

/// Threads per block of the device fit (`FIT_THREADS`).
pub(crate) const FIT_THREADS: u32 = 1024;

/// The fit's launch: one block of [`FIT_THREADS`] per class.
fn fit_blocks(classes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (classes.max(1), 1, 1),
        block_dim: (FIT_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Most mixture components the device fit takes (`FIT_MAX_K` in `kernels/seg_model.cu`).
pub(crate) const FIT_MAX_K: usize = 16;
/// Most samples per class the device fit takes (`FIT_MAX_N`): the fits' sample cap.
pub(crate) const FIT_MAX_N: usize = 12_000;
/// Values per component in the fit's output and warm start (`FIT_COMP`).
pub(crate) const FIT_COMP: usize = 13;
/// Values per block of the fit's output (`FIT_OUT`): the count, then the components.
pub(crate) const FIT_OUT: usize = 1 + FIT_MAX_K * FIT_COMP;
/// Scratch values per block of the fit (`FIT_SCRATCH`).
pub(crate) const FIT_SCRATCH: usize = FIT_MAX_N * (FIT_MAX_K + 2);
/// k-means++ uniforms per block of the fit: one per centre after the first.
pub(crate) const FIT_DRAWS: usize = FIT_MAX_K - 1;

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
    use super::{
        FIT_COMP, FIT_MAX_K, FIT_MAX_N, FIT_OUT, FIT_SCRATCH, FIT_THREADS, NEARER_BACKGROUND,
    };
    use crate::io::Seed;
    use crate::segment::model::{MAX_FIT_SAMPLES, MAX_GMM_COMPONENTS};

    /// The fit's sizes here are the kernel file's `#define`s, and the sample cap the host's.
    #[test]
    fn fit_sizes_match_the_kernel_file() {
        let src = include_str!("../../../kernels/seg_model.cu");
        let define = |name: &str| -> usize {
            let line = src
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("no #define {name}"));
            let v = line[format!("#define {name} ").len()..].trim();
            v.parse().unwrap_or_else(|_| panic!("{name} is {v}"))
        };
        assert_eq!(define("FIT_MAX_K"), FIT_MAX_K);
        assert_eq!(define("FIT_MAX_N"), FIT_MAX_N);
        assert_eq!(define("FIT_COMP"), FIT_COMP);
        assert_eq!(define("FIT_THREADS"), FIT_THREADS as usize);
        assert!(src.contains("#define FIT_OUT (1 + FIT_MAX_K * FIT_COMP)"));
        assert!(src.contains("#define FIT_SCRATCH (FIT_MAX_N * (FIT_MAX_K + 2))"));
        assert_eq!(FIT_OUT, 1 + FIT_MAX_K * FIT_COMP);
        assert_eq!(FIT_SCRATCH, FIT_MAX_N * (FIT_MAX_K + 2));
        assert_eq!(FIT_MAX_N, MAX_FIT_SAMPLES);
        const { assert!(FIT_MAX_K <= MAX_GMM_COMPONENTS) };
        // [log_coef, mean (3 slots), L⁻¹ 3×3].
        assert_eq!(FIT_COMP, 1 + 3 + 9);
    }

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
