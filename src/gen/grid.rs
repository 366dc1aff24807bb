//! Vision-like grid instances: a synthetic noisy scene, segmented the way Boykov and Jolly build
//! their graphs ("Interactive graph cuts for optimal boundary & region segmentation", ICCV 2001).
//!
//! The scene is piecewise smooth: a background with a gentle linear gradient, a few foreground
//! ellipses (ellipsoids in 3D) of different intensities, each with its own slight gradient, and a
//! few background-coloured holes cut into them. Gaussian noise is added and the result quantised
//! to 8 bits, like a real image. Then:
//!
//! - **n-links** (both directions, symmetric): `round(scale · exp(−(Ip − Iq)² / (2σ²)) / dist(p, q))`
//!   with `σ = max(√2 · noise, 0.02)` (the spread of the difference of two noisy pixels), so smooth
//!   regions get strong links and object edges weak ones; `dist` is 1, √2 or √3.
//! - **t-links**: `u · (−ln P(I | background) + ln P(I | foreground))` per node, from two Gaussian
//!   intensity models that roughly (not exactly) match the scene, rounded. `u` is 10 for N4 / N6
//!   and grows with the neighbourhood's total n-link weight (≈ 17 for N8, ≈ 32 for N26) so that
//!   a given `scale` means the same smoothness whatever the connectivity. A positive value goes to
//!   the source arc (foreground = source side), a negative one to the sink arc; the other is zero
//!   (the "net" form of the Waterloo instances).
//! - **hard seeds** ([`VisionOptions::hard_seeds`], 4 per label by default, 0 to turn off): small
//!   discs/balls inside the true foreground and background, like a user's strokes, whose terminal
//!   arc is larger than all the node's n-links together.
//!
//! `scale` plays the role of the Waterloo `c10` / `c100` variants: it multiplies the n-links
//! relative to the t-links, so larger values give smoother, harder cuts. Because intensities are
//! 8-bit, both kinds of capacity come from 256-entry tables, and generation costs little more than
//! drawing the noise. All floating-point work uses `+ − × ÷` and `sqrt` only (own `exp`, `ln` and
//! Gaussian sampler), which IEEE 754 rounds the same everywhere: a spec gives the same graph, bit
//! for bit, on every platform.

use std::fmt;
use std::str::FromStr;

use crate::graph::{Cap, Connectivity, GridGraph, MAX_NODES};
use crate::rng::Rng;
use crate::{Error, Result};

/// Default memory limit for [`vision_grid`]: 16 GiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 16 << 30;

/// Hard seeds per label that [`vision_grid`] places (see [`VisionOptions::hard_seeds`]).
pub const DEFAULT_HARD_SEEDS: u32 = 4;

/// The largest accepted `scale`: keeps every capacity, hard seeds included, far inside `i32`.
pub const MAX_SCALE: u32 = 1 << 20;

/// The largest accepted `noise` (standard deviation, in units of the intensity range `[0, 1]`).
pub const MAX_NOISE: f64 = 4.0;

/// Capacity units per nat of log-likelihood ratio in the t-links.
const TLINK_UNIT: f64 = 10.0;
/// Intensity models the t-links are built from: (mean, base standard deviation).
const BACKGROUND_MODEL: (f64, f64) = (0.25, 0.07);
const FOREGROUND_MODEL: (f64, f64) = (0.70, 0.10);
/// Stream tags, so the scene, the noise and the seeds draw from independent streams.
const NOISE_STREAM: u64 = 0x6e6f_6973_6521;
const SEED_STREAM: u64 = 0x7365_6564_7321;

/// Parameters of a vision-like grid instance; see the [module docs](self) for the model.
///
/// The compact text form (its [`FromStr`] and [`Display`](fmt::Display)) is
///
/// ```text
/// spec  := "2d:" W "x" H (":" opt)*  |  "3d:" W "x" H "x" D (":" opt)*
/// opt   := "n" CONN       connectivity: 4 or 8 in 2d (default 4), 6 or 26 in 3d (default 6)
///        | "c" SCALE      n-link scale, 1 ..= 2^20 (default 10)
///        | "s" SEED       u64 seed (default 1)
///        | "noise" SIGMA  noise standard deviation, 0 ..= 4 (default 0.2)
/// ```
///
/// Each option may appear once, in any order. Examples: `2d:1024x1024:n4:c10:s1`,
/// `3d:128x128x128:n6:c100:s7`, `2d:64x64:noise0.1`.
///
/// ```
/// use segcut::gen::{vision_grid, GridSpec};
/// use segcut::graph::Connectivity;
///
/// let spec: GridSpec = "2d:64x48:n8:c100:s7".parse().unwrap();
/// assert_eq!(spec, GridSpec::new_2d(64, 48, Connectivity::N8).with_scale(100).with_seed(7));
/// assert_eq!(spec.to_string(), "2d:64x48:n8:c100:s7");
/// let g = vision_grid(&spec).unwrap();
/// assert_eq!(g.dims(), [64, 48, 1]);
/// g.validate().unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GridSpec {
    /// `[width, height, depth]`; depth is 1 for 2D connectivities.
    pub dims: [usize; 3],
    /// Neighbourhood: N4 / N8 in 2D, N6 / N26 in 3D.
    pub conn: Connectivity,
    /// n-link strength relative to the t-links (the Waterloo `cN` variants use 10 and 100).
    pub scale: u32,
    /// Standard deviation of the Gaussian image noise, the intensity range being `[0, 1]`.
    pub noise: f64,
    /// Seed of every random choice: equal specs give identical graphs on every platform.
    pub seed: u64,
}

impl Default for GridSpec {
    /// A 256×256 4-connected image, `scale` 10, noise 0.2, seed 1 (`2d:256x256:n4:c10:s1`).
    fn default() -> Self {
        GridSpec {
            dims: [256, 256, 1],
            conn: Connectivity::N4,
            scale: 10,
            noise: 0.2,
            seed: 1,
        }
    }
}

/// Generation options that are not part of an instance's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VisionOptions {
    /// Refuse instances whose estimated memory ([`GridSpec::memory_bytes`]) exceeds this many bytes.
    pub memory_limit: u64,
    /// Number of hard-seed discs (balls in 3D) placed at random in the true foreground, and as
    /// many in the true background, like a user's strokes; 0 for none. They keep both sides of
    /// the cut non-empty even when strong n-links (`c100`) would rather swallow the objects.
    pub hard_seeds: u32,
}

impl Default for VisionOptions {
    /// [`DEFAULT_MEMORY_LIMIT`] and [`DEFAULT_HARD_SEEDS`] seeds per label.
    fn default() -> Self {
        VisionOptions {
            memory_limit: DEFAULT_MEMORY_LIMIT,
            hard_seeds: DEFAULT_HARD_SEEDS,
        }
    }
}

impl GridSpec {
    /// A 2D image (`conn` N4 or N8) with the default scale, noise and seed.
    pub fn new_2d(width: usize, height: usize, conn: Connectivity) -> Self {
        GridSpec {
            dims: [width, height, 1],
            conn,
            ..GridSpec::default()
        }
    }

    /// A 3D volume (`conn` N6 or N26) with the default scale, noise and seed.
    pub fn new_3d(width: usize, height: usize, depth: usize, conn: Connectivity) -> Self {
        GridSpec {
            dims: [width, height, depth],
            conn,
            ..GridSpec::default()
        }
    }

    /// The same spec with another n-link scale.
    pub fn with_scale(mut self, scale: u32) -> Self {
        self.scale = scale;
        self
    }

    /// The same spec with another noise level.
    pub fn with_noise(mut self, noise: f64) -> Self {
        self.noise = noise;
        self
    }

    /// The same spec with another seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Number of nodes, or `None` if the product overflows.
    pub fn num_nodes(&self) -> Option<usize> {
        let [w, h, d] = self.dims;
        w.checked_mul(h)?.checked_mul(d)
    }

    /// Estimated peak memory of generation in bytes: the grid's per-direction and terminal
    /// capacity arrays (4 bytes each per node) plus the 8-bit scene and its truth mask.
    pub fn memory_bytes(&self) -> Option<u64> {
        let per_node = (self.conn.degree() as u64 + 2) * std::mem::size_of::<Cap>() as u64 + 2;
        (self.num_nodes()? as u64).checked_mul(per_node)
    }

    /// Checks every parameter; the error says which one is wrong and why.
    pub fn check(&self, memory_limit: u64) -> Result<()> {
        let [w, h, d] = self.dims;
        if w == 0 || h == 0 || d == 0 {
            return Err(Error::Graph(format!(
                "vision grid: dimensions must be positive, got {w}x{h}x{d}"
            )));
        }
        if !self.conn.is_3d() && d != 1 {
            return Err(Error::Graph(format!(
                "vision grid: {} is a 2D connectivity but the depth is {d}",
                self.conn
            )));
        }
        if self.scale == 0 || self.scale > MAX_SCALE {
            return Err(Error::Graph(format!(
                "vision grid: scale must be in 1..={MAX_SCALE}, got {}",
                self.scale
            )));
        }
        if !(0.0..=MAX_NOISE).contains(&self.noise) {
            return Err(Error::Graph(format!(
                "vision grid: noise must be in 0..={MAX_NOISE}, got {}",
                self.noise
            )));
        }
        let n = self
            .num_nodes()
            .filter(|&n| n <= MAX_NODES)
            .ok_or_else(|| {
                Error::Graph(format!(
                    "vision grid: {w}x{h}x{d} has more than {MAX_NODES} nodes"
                ))
            })?;
        let bytes = self.memory_bytes().unwrap_or(u64::MAX);
        if bytes > memory_limit {
            return Err(Error::Graph(format!(
                "vision grid {w}x{h}x{d} {} needs about {bytes} bytes ({:.2} GiB for {n} nodes), \
                 above the memory limit of {memory_limit} bytes",
                self.conn,
                bytes as f64 / (1u64 << 30) as f64
            )));
        }
        Ok(())
    }
}

impl fmt::Display for GridSpec {
    /// The canonical compact form; `noise` is written only when it differs from the default.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [w, h, d] = self.dims;
        if self.conn.is_3d() {
            write!(f, "3d:{w}x{h}x{d}")?;
        } else {
            write!(f, "2d:{w}x{h}")?;
        }
        write!(f, ":n{}:c{}:s{}", self.conn.number(), self.scale, self.seed)?;
        if self.noise != GridSpec::default().noise {
            write!(f, ":noise{}", self.noise)?;
        }
        Ok(())
    }
}

impl FromStr for GridSpec {
    type Err = Error;

    /// Parses the compact form documented on [`GridSpec`]. Only the syntax is checked here;
    /// [`vision_grid`] checks the values.
    fn from_str(text: &str) -> Result<Self> {
        let bad = |msg: String| Error::Input {
            file: format!("grid spec '{text}'"),
            msg,
        };
        let mut parts = text.split(':');
        let is_3d = match parts.next().unwrap_or("") {
            "2d" => false,
            "3d" => true,
            other => return Err(bad(format!("starts with '{other}', expected '2d' or '3d'"))),
        };
        let size = parts.next().ok_or_else(|| {
            bad(format!(
                "missing size, expected {}",
                if is_3d { "WxHxD" } else { "WxH" }
            ))
        })?;
        let dims: Vec<&str> = size.split('x').collect();
        let expected = if is_3d { 3 } else { 2 };
        if dims.len() != expected {
            return Err(bad(format!(
                "size '{size}' should be {}",
                if is_3d { "WxHxD" } else { "WxH" }
            )));
        }
        let mut spec = GridSpec {
            conn: if is_3d {
                Connectivity::N6
            } else {
                Connectivity::N4
            },
            ..GridSpec::default()
        };
        for (i, s) in dims.iter().enumerate() {
            spec.dims[i] = s
                .parse::<usize>()
                .map_err(|_| bad(format!("size '{size}': '{s}' is not a whole number")))?;
        }
        if !is_3d {
            spec.dims[2] = 1;
        }
        let mut seen: Vec<&str> = Vec::new();
        for opt in parts {
            let (key, value) = split_option(opt, &["noise", "n", "c", "s"]).ok_or_else(|| {
                bad(format!(
                    "unknown option '{opt}' (expected nK, cS, sN or noiseX)"
                ))
            })?;
            if seen.contains(&key) {
                return Err(bad(format!("option '{key}' given twice")));
            }
            seen.push(key);
            match key {
                "n" => {
                    let conn = value
                        .parse::<u32>()
                        .ok()
                        .and_then(Connectivity::from_number)
                        .filter(|c| c.is_3d() == is_3d)
                        .ok_or_else(|| {
                            bad(format!(
                                "connectivity '{opt}' is not one of {}",
                                if is_3d { "n6, n26" } else { "n4, n8" }
                            ))
                        })?;
                    spec.conn = conn;
                }
                "c" => {
                    spec.scale = value.parse().map_err(|_| {
                        bad(format!("scale '{opt}': '{value}' is not a whole number"))
                    })?
                }
                "s" => {
                    spec.seed = value.parse().map_err(|_| {
                        bad(format!(
                            "seed '{opt}': '{value}' is not a 64-bit whole number"
                        ))
                    })?
                }
                _ => {
                    spec.noise = value
                        .parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| bad(format!("noise '{opt}': '{value}' is not a number")))?
                }
            }
        }
        Ok(spec)
    }
}

/// Splits `opt` into one of `keys` (tried in order, so longer keys go first) and the rest.
pub(crate) fn split_option<'a>(
    opt: &'a str,
    keys: &[&'static str],
) -> Option<(&'static str, &'a str)> {
    keys.iter()
        .find(|k| opt.starts_with(**k) && opt.len() > k.len())
        .map(|k| (*k, &opt[k.len()..]))
}

/// The synthetic scene behind a vision grid: what the segmentation should find.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scene {
    /// `[width, height, depth]`, as in the spec.
    pub dims: [usize; 3],
    /// The noisy 8-bit intensity of each node (index `x + W·(y + H·z)`).
    pub intensity: Vec<u8>,
    /// The noise-free truth: `true` where the node lies in a foreground object.
    pub foreground: Vec<bool>,
}

/// One ellipse / ellipsoid of the scene, in normalised coordinates (each axis mapped to `[0, 1]`).
#[derive(Clone, Debug)]
struct Blob {
    center: [f64; 3],
    /// Rows: the principal axes divided by their radii, so `Σ (row · (p − center))² ≤ 1` inside.
    axes: [[f64; 3]; 3],
    intensity: f64,
    /// Intensity change per unit of normalised distance from the centre.
    slope: [f64; 3],
    foreground: bool,
}

impl Blob {
    fn value_at(&self, p: [f64; 3]) -> Option<f64> {
        let d = [
            p[0] - self.center[0],
            p[1] - self.center[1],
            p[2] - self.center[2],
        ];
        let mut q = 0.0;
        for row in &self.axes {
            let t = row[0] * d[0] + row[1] * d[1] + row[2] * d[2];
            q += t * t;
        }
        (q <= 1.0).then(|| {
            self.intensity + self.slope[0] * d[0] + self.slope[1] * d[1] + self.slope[2] * d[2]
        })
    }
}

/// A point uniform in the unit disc (`dims` 2) or ball (`dims` 3), away from the centre.
fn in_unit_ball(rng: &mut Rng, dims: usize) -> [f64; 3] {
    loop {
        let mut p = [0.0; 3];
        for c in p.iter_mut().take(dims) {
            *c = 2.0 * rng.unit_f64() - 1.0;
        }
        let r2 = dot(p, p);
        if r2 > 1e-6 && r2 <= 1.0 {
            return p;
        }
    }
}

/// A random rotation: three orthonormal rows (only the first two matter in 2D, where the third is
/// the z axis). Built from points uniform in the disc / ball, whose directions are uniform, with
/// arithmetic and `sqrt` only (see [`exact`]).
fn random_axes(rng: &mut Rng, is_3d: bool) -> [[f64; 3]; 3] {
    if !is_3d {
        let p = in_unit_ball(rng, 2);
        let r = dot(p, p).sqrt();
        let (c, s) = (p[0] / r, p[1] / r);
        return [[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]];
    }
    // Gram–Schmidt on two random directions; retry the (rare) nearly parallel pairs so this
    // cannot divide by zero.
    loop {
        let u = in_unit_ball(rng, 3);
        let v = in_unit_ball(rng, 3);
        let nu = dot(u, u).sqrt();
        let u = u.map(|x| x / nu);
        let p = dot(u, v);
        let v = [v[0] - p * u[0], v[1] - p * u[1], v[2] - p * u[2]];
        let nv = dot(v, v).sqrt();
        if nv < 1e-6 {
            continue;
        }
        let v = v.map(|x| x / nv);
        let w = [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ];
        return [u, v, w];
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.unit_f64()
}

/// The random objects of the scene: 3–6 foreground blobs, then 0–2 background holes inside them.
fn scene_blobs(rng: &mut Rng, is_3d: bool) -> Vec<Blob> {
    let dims_used = if is_3d { 3 } else { 2 };
    let mut blobs = Vec::new();
    let objects = 3 + rng.below(4) as usize;
    for _ in 0..objects {
        let mut center = [0.0; 3];
        let mut slope = [0.0; 3];
        for k in 0..dims_used {
            center[k] = uniform(rng, 0.15, 0.85);
            slope[k] = uniform(rng, -0.3, 0.3);
        }
        let mut axes = random_axes(rng, is_3d);
        // Radii in normalised units; 3D objects are rounder so that they fill a similar share.
        let (r_lo, r_hi) = if is_3d { (0.12, 0.3) } else { (0.07, 0.25) };
        for row in axes.iter_mut().take(dims_used) {
            let r = uniform(rng, r_lo, r_hi);
            *row = row.map(|x| x / r);
        }
        blobs.push(Blob {
            center,
            axes,
            // Some objects are close to the middle of the two models: ambiguous t-links that the
            // n-links have to settle.
            intensity: uniform(rng, 0.5, 0.85),
            slope,
            foreground: true,
        });
    }
    let holes = rng.below(3) as usize;
    for _ in 0..holes {
        let host = blobs[rng.below(objects as u64) as usize].clone();
        let mut axes = host.axes;
        let shrink = uniform(rng, 0.25, 0.5);
        for row in axes.iter_mut().take(dims_used) {
            *row = row.map(|x| x / shrink);
        }
        blobs.push(Blob {
            axes,
            intensity: uniform(rng, 0.15, 0.35),
            slope: [0.0; 3],
            foreground: false,
            ..host
        });
    }
    blobs
}

/// Builds the noisy scene of `spec` (checking the spec first, with the default memory limit).
///
/// ```
/// let spec = segcut::gen::GridSpec::new_2d(32, 32, segcut::graph::Connectivity::N4);
/// let scene = segcut::gen::vision_scene(&spec).unwrap();
/// assert_eq!(scene.intensity.len(), 32 * 32);
/// assert!(scene.foreground.iter().any(|&f| f));
/// ```
pub fn vision_scene(spec: &GridSpec) -> Result<Scene> {
    spec.check(DEFAULT_MEMORY_LIMIT)?;
    Ok(build_scene(spec))
}

fn build_scene(spec: &GridSpec) -> Scene {
    let [w, h, d] = spec.dims;
    let is_3d = spec.conn.is_3d();
    let mut rng = Rng::new(spec.seed);
    // Background: a gentle linear gradient around a random level.
    let base = uniform(&mut rng, 0.2, 0.3);
    let mut grad = [0.0; 3];
    for g in grad.iter_mut().take(if is_3d { 3 } else { 2 }) {
        *g = uniform(&mut rng, -0.15, 0.15);
    }
    let blobs = scene_blobs(&mut rng, is_3d);
    let mut noise = Rng::new(spec.seed ^ NOISE_STREAM);
    let mut normal = exact::Normal::default();
    let n = w * h * d;
    let mut intensity = Vec::with_capacity(n);
    let mut foreground = Vec::with_capacity(n);
    for z in 0..d {
        let pz = if is_3d {
            (z as f64 + 0.5) / d as f64
        } else {
            0.0
        };
        for y in 0..h {
            let py = (y as f64 + 0.5) / h as f64;
            for x in 0..w {
                let p = [(x as f64 + 0.5) / w as f64, py, pz];
                let mut value =
                    base + grad[0] * (p[0] - 0.5) + grad[1] * (p[1] - 0.5) + grad[2] * (p[2] - 0.5);
                let mut fg = false;
                // Later blobs are drawn over earlier ones (holes come last).
                for b in &blobs {
                    if let Some(v) = b.value_at(p) {
                        value = v;
                        fg = b.foreground;
                    }
                }
                let noisy = value + spec.noise * normal.sample(&mut noise);
                intensity.push((noisy.clamp(0.0, 1.0) * 255.0).round() as u8);
                foreground.push(fg);
            }
        }
    }
    Scene {
        dims: spec.dims,
        intensity,
        foreground,
    }
}

/// Negative log-likelihood of intensity `i` under a Gaussian model widened by the image noise.
fn neg_log_likelihood(i: f64, (mean, spread): (f64, f64), noise: f64) -> f64 {
    let sigma = (spread * spread + noise * noise).sqrt();
    (i - mean) * (i - mean) / (2.0 * sigma * sigma) + exact::ln(sigma)
}

/// `unit · (D_background − D_foreground)` for each 8-bit intensity: positive values prefer the
/// source (foreground) side.
fn tlink_table(noise: f64, unit: f64) -> [i64; 256] {
    std::array::from_fn(|q| {
        let i = q as f64 / 255.0;
        let d_bg = neg_log_likelihood(i, BACKGROUND_MODEL, noise);
        let d_fg = neg_log_likelihood(i, FOREGROUND_MODEL, noise);
        (unit * (d_bg - d_fg)).round() as i64
    })
}

/// Capacity units per nat in the t-links: [`TLINK_UNIT`] times the n-link mass of one half of the
/// neighbourhood (`Σ 1/dist` over the forward directions) per axis, i.e. 1 for N4 / N6, about
/// 1.71 for N8 and 3.18 for N26. Denser neighbourhoods cross a boundary with more links; without
/// this, `scale` would mean a several times smoother model on N26 than on N6 and the cut would
/// shrink to the hard seeds.
fn tlink_unit(conn: Connectivity) -> f64 {
    let offsets = conn.offsets();
    let mass: f64 = offsets
        .iter()
        .step_by(2)
        .map(|o| 1.0 / (o.iter().map(|c| c.unsigned_abs()).sum::<u32>() as f64).sqrt())
        .sum();
    let axes = if conn.is_3d() { 3.0 } else { 2.0 };
    TLINK_UNIT * mass / axes
}

/// n-link capacity for each 8-bit intensity difference, for a neighbour at distance `dist`.
fn nlink_table(scale: u32, noise: f64, dist: f64) -> [Cap; 256] {
    let sigma = (std::f64::consts::SQRT_2 * noise).max(0.02);
    std::array::from_fn(|diff| {
        let delta = diff as f64 / 255.0;
        (scale as f64 * exact::exp(-delta * delta / (2.0 * sigma * sigma)) / dist).round() as Cap
    })
}

/// Fills direction `dir`'s capacities from the intensity differences; out-of-grid slots stay 0.
fn fill_direction(g: &mut GridGraph, dir: usize, q: &[u8], table: &[Cap; 256]) {
    let [w, h, d] = g.dims();
    let off = g.connectivity().offsets()[dir];
    let stride = g.stride(dir);
    // Offsets are −1, 0 or +1: the nodes whose neighbour exists form a box.
    let span = |o: i32, n: usize| match o {
        1 => 0..n - 1,
        -1 => 1..n,
        _ => 0..n,
    };
    let (xs, ys, zs) = (span(off[0], w), span(off[1], h), span(off[2], d));
    let caps = g.caps_mut(dir);
    for z in zs {
        for y in ys.clone() {
            let row = w * (y + h * z);
            for v in row + xs.start..row + xs.end {
                let u = v.wrapping_add_signed(stride);
                caps[v] = table[q[v].abs_diff(q[u]) as usize];
            }
        }
    }
}

/// Builds the vision grid of `spec` with the default options (16 GiB limit, 4 hard seeds per
/// label).
///
/// ```
/// use segcut::gen::{vision_grid, GridSpec};
/// let g = vision_grid(&"3d:16x16x8:n26:c10:s3".parse::<GridSpec>().unwrap()).unwrap();
/// assert_eq!(g.num_nodes(), 16 * 16 * 8);
/// assert!(g.source_caps().iter().any(|&c| c > 0) && g.sink_caps().iter().any(|&c| c > 0));
/// ```
pub fn vision_grid(spec: &GridSpec) -> Result<GridGraph> {
    vision_grid_with(spec, &VisionOptions::default())
}

/// Builds the vision grid of `spec` with explicit options (memory limit, hard seeds).
pub fn vision_grid_with(spec: &GridSpec, opts: &VisionOptions) -> Result<GridGraph> {
    spec.check(opts.memory_limit)?;
    let scene = build_scene(spec);
    grid_from_scene(spec, &scene, opts)
}

/// Builds the graph of an already generated scene (as returned by [`vision_scene`] for `spec`).
pub fn grid_from_scene(spec: &GridSpec, scene: &Scene, opts: &VisionOptions) -> Result<GridGraph> {
    spec.check(opts.memory_limit)?;
    let n = spec.num_nodes().unwrap_or(0);
    if scene.dims != spec.dims || scene.intensity.len() != n || scene.foreground.len() != n {
        return Err(Error::Graph(format!(
            "vision grid: the scene is {:?} with {} intensities, the spec asks for {:?}",
            scene.dims,
            scene.intensity.len(),
            spec.dims
        )));
    }
    let [w, h, d] = spec.dims;
    let mut g = GridGraph::new(w, h, d, spec.conn)?;
    let tables: [[Cap; 256]; 3] =
        std::array::from_fn(|k| nlink_table(spec.scale, spec.noise, ((k + 1) as f64).sqrt()));
    for dir in 0..spec.conn.degree() {
        let steps: u32 = spec.conn.offsets()[dir]
            .iter()
            .map(|o| o.unsigned_abs())
            .sum();
        fill_direction(&mut g, dir, &scene.intensity, &tables[steps as usize - 1]);
    }
    let tlinks = tlink_table(spec.noise, tlink_unit(spec.conn));
    let (source, sink) = g.terminal_caps_mut();
    for (v, &q) in scene.intensity.iter().enumerate() {
        let t = tlinks[q as usize];
        // |t| ≤ 32 · (0.75²/(2·0.07²) + ln(0.1/0.07)) < 2000: no overflow.
        source[v] = t.max(0) as Cap;
        sink[v] = (-t).max(0) as Cap;
    }
    if opts.hard_seeds > 0 {
        place_hard_seeds(&mut g, spec, scene, opts.hard_seeds);
    }
    Ok(g)
}

/// Hard constraints: nodes in small discs/balls of the true foreground (background) get a source
/// (sink) capacity above the sum of all their n-links, so no minimum cut can separate them from
/// their terminal.
fn place_hard_seeds(g: &mut GridGraph, spec: &GridSpec, scene: &Scene, count: u32) {
    let [w, h, d] = spec.dims;
    let n = w * h * d;
    // Every n-link is at most `scale`, in each direction.
    let hard = (2 * spec.conn.degree() as i64 * spec.scale as i64 + 1) as Cap;
    let radius = (w.min(h).min(if spec.conn.is_3d() { d } else { h }) / 32).max(1) as i64;
    let mut rng = Rng::new(spec.seed ^ SEED_STREAM);
    for label in [true, false] {
        for _ in 0..count {
            // A bounded number of tries: a scene may have (almost) no node of this label.
            let Some(c) = (0..64)
                .map(|_| rng.below(n as u64) as usize)
                .find(|&v| scene.foreground[v] == label)
            else {
                continue;
            };
            let [cx, cy, cz] = g.coords(c);
            let zr = if spec.conn.is_3d() { radius } else { 0 };
            for dz in -zr..=zr {
                for dy in -radius..=radius {
                    for dx in -radius..=radius {
                        if dx * dx + dy * dy + dz * dz > radius * radius {
                            continue;
                        }
                        let (x, y, z) = (cx as i64 + dx, cy as i64 + dy, cz as i64 + dz);
                        if x < 0
                            || y < 0
                            || z < 0
                            || x >= w as i64
                            || y >= h as i64
                            || z >= d as i64
                        {
                            continue;
                        }
                        let v = g.index(x as usize, y as usize, z as usize);
                        if scene.foreground[v] == label {
                            if label {
                                g.set_terminals(v, hard, 0);
                            } else {
                                g.set_terminals(v, 0, hard);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Elementary functions from `+ − × ÷` and `sqrt` only. IEEE 754 rounds those identically on every
/// platform, while `f64::exp`, `ln`, `sin` come from the platform's libm and may differ in the last
/// bit, which could flip a rounded capacity or an 8-bit intensity. Accuracy is a few ulps, plenty
/// for a generator; what matters is that the bits are the same everywhere.
mod exact {
    use crate::rng::Rng;
    use std::f64::consts::{LN_2, SQRT_2};

    /// `e^x`, for `x` in about `[-700, 700]` (0 below).
    pub fn exp(x: f64) -> f64 {
        if x < -700.0 {
            return 0.0;
        }
        let x = x.min(700.0);
        // x = k·ln 2 + r with |r| ≤ ln 2 / 2; then e^r by its Taylor series (18 terms: the rest
        // is below 1e-20) and 2^k straight into the exponent bits.
        // ln 2 split in two (Cody–Waite) so that k·ln 2 is subtracted without rounding error.
        const LN2_HI: f64 = 6.931_471_803_691_238e-1;
        const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
        let k = (x / LN_2).round();
        let r = (x - k * LN2_HI) - k * LN2_LO;
        let (mut term, mut sum) = (1.0, 1.0);
        for i in 1..=18 {
            term *= r / i as f64;
            sum += term;
        }
        sum * f64::from_bits(((k as i64 + 1023) as u64) << 52)
    }

    /// Natural logarithm of a positive normal `x`.
    pub fn ln(x: f64) -> f64 {
        // x = m·2^e with m in [1, 2), moved to [√½, √2); then ln m = 2·atanh(t), t = (m−1)/(m+1),
        // |t| ≤ 0.172, so 12 odd terms reach 1e-19.
        let bits = x.to_bits();
        let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
        let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
        if m > SQRT_2 {
            m /= 2.0;
            e += 1;
        }
        let t = (m - 1.0) / (m + 1.0);
        let t2 = t * t;
        let (mut power, mut sum) = (t, 0.0);
        for n in 0..12 {
            sum += power / (2 * n + 1) as f64;
            power *= t2;
        }
        e as f64 * LN_2 + 2.0 * sum
    }

    /// Standard normal samples by Marsaglia's polar method, which yields them in pairs.
    #[derive(Default)]
    pub struct Normal {
        spare: Option<f64>,
    }

    impl Normal {
        pub fn sample(&mut self, rng: &mut Rng) -> f64 {
            if let Some(z) = self.spare.take() {
                return z;
            }
            loop {
                let u = 2.0 * rng.unit_f64() - 1.0;
                let v = 2.0 * rng.unit_f64() - 1.0;
                let s = u * u + v * v;
                // s ≥ 2^-50 keeps ln(s) on normal numbers and the factor finite.
                if s < 1.0 && s > 1.0 / (1u64 << 50) as f64 {
                    let f = (-2.0 * ln(s) / s).sqrt();
                    self.spare = Some(v * f);
                    return u * f;
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        // Against the platform's libm, which is accurate to about an ulp everywhere it matters.
        #[test]
        fn exp_and_ln_match_libm() {
            for i in -2000..=2000 {
                let x = i as f64 * 0.3141;
                let (a, b) = (super::exp(x), x.exp());
                assert!((a - b).abs() <= 1e-14 * b, "exp({x}): {a} vs {b}");
            }
            for i in 1..4000 {
                let x = i as f64 * 0.0173 + 1e-9 * i as f64;
                for y in [x, 1.0 / x, x * 1e12, x * 1e-12] {
                    let (a, b) = (super::ln(y), y.ln());
                    assert!(
                        (a - b).abs() <= 1e-14 * b.abs().max(1.0),
                        "ln({y}): {a} vs {b}"
                    );
                }
            }
        }

        #[test]
        fn normal_has_unit_variance() {
            let mut rng = crate::rng::Rng::new(3);
            let mut n = super::Normal::default();
            let samples: Vec<f64> = (0..200_000).map(|_| n.sample(&mut rng)).collect();
            let mean = samples.iter().sum::<f64>() / samples.len() as f64;
            let var =
                samples.iter().map(|z| (z - mean) * (z - mean)).sum::<f64>() / samples.len() as f64;
            assert!(
                mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
                "{mean} {var}"
            );
            let tail = samples.iter().filter(|z| z.abs() > 2.0).count() as f64;
            // P(|Z| > 2) = 0.0455
            assert!((tail / samples.len() as f64 - 0.0455).abs() < 0.003);
        }
    }
}
