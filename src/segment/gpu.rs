//! The segmentation energy built on the GPU: the image goes up once, the colour conversion, the
//! model statistics, `β`, the n-links, `K` and every round's t-links are computed where the
//! solver runs, and the graph never crosses the bus. The kernels are in `kernels/seg_energy.cu`,
//! launched through their typed launchers (`src/cuda/launch/seg_energy.rs`); this module drives
//! them.
//!
//! The builder redoes the [`energy`](mod@super::energy) module operation for operation (the same
//! `f32`/`f64` expressions in the same order, no fused multiply-add, host-computed tables), so its
//! capacities equal the CPU's except where the device's `cbrt`, `exp` or `log` round differently in
//! the last bit: such a difference moves a capacity by at most one unit, and only when the value lies on a
//! rounding boundary (see `tests/gpu_segment.rs` for the measured fractions). The quantisation
//! guarantees are the CPU's: the same scale, the same `i64` check of `K`, the same clamps.
//!
//! What it covers: grey and 3-channel images and volumes (N4/N8/N6/N26), Gaussian-mixture models
//! of up to [`MAX_COMPONENTS`] components, and any model on grey images large enough for the
//! CPU's cost table. [`supported`] says whether an input is covered; the pipeline builds the others
//! on the CPU.
//!
//! ```no_run
//! use segcut::segment::{gpu::GpuEnergy, ColorSpace, energy::EnergyOptions, Image, Seeds};
//! let image = Image::new([64, 48, 1], 1, vec![0.0; 64 * 48]);
//! let seeds = Seeds::unknown(image.dims);
//! let dev = segcut::cuda::Device::new(0);
//! let e = GpuEnergy::new(dev, &image, &seeds, ColorSpace::AsIs, &EnergyOptions::default()).unwrap();
//! assert!(e.beta >= 0.0 && e.hard > 0);
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};
use rayon::prelude::*;

use super::color::{srgb_linear, to_color_space, ColorSpace, WorkSpace};
use super::energy::NLINK_TABLE_LEVELS;
use super::energy::{self, direction_distances, EnergyOptions, COST_TABLE_NODES};
use super::model::{Blend, ColorModel, Model, ModelKind, ModelParams};
use crate::cuda::launch::seg_energy::{self, SegEnergy};
use crate::cuda::{self, grid_bytes_per_node, Call, Device, DeviceGrid, GridShape, Session};
use crate::graph::{valid_box, Cap, Connectivity, GridGraph};
use crate::io::{Image, Seeds};
use crate::maxflow::Cut;
use crate::{Error, Result};

/// Most mixture components the t-link kernel evaluates (its per-thread array).
pub const MAX_COMPONENTS: usize = 16;

// The exp table of energy.rs (`ExpTable`): the same range and resolution, so the same values.
const EXP_RANGE: f64 = 32.0;
const EXP_STEPS: f64 = 256.0;

/// Whether the GPU builder covers this input (otherwise the pipeline builds on the CPU): 1 or 3
/// channels, fewer than 2³² − 2 pixels, and mixtures of at most [`MAX_COMPONENTS`] components
/// unless the image is grey and large enough for the tabulated costs.
pub fn supported(image: &Image, kind: ModelKind) -> std::result::Result<(), String> {
    if !matches!(image.channels, 1 | 3) {
        return Err(format!("{} channels (1 or 3 supported)", image.channels));
    }
    if image.num_pixels() > GridShape::MAX_NODES {
        return Err(format!("{} pixels (32-bit indices)", image.num_pixels()));
    }
    let table = image.channels == 1 && image.num_pixels() >= 4 * COST_TABLE_NODES;
    match kind {
        _ if table => Ok(()),
        ModelKind::Gmm { components } if components <= MAX_COMPONENTS => Ok(()),
        ModelKind::Gmm { components } => Err(format!(
            "{components} mixture components (at most {MAX_COMPONENTS})"
        )),
        ModelKind::Histogram { .. } => Err("histogram models on this image".into()),
    }
}

/// Time spent in each stage of the GPU build.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuTimes {
    /// The host's pass over the image before the upload: checks, value range, 8-bit packing.
    pub host: Duration,
    /// Loading the kernels (from the process or disk cache, else NVRTC), the memory check; done
    /// while the host pass runs, so it is part of `host` unless longer.
    pub setup: Duration,
    /// Device allocation and the copies of the image and the seeds.
    pub upload: Duration,
    /// Colour conversion and the image statistics (model parameters, value range).
    pub convert: Duration,
    /// `β`, the n-links and `K`.
    pub nlinks: Duration,
    /// Whether the stream, the kernels and the buffers came from the last image's build (a
    /// [`Segmenter`](super::session::Segmenter) keeps them; see [`EnergyKeep`]).
    pub reused: bool,
    /// Device buffers this build had to allocate (none kept fitted): 0 for an image of the
    /// last one's size on a kept state.
    pub allocations: usize,
}

/// What a [`GpuEnergy`] leaves for the next image on its device ([`GpuEnergy::into_keep`]): its
/// session (the stream, and every device buffer under its name and length) and its loaded
/// kernels. An image of the same size then costs no device allocation, stream or kernel look-up;
/// another size allocates what it needs (and the buffers of the old size are freed as they are
/// replaced).
pub struct EnergyKeep {
    session: Session,
    /// The size the kept buffers are for.
    dims: [usize; 3],
    k: SegEnergy,
    model_kernels: Option<crate::cuda::launch::seg_model::SegModel>,
    prior_kernels: Option<crate::cuda::launch::seg_prior::SegPrior>,
}

impl EnergyKeep {
    /// The kept session (its stream is the one the next build and its solver run on).
    pub fn session(&self) -> &Session {
        &self.session
    }
}

/// The energy's graph in GPU memory, with what the rounds need to rewrite its t-links and to
/// check cuts. Built by [`GpuEnergy::new`]; t-links by [`GpuEnergy::set_tlinks`].
pub struct GpuEnergy {
    /// The last [`GpuEnergy::queue_tlinks`]'s read-back in flight, until
    /// [`GpuEnergy::finish_tlinks`]. First, because fields drop in order: on an error path it
    /// waits for the copy before `pool` frees the staging buffer the copy writes into.
    tlinks_pending: Option<TlinksPending>,
    pub(super) device: Device,
    pub(super) stream: Arc<CudaStream>,
    /// The buffers of this graph and its rounds, on `stream`: taken from and handed back to it,
    /// so a round (or the next image of this size) reuses them.
    pub(super) pool: Session,
    /// The name `work` was taken under (it may be the upload itself).
    work_name: &'static str,
    k: SegEnergy,
    pub(super) shape: GridShape,
    conn: Connectivity,
    pub(super) dims: [usize; 3],
    pub(super) channels: usize,
    pub(super) work: CudaSlice<f32>,
    /// Where the input image's own values are on the device (for the prior).
    pub(super) original: Original,
    pub(super) seeds: CudaSlice<u8>,
    caps: CudaSlice<i32>,
    source: CudaSlice<i32>,
    sink: CudaSlice<i32>,
    /// The stroke-geometry prior per pixel ([`GpuEnergy::set_prior`],
    /// [`GpuEnergy::compute_prior`]).
    pub(super) prior: Option<CudaSlice<f32>>,
    /// The prior's kernels, loaded on first use.
    pub(super) prior_kernels: Option<crate::cuda::launch::seg_prior::SegPrior>,
    /// The sample-gathering kernels, loaded on first use.
    pub(super) model_kernels: Option<crate::cuda::launch::seg_model::SegModel>,
    /// The working colour space (the host computes the models' samples in it).
    pub space: WorkSpace,
    /// Model parameters from the whole working image (as [`ModelParams::from_image`]).
    pub params: ModelParams,
    /// `[min, max]` of a grey image and whether all its values are integers (`value_range`).
    grey_range: Option<(f32, f32, bool)>,
    /// The contrast parameter used.
    pub beta: f64,
    /// Capacity units per nat.
    pub scale: f64,
    /// The hard-seed capacity `K`.
    pub hard: Cap,
    /// `Σ min(D_fg, D_bg)` over the pixels without a hard seed, from the last t-links.
    pub unary_constant: f64,
    /// Stage times of [`GpuEnergy::new`].
    pub times: GpuTimes,
}

/// The t-links' flag and constant on their way to the pool's pinned staging buffer: `partials`
/// sums (`f64`) at its start, the flag (`u32`) after them; `done` is recorded after the copies.
/// The host inputs of the launch stay here until then.
struct TlinksPending {
    partials: usize,
    done: CudaEvent,
    _inputs: Vec<f64>,
}

impl Drop for TlinksPending {
    /// Waits for the copies (a query only, when they are done: no host wait counted), so that
    /// neither the staging buffer nor `_inputs` goes while the device may still use it: an
    /// error between `queue_tlinks` and `finish_tlinks` drops the energy with the copy queued.
    fn drop(&mut self) {
        // An error here is the stream's, met by whoever uses it next.
        let _ = cuda::wait_for(&self.done);
    }
}

/// Bytes of the staging buffer for `partials` t-link sums and the flag.
fn tlinks_staging_bytes(partials: usize) -> usize {
    8 * partials + 8
}

/// What the host's pass over the image found.
struct HostPass {
    finite: bool,
    lo: f32,
    hi: f32,
    /// The image as bytes when every value is an integer in `0..=255` (a quarter of the upload).
    bytes: Option<Vec<u8>>,
}

/// The one host pass over the image before the upload: finiteness, value range, 8-bit packing.
fn host_pass(data: &[f32]) -> HostPass {
    const CHUNK: usize = 1 << 16;
    let mut bytes = vec![0u8; data.len()];
    let start = (true, f32::INFINITY, f32::NEG_INFINITY, true);
    let (finite, lo, hi, fits) = bytes
        .par_chunks_mut(CHUNK)
        .zip(data.par_chunks(CHUNK))
        .map(|(out, inp)| {
            let (mut finite, mut lo, mut hi, mut fits) = start;
            for (o, &v) in out.iter_mut().zip(inp) {
                finite &= v.is_finite();
                lo = lo.min(v);
                hi = hi.max(v);
                let b = v as u8;
                fits &= b as f32 == v;
                *o = b;
            }
            (finite, lo, hi, fits)
        })
        .reduce(
            || start,
            |a, b| (a.0 && b.0, a.1.min(b.1), a.2.max(b.2), a.3 && b.3),
        );
    HostPass {
        finite,
        lo,
        hi,
        bytes: fits.then_some(bytes),
    }
}

/// The seeds as the bytes the kernels read (the [`Seed`](super::Seed) discriminants).
fn seed_bytes(seeds: &Seeds) -> &[u8] {
    // SAFETY: `Seed` is `repr(u8)`, so a slice of them is a slice of initialised bytes of the
    // same length and alignment.
    unsafe { std::slice::from_raw_parts(seeds.labels.as_ptr() as *const u8, seeds.labels.len()) }
}

/// The image as uploaded: bytes when every value is one, else floats.
pub(super) enum RawImage {
    Bytes(CudaSlice<u8>),
    Floats(CudaSlice<f32>),
}

/// The names the uploads are taken under ([`Session::take`]).
const IMAGE_BYTES: &str = "image bytes";
const IMAGE_FLOATS: &str = "image floats";

impl RawImage {
    /// Hands the upload back to `pool` under the name it was taken with.
    fn keep(self, pool: &mut Session) {
        match self {
            RawImage::Bytes(b) => pool.keep(IMAGE_BYTES, b),
            RawImage::Floats(f) => pool.keep(IMAGE_FLOATS, f),
        }
    }
}

/// Where the input image's values are on the device: the stroke-geometry prior measures colour
/// differences in the input image, not in the working space.
pub(super) enum Original {
    /// The working image holds them (no conversion: bytes widened, or the floats themselves).
    Work,
    /// The upload before the Lab conversion, kept.
    Raw(RawImage),
    /// Not on the device (the host converted the image first): uploaded when needed.
    Host,
}

/// The image's statistics, from the device's per-block partials.
struct ImageStats {
    params: ModelParams,
    /// See [`GpuEnergy::grey_range`].
    grey_range: Option<(f32, f32, bool)>,
}

/// The working image on the device with what the n-link kernels need besides.
struct Working<'a> {
    k: &'a SegEnergy,
    stream: &'a Arc<CudaStream>,
    pool: &'a mut Session,
    shape: GridShape,
    ch: u32,
    work: &'a CudaSlice<f32>,
}

/// The n-links on the device and what they fixed: the scale and `K`.
struct NLinks {
    caps: CudaSlice<i32>,
    scale: f64,
    hard: Cap,
}

impl GpuEnergy {
    /// Uploads `image` and `seeds`, converts the image to its working space (`space` as
    /// [`to_color_space`] applies it), and builds `β`, the n-links and `K` on the GPU. The
    /// t-links are zero until [`GpuEnergy::set_tlinks`]. Everything runs on `device`, on a
    /// stream of its own that the solver continues on.
    ///
    /// Errors: the CPU builder's input and overflow errors, the same; [`Error::Unsupported`] when
    /// no GPU is usable, the input is not covered ([`supported`]) or the GPU lacks memory.
    pub fn new(
        device: Device,
        image: &Image,
        seeds: &Seeds,
        space: ColorSpace,
        opts: &EnergyOptions,
    ) -> Result<Self> {
        Self::new_kept(device, None, image, seeds, space, opts)
    }

    /// [`GpuEnergy::new`] on what an earlier build left ([`GpuEnergy::into_keep`]): its stream,
    /// kernels and buffers (those of the same name and length are reused, so an image of the
    /// last one's size allocates nothing). A `keep` of another device is dropped.
    pub fn new_kept(
        device: Device,
        keep: Option<EnergyKeep>,
        image: &Image,
        seeds: &Seeds,
        space: ColorSpace,
        opts: &EnergyOptions,
    ) -> Result<Self> {
        let t0 = Instant::now();
        check_input(image, seeds, opts)?;
        let (n, ch, conn) = (image.num_pixels(), image.channels, opts.connectivity);
        let keep = keep.filter(|k| k.session.device() == device).map(|mut k| {
            // Buffers of another size would only be replaced one by one, holding memory twice.
            if k.dims != image.dims {
                k.session.release();
                k.dims = image.dims;
            }
            k
        });
        // The kernels load (from the disk cache, at worst NVRTC) while the host reads the image.
        let (pass, setup) = std::thread::scope(|scope| {
            let setup = scope.spawn(move || device_setup(device, keep, n, ch, conn));
            let pass = host_pass(&image.data);
            let setup = setup.join().unwrap_or_else(|_| {
                Err(Error::Unsupported("the GPU set-up thread panicked".into()))
            });
            (pass, setup)
        });
        if !pass.finite || image.spacing.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            energy::check_image(image)?;
        }
        let (keep, reused, setup_time) = setup?;
        let EnergyKeep {
            session: mut pool,
            k,
            model_kernels,
            prior_kernels,
            dims: _,
        } = keep;
        let misses = pool.allocations();
        let stream = pool.stream().clone();
        let ws = WorkSpace::of(image.channels, pass.lo, pass.hi, space);
        // Lab on the device needs integer values (a table index); others are converted here.
        let host_lab = match ws {
            WorkSpace::Lab(_)
                if pass.bytes.is_none() && image.data.par_iter().any(|v| v.fract() != 0.0) =>
            {
                Some(to_color_space(image, space).into_owned())
            }
            _ => None,
        };
        let t_host = Instant::now();
        let (raw, seeds_dev) = upload(&mut pool, image, seeds, pass.bytes, host_lab.as_ref())?;
        let t1 = Instant::now();
        let ws_device = if host_lab.is_some() {
            WorkSpace::AsIs
        } else {
            ws
        };
        let (work, work_name, original) = working_image(&k, &mut pool, raw, ws_device, n, ch)?;
        let original = if host_lab.is_some() {
            // Not needed on the device: back to the pool.
            if let Original::Raw(raw) = original {
                raw.keep(&mut pool);
            }
            Original::Host
        } else {
            original
        };
        let stats = image_stats(&k, &mut pool, &work, n, ch)?;
        let t2 = Instant::now();
        let mut w = Working {
            k: &k,
            stream: &stream,
            pool: &mut pool,
            shape: GridShape::new(image.dims, conn)?,
            ch: ch as u32,
            work: &work,
        };
        let beta = match opts.sigma {
            Some(s) => 1.0 / (2.0 * s * s),
            None => w.contrast(pair_count(image.dims, conn))?,
        };
        let links = w.nlinks(stats.grey_range, beta, image.spacing, opts)?;
        let shape = w.shape;
        let source = pool.take_zeroed::<i32>("source capacities", n)?;
        let sink = pool.take_zeroed::<i32>("sink capacities", n)?;
        let allocations = pool.allocations() - misses;
        let t3 = Instant::now();
        Ok(GpuEnergy {
            device,
            stream,
            pool,
            work_name,
            k,
            shape,
            conn,
            dims: image.dims,
            channels: ch,
            work,
            original,
            seeds: seeds_dev,
            caps: links.caps,
            source,
            sink,
            prior: None,
            prior_kernels,
            model_kernels,
            space: ws,
            params: stats.params,
            grey_range: stats.grey_range,
            beta,
            scale: links.scale,
            hard: links.hard,
            unary_constant: 0.0,
            times: GpuTimes {
                host: t_host - t0,
                setup: setup_time,
                upload: t1 - t_host,
                convert: t2 - t1,
                nlinks: t3 - t2,
                reused,
                allocations,
            },
            tlinks_pending: None,
        })
    }

    /// Hands the stream, the kernels and every buffer of this graph back for the next image
    /// ([`GpuEnergy::new_kept`]).
    pub fn into_keep(self) -> EnergyKeep {
        if let Some(p) = &self.tlinks_pending {
            // The staging buffer goes with the pool: no copy may still be writing it. An
            // error here is the next image's to meet on the same stream.
            let _ = cuda::wait_for(&p.done);
        }
        let mut pool = self.pool;
        pool.keep(self.work_name, self.work);
        if let Original::Raw(raw) = self.original {
            raw.keep(&mut pool);
        }
        pool.keep("seeds", self.seeds);
        pool.keep("n-links", self.caps);
        pool.keep("source capacities", self.source);
        pool.keep("sink capacities", self.sink);
        if let Some(p) = self.prior {
            pool.keep("prior", p);
        }
        EnergyKeep {
            session: pool,
            dims: self.dims,
            k: self.k,
            model_kernels: self.model_kernels,
            prior_kernels: self.prior_kernels,
        }
    }

    /// Uploads the stroke-geometry prior ([`super::prior::prior_costs`]) that every later
    /// [`GpuEnergy::set_tlinks`] adds to the costs, as [`energy::set_tlinks_with_prior`] does;
    /// `None` removes it.
    pub fn set_prior(&mut self, prior: Option<&[f32]>) -> Result<()> {
        self.prior = match prior {
            None => None,
            Some(p) => {
                if p.len() != self.shape.n as usize {
                    return Err(Error::Graph(format!(
                        "prior has {} values but the image has {} pixels",
                        p.len(),
                        self.shape.n
                    )));
                }
                if let Some(old) = self.prior.take() {
                    self.pool.keep("prior", old);
                }
                Some(self.pool.take_upload("prior", p)?)
            }
        };
        Ok(())
    }

    /// Writes the t-links from the seeds and the two classes' models (as
    /// [`energy::set_tlinks`]): hard seeds `(K, 0)` / `(0, K)`, other pixels their net cost
    /// clamped to `K`. `image` is the original image (for naming a pixel whose costs are unusable).
    /// [`GpuEnergy::queue_tlinks`] and [`GpuEnergy::finish_tlinks`] at once: one host wait.
    pub fn set_tlinks(&mut self, image: &Image, fg: &Blend<'_>, bg: &Blend<'_>) -> Result<()> {
        self.queue_tlinks(fg, bg)?;
        self.finish_tlinks(image, fg, bg)
    }

    /// Queues the t-links of [`GpuEnergy::set_tlinks`] without waiting for them: the unusable
    /// pixel's flag and the unary constant's partial sums are copied to the pool's pinned
    /// staging buffer behind the kernel, and read by [`GpuEnergy::finish_tlinks`] once the
    /// stream has got there, which costs no host wait of its own when a wait came between (the
    /// solve's). A pixel with unusable costs gets `(0, 0)` until then, so the graph is a valid
    /// one to cut meanwhile.
    pub fn queue_tlinks(&mut self, fg: &Blend<'_>, bg: &Blend<'_>) -> Result<()> {
        // One read-back in flight at a time (the staging buffer is shared): an unfinished one
        // (after an error) is waited for first.
        if let Some(p) = self.tlinks_pending.take() {
            cuda::wait_for(&p.done)?;
        }
        let n = self.shape.num_nodes();
        let s = &self.stream;
        let pool = &mut self.pool;
        let partials = seg_energy::partials(n);
        let mut part = pool.take_zeroed::<f64>("t-link sums", partials)?;
        let flag = [u32::MAX];
        let mut bad = pool.take_upload("t-link flag", &flag)?;
        let (scale, k, nn) = (self.scale, self.hard, n as u32);
        let table = match self.grey_range {
            Some((lo, hi, integral)) if n >= 4 * COST_TABLE_NODES => Some((lo, hi, integral)),
            _ => None,
        };
        let inputs = if let Some((lo, hi, integral)) = table {
            let (nodes, inv_step) = grey_cost_nodes(lo, hi, integral, fg, bg);
            let count = (nodes.len() / 2) as u32;
            let nodes_dev = pool.take_upload("cost table", &nodes)?;
            // SAFETY: nodes has 2·count entries (count ≥ 2), work, seeds, source and sink n,
            // part one per block, bad one.
            unsafe {
                self.k.tlinks_grey_table(
                    s,
                    nn,
                    &self.work,
                    &self.seeds,
                    &nodes_dev,
                    count,
                    lo,
                    inv_step,
                    self.prior.as_ref(),
                    scale,
                    k,
                    &mut self.source,
                    &mut self.sink,
                    &mut part,
                    &mut bad,
                )?
            };
            pool.keep("cost table", nodes_dev);
            nodes
        } else {
            let (models, headers) = pack_models(fg, bg, self.channels)?;
            // At their largest size, so that every round (and image) reuses the buffer.
            let most = 4 * MAX_COMPONENTS * (1 + self.channels * (self.channels + 3) / 2);
            let mut models_dev = pool.take::<f64>("models", most.max(models.len()))?;
            s.memcpy_htod(&models, &mut models_dev.slice_mut(..models.len()))
                .call("cuMemcpyHtoD (models)")?;
            let headers_dev = pool.take_upload("model headers", &headers)?;
            // SAFETY: the headers' offsets and counts lie inside `models` (pack_models), work
            // has n·ch entries, seeds, source and sink n, part one per block, bad one.
            unsafe {
                self.k.tlinks_gmm(
                    s,
                    nn,
                    self.channels as u32,
                    &self.work,
                    &self.seeds,
                    &models_dev,
                    &headers_dev,
                    self.prior.as_ref(),
                    scale,
                    k,
                    &mut self.source,
                    &mut self.sink,
                    &mut part,
                    &mut bad,
                )?
            };
            pool.keep("models", models_dev);
            pool.keep("model headers", headers_dev);
            let mut inputs = models;
            inputs.extend_from_slice(&headers);
            inputs
        };
        // Both read-backs into pinned memory: queued, no wait here.
        let staging = pool.staging(tlinks_staging_bytes(partials))?;
        let bytes = staging.as_mut_slice().call("pinned staging")?;
        let (sums, rest) = bytes.split_at_mut(8 * partials);
        assert!(
            sums.as_ptr().align_offset(std::mem::align_of::<f64>()) == 0,
            "pinned memory is page-aligned"
        );
        // SAFETY: the staging buffer is page-aligned pinned memory of 8·partials + 8 bytes:
        // `sums` holds exactly `partials` f64 (aligned, checked above), `rest` 8 bytes from an
        // 8-byte boundary, its first four the flag's u32; nothing else uses the buffer until
        // finish_tlinks has seen the copies done.
        let (sums, flag_host) = unsafe {
            (
                std::slice::from_raw_parts_mut(sums.as_mut_ptr() as *mut f64, partials),
                std::slice::from_raw_parts_mut(rest.as_mut_ptr() as *mut u32, 1),
            )
        };
        s.memcpy_dtoh(&part, sums)
            .call("cuMemcpyDtoHAsync (t-link sums)")?;
        s.memcpy_dtoh(&bad, flag_host)
            .call("cuMemcpyDtoHAsync (t-link flag)")?;
        let done = s.record_event(None).call("cuEventRecord (t-links)")?;
        pool.keep("t-link flag", bad);
        pool.keep("t-link sums", part);
        self.tlinks_pending = Some(TlinksPending {
            partials,
            done,
            _inputs: inputs,
        });
        Ok(())
    }

    /// Ends the last [`GpuEnergy::queue_tlinks`] (nothing if none is pending): waits for its
    /// read-back unless the stream has got past it already (a host wait only then), sets
    /// [`GpuEnergy::unary_constant`], and fails as [`GpuEnergy::set_tlinks`] does when a
    /// pixel's costs under `fg`, `bg` (the models it was queued with) are unusable.
    pub fn finish_tlinks(&mut self, image: &Image, fg: &Blend<'_>, bg: &Blend<'_>) -> Result<()> {
        let Some(p) = self.tlinks_pending.take() else {
            return Ok(());
        };
        cuda::wait_for(&p.done)?;
        let staging = self.pool.staging(tlinks_staging_bytes(p.partials))?;
        let bytes = staging.as_slice().call("pinned staging")?;
        let (sums, rest) = bytes.split_at(8 * p.partials);
        let sum: f64 = sums
            .chunks_exact(8)
            .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .sum();
        let bad = u32::from_ne_bytes(rest[..4].try_into().expect("4 bytes"));
        if bad != u32::MAX {
            let v = bad as usize;
            let mut px = Vec::new();
            self.space.push_pixel(image, v, &mut px);
            let (dfg, dbg) = (fg.neg_log_likelihood(&px), bg.neg_log_likelihood(&px));
            let [w, h, _] = self.dims;
            return Err(Error::Input {
                file: "colour model".into(),
                msg: format!(
                    "pixel (x={}, y={}, z={}) has costs fg {dfg}, bg {dbg}",
                    v % w,
                    (v / w) % h,
                    v / (w * h)
                ),
            });
        }
        self.unary_constant = sum;
        Ok(())
    }

    /// Sets the t-links from capacities computed on the host (a probability data term:
    /// [`energy::probability_terminals`] at this graph's `scale` and `hard`), with their
    /// data-cost constant.
    pub fn set_terminals(&mut self, source: &[i32], sink: &[i32], constant: f64) -> Result<()> {
        let n = self.shape.num_nodes();
        if source.len() != n || sink.len() != n {
            return Err(Error::Graph(format!(
                "{} / {} terminal capacities for {n} pixels",
                source.len(),
                sink.len()
            )));
        }
        let s = &self.stream;
        s.memcpy_htod(source, &mut self.source)
            .call("cuMemcpyHtoD (t-links)")?;
        s.memcpy_htod(sink, &mut self.sink)
            .call("cuMemcpyHtoD (t-links)")?;
        self.unary_constant = constant;
        Ok(())
    }

    /// The shape and the current terminal capacities on the device (t-links of the last
    /// [`set_tlinks`](GpuEnergy::set_tlinks)), for a warm-started solve.
    pub(crate) fn terminals(&self) -> ([usize; 3], Connectivity, &CudaSlice<i32>, &CudaSlice<i32>) {
        (self.dims, self.conn, &self.source, &self.sink)
    }

    /// A copy of the graph for the solver (which consumes it); the n-links stay here for the
    /// next round.
    pub fn device_grid(&self) -> Result<DeviceGrid> {
        let s = &self.stream;
        let copy = |buf: &CudaSlice<i32>| s.clone_dtod(buf).call("cuMemcpyDtoD (graph copy)");
        Ok(DeviceGrid {
            dims: self.dims,
            conn: self.conn,
            caps: copy(&self.caps)?,
            source: copy(&self.source)?,
            sink: copy(&self.sink)?,
            stream: s.clone(),
        })
    }

    /// [`GpuEnergy::device_grid`] into buffers of the solver's `session` (on this graph's
    /// stream: the ones its last solve of this size handed back), so a solve allocates nothing.
    /// A session on another stream gets fresh copies.
    pub(crate) fn device_grid_in(&self, session: &mut Session) -> Result<DeviceGrid> {
        if !Arc::ptr_eq(session.stream(), &self.stream) {
            return self.device_grid();
        }
        let s = &self.stream;
        let n = self.shape.num_nodes();
        let mut copy = |what: &'static str, buf: &CudaSlice<i32>, len: usize| {
            let mut out = session.take::<i32>(what, len)?;
            s.memcpy_dtod(buf, &mut out)
                .call("cuMemcpyDtoD (graph copy)")?;
            Ok::<_, Error>(out)
        };
        Ok(DeviceGrid {
            dims: self.dims,
            conn: self.conn,
            caps: copy("grid caps", &self.caps, self.conn.degree() * n)?,
            source: copy("grid source", &self.source, n)?,
            sink: copy("grid sink", &self.sink, n)?,
            stream: s.clone(),
        })
    }

    /// The capacity of `cut` in this graph, computed on the GPU (the certificate check of
    /// [`verify`](crate::maxflow::verify)): an error unless it equals the cut's flow.
    pub fn verify(&mut self, cut: &Cut) -> Result<()> {
        let cap = self.cut_capacity(&cut.sink_side)?;
        if cap != cut.flow as i128 {
            return Err(Error::Certificate {
                flow: cut.flow,
                cut_capacity: i64::try_from(cap).unwrap_or(i64::MAX),
            });
        }
        Ok(())
    }

    /// The capacity of the cut whose sink side is `sink_side`, summed on the GPU.
    pub(crate) fn cut_capacity(&mut self, sink_side: &[bool]) -> Result<i128> {
        let n = self.shape.num_nodes();
        if sink_side.len() != n {
            return Err(Error::Graph(format!(
                "cut has {} nodes but the graph has {n}",
                sink_side.len()
            )));
        }
        let s = &self.stream;
        // SAFETY: bool is one byte, 0 or 1.
        let side: &[u8] = unsafe { std::slice::from_raw_parts(sink_side.as_ptr() as *const u8, n) };
        let side = self.pool.take_upload("cut", side)?;
        let mut part = self
            .pool
            .take_zeroed::<u64>("cut sums", seg_energy::partials(n))?;
        // SAFETY: caps has deg·n entries, source, sink and side n, part one per block.
        unsafe {
            self.k.cut_capacity(
                s,
                self.shape,
                &self.caps,
                &self.source,
                &self.sink,
                &side,
                &mut part,
            )?
        };
        let cap: i128 = cuda::download(s, &part, "cut sums")?
            .iter()
            .map(|&c| c as i128)
            .sum();
        self.pool.keep("cut", side);
        self.pool.keep("cut sums", part);
        Ok(cap)
    }

    /// A kept state on this graph's stream with no buffers (a sibling session): the next
    /// graph of a pack is built on it, so that every part's buffers are written in one stream
    /// order and can be stacked ([`stack_terminals`], [`stack_grid`]) without waits.
    pub(crate) fn sibling_keep(&self) -> Result<EnergyKeep> {
        Ok(EnergyKeep {
            session: self.pool.sibling(),
            dims: [0; 3],
            k: SegEnergy::load(self.pool.gpu())?,
            model_kernels: None,
            prior_kernels: None,
        })
    }

    /// The graph brought back to the host (for `--export-graph`, `keep_graph` and tests).
    pub fn download(&self) -> Result<GridGraph> {
        let [w, h, d] = self.dims;
        let mut g = GridGraph::new(w, h, d, self.conn)?;
        let n = g.num_nodes();
        let caps = cuda::download(&self.stream, &self.caps, "capacities")?;
        for dir in 0..self.conn.degree() {
            g.caps_mut(dir)
                .copy_from_slice(&caps[dir * n..(dir + 1) * n]);
        }
        let source = cuda::download(&self.stream, &self.source, "source capacities")?;
        let sink = cuda::download(&self.stream, &self.sink, "sink capacities")?;
        let (s, t) = g.terminal_caps_mut();
        s.copy_from_slice(&source);
        t.copy_from_slice(&sink);
        Ok(g)
    }

    /// The connectivity of the graph.
    pub fn connectivity(&self) -> Connectivity {
        self.conn
    }

    /// Neighbour pairs (n-link edges) of the graph.
    pub fn num_edges(&self) -> usize {
        pair_count(self.dims, self.conn) as usize
    }

    /// The energy (nats) of a cut of value `flow` (as [`energy::Energy::energy_of_flow`]).
    pub fn energy_of_flow(&self, flow: i64) -> f64 {
        flow as f64 / self.scale + self.unary_constant
    }
}

/// The input checks of the CPU builder that come before any work, and what the GPU builder
/// covers.
fn check_input(image: &Image, seeds: &Seeds, opts: &EnergyOptions) -> Result<()> {
    energy::check_seeds(image, seeds)?;
    energy::check_options(image, opts)?;
    if !matches!(image.channels, 1 | 3) || image.num_pixels() > GridShape::MAX_NODES {
        return Err(Error::Unsupported(format!(
            "the GPU energy builder takes 1- or 3-channel images below 2^32 pixels, not {} \
             channels of {:?}",
            image.channels, image.dims
        )));
    }
    let n = image.num_pixels();
    if n == 0 || image.data.len() != n * image.channels {
        energy::check_image(image)?;
    }
    Ok(())
}

/// Uploads the image (bytes when the host pass packed them, else the floats of `host_lab` or of
/// the image) and the seeds, and waits for the copies.
fn upload(
    pool: &mut Session,
    image: &Image,
    seeds: &Seeds,
    bytes: Option<Vec<u8>>,
    host_lab: Option<&Image>,
) -> Result<(RawImage, CudaSlice<u8>)> {
    let raw = match (&bytes, host_lab) {
        (Some(b), None) => RawImage::Bytes(pool.take_upload(IMAGE_BYTES, b)?),
        (_, Some(lab)) => RawImage::Floats(pool.take_upload(IMAGE_FLOATS, &lab.data)?),
        (None, None) => RawImage::Floats(pool.take_upload(IMAGE_FLOATS, &image.data)?),
    };
    let seeds_dev = pool.take_upload("seeds", seed_bytes(seeds))?;
    cuda::sync(pool.stream())?;
    Ok((raw, seeds_dev))
}

/// The image in its working space on the device: Lab through the sRGB table, or the values as
/// floats; and where the uploaded values stay (the raw upload is kept when converted to Lab).
fn working_image(
    k: &SegEnergy,
    pool: &mut Session,
    raw: RawImage,
    space: WorkSpace,
    n: usize,
    ch: usize,
) -> Result<(CudaSlice<f32>, &'static str, Original)> {
    let nn = n as u32;
    let stream = &pool.stream().clone();
    match (space, raw) {
        (WorkSpace::Lab(full), raw) => {
            let table = linear_table(full);
            let lin = pool.take_upload("sRGB table", &table)?;
            let mut lab = pool.take::<f32>("Lab image", 3 * n)?;
            match &raw {
                // SAFETY: rgb and lab have 3n entries, lin 256 (the values are bytes).
                RawImage::Bytes(rgb) => unsafe { k.lab_from_u8(stream, nn, rgb, &lin, &mut lab)? },
                // SAFETY: rgb and lab have 3n entries, every value is an integer in 0..=full
                // (WorkSpace::of and the host's check), lin has full + 1 entries.
                RawImage::Floats(rgb) => unsafe {
                    k.lab_from_f32(stream, nn, rgb, &lin, &mut lab)?
                },
            }
            // The table is read by the queued kernel: synchronise before handing it back.
            cuda::sync(stream)?;
            pool.keep("sRGB table", lin);
            Ok((lab, "Lab image", Original::Raw(raw)))
        }
        (WorkSpace::AsIs, RawImage::Bytes(raw)) => {
            let mut out = pool.take::<f32>("widened image", n * ch)?;
            // SAFETY: both buffers have n·ch entries.
            unsafe { k.widen_u8(stream, (n * ch) as u64, &raw, &mut out)? };
            cuda::sync(stream)?;
            pool.keep(IMAGE_BYTES, raw);
            Ok((out, "widened image", Original::Work))
        }
        (WorkSpace::AsIs, RawImage::Floats(raw)) => Ok((raw, IMAGE_FLOATS, Original::Work)),
    }
}

/// Model parameters and the value range of the working image, from per-block partials.
fn image_stats(
    k: &SegEnergy,
    pool: &mut Session,
    work: &CudaSlice<f32>,
    n: usize,
    ch: usize,
) -> Result<ImageStats> {
    let stride = 4 * ch + 1;
    let stream = &pool.stream().clone();
    let mut partials = pool.take_zeroed::<f64>("statistics", seg_energy::partials(n) * stride)?;
    // SAFETY: work has n·ch entries, partials blocks·(4ch+1).
    unsafe { k.channel_stats(stream, n as u32, ch as u32, work, &mut partials)? };
    let parts = cuda::download(stream, &partials, "statistics")?;
    pool.keep("statistics", partials);
    let mut stats = vec![[f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0]; ch];
    let mut fractional = 0.0;
    for p in parts.chunks_exact(stride) {
        for (c, st) in stats.iter_mut().enumerate() {
            let q = &p[4 * c..4 * c + 4];
            *st = [st[0].min(q[0]), st[1].max(q[1]), st[2] + q[2], st[3] + q[3]];
        }
        fractional += p[4 * ch];
    }
    Ok(ImageStats {
        params: params_from_stats(&stats, n),
        grey_range: (ch == 1).then(|| (stats[0][0] as f32, stats[0][1] as f32, fractional == 0.0)),
    })
}

impl Working<'_> {
    /// `β` from the mean squared colour distance over the grid's `pairs` neighbour pairs.
    fn contrast(&mut self, pairs: u64) -> Result<f64> {
        let n = self.shape.num_nodes();
        let mut part = self
            .pool
            .take_zeroed::<f64>("pair sums", seg_energy::partials(n))?;
        // SAFETY: work has n·ch entries, part one per block.
        unsafe {
            self.k
                .pair_sum(self.stream, self.shape, self.ch, self.work, &mut part)?
        };
        let sum: f64 = cuda::download(self.stream, &part, "pair sums")?
            .iter()
            .sum();
        self.pool.keep("pair sums", part);
        let mean = if pairs > 0 { sum / pairs as f64 } else { 0.0 };
        Ok(if mean > 0.0 { 1.0 / (2.0 * mean) } else { 0.0 })
    }

    /// The n-links (from per-difference tables for integer grey images of a short range, else
    /// from colour distances through the exp table) and `K`, one more than the largest n-link
    /// sum of a node.
    fn nlinks(
        &mut self,
        grey_range: Option<(f32, f32, bool)>,
        beta: f64,
        spacing: [f64; 3],
        opts: &EnergyOptions,
    ) -> Result<NLinks> {
        let (stream, n) = (self.stream, self.shape.num_nodes());
        let dist = direction_distances(opts.connectivity, spacing);
        let (scale, max_link) = energy::link_scale(opts, &dist)?;
        let deg = self.shape.deg as usize;
        let mut caps = self.pool.take_zeroed::<i32>("n-links", deg * n)?;
        let mut kpart = self
            .pool
            .take_zeroed::<i64>("n-link sums", seg_energy::partials(n))?;
        match grey_range {
            Some((lo, hi, true)) if ((hi - lo) as usize) < NLINK_TABLE_LEVELS => {
                let span = (hi - lo) as usize;
                let (tables, table_of) = energy::grey_nlink_tables(span, beta, &dist, max_link);
                let tables = self.pool.take_upload("n-link tables", &tables)?;
                let table_of = self.pool.take_upload("n-link table index", &table_of)?;
                // SAFETY: tables has span + 1 entries per table and every |difference| of two
                // values is at most span; table_of has deg entries, caps deg·n.
                unsafe {
                    self.k.nlinks_grey_table(
                        stream,
                        self.shape,
                        self.work,
                        &tables,
                        &table_of,
                        span as u32 + 1,
                        &mut caps,
                        &mut kpart,
                    )?
                };
                cuda::sync(stream)?;
                self.pool.keep("n-link tables", tables);
                self.pool.keep("n-link table index", table_of);
            }
            _ => {
                let (table, end) = exp_table(max_link);
                let table = self.pool.take_upload("exp table", &table)?;
                let inv: Vec<f32> = dist.iter().map(|&l| (1.0 / l) as f32).collect();
                let inv = self.pool.take_upload("distances", &inv)?;
                // SAFETY: table has `end` + 2 entries, inv deg, work n·ch, caps deg·n, kpart one
                // per block.
                unsafe {
                    self.k.nlinks(
                        stream,
                        self.shape,
                        self.ch,
                        self.work,
                        beta as f32,
                        &inv,
                        &table,
                        end,
                        &mut caps,
                        &mut kpart,
                    )?
                };
                cuda::sync(stream)?;
                self.pool.keep("exp table", table);
                self.pool.keep("distances", inv);
            }
        }
        let max_sum = cuda::download(stream, &kpart, "n-link sums")?
            .into_iter()
            .max()
            .unwrap_or(0);
        self.pool.keep("n-link sums", kpart);
        let hard = Cap::try_from(1 + max_sum).map_err(|_| {
            Error::Overflow(format!(
                "the hard-seed capacity K = {} (lambda {} at scale {scale}) does not fit {}",
                1 + max_sum,
                opts.lambda,
                Cap::MAX
            ))
        })?;
        Ok(NLinks { caps, scale, hard })
    }
}

/// The GPU side of [`GpuEnergy::new`]'s start: context, memory check, kernels, stream (those of
/// `keep` when given); whether they were kept, and how long it took.
fn device_setup(
    device: Device,
    keep: Option<EnergyKeep>,
    n: usize,
    ch: usize,
    conn: Connectivity,
) -> Result<(EnergyKeep, bool, Duration)> {
    let t = Instant::now();
    // Binds the device's context on this (set-up) thread.
    let g = device.gpu()?;
    let kept = keep.as_ref().map_or(0, |k| k.session.kept_bytes()) as u64;
    // Device bytes: working image, raw upload, seeds, n-links, terminals, and the solver's copy
    // of the graph next to its own state (cuda-grid's bytes per node).
    let deg = conn.degree();
    let per_node = 4 * ch + 4 * ch + 1 + 2 * (4 * deg + 8) + grid_bytes_per_node(conn);
    // What the kept buffers already hold is not asked of the free memory again.
    let needed = ((n * per_node) as u64).saturating_sub(kept);
    let free = g.free_memory()?;
    if needed > free {
        return Err(Error::Unsupported(format!(
            "building the energy on the GPU needs about {needed} bytes, {} has {free} free",
            g.name
        )));
    }
    if let Some(keep) = keep {
        return Ok((keep, true, t.elapsed()));
    }
    let keep = EnergyKeep {
        dims: [0; 3],
        k: SegEnergy::load(g)?,
        session: device.session()?,
        model_kernels: None,
        prior_kernels: None,
    };
    Ok((keep, false, t.elapsed()))
}

/// [`ModelParams::from_image`]'s result from per-channel `[min, max, Σv, Σv²]` over `n` pixels.
fn params_from_stats(stats: &[[f64; 4]], n: usize) -> ModelParams {
    let channels = stats.len();
    let range = stats.iter().map(|s| [s[0] as f32, s[1] as f32]).collect();
    let mut var = 0.0;
    for s in stats {
        let m = s[2] / n.max(1) as f64;
        var += (s[3] / n.max(1) as f64 - m * m).max(0.0);
    }
    var /= channels.max(1) as f64;
    ModelParams {
        channels,
        variance_floor: if var > 0.0 { 1e-3 * var } else { 1.0 },
        range,
    }
}

/// Whether `parts` can be stacked along y into one device grid: 2D graphs of one width and
/// connectivity whose buffers are written on one stream (a pack's parts are built on sibling
/// sessions: [`GpuEnergy::sibling_keep`]).
pub(crate) fn stackable(parts: &[&GpuEnergy]) -> bool {
    let Some(first) = parts.first() else {
        return false;
    };
    parts.iter().all(|p| {
        p.dims[0] == first.dims[0]
            && p.dims[2] == 1
            && p.conn == first.conn
            && Arc::ptr_eq(&p.stream, &first.stream)
    })
}

/// The stacked grid's dimensions `[W, ΣH, 1]` of [`stackable`] parts.
pub(crate) fn stacked_dims(parts: &[&GpuEnergy]) -> [usize; 3] {
    [parts[0].dims[0], parts.iter().map(|p| p.dims[1]).sum(), 1]
}

/// Copies the parts' terminal capacities into `source` and `sink` of the stacked grid (part
/// after part: rows are contiguous, so each part is one block), on the parts' stream.
pub(crate) fn stack_terminals(
    parts: &[&GpuEnergy],
    source: &mut CudaSlice<i32>,
    sink: &mut CudaSlice<i32>,
) -> Result<()> {
    let s = &parts[0].stream;
    let mut off = 0;
    for p in parts {
        let n = p.shape.num_nodes();
        s.memcpy_dtod(&p.source, &mut source.slice_mut(off..off + n))
            .call("cuMemcpyDtoD (stacked source)")?;
        s.memcpy_dtod(&p.sink, &mut sink.slice_mut(off..off + n))
            .call("cuMemcpyDtoD (stacked sink)")?;
        off += n;
    }
    Ok(())
}

/// The parts stacked along y into one grid for the solver, in buffers of `session` (on the
/// parts' stream): each direction's n-links part after part (the layout is direction-major,
/// `caps[dir·N + i]`), and the terminals. A part's arcs out of its own border are zero, so the
/// seams between parts carry nothing: the stacked graph is the parts' disjoint union.
pub(crate) fn stack_grid(parts: &[&GpuEnergy], session: &mut Session) -> Result<DeviceGrid> {
    let dims = stacked_dims(parts);
    let (total, conn) = (dims[1] * dims[0], parts[0].conn);
    let s = parts[0].stream.clone();
    let mut caps = session.take::<i32>("grid caps", conn.degree() * total)?;
    let mut off = 0;
    for p in parts {
        let n = p.shape.num_nodes();
        for dir in 0..conn.degree() {
            let at = dir * total + off;
            s.memcpy_dtod(
                &p.caps.slice(dir * n..(dir + 1) * n),
                &mut caps.slice_mut(at..at + n),
            )
            .call("cuMemcpyDtoD (stacked n-links)")?;
        }
        off += n;
    }
    let mut source = session.take::<i32>("grid source", total)?;
    let mut sink = session.take::<i32>("grid sink", total)?;
    stack_terminals(parts, &mut source, &mut sink)?;
    Ok(DeviceGrid {
        dims,
        conn,
        caps,
        source,
        sink,
        stream: s,
    })
}

/// Device bytes a stacked solve of `nodes` nodes needs beyond the parts' own graphs: the
/// solver's copy of the grid and its state, and the kept stacked terminals.
pub(crate) fn stacked_bytes(nodes: usize, conn: Connectivity) -> u64 {
    (nodes * (4 * (conn.degree() + 2) + grid_bytes_per_node(conn) + 8)) as u64
}

/// Neighbour pairs of a grid: each even direction's arcs.
pub(super) fn pair_count(dims: [usize; 3], conn: Connectivity) -> u64 {
    conn.offsets()
        .iter()
        .step_by(2)
        .map(|&o| {
            valid_box(dims, o)
                .iter()
                .map(|r| r.len() as u64)
                .product::<u64>()
        })
        .sum()
}

/// The sRGB linearisation of every value `0..=full` (as `srgb_to_lab` in pipeline.rs computes it
/// from `value / full`).
fn linear_table(full: f32) -> Vec<f32> {
    (0..=full as u32)
        .map(|v| srgb_linear(v as f32 / full))
        .collect()
}

/// energy.rs's `ExpTable::new(top)`: its values and its end.
fn exp_table(top: f64) -> (Vec<f32>, f32) {
    let steps = (EXP_RANGE * EXP_STEPS) as usize;
    let values = (0..=steps + 1)
        .map(|i| (top * (-(i as f64) / EXP_STEPS).exp()) as f32)
        .collect();
    (values, steps as f32)
}

/// energy.rs's `CostTable` for a grey image with value range `[lo, hi]`: `(D_fg, D_bg)` per node,
/// flattened, and the inverse node step.
fn grey_cost_nodes(
    lo: f32,
    hi: f32,
    integral: bool,
    fg: &dyn ColorModel,
    bg: &dyn ColorModel,
) -> (Vec<f64>, f32) {
    let span = (hi - lo) as f64;
    let (count, step) = if integral && span < COST_TABLE_NODES as f64 {
        (span as usize + 1, 1.0)
    } else {
        (
            COST_TABLE_NODES + 1,
            (span / COST_TABLE_NODES as f64).max(f64::MIN_POSITIVE),
        )
    };
    let nodes: Vec<(f64, f64)> = (0..count)
        .into_par_iter()
        .map(|i| {
            let x = [(lo as f64 + i as f64 * step) as f32];
            (fg.neg_log_likelihood(&x), bg.neg_log_likelihood(&x))
        })
        .collect();
    (
        nodes.into_iter().flat_map(|(a, b)| [a, b]).collect(),
        (1.0 / step) as f32,
    )
}

/// The two classes' mixtures for `tlinks_gmm`: the component data (`[log_coef, mean, L⁻¹ lower
/// triangle by rows]` each) and per class the header `{refit offset, refit k, seeds offset (−1:
/// none), seeds k, ln(1 − w), ln w, ln(1 − ε), ln(ε u)}` (`HEADER` in the kernel; the last is
/// −∞ without an outlier component).
fn pack_models(fg: &Blend<'_>, bg: &Blend<'_>, ch: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut data = Vec::new();
    let mut headers = Vec::new();
    let push = |m: &Model, data: &mut Vec<f64>| -> Result<(f64, f64)> {
        let Model::Gmm(g) = m else {
            return Err(Error::Unsupported(
                "the GPU builder evaluates mixture models only".into(),
            ));
        };
        if g.dim() != ch || g.num_components() > MAX_COMPONENTS {
            return Err(Error::Unsupported(format!(
                "a mixture of {} components over {} channels (the GPU takes {MAX_COMPONENTS} over {ch})",
                g.num_components(),
                g.dim()
            )));
        }
        let offset = data.len() as f64;
        for (log_coef, mean, inv) in g.components() {
            data.push(log_coef);
            data.extend_from_slice(mean);
            for i in 0..ch {
                data.extend_from_slice(&inv[i * ch..i * ch + i + 1]);
            }
        }
        Ok((offset, g.num_components() as f64))
    };
    for class in [fg, bg] {
        let (ro, rk) = push(&class.refit, &mut data)?;
        let (so, sk) = match class.seeds {
            Some(m) => push(m, &mut data)?,
            None => (-1.0, 0.0),
        };
        let [keep, out] = class.outlier.unwrap_or([0.0, f64::NEG_INFINITY]);
        headers.extend_from_slice(&[ro, rk, so, sk, class.log_w[0], class.log_w[1], keep, out]);
    }
    Ok((data, headers))
}
