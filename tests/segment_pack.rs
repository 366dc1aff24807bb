//! `Segmenter::segment_packed`: images cut in lockstep, each round's cuts one solve of the
//! images' graphs stacked along y, give every image exactly its lone run's mask, flow, energy
//! and rounds (on the CPU with BK here; `gpu_segment.rs` checks the GPU's stacked solve).

mod common;

use segcut::maxflow::SolverKind;
use segcut::rng::Rng;
use segcut::segment::session::Segmenter;
use segcut::segment::{Image, Seed, Seeds, SegmentOptions, Segmentation};

/// The dev photos of the most common width (with scribble set 1), `n` of them at most.
fn dev_photos(n: usize) -> Vec<(String, Image, Seeds)> {
    let photos = common::load_dev_photos(1);
    if photos.is_empty() {
        return photos;
    }
    let count = |w: usize| photos.iter().filter(|p| p.1.dims[0] == w).count();
    let width = photos
        .iter()
        .map(|p| p.1.dims[0])
        .max_by_key(|&w| count(w))
        .expect("dev photos");
    photos
        .into_iter()
        .filter(|p| p.1.dims[0] == width)
        .take(n)
        .collect()
}

/// Asserts a packed part equals its lone run in everything but the timings.
fn assert_same(what: &str, packed: &Segmentation, lone: &Segmentation) {
    assert_eq!(packed.mask, lone.mask, "{what}: mask");
    assert_eq!(packed.flow, lone.flow, "{what}: flow");
    // The energy's constant is a parallel sum: equal to rounding, as two lone runs are.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
    assert!(close(packed.energy, lone.energy), "{what}: energy");
    assert_eq!(packed.verified, lone.verified, "{what}: verified");
    let (p, l) = (&packed.stats, &lone.stats);
    assert_eq!(p.iterations_run(), l.iterations_run(), "{what}: rounds");
    for (i, (a, b)) in p.iterations.iter().zip(&l.iterations).enumerate() {
        let key = |s: &segcut::segment::pipeline::IterationStats| {
            (s.flow, s.foreground, s.changed, s.warm)
        };
        assert_eq!(key(a), key(b), "{what}: round {i}");
        assert!(close(a.energy, b.energy), "{what}: round {i}'s energy");
    }
    assert_eq!(p.post_changed, l.post_changed, "{what}: post");
    assert_eq!(p.seed_counts, l.seed_counts, "{what}: seeds");
    assert_eq!(
        (p.beta, p.scale, p.hard),
        (l.beta, l.scale, l.hard),
        "{what}"
    );
    assert_eq!(p.solver.solver, l.solver.solver, "{what}: solver");
}

fn bk(warm_start: bool) -> SegmentOptions {
    SegmentOptions {
        solver: SolverKind::Bk,
        warm_start,
        ..SegmentOptions::default()
    }
}

/// Packs `jobs` and checks every part against a lone run; returns the lone runs.
fn check_pack(opts: &SegmentOptions, jobs: &[(&str, &Image, &Seeds)]) -> Vec<Segmentation> {
    let mut s = Segmenter::new(opts.clone());
    let refs: Vec<(&Image, &Seeds)> = jobs.iter().map(|&(_, i, s)| (i, s)).collect();
    let packed = s.segment_packed(&refs).unwrap();
    assert_eq!(packed.len(), jobs.len());
    let mut lone_runs = Vec::new();
    for (p, &(id, image, seeds)) in packed.into_iter().zip(jobs) {
        let lone = Segmenter::new(opts.clone()).segment(image, seeds).unwrap();
        let p = p.unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_same(id, &p, &lone);
        lone_runs.push(lone);
    }
    lone_runs
}

#[test]
fn packed_dev_photos_equal_their_lone_runs() {
    let photos = dev_photos(3);
    if photos.is_empty() {
        return;
    }
    assert!(photos.len() >= 2, "fewer than two dev photos of one width");
    let jobs: Vec<(&str, &Image, &Seeds)> = photos
        .iter()
        .map(|(id, i, s)| (id.as_str(), i, s))
        .collect();
    for warm in [true, false] {
        let lone = check_pack(&bk(warm), &jobs);
        // Refit rounds ran (else this checks only the first cut).
        assert!(
            lone.iter().any(|s| s.stats.iterations_run() > 2),
            "warm {warm}"
        );
    }
}

/// A two-tone picture of `w`×`h` (a dark left third, foreground): its second round changes
/// nothing, so it stops after two rounds.
fn two_tone(w: usize, h: usize) -> (Image, Seeds) {
    let data = (0..w * h)
        .flat_map(|i| {
            let v = if i % w < w / 3 { 20.0 } else { 220.0 };
            [v, v, v]
        })
        .collect();
    let image = Image::new([w, h, 1], 3, data);
    let mut seeds = Seeds::unknown(image.dims);
    seeds.labels[w * (h / 2)] = Seed::Foreground;
    seeds.labels[w * (h / 2) + w - 1] = Seed::Background;
    (image, seeds)
}

/// A noisy blob on a background, colours varying with `seed`.
fn noisy(w: usize, h: usize, seed: u64) -> (Image, Seeds) {
    let mut rng = Rng::new(seed);
    let (cx, cy, r) = (w as f32 / 2.0, h as f32 / 2.0, h as f32 / 3.0);
    let mut data = Vec::with_capacity(w * h * 3);
    for i in 0..w * h {
        let (x, y) = ((i % w) as f32, (i / w) as f32);
        let inside = ((x - cx).powi(2) + (y - cy).powi(2)).sqrt() < r;
        let c = if inside {
            [60.0, 140.0, 90.0]
        } else {
            [150.0, 110.0, 70.0]
        };
        for v in c {
            data.push((v + rng.below(120) as f32 - 60.0).clamp(0.0, 255.0).round());
        }
    }
    let image = Image::new([w, h, 1], 3, data);
    let mut seeds = Seeds::unknown(image.dims);
    let (cx, cy) = (cx as usize, cy as usize);
    for y in cy - 1..=cy + 1 {
        for x in cx - 1..=cx + 1 {
            seeds.labels[x + w * y] = Seed::Foreground;
        }
    }
    for x in 0..w {
        seeds.labels[x] = Seed::Background;
    }
    (image, seeds)
}

#[test]
fn a_part_that_stops_early_keeps_its_lone_result() {
    let (short, short_seeds) = two_tone(60, 12);
    // The long parts: dev photos when there are, else noisy pictures of the same width.
    let photos = dev_photos(2);
    let (w, long): (usize, Vec<(String, Image, Seeds)>) = match photos.first() {
        Some(p) => (p.1.dims[0], photos.clone()),
        None => (
            60,
            (0..2)
                .map(|k| {
                    let (i, s) = noisy(60, 40, k);
                    (format!("noisy {k}"), i, s)
                })
                .collect(),
        ),
    };
    let (short, short_seeds) = match w {
        60 => (short, short_seeds),
        w => two_tone(w, 12),
    };
    let mut jobs: Vec<(&str, &Image, &Seeds)> = vec![("two-tone", &short, &short_seeds)];
    jobs.extend(long.iter().map(|(id, i, s)| (id.as_str(), i, s)));
    for warm in [true, false] {
        let lone = check_pack(&bk(warm), &jobs);
        let rounds: Vec<usize> = lone.iter().map(|s| s.stats.iterations_run()).collect();
        // The short part stops while a photo runs on: frozen rounds are exercised (the noisy
        // stand-ins, without the shared data, settle in two rounds too).
        assert!(
            photos.is_empty() || rounds[1..].iter().any(|&r| r > rounds[0]),
            "warm {warm}: rounds {rounds:?}"
        );
    }
}

#[test]
fn a_refused_part_gets_its_own_error() {
    let (a, sa) = noisy(40, 30, 1);
    let (b, sb) = noisy(40, 30, 2);
    let (c, _) = noisy(40, 30, 3);
    let no_fg = Seeds::unknown(c.dims);
    // Another width packs too (padded).
    let (d, sd) = two_tone(25, 10);
    let opts = bk(true);
    let mut s = Segmenter::new(opts.clone());
    let out = s
        .segment_packed(&[(&a, &sa), (&c, &no_fg), (&b, &sb), (&d, &sd)])
        .unwrap();
    assert_eq!(out.len(), 4);
    let err = out[1].as_ref().unwrap_err().to_string();
    assert!(err.contains("no foreground seeds"), "{err}");
    for (k, (image, seeds)) in [(0, (&a, &sa)), (2, (&b, &sb)), (3, (&d, &sd))] {
        let lone = Segmenter::new(opts.clone()).segment(image, seeds).unwrap();
        assert_same(&format!("part {k}"), out[k].as_ref().unwrap(), &lone);
    }
    // Nothing to pack: no results, no error.
    assert!(s.segment_packed(&[]).unwrap().is_empty());
    // A pack of one is the lone run.
    let one = s
        .segment_packed(&[(&a, &sa)])
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    let lone = Segmenter::new(opts).segment(&a, &sa).unwrap();
    assert_same("pack of one", &one, &lone);
}

/// Warm refits (`refit_steps`): a pack's refits (fitted side by side) continue from each part's
/// own last models exactly as a lone run's do, and the option reaches the fits (the cuts'
/// flows move against refits from scratch).
#[test]
fn warm_refits_pack_like_lone_runs() {
    let photos = dev_photos(3);
    if photos.is_empty() {
        return;
    }
    let jobs: Vec<(&str, &Image, &Seeds)> = photos
        .iter()
        .map(|(id, i, s)| (id.as_str(), i, s))
        .collect();
    let warm = SegmentOptions {
        refit_steps: 1,
        ..bk(true)
    };
    let with = check_pack(&warm, &jobs);
    let without: Vec<Segmentation> = jobs
        .iter()
        .map(|&(_, i, s)| Segmenter::new(bk(true)).segment(i, s).unwrap())
        .collect();
    assert!(
        with.iter()
            .zip(&without)
            .any(|(a, b)| a.stats.iterations_run() > 3 && a.flow != b.flow),
        "refit-steps 1 changed no cut of a photo with warm refits"
    );
}
