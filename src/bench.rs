//! Benchmark suites: generated instances and photo segmentation graphs timed with several
//! solvers, every result verified and compared across solvers (flow value and canonical cut must
//! agree exactly).
//!
//! ```
//! use segcut::bench::{run, suite, BenchOptions, SuiteOptions};
//! use segcut::maxflow::SolverKind::{Bk, Dinic};
//! let s = suite("tiny", &SuiteOptions::default()).unwrap();
//! let opts = BenchOptions { runs: 1, ..Default::default() };
//! let records = run(&s.instances, &[Bk, Dinic], &opts, |_| {}).unwrap();
//! assert!(records.iter().all(|r| r.verified && r.agrees));
//! ```

pub mod load;
pub mod warm;

use crate::cuda::Device;
use crate::gen::{self, InstanceSpec};
use crate::graph::{FlowNetwork, Network};
use crate::maxflow::cuda::{CudaGrid, GridTuning};
use crate::maxflow::{solver_of, verify, AutoPolicy, Cut, Solver, SolverKind};
use crate::segment::{self, Image, Seeds};
use crate::{Error, Result};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

/// The named suites.
pub const SUITES: &[&str] = &[
    "tiny",
    "quick",
    "cpu",
    "standard",
    "generic",
    "generic-large",
    "photo",
    "product",
    "crossover",
    "load",
];

/// Where the `photo` suite (and the photo part of `standard`) finds the GrabCut-BSDS dev set
/// (`images/*.jpg` and their `scribbles-1/<stem>-anno.png` seeds) unless told otherwise:
/// relative to the working directory, i.e. the `shared/` folder beside a checkout when run from
/// its root.
pub const DEFAULT_PHOTO_DATA: &str = "../shared/data/segmentation/grabcut-bsds-dev";

/// The width photos are upscaled to for the 4K instances.
pub const PHOTO_4K_WIDTH: usize = 3840;

/// One benchmark instance: what to build, and whether grids are handed to solvers as general
/// graphs.
///
/// Text form (`Display` / `FromStr`): a generator spec (see [`InstanceSpec`]), prefixed with
/// `csr:` to solve a grid as a general graph; photo instances print as `photo:STEM` or
/// `photo:STEM:wWIDTH` and are only made by [`suite`] (they need the data directory).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchInstance {
    /// What to build.
    pub source: Source,
    /// Hand a grid to every solver as its [`CsrGraph`](crate::graph::CsrGraph) form, except to
    /// grid-only solvers (`cuda-grid`), which still get the grid: what the grid specialisation
    /// buys, on the same graph.
    pub as_general: bool,
}

/// Where a [`BenchInstance`]'s graph comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A generated instance.
    Gen(InstanceSpec),
    /// A Boykov–Jolly segmentation graph of a photo.
    Photo(PhotoSpec),
}

/// A photo and its seeds, built into the first-round segmentation graph with the default
/// [`SegmentOptions`](segment::SegmentOptions) (N8, GMM colour models fitted on the seeds).
#[derive(Clone, Debug, PartialEq)]
pub struct PhotoSpec {
    /// The name in tables: the image's file stem.
    pub name: String,
    /// The image file.
    pub image: PathBuf,
    /// The seed file (any format [`crate::io::load_seeds`] detects).
    pub seeds: PathBuf,
    /// Upscale the photo (Catmull–Rom) and its seeds (nearest) to this width, keeping the aspect
    /// ratio; `None` keeps the native size.
    pub width: Option<usize>,
}

impl BenchInstance {
    /// A generated instance, solved in its own form.
    pub fn generated(spec: InstanceSpec) -> Self {
        BenchInstance {
            source: Source::Gen(spec),
            as_general: false,
        }
    }

    /// Non-terminal nodes, when known before building (photos: `None`).
    pub fn num_nodes(&self) -> Option<usize> {
        match &self.source {
            Source::Gen(spec) => spec.num_nodes(),
            Source::Photo(_) => None,
        }
    }

    /// Builds the graph (a photo's segmentation graph is always a grid).
    pub fn build(&self) -> Result<Network> {
        match &self.source {
            Source::Gen(spec) => gen::generate(spec),
            Source::Photo(p) => photo_graph(p).map(Network::Grid),
        }
    }
}

impl fmt::Display for BenchInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.as_general {
            write!(f, "csr:")?;
        }
        match &self.source {
            Source::Gen(spec) => spec.fmt(f),
            Source::Photo(p) => match p.width {
                Some(w) => write!(f, "photo:{}:w{w}", p.name),
                None => write!(f, "photo:{}", p.name),
            },
        }
    }
}

impl FromStr for BenchInstance {
    type Err = Error;

    /// A generator spec, optionally prefixed with `csr:`.
    fn from_str(text: &str) -> Result<Self> {
        let (as_general, spec) = match text.strip_prefix("csr:") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if spec.starts_with("photo:") {
            return Err(Error::Input {
                file: format!("instance spec '{text}'"),
                msg: "photo instances come from the photo suite, with its data folder".into(),
            });
        }
        Ok(BenchInstance {
            source: Source::Gen(spec.parse()?),
            as_general,
        })
    }
}

/// Where suites find their data.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// The GrabCut-BSDS dev set (see [`DEFAULT_PHOTO_DATA`]).
    pub photo_data: PathBuf,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            photo_data: PathBuf::from(DEFAULT_PHOTO_DATA),
        }
    }
}

/// A suite's instances, and notes on what it left out (e.g. photos without their data).
#[derive(Clone, Debug)]
pub struct Suite {
    /// The instances, in run order.
    pub instances: Vec<BenchInstance>,
    /// One line per omission, for the user.
    pub notes: Vec<String>,
}

/// The instances of a named suite.
///
/// - `tiny`: a few small grids and general graphs, for tests.
/// - `quick`: one of each connectivity at about 0.25 M nodes.
/// - `cpu`: 2D and 3D grids from 1 M to about 8 M nodes, for the CPU solvers.
/// - `standard`: the GPU suite: 2D 4- and 8-connected grids of 1, 4 and 16 Mpx, 3D 6-connected
///   128³, 256×256×119 and 512³, 26-connected 128³ and 256×256×119, each at scales c10 and c100;
///   then the dev-set photos upscaled to 3840 wide, when the data directory exists.
/// - `generic`: general graphs (GENRMF long and wide, Washington RLG long and wide, random
///   sparse of degree 4 and 8) at 16 K–128 K nodes, and 2D / 3D grids of 1–4 M nodes handed to
///   solvers as general graphs (`csr:`), except to `cuda-grid`. The general graphs are small
///   because BK's time on them grows much faster than linearly (GENRMF at 64 K nodes already
///   takes BK over 10 s): this is the suite BK can finish in a couple of minutes.
/// - `generic-large`: the same families at 1–2 M nodes, the size the GPU solvers are for; BK
///   would take hours on the GENRMF and RLG instances, so its default solvers are the GPU ones.
/// - `photo`: the dev-set photos' segmentation graphs (scribbles-1 seeds), native and upscaled
///   to 3840 wide.
/// - `crossover`: 2D N4 grids and 3D N6 grids of about 4^5 … 4^11 nodes (1 K to 4 M) and
///   random sparse graphs of 4^5 … 4^9 nodes, to find where the GPU, fixed costs included, overtakes BK (the `total_ms`
///   column; see [`crate::maxflow::AUTO_MIN_GPU_NODES`]).
/// - `load`: graphs to time file loading on, per format ([`load`]), rather than solving.
pub fn suite(name: &str, opts: &SuiteOptions) -> Result<Suite> {
    let mut notes = Vec::new();
    let gen = |specs: Vec<String>| -> Result<Vec<BenchInstance>> {
        specs.iter().map(|s| s.parse()).collect()
    };
    let instances = match name {
        "tiny" => gen(vec![
            "2d:24x24:n4:c10:s1".into(),
            "2d:20x20:n8:c100:s2".into(),
            "3d:8x8x8:n6:c10:s3".into(),
            "3d:6x6x6:n26:c10:s4".into(),
            "genrmf:a4:b6:s1".into(),
            "rlg:10x8:s1".into(),
            "sparse:300:d6:s1".into(),
            "csr:2d:12x10:n8:c10:s5".into(),
        ])?,
        "quick" => gen(vec![
            "2d:512x512:n4:c10:s1".into(),
            "2d:512x512:n8:c10:s1".into(),
            "3d:64x64x64:n6:c10:s1".into(),
            "3d:48x48x48:n26:c10:s1".into(),
        ])?,
        "cpu" => {
            let mut v = Vec::new();
            for c in ["c10", "c100"] {
                v.push(format!("2d:1024x1024:n4:{c}:s1"));
                v.push(format!("2d:2048x2048:n4:{c}:s1"));
                v.push(format!("2d:2896x2896:n4:{c}:s1"));
                v.push(format!("2d:1024x1024:n8:{c}:s1"));
                v.push(format!("2d:2048x2048:n8:{c}:s1"));
                v.push(format!("3d:128x128x128:n6:{c}:s1"));
                v.push(format!("3d:256x256x119:n6:{c}:s1"));
                v.push(format!("3d:256x256x128:n6:{c}:s1"));
                v.push(format!("3d:128x128x128:n26:{c}:s1"));
            }
            gen(v)?
        }
        "standard" => {
            let mut v = Vec::new();
            for c in ["c10", "c100"] {
                for n in ["n4", "n8"] {
                    for s in [1024, 2048, 4096] {
                        v.push(format!("2d:{s}x{s}:{n}:{c}:s1"));
                    }
                }
                for d in ["128x128x128", "256x256x119", "512x512x512"] {
                    v.push(format!("3d:{d}:n6:{c}:s1"));
                }
                for d in ["128x128x128", "256x256x119"] {
                    v.push(format!("3d:{d}:n26:{c}:s1"));
                }
            }
            let mut v = gen(v)?;
            match photo_instances(&opts.photo_data, &[Some(PHOTO_4K_WIDTH)]) {
                Ok(photos) => v.extend(photos),
                Err(e) => notes.push(format!("4K photo instances left out: {e}")),
            }
            v
        }
        "generic" => gen(GENERIC.iter().map(|s| s.to_string()).collect())?,
        "generic-large" => gen(GENERIC_LARGE.iter().map(|s| s.to_string()).collect())?,
        "photo" => photo_instances(&opts.photo_data, &[None, Some(PHOTO_4K_WIDTH)])?,
        "product" => {
            // The graphs segcut itself makes: grids of a stereo move's size (tsukuba,
            // 384×288) and of a 1 M-pixel image, then the dev photos' first-round graphs at
            // their own size and at 4K.
            let mut v = gen(vec![
                "2d:384x288:n4:c10:s1".into(),
                "2d:384x288:n4:c100:s2".into(),
                "2d:1024x1024:n8:c10:s1".into(),
            ])?;
            match photo_instances(&opts.photo_data, &[None, Some(PHOTO_4K_WIDTH)]) {
                Ok(photos) => v.extend(photos),
                Err(e) => notes.push(format!("photo instances left out: {e}")),
            }
            v
        }
        "crossover" => {
            let mut v = Vec::new();
            for k in 5..=11u32 {
                let n = 1usize << (2 * k);
                let side2 = 1usize << k;
                // The cube whose volume is nearest 4^k.
                let side3 = (n as f64).cbrt().round() as usize;
                v.push(format!("2d:{side2}x{side2}:n4:c10:s1"));
                v.push(format!("3d:{side3}x{side3}x{side3}:n6:c10:s1"));
                // BK's time on random sparse graphs grows much faster than linearly (8.5 s at
                // 4^9 nodes): larger ones belong to generic-large.
                if k <= 9 {
                    v.push(format!("sparse:{n}:d6:s1"));
                }
            }
            gen(v)?
        }
        "load" => gen(LOAD.iter().map(|s| s.to_string()).collect())?,
        _ => {
            return Err(Error::Unsupported(format!(
                "unknown suite '{name}' (available: {})",
                SUITES.join(", ")
            )))
        }
    };
    Ok(Suite { instances, notes })
}

/// The `load` suite's graphs (see [`load`]): a 1024² 4-connected grid (90 MB of text) and a
/// random sparse graph of 2^20 nodes (a general graph); [`LOAD_LARGE`] adds a 4K photo's.
const LOAD: &[&str] = &["2d:1024x1024:n4:c10:s1", "sparse:1048576:d4:s1"];

/// The large graph of the `load` suite: an 8-connected grid of a 3840×2560 photo's size, about
/// 2 GB of DIMACS text (the size of a default-energy 4K photo graph).
pub const LOAD_LARGE: &str = "2d:3840x2560:n8:c100:s1";

/// The `generic` suite. BK's single-threaded time per run, measured on the 2-core AMD EPYC VM
/// with other work running: 2–4 s for each GENRMF graph and RLG long, 0.3 s for RLG wide (at
/// 2^15 nodes it took 11 s), 1–2 s for the sparse ones, 0.5–4.5 s for the grids as general
/// graphs: about 20 s a run (see docs/benchmarks.md).
const GENERIC: &[&str] = &[
    "genrmf-long:15:s1",
    "genrmf-wide:15:s1",
    "rlg-long:15:s1",
    "rlg-wide:14:s1",
    "sparse:131072:d8:s1",
    "sparse:131072:d4:s1",
    "csr:2d:2048x2048:n4:c10:s1",
    "csr:2d:1024x1024:n8:c100:s1",
    "csr:3d:128x128x128:n6:c10:s1",
    "csr:3d:128x128x128:n26:c10:s1",
];

/// The `generic-large` suite: the families of `generic` at the sizes the GPU issue names.
const GENERIC_LARGE: &[&str] = &[
    "genrmf-long:21:s1",
    "genrmf-wide:21:s1",
    "rlg-long:21:s1",
    "rlg-wide:21:s1",
    "sparse:1048576:d8:s1",
    "sparse:2097152:d4:s1",
    "csr:2d:2048x2048:n4:c10:s1",
    "csr:2d:1024x1024:n8:c100:s1",
    "csr:3d:128x128x128:n6:c10:s1",
    "csr:3d:128x128x128:n26:c10:s1",
];

/// The dev set's photos with their scribbles-1 seeds, once per width (`None`: native size).
pub fn photo_instances(data: &Path, widths: &[Option<usize>]) -> Result<Vec<BenchInstance>> {
    let images = data.join("images");
    let entries = std::fs::read_dir(&images).map_err(|e| Error::io(&images, e))?;
    let mut stems: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(&images, e))?.path();
        let is_image = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["jpg", "jpeg", "png"].contains(&e.to_ascii_lowercase().as_str()));
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string);
        if let (true, Some(stem)) = (is_image, stem) {
            stems.push((stem, path));
        }
    }
    stems.sort();
    if stems.is_empty() {
        return Err(Error::Input {
            file: images.display().to_string(),
            msg: "no .jpg or .png images in this directory".into(),
        });
    }
    let mut out = Vec::new();
    for &width in widths {
        for (stem, image) in &stems {
            let seeds = data.join("scribbles-1").join(format!("{stem}-anno.png"));
            if !seeds.is_file() {
                return Err(Error::Input {
                    file: seeds.display().to_string(),
                    msg: format!("the seeds of {} are missing", image.display()),
                });
            }
            out.push(BenchInstance {
                source: Source::Photo(PhotoSpec {
                    name: stem.clone(),
                    image: image.clone(),
                    seeds,
                    width,
                }),
                as_general: false,
            });
        }
    }
    Ok(out)
}

/// A photo and its seeds, upscaled when the spec asks.
pub fn load_photo(p: &PhotoSpec) -> Result<(Image, Seeds)> {
    let image = crate::io::load_image(&p.image)?;
    let seeds = crate::io::load_seeds(&p.seeds, image.dims, &Default::default())?;
    match p.width {
        Some(w) if w != image.dims[0] => upscale(&p.image, &image, &seeds, w),
        _ => Ok((image, seeds)),
    }
}

/// The graph the first GrabCut round of a default segmentation of a photo cuts (see
/// [`PhotoSpec`]): the product graph, stroke prior included.
pub fn photo_graph(p: &PhotoSpec) -> Result<crate::graph::GridGraph> {
    let (image, seeds) = load_photo(p)?;
    segment::pipeline::first_round_graph(&image, &seeds, &segment::SegmentOptions::default())
}

/// `image` resized to `width` (height in proportion) with Catmull–Rom, values clamped back to
/// their range; `seeds` with nearest neighbour, so labels stay labels.
fn upscale(path: &Path, image: &Image, seeds: &Seeds, width: usize) -> Result<(Image, Seeds)> {
    use image::imageops::{resize, FilterType};
    let [w, h, d] = image.dims;
    if d != 1 || width == 0 {
        return Err(Error::Input {
            file: path.display().to_string(),
            msg: format!("cannot upscale a {w}x{h}x{d} image to width {width}"),
        });
    }
    let height = ((h as f64 * width as f64 / w as f64).round() as usize).max(1);
    let (nw, nh) = (width as u32, height as u32);
    let too_big = || Error::Input {
        file: path.display().to_string(),
        msg: format!("{w}x{h} does not fit an image buffer"),
    };
    let data: Vec<f32> = match image.channels {
        1 => {
            let buf = image::ImageBuffer::<image::Luma<f32>, _>::from_raw(
                w as u32,
                h as u32,
                image.data.clone(),
            )
            .ok_or_else(too_big)?;
            resize(&buf, nw, nh, FilterType::CatmullRom).into_raw()
        }
        3 => {
            let buf = image::ImageBuffer::<image::Rgb<f32>, _>::from_raw(
                w as u32,
                h as u32,
                image.data.clone(),
            )
            .ok_or_else(too_big)?;
            resize(&buf, nw, nh, FilterType::CatmullRom).into_raw()
        }
        c => {
            return Err(Error::Input {
                file: path.display().to_string(),
                msg: format!("cannot upscale an image of {c} channels (1 or 3 only)"),
            })
        }
    };
    // Catmull-Rom overshoots at edges; keep the values in the source's range.
    let (lo, hi) = image
        .data
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let data = data.into_iter().map(|v| v.clamp(lo, hi)).collect();
    let mut labels = Vec::with_capacity(width * height);
    for y in 0..height {
        // Nearest by pixel centres.
        let sy = ((2 * y + 1) * h / (2 * height)).min(h - 1);
        for x in 0..width {
            let sx = ((2 * x + 1) * w / (2 * width)).min(w - 1);
            labels.push(seeds.labels[sx + w * sy]);
        }
    }
    let dims = [width, height, 1];
    Ok((
        Image {
            dims,
            channels: image.channels,
            data,
            spacing: image.spacing,
            meta: Default::default(),
        },
        Seeds { dims, labels },
    ))
}

/// How to run a benchmark.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Timed runs per solver and instance; the median is reported.
    pub runs: usize,
    /// Instances with more nodes are skipped (reported as such).
    pub max_nodes: Option<usize>,
    /// When set, every instance is also written to this folder as a DIMACS `.max` file (grids with
    /// their `c regulargrid` hint) before it is solved, e.g. to run other solvers on the very
    /// same graphs.
    pub dump: Option<std::path::PathBuf>,
    /// How `auto` chooses, when it is among the solvers.
    pub auto: AutoPolicy,
    /// The tuning of `cuda-grid`, when it is among the solvers (for experiments).
    pub grid: GridTuning,
    /// The GPU the GPU solvers run on.
    pub device: Device,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            runs: 3,
            max_nodes: None,
            dump: None,
            auto: AutoPolicy::default(),
            grid: GridTuning::default(),
            device: Device::default(),
        }
    }
}

/// One solver on one instance.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRecord {
    /// The instance's text form (see [`BenchInstance`]).
    pub instance: String,
    /// Non-terminal nodes.
    pub nodes: usize,
    /// Arcs between non-terminal nodes.
    pub arcs: usize,
    /// The solver asked for.
    pub solver: SolverKind,
    /// The solver that ran the last run (what `auto` chose), and why.
    pub ran: String,
    /// Why that solver ran (`requested`, or `auto`'s reason).
    pub ran_reason: String,
    /// Why the solver did not run on this instance (`n/a` in the table): it takes grids only,
    /// or it declined ([`Error::Unsupported`]: no GPU, out of memory, not built yet). The
    /// numbers below are then zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// Maximum flow value.
    pub flow: i64,
    /// Median solve time over the runs, milliseconds.
    pub solve_ms: f64,
    /// Every solve time, milliseconds.
    pub solve_ms_all: Vec<f64>,
    /// Median time to convert the graph into the solver's input form (for GPU solvers: upload
    /// included), milliseconds.
    pub build_ms: f64,
    /// Median of build + solve per run, milliseconds: what a caller waits for, the figure the
    /// `auto` threshold is chosen on.
    pub total_ms: f64,
    /// Time to generate the instance (photos: load, upscale, fit the models, build the graph;
    /// `csr:` instances: the CSR conversion included), milliseconds.
    pub gen_ms: f64,
    /// The first solver's median solve time divided by this one's (1 for the first solver).
    pub speedup_vs_first: f64,
    /// Every run's certificate held.
    pub verified: bool,
    /// Flow value and canonical cut equal to the first solver's in every run.
    pub agrees: bool,
    /// For `cuda-grid`, the last run's activity profile ([`GridStats::profile`]): rounds,
    /// relabels, graph replays, and how much of the discharge time went to its low tail.
    ///
    /// [`GridStats::profile`]: crate::maxflow::cuda::GridStats::profile
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_profile: Option<String>,
}

/// Progress events, for a progress bar.
#[derive(Clone, Debug)]
pub enum Event<'a> {
    /// An instance is being generated.
    Generating(&'a str),
    /// An instance was skipped, with the reason.
    Skipped(&'a str, String),
    /// A solver run is starting.
    Solving(&'a str, &'a str, usize),
    /// A solver finished an instance (or did not run on it: [`BenchRecord::not_run`]).
    Done(&'a BenchRecord),
}

/// Runs `solvers` on every instance, `opts.runs` times each, verifying every result.
pub fn run(
    instances: &[BenchInstance],
    solvers: &[SolverKind],
    opts: &BenchOptions,
    mut progress: impl FnMut(Event<'_>),
) -> Result<Vec<BenchRecord>> {
    if solvers.is_empty() {
        return Err(Error::Unsupported("no solver named".into()));
    }
    let mut solvers: Vec<Box<dyn Solver + Send>> = solvers
        .iter()
        .map(|&k| match k {
            SolverKind::CudaGrid => Box::new(CudaGrid::new(opts.device, opts.grid.clone())),
            k => solver_of(k, opts.auto, opts.device),
        })
        .collect();
    let runs = opts.runs.max(1);
    let mut records = Vec::new();
    for inst in instances {
        let name = inst.to_string();
        if let (Some(max), Some(nodes)) = (opts.max_nodes, inst.num_nodes()) {
            if nodes > max {
                progress(Event::Skipped(
                    &name,
                    format!("{nodes} nodes > the node limit {max}"),
                ));
                continue;
            }
        }
        progress(Event::Generating(&name));
        let t = Instant::now();
        let built = inst.build().and_then(|net| {
            // The general form next to the grid, for `csr:` instances.
            let general = match (&net, inst.as_general) {
                (Network::Grid(g), true) => Some(Network::Csr(g.to_csr()?)),
                _ => None,
            };
            Ok((net, general))
        });
        let (net, general) = match built {
            Ok(pair) => pair,
            Err(e) => {
                progress(Event::Skipped(&name, e.to_string()));
                continue;
            }
        };
        let gen_ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(max) = opts.max_nodes {
            if net.num_nodes() > max {
                let why = format!("{} nodes > the node limit {max}", net.num_nodes());
                progress(Event::Skipped(&name, why));
                continue;
            }
        }
        if let Some(dir) = &opts.dump {
            let file: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let comment = format!("segcut bench instance {name}");
            crate::io::dimacs::write_max_file(
                &dir.join(format!("{file}.max")),
                &net,
                &[comment.as_str()],
            )?;
        }
        let mut reference: Option<(Cut, f64)> = None;
        for solver in solvers.iter_mut() {
            let grid_only = solver.kind().grids_only();
            let input = match (&general, grid_only) {
                (Some(csr), false) => csr,
                _ => &net,
            };
            let mut rec = BenchRecord {
                instance: name.clone(),
                nodes: net.num_nodes(),
                arcs: net.num_arcs(),
                solver: solver.kind(),
                ran: String::new(),
                ran_reason: String::new(),
                not_run: None,
                flow: 0,
                solve_ms: 0.0,
                solve_ms_all: Vec::new(),
                build_ms: 0.0,
                total_ms: 0.0,
                gen_ms,
                speedup_vs_first: 0.0,
                verified: true,
                agrees: true,
                gpu_profile: None,
            };
            if grid_only && !matches!(input, Network::Grid(_)) {
                rec.not_run = Some("takes grids only".into());
                progress(Event::Done(&rec));
                records.push(rec);
                continue;
            }
            let mut builds = Vec::with_capacity(runs);
            let mut totals = Vec::with_capacity(runs);
            for r in 0..runs {
                progress(Event::Solving(&name, solver.name(), r));
                let timed = match solver.run(input.into(), false) {
                    Ok(t) => t,
                    // The solver cannot take this graph here (no GPU, too large, not built):
                    // a row that says so, and the other solvers go on.
                    Err(Error::Unsupported(why)) => {
                        rec.not_run = Some(why);
                        break;
                    }
                    Err(e) => return Err(e),
                };
                rec.verified &= verify(input, &timed.cut).is_ok();
                if let Some((cut, _)) = &reference {
                    rec.agrees &= *cut == timed.cut;
                }
                rec.flow = timed.cut.flow;
                if let Some(crate::maxflow::GpuStats::Grid(g)) = &timed.stats.gpu {
                    rec.gpu_profile = Some(g.profile());
                }
                rec.ran = timed.ran.solver.to_string();
                rec.ran_reason = timed.ran.reason.clone();
                let (b, s) = (
                    timed.stats.build.as_secs_f64() * 1e3,
                    timed.stats.solve.as_secs_f64() * 1e3,
                );
                rec.solve_ms_all.push(s);
                builds.push(b);
                totals.push(b + s);
                if reference.is_none() && r + 1 == runs {
                    reference = Some((timed.cut, median(&rec.solve_ms_all)));
                }
            }
            if rec.not_run.is_none() {
                rec.solve_ms = median(&rec.solve_ms_all);
                rec.build_ms = median(&builds);
                rec.total_ms = median(&totals);
                let first_ms = reference.as_ref().map_or(rec.solve_ms, |r| r.1);
                rec.speedup_vs_first = first_ms / rec.solve_ms.max(1e-9);
            } else {
                rec.solve_ms_all.clear();
            }
            progress(Event::Done(&rec));
            records.push(rec);
        }
    }
    Ok(records)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        0.0
    } else if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
    }
}
