//! A stable fuzz harness for the image, volume and seed readers (the `.max` readers have their
//! own in `tests/fuzz_maxflow.rs`): valid files of every format segcut reads are mutated by a
//! seeded mutator — bit flips, truncations, inserted and deleted bytes, header fields set to
//! extremes — and every result must be a value or an error, never a panic, a hang or an abort; an
//! accepted image with accepted seeds must segment or fail cleanly, and a mask it produces must
//! have one label per pixel.
//!
//! The time budget is `SEGCUT_FUZZ_SECONDS` (default 20; CI uses the default); `SEGCUT_FUZZ_SEED`
//! picks the stream. A local campaign: `SEGCUT_FUZZ_SECONDS=1800 cargo test --release --test
//! fuzz_images -- --nocapture` under `ulimit -v 8000000`. Any failing input is written to
//! `target/fuzz-failures/` for replay.

mod common;

use segcut::io::{load_image_with, load_seeds, Image, LoadOptions, SeedFormat, SeedOptions};
use segcut::rng::Rng;
use segcut::segment::{segment, SegmentOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The valid files the mutations start from: (file name, bytes, what it is).
fn corpus(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let root = common::repo_root();
    let mut out = Vec::new();
    let photo = image::open(root.join("samples/balloon.png"))
        .unwrap()
        .to_rgb8();
    let small = image::imageops::resize(&photo, 48, 36, image::imageops::FilterType::Triangle);
    let grey = image::DynamicImage::ImageRgb8(small.clone()).to_luma8();
    let put = |out: &mut Vec<(String, Vec<u8>)>, name: &str, save: &dyn Fn(&Path)| {
        let p = dir.join(name);
        save(&p);
        out.push((name.to_string(), std::fs::read(&p).unwrap()));
    };
    put(&mut out, "rgb.png", &|p| small.save(p).unwrap());
    put(&mut out, "grey.png", &|p| grey.save(p).unwrap());
    put(&mut out, "photo.jpg", &|p| small.save(p).unwrap());
    put(&mut out, "photo.bmp", &|p| small.save(p).unwrap());
    // Seeds: a grey label image and a palette PNG (the dev set's convention).
    put(&mut out, "seeds-grey.png", &|p| {
        let labels = image::GrayImage::from_fn(48, 36, |x, y| {
            image::Luma([if x < 6 {
                2
            } else if (20..28).contains(&x) && y == 18 {
                1
            } else {
                0
            }])
        });
        labels.save(p).unwrap()
    });
    std::fs::copy(
        root.join("samples/balloon-seeds.png"),
        dir.join("seeds.png"),
    )
    .unwrap();
    out.push((
        "seeds.png".into(),
        std::fs::read(root.join("samples/balloon-seeds.png")).unwrap(),
    ));
    // Volumes: NIfTI (plain and gzipped) and a multi-page TIFF.
    let vol = Image {
        dims: [12, 10, 4],
        channels: 1,
        data: (0..480).map(|i| ((i * 37) % 251) as f32).collect(),
        spacing: [0.5, 0.5, 2.0],
        meta: Default::default(),
    };
    for name in ["vol.nii", "vol.nii.gz", "vol.tif"] {
        put(&mut out, name, &|p| {
            segcut::io::save_volume(p, &vol).unwrap()
        });
    }
    let labels = Image {
        data: (0..480).map(|i| [0.0, 1.0, 2.0][i % 3]).collect(),
        ..vol.clone()
    };
    put(&mut out, "vol-seeds.nii", &|p| {
        segcut::io::save_volume(p, &labels).unwrap()
    });
    out
}

/// One mutation of `data`, chosen by `rng`.
fn mutate(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    let n = d.len().max(1);
    let at = |rng: &mut Rng| rng.below(n as u64) as usize;
    match rng.below(7) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = at(rng).min(d.len().saturating_sub(1));
                if !d.is_empty() {
                    d[i] ^= 1 << rng.below(8);
                }
            }
        }
        1 => d.truncate(at(rng)),
        2 => {
            let i = at(rng).min(d.len());
            let extra: Vec<u8> = (0..1 + rng.below(64))
                .map(|_| rng.below(256) as u8)
                .collect();
            d.splice(i..i, extra);
        }
        3 => {
            let i = at(rng).min(d.len());
            let j = (i + 1 + rng.below(64) as usize).min(d.len());
            d.drain(i..j);
        }
        4 => {
            // A header field (the first 512 bytes hold every format's) set to an extreme.
            let i = (rng.below(512) as usize).min(d.len().saturating_sub(4));
            let v: [u8; 4] = match rng.below(4) {
                0 => [0xFF; 4],
                1 => [0; 4],
                2 => 0x7FFF_FFFFu32.to_le_bytes(),
                _ => 0x8000_0000u32.to_be_bytes(),
            };
            if d.len() >= 4 {
                d[i..i + 4].copy_from_slice(&v);
            }
        }
        5 => {
            // A byte repeated over a stretch (a run of garbage).
            let i = at(rng).min(d.len());
            let j = (i + rng.below(256) as usize).min(d.len());
            let b = rng.below(256) as u8;
            d[i..j].fill(b);
        }
        _ => {
            let i = at(rng).min(d.len().saturating_sub(2));
            if d.len() >= 2 {
                d.swap(i, i + 1);
            }
        }
    }
    d
}

/// Loads (and, with seeds, segments) one input; `Err` only for a panic, with its message.
fn exercise(path: &Path, seeds: Option<&Path>) -> Result<&'static str, String> {
    std::panic::catch_unwind(|| {
        // A modest memory limit, so that a header promising gigapixels is refused, not tried.
        let opts = LoadOptions {
            memory_limit: Some(512 << 20),
            connectivity: None,
        };
        let Ok(image) = load_image_with(path, &opts) else {
            return "rejected";
        };
        // Grey label seeds are ambiguous to auto-detection ({0, 1, 2}: labels or OpenCV).
        let grey = seeds.is_some_and(|s| {
            s.to_string_lossy().contains("grey") || s.to_string_lossy().contains("vol")
        });
        let seed_opts = SeedOptions {
            format: if grey {
                SeedFormat::Labels
            } else {
                SeedFormat::Auto
            },
            ..SeedOptions::default()
        };
        let seeds = match seeds {
            Some(s) => match load_seeds(s, image.dims, &seed_opts) {
                Ok(s) => s,
                Err(_) => return "seeds rejected",
            },
            None => return "loaded",
        };
        let opts = SegmentOptions {
            iterations: 2,
            ..Default::default()
        };
        match segment(&image, &seeds, &opts) {
            Ok(seg) => {
                assert_eq!(seg.mask.len(), image.num_pixels(), "mask size");
                assert!(seg.verified);
                "segmented"
            }
            Err(_) => "segment refused",
        }
    })
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    })
}

fn budget() -> Duration {
    let s = std::env::var("SEGCUT_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(20.0);
    Duration::from_secs_f64(s)
}

/// Saves a failing input for replay and returns where.
fn keep(name: &str, data: &[u8]) -> PathBuf {
    let dir = common::repo_root().join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::write(&p, data);
    p
}

#[test]
fn mutated_images_volumes_and_seeds_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus(dir.path());
    let seed = std::env::var("SEGCUT_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED);
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    let (mut tried, mut counts) = (0usize, std::collections::BTreeMap::new());
    let mut failures = Vec::new();
    let quiet = std::panic::take_hook();
    // Panics are caught and reported below; the default hook would print each one.
    std::panic::set_hook(Box::new(|_| {}));
    while start.elapsed() < budget() || tried < 200 {
        let (name, data) = &files[rng.below(files.len() as u64) as usize];
        let bytes = mutate(&mut rng, data);
        let target = dir.path().join(format!("m-{name}"));
        std::fs::write(&target, &bytes).unwrap();
        // Images are segmented with the unmutated seeds of their kind, and mutated seeds are
        // read against an unmutated image, so both readers and the pipeline behind them run.
        let is_seeds = name.contains("seeds");
        let (image, seeds) = if is_seeds {
            let img = if name.starts_with("vol") {
                "vol.nii"
            } else {
                "rgb.png"
            };
            (dir.path().join(img), Some(target.clone()))
        } else if name.starts_with("vol") {
            (target.clone(), Some(dir.path().join("vol-seeds.nii")))
        } else {
            (target.clone(), Some(dir.path().join("seeds-grey.png")))
        };
        let t = Instant::now();
        match exercise(&image, seeds.as_deref()) {
            Ok(what) => *counts.entry(what).or_insert(0usize) += 1,
            Err(msg) => failures.push(format!("{}: {msg}", keep(name, &bytes).display())),
        }
        if t.elapsed() > Duration::from_secs(20) {
            failures.push(format!(
                "{}: took {:?}",
                keep(name, &bytes).display(),
                t.elapsed()
            ));
        }
        tried += 1;
    }
    std::panic::set_hook(quiet);
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "fuzz_images: {tried} inputs in {:.0?} (seed {seed:#x}): {counts:?}, {} failures",
        start.elapsed(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    // The harness must reach the pipeline, not only the readers' first checks.
    assert!(
        counts.get("segmented").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
    assert!(
        counts.get("rejected").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
}
