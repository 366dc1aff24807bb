//! End-to-end tests of `segcut segment` (the default subcommand) and `segcut eval`.

mod common;

use segcut::io::{load_image, save_volume};
use segcut::segment::Image;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn segcut(args: &[&str]) -> Output {
    Command::new(common::segcut_bin())
        .args(args)
        .current_dir(common::repo_root())
        .output()
        .expect("run segcut")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn err(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!e.contains("panicked"), "{e}");
    e
}

const SAMPLE: &str = "samples/balloon.png";
const SEEDS: &str = "samples/balloon-seeds.png";

/// The balloon's body as drawn by samples/make_sample.py (ellipse centre 150,100, radii 58,72).
fn balloon_truth() -> Vec<bool> {
    let (w, h) = (320, 240);
    (0..w * h)
        .map(|i| {
            let (x, y) = ((i % w) as f64, (i / w) as f64);
            ((x - 150.0) / 58.0).powi(2) + ((y - 100.0) / 72.0).powi(2) <= 1.0
        })
        .collect()
}

fn read_mask(path: &Path) -> Vec<bool> {
    let img = load_image(path).unwrap();
    assert_eq!(img.channels, 1);
    assert!(
        img.data.iter().all(|&v| v == 0.0 || v == 255.0),
        "mask values 0/255"
    );
    img.data.iter().map(|&v| v > 0.0).collect()
}

fn iou(a: &[bool], b: &[bool]) -> f64 {
    let inter = a.iter().zip(b).filter(|(x, y)| **x && **y).count();
    let union = a.iter().zip(b).filter(|(x, y)| **x || **y).count();
    inter as f64 / union as f64
}

fn tmp(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

#[test]
fn readme_command_segments_the_sample() {
    let dir = tempfile::tempdir().unwrap();
    let mask = tmp(&dir, "mask.png");
    let o = segcut(&[SAMPLE, "--seeds", SEEDS, "-o", mask.to_str().unwrap()]);
    ok(&o);
    let m = read_mask(&mask);
    let score = iou(&m, &balloon_truth());
    assert!(score > 0.95, "IoU with the drawn balloon {score}");
}

#[test]
fn mask_is_identical_across_runs_solvers_and_spellings() {
    let dir = tempfile::tempdir().unwrap();
    let mut masks = Vec::new();
    for (i, args) in [
        vec!["segment", SAMPLE, "--seeds", SEEDS, "--solver", "bk"],
        vec![SAMPLE, "--seeds", SEEDS, "--solver", "bk"],
        vec![SAMPLE, "--seeds", SEEDS, "--solver", "dinic"],
        vec![SAMPLE, "--seeds", SEEDS, "--solver", "auto"],
    ]
    .into_iter()
    .enumerate()
    {
        let out = tmp(&dir, &format!("m{i}.png"));
        let mut a = args.clone();
        a.extend(["-o", out.to_str().unwrap()]);
        ok(&segcut(&a));
        masks.push(std::fs::read(&out).unwrap());
    }
    assert!(masks.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn outputs_overlay_stats_and_graph() {
    let dir = tempfile::tempdir().unwrap();
    let (mask, over, stats, graph) = (
        tmp(&dir, "m.png"),
        tmp(&dir, "over.png"),
        tmp(&dir, "s.json"),
        tmp(&dir, "g.max"),
    );
    ok(&segcut(&[
        SAMPLE,
        "--seeds",
        SEEDS,
        "-o",
        mask.to_str().unwrap(),
        "--overlay",
        over.to_str().unwrap(),
        "--stats-json",
        stats.to_str().unwrap(),
        "--export-graph",
        graph.to_str().unwrap(),
    ]));
    let o = image::open(&over).unwrap().to_rgb8();
    assert_eq!(o.dimensions(), (320, 240));
    let orig = image::open(SAMPLE).unwrap().to_rgb8();
    assert_ne!(
        o.get_pixel(150, 100),
        orig.get_pixel(150, 100),
        "foreground tinted"
    );

    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(s["verified"], true);
    assert_eq!(s["dims"][0], 320);
    assert_eq!(s["connectivity"], 8);
    // The default solver is `auto`: the GPU grid solver where a GPU is usable, BK elsewhere.
    let expected = if segcut::cuda::gpu_available() {
        "cuda-grid"
    } else {
        "bk"
    };
    assert_eq!(s["solver"], expected);
    assert_eq!(s["solver_requested"], "auto");
    for key in [
        "nodes",
        "edges",
        "flow",
        "energy",
        "times_ms",
        "seeds",
        "iterations",
    ] {
        assert!(!s[key].is_null(), "stats lack {key}");
    }
    assert!(s["seeds"]["foreground"].as_u64().unwrap() > 0);

    // The exported graph solves to the same flow, as a grid.
    let o = segcut(&["maxflow", graph.to_str().unwrap(), "--verify", "--json"]);
    ok(&o);
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap();
    let last_flow = s["iterations"].as_array().unwrap().last().unwrap()["flow"].clone();
    assert_eq!(v["flow"], last_flow);
    assert_eq!(v["verified"], true);
    assert!(
        v["graph"].as_str().unwrap().starts_with("grid 320x240"),
        "{v}"
    );
}

/// Writes the sample's seeds in another convention: `fg`, `bg`, `unknown` values per pixel.
fn convert_seeds(out: &Path, f: impl Fn(u8) -> [u8; 3], grey: bool) {
    let file = std::fs::File::open(SEEDS).unwrap();
    let mut dec = png::Decoder::new(std::io::BufReader::new(file));
    dec.set_transformations(png::Transformations::IDENTITY);
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width, info.height);
    if grey {
        let img =
            image::GrayImage::from_fn(w, h, |x, y| image::Luma([f(buf[(y * w + x) as usize])[0]]));
        img.save(out).unwrap();
    } else {
        let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb(f(buf[(y * w + x) as usize])));
        img.save(out).unwrap();
    }
}

#[test]
fn every_seed_convention_gives_the_balloon() {
    let dir = tempfile::tempdir().unwrap();
    let truth = balloon_truth();
    let trimap = tmp(&dir, "trimap.png");
    convert_seeds(&trimap, |i| [[128, 255, 0][i as usize]; 3], true);
    let opencv = tmp(&dir, "opencv.png");
    // Strokes as hard labels; the rest "probably background" (value 2).
    convert_seeds(&opencv, |i| [[2, 1, 0][i as usize]; 3], true);
    let rgb = tmp(&dir, "rgb.png");
    convert_seeds(
        &rgb,
        |i| [[90, 90, 90], [255, 0, 0], [0, 0, 255]][i as usize],
        false,
    );
    let green = tmp(&dir, "green.png");
    convert_seeds(
        &green,
        |i| [[90, 90, 90], [0, 255, 0], [255, 255, 0]][i as usize],
        false,
    );
    let cases: Vec<Vec<String>> = vec![
        vec!["--seeds".into(), SEEDS.into()],
        vec!["--seeds".into(), trimap.display().to_string()],
        vec![
            "--seeds".into(),
            opencv.display().to_string(),
            "--seed-format".into(),
            "opencv".into(),
        ],
        vec!["--seeds".into(), rgb.display().to_string()],
        vec![
            "--seeds".into(),
            green.display().to_string(),
            "--fg-color".into(),
            "0,255,0".into(),
            "--bg-color".into(),
            "255,255,0".into(),
        ],
        vec![
            "--rect".into(),
            "80,20,140,170".into(),
            "--iterations".into(),
            "5".into(),
        ],
    ];
    for case in cases {
        let out = tmp(&dir, "m.png");
        let mut args = vec![SAMPLE.to_string()];
        args.extend(case.clone());
        args.extend(["-o".to_string(), out.display().to_string()]);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&segcut(&a));
        let score = iou(&read_mask(&out), &truth);
        assert!(score > 0.9, "{case:?}: IoU {score}");
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = tmp(&dir, "m.png");
    let o = out.to_str().unwrap();

    // Seeds of another size: both files named.
    let small = tmp(&dir, "small.png");
    image::GrayImage::new(10, 10).save(&small).unwrap();
    let e = err(&segcut(&[
        SAMPLE,
        "--seeds",
        small.to_str().unwrap(),
        "-o",
        o,
    ]));
    assert!(e.contains("small.png") && e.contains("10"), "{e}");

    // Only background seeds.
    let bg_only = tmp(&dir, "bg.png");
    convert_seeds(&bg_only, |i| [[128, 0, 0][i as usize]; 3], true);
    let e = err(&segcut(&[
        SAMPLE,
        "--seeds",
        bg_only.to_str().unwrap(),
        "-o",
        o,
    ]));
    assert!(e.to_lowercase().contains("foreground"), "{e}");

    // Only foreground seeds.
    let fg_only = tmp(&dir, "fg.png");
    convert_seeds(&fg_only, |i| [[128, 255, 128][i as usize]; 3], true);
    let e = err(&segcut(&[
        SAMPLE,
        "--seeds",
        fg_only.to_str().unwrap(),
        "-o",
        o,
    ]));
    assert!(e.to_lowercase().contains("background"), "{e}");

    // Grey values {0, 1, 2}: labels or OpenCV? Ambiguous without --seed-format.
    let amb = tmp(&dir, "amb.png");
    convert_seeds(&amb, |i| [i; 3], true);
    let e = err(&segcut(&[
        SAMPLE,
        "--seeds",
        amb.to_str().unwrap(),
        "-o",
        o,
    ]));
    assert!(e.contains("--seed-format"), "{e}");
    ok(&segcut(&[
        SAMPLE,
        "--seeds",
        amb.to_str().unwrap(),
        "--seed-format",
        "labels",
        "-o",
        o,
    ]));

    // Unreadable and unsupported files.
    let e = err(&segcut(&["missing.png", "--seeds", SEEDS, "-o", o]));
    assert!(e.contains("missing.png"), "{e}");
    let text = tmp(&dir, "notes.txt");
    std::fs::write(&text, "not an image").unwrap();
    let e = err(&segcut(&[
        text.to_str().unwrap(),
        "--seeds",
        SEEDS,
        "-o",
        o,
    ]));
    assert!(e.contains("notes.txt"), "{e}");

    // No seeds at all; a rectangle outside the image; bad numbers.
    let e = err(&segcut(&[SAMPLE, "-o", o]));
    assert!(e.contains("--seeds") && e.contains("--rect"), "{e}");
    let e =
        String::from_utf8_lossy(&segcut(&[SAMPLE, "--rect", "300,200,100,100", "-o", o]).stderr)
            .into_owned();
    assert!(e.contains("rect") || e.contains("rectangle"), "{e}");
    assert!(
        !segcut(&[SAMPLE, "--seeds", SEEDS, "--lambda", "-3", "-o", o])
            .status
            .success()
    );
}

/// A 32×28×12 volume with a bright ball in a dark box, and label seeds 1 (ball) / 2 (box corner).
fn ball_volume() -> (Image, Image, Vec<bool>) {
    let dims = [32, 28, 12];
    let n: usize = dims.iter().product();
    let mut rng = segcut::rng::Rng::new(5);
    let mut data = Vec::with_capacity(n);
    let mut labels = vec![0.0f32; n];
    let mut truth = Vec::with_capacity(n);
    for (i, label) in labels.iter_mut().enumerate() {
        let (x, y, z) = (i % 32, (i / 32) % 28, i / (32 * 28));
        // Spacing 1, 1, 2: the ball is round in physical units.
        let r2 = ((x as f64 - 16.0).powi(2) + (y as f64 - 14.0).powi(2))
            + (2.0 * (z as f64 - 6.0)).powi(2);
        let inside = r2 <= 64.0;
        truth.push(inside);
        let v = if inside { 180.0 } else { 60.0 } + 15.0 * rng.normal();
        data.push(v.clamp(0.0, 255.0).round() as f32);
        if r2 <= 4.0 {
            *label = 1.0;
        } else if x < 3 && y < 3 {
            *label = 2.0;
        }
    }
    let spacing = [1.0, 1.0, 2.0];
    (
        Image {
            dims,
            channels: 1,
            data,
            spacing,
            meta: Default::default(),
        },
        Image {
            dims,
            channels: 1,
            data: labels,
            spacing,
            meta: Default::default(),
        },
        truth,
    )
}

#[test]
fn volumes_segment_end_to_end_in_tiff_and_nifti() {
    let dir = tempfile::tempdir().unwrap();
    let (vol, seeds, truth) = ball_volume();
    for ext in ["tif", "nii", "nii.gz"] {
        let (v, s, m) = (
            tmp(&dir, &format!("vol.{ext}")),
            tmp(&dir, &format!("seeds.{ext}")),
            tmp(&dir, &format!("mask.{ext}")),
        );
        save_volume(&v, &vol).unwrap();
        save_volume(&s, &seeds).unwrap();
        let stats = tmp(&dir, "stats.json");
        ok(&segcut(&[
            v.to_str().unwrap(),
            "--seeds",
            s.to_str().unwrap(),
            "--seed-format",
            "labels",
            "-o",
            m.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ]));
        let mask = load_image(&m).unwrap();
        assert_eq!(mask.dims, vol.dims, "{ext}");
        if ext != "tif" {
            assert_eq!(mask.spacing, vol.spacing, "{ext}: spacing kept");
        }
        let fg: Vec<bool> = mask.data.iter().map(|&x| x > 0.0).collect();
        let score = iou(&fg, &truth);
        assert!(score > 0.9, "{ext}: IoU {score}");
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(s["connectivity"], 6);
        assert_eq!(s["verified"], true);
    }
}

#[test]
fn eval_scores_masks_and_datasets() {
    let dir = tempfile::tempdir().unwrap();
    // A saved mask scored against a ground truth made from the drawn balloon.
    let truth = balloon_truth();
    let gt = tmp(&dir, "balloon.png");
    image::GrayImage::from_fn(320, 240, |x, y| {
        image::Luma([if truth[(y * 320 + x) as usize] {
            255
        } else {
            0
        }])
    })
    .save(&gt)
    .unwrap();
    let mask = tmp(&dir, "balloon-mask.png");
    ok(&segcut(&[
        SAMPLE,
        "--seeds",
        SEEDS,
        "-o",
        mask.to_str().unwrap(),
    ]));
    let json = tmp(&dir, "eval.json");
    let o = segcut(&[
        "eval",
        "--gt",
        gt.to_str().unwrap(),
        mask.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    ok(&o);
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let row = &rows[0];
    let expected_iou = 100.0 * iou(&read_mask(&mask), &truth);
    assert!(
        (row["iou"].as_f64().unwrap() - expected_iou).abs() < 1e-6,
        "{row}"
    );
    assert!(row["error_rate"].as_f64().unwrap() < 2.0);

    // The dev set, segmented and scored by one command.
    let Some(data) = common::shared_data() else {
        return;
    };
    let ds = data.join("segmentation/grabcut-bsds-dev");
    let o = segcut(&[
        "eval",
        "--dataset",
        ds.to_str().unwrap(),
        "--scribbles",
        "scribbles-2",
        "--json",
        json.to_str().unwrap(),
    ]);
    ok(&o);
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 9);
    assert!(String::from_utf8_lossy(&o.stdout).contains("MEAN"));
}
