//! The colour models fitted on the device: each class's pixels of the working image already
//! there (by the seeds it was built with, or by a mask), every `step`-th of them in pixel order
//! with the step of the host's gather (`⌈count / MAX_FIT_SAMPLES⌉` for a mixture, 1 for a
//! histogram), so the samples are exactly those the host's own gather would collect; then the
//! mixture fit itself, both classes in one launch (`model_fit`, one block per class), and only
//! the parameters come back. The kernels are in `kernels/seg_model.cu`, launched through
//! `src/cuda/launch/seg_model.rs`.
//!
//! **Parameters within rounding of the host's.** The device fit runs [`Model::fit`]'s steps
//! (k-means++ from the host's own random draws, Lloyd, the hard assignment's moments, EM) with
//! the host's operations in the host's order, except two things: the per-sample terms are summed
//! in another fixed order (per thread, then a tree), and `exp`/`ln` are the device's. So the
//! parameters agree with the host fit's to rounding, not bit for bit (`tests/gpu_model.rs`
//! states the tolerance); the masks of a device run and a host run can then differ where a
//! t-link rounds the other way (`tests/gpu_segment.rs` bounds that). Fits the device does not
//! take (histograms, more than 16 components, other than 1 or 3 channels) come to the host as
//! samples and are fitted there, as before.

use super::gpu::GpuEnergy;
use super::model::{
    d_ln_2pi, fit_floor, fit_pair, kmeans_draws, Gmm, Model, ModelKind, ModelParams, WarmPair,
    EM_STEPS, KMEANS_STEPS, MAX_FIT_SAMPLES,
};
use crate::cuda::launch::seg_energy::MAX_BLOCKS;
use crate::cuda::launch::seg_model::{
    SegModel, FIT_COMP, FIT_DRAWS, FIT_MAX_K, FIT_MAX_N, FIT_OUT, FIT_SCRATCH, NEARER_BACKGROUND,
};
use crate::cuda::{self, BLOCK};
use crate::io::Seed;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;

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
    /// the samples gathered on the device and mixtures fitted there (the module docs): the
    /// models the pipeline's host gather and [`Model::fit`] give, within rounding.
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
        let started = self.fit_start(kind, params, labels, warm)?;
        self.fit_finish(kind, params, started, warm)
    }

    /// [`GpuEnergy::fit`] begun: the samples gathered and, where the device fit takes the
    /// model, the fit launched without waiting for it (a pack starts every part's fit before
    /// reading any back); [`GpuEnergy::fit_finish`] reads the models back.
    pub fn fit_start(
        &mut self,
        kind: ModelKind,
        params: &ModelParams,
        labels: FitLabels<'_>,
        warm: WarmPair<'_>,
    ) -> Result<FitStarted> {
        let starts = match device_fit_starts(kind, params, warm) {
            Some(s) => s,
            None => {
                let (fg, bg) = self.gather_samples(kind, labels)?;
                return Ok(FitStarted::Samples(fg, bg));
            }
        };
        let len = self.gather_on_device(kind, labels)?;
        let d = self.launch_fit(kind, params, len, [true, true], starts)?;
        Ok(FitStarted::Device(d))
    }

    /// The models of a fit [`GpuEnergy::fit_start`] began (fitted on the host where it
    /// brought samples back; `warm` is the start it was given).
    pub fn fit_finish(
        &mut self,
        kind: ModelKind,
        params: &ModelParams,
        started: FitStarted,
        warm: WarmPair<'_>,
    ) -> Result<(Model, Model)> {
        match started {
            FitStarted::Samples(fg, bg) => fit_pair(kind, params, &fg, &bg, warm),
            FitStarted::Device(d) => {
                let mut models = self.read_fit(d)?.into_iter();
                match (models.next().flatten(), models.next().flatten()) {
                    (Some(fg), Some(bg)) => Ok((fg, bg)),
                    _ => Err(Error::Unsupported(
                        "the device fit lost a class's model".into(),
                    )),
                }
            }
        }
    }

    /// The background model of the nearer-background first fit ([`FitLabels::NearerBackground`]),
    /// the host's `nearer_background` model (without its enclosure and coverage checks, the
    /// caller's): the same samples, gathered on the device, with the prior left there, and
    /// fitted there where the device fit takes the model.
    pub fn fit_nearer_background(
        &mut self,
        kind: ModelKind,
        params: &ModelParams,
        margin: f32,
    ) -> Result<Model> {
        let labels = FitLabels::NearerBackground { margin };
        let Some(starts) = device_fit_starts(kind, params, None) else {
            let (_, bg) = self.gather_samples(kind, labels)?;
            return Model::fit(kind, &bg, params, "background");
        };
        let len = self.gather_on_device(kind, labels)?;
        let d = self.launch_fit(kind, params, len, [false, true], starts)?;
        let [_, bg] = self.read_fit(d)?;
        bg.ok_or_else(|| Error::Unsupported("the device fit lost the background model".into()))
    }

    /// Launches the device fit on the gathered samples (`g`: the foreground's first, then the
    /// background's) of the classes `fit` names, one block each, without waiting for it. A class
    /// without samples gets [`Model::fit`]'s error before anything is launched.
    fn launch_fit(
        &mut self,
        kind: ModelKind,
        params: &ModelParams,
        g: Gathered,
        fit: [bool; 2],
        start: DeviceStart,
    ) -> Result<DeviceFit> {
        let ModelKind::Gmm { components } = kind else {
            return Err(Error::Unsupported("the device fits mixtures only".into()));
        };
        let ch = self.channels;
        let (mut desc, mut draws, mut starts) = (Vec::new(), Vec::new(), Vec::new());
        for c in (0..2).filter(|&c| fit[c]) {
            let n = g.len[c] / ch;
            let refused = match n {
                // The host fit's own error for an empty class.
                0 => Model::fit(kind, &[], params, ["foreground", "background"][c]).err(),
                n if n > FIT_MAX_N => Some(Error::Unsupported(format!(
                    "{n} samples for one device fit"
                ))),
                _ => None,
            };
            if let Some(e) = refused {
                // The gather's uploads read g.host: wait for them before it goes.
                cuda::sync(&self.stream)?;
                return Err(e);
            }
            let (first, u) = kmeans_draws(n, components);
            let offset = if c == 0 { 0 } else { g.len[0] / ch };
            desc.extend([offset as u32, n as u32, first as u32]);
            draws.extend(
                u.iter()
                    .copied()
                    .chain(std::iter::repeat(0.0))
                    .take(FIT_DRAWS),
            );
            match &start.models[c] {
                Some(m) => starts.extend_from_slice(m),
                None => starts.resize(starts.len() + FIT_OUT, 0.0),
            }
        }
        let blocks = desc.len() / 3;
        let warm = start.steps > 0 && start.models.iter().any(Option::is_some);
        let k = loaded(&mut self.model_kernels, self.device)?;
        let s = &self.stream.clone();
        let pool = &mut self.pool;
        let desc_dev = pool.take_upload("fit desc", &desc)?;
        let draws_dev = pool.take_upload("fit draws", &draws)?;
        let start_dev = match warm {
            true => Some(pool.take_upload("fit start", &starts)?),
            false => None,
        };
        let mut scratch = pool.take::<f64>("fit scratch", 2 * FIT_SCRATCH)?;
        let out = pool.take::<f64>("fit out", 2 * FIT_OUT)?;
        let mut out = out;
        // SAFETY: ch is 1..=3 and components 1..=FIT_MAX_K (device_fit_starts); each block's
        // samples lie in g.samples (offsets and counts from the gather's lengths), counts are
        // 1..=FIT_MAX_N and first indices below them (kmeans_draws); draws, start, scratch and
        // out hold blocks (≤ 2) times FIT_DRAWS, FIT_OUT, FIT_SCRATCH and FIT_OUT values, the
        // starts with at most FIT_MAX_K components (Gmm::to_device).
        unsafe {
            k.fit(
                s,
                blocks as u32,
                ch as u32,
                components as u32,
                fit_floor(params.variance_floor),
                d_ln_2pi(ch),
                KMEANS_STEPS as u32,
                EM_STEPS as u32,
                &g.samples,
                &desc_dev,
                &draws_dev,
                start_dev.as_ref(),
                start.steps as u32,
                &mut scratch,
                &mut out,
            )?
        };
        pool.keep("samples", g.samples);
        pool.keep("fit desc", desc_dev);
        pool.keep("fit draws", draws_dev);
        if let Some(b) = start_dev {
            pool.keep("fit start", b);
        }
        pool.keep("fit scratch", scratch);
        Ok(DeviceFit {
            fit,
            out,
            _host: (g.host, desc, draws, starts),
        })
    }

    /// The models of a launched device fit (`None` for a class it did not fit); waits for it.
    fn read_fit(&mut self, d: DeviceFit) -> Result<[Option<Model>; 2]> {
        let blocks = d.fit.iter().filter(|&&f| f).count();
        let mut values = vec![0.0f64; blocks * FIT_OUT];
        cuda::copy_to_host(
            &self.stream,
            &d.out.slice(..values.len()),
            &mut values,
            "fitted models",
        )?;
        self.pool.keep("fit out", d.out);
        drop(d._host);
        let ch = self.channels;
        let mut blocks = values.chunks_exact(FIT_OUT);
        let mut models = [None, None];
        for c in 0..2 {
            if !d.fit[c] {
                continue;
            }
            let Some(v) = blocks.next() else { break };
            let gmm = Gmm::from_device(ch, FIT_COMP, v).ok_or_else(|| {
                let class = ["foreground", "background"][c];
                Error::Unsupported(format!(
                    "the device fit of the {class} model gave no mixture"
                ))
            })?;
            models[c] = Some(Model::Gmm(gmm));
        }
        Ok(models)
    }

    /// The samples of both classes (`channels` values each), as the host's gather picks them.
    pub fn gather_samples(
        &mut self,
        kind: ModelKind,
        labels: FitLabels<'_>,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let g = self.gather_on_device(kind, labels)?;
        let (len_fg, len_bg) = (g.len[0], g.len[1]);
        let mut both = vec![0.0f32; len_fg + len_bg];
        if both.is_empty() {
            // Nothing to bring back (the fit will say which class is empty): still wait, the
            // uploads read host memory.
            cuda::sync(&self.stream)?;
        } else {
            cuda::copy_to_host(
                &self.stream,
                &g.samples.slice(..both.len()),
                &mut both,
                "samples",
            )?;
        }
        self.pool.keep("samples", g.samples);
        drop(g.host);
        let bg = both.split_off(len_fg);
        Ok((both, bg))
    }

    /// Both classes' samples gathered on the device, as the host's gather picks them, into
    /// the pool's "samples" buffer (the foreground's first); queued, not waited for.
    fn gather_on_device(&mut self, kind: ModelKind, labels: FitLabels<'_>) -> Result<Gathered> {
        let n = self.shape.num_nodes();
        let k = loaded(&mut self.model_kernels, self.device)?;
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
        pool.keep("sample ordinals", first_dev);
        if let Some((what, m)) = mask_dev {
            pool.keep(what, m);
        }
        Ok(Gathered {
            samples: out,
            len: [len_fg, len_bg],
            host: first,
        })
    }
}

/// The model kernels, loaded on first use.
fn loaded(kernels: &mut Option<SegModel>, device: crate::cuda::Device) -> Result<&SegModel> {
    if kernels.is_none() {
        *kernels = Some(SegModel::load(device.gpu()?)?);
    }
    kernels
        .as_ref()
        .ok_or_else(|| Error::Unsupported("the model kernels are not loaded".into()))
}

/// Samples gathered on the device ([`GpuEnergy::gather_on_device`]).
struct Gathered {
    /// Both classes' samples, the foreground's first.
    samples: CudaSlice<f32>,
    /// Values of each class.
    len: [usize; 2],
    /// Host memory the queued uploads read: kept until the stream has been waited for.
    host: Vec<u32>,
}

/// A started fit ([`GpuEnergy::fit_start`]).
pub enum FitStarted {
    /// Running on the device.
    Device(DeviceFit),
    /// The samples (foreground, background), for the host to fit: the device fit does not
    /// take this model.
    Samples(Vec<f32>, Vec<f32>),
}

/// A fit launched on the device, read back by [`GpuEnergy::fit_finish`].
pub struct DeviceFit {
    /// The classes fitted (foreground, background), one block each in that order.
    fit: [bool; 2],
    /// The blocks' output.
    out: CudaSlice<f64>,
    /// Host memory the queued uploads read, kept until the read-back has waited.
    _host: (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>),
}

/// Where a device fit starts: per class, a warm start in the device layout (None: from
/// scratch), and the EM steps from it.
struct DeviceStart {
    models: [Option<Vec<f64>>; 2],
    steps: usize,
}

/// Whether the device fit takes a fit of `kind` with these parameters and start, and the
/// start in its layout: mixtures of 1 to [`FIT_MAX_K`] components on 1 or 3 channels, warm
/// starts of at most [`FIT_MAX_K`] components. `None`: fit on the host. A warm start that
/// [`Model::refit`] would not use (a histogram, another dimension, 0 steps) starts from
/// scratch, as there.
fn device_fit_starts(
    kind: ModelKind,
    params: &ModelParams,
    warm: WarmPair<'_>,
) -> Option<DeviceStart> {
    let ModelKind::Gmm { components } = kind else {
        return None;
    };
    let ch = params.channels;
    if !(1..=FIT_MAX_K).contains(&components) || !matches!(ch, 1 | 3) {
        return None;
    }
    let Some((models, steps)) = warm.filter(|&(_, steps)| steps > 0) else {
        return Some(DeviceStart {
            models: [None, None],
            steps: 0,
        });
    };
    let one = |m: &Model| -> Option<Option<Vec<f64>>> {
        match m {
            Model::Gmm(g) if g.dim() == ch => g.to_device(FIT_COMP, FIT_MAX_K).map(Some),
            _ => Some(None),
        }
    };
    Some(DeviceStart {
        models: [one(&models.0)?, one(&models.1)?],
        steps,
    })
}
