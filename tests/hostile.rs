//! Hostile inputs of issue 21: sizes that would exhaust memory (C2, C3, C4), seed files that
//! read two ways (D1), post-processing of volumes (D3) and a NaN threshold (D4). Cases that
//! aborted run the binary under an address-space limit (`ulimit -v`), as a batch node or a
//! container would: an abort there is a signal, which these tests refuse.

mod common;

use std::path::Path;
use std::process::{Command, Output};

/// The address-space limit of the memory cases, in KiB (4 GB).
const LIMIT_KIB: u64 = 4_000_000;

/// Runs `segcut ARGS` in `dir` under `ulimit -v LIMIT_KIB`.
fn limited(dir: &Path, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(common::segcut_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run segcut")
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::segcut_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run segcut")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2 (never a signal, never a panic) and every `want` in the message.
fn refused(o: &Output, want: &[&str]) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "status {:?}: {e}", o.status);
    assert!(
        !e.contains("panicked") && !e.contains("memory allocation of"),
        "{e}"
    );
    for w in want {
        assert!(e.contains(w), "missing '{w}' in: {e}");
    }
    e
}

/// A flat two-tone RGB square of `n²` pixels: a small PNG that is large to segment.
fn two_tone(path: &Path, n: u32) {
    let q = n / 4;
    image::RgbImage::from_fn(n, n, |x, y| {
        let inside = (q..3 * q).contains(&x) && (q..3 * q).contains(&y);
        image::Rgb(if inside { [200, 60, 40] } else { [30, 90, 160] })
    })
    .save(path)
    .unwrap();
}

// ---- C2: segmentation sized by the input ----

#[test]
fn segmenting_4100_squared_under_4_gb_solves_or_is_refused_never_aborts() {
    let dir = tempfile::tempdir().unwrap();
    two_tone(&dir.path().join("big.png"), 4100);
    let o = limited(
        dir.path(),
        &[
            "big.png",
            "--rect",
            "1000,1000,2100,2100",
            "-o",
            "m.png",
            "--solver",
            "bk",
        ],
    );
    let e = stderr(&o);
    match o.status.code() {
        Some(0) => assert!(dir.path().join("m.png").is_file(), "{e}"),
        Some(2) => assert!(
            e.contains("needs about") || e.contains("cannot allocate"),
            "{e}"
        ),
        _ => panic!("status {:?} (an abort is a signal): {e}", o.status),
    }
}

#[test]
fn segmenting_5000_squared_under_4_gb_is_refused_with_both_numbers() {
    let dir = tempfile::tempdir().unwrap();
    two_tone(&dir.path().join("big.png"), 5000);
    let o = limited(
        dir.path(),
        &["big.png", "--rect", "1000,1000,2500,2500", "-o", "m.png"],
    );
    refused(&o, &["needs about", "GB", "ulimit"]);
    assert!(!dir.path().join("m.png").exists());
}

#[test]
fn the_segmentation_estimate_covers_the_options_that_cost_memory() {
    use segcut::segment::{budget::memory_needed, SegmentOptions};
    let full = SegmentOptions::default();
    let lean = SegmentOptions {
        warm_start: false,
        prior: segcut::segment::prior::SpatialPrior {
            weight: 0.0,
            ..full.prior
        },
        ..full.clone()
    };
    let dims = [640, 480, 1];
    assert!(
        memory_needed(dims, 3, full.memory_needs()) > memory_needed(dims, 3, lean.memory_needs())
    );
    assert!(
        memory_needed(dims, 3, full.memory_needs()) > memory_needed(dims, 1, full.memory_needs())
    );
    // Per pixel, at least what BK's arcs and nodes alone take for 8 neighbours.
    let px = 640 * 480;
    assert!(memory_needed(dims, 3, full.memory_needs()) > px * (28 + 8 * 12));
}

#[test]
fn bk_refuses_a_graph_it_cannot_allocate_instead_of_aborting() {
    // Far more than any budget: the check names the job and the numbers.
    let need = segcut::maxflow::bk::memory_needed(4_000_000_000, 32_000_000_000);
    let e = segcut::io::check_budget("solving the test graph", need, "").unwrap_err();
    assert!(matches!(e, segcut::Error::Memory(_)), "{e:?}");
    assert!(
        e.to_string().contains("solving the test graph needs about"),
        "{e}"
    );
}

// ---- C3: stereo sized by the number of disparities ----

/// A textured 512×384 pair (the right view is the left shifted by 2), as `l.png` and `r.png`.
fn pair(dir: &Path) {
    let (w, h) = (512u32, 384u32);
    let tex = |x: u32, y: u32| (((x * 37 + y * 11) % 23) * 11) as u8;
    image::GrayImage::from_fn(w, h, |x, y| image::Luma([tex(x, y)]))
        .save(dir.join("l.png"))
        .unwrap();
    image::GrayImage::from_fn(w, h, |x, y| image::Luma([tex(x + 2, y)]))
        .save(dir.join("r.png"))
        .unwrap();
}

#[test]
fn stereo_with_tens_of_thousands_of_disparities_is_refused_not_aborted() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let scene = data.join("stereo/tsukuba");
    let (l, r) = (scene.join("imL.png"), scene.join("imR.png"));
    for n in ["20000", "65535"] {
        let o = limited(
            dir.path(),
            &[
                "stereo",
                l.to_str().unwrap(),
                r.to_str().unwrap(),
                "-n",
                n,
                "-o",
                "d.png",
            ],
        );
        refused(&o, &["needs about", n, "disparities"]);
        assert!(!dir.path().join("d.png").exists());
    }
}

#[test]
fn a_batch_row_with_too_many_disparities_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pair(d);
    std::fs::write(
        d.join("jobs.csv"),
        "id,left,right,disparities\nsmall,l.png,r.png,4\nhuge,l.png,r.png,20000\n",
    )
    .unwrap();
    // The huge row's cost volume alone is 512·384·20000·4 bytes = 15.7 GB. Run twice: a rerun
    // must not abort on it either (the small job is then skipped, done).
    for attempt in 0..2 {
        let o = limited(
            d,
            &["batch", "-q", "--gpus", "none", "jobs.csv", "-o", "out"],
        );
        let e = stderr(&o);
        // 1: a job failed; the batch itself ran to the end.
        assert_eq!(
            o.status.code(),
            Some(1),
            "run {attempt}: {:?} {e}",
            o.status
        );
        assert!(d.join("out/small.png").is_file(), "{e}");
        assert!(!d.join("out/huge.png").exists());
        let summary = std::fs::read_to_string(d.join("out/summary.csv")).unwrap();
        let huge = summary
            .lines()
            .find(|l| l.starts_with("huge,"))
            .expect("huge row");
        assert!(
            huge.contains("failed") && huge.contains("needs about"),
            "{summary}"
        );
    }
}

#[test]
fn the_stereo_estimate_grows_with_the_disparities() {
    use segcut::stereo::{budget::memory_needed, StereoOptions};
    let o = |n| StereoOptions {
        num_disparities: n,
        ..Default::default()
    };
    let (a, b) = (
        memory_needed(384, 288, 3, &o(16)),
        memory_needed(384, 288, 3, &o(17)),
    );
    assert_eq!(b - a, 384 * 288 * 4);
    assert_eq!(memory_needed(usize::MAX, 2, 3, &o(16)), u64::MAX);
}

// ---- C4: colour-model components ----

#[test]
fn a_billion_components_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::repo_root();
    let img = root.join("samples/balloon.png");
    let seeds = root.join("samples/balloon-seeds.png");
    let o = limited(
        dir.path(),
        &[
            img.to_str().unwrap(),
            "--seeds",
            seeds.to_str().unwrap(),
            "--components",
            "1000000000",
            "-o",
            "m.png",
        ],
    );
    refused(&o, &["1000000000", "64"]);
    // The largest allowed still segments.
    let o = run(
        dir.path(),
        &[
            img.to_str().unwrap(),
            "--seeds",
            seeds.to_str().unwrap(),
            "--components",
            "64",
            "--iterations",
            "1",
            "-o",
            "m.png",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn the_library_bounds_gmm_components_everywhere() {
    use segcut::segment::model::{Gmm, ModelKind, MAX_GMM_COMPONENTS};
    let samples: Vec<f32> = (0..300).map(|i| (i % 17) as f32).collect();
    assert!(Gmm::fit(&samples, 3, 1_000_000_000, 1.0).is_err());
    assert!(Gmm::fit(&samples, 3, MAX_GMM_COMPONENTS, 1.0).is_ok());
    assert!(ModelKind::Gmm {
        components: MAX_GMM_COMPONENTS + 1
    }
    .check()
    .is_err());
}

// ---- D1: seed files that read two ways ----

/// The balloon's foreground strokes in white on black (and, when `bg` is given, its background
/// strokes in that grey), as a grey PNG.
fn strokes_on_black(dir: &Path, bg: Option<u8>) -> std::path::PathBuf {
    let root = common::repo_root();
    let seeds = segcut::io::load_seeds(
        &root.join("samples/balloon-seeds.png"),
        [320, 240, 1],
        &Default::default(),
    )
    .unwrap();
    let px: Vec<u8> = seeds
        .labels
        .iter()
        .map(|l| match l {
            segcut::io::Seed::Foreground => 255,
            segcut::io::Seed::Background => bg.unwrap_or(0),
            _ => 0,
        })
        .collect();
    let path = dir.join("strokes.png");
    image::GrayImage::from_raw(320, 240, px)
        .unwrap()
        .save(&path)
        .unwrap();
    path
}

#[test]
fn white_strokes_on_black_are_not_taken_for_a_trimap() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::repo_root();
    let img = root.join("samples/balloon.png");
    for bg in [None, Some(64)] {
        let s = strokes_on_black(dir.path(), bg);
        let o = run(
            dir.path(),
            &[
                img.to_str().unwrap(),
                "--seeds",
                s.to_str().unwrap(),
                "-o",
                "m.png",
            ],
        );
        refused(&o, &["ambiguous", "trimap", "rgb", "128", "--seed-format"]);
        assert!(!dir.path().join("m.png").exists());
        // Named, the trimap reading is taken as asked (every pixel a seed).
        let o = run(
            dir.path(),
            &[
                img.to_str().unwrap(),
                "--seeds",
                s.to_str().unwrap(),
                "--seed-format",
                "trimap",
                "-o",
                "m.png",
            ],
        );
        assert!(
            o.status.success() || o.status.code() == Some(2),
            "{}",
            stderr(&o)
        );
        let _ = std::fs::remove_file(dir.path().join("m.png"));
    }
}

#[test]
fn the_library_message_names_both_readings_and_no_flag() {
    let dir = tempfile::tempdir().unwrap();
    let s = strokes_on_black(dir.path(), None);
    let e = segcut::io::load_seeds(&s, [320, 240, 1], &Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("trimap") && e.contains("rgb seed format"), "{e}");
    assert!(!e.contains("--"), "the library names no flag: {e}");
    // A real trimap (with its unknown band) is still detected.
    let t = dir.path().join("t.png");
    let px: Vec<u8> = (0..320 * 240)
        .map(|i| match i % 320 {
            0..=99 => 0,
            100..=199 => 128,
            _ => 255,
        })
        .collect();
    image::GrayImage::from_raw(320, 240, px)
        .unwrap()
        .save(&t)
        .unwrap();
    let seeds = segcut::io::load_seeds(&t, [320, 240, 1], &Default::default()).unwrap();
    assert_eq!(seeds.labels[150], segcut::io::Seed::Unknown);
    assert_eq!(seeds.labels[0], segcut::io::Seed::Background);
}

#[test]
fn a_palette_whose_colours_cross_the_scribble_colours_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.png");
    // Index 1 (foreground as a palette) drawn blue, index 2 drawn red: as coloured scribbles
    // with the default colours the strokes mean the opposite.
    let f = std::fs::File::create(&path).unwrap();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(f), 4, 1);
    enc.set_color(png::ColorType::Indexed);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_palette(vec![0, 0, 0, 0, 0, 255, 255, 0, 0]);
    enc.write_header()
        .unwrap()
        .write_image_data(&[0, 1, 2, 0])
        .unwrap();
    let e = segcut::io::load_seeds(&path, [4, 1, 1], &Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("palette seed format") && e.contains("rgb seed format"),
        "{e}"
    );
    // Named, either reading is taken.
    use segcut::io::{Seed, SeedFormat, SeedOptions};
    let named = |format| {
        segcut::io::load_seeds(
            &path,
            [4, 1, 1],
            &SeedOptions {
                format,
                ..Default::default()
            },
        )
        .unwrap()
        .labels
    };
    assert_eq!(named(SeedFormat::Palette)[1], Seed::Foreground);
    assert_eq!(named(SeedFormat::Rgb)[1], Seed::Background);
}

#[test]
fn grey_scribble_colours_that_disagree_with_a_grey_convention_are_refused() {
    use segcut::io::{Seed, SeedOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.png");
    // {0, 1, 2}: labels say 1 is foreground; the scribble colours say 2 is.
    image::GrayImage::from_raw(3, 1, vec![0, 1, 2])
        .unwrap()
        .save(&path)
        .unwrap();
    let opts = SeedOptions {
        fg_color: [2, 2, 2],
        bg_color: [1, 1, 1],
        ..Default::default()
    };
    let e = segcut::io::load_seeds(&path, [3, 1, 1], &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ambiguous") && e.contains("rgb"), "{e}");
    // Colours that agree with the only grey reading are used.
    image::GrayImage::from_raw(3, 1, vec![0, 128, 255])
        .unwrap()
        .save(&path)
        .unwrap();
    let opts = SeedOptions {
        fg_color: [255, 255, 255],
        bg_color: [0, 0, 0],
        ..Default::default()
    };
    let seeds = segcut::io::load_seeds(&path, [3, 1, 1], &opts).unwrap();
    // Both readings agree (128 is unmarked either way), so the file is read.
    assert_eq!(
        seeds.labels,
        [Seed::Background, Seed::Unknown, Seed::Foreground]
    );
}

// ---- D3: post-processing of volumes ----

#[test]
fn volumes_fill_holes_and_drop_unseeded_components_in_3d() {
    use segcut::segment::post::{post_process, PostProcess};
    use segcut::segment::{Seed, Seeds};
    let (w, h, d) = (9, 9, 9);
    let idx = |x: usize, y: usize, z: usize| x + w * (y + h * z);
    let mut mask = vec![false; w * h * d];
    // A seeded 5³ block with a 1-voxel and a 2-voxel cavity.
    for z in 1..6 {
        for y in 1..6 {
            for x in 1..6 {
                mask[idx(x, y, z)] = true;
            }
        }
    }
    mask[idx(3, 3, 3)] = false;
    mask[idx(2, 2, 2)] = false;
    mask[idx(2, 2, 3)] = false;
    // An unseeded island touching the block only diagonally across a corner (26-connected:
    // part of it), and one far away.
    mask[idx(6, 6, 6)] = true;
    mask[idx(8, 1, 8)] = true;
    let mut seeds = Seeds::unknown([w, h, d]);
    seeds.labels[idx(1, 1, 1)] = Seed::Foreground;
    let (out, changed) = post_process(
        &mask,
        &seeds,
        &PostProcess {
            drop_unseeded: true,
            max_hole: 2,
        },
    )
    .unwrap();
    assert!(out[idx(3, 3, 3)], "the 1-voxel cavity is filled");
    assert!(
        !out[idx(2, 2, 2)] && !out[idx(2, 2, 3)],
        "the 2-voxel cavity is not"
    );
    assert!(out[idx(6, 6, 6)], "26-connected to the seeded block");
    assert!(!out[idx(8, 1, 8)], "the far island is dropped");
    assert_eq!(changed, 2);
    let (_, changed) = post_process(
        &mask,
        &seeds,
        &PostProcess {
            drop_unseeded: false,
            max_hole: 3,
        },
    )
    .unwrap();
    assert_eq!(changed, 3, "both cavities filled");
    // A cavity open to a face of the volume is not a hole.
    let mut open = mask.clone();
    for z in 0..3 {
        open[idx(3, 3, z)] = false;
    }
    let (out, _) = post_process(
        &open,
        &seeds,
        &PostProcess {
            drop_unseeded: false,
            max_hole: 100,
        },
    )
    .unwrap();
    assert!(!out[idx(3, 3, 3)]);
}

#[test]
fn a_volume_segmentation_reports_the_post_processing_it_did() {
    use segcut::segment::post::PostProcess;
    use segcut::segment::{segment, Image, Seed, Seeds, SegmentOptions};
    let (w, h, d) = (12, 12, 8);
    let idx = |x: usize, y: usize, z: usize| x + w * (y + h * z);
    // A bright block (seeded) and a bright unseeded speck; dark elsewhere.
    let mut data = vec![20.0f32; w * h * d];
    for z in 2..6 {
        for y in 2..7 {
            for x in 2..7 {
                data[idx(x, y, z)] = 220.0;
            }
        }
    }
    data[idx(10, 10, 4)] = 220.0;
    let image = Image::new([w, h, d], 1, data);
    let mut seeds = Seeds::unknown([w, h, d]);
    seeds.labels[idx(4, 4, 4)] = Seed::Foreground;
    seeds.labels[idx(0, 0, 0)] = Seed::Background;
    let opts = SegmentOptions {
        lambda: 1.0,
        iterations: 1,
        prior: segcut::segment::prior::SpatialPrior {
            weight: 0.0,
            ..SegmentOptions::default().prior
        },
        post: PostProcess {
            drop_unseeded: true,
            max_hole: 0,
        },
        ..Default::default()
    };
    let seg = segment(&image, &seeds, &opts).unwrap();
    assert!(seg.mask[idx(4, 4, 4)]);
    assert!(!seg.mask[idx(10, 10, 4)], "the unseeded speck is dropped");
    assert!(seg.stats.post_changed >= 1);
}

// ---- D4: stereo-eval --threshold ----

#[test]
fn stereo_eval_refuses_a_threshold_that_is_not_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = common::shared_data() else {
        return;
    };
    let scene = data.join("stereo/tsukuba");
    let gt = scene.join("gt.png");
    for t in ["nan", "-1", "inf"] {
        let o = run(
            dir.path(),
            &[
                "stereo-eval",
                "--gt",
                scene.to_str().unwrap(),
                gt.to_str().unwrap(),
                &format!("--threshold={t}"),
            ],
        );
        refused(&o, &["threshold"]);
    }
}
