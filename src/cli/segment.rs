//! `segcut segment` (the default subcommand): image or volume + seeds → mask.

use anyhow::{bail, Result};
use segcut::graph::{Connectivity, Network};
use segcut::io::{self, LoadOptions, MaskFormat, Rect, SeedFormat, SeedOptions};
use segcut::io::{dimacs, overlay};
use segcut::maxflow::SolverKind;
use segcut::segment::model::ModelKind;
use segcut::segment::pipeline::{ColorSpace, SegmentOptions};
use segcut::segment::unary::{segment_probability, UNARY_LAMBDA};
use segcut::segment::{segment, Image, Seeds};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// The energy and solver settings, shared by `segment` and `eval`; the defaults shown are the
/// library's (`SegmentOptions::default()`, see docs/segmentation.md).
#[derive(clap::Args, Debug, Clone)]
pub struct EnergyArgs {
    /// Neighbourhood: 4 or 8 for images, 6 or 26 for volumes [default: 8 for images, 6 for
    /// volumes].
    #[arg(long, short = 'c', value_parser = ["4", "8", "6", "26"])]
    connectivity: Option<String>,
    /// Smoothness weight λ of the n-links.
    #[arg(long, default_value_t = SegmentOptions::default().lambda)]
    lambda: f64,
    /// Contrast scale σ (β = 1/(2σ²)) [default: β = 1/(2⟨‖Ip−Iq‖²⟩) from the image].
    #[arg(long)]
    sigma: Option<f64>,
    /// Colour model: gmm (Gaussian mixtures) or hist (joint histograms).
    #[arg(long, value_parser = ["gmm", "hist"], default_value = model_name(SegmentOptions::default().model))]
    model: String,
    /// Gaussian components per mixture, with --model gmm [default: 5].
    #[arg(long)]
    components: Option<usize>,
    /// Bins per channel, with --model hist [default: 16].
    #[arg(long)]
    bins: Option<usize>,
    /// Colour space of the models and contrasts: rgb (as stored) or lab.
    #[arg(long, value_parser = ["rgb", "lab"], default_value = color_space_name(SegmentOptions::default().color_space))]
    color_space: String,
    /// Most cuts: after the first, GrabCut refits the models on the segmentation and cuts again,
    /// stopping early when the mask settles.
    #[arg(long, default_value_t = SegmentOptions::default().iterations)]
    iterations: usize,
    /// Max-flow solver (`auto`: the GPU for images of at least --gpu-min-nodes pixels when one
    /// is usable, else BK).
    #[arg(long, value_parser = super::solver_parser(), default_value = "auto")]
    solver: SolverKind,
    /// With `--solver auto`: images with fewer pixels are cut on the CPU, where the GPU's fixed
    /// costs would dominate.
    #[arg(long, value_name = "PIXELS", default_value_t = segcut::maxflow::AUTO_MIN_GPU_NODES)]
    gpu_min_nodes: usize,
    /// Build the graph on the CPU even when it is solved on the GPU (by default a GPU solver
    /// builds it on the GPU).
    #[arg(long)]
    cpu_build: bool,
    /// Solve every GrabCut round from scratch instead of continuing from the last round's flow
    /// (the masks are the same; for comparison).
    #[arg(long)]
    no_warm_start: bool,
    /// Weight γ (nats) of the stroke-geometry prior: pixels geodesically nearer the foreground
    /// strokes than the background strokes lean foreground, and the other way round (0: off).
    #[arg(long, value_name = "GAMMA")]
    prior: Option<f64>,
    /// How much an image edge lengthens the prior's geodesic paths (0: plain distance).
    #[arg(long, value_name = "KAPPA")]
    prior_contrast: Option<f64>,
    /// Softness of the prior: a length, as a fraction of the image diagonal, that keeps it gentle
    /// where both strokes are near (0: plain ratio of distances).
    #[arg(long, value_name = "S")]
    prior_softness: Option<f64>,
    /// Weight ε of a uniform outlier component in both colour models (0: off).
    #[arg(long, value_name = "EPS")]
    outlier: Option<f64>,
    /// Drop foreground components that hold no foreground seed (true/false).
    #[arg(long, value_name = "BOOL", value_parser = clap::builder::BoolishValueParser::new())]
    drop_unseeded: Option<bool>,
    /// Fill enclosed background holes smaller than this many pixels (0: off).
    #[arg(long, value_name = "PIXELS")]
    fill_holes: Option<usize>,
}

/// The `--model` name of a model kind, as `--stats-json` shows it.
pub fn model_name(m: ModelKind) -> &'static str {
    match m {
        ModelKind::Gmm { .. } => "gmm",
        ModelKind::Histogram { .. } => "hist",
    }
}

/// The `--color-space` name of a colour space, as `--stats-json` shows it.
pub fn color_space_name(c: ColorSpace) -> &'static str {
    match c {
        ColorSpace::Lab => "lab",
        ColorSpace::AsIs => "rgb",
    }
}

impl EnergyArgs {
    /// Whether `--lambda` differs from the colour-model default (with `--unary` the default
    /// becomes `UNARY_LAMBDA`, calibrated for probabilities).
    pub fn lambda_given(&self) -> bool {
        self.lambda != SegmentOptions::default().lambda
    }

    pub fn options(&self) -> Result<SegmentOptions> {
        let mut o = SegmentOptions::default();
        if let Some(c) = &self.connectivity {
            o.connectivity = Connectivity::from_number(c.parse()?);
        }
        let l = self.lambda;
        if !(l.is_finite() && l >= 0.0) {
            bail!("--lambda must be a finite number ≥ 0, got {l}");
        }
        o.lambda = l;
        if let Some(s) = self.sigma {
            if !(s.is_finite() && s > 0.0) {
                bail!("--sigma must be a finite number > 0, got {s}");
            }
            o.sigma = Some(s);
        }
        o.model = match self.model.as_str() {
            "hist" => {
                if self.components.is_some() {
                    bail!("--components sets the Gaussian mixtures of --model gmm, not histograms (use --bins)");
                }
                ModelKind::Histogram {
                    bins: self.bins.unwrap_or(16),
                }
            }
            _ => {
                if self.bins.is_some() {
                    bail!("--bins sets the histograms of --model hist; with Gaussian mixtures use --components");
                }
                ModelKind::Gmm {
                    components: self.components.unwrap_or(5),
                }
            }
        };
        o.color_space = if self.color_space == "lab" {
            ColorSpace::Lab
        } else {
            ColorSpace::AsIs
        };
        if self.iterations == 0 {
            bail!("--iterations must be at least 1");
        }
        o.iterations = self.iterations;
        o.solver = self.solver;
        o.auto.min_gpu_nodes = self.gpu_min_nodes;
        o.gpu_build = !self.cpu_build;
        o.warm_start = !self.no_warm_start;
        let non_negative = |name: &str, v: f64| -> Result<f64> {
            if !(v.is_finite() && v >= 0.0) {
                bail!("--{name} must be a finite number ≥ 0, got {v}");
            }
            Ok(v)
        };
        if let Some(g) = self.prior {
            o.prior.weight = non_negative("prior", g)?;
        }
        if let Some(k) = self.prior_contrast {
            o.prior.contrast = non_negative("prior-contrast", k)?;
        }
        if let Some(v) = self.prior_softness {
            o.prior.softness = non_negative("prior-softness", v)?;
        }
        if let Some(e) = self.outlier {
            if !(0.0..1.0).contains(&e) {
                bail!("--outlier must be in [0, 1), got {e}");
            }
            o.outlier = e;
        }
        if let Some(d) = self.drop_unseeded {
            o.post.drop_unseeded = d;
        }
        if let Some(n) = self.fill_holes {
            o.post.max_hole = n;
        }
        Ok(o)
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The image (PNG, JPEG, TIFF, ... 8/16-bit, grey or colour) or volume (multi-page TIFF, NIfTI
    /// .nii / .nii.gz).
    #[arg(value_name = "IMAGE")]
    image: PathBuf,
    /// Seeds of the same size: palette PNG (index 1 fg, 2 bg), grey trimap (0 bg, 128 unknown,
    /// 255 fg), OpenCV grabCut mask (0–3), RGB scribbles, or a label volume (0/1/2).
    #[arg(long, value_name = "FILE")]
    seeds: Option<PathBuf>,
    /// The seeds' convention when auto-detection cannot tell.
    #[arg(long, default_value = "auto", value_name = "FORMAT")]
    seed_format: SeedFormat,
    /// Foreground scribble colour for RGB seeds, as R,G,B.
    #[arg(long, value_name = "R,G,B", value_parser = parse_color)]
    fg_color: Option<[u8; 3]>,
    /// Background scribble colour for RGB seeds, as R,G,B.
    #[arg(long, value_name = "R,G,B", value_parser = parse_color)]
    bg_color: Option<[u8; 3]>,
    /// GrabCut rectangle x,y,w,h: outside is background, inside is probably foreground.
    #[arg(long, value_name = "X,Y,W,H", allow_hyphen_values = true)]
    rect: Option<Rect>,
    /// Output mask: PNG (255 foreground, 0 background) for images; TIFF or NIfTI for volumes.
    #[arg(short = 'o', long = "output", value_name = "MASK")]
    output: PathBuf,
    /// The mask's values: mask (0/255; NIfTI 0/1), binary (0/1), or opencv (grabCut's 4 states:
    /// 0 bg seed, 1 fg seed, 2 probably bg, 3 probably fg).
    #[arg(long, default_value = "mask", value_name = "FORMAT")]
    output_format: MaskFormat,
    /// A per-pixel foreground probability (8/16-bit grey PNG, float TIFF or NIfTI in [0, 1]) as
    /// the data term instead of colour models; seeds are then optional hard constraints.
    #[arg(long, value_name = "PROB")]
    unary: Option<PathBuf>,
    /// Also write the mask's contours as polygons (JSON: outer borders and holes, [x, y] points).
    #[arg(long, value_name = "JSON")]
    contours: Option<PathBuf>,
    /// Also write the image with the foreground tinted and its boundary drawn (volumes: the
    /// middle slice).
    #[arg(long, value_name = "PNG")]
    overlay: Option<PathBuf>,
    /// Also write the graph of the last cut as a DIMACS .max file (loadable by `segcut maxflow`).
    #[arg(long, value_name = "MAX")]
    export_graph: Option<PathBuf>,
    /// Also write sizes, energy, flow, verification and per-stage times as JSON.
    #[arg(long, value_name = "JSON")]
    stats_json: Option<PathBuf>,
    #[command(flatten)]
    energy: EnergyArgs,
}

/// The model as `--stats-json` shows it: `{"kind": "gmm", "components": 5}`.
fn model_json(m: ModelKind) -> serde_json::Value {
    match m {
        ModelKind::Gmm { components } => json!({ "kind": "gmm", "components": components }),
        ModelKind::Histogram { bins } => json!({ "kind": "hist", "bins": bins }),
    }
}

fn parse_color(s: &str) -> Result<[u8; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err(format!("expected R,G,B (three numbers 0-255), got '{s}'"));
    }
    let mut c = [0u8; 3];
    for (i, p) in parts.iter().enumerate() {
        c[i] = p
            .parse()
            .map_err(|_| format!("'{p}' is not a number 0-255 in '{s}'"))?;
    }
    Ok(c)
}

/// Loads the seeds given by `--seeds` and/or `--rect`.
pub fn load_seeds(
    image_path: &Path,
    image: &Image,
    seeds: Option<&Path>,
    rect: Option<&Rect>,
    opts: SeedOptions,
) -> Result<Seeds> {
    // The library names the seed format and the rectangle; here they are flags.
    let flags = |e: segcut::Error, hint: &str| anyhow::anyhow!("{e}\n  ({hint})");
    let from_file = match seeds {
        Some(p) => Some(
            io::load_seeds(
                p,
                image.dims,
                &SeedOptions {
                    image_file: Some(image_path.to_path_buf()),
                    ..opts
                },
            )
            .map_err(|e| {
                flags(
                    e,
                    "the seed format is --seed-format; scribble colours are --fg-color / --bg-color",
                )
            })?,
        ),
        None => None,
    };
    let rect_hint = |e| flags(e, "the rectangle is --rect X,Y,W,H");
    Ok(match (rect, from_file) {
        (Some(r), Some(s)) => io::rect_with_seeds(r, &s).map_err(rect_hint)?,
        (Some(r), None) => io::rect_seeds(image.dims, r).map_err(rect_hint)?,
        (None, Some(s)) => s,
        (None, None) => bail!("give seeds (--seeds FILE) or a rectangle (--rect x,y,w,h)"),
    })
}

/// Checks every output before any work: none may overwrite an input or another output, each
/// folder must take a new file, and each name must be a format segcut writes.
fn plan_outputs(args: &Args) -> Result<()> {
    let mut plan = io::OutputPlan::default();
    plan.input(&args.image, "image")?;
    if let Some(s) = &args.seeds {
        plan.input(s, "seeds")?;
    }
    plan.output(&args.output, "mask (-o)")?;
    // The mask's format is checked again with the image's size once it is loaded.
    io::check_mask_path(&args.output, [1, 1, 1])?;
    if let Some(p) = &args.overlay {
        plan.output(p, "--overlay")?;
        overlay::format_of(p)?;
    }
    if let Some(p) = &args.contours {
        plan.output_as(p, "--contours", &io::output_format::JSON)?;
    }
    if let Some(p) = &args.unary {
        plan.input(p, "--unary")?;
    }
    if let Some(p) = &args.stats_json {
        plan.output_as(p, "--stats-json", &io::output_format::JSON)?;
    }
    if let Some(p) = &args.export_graph {
        plan.output_as(p, "--export-graph", &io::output_format::DIMACS)?;
    }
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode> {
    let t_all = Instant::now();
    let mut opts = args.energy.options()?;
    opts.keep_graph = args.export_graph.is_some();
    plan_outputs(&args)?;
    let t = Instant::now();
    let image = io::load_image_with(&args.image, &LoadOptions::default())?;
    io::check_mask_path(&args.output, image.dims)?;
    let load_ms = super::ms(t.elapsed());
    let mut seed_opts = SeedOptions {
        format: args.seed_format,
        ..SeedOptions::default()
    };
    if let Some(c) = args.fg_color {
        seed_opts.fg_color = c;
    }
    if let Some(c) = args.bg_color {
        seed_opts.bg_color = c;
    }
    let t = Instant::now();
    let seeds = if args.unary.is_some() && args.seeds.is_none() && args.rect.is_none() {
        Seeds::unknown(image.dims)
    } else {
        load_seeds(
            &args.image,
            &image,
            args.seeds.as_deref(),
            args.rect.as_ref(),
            seed_opts,
        )?
    };
    let seeds_ms = super::ms(t.elapsed());

    let seg = match &args.unary {
        Some(p) => {
            let prob = io::load_probability(p, image.dims)?;
            if !args.energy.lambda_given() {
                opts.lambda = UNARY_LAMBDA;
            }
            segment_probability(&image, &prob, Some(&seeds), &opts)?
        }
        None => segment(&image, &seeds, &opts)?,
    };

    // Every output is staged (written and synced beside its target) before any is put in
    // place: a failure leaves all of them as they were.
    let t = Instant::now();
    let mut staged = vec![io::stage(
        &args.output,
        &io::encode_mask_as(
            &args.output,
            &seg.mask,
            &seeds,
            args.output_format,
            Some(&image),
        )?,
    )?];
    if let Some(p) = &args.overlay {
        let pic = overlay::encode_with_seeds(p, &image, &seg.mask, Some(&seeds), None)?;
        staged.push(io::stage(p, &pic)?);
    }
    if let Some(p) = &args.contours {
        staged.push(io::stage(p, &io::encode_contours(&seg.mask, image.dims)?)?);
    }
    if let (Some(p), Some(g)) = (&args.export_graph, &seg.graph) {
        let comment = format!("segcut segment {}", args.image.display());
        staged.push(dimacs::stage_max_file(
            p,
            &Network::Grid(g.clone()),
            &[&comment],
        )?);
    }
    let save_ms = super::ms(t.elapsed());

    let fg = seg.mask.iter().filter(|&&m| m).count();
    let st = &seg.stats;
    if let Some(why) = &st.solver.fallback {
        eprintln!("segcut: GPU not used ({why}); solved with bk on the CPU");
    }
    if let Some(why) = &st.gpu_build_declined {
        eprintln!("segcut: graph built on the CPU ({why})");
    }
    let iterations: Vec<_> = st
        .iterations
        .iter()
        .map(|it| {
            json!({
                "models_ms": super::ms(it.models), "graph_ms": super::ms(it.graph),
                "solve_ms": super::ms(it.solve), "verify_ms": super::ms(it.verify), "flow": it.flow, "energy": it.energy,
                "foreground": it.foreground, "changed": it.changed, "warm": it.warm,
            })
        })
        .collect();
    let [w, h, d] = image.dims;
    // Every phase from the process's start to here, so that they add up to `total`: what no
    // phase names (CUDA initialisation, seed checks, post-processing) is `other`.
    let startup_ms = super::ms(t_all.duration_since(super::started()));
    let rounds_ms: Vec<f64> = st
        .iterations
        .iter()
        .map(|it| super::ms(it.solve + it.verify))
        .collect();
    let sum = |f: fn(&segcut::segment::pipeline::IterationStats) -> std::time::Duration| {
        st.iterations.iter().map(|it| super::ms(f(it))).sum::<f64>()
    };
    let (models_ms, tlinks_ms) = (sum(|it| it.models), sum(|it| it.graph));
    let phases_total_ms = super::ms(super::started().elapsed());
    let named = startup_ms
        + load_ms
        + seeds_ms
        + super::ms(st.prepare)
        + models_ms
        + tlinks_ms
        + rounds_ms.iter().sum::<f64>()
        + save_ms;
    let phases = json!({
        "startup": startup_ms, "decode_image": load_ms, "decode_seeds": seeds_ms,
        "prepare": super::ms(st.prepare), "models": models_ms, "graph": tlinks_ms,
        "rounds": rounds_ms, "encode": save_ms, "other": phases_total_ms - named,
        "total": phases_total_ms,
    });
    // The GPU build's stages: the host's pass over the image, kernel loading, allocation and
    // copies, colour conversion and statistics, then beta, n-links and K; each round's t-links
    // are its graph_ms.
    let graph_build = match &st.gpu {
        Some(g) => {
            json!({ "on": "gpu", "host_ms": super::ms(g.host), "setup_ms": super::ms(g.setup),
                           "upload_ms": super::ms(g.upload),
                           "convert_ms": super::ms(g.convert), "nlinks_ms": super::ms(g.nlinks) })
        }
        None => json!({ "on": "cpu" }),
    };
    let stats = json!({
        "image": args.image.display().to_string(),
        "dims": image.dims, "channels": image.channels, "spacing": image.spacing,
        "connectivity": st.connectivity.number(), "nodes": st.nodes, "edges": st.edges,
        "seeds": { "foreground": st.seed_counts[1], "background": st.seed_counts[2],
                   "probably_foreground": st.seed_counts[3], "probably_background": st.seed_counts[4] },
        "options": { "lambda": opts.lambda, "sigma": opts.sigma, "beta": st.beta,
                     "model": model_json(opts.model), "color_space": color_space_name(opts.color_space),
                     "quantisation_scale": st.scale, "hard_constraint": st.hard,
                     "prior": { "weight": opts.prior.weight, "contrast": opts.prior.contrast, "softness": opts.prior.softness },
                     "outlier": opts.outlier, "unary": args.unary.as_ref().map(|p| p.display().to_string()),
                     "drop_unseeded": opts.post.drop_unseeded, "fill_holes": opts.post.max_hole },
        "post_changed_pixels": st.post_changed,
        "solver": st.solver.solver, "solver_reason": st.solver.reason, "solver_requested": opts.solver, "flow": seg.flow, "energy": seg.energy, "verified": seg.verified,
        "foreground_pixels": fg, "foreground_fraction": fg as f64 / image.num_pixels() as f64,
        "times_ms": { "load_image": load_ms, "load_seeds": seeds_ms, "prepare": super::ms(st.prepare),
                      "encode_outputs": save_ms, "total": super::ms(t_all.elapsed()) },
        "graph_build": graph_build,
        "iterations": iterations,
        "phases_ms": phases,
    });
    if let Some(p) = &args.stats_json {
        staged.push(io::stage(
            p,
            serde_json::to_string_pretty(&stats)?.as_bytes(),
        )?);
    }
    io::commit_all(staged)?;
    let size = if d > 1 {
        format!("{w}x{h}x{d}")
    } else {
        format!("{w}x{h}")
    };
    // A zero flow looks like nothing happened; it means the cut runs only along n-links whose
    // capacity rounds to zero (strong edges), so the colour models alone decide.
    let flow = if seg.flow == 0 {
        "flow 0 (the boundary crosses only zero-capacity links)".to_string()
    } else {
        format!("flow {}", seg.flow)
    };
    eprintln!(
        "{}: {size}, {} foreground ({:.1} %), energy {:.0}, {flow}, {} cut(s) by {}, {}, {:.0} ms -> {}",
        args.image.display(),
        fg,
        100.0 * fg as f64 / image.num_pixels() as f64,
        seg.energy,
        st.iterations.len(),
        st.solver.solver,
        if seg.verified {
            "verified"
        } else {
            "NOT VERIFIED"
        },
        super::ms(t_all.elapsed()),
        args.output.display()
    );
    Ok(if seg.verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
