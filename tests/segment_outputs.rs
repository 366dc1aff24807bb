//! End to end: `segcut --unary PROB` (a probability map as the data term), `--output-format
//! opencv|binary`, `--contours` and the overlay, on the sample image.

mod common;

use segcut::io::{load_image, load_seeds, save_nifti, save_volume, NiftiOptions, NiftiType, Seed};
use segcut::segment::Image;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SAMPLE: &str = "samples/balloon.png";
const SEEDS: &str = "samples/balloon-seeds.png";
const W: usize = 320;
const H: usize = 240;

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
        "status {:?}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The balloon's body (samples/make_sample.py: ellipse centre 150,100, radii 58,72).
fn inside(x: usize, y: usize) -> bool {
    ((x as f64 - 150.0) / 58.0).powi(2) + ((y as f64 - 100.0) / 72.0).powi(2) <= 1.0
}

/// A "network output": 0.8 inside the balloon, 0.2 outside, with a block of wrong confident
/// pixels on each side and salt-and-pepper flips that the n-links should remove.
fn noisy_probability() -> Vec<f32> {
    let mut rng = segcut::rng::Rng::new(21);
    (0..W * H)
        .map(|i| {
            let (x, y) = (i % W, i / W);
            let truth = inside(x, y);
            let flip = rng.below(100) < 12;
            match (
                truth != flip,
                (140..146).contains(&x) && (95..101).contains(&y),
            ) {
                (_, true) => 0.3, // a 6×6 dent in the middle of the balloon
                (true, _) => 0.8,
                (false, _) => 0.2,
            }
        })
        .collect()
}

fn errors(mask: &[bool]) -> usize {
    mask.iter()
        .enumerate()
        .filter(|(i, &m)| m != inside(i % W, i / W))
        .count()
}

fn read_values(path: &Path) -> Vec<f32> {
    load_image(path).unwrap().data
}

fn out(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

#[test]
fn unary_png_map_is_refined_by_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let prob = noisy_probability();
    let noisy_errors = errors(&prob.iter().map(|&p| p > 0.5).collect::<Vec<_>>());
    // As an 8-bit PNG (p · 255) and as a float NIfTI: the same map by the documented rules.
    let png = out(&dir, "prob.png");
    let img = Image {
        dims: [W, H, 1],
        channels: 1,
        data: prob.iter().map(|p| (p * 255.0).round()).collect(),
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    save_volume(&png, &img).unwrap();
    let nii = out(&dir, "prob.nii");
    let float = Image {
        data: img.data.iter().map(|v| v / 255.0).collect(),
        ..img.clone()
    };
    let nopts = NiftiOptions {
        datatype: NiftiType::F32,
        ..NiftiOptions::default()
    };
    save_nifti(&nii, &float, &nopts).unwrap();
    let mut masks = Vec::new();
    for map in [&png, &nii] {
        let mask = out(&dir, "mask.png");
        let o = segcut(&[
            SAMPLE,
            "--unary",
            map.to_str().unwrap(),
            "-o",
            mask.to_str().unwrap(),
            "--solver",
            "bk",
        ]);
        ok(&o);
        let m: Vec<bool> = read_values(&mask).iter().map(|&v| v == 255.0).collect();
        masks.push(m);
    }
    assert_eq!(masks[0], masks[1], "PNG and NIfTI maps give the same cut");
    let e = errors(&masks[0]);
    assert!(
        e * 10 < noisy_errors,
        "the cut leaves {e} errors of the map's {noisy_errors}"
    );
    // The dent inside the balloon is filled by the n-links, not kept from the map.
    assert!(masks[0][98 * W + 142]);
}

#[test]
fn unary_with_seeds_respects_them_and_bad_maps_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A map that says "background" everywhere: only the seeds can make foreground.
    let flat = Image {
        dims: [W, H, 1],
        channels: 1,
        data: vec![51.0; W * H], // 0.2
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    let map = out(&dir, "flat.png");
    save_volume(&map, &flat).unwrap();
    let mask = out(&dir, "mask.png");
    ok(&segcut(&[
        SAMPLE,
        "--unary",
        map.to_str().unwrap(),
        "--seeds",
        SEEDS,
        "-o",
        mask.to_str().unwrap(),
        "--solver",
        "bk",
    ]));
    let root = common::repo_root();
    let seeds = load_seeds(&root.join(SEEDS), [W, H, 1], &Default::default()).unwrap();
    let m = read_values(&mask);
    for (i, s) in seeds.labels.iter().enumerate() {
        match s {
            Seed::Foreground => assert_eq!(m[i], 255.0, "fg seed {i}"),
            Seed::Background => assert_eq!(m[i], 0.0, "bg seed {i}"),
            _ => {}
        }
    }
    // A float map outside [0, 1] is refused, naming the pixel; so is a wrong size.
    let bad = out(&dir, "bad.nii");
    let mut data = vec![0.5f32; W * H];
    data[3 + 2 * W] = 1.5;
    let img = Image {
        dims: [W, H, 1],
        channels: 1,
        data,
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    let fopts = NiftiOptions {
        datatype: NiftiType::F32,
        ..NiftiOptions::default()
    };
    save_nifti(&bad, &img, &fopts).unwrap();
    let o = segcut(&[SAMPLE, "--unary", bad.to_str().unwrap(), "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("(3, 2)") && e.contains("1.5"), "{e}");
    let small = out(&dir, "small.png");
    let tiny = Image {
        dims: [4, 4, 1],
        channels: 1,
        data: vec![0.0; 16],
        spacing: [1.0; 3],
        meta: Default::default(),
    };
    save_volume(&small, &tiny).unwrap();
    let o = segcut(&[SAMPLE, "--unary", small.to_str().unwrap(), "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!Path::new(&common::repo_root().join("x.png")).exists());
}

#[test]
fn opencv_and_binary_outputs_contours_and_overlay() {
    let dir = tempfile::tempdir().unwrap();
    let (mask, cv, bin, json, pic) = (
        out(&dir, "mask.png"),
        out(&dir, "cv.png"),
        out(&dir, "bin.png"),
        out(&dir, "c.json"),
        out(&dir, "o.png"),
    );
    let base = [SAMPLE, "--seeds", SEEDS, "--solver", "bk"];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        ok(&segcut(&a));
    };
    run(&[
        "-o",
        mask.to_str().unwrap(),
        "--contours",
        json.to_str().unwrap(),
        "--overlay",
        pic.to_str().unwrap(),
    ]);
    run(&["-o", cv.to_str().unwrap(), "--output-format", "opencv"]);
    run(&["-o", bin.to_str().unwrap(), "--output-format", "binary"]);
    let m: Vec<bool> = read_values(&mask).iter().map(|&v| v == 255.0).collect();
    let root = common::repo_root();
    let seeds = load_seeds(&root.join(SEEDS), [W, H, 1], &Default::default()).unwrap();
    // OpenCV's states: seeds definite, the rest "probably" what the mask says.
    let c = read_values(&cv);
    for i in 0..W * H {
        let want = match seeds.labels[i] {
            Seed::Foreground => 1.0,
            Seed::Background => 0.0,
            _ if m[i] => 3.0,
            _ => 2.0,
        };
        assert_eq!(c[i], want, "pixel {i}");
    }
    assert!(c.contains(&3.0) && c.contains(&2.0));
    // The same file read back as seeds (OpenCV convention) gives the seeds and the mask.
    let back = load_seeds(&cv, [W, H, 1], &Default::default()).unwrap();
    assert_eq!(back.counts()[1], seeds.counts()[1]);
    let b = read_values(&bin);
    assert!(b.iter().zip(&m).all(|(&v, &f)| v == f as u8 as f32));
    // Contours: one outer border around the balloon; every point on a foreground pixel with a
    // background 4-neighbour (or the image edge).
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["width"], W);
    let list = doc["contours"].as_array().unwrap();
    let outer: Vec<_> = list.iter().filter(|c| c["kind"] == "outer").collect();
    assert!(!outer.is_empty());
    let longest = list
        .iter()
        .map(|c| c["points"].as_array().unwrap().len())
        .max()
        .unwrap();
    // The balloon's outline is roughly its ellipse's perimeter (~410 pixels) or more.
    assert!(longest > 300, "{longest}");
    for c in list {
        for p in c["points"].as_array().unwrap() {
            let (x, y) = (
                p[0].as_u64().unwrap() as usize,
                p[1].as_u64().unwrap() as usize,
            );
            assert!(m[x + W * y], "contour point ({x}, {y}) off the foreground");
            let edge = x == 0 || y == 0 || x + 1 == W || y + 1 == H;
            let bg_next = edge
                || !m[x - 1 + W * y]
                || !m[x + 1 + W * y]
                || !m[x + W * (y - 1)]
                || !m[x + W * (y + 1)]
                || !m[x - 1 + W * (y - 1)]
                || !m[x + 1 + W * (y + 1)]
                || !m[x + 1 + W * (y - 1)]
                || !m[x - 1 + W * (y + 1)];
            assert!(bg_next, "contour point ({x}, {y}) inside the foreground");
        }
    }
    // The overlay: boundary colour on contour pixels, seed colours on seeds off the boundary.
    let o = image::open(&pic).unwrap().to_rgb8();
    assert_eq!(o.dimensions(), (W as u32, H as u32));
    let p0 = outer[0]["points"][0].clone();
    let (x, y) = (
        p0[0].as_u64().unwrap() as u32,
        p0[1].as_u64().unwrap() as u32,
    );
    assert_eq!(o.get_pixel(x, y).0, [255, 230, 0]);
    let fg_seed = (0..W * H)
        .find(|&i| seeds.labels[i] == Seed::Foreground && m[i] && interior(&m, i))
        .unwrap();
    assert_eq!(
        o.get_pixel((fg_seed % W) as u32, (fg_seed / W) as u32).0,
        [0, 200, 0]
    );
}

/// Whether all 8 neighbours of pixel `i` are foreground (not on the boundary).
fn interior(m: &[bool], i: usize) -> bool {
    let (x, y) = (i % W, i / W);
    if x == 0 || y == 0 || x + 1 == W || y + 1 == H {
        return false;
    }
    (0..3).all(|dy| (0..3).all(|dx| m[x + dx - 1 + W * (y + dy - 1)]))
}
