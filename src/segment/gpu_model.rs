//! The colour models fitted from samples gathered on the device: each class's pixels of the
//! working image already there (by the seeds it was built with, or by a mask), every `step`-th
//! of them in pixel order with the step of the host's gather (`⌈count / MAX_FIT_SAMPLES⌉` for a
//! mixture, 1 for a histogram), so the host receives exactly the samples its own gather would
//! collect, and fits them with the same code ([`Model::fit`]). The kernels are in
//! `kernels/seg_model.cu`, launched through `src/cuda/launch/seg_model.rs`.
//!
//! What moves to the device is the pass over every pixel (classifying it, counting, picking and
//! converting the samples), the part of a fit that grows with the image; the fit itself works on
//! at most [`MAX_FIT_SAMPLES`] samples. **Same parameters as the host:** the samples are the
//! working image's values, which equal the host's conversion (see [`super::gpu`]: the Lab
//! conversion's cube root is correctly rounded on both), so the models are the same bits; where
//! the device's Lab differs in the last bit of a value, the parameters move by as little
//! (`tests/gpu_segment.rs` checks).

use super::gpu::GpuEnergy;
use super::model::{fit_pair, Model, ModelKind, ModelParams, WarmPair, MAX_FIT_SAMPLES};
use crate::cuda::launch::seg_energy::MAX_BLOCKS;
use crate::cuda::launch::seg_model::{SegModel, NEARER_BACKGROUND};
use crate::cuda::{self, BLOCK};
use crate::io::Seed;
use crate::{Error, Result};

/// Which pixels each class's model is fitted on.
#[derive(Clone, Copy, Debug)]
pub enum FitLabels<'a> {
    /// The seeds the energy was built with: hard and soft foreground seeds for the foreground,
    /// hard and soft background seeds for the background (the first round's models, and the
    /// blend partner of the later rounds').
    Seeds,
    /// A mask (`true`: foreground), one entry per pixel: the refit rounds'.
    Mask(&'a [bool]),
    /// The nearer-background first fit's classes (pipeline.rs `nearer_background`), made on
    /// the device from the seeds and the prior the graph holds (`δ_geo` at the prior's weight):
    /// the foreground seeds; the background seeds and the unlabelled pixels with
    /// `δ_geo > margin`. An [`Error::Unsupported`] without a prior on the device.
    NearerBackground {
        /// The margin `t·γ` (`f32`, as the host compares).
        margin: f32,
    },
}

/// The bit of each label value in a class's set.
const fn bit(label: u8) -> u32 {
    1 << label
}

impl GpuEnergy {
    /// Fits the foreground and background models of `kind` on the pixels `labels` selects, with
    /// the samples gathered on the device (the module docs). The same models as the pipeline's
    /// host gather and [`Model::fit`] give.
    ///
    /// Errors: [`Model::fit`]'s (a class without samples); a mask of the wrong length;
    /// [`Error::Unsupported`] when the device cannot (out of memory): the caller may then gather
    /// on the host.
    pub fn fit(
        &mut self,
        kind: ModelKind,
        params: &ModelParams,
        labels: FitLabels<'_>,
        warm: WarmPair<'_>,
    ) -> Result<(Model, Model)> {
        let (fg, bg) = self.gather_samples(kind, labels)?;
        fit_pair(kind, params, &fg, &bg, warm)
    }

    /// The background model of the nearer-background first fit ([`FitLabels::NearerBackground`]),
    /// the host's `nearer_background` model (without its enclosure and coverage checks, the
    /// caller's): the same samples, gathered on the device, with the prior left there.
    pub fn fit_nearer_background(
        &mut self,
        kind: ModelKind,
        params: &ModelParams,
        margin: f32,
    ) -> Result<Model> {
        let (_, bg) = self.gather_samples(kind, FitLabels::NearerBackground { margin })?;
        Model::fit(kind, &bg, params, "background")
    }

    /// The samples of both classes (`channels` values each), as the host's gather picks them.
    pub fn gather_samples(
        &mut self,
        kind: ModelKind,
        labels: FitLabels<'_>,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let n = self.shape.num_nodes();
        let gpu = self.device.gpu()?;
        if self.model_kernels.is_none() {
            self.model_kernels = Some(SegModel::load(gpu)?);
        }
        let Some(k) = self.model_kernels.as_ref() else {
            return Err(Error::Unsupported(
                "the model kernels are not loaded".into(),
            ));
        };
        let s = &self.stream.clone();
        let pool = &mut self.pool;
        let seed_fg = bit(Seed::Foreground as u8) | bit(Seed::ProbablyForeground as u8);
        let seed_bg = bit(Seed::Background as u8) | bit(Seed::ProbablyBackground as u8);
        // Labels made for this fit (kept under their name), and the classes' label bits.
        let (mask_dev, fg_set, bg_set) = match labels {
            FitLabels::Seeds => (None, seed_fg, seed_bg),
            FitLabels::Mask(mask) => {
                if mask.len() != n {
                    return Err(Error::Graph(format!(
                        "the mask has {} entries but the image has {n} pixels",
                        mask.len()
                    )));
                }
                // SAFETY: bool is one byte, 0 or 1.
                let bytes: &[u8] =
                    unsafe { std::slice::from_raw_parts(mask.as_ptr() as *const u8, n) };
                (
                    Some(("mask", pool.take_upload("mask", bytes)?)),
                    bit(1),
                    bit(0),
                )
            }
            FitLabels::NearerBackground { margin } => {
                let Some(prior) = self.prior.as_ref() else {
                    return Err(Error::Unsupported(
                        "no prior on the device for the nearer-background fit".into(),
                    ));
                };
                // The refit rounds' mask buffer (bytes, one per pixel): whether or not an
                // image's first fit takes this path, the next image of its size allocates
                // nothing for it.
                let mut out = pool.take::<u8>("mask", n)?;
                // SAFETY: seeds, prior (the graph's, one per pixel) and out have n entries.
                unsafe { k.nearer_labels(s, n as u32, &self.seeds, prior, margin, &mut out)? };
                (
                    Some(("mask", out)),
                    seed_fg,
                    seed_bg | bit(NEARER_BACKGROUND),
                )
            }
        };
        let labels_dev = match &mask_dev {
            None => &self.seeds,
            Some((_, m)) => m,
        };
        // Contiguous chunks of whole tiles, one block each.
        let tiles = n.div_ceil(BLOCK as usize).max(1);
        let chunk = tiles.div_ceil(MAX_BLOCKS as usize) * BLOCK as usize;
        let chunks = n.div_ceil(chunk).max(1);
        let (nn, chunk32, chunks32) = (n as u32, chunk as u32, chunks as u32);
        let mut counts = pool.take_zeroed::<u32>("sample counts", 2 * chunks)?;
        // SAFETY: labels has n entries, counts 2·chunks, chunks·chunk ≥ n.
        unsafe {
            k.count(
                s,
                chunks32,
                nn,
                labels_dev,
                fg_set,
                bg_set,
                chunk32,
                &mut counts,
            )?
        };
        let counts_dev = counts;
        let counts = cuda::download(s, &counts_dev, "sample counts")?;
        pool.keep("sample counts", counts_dev);
        let mut first = vec![0u32; 2 * chunks];
        let mut total = [0usize; 2];
        for (b, c) in counts.chunks_exact(2).enumerate() {
            for class in 0..2 {
                first[2 * b + class] = total[class] as u32;
                total[class] += c[class] as usize;
            }
        }
        // The host gather's step (pipeline.rs `gather`).
        let step = total.map(|t| match kind {
            ModelKind::Gmm { .. } => t.div_ceil(MAX_FIT_SAMPLES).max(1),
            ModelKind::Histogram { .. } => 1,
        });
        let ch = self.channels;
        let picked = [0, 1].map(|c| total[c].div_ceil(step[c]));
        let first_dev = pool.take_upload("sample ordinals", &first)?;
        // At the most a class can pick (a mixture's cap, or every pixel), so every round of
        // this image size reuses it: both classes' samples in one buffer, the foreground's
        // first and the background's right after them, so that one copy (one host wait) brings
        // both back.
        let most = match kind {
            ModelKind::Gmm { .. } => n.min(MAX_FIT_SAMPLES),
            ModelKind::Histogram { .. } => n,
        } * ch;
        let mut out = pool.take::<f32>("samples", 2 * most)?;
        let (len_fg, len_bg) = (picked[0] * ch, picked[1] * ch);
        {
            let (mut out_fg, mut out_bg) = out.split_at_mut(len_fg);
            // SAFETY: labels has n entries, work n·ch, first 2·chunks (the prefix sums of the
            // counts above, same chunk); out_fg holds exactly the picked foreground samples' ch
            // values each, out_bg (the rest, disjoint) at least the background's
            // (len_fg + len_bg ≤ 2·most); steps ≥ 1.
            unsafe {
                k.gather(
                    s,
                    chunks32,
                    nn,
                    ch as u32,
                    &self.work,
                    labels_dev,
                    fg_set,
                    bg_set,
                    chunk32,
                    &first_dev,
                    step[0] as u32,
                    step[1] as u32,
                    &mut out_fg,
                    &mut out_bg,
                )?
            };
        }
        let mut both = vec![0.0f32; len_fg + len_bg];
        if both.is_empty() {
            // Nothing to bring back (the fit will say which class is empty): still wait, the
            // uploads above read host memory.
            cuda::sync(s)?;
        } else {
            cuda::copy_to_host(s, &out.slice(..both.len()), &mut both, "samples")?;
        }
        let bg = both.split_off(len_fg);
        let fg = both;
        pool.keep("samples", out);
        pool.keep("sample ordinals", first_dev);
        if let Some((what, m)) = mask_dev {
            pool.keep(what, m);
        }
        Ok((fg, bg))
    }
}
