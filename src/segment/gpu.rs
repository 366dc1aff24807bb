//! The segmentation energy built on the GPU (kernels in `kernels/seg_energy.cu`; this module is
//! the only one that knows their argument order): the image goes up once, the colour conversion,
//! the model statistics, `β`, the n-links, `K` and every round's t-links are computed where the
//! solver runs, and the graph never crosses the bus.
//!
//! The builder redoes the [`energy`](mod@super::energy) module operation for operation (the same
//! `f32`/`f64` expressions in the same order, no fused multiply-add, host-computed tables), so its
//! capacities equal the CPU's except where the device's `cbrt`, `exp` or `log` round differently in the last
//! bit: such a difference moves a capacity by at most one unit, and only when the value lies on a
//! rounding boundary (see `tests/gpu_segment.rs` for the measured fractions). The quantisation
//! guarantees are the CPU's: the same scale, the same `i64` check of `K`, the same clamps.
//!
//! What it covers: grey and 3-channel images and volumes (N4/N8/N6/N26), Gaussian-mixture models
//! of up to [`MAX_COMPONENTS`] components, and any model on grey images large enough for the
//! CPU's cost table. [`supported`] says whether an input is covered; the pipeline builds the others
//! on the CPU.
//!
//! ```no_run
//! use segcut::segment::{gpu::GpuEnergy, pipeline::ColorSpace, energy::EnergyOptions, Image, Seeds};
//! let image = Image::new([64, 48, 1], 1, vec![0.0; 64 * 48]);
//! let seeds = Seeds::unknown(image.dims);
//! let e = GpuEnergy::new(&image, &seeds, ColorSpace::AsIs, &EnergyOptions::default()).unwrap();
//! println!("beta {}, K {}", e.beta, e.hard);
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use rayon::prelude::*;

use super::energy::NLINK_TABLE_LEVELS;
use super::energy::{self, direction_distances, EnergyOptions, COST_TABLE_NODES};
use super::model::{ColorModel, Model, ModelKind, ModelParams};
use super::pipeline::{srgb_to_lab, Blend, ColorSpace};
use crate::cuda::{gpu, DeviceGrid};
use crate::graph::{valid_box, Cap, Connectivity, GridGraph};
use crate::io::{Image, Seeds};
use crate::maxflow::Cut;
use crate::{Error, Result};

/// Threads per block (`BLOCK` in the kernels, which size their shared memory by it).
const BLOCK: u32 = 256;
/// Most blocks of a launch: the kernels stride over the grid, and reductions leave one partial
/// per block for the host to add.
const MAX_BLOCKS: u32 = 2048;
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
    if image.num_pixels() > (u32::MAX - 2) as usize {
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
}

/// The grid's shape as every kernel takes it (`struct Grid` in `kernels/seg_energy.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Shape {
    w: u32,
    h: u32,
    d: u32,
    n: u32,
    deg: u32,
    is3d: u32,
}

// SAFETY: plain `repr(C)` struct of u32 fields, the same layout as the kernels' `struct Grid`.
unsafe impl DeviceRepr for Shape {}

struct Kernels {
    lab_from_u8: CudaFunction,
    lab_from_f32: CudaFunction,
    widen_u8: CudaFunction,
    channel_stats: CudaFunction,
    pair_sum: CudaFunction,
    nlinks: CudaFunction,
    nlinks_grey_table: CudaFunction,
    tlinks_gmm: CudaFunction,
    tlinks_grey_table: CudaFunction,
    cut_capacity: CudaFunction,
}

/// How the pixels' working values (the colour space the models and contrasts use) are obtained
/// from the original image: the same rule as [`to_color_space`](super::pipeline::to_color_space).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WorkSpace {
    /// The image's own values.
    AsIs,
    /// Lab from sRGB of this full scale (255 or 65535).
    Lab(f32),
}

impl WorkSpace {
    /// The space [`to_color_space`](super::pipeline::to_color_space) would use for an image of
    /// `channels` channels whose values span `[lo, hi]`.
    pub fn of(channels: usize, lo: f32, hi: f32, space: ColorSpace) -> Self {
        if space == ColorSpace::Lab && channels == 3 && lo >= 0.0 && hi <= 65535.0 {
            return WorkSpace::Lab(if hi > 255.0 { 65535.0 } else { 255.0 });
        }
        WorkSpace::AsIs
    }

    /// Pixel `i` of `image` in this space, appended to `out`.
    pub fn push_pixel(self, image: &Image, i: usize, out: &mut Vec<f32>) {
        let px = image.pixel(i);
        match self {
            WorkSpace::AsIs => out.extend_from_slice(px),
            WorkSpace::Lab(full) => {
                out.extend_from_slice(&srgb_to_lab([px[0] / full, px[1] / full, px[2] / full]))
            }
        }
    }
}

/// The energy's graph in GPU memory, with what the rounds need to rewrite its t-links and to
/// check cuts. Built by [`GpuEnergy::new`]; t-links by [`GpuEnergy::set_tlinks`].
pub struct GpuEnergy {
    stream: Arc<CudaStream>,
    k: Kernels,
    shape: Shape,
    conn: Connectivity,
    dims: [usize; 3],
    channels: usize,
    work: CudaSlice<f32>,
    seeds: CudaSlice<u8>,
    caps: CudaSlice<i32>,
    source: CudaSlice<i32>,
    sink: CudaSlice<i32>,
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

fn launch_cfg(n: usize) -> LaunchConfig {
    let blocks = (n.div_ceil(BLOCK as usize) as u32).clamp(1, MAX_BLOCKS);
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn driver_err(call: &str, e: cudarc::driver::DriverError) -> Error {
    crate::cuda::driver_err(call, e)
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

impl GpuEnergy {
    /// Uploads `image` and `seeds`, converts the image to its working space (`space` as
    /// [`to_color_space`](super::pipeline::to_color_space) applies it), and builds `β`, the
    /// n-links and `K` on the GPU. The t-links are zero until [`GpuEnergy::set_tlinks`].
    ///
    /// Errors: the CPU builder's input and overflow errors, the same; [`Error::Unsupported`] when
    /// no GPU is usable, the input is not covered ([`supported`]) or the GPU lacks memory.
    pub fn new(
        image: &Image,
        seeds: &Seeds,
        space: ColorSpace,
        opts: &EnergyOptions,
    ) -> Result<Self> {
        let t0 = Instant::now();
        energy::check_seeds(image, seeds)?;
        energy::check_options(image, opts)?;
        if !matches!(image.channels, 1 | 3) || image.num_pixels() > (u32::MAX - 2) as usize {
            return Err(Error::Unsupported(format!(
                "the GPU energy builder takes 1- or 3-channel images below 2^32 pixels, not {} channels of {:?}",
                image.channels, image.dims
            )));
        }
        let n = image.num_pixels();
        if n == 0 || image.data.len() != n * image.channels {
            energy::check_image(image)?;
        }
        let conn = opts.connectivity;
        let ch = image.channels;
        // The kernels load (from the disk cache, at worst NVRTC) while the host reads the image.
        let (pass, setup) = std::thread::scope(|scope| {
            let setup = scope.spawn(|| device_setup(n, ch, conn));
            let pass = host_pass(&image.data);
            let setup = setup.join().unwrap_or_else(|_| {
                Err(Error::Unsupported("the GPU set-up thread panicked".into()))
            });
            (pass, setup)
        });
        if !pass.finite || image.spacing.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            energy::check_image(image)?;
        }
        let (k, stream, setup_time) = setup?;
        let bytes = pass.bytes;
        let ws = WorkSpace::of(image.channels, pass.lo, pass.hi, space);
        // Lab on the device needs integer values (a table index); others are converted here.
        let host_lab = match ws {
            WorkSpace::Lab(_)
                if bytes.is_none() && image.data.par_iter().any(|v| v.fract() != 0.0) =>
            {
                Some(super::pipeline::to_color_space(image, space).into_owned())
            }
            _ => None,
        };
        let (upload_src, ws_device) = match &host_lab {
            Some(lab) => (lab, WorkSpace::AsIs),
            None => (image, ws),
        };
        let deg = conn.degree();
        let t_host = Instant::now();
        let t_setup = t_host;
        let alloc = |what: &'static str| move |e| driver_err(&format!("cuMemAlloc ({what})"), e);
        let htod = |what: &'static str| move |e| driver_err(&format!("cuMemcpyHtoD ({what})"), e);

        // Upload: bytes when the values are 8-bit, else floats.
        let raw_u8 = match (&bytes, &host_lab) {
            (Some(b), None) => Some(stream.clone_htod(b).map_err(htod("image"))?),
            _ => None,
        };
        let raw_f32 = match raw_u8 {
            Some(_) => None,
            None => Some(stream.clone_htod(&upload_src.data).map_err(htod("image"))?),
        };
        let seeds_dev = stream
            .clone_htod(seed_bytes(seeds))
            .map_err(htod("seeds"))?;
        sync(&stream)?;
        drop(bytes);
        let t1 = Instant::now();

        // Working image.
        let cfg = launch_cfg(n);
        let work = match (ws_device, &raw_u8, raw_f32) {
            (WorkSpace::Lab(full), raw_u8, raw_f32) => {
                let lin = linear_table(full);
                let lin = stream.clone_htod(&lin).map_err(htod("sRGB table"))?;
                let mut lab = stream
                    .alloc_zeros::<f32>(3 * n)
                    .map_err(alloc("Lab image"))?;
                let nn = n as u32;
                match (raw_u8, &raw_f32) {
                    (Some(rgb), _) => {
                        // SAFETY: arguments match `lab_from_u8`; rgb and lab have 3n entries,
                        // lin 256 (the values are bytes).
                        unsafe {
                            stream
                                .launch_builder(&k.lab_from_u8)
                                .arg(&nn)
                                .arg(rgb)
                                .arg(&lin)
                                .arg(&mut lab)
                                .launch(cfg)
                        }
                        .map_err(|e| driver_err("cuLaunchKernel (lab_from_u8)", e))?;
                    }
                    (None, Some(rgb)) => {
                        // SAFETY: arguments match `lab_from_f32`; rgb and lab have 3n entries,
                        // every value is an integer in 0..=full (WorkSpace::of and the check
                        // above), lin has full + 1 entries.
                        unsafe {
                            stream
                                .launch_builder(&k.lab_from_f32)
                                .arg(&nn)
                                .arg(rgb)
                                .arg(&lin)
                                .arg(&mut lab)
                                .launch(cfg)
                        }
                        .map_err(|e| driver_err("cuLaunchKernel (lab_from_f32)", e))?;
                    }
                    (None, None) => unreachable!("one of the two uploads is made"),
                }
                lab
            }
            (WorkSpace::AsIs, Some(raw), _) => {
                let count = (n * ch) as u64;
                let mut out = stream.alloc_zeros::<f32>(n * ch).map_err(alloc("image"))?;
                // SAFETY: arguments match `widen_u8`; both buffers have `count` entries.
                unsafe {
                    stream
                        .launch_builder(&k.widen_u8)
                        .arg(&count)
                        .arg(raw)
                        .arg(&mut out)
                        .launch(launch_cfg(n * ch))
                }
                .map_err(|e| driver_err("cuLaunchKernel (widen_u8)", e))?;
                out
            }
            (WorkSpace::AsIs, None, Some(raw)) => raw,
            (WorkSpace::AsIs, None, None) => unreachable!("one of the two uploads is made"),
        };
        drop(raw_u8);

        // Model parameters and the value range, from per-block partials.
        let stride = 4 * ch + 1;
        let mut partials = stream
            .alloc_zeros::<f64>(cfg.grid_dim.0 as usize * stride)
            .map_err(alloc("statistics"))?;
        let (nn, chu) = (n as u32, ch as u32);
        // SAFETY: arguments match `channel_stats`; work has n·ch entries, partials blocks·(4ch+1).
        unsafe {
            stream
                .launch_builder(&k.channel_stats)
                .arg(&nn)
                .arg(&chu)
                .arg(&work)
                .arg(&mut partials)
                .launch(cfg)
        }
        .map_err(|e| driver_err("cuLaunchKernel (channel_stats)", e))?;
        let parts = dtoh(&stream, &partials, "statistics")?;
        let mut stats = vec![[f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0]; ch];
        let mut fractional = 0.0;
        for p in parts.chunks_exact(stride) {
            for (c, st) in stats.iter_mut().enumerate() {
                let q = &p[4 * c..4 * c + 4];
                *st = [st[0].min(q[0]), st[1].max(q[1]), st[2] + q[2], st[3] + q[3]];
            }
            fractional += p[4 * ch];
        }
        let params = params_from_stats(&stats, n);
        let grey_range =
            (ch == 1).then(|| (stats[0][0] as f32, stats[0][1] as f32, fractional == 0.0));
        let t2 = Instant::now();

        // β, the scale and the n-links with K.
        let shape = Shape {
            w: image.dims[0] as u32,
            h: image.dims[1] as u32,
            d: image.dims[2] as u32,
            n: n as u32,
            deg: deg as u32,
            is3d: conn.is_3d() as u32,
        };
        let beta = match opts.sigma {
            Some(s) => 1.0 / (2.0 * s * s),
            None => {
                let mut part = stream
                    .alloc_zeros::<f64>(cfg.grid_dim.0 as usize)
                    .map_err(alloc("pair sums"))?;
                // SAFETY: arguments match `pair_sum`; work has n·ch entries, part one per block.
                unsafe {
                    stream
                        .launch_builder(&k.pair_sum)
                        .arg(&shape)
                        .arg(&chu)
                        .arg(&work)
                        .arg(&mut part)
                        .launch(cfg)
                }
                .map_err(|e| driver_err("cuLaunchKernel (pair_sum)", e))?;
                let sum: f64 = dtoh(&stream, &part, "pair sums")?.iter().sum();
                let count = pair_count(image.dims, conn);
                let mean = if count > 0 { sum / count as f64 } else { 0.0 };
                if mean > 0.0 {
                    1.0 / (2.0 * mean)
                } else {
                    0.0
                }
            }
        };
        let dist = direction_distances(conn, image.spacing);
        let (scale, max_link) = energy::link_scale(opts, &dist)?;
        let mut caps = stream
            .alloc_zeros::<i32>(deg * n)
            .map_err(alloc("n-links"))?;
        let mut kpart = stream
            .alloc_zeros::<i64>(cfg.grid_dim.0 as usize)
            .map_err(alloc("n-link sums"))?;
        match grey_range {
            Some((lo, hi, true)) if ((hi - lo) as usize) < NLINK_TABLE_LEVELS => {
                let span = (hi - lo) as usize;
                let (tables, table_of) = energy::grey_nlink_tables(span, beta, &dist, max_link);
                let tables = stream.clone_htod(&tables).map_err(htod("n-link tables"))?;
                let table_of = stream
                    .clone_htod(&table_of)
                    .map_err(htod("n-link tables"))?;
                let span1 = span as u32 + 1;
                // SAFETY: arguments match `nlinks_grey_table`; tables has span1 entries per
                // table and every |difference| of two values is at most span; caps has deg·n.
                unsafe {
                    stream
                        .launch_builder(&k.nlinks_grey_table)
                        .arg(&shape)
                        .arg(&work)
                        .arg(&tables)
                        .arg(&table_of)
                        .arg(&span1)
                        .arg(&mut caps)
                        .arg(&mut kpart)
                        .launch(cfg)
                }
                .map_err(|e| driver_err("cuLaunchKernel (nlinks_grey_table)", e))?;
                sync(&stream)?;
            }
            _ => {
                let (table, end) = exp_table(max_link);
                let table = stream.clone_htod(&table).map_err(htod("exp table"))?;
                let inv: Vec<f32> = dist.iter().map(|&l| (1.0 / l) as f32).collect();
                let inv = stream.clone_htod(&inv).map_err(htod("distances"))?;
                let beta32 = beta as f32;
                // SAFETY: arguments match `nlinks`; table has `end` + 2 entries, inv deg, work
                // n·ch, caps deg·n, kpart one per block.
                unsafe {
                    stream
                        .launch_builder(&k.nlinks)
                        .arg(&shape)
                        .arg(&chu)
                        .arg(&work)
                        .arg(&beta32)
                        .arg(&inv)
                        .arg(&table)
                        .arg(&end)
                        .arg(&mut caps)
                        .arg(&mut kpart)
                        .launch(cfg)
                }
                .map_err(|e| driver_err("cuLaunchKernel (nlinks)", e))?;
                sync(&stream)?;
            }
        }
        let max_sum = dtoh(&stream, &kpart, "n-link sums")?
            .into_iter()
            .max()
            .unwrap_or(0);
        let hard = Cap::try_from(1 + max_sum).map_err(|_| {
            Error::Overflow(format!(
                "the hard-seed capacity K = {} (lambda {} at scale {scale}) does not fit {}",
                1 + max_sum,
                opts.lambda,
                Cap::MAX
            ))
        })?;
        let source = stream
            .alloc_zeros::<i32>(n)
            .map_err(alloc("source capacities"))?;
        let sink = stream
            .alloc_zeros::<i32>(n)
            .map_err(alloc("sink capacities"))?;
        let t3 = Instant::now();
        Ok(GpuEnergy {
            stream,
            k,
            shape,
            conn,
            dims: image.dims,
            channels: ch,
            work,
            seeds: seeds_dev,
            caps,
            source,
            sink,
            space: ws,
            params,
            grey_range,
            beta,
            scale,
            hard,
            unary_constant: 0.0,
            times: GpuTimes {
                host: t_host - t0,
                setup: setup_time,
                upload: t1 - t_setup,
                convert: t2 - t1,
                nlinks: t3 - t2,
            },
        })
    }

    /// Writes the t-links from the seeds and the two classes' models (as
    /// [`energy::set_tlinks`]): hard seeds `(K, 0)` / `(0, K)`, other pixels their net cost
    /// clamped to `K`. `image` is the original image (for naming a pixel whose costs are unusable).
    pub fn set_tlinks(&mut self, image: &Image, fg: &Blend<'_>, bg: &Blend<'_>) -> Result<()> {
        let n = self.shape.n as usize;
        let cfg = launch_cfg(n);
        let s = &self.stream;
        let htod = |what: &'static str| move |e| driver_err(&format!("cuMemcpyHtoD ({what})"), e);
        let mut part = s
            .alloc_zeros::<f64>(cfg.grid_dim.0 as usize)
            .map_err(|e| driver_err("cuMemAlloc (t-link sums)", e))?;
        let mut bad = s.clone_htod(&[u32::MAX]).map_err(htod("t-link flag"))?;
        let (scale, k) = (self.scale, self.hard);
        let nn = n as u32;
        let table = match self.grey_range {
            Some((lo, hi, integral)) if n >= 4 * COST_TABLE_NODES => Some((lo, hi, integral)),
            _ => None,
        };
        if let Some((lo, hi, integral)) = table {
            let (nodes, inv_step) = grey_cost_nodes(lo, hi, integral, fg, bg);
            let count = (nodes.len() / 2) as u32;
            let nodes = s.clone_htod(&nodes).map_err(htod("cost table"))?;
            // SAFETY: arguments match `tlinks_grey_table`; nodes has 2·count entries, the other
            // arrays n, part one per block, bad one.
            unsafe {
                s.launch_builder(&self.k.tlinks_grey_table)
                    .arg(&nn)
                    .arg(&self.work)
                    .arg(&self.seeds)
                    .arg(&nodes)
                    .arg(&count)
                    .arg(&lo)
                    .arg(&inv_step)
                    .arg(&scale)
                    .arg(&k)
                    .arg(&mut self.source)
                    .arg(&mut self.sink)
                    .arg(&mut part)
                    .arg(&mut bad)
                    .launch(cfg)
            }
            .map_err(|e| driver_err("cuLaunchKernel (tlinks_grey_table)", e))?;
            sync(s)?;
        } else {
            let (models, headers) = pack_models(fg, bg, self.channels)?;
            let models = s.clone_htod(&models).map_err(htod("models"))?;
            let headers = s.clone_htod(&headers).map_err(htod("models"))?;
            let ch = self.channels as u32;
            // SAFETY: arguments match `tlinks_gmm`; the headers' offsets and counts lie inside
            // `models` (pack_models), work has n·ch entries, the other arrays n, part one per
            // block, bad one.
            unsafe {
                s.launch_builder(&self.k.tlinks_gmm)
                    .arg(&nn)
                    .arg(&ch)
                    .arg(&self.work)
                    .arg(&self.seeds)
                    .arg(&models)
                    .arg(&headers)
                    .arg(&scale)
                    .arg(&k)
                    .arg(&mut self.source)
                    .arg(&mut self.sink)
                    .arg(&mut part)
                    .arg(&mut bad)
                    .launch(cfg)
            }
            .map_err(|e| driver_err("cuLaunchKernel (tlinks_gmm)", e))?;
            sync(s)?;
        }
        let bad = dtoh(s, &bad, "t-link flag")?[0];
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
        self.unary_constant = dtoh(s, &part, "t-link sums")?.iter().sum();
        Ok(())
    }

    /// A copy of the graph for the solver (which consumes it); the n-links stay here for the
    /// next round.
    pub fn device_grid(&self) -> Result<DeviceGrid> {
        let s = &self.stream;
        let dtod = |e| driver_err("cuMemcpyDtoD (graph copy)", e);
        Ok(DeviceGrid {
            dims: self.dims,
            conn: self.conn,
            caps: s.clone_dtod(&self.caps).map_err(dtod)?,
            source: s.clone_dtod(&self.source).map_err(dtod)?,
            sink: s.clone_dtod(&self.sink).map_err(dtod)?,
            stream: s.clone(),
        })
    }

    /// The capacity of `cut` in this graph, computed on the GPU (the certificate check of
    /// [`verify`](crate::maxflow::verify)): an error unless it equals the cut's flow.
    pub fn verify(&self, cut: &Cut) -> Result<()> {
        let n = self.shape.n as usize;
        if cut.sink_side.len() != n {
            return Err(Error::Graph(format!(
                "cut has {} nodes but the graph has {n}",
                cut.sink_side.len()
            )));
        }
        let s = &self.stream;
        // SAFETY: bool is one byte, 0 or 1.
        let side: &[u8] =
            unsafe { std::slice::from_raw_parts(cut.sink_side.as_ptr() as *const u8, n) };
        let side = s
            .clone_htod(side)
            .map_err(|e| driver_err("cuMemcpyHtoD (cut)", e))?;
        let cfg = launch_cfg(n);
        let mut part = s
            .alloc_zeros::<u64>(cfg.grid_dim.0 as usize)
            .map_err(|e| driver_err("cuMemAlloc (cut sums)", e))?;
        // SAFETY: arguments match `cut_capacity`; caps has deg·n entries, the others n, part one
        // per block.
        unsafe {
            s.launch_builder(&self.k.cut_capacity)
                .arg(&self.shape)
                .arg(&self.caps)
                .arg(&self.source)
                .arg(&self.sink)
                .arg(&side)
                .arg(&mut part)
                .launch(cfg)
        }
        .map_err(|e| driver_err("cuLaunchKernel (cut_capacity)", e))?;
        let cap: i128 = dtoh(s, &part, "cut sums")?.iter().map(|&c| c as i128).sum();
        if cap != cut.flow as i128 {
            return Err(Error::Certificate {
                flow: cut.flow,
                cut_capacity: i64::try_from(cap).unwrap_or(i64::MAX),
            });
        }
        Ok(())
    }

    /// The graph brought back to the host (for `--export-graph`, `keep_graph` and tests).
    pub fn download(&self) -> Result<GridGraph> {
        let [w, h, d] = self.dims;
        let mut g = GridGraph::new(w, h, d, self.conn)?;
        let n = g.num_nodes();
        let caps = dtoh(&self.stream, &self.caps, "capacities")?;
        for dir in 0..self.conn.degree() {
            g.caps_mut(dir)
                .copy_from_slice(&caps[dir * n..(dir + 1) * n]);
        }
        let source = dtoh(&self.stream, &self.source, "source capacities")?;
        let sink = dtoh(&self.stream, &self.sink, "sink capacities")?;
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

/// The GPU side of [`GpuEnergy::new`]'s start: context, memory check, kernels, stream; and how
/// long it took.
fn device_setup(
    n: usize,
    ch: usize,
    conn: Connectivity,
) -> Result<(Kernels, Arc<CudaStream>, Duration)> {
    let t = Instant::now();
    let g = gpu()?;
    g.ctx
        .bind_to_thread()
        .map_err(|e| driver_err("cuCtxSetCurrent", e))?;
    // Device bytes: working image, raw upload, seeds, n-links, terminals, and the solver's copy
    // of the graph next to its own state (cuda-grid's bytes per node).
    let deg = conn.degree();
    let per_node =
        4 * ch + 4 * ch + 1 + 2 * (4 * deg + 8) + crate::maxflow::cuda::grid_bytes_per_node(conn);
    let needed = (n * per_node) as u64;
    let (free, _) = g
        .ctx
        .mem_get_info()
        .map_err(|e| driver_err("cuMemGetInfo", e))?;
    if needed > free as u64 {
        return Err(Error::Unsupported(format!(
            "building the energy on the GPU needs about {needed} bytes, {} has {free} free",
            g.name
        )));
    }
    let module = g.module("seg_energy")?;
    let load = |name: &str| {
        module
            .load_function(name)
            .map_err(|e| driver_err(&format!("cuModuleGetFunction ({name})"), e))
    };
    let k = Kernels {
        lab_from_u8: load("lab_from_u8")?,
        lab_from_f32: load("lab_from_f32")?,
        widen_u8: load("widen_u8")?,
        channel_stats: load("channel_stats")?,
        pair_sum: load("pair_sum")?,
        nlinks: load("nlinks")?,
        nlinks_grey_table: load("nlinks_grey_table")?,
        tlinks_gmm: load("tlinks_gmm")?,
        tlinks_grey_table: load("tlinks_grey_table")?,
        cut_capacity: load("cut_capacity")?,
    };
    let stream = g
        .ctx
        .new_stream()
        .map_err(|e| driver_err("cuStreamCreate", e))?;
    Ok((k, stream, t.elapsed()))
}

fn sync(s: &Arc<CudaStream>) -> Result<()> {
    s.synchronize()
        .map_err(|e| driver_err("cuStreamSynchronize", e))
}

fn dtoh<T: DeviceRepr + Default + Clone>(
    s: &Arc<CudaStream>,
    buf: &CudaSlice<T>,
    what: &str,
) -> Result<Vec<T>> {
    let v = s
        .clone_dtoh(buf)
        .map_err(|e| driver_err(&format!("cuMemcpyDtoH ({what})"), e))?;
    sync(s)?;
    Ok(v)
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

/// Neighbour pairs of a grid: each even direction's arcs.
fn pair_count(dims: [usize; 3], conn: Connectivity) -> u64 {
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
        .map(|v| super::pipeline::srgb_linear(v as f32 / full))
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
/// none), seeds k, ln(1 − w), ln w}`.
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
        headers.extend_from_slice(&[ro, rk, so, sk, class.log_w[0], class.log_w[1]]);
    }
    Ok((data, headers))
}
