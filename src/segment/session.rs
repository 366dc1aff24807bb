//! What a segmentation keeps between calls, and what a process can set up before its first
//! image arrives.
//!
//! A [`Segmenter`] holds the options and the GPU solvers' state (their sessions: a stream, a
//! pinned staging buffer, the device buffers kept for the next solve of the same size), so that
//! a second image costs no set-up; [`segment`](super::segment) is a one-shot `Segmenter`. The
//! Python module keeps one per process and device, and each batch worker one of its own.
//!
//! [`warm_up`] creates a GPU's context and loads the segmentation's kernel modules; the command
//! line runs it on a thread of its own at process start so that it overlaps decoding the image,
//! and a one-shot run pays for it once instead of on top.

use std::time::{Duration, Instant};

use super::pipeline::{
    segment_in, segment_pack_in, DataTerm, SegmentOptions, Segmentation, Solvers,
};
use crate::cuda::Device;
use crate::io::{Image, Seeds};
use crate::Result;

/// Segments one image after another with the same options, keeping what the GPU solvers set up
/// (see the module docs). The masks are those of [`segment`](super::segment): nothing of one
/// image's cut carries over to the next.
///
/// ```
/// use segcut::segment::session::Segmenter;
/// use segcut::segment::{Image, Seed, Seeds, SegmentOptions};
/// let mut s = Segmenter::new(SegmentOptions::default());
/// for bright in [200.0, 220.0] {
///     let image = Image::new([4, 1, 1], 1, vec![10.0, 12.0, bright, bright + 5.0]);
///     let mut seeds = Seeds::unknown(image.dims);
///     seeds.labels[0] = Seed::Foreground;
///     seeds.labels[3] = Seed::Background;
///     let seg = s.segment(&image, &seeds).unwrap();
///     assert_eq!(seg.mask, [true, true, false, false]);
/// }
/// ```
pub struct Segmenter {
    opts: SegmentOptions,
    solvers: Solvers,
}

impl std::fmt::Debug for Segmenter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segmenter")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl Segmenter {
    /// A segmenter with `opts`; nothing is set up until the first image (see [`warm_up`] to
    /// start the GPU early).
    pub fn new(opts: SegmentOptions) -> Self {
        let solvers = Solvers::on(opts.device);
        Segmenter { opts, solvers }
    }

    /// The options it segments with.
    pub fn options(&self) -> &SegmentOptions {
        &self.opts
    }

    /// Changes the options; the GPU state is kept unless the device changes.
    pub fn set_options(&mut self, opts: SegmentOptions) {
        self.opts = opts;
    }

    /// Device buffers allocated so far by what the segmenter keeps (the GPU build's buffers and
    /// the GPU solvers'): an image of the last one's size adds none. 0 without a GPU.
    pub fn device_allocations(&self) -> usize {
        self.solvers.allocations()
    }

    /// Segments `image` given `seeds`, with colour models ([`segment`](super::segment)).
    pub fn segment(&mut self, image: &Image, seeds: &Seeds) -> Result<Segmentation> {
        self.segment_with(image, seeds, DataTerm::ColourModels)
    }

    /// Segments `image` given `seeds` and a data term
    /// ([`segment_with`](super::pipeline::segment_with)).
    pub fn segment_with(
        &mut self,
        image: &Image,
        seeds: &Seeds,
        data: DataTerm,
    ) -> Result<Segmentation> {
        segment_in(image, seeds, data, &self.opts, &mut self.solvers)
    }

    /// Segments several images with colour models in lockstep: every round fits each image's
    /// models and sets its t-links, then cuts all of them in one solve of their graphs stacked
    /// along y (zero-capacity seams), which is what pays on a GPU where one small image's solve
    /// is bound by its rounds, not by the device. Each image's mask, flow, energy and per-round
    /// counts are exactly those of [`Segmenter::segment`] alone (see the docs of
    /// `segment_pack_in` in `pipeline.rs` for the argument); the timings are the pack's, shared.
    ///
    /// One result per job, in order: a job refused on its own input (its seeds, the memory
    /// budget, a model that cannot be fitted) gets its own error and the others run on. The
    /// outer error is the pack's: its shared solve failed (run the jobs one by one then). Jobs
    /// of different sizes pack too (narrower grids are padded with unconnected nodes), but only
    /// jobs of one width pay; an empty pack returns no results.
    ///
    /// ```
    /// use segcut::segment::session::Segmenter;
    /// use segcut::segment::{Image, Seed, Seeds, SegmentOptions};
    /// let mut s = Segmenter::new(SegmentOptions::default());
    /// let jobs: Vec<(Image, Seeds)> = [200.0, 220.0]
    ///     .iter()
    ///     .map(|&bright| {
    ///         let image = Image::new([4, 1, 1], 1, vec![10.0, 12.0, bright, bright + 5.0]);
    ///         let mut seeds = Seeds::unknown(image.dims);
    ///         seeds.labels[0] = Seed::Foreground;
    ///         seeds.labels[3] = Seed::Background;
    ///         (image, seeds)
    ///     })
    ///     .collect();
    /// let refs: Vec<(&Image, &Seeds)> = jobs.iter().map(|(i, s)| (i, s)).collect();
    /// for (seg, (image, seeds)) in s.segment_packed(&refs).unwrap().into_iter().zip(&jobs) {
    ///     let seg = seg.unwrap();
    ///     assert_eq!(seg.mask, [true, true, false, false]);
    ///     assert_eq!(seg.flow, s.segment(image, seeds).unwrap().flow);
    /// }
    /// ```
    pub fn segment_packed(
        &mut self,
        jobs: &[(&Image, &Seeds)],
    ) -> Result<Vec<Result<Segmentation>>> {
        let jobs: Vec<_> = jobs
            .iter()
            .map(|&(image, seeds)| (image, seeds, DataTerm::ColourModels))
            .collect();
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        segment_pack_in(&jobs, &self.opts, &mut self.solvers)
    }
}

/// The kernel files a GPU segmentation runs (the graph build and the grid solver).
const SEGMENT_KERNELS: [&str; 2] = ["seg_energy", "grid_pr"];

/// Creates `device`'s context and loads the segmentation's kernels (from the process, the disk
/// cache, else NVRTC), returning how long that took. Later users of the device find both ready;
/// a caller that needs them while this runs on another thread waits for it instead of doing
/// the work twice. An [`Error::Unsupported`](crate::Error::Unsupported) when the device is not
/// usable (the segmentation then decides on its own, as without a warm-up).
///
/// ```
/// use segcut::cuda::Device;
/// // Start the GPU's set-up while the image is read; without a GPU it says why.
/// let setup = std::thread::spawn(|| segcut::segment::session::warm_up(Device::new(0)));
/// let _ = setup.join().unwrap();
/// ```
pub fn warm_up(device: Device) -> Result<Duration> {
    let t = Instant::now();
    let gpu = device.gpu()?;
    for name in SEGMENT_KERNELS {
        gpu.module(name)?;
    }
    Ok(t.elapsed())
}
