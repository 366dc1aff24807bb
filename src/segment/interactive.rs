//! Interactive segmentation of one image: strokes arrive one at a time, and after each the mask
//! is cut again, warm-started from the previous cut (Kohli & Torr's dynamic graph cuts).
//!
//! A [`Session`] keeps what does not change between strokes: the image in the models' colour
//! space, the n-links (built once: they depend on the image alone) and the solver's state
//! ([`Dynamic`]). A stroke ([`Stroke`]) becomes seed pixels by [`rasterize_stroke`]; then
//! [`Session::add_strokes`] refits the two colour models on the seeds, rewrites the t-links and
//! resolves: only the t-links changed, so the solve continues from the last flow instead of
//! starting over. That cut is plain Boykov–Jolly (one round, seed models, no stroke prior): it is
//! what can be answered at the speed of a hand. [`Session::refine`] then runs the full pipeline
//! ([`segment`]) on the same seeds, so its mask is the command line's on the seed image
//! [`Session::seeds_png`] writes.
//!
//! ```
//! use segcut::segment::interactive::{Session, Stroke, StrokeLabel};
//! use segcut::segment::{Image, SegmentOptions};
//! // A dark square on a bright background.
//! let (w, h) = (16, 12);
//! let data: Vec<f32> = (0..w * h)
//!     .map(|i| if (4..10).contains(&(i % w)) && (3..8).contains(&(i / w)) { 20.0 } else { 230.0 })
//!     .collect();
//! let image = Image::new([w, h, 1], 1, data);
//! let mut s = Session::new(image, SegmentOptions::default()).unwrap();
//! let fg = Stroke { label: StrokeLabel::Foreground, radius: 1.0, points: vec![[6.5, 5.5]] };
//! let bg = Stroke { label: StrokeLabel::Background, radius: 1.0, points: vec![[0.5, 0.5], [15.5, 0.5]] };
//! let first = s.add_strokes(&[fg]).unwrap();
//! assert!(first.cut.is_none()); // one class only: nothing to cut yet
//! let second = s.add_strokes(&[bg]).unwrap();
//! assert_eq!(s.mask().iter().filter(|&&m| m).count(), 6 * 5);
//! assert!(second.cut.is_some());
//! let refined = s.refine().unwrap();
//! assert_eq!(refined.foreground_pixels, 6 * 5);
//! ```

use super::color::to_color_space;
use super::energy::{self, Energy};
use super::model::{Model, ModelKind, ModelParams, MAX_FIT_SAMPLES};
use super::pipeline::{segment, SegmentOptions};
use super::report::Report;
use crate::io::{Image, Seed, Seeds};
use crate::maxflow::{plan, Dynamic, GraphSize, SolverKind};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The most points one stroke may have.
pub const MAX_STROKE_POINTS: usize = 100_000;

/// The largest stroke radius, in pixels.
pub const MAX_STROKE_RADIUS: f64 = 512.0;

/// The most strokes a session keeps (undo history).
pub const MAX_SESSION_STROKES: usize = 10_000;

/// Which class a stroke paints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StrokeLabel {
    /// Foreground (a hard [`Seed::Foreground`]).
    #[serde(alias = "fg")]
    Foreground,
    /// Background (a hard [`Seed::Background`]).
    #[serde(alias = "bg")]
    Background,
}

impl StrokeLabel {
    fn seed(self) -> Seed {
        match self {
            StrokeLabel::Foreground => Seed::Foreground,
            StrokeLabel::Background => Seed::Background,
        }
    }
}

/// A painted stroke: a polyline in image coordinates and a brush radius.
///
/// Coordinates are in pixels of the image with the origin at its top-left corner: pixel
/// `(x, y)` covers `[x, x+1) × [y, y+1)` and its centre is `(x + 0.5, y + 0.5)` (a canvas's
/// coordinates scaled to the image).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stroke {
    /// The class painted.
    pub label: StrokeLabel,
    /// Brush radius in pixels, in `(0, MAX_STROKE_RADIUS]`.
    pub radius: f64,
    /// The polyline's points `[x, y]` (one point paints a disc).
    pub points: Vec<[f64; 2]>,
}

impl Stroke {
    /// Refuses a stroke without points, with too many, with a non-finite coordinate or a radius
    /// outside `(0, MAX_STROKE_RADIUS]`.
    pub fn check(&self) -> Result<()> {
        let bad = |msg: String| {
            Err(Error::Input {
                file: "stroke".into(),
                msg,
            })
        };
        if !(self.radius > 0.0 && self.radius <= MAX_STROKE_RADIUS) {
            return bad(format!(
                "radius {} is not in (0, {MAX_STROKE_RADIUS}]",
                self.radius
            ));
        }
        if self.points.is_empty() || self.points.len() > MAX_STROKE_POINTS {
            return bad(format!(
                "{} points: a stroke has 1 to {MAX_STROKE_POINTS}",
                self.points.len()
            ));
        }
        if let Some(i) = self
            .points
            .iter()
            .position(|p| !p.iter().all(|c| c.is_finite()))
        {
            return bad(format!("point {i} has a non-finite coordinate"));
        }
        Ok(())
    }
}

/// Squared distance from `(px, py)` to the segment `a`–`b`. The page's JavaScript computes the
/// same expression in the same order (doubles, no fused operations), so both paint the same
/// pixels, ties at exactly `radius` included.
fn segment_distance2(px: f64, py: f64, a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let len2 = dx * dx + dy * dy;
    let mut t = 0.0;
    if len2 > 0.0 {
        t = ((px - a[0]) * dx + (py - a[1]) * dy) / len2;
        t = t.clamp(0.0, 1.0);
    }
    let (qx, qy) = (a[0] + t * dx, a[1] + t * dy);
    (px - qx) * (px - qx) + (py - qy) * (py - qy)
}

/// Paints `stroke` into `seeds` (a 2D image's): every pixel whose centre `(x + 0.5, y + 0.5)`
/// lies within `radius` of the polyline (squared distance `≤ radius²`) gets the stroke's label,
/// over whatever it had. Returns how many pixels it covered. The page served by `segcut serve`
/// paints by the same rule.
///
/// ```
/// use segcut::segment::interactive::{rasterize_stroke, Stroke, StrokeLabel};
/// use segcut::segment::{Seed, Seeds};
/// let mut seeds = Seeds::unknown([5, 5, 1]);
/// let s = Stroke { label: StrokeLabel::Foreground, radius: 1.0, points: vec![[2.5, 2.5]] };
/// // The centre pixel and its four neighbours (their centres are exactly 1 away).
/// assert_eq!(rasterize_stroke(&mut seeds, &s).unwrap(), 5);
/// assert_eq!(seeds.labels[2 + 5 * 2], Seed::Foreground);
/// assert_eq!(seeds.labels[1 + 5 * 1], Seed::Unknown);
/// ```
pub fn rasterize_stroke(seeds: &mut Seeds, stroke: &Stroke) -> Result<usize> {
    stroke.check()?;
    let [w, h, d] = seeds.dims;
    if d != 1 {
        return Err(Error::Unsupported(
            "strokes paint 2D images, not volumes".into(),
        ));
    }
    let r = stroke.radius;
    let r2 = r * r;
    let label = stroke.label.seed();
    let mut covered = 0;
    let pts = &stroke.points;
    // Each segment (a single point is a segment of length 0) paints within its bounding box.
    for k in 0..pts.len().max(2) - 1 {
        let a = pts[k];
        let b = pts[(k + 1).min(pts.len() - 1)];
        let x0 = (a[0].min(b[0]) - r - 0.5).floor().max(0.0);
        let x1 = (a[0].max(b[0]) + r - 0.5).ceil().min(w as f64 - 1.0);
        let y0 = (a[1].min(b[1]) - r - 0.5).floor().max(0.0);
        let y1 = (a[1].max(b[1]) + r - 0.5).ceil().min(h as f64 - 1.0);
        if x0 > x1 || y0 > y1 {
            continue;
        }
        for y in y0 as usize..=y1 as usize {
            for x in x0 as usize..=x1 as usize {
                let i = x + w * y;
                let d2 = segment_distance2(x as f64 + 0.5, y as f64 + 0.5, a, b);
                if d2 <= r2 && seeds.labels[i] != label {
                    seeds.labels[i] = label;
                    covered += 1;
                }
            }
        }
    }
    Ok(covered)
}

/// What one interactive cut did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CutReport {
    /// The solver that ran (`bk` or `cuda-grid`).
    pub solver: String,
    /// Whether the solve continued from the previous cut's flow.
    pub warm: bool,
    /// Maximum flow (capacity units).
    pub flow: i64,
    /// Fitting the two models on the seeds, in ms.
    pub models_ms: f64,
    /// Writing the t-links (and, on the first cut, building the n-links), in ms.
    pub graph_ms: f64,
    /// The solve (with its certificate when the options ask for one), in ms.
    pub solve_ms: f64,
}

/// The answer to a stroke: the mask's size, and the cut if one was made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StrokeReport {
    /// Strokes the session holds.
    pub strokes: usize,
    /// Seed counts `[unknown, fg, bg, probably fg, probably bg]`.
    pub seed_counts: [usize; 5],
    /// Foreground pixels of the mask.
    pub foreground_pixels: usize,
    /// The cut; `None` while a class has no seeds (the mask is then the foreground seeds).
    pub cut: Option<CutReport>,
}

/// One image's interactive state.
#[derive(Debug)]
pub struct Session {
    image: Image,
    /// The image in the models' colour space.
    work: Image,
    params: ModelParams,
    opts: SegmentOptions,
    /// Seeds given as a whole (a seed image), under the strokes.
    base: Seeds,
    strokes: Vec<Stroke>,
    seeds: Seeds,
    energy: Option<Energy>,
    dynamic: Dynamic,
    mask: Vec<bool>,
}

impl Session {
    /// A session on a 2D `image` under `opts`; the memory it needs
    /// ([`memory_needed`](Session::memory_needed)) is checked against the process's budget.
    pub fn new(image: Image, opts: SegmentOptions) -> Result<Self> {
        energy::check_image(&image)?;
        if image.is_volume() {
            return Err(Error::Unsupported(
                "interactive sessions segment 2D images, not volumes".into(),
            ));
        }
        crate::io::check_budget(
            "an interactive session",
            Self::memory_needed(image.dims, image.channels, &opts),
            "use a smaller image",
        )?;
        let work = to_color_space(&image, opts.color_space).into_owned();
        let params = ModelParams::from_image(&work.data, work.channels);
        let size = GraphSize::of_grid(image.dims, opts.connectivity_for(&image).degree());
        // The warm solver runs what `auto` would pick, held to the two that warm-start.
        let kind = match plan(opts.solver, size, &opts.auto, opts.device).solver {
            SolverKind::CudaGrid => SolverKind::CudaGrid,
            _ => SolverKind::Bk,
        };
        let dynamic = Dynamic::new(kind, opts.verify, opts.device)?;
        let seeds = Seeds::unknown(image.dims);
        Ok(Session {
            mask: vec![false; image.num_pixels()],
            work,
            params,
            base: seeds.clone(),
            strokes: Vec::new(),
            seeds,
            energy: None,
            dynamic,
            opts,
            image,
        })
    }

    /// Bytes a session on an image of `dims` × `channels` holds at most: the per-pixel part of
    /// what the full pipeline needs ([`super::budget::memory_needed`], which
    /// [`refine`](Session::refine) runs, less the process's
    /// [`FIXED_OVERHEAD`](super::budget::FIXED_OVERHEAD), which sessions share) plus the
    /// session's own copy of the image in the models' space, its seeds and mask.
    pub fn memory_needed(dims: [usize; 3], channels: usize, opts: &SegmentOptions) -> u64 {
        let px = dims
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d as u64));
        super::budget::memory_needed(dims, channels, opts.memory_needs())
            .saturating_sub(super::budget::FIXED_OVERHEAD)
            .saturating_add(px.saturating_mul(4 * channels as u64 + 3))
    }

    /// The image.
    pub fn image(&self) -> &Image {
        &self.image
    }

    /// The options.
    pub fn options(&self) -> &SegmentOptions {
        &self.opts
    }

    /// The current seeds: the seed image under the strokes, in order.
    pub fn seeds(&self) -> &Seeds {
        &self.seeds
    }

    /// The current mask (true = foreground).
    pub fn mask(&self) -> &[bool] {
        &self.mask
    }

    /// The strokes painted so far.
    pub fn strokes(&self) -> &[Stroke] {
        &self.strokes
    }

    /// Paints `strokes` and cuts once.
    pub fn add_strokes(&mut self, strokes: &[Stroke]) -> Result<StrokeReport> {
        if self.strokes.len() + strokes.len() > MAX_SESSION_STROKES {
            return Err(Error::Input {
                file: "stroke".into(),
                msg: format!("a session holds at most {MAX_SESSION_STROKES} strokes"),
            });
        }
        // All checked before any is applied: a bad stroke changes nothing.
        for s in strokes {
            s.check()?;
        }
        for s in strokes {
            rasterize_stroke(&mut self.seeds, s)?;
            self.strokes.push(s.clone());
        }
        self.cut()
    }

    /// Takes back the last `n` strokes (fewer if there are fewer) and cuts once.
    pub fn undo(&mut self, n: usize) -> Result<StrokeReport> {
        let keep = self.strokes.len().saturating_sub(n);
        self.strokes.truncate(keep);
        self.repaint()?;
        self.cut()
    }

    /// Replaces the seeds with `seeds` (a seed image's) and forgets the strokes; cuts once.
    pub fn set_seeds(&mut self, seeds: Seeds) -> Result<StrokeReport> {
        energy::check_seeds(&self.image, &seeds)?;
        self.base = seeds;
        self.strokes.clear();
        self.repaint()?;
        self.cut()
    }

    fn repaint(&mut self) -> Result<()> {
        self.seeds.labels.copy_from_slice(&self.base.labels);
        for s in &self.strokes {
            rasterize_stroke(&mut self.seeds, s)?;
        }
        Ok(())
    }

    fn report(&self, cut: Option<CutReport>) -> StrokeReport {
        StrokeReport {
            strokes: self.strokes.len(),
            seed_counts: self.seeds.counts(),
            foreground_pixels: self.mask.iter().filter(|&&m| m).count(),
            cut,
        }
    }

    /// Fits the models on the seeds, rewrites the t-links and resolves from the last flow.
    fn cut(&mut self) -> Result<StrokeReport> {
        let c = self.seeds.counts();
        if c[1] + c[3] == 0 || c[2] + c[4] == 0 {
            for (m, s) in self.mask.iter_mut().zip(&self.seeds.labels) {
                *m = *s == Seed::Foreground;
            }
            return Ok(self.report(None));
        }
        let t0 = Instant::now();
        let kind = self.opts.model;
        let fg = self.fit(
            kind,
            [Seed::Foreground, Seed::ProbablyForeground],
            "foreground",
        );
        let bg = self.fit(
            kind,
            [Seed::Background, Seed::ProbablyBackground],
            "background",
        );
        let (fg, bg) = (fg?, bg?);
        let t1 = Instant::now();
        let energy = match self.energy.as_mut() {
            Some(e) => e,
            None => self.energy.insert(energy::build_nlinks(
                &self.work,
                &self.opts.energy_options(&self.work),
            )?),
        };
        energy::set_tlinks(energy, &self.work, &self.seeds, &fg, &bg)?;
        let t2 = Instant::now();
        let solved = self.dynamic.resolve(&energy.graph)?;
        let t3 = Instant::now();
        for (m, &s) in self.mask.iter_mut().zip(&solved.cut.sink_side) {
            *m = !s;
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        Ok(self.report(Some(CutReport {
            solver: self.dynamic.kind().to_string(),
            warm: self.dynamic.last_was_warm(),
            flow: solved.cut.flow,
            models_ms: ms(t1 - t0),
            graph_ms: ms(t2 - t1),
            solve_ms: ms(t3 - t2),
        })))
    }

    /// The seeds' model of one class, fitted on an even stride of at most [`MAX_FIT_SAMPLES`]
    /// of its pixels for a mixture (as the pipeline's fit does).
    fn fit(&self, kind: ModelKind, class: [Seed; 2], name: &str) -> Result<Model> {
        let labels = &self.seeds.labels;
        let total = labels.iter().filter(|l| class.contains(l)).count();
        let step = match kind {
            ModelKind::Gmm { .. } => total.div_ceil(MAX_FIT_SAMPLES).max(1),
            ModelKind::Histogram { .. } => 1,
        };
        let mut samples = Vec::with_capacity(total.div_ceil(step) * self.work.channels);
        for i in labels
            .iter()
            .enumerate()
            .filter(|(_, l)| class.contains(l))
            .map(|(i, _)| i)
            .step_by(step)
        {
            samples.extend_from_slice(self.work.pixel(i));
        }
        Model::fit(kind, &samples, &self.params, name)
    }

    /// Runs the full pipeline ([`segment`]) on the current seeds: the mask is the command
    /// line's on [`seeds_png`](Session::seeds_png) with the same options. The session's mask
    /// becomes it.
    pub fn refine(&mut self) -> Result<Report> {
        let seg = segment(&self.image, &self.seeds, &self.opts)?;
        let report = Report::new(&seg, &self.opts);
        self.mask = seg.mask;
        Ok(report)
    }

    /// The current seeds as a palette PNG (index 0 unlabelled, 1 foreground, 2 background): the
    /// `--seeds` file that gives the command line the same seeds.
    pub fn seeds_png(&self) -> Result<Vec<u8>> {
        seeds_png(&self.seeds)
    }
}

/// `seeds` (a 2D image's hard seeds) as a palette PNG: index 0 unlabelled (black), 1
/// foreground (red), 2 background (blue), which [`load_seeds`](crate::io::load_seeds) reads
/// back as the same seeds. Soft seeds are refused: a palette PNG has no index for them.
pub fn seeds_png(seeds: &Seeds) -> Result<Vec<u8>> {
    let [w, h, d] = seeds.dims;
    if d != 1 {
        return Err(Error::Unsupported("seed PNGs are 2D".into()));
    }
    let mut idx = Vec::with_capacity(seeds.labels.len());
    for (i, l) in seeds.labels.iter().enumerate() {
        idx.push(match l {
            Seed::Unknown => 0u8,
            Seed::Foreground => 1,
            Seed::Background => 2,
            _ => {
                return Err(Error::Unsupported(format!(
                    "pixel (x={}, y={}) is a soft seed, which a palette PNG cannot hold",
                    i % w,
                    i / w
                )))
            }
        });
    }
    let mut out = Vec::new();
    let png_err = |e: png::EncodingError| Error::Unsupported(format!("PNG encoding: {e}"));
    {
        let mut enc = png::Encoder::new(&mut out, w as u32, h as u32);
        enc.set_color(png::ColorType::Indexed);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_palette(vec![0, 0, 0, 255, 0, 0, 0, 0, 255]);
        let mut wr = enc.write_header().map_err(png_err)?;
        wr.write_image_data(&idx).map_err(png_err)?;
    }
    Ok(out)
}
