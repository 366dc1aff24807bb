//! The stroke-geometry prior ([`super::prior`]) computed where the GPU energy lives: the geodesic
//! distances to the foreground and the background strokes, and the prior's per-pixel costs, never
//! leave the device unless asked for ([`GpuEnergy::prior_host`]). The kernels are in
//! `kernels/seg_prior.cu`, launched through `src/cuda/launch/seg_prior.rs`.
//!
//! **The same quantity as the CPU.** The CPU's distances are the unique `f32` fixed point of the
//! relaxation `d(p) = min_q fl(d(q) + step(p, q))` ([`super::prior`]'s docs), which any schedule
//! reaches when run until nothing changes (docs/segmentation.md, "Why any schedule gives the
//! same bits"). The device runs sweeps along each axis in both directions, a warp per strip of 32
//! lines (the neighbouring lines' previous step through warp shuffles, the chunk's distances
//! through a shared tile, transposed along x so that loads are contiguous), until a pass lowers
//! no distance. Passes go in batches of launches with a flag per pass and one read of the flags
//! per batch; a pass after one that changed nothing returns at once on the device. Its step
//! lengths are the CPU's expressions in the same order without fused multiply-adds, with IEEE
//! `sqrt`, so the fixed point is the same bits. The one input that may differ is the colour
//! factor `(κ/σ)²`: `σ²` is a sum over all neighbour pairs, added in another order on the
//! device; for integer-valued images (8- and 16-bit files) every term and partial sum is an
//! integer below 2⁵³, so it is exact and the distances equal the CPU's bit for bit; for float
//! images the factor can differ by one `f32` unit, and the distances then by a relative 2⁻²² at
//! most ([`PRIOR_TOLERANCE`]).
//!
//! **The enclosure where the prior is.** When the enclosure is the prior's only adaptation to the
//! strokes (explained share 1, the default), [`GpuEnergy::scale_prior_by_enclosure`] scales it
//! on the device: the border's integer counts reduced there, `E` and `E^k` from them by the
//! host's own functions, one `f32` product per pixel there. The host's bits, and only 16 bytes
//! cross the bus.
//!
//! **When the device stops.** Photos converge in about 10–20 passes; a path that turns often
//! (a maze, a spiral) needs about a pass per turn. After [`MAX_DEVICE_PASSES`] passes, or when
//! the device lacks memory for its per-pixel buffers, the prior is computed on the host by
//! [`prior_costs`] (the CPU's sweeps and Dijkstra fallback) and uploaded: the same result,
//! [`PriorRun::Host`] says why.

use cudarc::driver::CudaSlice;

use super::energy::{self, direction_distances};
use super::gpu::{pair_count, GpuEnergy, Original, RawImage};
use super::prior::{enclosure_gain, enclosure_of_counts, prior_costs, SpatialPrior};
use crate::cuda::launch::seg_energy::partials;
use crate::cuda::launch::seg_prior::{SegPrior, STRIP};
use crate::cuda::{self, GridShape};
use crate::graph::Connectivity;
use crate::io::{Image, Seed, Seeds};
use crate::{Error, Result};

/// Passes (sweeps along every axis, both directions) the device runs before it hands the prior
/// to the host. Photos need a handful; a path that turns often (a maze, a spiral) about a pass per
/// turn, which the device still runs in milliseconds where the host's Dijkstra takes seconds at 4K.
pub const MAX_DEVICE_PASSES: usize = 512;

/// Passes launched before the first read of the flags; each later batch is twice the last.
const FIRST_BATCH: usize = 4;

/// Warps a sweep aims to give the GPU: a sweep is a chain of dependent steps per warp, and a
/// small image has too few strips of 32 lines to keep even one warp per SM busy.
const SWEEP_WARPS: usize = 512;

/// The shortest segment a sweep cuts an axis into, in steps: a path crosses at most one
/// segment boundary per pass, so short segments would cost passes.
const MIN_SEGMENT: usize = 128;

/// Steps per segment of a sweep along `axis` (a multiple of the strip width): as many segments
/// as bring the sweep to [`SWEEP_WARPS`] warps, none shorter than [`MIN_SEGMENT`] steps.
pub(super) fn segment_steps(dims: [usize; 3], axis: u32) -> u32 {
    let len = dims[axis as usize].max(1);
    let (a, b) = match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let strips = dims[a].div_ceil(STRIP as usize).max(1) * dims[b].max(1);
    let segments = SWEEP_WARPS
        .div_ceil(strips)
        .clamp(1, len.div_ceil(MIN_SEGMENT).max(1));
    let seg = len.div_ceil(segments).next_multiple_of(STRIP as usize);
    seg.min(u32::MAX as usize) as u32
}

/// The largest relative difference between device and host distances (and, times `γ`, between
/// their prior costs) on float-valued images: one unit of the colour factor in `f32`. On
/// integer-valued images the two are equal.
pub const PRIOR_TOLERANCE: f64 = 1.0 / (1u64 << 22) as f64;

/// Where the stroke-geometry prior was computed: [`GpuEnergy::compute_prior`]'s answer, or the
/// CPU pipeline's ([`SegmentStats::prior_run`](super::SegmentStats::prior_run)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PriorRun {
    /// No prior: its weight is 0 or a class has no hard seed (as [`prior_costs`] returns `None`).
    Off,
    /// On the device, in this many passes (the last one changed nothing).
    Device {
        /// Passes run.
        passes: usize,
    },
    /// On the host, then uploaded, because the device could not (the reason).
    Host(String),
    /// On the host, where the whole energy was built (no GPU graph).
    Cpu,
}

impl PriorRun {
    /// `off`, `device`, `host` (the device's fallback) or `cpu`, as reports name it.
    pub fn name(&self) -> &'static str {
        match self {
            PriorRun::Off => "off",
            PriorRun::Device { .. } => "device",
            PriorRun::Host(_) => "host",
            PriorRun::Cpu => "cpu",
        }
    }
}

/// Where the prior was adapted to the strokes after the first fit
/// ([`SegmentStats::prior_adapted`](super::SegmentStats::prior_adapted)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adapted {
    /// On the device: scaled by the enclosure where it was computed
    /// ([`GpuEnergy::scale_prior_by_enclosure`]); no copy of it left the device.
    Device,
    /// On the host (the CPU pipeline's prior, or a device's copy for the explained-colour
    /// share, uploaded again).
    Host,
}

impl Adapted {
    /// `device` or `host`, as reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Adapted::Device => "device",
            Adapted::Host => "host",
        }
    }
}

impl GpuEnergy {
    /// Computes the stroke-geometry prior ([`prior_costs`] of `image`, the input image this
    /// energy was built from, with `seeds`, the seeds it was built with) on the device and keeps
    /// it as the prior every later [`GpuEnergy::set_tlinks`] adds, as [`GpuEnergy::set_prior`]
    /// would; [`PriorRun::Off`] removes it. Falls back to the host as the module docs say.
    ///
    /// Errors: [`prior_costs`]'s input errors; a mismatch between `image` and the energy's
    /// image; a device failure other than running out of memory.
    pub fn compute_prior(
        &mut self,
        image: &Image,
        seeds: &Seeds,
        prior: &SpatialPrior,
    ) -> Result<PriorRun> {
        prior.check()?;
        energy::check_seeds(image, seeds)?;
        if image.dims != self.dims || image.channels != self.channels {
            return Err(Error::Graph(format!(
                "the prior's image ({:?}, {} channels) is not the energy's ({:?}, {} channels)",
                image.dims, image.channels, self.dims, self.channels
            )));
        }
        let counts = seeds.counts();
        if prior.weight == 0.0
            || counts[Seed::Foreground as usize] == 0
            || counts[Seed::Background as usize] == 0
        {
            self.prior = None;
            return Ok(PriorRun::Off);
        }
        match self.device_prior(image, prior) {
            Ok((costs, passes)) => {
                self.prior = Some(costs);
                Ok(PriorRun::Device { passes })
            }
            Err(Error::Unsupported(reason)) => {
                self.prior = None;
                let host = prior_costs(image, seeds, prior)?;
                self.set_prior(host.as_deref())?;
                Ok(PriorRun::Host(reason))
            }
            Err(e) => Err(e),
        }
    }

    /// The prior the t-links add, brought to the host (`None` without one).
    pub fn prior_host(&self) -> Result<Option<Vec<f32>>> {
        match &self.prior {
            None => Ok(None),
            Some(p) => Ok(Some(cuda::download(&self.stream, p, "prior")?)),
        }
    }

    /// Scales the prior the t-links add by the strokes' enclosure and `coverage` (the seeds'
    /// [`stroke_coverage`](super::prior::stroke_coverage), from the host), as
    /// [`scale_by_enclosure`](super::prior::scale_by_enclosure) does on the host, where the prior is: `E`'s integer counts are
    /// added up on the device (`prior_enclosure`; 16 bytes come back), the factor
    /// [`enclosure_gain`] is the host's expression, and each pixel's product is the host's
    /// `f32` product (`prior_scale`). So the prior, and the `E` returned, are the host's bits,
    /// and the prior never leaves the device. `None` (nothing changed) when
    /// [`SpatialPrior::enclosure`] and [`SpatialPrior::coverage`] are 0 or there is no prior.
    ///
    /// Errors: a device failure.
    pub fn scale_prior_by_enclosure(
        &mut self,
        prior: &SpatialPrior,
        coverage: f64,
    ) -> Result<Option<f64>> {
        self.scale_prior_by_counted_enclosure(prior, coverage, None)
    }

    /// Loads the prior's kernels on first use.
    fn load_prior_kernels(&mut self) -> Result<()> {
        if self.prior_kernels.is_none() {
            self.prior_kernels = Some(SegPrior::load(self.device.gpu()?)?);
        }
        Ok(())
    }

    /// The strokes' enclosure `E` of the prior the graph holds (`None` without a prior, or
    /// where [`enclosure_of_counts`] has none), counted on the device: one host wait for its two
    /// integer counts. The host's `prior::enclosure` of the same values.
    pub fn prior_enclosure(&mut self) -> Result<Option<f64>> {
        if self.prior.is_none() {
            return Ok(None);
        }
        self.load_prior_kernels()?;
        let (Some(k), Some(p)) = (self.prior_kernels.as_ref(), self.prior.as_ref()) else {
            return Ok(None);
        };
        let s = &self.stream;
        let g = self.shape;
        let mut counts = self.pool.take_zeroed::<u64>("enclosure counts", 2)?;
        // SAFETY: p has n entries, counts 2, zeroed.
        unsafe { k.enclosure(s, g, p, &mut counts)? };
        let c = cuda::download(s, &counts, "enclosure counts")?;
        self.pool.keep("enclosure counts", counts);
        Ok(enclosure_of_counts(c[0], c[1]))
    }

    /// [`GpuEnergy::scale_prior_by_enclosure`], with the enclosure already counted
    /// ([`GpuEnergy::prior_enclosure`] of the same prior, `Some(e)`) so that an image counts it
    /// once; `None`: count it here.
    pub fn scale_prior_by_counted_enclosure(
        &mut self,
        prior: &SpatialPrior,
        coverage: f64,
        counted: Option<Option<f64>>,
    ) -> Result<Option<f64>> {
        if !prior.scales() || self.prior.is_none() {
            return Ok(None);
        }
        let e = match counted {
            Some(e) => e,
            None => self.prior_enclosure()?,
        };
        let Some(e) = e else {
            return Ok(None);
        };
        self.load_prior_kernels()?;
        let (Some(k), Some(p)) = (self.prior_kernels.as_ref(), self.prior.as_mut()) else {
            return Ok(None);
        };
        let s = &self.stream;
        // The energy's grid: only its size enters the counts.
        let g = self.shape;
        let gain = enclosure_gain(e, coverage, prior);
        // SAFETY: p has n entries.
        unsafe { k.scale(s, g.n, gain, p)? };
        Ok(Some(e))
    }

    /// The prior's costs on the device and the passes its distances took; `Unsupported` when
    /// the device lacks memory or the sweeps do not converge in [`MAX_DEVICE_PASSES`].
    fn device_prior(
        &mut self,
        image: &Image,
        prior: &SpatialPrior,
    ) -> Result<(CudaSlice<f32>, usize)> {
        let gpu = self.device.gpu()?;
        if self.prior_kernels.is_none() {
            self.prior_kernels = Some(SegPrior::load(gpu)?);
        }
        let Some(k) = self.prior_kernels.as_ref() else {
            return Err(Error::Unsupported(
                "the prior's kernels are not loaded".into(),
            ));
        };
        let s = &self.stream;
        // Every buffer from the pool and back to it: the next image of this size allocates
        // nothing (the costs come back as the prior, kept under "prior" by into_keep).
        let pool = &mut self.pool;
        let n = self.shape.num_nodes();
        let nn = n as u32;
        let conn = if image.is_volume() {
            Connectivity::N26
        } else {
            Connectivity::N8
        };
        let g = GridShape::new(image.dims, conn)?;
        let ch = self.channels as u32;
        // The input image's values: kept from the upload, or uploaded now.
        let uploaded = match &self.original {
            Original::Host => Some(pool.take_upload("prior image", &image.data)?),
            _ => None,
        };
        let (bytes, floats) = match (&self.original, &uploaded) {
            (Original::Work, _) => (None, Some(&self.work)),
            (Original::Raw(RawImage::Bytes(b)), _) => (Some(b), None),
            (Original::Raw(RawImage::Floats(f)), _) => (None, Some(f)),
            (Original::Host, up) => (None, up.as_ref()),
        };
        let colour = if prior.contrast > 0.0 {
            let mut part = pool.take_zeroed::<f64>("prior pair sums", partials(n))?;
            // SAFETY: one of bytes / floats, with n·ch entries; part has partials(n) entries.
            unsafe { k.pair_sum(s, g, ch, bytes, floats, &mut part)? };
            let sum: f64 = cuda::download(s, &part, "prior pair sums")?.iter().sum();
            pool.keep("prior pair sums", part);
            // As mean_sq_diff: the mean over every neighbour pair.
            let pairs = pair_count(image.dims, conn);
            let mean = if pairs > 0 { sum / pairs as f64 } else { 0.0 };
            if mean > 0.0 {
                (prior.contrast * prior.contrast / mean) as f32
            } else {
                0.0
            }
        } else {
            0.0
        };
        let dist2: Vec<f32> = direction_distances(conn, image.spacing)
            .iter()
            .map(|d| (d * d) as f32)
            .collect();
        let dist2 = pool.take_upload("prior step lengths", &dist2)?;
        // A 2D grid's step lengths once: the sweeps read them instead of recomputing each from
        // the colours in their chain of dependent steps, on every pass. Where the device lacks
        // the room (deg·n floats, with as much again to spare), the sweeps compute them.
        let step_bytes = g.deg as u64 * n as u64 * 4;
        let steps = if g.is3d == 0 && gpu.free_memory()? > 2 * step_bytes {
            let mut st = pool.take_zeroed::<f32>("prior steps", g.deg as usize * n)?;
            // SAFETY: one of bytes / floats with n·ch entries, dist2 deg entries, st deg·n.
            unsafe { k.steps(s, g, ch, bytes, floats, &dist2, colour, &mut st)? };
            Some(st)
        } else {
            None
        };
        let mut d_fg = pool.take_zeroed::<f32>("foreground distances", n)?;
        let mut d_bg = pool.take_zeroed::<f32>("background distances", n)?;
        let mut costs = pool.take_zeroed::<f32>("prior", n)?;
        let mut flags = pool.take_zeroed::<u32>("prior flags", MAX_DEVICE_PASSES)?;
        // SAFETY: seeds, d_fg, d_bg have n entries.
        unsafe { k.init(s, nn, &self.seeds, &mut d_fg, &mut d_bg)? };
        let axes: &[u32] = if g.is3d != 0 { &[1, 0, 2] } else { &[1, 0] };
        // Batches of passes, each followed by one read of the flags: a pass after the one
        // that changed nothing returns at once on the device.
        let (mut launched, mut batch) = (0, FIRST_BATCH);
        let passes = loop {
            if launched == MAX_DEVICE_PASSES {
                return Err(Error::Unsupported(format!(
                    "the geodesic distances did not converge in {MAX_DEVICE_PASSES} device passes"
                )));
            }
            let end = (launched + batch).min(MAX_DEVICE_PASSES);
            for pass in launched..end {
                // Odd passes shift the strips by half a strip: an edge becomes a middle.
                let shift = if pass % 2 == 1 { STRIP / 2 } else { 0 };
                for &axis in axes {
                    let seg = segment_steps(image.dims, axis);
                    for sign in [1, -1] {
                        // SAFETY: one of bytes / floats with n·ch entries, dist2 deg entries,
                        // d_fg and d_bg n, flags MAX_DEVICE_PASSES > pass; axis < 3, and < 2
                        // on a 2D grid; shift < 32.
                        unsafe {
                            k.strips(
                                s,
                                g,
                                axis,
                                sign,
                                shift,
                                seg,
                                pass as u32,
                                ch,
                                bytes,
                                floats,
                                &dist2,
                                colour,
                                steps.as_ref(),
                                &mut d_fg,
                                &mut d_bg,
                                &mut flags,
                            )?
                        };
                    }
                }
            }
            let read = cuda::download(s, &flags, "prior flags")?;
            if let Some(p) = read[launched..end].iter().position(|&f| f == 0) {
                break launched + p + 1;
            }
            launched = end;
            batch *= 2;
        };
        let [w, h, d] = image.dims;
        let depth2 = if d > 1 { d * d } else { 0 };
        let diagonal = ((w * w + h * h + depth2) as f64).sqrt();
        let soft = (prior.softness * diagonal) as f32;
        // SAFETY: d_fg, d_bg, costs have n entries.
        unsafe { k.costs(s, nn, &d_fg, &d_bg, prior.weight as f32, soft, &mut costs)? };
        // No wait: the t-links and the enclosure read the costs on this stream, and every
        // host input above has been waited for by the flags' read (the step lengths' and the
        // image's uploads came before it).
        pool.keep("foreground distances", d_fg);
        pool.keep("background distances", d_bg);
        pool.keep("prior flags", flags);
        pool.keep("prior step lengths", dist2);
        if let Some(st) = steps {
            pool.keep("prior steps", st);
        }
        if let Some(up) = uploaded {
            pool.keep("prior image", up);
        }
        Ok((costs, passes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_axis_in_strip_multiples() {
        for dims in [
            [481, 321, 1],
            [321, 481, 1],
            [3840, 2563, 1],
            [1, 1, 1],
            [40, 7, 1],
            [200, 200, 150],
        ] {
            for axis in 0..if dims[2] > 1 { 3 } else { 2 } {
                let len = dims[axis as usize];
                let seg = segment_steps(dims, axis) as usize;
                assert_eq!(seg % STRIP as usize, 0, "{dims:?} axis {axis}");
                assert!(
                    seg >= MIN_SEGMENT.min(len.next_multiple_of(32)),
                    "{dims:?} {axis}"
                );
                let segments = len.div_ceil(seg);
                // No empty segment: the last one starts inside the axis.
                assert!((segments - 1) * seg < len, "{dims:?} axis {axis}: {seg}");
            }
        }
        // A small photo's sweeps are cut; a 4K one's long axis into several segments.
        assert!(segment_steps([481, 321, 1], 0) < 481);
        assert!(3840usize.div_ceil(segment_steps([3840, 2563, 1], 0) as usize) >= 4);
    }
}
