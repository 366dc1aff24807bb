//! The stroke-geometry prior on the device (`segment::gpu_prior`) against the host's
//! (`segment::prior::prior_costs`): equal bit for bit on integer-valued images, within
//! `PRIOR_TOLERANCE` (relative, times the weight) on float images; on random images, a spiral
//! corridor (a path with many turns) and the dev photos. Without a usable GPU each test says so
//! and returns, unless `SEGCUT_REQUIRE_GPU=1` is set (on the GPU machine): then it fails.

mod common;
// The maze generator shared with the CPU emulation's tests (`src/segment/prior_emulation.rs`).
#[path = "../src/segment/test_maze.rs"]
mod test_maze;

use common::gpu_or_skip;
use segcut::graph::Connectivity;
use segcut::io::{load_image, load_seeds};
use segcut::rng::Rng;
use segcut::segment::color::ColorSpace;
use segcut::segment::energy::EnergyOptions;
use segcut::segment::gpu::GpuEnergy;
use segcut::segment::gpu_prior::{PriorRun, MAX_DEVICE_PASSES, PRIOR_TOLERANCE};
use segcut::segment::prior::{
    enclosure, prior_costs, scale_by_enclosure, stroke_coverage, SpatialPrior,
};
use segcut::segment::{Image, Seed, Seeds};

use common::image_from as image;

const PRIORS: [SpatialPrior; 3] = [
    SpatialPrior {
        weight: 10.0,
        contrast: 3.0,
        softness: 0.15,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    },
    SpatialPrior {
        weight: 2.0,
        contrast: 0.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    },
    SpatialPrior {
        weight: 1.0,
        contrast: 20.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    },
];

/// The energy's options for `image`: N6 for a volume, N8 for a 2D image.
fn energy_options(image: &Image) -> EnergyOptions {
    EnergyOptions {
        connectivity: if image.is_volume() {
            Connectivity::N6
        } else {
            Connectivity::N8
        },
        ..EnergyOptions::default()
    }
}

/// Compares the device's prior with the host's for `image` and `seeds` under `prior`, in colour
/// space `space` (which decides where the device keeps the input values); returns the device's
/// passes (0: the host computed it).
fn compare(
    what: &str,
    image: &Image,
    seeds: &Seeds,
    prior: &SpatialPrior,
    space: ColorSpace,
) -> usize {
    let host = prior_costs(image, seeds, prior).unwrap();
    let opts = energy_options(image);
    let mut gpu = GpuEnergy::new(segcut::cuda::Device::default(), image, seeds, space, &opts)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let run = gpu
        .compute_prior(image, seeds, prior)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let device = gpu.prior_host().unwrap();
    assert_eq!(
        host.is_some(),
        device.is_some(),
        "{what}: prior on one side only"
    );
    let (Some(host), Some(device)) = (host, device) else {
        assert_eq!(run, PriorRun::Off, "{what}");
        return 0;
    };
    let integral = image.data.iter().all(|v| v.fract() == 0.0);
    let tol = if integral {
        0.0
    } else {
        PRIOR_TOLERANCE * prior.weight
    };
    let mut worst = 0.0f64;
    for (p, (&h, &d)) in host.iter().zip(&device).enumerate() {
        let diff = (h as f64 - d as f64).abs();
        worst = worst.max(diff);
        assert!(
            diff <= tol,
            "{what}: pixel {p}: host {h}, device {d} (tolerance {tol})"
        );
    }
    eprintln!("{what}: {run:?}, largest difference {worst:e}");
    match run {
        PriorRun::Device { passes } => passes,
        PriorRun::Host(_) => 0,
        PriorRun::Off | PriorRun::Cpu => panic!("{what}: a device prior reported as {run:?}"),
    }
}

/// A random image: integer levels up to `levels`, or floats in [0, 3.7) without.
fn random_image(dims: [usize; 3], ch: usize, levels: Option<f32>, rng: &mut Rng) -> Image {
    image(dims, ch, |_| {
        let u = rng.unit_f64() as f32;
        match levels {
            Some(l) => (u * l).round(),
            None => u * 3.7,
        }
    })
}

/// Random hard seeds of both classes (and some soft ones, which are no strokes).
fn random_seeds(dims: [usize; 3], rng: &mut Rng, count: usize) -> Seeds {
    let mut s = Seeds::unknown(dims);
    let n = s.labels.len();
    for i in 0..count {
        let p = rng.below(n as u64) as usize;
        s.labels[p] = match i % 4 {
            0 | 2 => Seed::Foreground,
            1 => Seed::Background,
            _ => Seed::ProbablyBackground,
        };
    }
    let last = n - 1;
    s.labels[0] = Seed::Foreground;
    s.labels[last] = Seed::Background;
    s
}

#[test]
fn random_images_match_the_host() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(25);
    for (case, (dims, ch, levels)) in [
        ([37, 23, 1], 1, Some(255.0)),
        ([64, 48, 1], 3, Some(255.0)),
        ([50, 31, 1], 3, None),
        ([41, 40, 1], 1, None),
        ([13, 11, 7], 1, Some(255.0)),
        ([9, 12, 6], 3, None),
        ([200, 1, 1], 3, Some(255.0)),
        ([1, 150, 1], 1, Some(4095.0)),
        // Strips of 32 lines: widths and heights around and not multiples of 32, one line,
        // one pixel, volumes whose strips end inside the grid.
        ([33, 65, 1], 3, Some(255.0)),
        ([97, 31, 1], 1, None),
        ([64, 96, 1], 1, Some(255.0)),
        ([1, 1, 1], 1, Some(255.0)),
        ([2, 1, 1], 1, Some(255.0)),
        ([40, 33, 5], 1, Some(255.0)),
        ([1, 40, 3], 3, None),
        ([35, 1, 9], 1, Some(255.0)),
    ]
    .into_iter()
    .enumerate()
    {
        let img = random_image(dims, ch, levels, &mut rng);
        let seeds = random_seeds(dims, &mut rng, 6 + case);
        for (k, prior) in PRIORS.iter().enumerate() {
            for space in [ColorSpace::AsIs, ColorSpace::Lab] {
                let what = format!("case {case} {dims:?}x{ch} prior {k} {space:?}");
                compare(&what, &img, &seeds, prior, space);
            }
        }
    }
}

#[test]
fn without_strokes_of_both_classes_there_is_no_prior() {
    if !gpu_or_skip() {
        return;
    }
    let img = image([16, 16, 1], 1, |i| (i % 7) as f32);
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[3] = Seed::Foreground;
    seeds.labels[200] = Seed::ProbablyBackground;
    compare("one class", &img, &seeds, &PRIORS[0], ColorSpace::AsIs);
    let mut gpu = GpuEnergy::new(
        segcut::cuda::Device::default(),
        &img,
        &seeds,
        ColorSpace::AsIs,
        &EnergyOptions::default(),
    )
    .unwrap();
    let zero = SpatialPrior {
        weight: 0.0,
        ..PRIORS[0]
    };
    seeds.labels[200] = Seed::Background;
    assert_eq!(
        gpu.compute_prior(&img, &seeds, &zero).unwrap(),
        PriorRun::Off
    );
    assert!(gpu.prior_host().unwrap().is_none());
    // A mismatched image is an error, not a wrong prior.
    let other = image([16, 15, 1], 1, |_| 0.0);
    assert!(gpu
        .compute_prior(&other, &Seeds::unknown(other.dims), &PRIORS[0])
        .is_err());
}

/// A square spiral corridor of bright pixels between dark walls: with a high contrast the
/// shortest path from the centre follows the corridor and turns at every corner, the schedule's
/// worst case (one pass per turn or so).
fn spiral(size: usize, ch: usize) -> (Image, Seeds) {
    let mut wall = vec![true; size * size];
    // Carve the corridor: walk inwards, turning right at every wall, two pixels apart.
    let (mut x, mut y) = (1isize, 1isize);
    let (mut dx, mut dy) = (1isize, 0isize);
    let s = size as isize;
    let open = |wall: &Vec<bool>, x: isize, y: isize| -> bool {
        x > 0 && y > 0 && x < s - 1 && y < s - 1 && wall[(x + y * s) as usize]
    };
    wall[(x + y * s) as usize] = false;
    let mut last = (x, y);
    for _ in 0..size * size {
        let mut moved = false;
        for _ in 0..2 {
            // Two steps ahead must be carvable and leave a wall between turns.
            if open(&wall, x + 2 * dx, y + 2 * dy) && open(&wall, x + dx, y + dy) {
                wall[(x + dx + (y + dy) * s) as usize] = false;
                wall[(x + 2 * dx + (y + 2 * dy) * s) as usize] = false;
                x += 2 * dx;
                y += 2 * dy;
                moved = true;
                break;
            }
            (dx, dy) = (-dy, dx);
        }
        if !moved {
            break;
        }
        last = (x, y);
    }
    let img = image(
        [size, size, 1],
        ch,
        |i| {
            if wall[i / ch] {
                0.0
            } else {
                255.0
            }
        },
    );
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[(last.0 + last.1 * s) as usize] = Seed::Foreground;
    seeds.labels[size + 1] = Seed::Background;
    (img, seeds)
}

#[test]
fn a_spiral_corridor_matches_the_host() {
    if !gpu_or_skip() {
        return;
    }
    // Crossing a wall costs far more than following the corridor to the end.
    let steep = SpatialPrior {
        weight: 1.0,
        contrast: 500.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    for (size, ch) in [(31, 1), (63, 3), (241, 1)] {
        let passes = {
            let (img, seeds) = spiral(size, ch);
            let what = format!("spiral {size}x{size}x{ch}");
            compare(&what, &img, &seeds, &steep, ColorSpace::AsIs)
        };
        // About a pass per turn or two: the small and middle spirals (about 30 and 60 turns)
        // converge on the device; the large one (about 240) may hand over to the host, with
        // the same result.
        if size <= 63 {
            assert!(
                (2..MAX_DEVICE_PASSES).contains(&passes),
                "spiral {size}: {passes} passes"
            );
        }
    }
}

#[test]
fn dev_photos_match_the_host() {
    if !gpu_or_skip() {
        return;
    }
    for (id, image, seeds) in common::dev_photos().iter().take(8) {
        let img = load_image(image).unwrap();
        let seeds = load_seeds(seeds, img.dims, &Default::default()).unwrap();
        let passes = compare(id, &img, &seeds, &PRIORS[0], ColorSpace::Lab);
        assert!(
            passes > 0,
            "{id}: the photo's prior did not run on the device"
        );
    }
}

/// A maze ([`test_maze::maze_open`], the generator the CPU emulation's tests use) in a grid
/// that is no multiple of the strips: the shortest paths turn at every cell and cross strip
/// edges in every direction.
fn maze(cells: [usize; 2], seed: u64) -> (Image, Seeds) {
    let mut rng = Rng::new(seed);
    let (w, h, open) = test_maze::maze_open(cells, |k| rng.below(k as u64) as usize);
    let img = image([w, h, 1], 1, |i| if open[i] { 255.0 } else { 0.0 });
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[w + 1] = Seed::Foreground;
    seeds.labels[(w - 2) + w * (h - 2)] = Seed::Background;
    (img, seeds)
}

#[test]
fn mazes_match_the_host() {
    if !gpu_or_skip() {
        return;
    }
    let steep = SpatialPrior {
        weight: 1.0,
        contrast: 500.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    // The last two have axes the device cuts into segments (more than 128 steps).
    for (cells, seed) in [
        ([20, 17], 7),
        ([50, 9], 8),
        ([8, 60], 9),
        ([150, 12], 10),
        ([9, 110], 12),
    ] {
        let (img, seeds) = maze(cells, seed);
        let what = format!("maze {:?}", img.dims);
        let passes = compare(&what, &img, &seeds, &steep, ColorSpace::AsIs);
        // The paths wind: many passes, all of them on the device.
        assert!(passes > 4, "{what}: {passes} passes");
        // A gentler contrast and a float image: the same fixed point within the tolerance.
        let soft = image(img.dims, 1, |i| img.data[i] / 97.0 + (i % 3) as f32 * 0.01);
        compare(
            &format!("{what} float"),
            &soft,
            &seeds,
            &PRIORS[0],
            ColorSpace::AsIs,
        );
    }
}

#[test]
fn a_volume_maze_of_slices_matches_the_host() {
    if !gpu_or_skip() {
        return;
    }
    // Four slices of mazes stacked (walls shared), the seeds on the first and last: the
    // paths run through every axis, across the 3D sweeps' neighbouring strips.
    let (a, seeds2) = maze([18, 20], 11);
    let [w, h, _] = a.dims;
    let depth = 4;
    let img = image([w, h, depth], 1, |i| {
        let (p, z) = (i % (w * h), i / (w * h));
        if z % 2 == 0 {
            a.data[p]
        } else {
            a.data[(w * h - 1) - p]
        }
    });
    let mut seeds = Seeds::unknown(img.dims);
    let fg = seeds2
        .labels
        .iter()
        .position(|&l| l == Seed::Foreground)
        .unwrap();
    let bg = seeds2
        .labels
        .iter()
        .position(|&l| l == Seed::Background)
        .unwrap();
    seeds.labels[fg] = Seed::Foreground;
    seeds.labels[bg + (depth - 1) * w * h] = Seed::Background;
    let steep = SpatialPrior {
        weight: 1.0,
        contrast: 500.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    compare("volume maze", &img, &seeds, &steep, ColorSpace::AsIs);
}

/// Scales the device's prior by the strokes' enclosure on the device
/// (`GpuEnergy::scale_prior_by_enclosure`) and checks it against the host's scaling of the same
/// prior brought down: the same `E` and the same scaled prior, bit for bit. On integer-valued
/// images the device's prior is the host's, so `E` is also the host pipeline's. Returns `E`.
fn compare_enclosure(
    what: &str,
    image: &Image,
    seeds: &Seeds,
    prior: &SpatialPrior,
) -> Option<f64> {
    let mut gpu = GpuEnergy::new(
        segcut::cuda::Device::default(),
        image,
        seeds,
        ColorSpace::Lab,
        &energy_options(image),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    gpu.compute_prior(image, seeds, prior)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let before = gpu.prior_host().unwrap();
    // The strokes' coverage, as the pipeline passes it (the coverage factor's input).
    let c = stroke_coverage(seeds);
    let e = gpu
        .scale_prior_by_enclosure(prior, c)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let after = gpu.prior_host().unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let Some(mut want) = before else {
        assert_eq!(e, None, "{what}: an enclosure without a prior");
        assert!(after.is_none(), "{what}");
        return None;
    };
    let e_want = scale_by_enclosure(&mut want, image.dims, prior, c);
    assert_eq!(
        e.map(f64::to_bits),
        e_want.map(f64::to_bits),
        "{what}: device E {e:?}, host E {e_want:?}"
    );
    assert_eq!(
        bits(&after.unwrap()),
        bits(&want),
        "{what}: the scaled priors differ"
    );
    if image.data.iter().all(|v| v.fract() == 0.0) {
        let mut host = prior_costs(image, seeds, prior).unwrap().unwrap();
        let e_host = scale_by_enclosure(&mut host, image.dims, prior, c);
        assert_eq!(
            e.map(f64::to_bits),
            e_host.map(f64::to_bits),
            "{what}: E differs from the host pipeline's"
        );
        assert_eq!(
            bits(&host),
            bits(&want),
            "{what}: the host pipeline's prior differs"
        );
    }
    e
}

/// Random strokes that enclose more or less: background strokes on about `share` of the
/// border, and a few random strokes anywhere (two foreground to one background).
fn enclosing_seeds(dims: [usize; 3], share: f64, rng: &mut Rng) -> Seeds {
    let [w, h, d] = dims;
    let mut s = Seeds::unknown(dims);
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let edge = x == 0 || y == 0 || x + 1 == w || y + 1 == h;
                if edge && rng.unit_f64() < share {
                    s.labels[x + w * (y + h * z)] = Seed::Background;
                }
            }
        }
    }
    let n = s.labels.len();
    for i in 0..4 + n / 200 {
        let p = rng.below(n as u64) as usize;
        s.labels[p] = if i % 3 == 2 {
            Seed::Background
        } else {
            Seed::Foreground
        };
    }
    // Both classes, whatever the draws did.
    s.labels[(w / 2) + w * (h / 2)] = Seed::Foreground;
    s.labels[n - 1] = Seed::Background;
    s
}

#[test]
fn the_enclosure_on_the_device_is_the_hosts() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(2511);
    let mut seen = Vec::new();
    for (case, (dims, ch, levels)) in [
        ([37, 23, 1], 1, Some(255.0)),
        ([64, 48, 1], 3, Some(255.0)),
        ([50, 31, 1], 3, None),
        ([1, 40, 1], 1, Some(255.0)),
        ([40, 1, 1], 3, Some(255.0)),
        ([2, 9, 1], 3, Some(255.0)),
        ([300, 41, 1], 3, Some(255.0)),
        ([13, 11, 7], 1, Some(255.0)),
        ([9, 12, 2], 3, None),
    ]
    .into_iter()
    .enumerate()
    {
        let img = random_image(dims, ch, levels, &mut rng);
        for trial in 0..3 {
            let seeds = enclosing_seeds(dims, [0.0, 0.5, 0.95][trial], &mut rng);
            // With the coverage factor (c₀ 2 %: these strokes cover from about 1 % of the pixels to most).
            for (k, c0) in [(8.0, 0.0), (2.5, 0.0), (0.0, 0.0), (8.0, 0.02), (0.0, 0.02)] {
                let prior = SpatialPrior {
                    enclosure: k,
                    coverage: c0,
                    ..PRIORS[0]
                };
                let what = format!("case {case} {dims:?}x{ch} trial {trial} k {k} c0 {c0}");
                let e = compare_enclosure(&what, &img, &seeds, &prior);
                assert_eq!(e.is_some(), prior.scales(), "{what}");
                seen.extend(e);
            }
        }
    }
    // The cases span the range: strokes that enclose, and strokes that do not.
    let (lo, hi) = seen
        .iter()
        .fold((1.0f64, 0.0f64), |(l, h), &e| (l.min(e), h.max(e)));
    eprintln!("enclosures from {lo} to {hi}");
    assert!(lo < 0.4 && hi > 0.8, "enclosures from {lo} to {hi}");
    // No prior (one class has no hard stroke): nothing to scale.
    let img = image([16, 16, 1], 1, |i| (i % 7) as f32);
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[3] = Seed::Foreground;
    assert_eq!(
        compare_enclosure("one class", &img, &seeds, &PRIORS[0]),
        None
    );
}

#[test]
fn the_enclosure_of_the_dev_photos_is_the_hosts() {
    if !gpu_or_skip() {
        return;
    }
    let prior = SpatialPrior {
        enclosure: 8.0,
        // The coverage factor is below 1 on the dense scribbles (2.9–4.1 % of the pixels).
        coverage: 0.02,
        ..PRIORS[0]
    };
    for (id, image, seeds) in &common::dev_photos() {
        let img = load_image(image).unwrap();
        // Both scribble sets: sparse strokes (E lower) and dense ones.
        let path = seeds.to_string_lossy();
        for set in [path.to_string(), path.replace("scribbles-1", "scribbles-2")] {
            let seeds =
                load_seeds(std::path::Path::new(&set), img.dims, &Default::default()).unwrap();
            let id = format!("{id} {set}");
            let e = compare_enclosure(&id, &img, &seeds, &prior);
            assert!(e.is_some(), "{id}: no enclosure");
            // E from the host's prior (the photos are 8-bit: the device's prior is the host's).
            let host = prior_costs(&img, &seeds, &prior).unwrap().unwrap();
            assert_eq!(e, enclosure(&host, img.dims), "{id}");
        }
    }
}

/// The enclosure's kernels (`prior_enclosure`, `prior_scale`) on a 2D image of many blocks
/// and a volume, small enough for compute-sanitizer (`sanitizer_sized` in the test name
/// filter; the prior's own kernels run first).
#[test]
fn sanitizer_sized_enclosure() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(2533);
    let prior = SpatialPrior {
        enclosure: 8.0,
        ..PRIORS[0]
    };
    for (dims, ch) in [([300, 41, 1], 3), ([13, 11, 7], 1)] {
        let img = random_image(dims, ch, Some(255.0), &mut rng);
        let seeds = enclosing_seeds(dims, 0.7, &mut rng);
        let what = format!("{dims:?}x{ch}");
        assert!(
            compare_enclosure(&what, &img, &seeds, &prior).is_some(),
            "{what}"
        );
    }
}
