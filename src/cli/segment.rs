//! `segcut segment` (the default subcommand): image or volume + seeds → mask.

use anyhow::{bail, Result};
use segcut::graph::Network;
use segcut::io::{self, LoadOptions, MaskFormat, Rect, SeedOptions};
use segcut::io::{dimacs, overlay};
use segcut::maxflow::SolverKind;
use segcut::segment::pipeline::SegmentOptions;
use segcut::segment::report::{ProcessPhases, Report};
use segcut::segment::unary::segment_probability;
use segcut::segment::{segment, Image, Seeds};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// The segmentation flags, made from the library's table of options (`segcut::options`).
pub use super::options::SegmentFlags as EnergyArgs;

/// An option error as the command line says it: with the flag's name.
pub fn flag_error(e: segcut::options::OptionError) -> anyhow::Error {
    anyhow::anyhow!("--{}: {}", e.option.replace('_', "-"), e.msg)
}

impl EnergyArgs {
    /// The options for colour models: the library's defaults under what was given.
    pub fn options(&self) -> Result<SegmentOptions> {
        self.0
            .segment_options(SegmentOptions::default())
            .map_err(flag_error)
    }

    /// The options for a probability map as the data term (`--unary`): its own defaults under
    /// what was given; options of the colour models are refused.
    pub fn probability_options(&self) -> Result<SegmentOptions> {
        self.0
            .probability_options(SegmentOptions::default())
            .map_err(flag_error)
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
    let mut opts = match args.unary {
        Some(_) => args.energy.probability_options()?,
        None => args.energy.options()?,
    };
    opts.keep_graph = args.export_graph.is_some();
    // The GPU's context and kernels are set up on their own thread while the files are read;
    // the library waits for them when it needs them.
    let device = opts.device;
    let warm_up = (opts.solver != SolverKind::Bk)
        .then(|| std::thread::spawn(move || segcut::segment::session::warm_up(device)));
    plan_outputs(&args)?;
    let t = Instant::now();
    let image = io::load_image_with(&args.image, &LoadOptions::default())?;
    io::check_mask_path(&args.output, image.dims)?;
    let load_ms = super::ms(t.elapsed());
    let seed_opts = args.energy.0.seed_options();
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
    let [w, h, d] = image.dims;
    // Every phase from the process's start to here, so that they add up to `total`.
    let report = Report::new(&seg, &opts);
    let gpu_context = warm_up
        .and_then(|t| t.join().ok())
        .and_then(|r| r.ok())
        .map(super::ms);
    let phases = ProcessPhases::new(
        super::ms(t_all.duration_since(super::started())),
        [load_ms, seeds_ms],
        report.phases_ms.clone(),
        save_ms,
        super::ms(super::started().elapsed()),
        gpu_context,
    );
    // The library's report, with what only the command knows: the files, and its own phases.
    let mut stats = serde_json::to_value(&report)?;
    stats["image"] = json!(args.image.display().to_string());
    stats["channels"] = json!(image.channels);
    stats["spacing"] = json!(image.spacing);
    stats["options"]["unary"] = json!(args.unary.as_ref().map(|p| p.display().to_string()));
    stats["times_ms"] = json!({ "load_image": load_ms, "load_seeds": seeds_ms,
        "prepare": phases.library.prepare, "encode_outputs": save_ms, "total": super::ms(t_all.elapsed()) });
    stats["phases_ms"] = serde_json::to_value(&phases)?;
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
