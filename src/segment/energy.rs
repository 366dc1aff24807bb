//! The Boykov–Jolly energy of an image and its seeds, as a [`GridGraph`] whose minimum cut is the
//! minimum-energy segmentation.
//!
//! For a labelling `L` (foreground / background per pixel):
//!
//! ```text
//! E(L) = Σ_p D_p(L_p) + Σ_{p~q, L_p ≠ L_q} w_pq
//! w_pq = λ · exp(−β ‖I_p − I_q‖²) / dist(p, q)
//! β    = 1 / (2 ⟨‖I_p − I_q‖²⟩)   (mean over all neighbour pairs), or 1 / (2σ²) when σ is given
//! ```
//!
//! - `D_p(fg) = −ln p(I_p | fg model)`, `D_p(bg) = −ln p(I_p | bg model)`. The source side is the
//!   foreground, so the source arc of `p` carries `D_p(bg)` (cut when `p` goes to the background)
//!   and its sink arc `D_p(fg)`. Only the difference matters: the graph holds the net form
//!   (`max(0, D_p(bg) − D_p(fg))`, `max(0, D_p(fg) − D_p(bg))`) and [`Energy::unary_constant`]
//!   keeps `Σ min(D_p(fg), D_p(bg))`.
//! - `dist(p, q)` is the physical distance between the pixel centres (offsets times the voxel
//!   spacing) divided by the smallest spacing of the axes in use, so the nearest axis neighbour is at
//!   distance 1 and an isotropic image gets the classic 1, √2, √3.
//! - Hard seeds: foreground `(K, 0)`, background `(0, K)` with `K = 1 + max_p Σ_q w_pq` (in
//!   quantised units): no cut through a seed's terminal arc can be cheaper than cutting all its
//!   n-links. [`Seed::ProbablyForeground`] / [`Seed::ProbablyBackground`] pixels get model costs
//!   like unlabelled ones.
//! - A net t-link above `K` is clamped to `K`. This changes no minimiser: such a pixel pays more for
//!   its costly label than all its n-links together could save, so every minimum cut puts it on its
//!   cheap side either way, where it costs nothing.
//!
//! Quantisation: capacities are `round(scale · value)` with `scale` [`DEFAULT_SCALE`] (1024 units
//! per nat) unless `λ` is so large that `K` could pass [`CAP_BUDGET`], in which case `scale =
//! CAP_BUDGET / (1 + λ Σ_d 1/dist_d)` (that sum bounds every pixel's n-link sum). An explicit
//! [`EnergyOptions::scale`] is checked in `i64` and refused with [`Error::Overflow`] if `K` or an
//! arc pair would not fit `i32`.
//!
//! ```
//! use segcut::graph::Connectivity;
//! use segcut::segment::{energy::{build_graph, EnergyOptions}, model::{Model, ModelKind, ModelParams}};
//! use segcut::segment::{Image, Seed, Seeds};
//! let image = Image::new([4, 1, 1], 1, vec![0.0, 10.0, 200.0, 210.0]);
//! let mut seeds = Seeds::unknown(image.dims);
//! seeds.labels[0] = Seed::Background;
//! seeds.labels[3] = Seed::Foreground;
//! let params = ModelParams::from_image(&image.data, 1);
//! let kind = ModelKind::Gmm { components: 1 };
//! let fg = Model::fit(kind, &[210.0], &params, "foreground").unwrap();
//! let bg = Model::fit(kind, &[0.0], &params, "background").unwrap();
//! let e = build_graph(&image, &seeds, &fg, &bg, &EnergyOptions { connectivity: Connectivity::N4, ..Default::default() }).unwrap();
//! assert_eq!(e.graph.source_caps()[3], e.hard); // hard foreground seed
//! ```

use super::model::ColorModel;
use crate::graph::{offset_step, valid_box, Cap, Connectivity, GridGraph};
use crate::io::{Image, Seed, Seeds};
use crate::{Error, Result};
use rayon::prelude::*;

/// Capacity units per nat when `λ` leaves room for it: fine enough that quantisation moves no
/// realistic cut, small enough that `K` stays far below `i32::MAX`.
pub const DEFAULT_SCALE: f64 = 1024.0;

/// The largest `K` the automatic scale aims for (2³⁰): leaves `i32` headroom for arc pairs.
pub const CAP_BUDGET: f64 = (1u64 << 30) as f64;

/// `exp(−x)` is tabulated on `[0, EXP_RANGE]` (and taken as 0 beyond, where `e^{−32} λ·scale`
/// is below half a unit for any scale this module picks).
const EXP_RANGE: f64 = 32.0;
/// Table entries per unit of `x`; linear interpolation keeps the error below `2·10⁻⁶`.
const EXP_STEPS: f64 = 256.0;

/// How the energy is built.
#[derive(Clone, Debug, PartialEq)]
pub struct EnergyOptions {
    /// Neighbourhood: N4 / N8 for images, N6 / N26 for volumes.
    pub connectivity: Connectivity,
    /// Weight `λ` of the n-links relative to the data costs (nats).
    pub lambda: f64,
    /// Contrast scale: `β = 1/(2σ²)`. `None`: `β` from the image's mean squared neighbour
    /// difference.
    pub sigma: Option<f64>,
    /// Capacity units per nat. `None`: chosen automatically (see the module docs).
    pub scale: Option<f64>,
}

impl Default for EnergyOptions {
    /// N8, `λ = 50`, `β` from the image, automatic scale.
    fn default() -> Self {
        EnergyOptions {
            connectivity: Connectivity::N8,
            lambda: 50.0,
            sigma: None,
            scale: None,
        }
    }
}

/// The graph of an energy and what is needed to read results back in energy units.
#[derive(Clone, Debug)]
pub struct Energy {
    /// The grid: n-links in the direction arrays, net t-links in the terminal arrays.
    pub graph: GridGraph,
    /// The contrast parameter used.
    pub beta: f64,
    /// Capacity units per nat.
    pub scale: f64,
    /// The hard-seed capacity `K` (quantised).
    pub hard: Cap,
    /// `Σ min(D_p(fg), D_p(bg))` over the pixels without a hard seed, in nats.
    pub unary_constant: f64,
}

impl Energy {
    /// The energy (nats) of the labelling a cut of value `flow` gives: `flow / scale` plus the
    /// data-cost constant the net form took out.
    pub fn energy_of_flow(&self, flow: i64) -> f64 {
        flow as f64 / self.scale + self.unary_constant
    }
}

/// Checks that `image` is well formed and its values finite; errors name the pixel.
pub fn check_image(image: &Image) -> Result<()> {
    let bad = |msg: String| Error::Input {
        file: "image".into(),
        msg,
    };
    let n = image.num_pixels();
    if n == 0 || image.channels == 0 {
        return Err(bad(format!(
            "empty image ({:?}, {} channels)",
            image.dims, image.channels
        )));
    }
    if image.data.len() != n * image.channels {
        return Err(bad(format!(
            "{} values for {:?} pixels of {} channels",
            image.data.len(),
            image.dims,
            image.channels
        )));
    }
    if let Some(i) = image.data.iter().position(|v| !v.is_finite()) {
        let p = i / image.channels;
        let [w, h, _] = image.dims;
        return Err(bad(format!(
            "pixel (x={}, y={}, z={}) has the non-finite value {}",
            p % w,
            (p / w) % h,
            p / (w * h),
            image.data[i]
        )));
    }
    if image.spacing.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return Err(bad(format!(
            "voxel spacing {:?} must be positive",
            image.spacing
        )));
    }
    Ok(())
}

/// Checks that `seeds` fit `image`.
pub fn check_seeds(image: &Image, seeds: &Seeds) -> Result<()> {
    if seeds.dims != image.dims || seeds.labels.len() != image.num_pixels() {
        let [w, h, d] = image.dims;
        let [sw, sh, sd] = seeds.dims;
        return Err(Error::Input {
            file: "seeds".into(),
            msg: format!(
                "seeds are {sw}x{sh}x{sd} ({} labels) but the image is {w}x{h}x{d}",
                seeds.labels.len()
            ),
        });
    }
    Ok(())
}

/// `dist(p, q)` of each direction of `conn`: physical length over the smallest spacing in use.
pub fn direction_distances(conn: Connectivity, spacing: [f64; 3]) -> Vec<f64> {
    let axes = if conn.is_3d() { 3 } else { 2 };
    let unit = spacing[..axes]
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    conn.offsets()
        .iter()
        .map(|o| {
            let l2: f64 = (0..axes).map(|a| (o[a] as f64 * spacing[a]).powi(2)).sum();
            l2.sqrt() / unit
        })
        .collect()
}

/// Squared colour distance of pixels `v` and `q`, specialised for 1 and 3 channels (the hot
/// loops of the n-links call it once per arc).
trait Dist2: Sync {
    fn dist2(&self, v: usize, q: usize) -> f32;
}

struct Channels<'a, const C: usize>(&'a [f32]);

impl<const C: usize> Dist2 for Channels<'_, C> {
    #[inline(always)]
    fn dist2(&self, v: usize, q: usize) -> f32 {
        let (a, b) = (&self.0[v * C..v * C + C], &self.0[q * C..q * C + C]);
        let mut s = 0.0;
        for c in 0..C {
            let d = a[c] - b[c];
            s += d * d;
        }
        s
    }
}

struct AnyChannels<'a>(&'a [f32], usize);

impl Dist2 for AnyChannels<'_> {
    fn dist2(&self, v: usize, q: usize) -> f32 {
        let c = self.1;
        let (a, b) = (&self.0[v * c..(v + 1) * c], &self.0[q * c..(q + 1) * c]);
        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
    }
}

/// Calls `body` with the [`Dist2`] kernel that fits `image`.
macro_rules! with_dist2 {
    ($image:expr, |$k:ident| $body:expr) => {
        match $image.channels {
            1 => {
                let $k = Channels::<1>(&$image.data);
                $body
            }
            3 => {
                let $k = Channels::<3>(&$image.data);
                $body
            }
            c => {
                let $k = AnyChannels(&$image.data, c);
                $body
            }
        }
    };
}

/// The mean of `‖I_p − I_q‖²` over all neighbour pairs of `conn` (each pair once), and how many
/// pairs there are.
pub fn mean_sq_diff(image: &Image, conn: Connectivity) -> (f64, u64) {
    with_dist2!(image, |k| mean_sq_diff_with(&k, image.dims, conn))
}

fn mean_sq_diff_with(k: &impl Dist2, dims: [usize; 3], conn: Connectivity) -> (f64, u64) {
    let [w, h, depth] = dims;
    let pairs: Vec<_> = conn
        .offsets()
        .iter()
        .step_by(2)
        .map(|&off| (valid_box(dims, off), offset_step(dims, off)))
        .collect();
    let (sum, count) = (0..h * depth)
        .into_par_iter()
        .map(|row| {
            let (y, z) = (row % h, row / h);
            let mut s = 0.0f64;
            let mut c = 0u64;
            for ([xr, yr, zr], step) in &pairs {
                if !yr.contains(&y) || !zr.contains(&z) {
                    continue;
                }
                let mut row_sum = 0.0f64;
                for x in xr.clone() {
                    let v = row * w + x;
                    row_sum += k.dist2(v, (v as isize + step) as usize) as f64;
                }
                s += row_sum;
                c += xr.len() as u64;
            }
            (s, c)
        })
        .reduce(|| (0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    (if count > 0 { sum / count as f64 } else { 0.0 }, count)
}

/// `β` for `image`: `1/(2σ²)` if `sigma` is given, else `1/(2⟨‖I_p − I_q‖²⟩)`; 0 for a flat image
/// (all n-links are then `λ/dist`).
pub fn beta(image: &Image, conn: Connectivity, sigma: Option<f64>) -> f64 {
    match sigma {
        Some(s) => 1.0 / (2.0 * s * s),
        None => {
            let (mean, _) = mean_sq_diff(image, conn);
            if mean > 0.0 {
                1.0 / (2.0 * mean)
            } else {
                0.0
            }
        }
    }
}

/// Checks `opts` against `image` (λ, σ, scale, a 2D connectivity on a volume).
pub(crate) fn check_options(image: &Image, opts: &EnergyOptions) -> Result<()> {
    let bad = |msg: String| Error::Input {
        file: "segment options".into(),
        msg,
    };
    if !(opts.lambda.is_finite() && opts.lambda >= 0.0) {
        return Err(bad(format!("lambda must be >= 0, got {}", opts.lambda)));
    }
    if let Some(s) = opts.sigma {
        if !(s.is_finite() && s > 0.0) {
            return Err(bad(format!("sigma must be > 0, got {s}")));
        }
    }
    if let Some(s) = opts.scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(bad(format!("scale must be > 0, got {s}")));
        }
    }
    if image.is_volume() && !opts.connectivity.is_3d() {
        // N4 / N8 on a volume would cut each slice on its own; almost surely not what was meant.
        return Err(bad(format!(
            "{} is a 2D connectivity but the image is a {}x{}x{} volume (use 6 or 26)",
            opts.connectivity, image.dims[0], image.dims[1], image.dims[2]
        )));
    }
    Ok(())
}

/// `(min, max, all integers in `i32` range)` of `data` (the cast test avoids a `trunc` call).
fn value_range(data: &[f32]) -> (f32, f32, bool) {
    data.par_chunks(1 << 14)
        .map(|c| {
            c.iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY, true), |(l, h, i), &v| {
                    (l.min(v), h.max(v), i && (v as i32) as f32 == v)
                })
        })
        .reduce(
            || (f32::INFINITY, f32::NEG_INFINITY, true),
            |a, b| (a.0.min(b.0), a.1.max(b.1), a.2 && b.2),
        )
}

/// Grey images with integer values spanning fewer than this many levels get their n-links from
/// a table indexed by the absolute difference: exact, and a load per arc instead of an `exp`.
pub const NLINK_TABLE_LEVELS: usize = 1 << 16;

/// Integer grey n-links: one table of final capacities per distinct direction length, indexed by
/// `|I_p − I_q|` (`span + 1` entries each, flattened), and each direction's table. The GPU
/// builder uploads the same tables, so both builds give the same capacities.
pub(crate) fn grey_nlink_tables(
    span: usize,
    beta: f64,
    dist: &[f64],
    max_link: f64,
) -> (Vec<Cap>, Vec<u32>) {
    let mut lengths: Vec<f64> = Vec::new();
    let mut tables = Vec::new();
    let table_of = dist
        .iter()
        .map(|&length| {
            if let Some(i) = lengths.iter().position(|&l| l == length) {
                return i as u32;
            }
            lengths.push(length);
            tables.extend((0..=span).map(|delta| {
                let d2 = (delta * delta) as f64;
                (max_link * (-beta * d2).exp() / length).round() as Cap
            }));
            (lengths.len() - 1) as u32
        })
        .collect();
    (tables, table_of)
}

/// Integer grey data: every direction's capacities by `|I_p − I_q|` from a per-distance table.
fn fill_nlinks_grey_integer(
    graph: &mut GridGraph,
    data: &[f32],
    span: usize,
    beta: f64,
    dist: &[f64],
    max_link: f64,
) {
    let degree = graph.connectivity().degree();
    let (tables, table_of) = grey_nlink_tables(span, beta, &dist[..degree], max_link);
    for (d, &t) in table_of.iter().enumerate() {
        let table = &tables[t as usize * (span + 1)..(t as usize + 1) * (span + 1)];
        fill_direction(graph, d, |v, q| table[(data[v] - data[q]).abs() as usize]);
    }
}

/// The energy's integer scale (`opts.scale`, or the largest that keeps every node's summed
/// capacities within budget) and the largest n-link it gives, `λ · scale`. An overflow error
/// when an arc pair of such n-links would not fit [`Cap`].
pub(crate) fn link_scale(opts: &EnergyOptions, dist: &[f64]) -> Result<(f64, f64)> {
    let bound = 1.0 + opts.lambda * dist.iter().map(|d| 1.0 / d).sum::<f64>();
    let scale = match opts.scale {
        Some(s) => s,
        None => DEFAULT_SCALE.min(CAP_BUDGET / bound),
    };
    let max_link = opts.lambda * scale;
    if 2.0 * max_link.round() > Cap::MAX as f64 {
        return Err(Error::Overflow(format!(
            "lambda {} at scale {scale} gives n-links of {max_link:.0} units; an arc pair must fit {}",
            opts.lambda,
            Cap::MAX
        )));
    }
    Ok((scale, max_link))
}

/// Writes `link(v, q)` into direction `d`'s capacity of every node `v` whose neighbour `q` lies
/// inside the grid, rows in parallel (each row of the array belongs to one task).
fn fill_direction(graph: &mut GridGraph, d: usize, link: impl Fn(usize, usize) -> Cap + Sync) {
    let dims = graph.dims();
    let [w, h, _] = dims;
    let off = graph.connectivity().offsets()[d];
    let [xr, yr, zr] = valid_box(dims, off);
    let step = offset_step(dims, off);
    graph
        .caps_mut(d)
        .par_chunks_mut(w)
        .enumerate()
        .for_each(|(row, caps)| {
            let (y, z) = (row % h, row / h);
            if !yr.contains(&y) || !zr.contains(&z) {
                return;
            }
            let base = row * w;
            for x in xr.clone() {
                let v = base + x;
                caps[x] = link(v, (v as isize + step) as usize);
            }
        });
}

/// `top · exp(−x)` on `[0, EXP_RANGE]` by linear interpolation between tabulated points.
struct ExpTable {
    values: Vec<f32>,
    end: f32,
}

impl ExpTable {
    fn new(top: f64) -> Self {
        let steps = (EXP_RANGE * EXP_STEPS) as usize;
        ExpTable {
            values: (0..=steps + 1)
                .map(|i| (top * (-(i as f64) / EXP_STEPS).exp()) as f32)
                .collect(),
            end: steps as f32,
        }
    }

    #[inline(always)]
    fn at(&self, x: f32) -> f32 {
        let t = x * EXP_STEPS as f32;
        if t >= self.end {
            return 0.0;
        }
        let i = t as usize;
        let f = t - i as f32;
        let (a, b) = (self.values[i], self.values[i + 1]);
        a + f * (b - a)
    }
}

/// Writes every direction's n-link capacities, rows in parallel. Both arcs of a pair are computed
/// from the same (symmetric) distance, so they are equal without a copy between the arrays.
fn fill_nlinks(graph: &mut GridGraph, k: &impl Dist2, beta: f32, dist: &[f64], table: &ExpTable) {
    let conn = graph.connectivity();
    for (d, &length) in dist.iter().enumerate().take(conn.degree()) {
        let inv_dist = (1.0 / length) as f32;
        // Values are non-negative: truncating x + ½ rounds to nearest.
        fill_direction(graph, d, |v, q| {
            (table.at(beta * k.dist2(v, q)) * inv_dist + 0.5) as Cap
        });
    }
}

/// Builds the n-links of `image` (terminal capacities left zero) and picks the scale and `K`.
pub fn build_nlinks(image: &Image, opts: &EnergyOptions) -> Result<Energy> {
    check_image(image)?;
    check_options(image, opts)?;
    let conn = opts.connectivity;
    let [w, h, depth] = image.dims;
    let mut graph = GridGraph::new(w, h, depth, conn)?;
    let beta = beta(image, conn, opts.sigma);
    let dist = direction_distances(conn, image.spacing);
    let (scale, max_link) = link_scale(opts, &dist)?;

    let (lo, hi, integral) = value_range(&image.data);
    if image.channels == 1 && integral && ((hi - lo) as usize) < NLINK_TABLE_LEVELS {
        let span = (hi - lo) as usize;
        fill_nlinks_grey_integer(&mut graph, &image.data, span, beta, &dist, max_link);
    } else {
        let table = ExpTable::new(max_link);
        with_dist2!(image, |k| fill_nlinks(
            &mut graph,
            &k,
            beta as f32,
            &dist,
            &table
        ));
    }

    // K = 1 + the largest n-link sum of any pixel, in i64.
    let g = &graph;
    let max_sum: i64 = (0..h * depth)
        .into_par_iter()
        .map(|row| {
            let mut best = 0i64;
            for x in 0..w {
                let v = row * w + x;
                let s: i64 = (0..conn.degree()).map(|d| g.caps(d)[v] as i64).sum();
                best = best.max(s);
            }
            best
        })
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
    Ok(Energy {
        graph,
        beta,
        scale,
        hard,
        unary_constant: 0.0,
    })
}

/// Writes the t-links of `energy` from the seeds and the two models (replacing any earlier ones):
/// hard seeds get `(K, 0)` / `(0, K)`, every other pixel its net data cost, clamped to `K`.
///
/// Grey images of at least `4 ·` [`COST_TABLE_NODES`] pixels evaluate the models on a table over
/// their value range instead of per pixel: one node per value for integer data (exact), else
/// [`COST_TABLE_NODES`] + 1 nodes with linear interpolation.
pub fn set_tlinks(
    energy: &mut Energy,
    image: &Image,
    seeds: &Seeds,
    fg: &dyn ColorModel,
    bg: &dyn ColorModel,
) -> Result<()> {
    set_tlinks_with_prior(energy, image, seeds, fg, bg, None)
}

/// [`set_tlinks`] with a per-pixel prior `δ` added to the data costs ([`super::prior`]):
/// `D_fg += max(0, δ)`, `D_bg += max(0, −δ)`, in `f64` after the models' costs (the GPU builder
/// adds it the same way, so both give the same capacities).
pub fn set_tlinks_with_prior(
    energy: &mut Energy,
    image: &Image,
    seeds: &Seeds,
    fg: &dyn ColorModel,
    bg: &dyn ColorModel,
    prior: Option<&[f32]>,
) -> Result<()> {
    check_tlink_inputs(energy, image, seeds, prior)?;
    if image.channels == 1 {
        if let Some(table) = CostTable::new(image, fg, bg) {
            let finite = table.nodes.iter().all(|c| c.0.min(c.1).is_finite());
            if table.exact && finite && prior.is_none() {
                return write_tlinks_exact(energy, image, seeds, &table);
            }
            return write_tlinks(energy, image, seeds, prior, |_, px| table.costs(px[0]));
        }
    }
    write_tlinks(energy, image, seeds, prior, |_, px| {
        (fg.neg_log_likelihood(px), bg.neg_log_likelihood(px))
    })
}

/// The seeds, the prior and the graph against the image, for the t-link writers.
fn check_tlink_inputs(
    energy: &Energy,
    image: &Image,
    seeds: &Seeds,
    prior: Option<&[f32]>,
) -> Result<()> {
    check_seeds(image, seeds)?;
    if let Some(p) = prior {
        if p.len() != image.num_pixels() {
            return Err(Error::Graph(format!(
                "prior has {} values but the image has {} pixels",
                p.len(),
                image.num_pixels()
            )));
        }
    }
    if image.dims != energy.graph.dims() {
        return Err(Error::Graph(format!(
            "graph is {:?} but the image is {:?}",
            energy.graph.dims(),
            image.dims
        )));
    }
    Ok(())
}

/// The distinct values of a multi-channel image and each pixel's: a photo has far fewer
/// colours than pixels (16–38 % on the dev photos), and a pixel's model costs depend on its
/// value only, so [`set_tlinks_palette`] evaluates both models once per colour. The same
/// costs, bit for bit: the same function of the same `f32` values (colours are told apart by
/// their bits).
///
/// ```
/// use segcut::io::Image;
/// use segcut::segment::energy::Palette;
/// let img = Image::new([3, 1, 1], 2, vec![1.0, 2.0, 5.0, 6.0, 1.0, 2.0]);
/// let p = Palette::new(&img, 1.0).unwrap();
/// assert_eq!(p.len(), 2);
/// assert!(Palette::new(&img, 0.5).is_none()); // 2 colours for 3 pixels: more than half
/// ```
#[derive(Clone, Debug)]
pub struct Palette {
    channels: usize,
    /// The distinct values, `channels` each.
    colours: Vec<f32>,
    /// Each pixel's colour.
    of_pixel: Vec<u32>,
}

impl Palette {
    /// Bytes per pixel a palette may take at most while [`Palette::new`] makes it: its pixel
    /// index (4), the sort's index or the first pixel of each colour (4), and the colours (at
    /// most one per two pixels of at most 4 channels: 8).
    pub const BYTES_PER_PIXEL: u64 = 16;

    /// The palette of `image`, or `None` where it would not pay: one channel (grey images
    /// tabulate their costs instead), more than 4 channels, more than `u32::MAX` pixels, or
    /// more distinct colours than `max_share` of the pixels.
    pub fn new(image: &Image, max_share: f64) -> Option<Palette> {
        let (ch, n) = (image.channels, image.num_pixels());
        if !(2..=4).contains(&ch) || n == 0 || n > u32::MAX as usize {
            return None;
        }
        let data = &image.data;
        let key = |i: u32| {
            let i = i as usize * ch;
            data[i..i + ch]
                .iter()
                .fold(0u128, |k, v| (k << 32) | v.to_bits() as u128)
        };
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.par_sort_unstable_by_key(|&i| key(i));
        let mut of_pixel = vec![0u32; n];
        let mut firsts: Vec<u32> = Vec::new();
        let mut last = None;
        for &i in &order {
            let k = key(i);
            if last != Some(k) {
                last = Some(k);
                firsts.push(i);
            }
            of_pixel[i as usize] = firsts.len() as u32 - 1;
        }
        drop(order);
        if firsts.len() as f64 > max_share * n as f64 {
            return None;
        }
        let colours = firsts
            .iter()
            .flat_map(|&i| &data[i as usize * ch..(i as usize + 1) * ch])
            .copied()
            .collect();
        Some(Palette {
            channels: ch,
            colours,
            of_pixel,
        })
    }

    /// The number of distinct colours.
    pub fn len(&self) -> usize {
        self.colours.len() / self.channels
    }

    /// Whether the image had no pixels (never: [`Palette::new`] makes none then).
    pub fn is_empty(&self) -> bool {
        self.colours.is_empty()
    }
}

/// [`set_tlinks_with_prior`] with the models evaluated once per colour of `palette` (made from
/// `image`): the same capacities (and the constant, up to the rounding of its parallel sum).
pub fn set_tlinks_palette(
    energy: &mut Energy,
    image: &Image,
    palette: &Palette,
    seeds: &Seeds,
    fg: &dyn ColorModel,
    bg: &dyn ColorModel,
    prior: Option<&[f32]>,
) -> Result<()> {
    if palette.of_pixel.len() != image.num_pixels() || palette.channels != image.channels {
        return Err(Error::Graph(format!(
            "the palette is of {} pixels of {} channel(s), the image {} of {}",
            palette.of_pixel.len(),
            palette.channels,
            image.num_pixels(),
            image.channels
        )));
    }
    let costs: Vec<(f64, f64)> = palette
        .colours
        .par_chunks(palette.channels)
        .map(|c| (fg.neg_log_likelihood(c), bg.neg_log_likelihood(c)))
        .collect();
    check_tlink_inputs(energy, image, seeds, prior)?;
    write_tlinks(energy, image, seeds, prior, |v, _| {
        costs[palette.of_pixel[v] as usize]
    })
}

/// The smallest probability a data cost is computed from: a pixel the map is certain about
/// (`P = 0` or `1`) costs at most `−ln ε ≈ 13.8` nats, so its neighbours and seeds can still
/// correct it (see [`super::unary`]).
pub const PROBABILITY_FLOOR: f64 = 1e-6;

/// The t-links of a probability data term, `(source, sink, constant)`, at the given scale
/// (capacity units per nat) and hard-seed capacity `K`: hard seeds `(K, 0)` / `(0, K)`, other
/// pixels `D(fg) = −ln max(P, floor)`, `D(bg) = −ln max(1 − P, floor)` in net form. The CPU
/// graph ([`set_tlinks_probability`]) and the GPU build take them from here.
pub fn probability_terminals(
    seeds: &Seeds,
    prob: &[f32],
    floor: f64,
    scale: f64,
    hard: Cap,
) -> Result<(Vec<Cap>, Vec<Cap>, f64)> {
    if prob.len() != seeds.labels.len() {
        return Err(Error::Graph(format!(
            "seeds {:?}, probability map {} values",
            seeds.dims,
            prob.len()
        )));
    }
    let kf = hard as f64;
    let caps: Vec<(Cap, Cap, f64)> = prob
        .par_iter()
        .zip(seeds.labels.par_iter())
        .map(|(&p, l)| match l {
            Seed::Foreground => (hard, 0, 0.0),
            Seed::Background => (0, hard, 0.0),
            _ => {
                let p = p as f64;
                let (dfg, dbg) = (-p.max(floor).ln(), -(1.0 - p).max(floor).ln());
                let net = (dbg - dfg) * scale;
                // Non-negative: truncating c + ½ rounds to nearest.
                let c = (net.abs().min(kf) + 0.5) as Cap;
                let m = dfg.min(dbg);
                if net > 0.0 {
                    (c, 0, m)
                } else {
                    (0, c, m)
                }
            }
        })
        .collect();
    let constant = caps.iter().map(|c| c.2).sum();
    let (source, sink) = caps.iter().map(|c| (c.0, c.1)).unzip();
    Ok((source, sink, constant))
}

/// Sets the t-links of a probability data term (see [`probability_terminals`]) on a graph
/// built by [`build_nlinks`].
pub fn set_tlinks_probability(
    energy: &mut Energy,
    seeds: &Seeds,
    prob: &[f32],
    floor: f64,
) -> Result<()> {
    let dims = energy.graph.dims();
    if seeds.dims != dims || prob.len() != seeds.labels.len() {
        return Err(Error::Graph(format!(
            "graph is {dims:?}, seeds {:?}, probability map {} values",
            seeds.dims,
            prob.len()
        )));
    }
    let (src, snk, constant) =
        probability_terminals(seeds, prob, floor, energy.scale, energy.hard)?;
    let (source, sink) = energy.graph.terminal_caps_mut();
    source.copy_from_slice(&src);
    sink.copy_from_slice(&snk);
    energy.unary_constant = constant;
    Ok(())
}

/// Grey images: both models tabulated over the image's value range, so a volume of millions of
/// voxels costs a table lookup per voxel instead of two mixture evaluations. Integer data whose
/// range spans at most [`COST_TABLE_NODES`] values gets one node per value (exact); other data
/// gets [`COST_TABLE_NODES`] evenly spaced nodes and linear interpolation, far finer than any
/// component's standard deviation (the covariance floor keeps those above `0.03` of the image's).
struct CostTable {
    /// One node per integer value: pixels index the nodes directly.
    exact: bool,
    lo: f32,
    inv_step: f32,
    /// `(D_fg, D_bg)` per node.
    nodes: Vec<(f64, f64)>,
}

/// Most nodes of the table that grey images tabulate their two models on (see [`set_tlinks`]).
pub const COST_TABLE_NODES: usize = 1 << 16;

impl CostTable {
    /// `None` where a table would not pay (fewer pixels than nodes to evaluate).
    fn new(image: &Image, fg: &dyn ColorModel, bg: &dyn ColorModel) -> Option<Self> {
        if image.num_pixels() < 4 * COST_TABLE_NODES {
            return None;
        }
        let (lo, hi, integral) = value_range(&image.data);
        let span = (hi - lo) as f64;
        let (count, step) = if integral && span < COST_TABLE_NODES as f64 {
            (span as usize + 1, 1.0)
        } else {
            (
                COST_TABLE_NODES + 1,
                (span / COST_TABLE_NODES as f64).max(f64::MIN_POSITIVE),
            )
        };
        let nodes = (0..count)
            .into_par_iter()
            .map(|i| {
                let x = [(lo as f64 + i as f64 * step) as f32];
                (fg.neg_log_likelihood(&x), bg.neg_log_likelihood(&x))
            })
            .collect();
        Some(CostTable {
            exact: step == 1.0,
            lo,
            inv_step: (1.0 / step) as f32,
            nodes,
        })
    }

    #[inline]
    fn costs(&self, x: f32) -> (f64, f64) {
        let last = self.nodes.len() - 1;
        let t = ((x - self.lo) * self.inv_step).max(0.0);
        let i = (t as usize).min(last);
        let f = (t - i as f32) as f64;
        let a = self.nodes[i];
        if f == 0.0 || i == last {
            return a;
        }
        let b = self.nodes[i + 1];
        (a.0 + f * (b.0 - a.0), a.1 + f * (b.1 - a.1))
    }
}

/// [`write_tlinks`] for an exact grey table: each node's capacities are computed once, each
/// pixel copies its value's pair.
fn write_tlinks_exact(
    energy: &mut Energy,
    image: &Image,
    seeds: &Seeds,
    table: &CostTable,
) -> Result<()> {
    let (k, scale) = (energy.hard, energy.scale);
    let node_caps: Vec<(Cap, Cap, f64)> = table
        .nodes
        .iter()
        .map(|&(dfg, dbg)| {
            let net = (dbg - dfg) * scale;
            let c = (net.abs().min(k as f64) + 0.5) as Cap;
            let (s, t) = if net > 0.0 { (c, 0) } else { (0, c) };
            (s, t, dfg.min(dbg))
        })
        .collect();
    let w = image.dims[0];
    let lo = table.lo;
    let (data, labels) = (&image.data, &seeds.labels);
    let (source, sink) = energy.graph.terminal_caps_mut();
    energy.unary_constant = source
        .par_chunks_mut(w)
        .zip(sink.par_chunks_mut(w))
        .enumerate()
        .map(|(row, (src, snk))| {
            let mut constant = 0.0;
            let base = row * w;
            for x in 0..src.len() {
                let (s, t) = match labels[base + x] {
                    Seed::Foreground => (k, 0),
                    Seed::Background => (0, k),
                    _ => {
                        let (s, t, m) = node_caps[(data[base + x] - lo) as usize];
                        constant += m;
                        (s, t)
                    }
                };
                src[x] = s;
                snk[x] = t;
            }
            constant
        })
        .sum();
    Ok(())
}

/// The t-link loop, rows in parallel, with `costs(index, pixel) = (D_fg, D_bg)` plus the
/// prior's.
fn write_tlinks(
    energy: &mut Energy,
    image: &Image,
    seeds: &Seeds,
    prior: Option<&[f32]>,
    costs: impl Fn(usize, &[f32]) -> (f64, f64) + Sync,
) -> Result<()> {
    let [w, h, _] = image.dims;
    let (k, scale) = (energy.hard, energy.scale);
    let kf = k as f64;
    let ch = image.channels;
    let data = &image.data;
    let labels = &seeds.labels;
    let (source, sink) = energy.graph.terminal_caps_mut();
    let constant = source
        .par_chunks_mut(w)
        .zip(sink.par_chunks_mut(w))
        .enumerate()
        .map(|(row, (src, snk))| -> Result<f64> {
            let mut constant = 0.0;
            for x in 0..src.len() {
                let v = row * w + x;
                let (s, t) = match labels[v] {
                    Seed::Foreground => (k, 0),
                    Seed::Background => (0, k),
                    _ => {
                        let (mut dfg, mut dbg) = costs(v, &data[v * ch..(v + 1) * ch]);
                        if let Some(p) = prior {
                            let delta = p[v] as f64;
                            dfg += delta.max(0.0);
                            dbg += (-delta).max(0.0);
                        }
                        let net = (dbg - dfg) * scale;
                        if net.is_nan() || !dfg.min(dbg).is_finite() {
                            return Err(Error::Input {
                                file: "colour model".into(),
                                msg: format!(
                                    "pixel (x={x}, y={}, z={}) has costs fg {dfg}, bg {dbg}",
                                    row % h,
                                    row / h
                                ),
                            });
                        }
                        constant += dfg.min(dbg);
                        // Non-negative: truncating c + ½ rounds to nearest.
                        let c = (net.abs().min(kf) + 0.5) as Cap;
                        if net > 0.0 {
                            (c, 0)
                        } else {
                            (0, c)
                        }
                    }
                };
                src[x] = s;
                snk[x] = t;
            }
            Ok(constant)
        })
        .try_reduce(|| 0.0, |a, b| Ok(a + b))?;
    energy.unary_constant = constant;
    Ok(())
}

/// The whole graph: [`build_nlinks`] then [`set_tlinks`].
pub fn build_graph(
    image: &Image,
    seeds: &Seeds,
    fg: &dyn ColorModel,
    bg: &dyn ColorModel,
    opts: &EnergyOptions,
) -> Result<Energy> {
    check_image(image)?;
    check_seeds(image, seeds)?;
    let mut e = build_nlinks(image, opts)?;
    set_tlinks(&mut e, image, seeds, fg, bg)?;
    Ok(e)
}
