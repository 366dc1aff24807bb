//! `segcut stereo` (rectified pair → disparity map), `segcut stereo-eval` (Middlebury v2 bad-pixel
//! rates of a map, or of a folder of scenes run on the spot, with timings) and `segcut multilabel`
//! (seed colours → label map).

use anyhow::{bail, Context, Result};
use segcut::io::{self, output_format, DisparityFormat};
use segcut::maxflow::{SolveOptions, SolverKind};
use segcut::options::stereo_base;
use segcut::stereo::eval::{check_scale, load_scene, score, MaskSource, Scene, StereoScore};
use segcut::stereo::export::{export_first_pass, ExportOptions};
use segcut::stereo::multilabel::{multilabel, seeds_from_colors, MultilabelOptions};
use segcut::stereo::{cost_volume, pair_weights, stereo, StereoOptions, StereoResult};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// The stereo flags of `stereo-eval`: the library's table without the disparity range (each
/// scene has its own).
pub use super::options::StereoEnergyFlags as EnergyArgs;
use super::options::StereoFlags;

impl EnergyArgs {
    /// The options for a scene of `count` disparities from 0.
    fn options(&self, min: i32, count: usize) -> Result<StereoOptions> {
        let mut o = self
            .0
            .stereo_options(stereo_base())
            .map_err(super::segment::flag_error)?;
        o.min_disparity = min;
        o.num_disparities = count;
        Ok(o)
    }

    fn solver(&self) -> SolverKind {
        self.options(0, 1)
            .map(|o| o.expansion.solve.solver)
            .unwrap_or_default()
    }
}

/// A finite scale > 0 (a disparity map's PNG value per disparity).
fn positive_scale(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("'{s}' is not a finite number > 0")),
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The left view (any format segcut reads; grey or colour).
    left: PathBuf,
    /// The right view, rectified with the left: a point at column x in the left view is at x − d
    /// in the right.
    right: PathBuf,
    /// Disparity map out: .png (8-bit, or 16-bit when d × scale exceeds 255) or .pfm (float).
    #[arg(short, long, value_name = "DISP")]
    output: PathBuf,
    /// PNG value per disparity unit [default: 255 / largest disparity, at most 16, Middlebury
    /// style: 16 for 16 labels].
    #[arg(long, value_parser = positive_scale)]
    scale: Option<f32>,
    /// Also write a colour-mapped picture of the disparities (PNG).
    #[arg(long, value_name = "VIEW.png")]
    color: Option<PathBuf>,
    /// Energy per pass, moves, per-expansion times, as JSON.
    #[arg(long, value_name = "OUT")]
    stats_json: Option<PathBuf>,
    /// Write the first pass's expansion graphs into this folder as Waterloo `.max` + `.sol`.
    #[arg(long, value_name = "DIR")]
    export_graphs: Option<PathBuf>,
    /// Name prefix of the exported graphs (<name><label>.max).
    #[arg(long, default_value = "segcut-stereo")]
    export_name: String,
    /// Pack the exported graphs into one <name>.tbz2 archive.
    #[arg(long)]
    tbz2: bool,
    #[command(flatten)]
    energy: StereoFlags,
}

fn stats_json(r: &StereoResult, solver: SolverKind) -> serde_json::Value {
    let ex = &r.expansion;
    json!({
        "width": r.width, "height": r.height, "min_disparity": r.min_disparity,
        "solver_requested": solver,
        "solver": ex.moves.first().map(|m| m.solver),
        "initial_energy": ex.initial_energy, "energy": ex.energy, "converged": ex.converged,
        "left_right_inconsistent": r.occlusions.as_ref().map(|o| o.inconsistent),
        "passes": ex.passes, "moves": ex.moves,
        "median_filter": r.filtered.is_some(),
        "times_ms": { "cost_volume": super::ms(r.cost_time), "total": super::ms(r.total_time),
            "median_filter": super::ms(r.filter_time),
            "expansion_build": ex.moves.iter().map(|m| super::ms(m.build)).sum::<f64>(),
            "expansion_solve": ex.moves.iter().map(|m| super::ms(m.solve)).sum::<f64>() },
    })
}

pub fn run(args: Args) -> Result<ExitCode> {
    let opts = args
        .energy
        .0
        .stereo_options(stereo_base())
        .map_err(super::segment::flag_error)?;
    let count = opts.num_disparities;
    let pfm = args
        .output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pfm"));
    if opts.min_disparity < 0 && !pfm {
        bail!(
            "--min-disparity {} searches negative disparities, which a PNG map cannot hold: \
             write -o NAME.pfm",
            opts.min_disparity
        );
    }
    let mut plan = io::OutputPlan::default();
    plan.input(&args.left, "left view")?;
    plan.input(&args.right, "right view")?;
    plan.output_as(&args.output, "disparity (-o)", &output_format::DISPARITY)?;
    if let Some(p) = &args.color {
        plan.output_as(p, "--color", &output_format::PNG)?;
    }
    if let Some(p) = &args.stats_json {
        plan.output_as(p, "--stats-json", &output_format::JSON)?;
    }
    let left = io::load_image(&args.left)?;
    let right = io::load_image(&args.right)?;
    let res = stereo(&left, &right, &opts)
        .with_context(|| format!("{} and {}", args.left.display(), args.right.display()))?;
    let max_d = (opts.min_disparity + count as i32 - 1).max(1) as f32;
    let scale = args
        .scale
        .unwrap_or((255.0 / max_d).floor().clamp(1.0, 16.0));
    let disp = res.disparity();
    let fmt = DisparityFormat::for_path(&args.output, scale, max_d);
    let (w, h) = (res.width, res.height);
    let mut staged = vec![io::stage(
        &args.output,
        &io::encode_disparity(&disp, w, h, fmt)?,
    )?];
    if let Some(p) = &args.color {
        staged.push(io::stage(
            p,
            &io::encode_disparity(&disp, w, h, DisparityFormat::Color)?,
        )?);
    }
    if let Some(p) = &args.stats_json {
        let s = stats_json(&res, opts.expansion.solve.solver);
        staged.push(io::stage(p, serde_json::to_string_pretty(&s)?.as_bytes())?);
    }
    io::commit_all(staged)?;
    if let Some(dir) = &args.export_graphs {
        let cost = cost_volume(&left, &right, opts.min_disparity, count, &opts.cost)?;
        let model = pair_weights(&left, &opts)?;
        let ex = ExportOptions {
            name: args.export_name.clone(),
            tbz2: args.tbz2,
        };
        let files = export_first_pass(&cost, &model, &opts.expansion, dir, &ex)?;
        eprintln!(
            "segcut: exported {} expansion graphs to {}",
            files.len(),
            dir.display()
        );
    }
    let ex = &res.expansion;
    println!(
        "{w}x{h}, {count} disparities: energy {} → {} in {} passes ({} moves, {}), {:.1} ms{}",
        ex.initial_energy,
        ex.energy,
        ex.passes.len(),
        ex.moves.len(),
        ex.moves
            .first()
            .map_or("no solver".into(), |m| m.solver.to_string()),
        super::ms(res.total_time),
        if ex.converged { "" } else { " (not converged)" }
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Disparity maps to score (with --gt), or scene folders / a folder of scene folders (with
    /// --dataset or alone): a scene folder holds imL.png, imR.png, gt.png, nonocc.png, all.png,
    /// disc.png and is run on the spot.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    /// Ground truth to score the maps against (a scene folder).
    #[arg(long, value_name = "SCENE")]
    gt: Option<PathBuf>,
    /// Disparity-map scale of the maps scored (PNG value per disparity).
    #[arg(long, default_value_t = 16.0)]
    scale: f32,
    /// Ground truth scale [default: by scene name: tsukuba 16, venus 8, ...].
    #[arg(long)]
    gt_scale: Option<f32>,
    /// Bad-pixel threshold (disparity units).
    #[arg(long, default_value_t = 1.0)]
    threshold: f32,
    /// Run each scene this many times and report the median time.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Write the scores (and with scenes, energies and times) as JSON.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Write each scene's disparity map (<scene>.png, colour view <scene>-color.png) here.
    #[arg(long, value_name = "DIR")]
    save: Option<PathBuf>,
    #[command(flatten)]
    energy: EnergyArgs,
}

fn scene_dirs(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.join("gt.png").is_file() {
            out.push(p.clone());
        } else if p.is_dir() {
            let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| p.display().to_string())?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|d| d.join("gt.png").is_file())
                .collect();
            subs.sort();
            if subs.is_empty() {
                bail!(
                    "{}: no scene folders (imL.png, imR.png, gt.png, masks) found",
                    p.display()
                );
            }
            out.extend(subs);
        } else {
            bail!("{}: not a scene folder", p.display());
        }
    }
    Ok(out)
}

fn print_score(name: &str, s: &StereoScore, extra: &str) {
    println!(
        "{name:<12} nonocc {:6.2} %  all {:6.2} %  disc {:6.2} %{extra}",
        s.nonocc, s.all, s.disc
    );
}

/// The files of a scene folder that `stereo-eval` reads (see `load_scene`).
const SCENE_FILES: [&str; 6] = [
    "imL.png",
    "imR.png",
    "gt.png",
    "nonocc.png",
    "all.png",
    "disc.png",
];

/// Checks `stereo-eval`'s outputs before any work: `--json` and the maps `--save` writes may be
/// none of the maps scored nor any scene file, nor each other. Returns the scene folders run
/// (none with --gt).
fn plan_eval(args: &EvalArgs) -> Result<Vec<PathBuf>> {
    let mut plan = io::OutputPlan::default();
    let scenes = match &args.gt {
        Some(gt) => {
            for p in &args.paths {
                plan.input(p, "disparity map")?;
            }
            vec![gt.clone()]
        }
        None => scene_dirs(&args.paths)?,
    };
    for dir in &scenes {
        for f in SCENE_FILES {
            plan.input(&dir.join(f), &format!("scene's {f}"))?;
        }
    }
    if let Some(p) = &args.json {
        plan.output_as(p, "--json", &output_format::JSON)?;
    }
    if let (Some(d), None) = (&args.save, &args.gt) {
        std::fs::create_dir_all(d).with_context(|| d.display().to_string())?;
        for dir in &scenes {
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            for file in [format!("{name}.png"), format!("{name}-color.png")] {
                plan.output_as(&d.join(file), "--save", &output_format::PNG)?;
            }
        }
    }
    Ok(if args.gt.is_some() {
        Vec::new()
    } else {
        scenes
    })
}

/// Says on stderr how a scene without mask files is scored.
fn note_masks(scene: &Scene) {
    if scene.mask_source != MaskSource::Files {
        eprintln!("segcut: {}: {}", scene.name, scene.mask_source.describe());
    }
}

pub fn run_eval(args: EvalArgs) -> Result<ExitCode> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    segcut::stereo::eval::check_threshold(args.threshold).context("--threshold")?;
    let scenes = plan_eval(&args)?;
    let mut rows = Vec::new();
    if let Some(gt) = &args.gt {
        let scene = load_scene(gt, args.gt_scale)?;
        note_masks(&scene);
        for p in &args.paths {
            let (w, h, est) = io::load_disparity(p, args.scale)?;
            if [w, h, 1] != scene.left.dims {
                bail!(
                    "{}: {w}x{h} map against a {:?} scene",
                    p.display(),
                    scene.left.dims
                );
            }
            check_scale(&est, &scene.gt, &scene.masks.all, args.scale)
                .with_context(|| format!("{} against {}", p.display(), gt.display()))?;
            let s = score(&est, &scene.gt, &scene.masks, args.threshold)?;
            print_score(&p.display().to_string(), &s, "");
            rows.push(json!({ "map": p, "scene": scene.name, "score": s,
                "masks": scene.mask_source.describe() }));
        }
    } else {
        for dir in scenes {
            let scene = load_scene(&dir, args.gt_scale)?;
            note_masks(&scene);
            let opts = args.energy.options(0, scene.num_disparities)?;
            let mut times = Vec::new();
            let mut res = None;
            for _ in 0..args.runs {
                let r = stereo(&scene.left, &scene.right, &opts)?;
                times.push(super::ms(r.total_time));
                res = Some(r);
            }
            let r = res.expect("runs ≥ 1");
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let disp = r.disparity();
            let s = score(&disp, &scene.gt, &scene.masks, args.threshold)?;
            let solver = r.expansion.moves.first().map(|m| m.solver);
            print_score(
                &scene.name,
                &s,
                &format!(
                    "  energy {}  passes {}  {:.1} ms (median of {}, {})",
                    r.expansion.energy,
                    r.expansion.passes.len(),
                    median,
                    args.runs,
                    solver.map_or("-".into(), |s| s.to_string())
                ),
            );
            if let Some(d) = &args.save {
                let (w, h) = (r.width, r.height);
                let sc = (255.0 / scene.num_disparities as f32)
                    .floor()
                    .clamp(1.0, 16.0);
                io::write_all_atomic(vec![
                    (
                        d.join(format!("{}.png", scene.name)),
                        io::encode_disparity(&disp, w, h, DisparityFormat::Png8 { scale: sc })?,
                    ),
                    (
                        d.join(format!("{}-color.png", scene.name)),
                        io::encode_disparity(&disp, w, h, DisparityFormat::Color)?,
                    ),
                ])?;
            }
            rows.push(
                json!({ "scene": scene.name, "score": s, "masks": scene.mask_source.describe(),
                "median_ms": median, "times_ms": times,
                "run": stats_json(&r, args.energy.solver()) }),
            );
        }
    }
    if let Some(p) = &args.json {
        io::write_atomic(p, |f| {
            f.write_all(serde_json::to_string_pretty(&rows)?.as_bytes())
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
pub struct MultilabelArgs {
    /// The image (2D, grey or colour).
    image: PathBuf,
    /// Scribbles: an image of the same size whose pixels of colour --colors[k] are seeds of label k.
    #[arg(long)]
    seeds: PathBuf,
    /// The seed colours as RRGGBB hex, comma-separated (one per label, at least two).
    #[arg(long, value_delimiter = ',', required = true)]
    colors: Vec<String>,
    /// Label map out (8-bit grey PNG: label k as k; with --color-output, each label in its seed
    /// colour).
    #[arg(short, long)]
    output: PathBuf,
    /// Write the label map in the seed colours instead of label numbers.
    #[arg(long)]
    color_output: bool,
    /// Smoothness weight λ.
    #[arg(long, default_value_t = MultilabelOptions::default().lambda)]
    lambda: f32,
    /// Max-flow solver.
    #[arg(long, value_parser = super::solver_parser(), default_value = "auto")]
    solver: SolverKind,
}

fn hex_color(s: &str) -> Result<[u8; 3]> {
    let s = s.trim().trim_start_matches('#');
    if s.len() != 6 {
        bail!("colour '{s}' is not RRGGBB hex");
    }
    let v =
        u32::from_str_radix(s, 16).with_context(|| format!("colour '{s}' is not RRGGBB hex"))?;
    Ok([(v >> 16) as u8, (v >> 8) as u8, v as u8])
}

pub fn run_multilabel(args: MultilabelArgs) -> Result<ExitCode> {
    let colors = args
        .colors
        .iter()
        .map(|c| hex_color(c))
        .collect::<Result<Vec<_>>>()?;
    if colors.len() < 2 || colors.len() > 255 {
        bail!("--colors needs 2 to 255 colours, got {}", colors.len());
    }
    let mut plan = io::OutputPlan::default();
    plan.input(&args.image, "image")?;
    plan.input(&args.seeds, "seeds")?;
    plan.output_as(&args.output, "label map (-o)", &output_format::PNG)?;
    let img = io::load_image(&args.image)?;
    let scrib = io::load_image(&args.seeds)?;
    if scrib.dims != img.dims {
        bail!(
            "{}: seeds are {:?}, the image {:?}",
            args.seeds.display(),
            scrib.dims,
            img.dims
        );
    }
    let seeds = seeds_from_colors(&scrib, &colors)?;
    let mut opts = MultilabelOptions {
        lambda: args.lambda,
        ..Default::default()
    };
    opts.expansion.solve = SolveOptions::with_solver(args.solver);
    opts.expansion.solve.verify = false;
    let r = multilabel(&img, &seeds, colors.len(), &opts)
        .with_context(|| format!("{}", args.seeds.display()))?;
    let [w, h, _] = img.dims;
    let bytes = if args.color_output {
        let rgb: Vec<f32> = r
            .labels
            .iter()
            .flat_map(|&l| colors[l as usize].map(|c| c as f32))
            .collect();
        write_rgb_png(&rgb, w, h)?
    } else {
        let grey: Vec<f32> = r.labels.iter().map(|&l| l as f32).collect();
        io::encode_disparity(&grey, w, h, DisparityFormat::Png8 { scale: 1.0 })?
    };
    io::write_atomic(&args.output, |f| f.write_all(&bytes))?;
    println!(
        "{w}x{h}, {} labels: energy {} → {} in {} passes",
        colors.len(),
        r.expansion.initial_energy,
        r.expansion.energy,
        r.expansion.passes.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn write_rgb_png(rgb: &[f32], w: usize, h: usize) -> Result<Vec<u8>> {
    let data: Vec<u8> = rgb.iter().map(|&v| v as u8).collect();
    let img = image::RgbImage::from_raw(w as u32, h as u32, data).context("image size")?;
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)?;
    Ok(out.into_inner())
}
