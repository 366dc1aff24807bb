//! The colour models' samples gathered on the device (`segment::gpu_model`) against a plain
//! host gather (every class pixel of the working image in pixel order, every
//! `⌈count / MAX_FIT_SAMPLES⌉`-th for a mixture), and the models fitted from them against the
//! host's fit: the same samples (up to the last bit of a Lab value); a mixture is fitted on the
//! device (`model_fit`), whose sums run in another order and whose `exp`/`ln` are the device's,
//! so its parameters agree with the host fit's within `FIT_TOLERANCE` on the same samples and
//! `PARAM_TOLERANCE` where a Lab value differed; a warm refit (`refit-steps`) from those models
//! likewise; histograms (fitted on the host from the device's samples) are the same bits. Random
//! images (grey and RGB, integer and fractional, as-is and Lab, sizes that split into many
//! chunks), random masks and seeds, and the dev photos. Without a usable GPU each test says so
//! and returns, unless `SEGCUT_REQUIRE_GPU=1` is set (on the GPU machine): then it fails.

mod common;

use common::gpu_or_skip;
use segcut::io::{load_image, load_seeds};
use segcut::rng::Rng;
use segcut::segment::color::{to_color_space, ColorSpace};
use segcut::segment::energy::EnergyOptions;
use segcut::segment::gpu::GpuEnergy;
use segcut::segment::gpu_model::FitLabels;
use segcut::segment::model::{Model, ModelKind, Warm, MAX_FIT_SAMPLES};
use segcut::segment::{Image, Seed, Seeds};

/// Largest relative difference of a model parameter where a sample differed in its last bit
/// (the device's Lab).
const PARAM_TOLERANCE: f64 = 1e-4;

/// Largest relative difference of a device-fitted mixture's parameter from the host fit's on
/// the same samples: the sums' order and the device's `exp`/`ln` move only the last bits of
/// each step, and EM does not amplify them.
const FIT_TOLERANCE: f64 = 1e-9;

use common::image_from as image;

/// The host's samples of the pixels `class` selects, in the model's colour space.
fn host_samples(work: &Image, kind: ModelKind, class: impl Fn(usize) -> bool) -> Vec<f32> {
    let pixels: Vec<usize> = (0..work.num_pixels()).filter(|&i| class(i)).collect();
    let step = match kind {
        ModelKind::Gmm { .. } => pixels.len().div_ceil(MAX_FIT_SAMPLES).max(1),
        ModelKind::Histogram { .. } => 1,
    };
    pixels
        .iter()
        .step_by(step)
        .flat_map(|&i| work.pixel(i).to_vec())
        .collect()
}

/// Whether two sample lists agree: bit for bit, or (Lab) within the device's last-bit rounding.
fn same_samples(what: &str, host: &[f32], device: &[f32]) -> bool {
    assert_eq!(host.len(), device.len(), "{what}: sample count");
    let mut exact = true;
    for (i, (&h, &d)) in host.iter().zip(device).enumerate() {
        if h != d {
            exact = false;
            assert!(
                (h - d).abs() <= 1e-5 * h.abs().max(d.abs()).max(1.0),
                "{what}: value {i}: host {h}, device {d}"
            );
        }
    }
    exact
}

fn same_models(what: &str, host: &Model, device: &Model, exact: bool) {
    let tolerance = match (exact, host) {
        (true, Model::Histogram(_)) => 0.0,
        (true, Model::Gmm(_)) => FIT_TOLERANCE,
        (false, _) => PARAM_TOLERANCE,
    };
    let near = |a: f64, b: f64| {
        a == b
            || (a.is_nan() && b.is_nan())
            || (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0)
    };
    match (host, device) {
        (Model::Gmm(h), Model::Gmm(d)) => {
            assert_eq!(h.num_components(), d.num_components(), "{what}: components");
            let mut worst = 0.0f64;
            for (j, (hc, dc)) in h.components().zip(d.components()).enumerate() {
                let hv = std::iter::once(hc.0)
                    .chain(hc.1.iter().copied())
                    .chain(hc.2.iter().copied());
                let dv = std::iter::once(dc.0)
                    .chain(dc.1.iter().copied())
                    .chain(dc.2.iter().copied());
                for (a, b) in hv.zip(dv) {
                    assert!(
                        near(a, b),
                        "{what}: component {j}: host {hc:?}, device {dc:?}"
                    );
                    worst = worst.max((a - b).abs() / a.abs().max(b.abs()).max(1.0));
                }
            }
            eprintln!("{what}: largest relative parameter difference {worst:.1e}");
        }
        (Model::Histogram(_), Model::Histogram(_)) => {
            // Equal samples make equal histograms; compare by their costs on the samples' range.
            for v in [0.0f32, 1.0, 17.0, 100.0, 200.0, 255.0] {
                use segcut::segment::model::ColorModel;
                let x = vec![v; h_dim(host)];
                let (a, b) = (host.neg_log_likelihood(&x), device.neg_log_likelihood(&x));
                assert!(near(a, b), "{what}: histogram cost at {v}: {a} vs {b}");
            }
        }
        _ => panic!("{what}: different model kinds"),
    }
}

fn h_dim(m: &Model) -> usize {
    match m {
        Model::Gmm(g) => g.dim(),
        Model::Histogram(_) => 1,
    }
}

/// One comparison: both labellings (the seeds, and `mask`), host against device.
fn compare(
    what: &str,
    img: &Image,
    seeds: &Seeds,
    mask: &[bool],
    space: ColorSpace,
    kind: ModelKind,
) {
    let work = to_color_space(img, space);
    let opts = EnergyOptions::default();
    let mut gpu = GpuEnergy::new(segcut::cuda::Device::default(), img, seeds, space, &opts)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let params = gpu.params.clone();
    let l = &seeds.labels;
    let by_seeds = [
        host_samples(&work, kind, |i| {
            matches!(l[i], Seed::Foreground | Seed::ProbablyForeground)
        }),
        host_samples(&work, kind, |i| {
            matches!(l[i], Seed::Background | Seed::ProbablyBackground)
        }),
    ];
    let by_mask = [
        host_samples(&work, kind, |i| mask[i]),
        host_samples(&work, kind, |i| !mask[i]),
    ];
    for (labels, host, name) in [
        (FitLabels::Seeds, by_seeds, "seeds"),
        (FitLabels::Mask(mask), by_mask, "mask"),
    ] {
        let what = format!("{what} by {name}");
        let device = gpu.gather_samples(kind, labels).unwrap();
        let exact = same_samples(&format!("{what} fg"), &host[0], &device.0)
            & same_samples(&format!("{what} bg"), &host[1], &device.1);
        if host[0].is_empty() || host[1].is_empty() {
            assert!(
                gpu.fit(kind, &params, labels, None).is_err(),
                "{what}: a class without samples"
            );
            continue;
        }
        let (df, db) = gpu.fit(kind, &params, labels, None).unwrap();
        let hf = Model::fit(kind, &host[0], &params, "foreground").unwrap();
        let hb = Model::fit(kind, &host[1], &params, "background").unwrap();
        same_models(&format!("{what} fg"), &hf, &df, exact);
        same_models(&format!("{what} bg"), &hb, &db, exact);
        // A later round's warm refit (`refit-steps`), continued from these models on both.
        let (wf, wb) = gpu
            .fit(kind, &params, labels, Some((&(df, db), 2)))
            .unwrap();
        let warm = |m| Some(Warm { from: m, steps: 2 });
        let hwf = Model::refit(kind, &host[0], &params, "foreground", warm(&hf)).unwrap();
        let hwb = Model::refit(kind, &host[1], &params, "background", warm(&hb)).unwrap();
        same_models(&format!("{what} warm fg"), &hwf, &wf, exact);
        same_models(&format!("{what} warm bg"), &hwb, &wb, exact);
        eprintln!(
            "{what}: {} + {} samples, {}",
            host[0].len() / img.channels,
            host[1].len() / img.channels,
            if exact {
                "identical"
            } else {
                "last-bit Lab differences"
            }
        );
    }
}

#[test]
fn random_images_match_the_host() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(22);
    let gmm = ModelKind::Gmm { components: 5 };
    for (case, (dims, ch, levels, kind)) in [
        ([37, 23, 1], 1, Some(255.0), gmm),
        ([64, 48, 1], 3, Some(255.0), gmm),
        ([50, 31, 1], 3, None, gmm),
        ([300, 200, 1], 3, Some(255.0), gmm),
        ([257, 255, 1], 1, None, ModelKind::Gmm { components: 3 }),
        // More pixels than 2048 blocks of one tile: chunks of several tiles.
        ([1001, 600, 1], 3, Some(255.0), gmm),
        (
            [120, 90, 1],
            1,
            Some(255.0),
            ModelKind::Histogram { bins: 16 },
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let img = image(dims, ch, |_| {
            let u = rng.unit_f64() as f32;
            match levels {
                Some(l) => (u * l).round(),
                None => u * 3.7,
            }
        });
        let n = img.num_pixels();
        let mut seeds = Seeds::unknown(dims);
        for p in 0..n {
            seeds.labels[p] = match rng.below(10) {
                0 => Seed::Foreground,
                1 => Seed::Background,
                2 => Seed::ProbablyForeground,
                3 => Seed::ProbablyBackground,
                _ => Seed::Unknown,
            };
        }
        let mask: Vec<bool> = (0..n)
            .map(|p| (p % dims[0]) < dims[0] / 3 || rng.below(7) == 0)
            .collect();
        for space in [ColorSpace::AsIs, ColorSpace::Lab] {
            compare(
                &format!("case {case} {dims:?}x{ch} {space:?}"),
                &img,
                &seeds,
                &mask,
                space,
                kind,
            );
        }
    }
}

#[test]
fn an_empty_class_is_the_hosts_error() {
    if !gpu_or_skip() {
        return;
    }
    let img = image([20, 10, 1], 1, |i| (i % 13) as f32);
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[5] = Seed::Foreground;
    let mask = vec![true; img.num_pixels()];
    compare(
        "no background",
        &img,
        &seeds,
        &mask,
        ColorSpace::AsIs,
        ModelKind::Gmm { components: 5 },
    );
    let mut gpu = GpuEnergy::new(
        segcut::cuda::Device::default(),
        &img,
        &seeds,
        ColorSpace::AsIs,
        &EnergyOptions::default(),
    )
    .unwrap();
    let params = gpu.params.clone();
    let short = vec![true; 3];
    assert!(gpu
        .fit(
            ModelKind::Gmm { components: 5 },
            &params,
            FitLabels::Mask(&short),
            None
        )
        .is_err());
}

#[test]
fn dev_photos_match_the_host() {
    if !gpu_or_skip() {
        return;
    }
    for (id, image, seeds) in common::dev_photos().iter().take(8) {
        let img = load_image(image).unwrap();
        let seeds = load_seeds(seeds, img.dims, &Default::default()).unwrap();
        // A mask like a first cut's: the pixels nearer a foreground scribble's row band.
        let w = img.dims[0];
        let mask: Vec<bool> = (0..img.num_pixels())
            .map(|p| (p % w) > w / 4 && (p % w) < 3 * w / 4)
            .collect();
        compare(
            id,
            &img,
            &seeds,
            &mask,
            ColorSpace::Lab,
            ModelKind::Gmm { components: 5 },
        );
    }
}

/// Mixtures the device fit does not take (more than 16 components) are fitted on the host from
/// the device's samples: the same bits as the host's fit.
#[test]
fn fits_past_the_device_limit_are_the_hosts() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(7);
    let img = image([90, 70, 1], 3, |_| (rng.unit_f64() * 255.0).round() as f32);
    let mut seeds = Seeds::unknown(img.dims);
    for p in 0..img.num_pixels() {
        seeds.labels[p] = [Seed::Foreground, Seed::Background][p % 2];
    }
    let mask: Vec<bool> = (0..img.num_pixels()).map(|p| p % 3 == 0).collect();
    compare(
        "17 components",
        &img,
        &seeds,
        &mask,
        ColorSpace::Lab,
        ModelKind::Gmm { components: 17 },
    );
}

/// Fits started on several energies before any is read back (a pack's refit round), read back
/// in the other order, give the bits each gives alone.
#[test]
fn started_fits_read_back_later_are_the_lone_fits() {
    if !gpu_or_skip() {
        return;
    }
    let kind = ModelKind::Gmm { components: 5 };
    let mut rng = Rng::new(11);
    let mut cases = Vec::new();
    for dims in [[64, 40, 1], [120, 80, 1], [33, 17, 1]] {
        let img = image(dims, 3, |_| (rng.unit_f64() * 255.0).round() as f32);
        let seeds = Seeds::unknown(img.dims);
        let mask: Vec<bool> = (0..img.num_pixels()).map(|_| rng.below(3) == 0).collect();
        let gpu = GpuEnergy::new(
            segcut::cuda::Device::default(),
            &img,
            &seeds,
            ColorSpace::Lab,
            &EnergyOptions::default(),
        )
        .unwrap();
        cases.push((gpu, mask));
    }
    let alone: Vec<(Model, Model)> = cases
        .iter_mut()
        .map(|(g, m)| {
            let p = g.params.clone();
            g.fit(kind, &p, FitLabels::Mask(m), None).unwrap()
        })
        .collect();
    let started: Vec<_> = cases
        .iter_mut()
        .map(|(g, m)| {
            let p = g.params.clone();
            g.fit_start(kind, &p, FitLabels::Mask(m), None).unwrap()
        })
        .collect();
    for (((g, _), s), a) in cases.iter_mut().zip(started).zip(&alone).rev() {
        let p = g.params.clone();
        let (f, b) = g.fit_finish(kind, &p, s, None).unwrap();
        same_models("started fg", &a.0, &f, true);
        same_models("started bg", &a.1, &b, true);
        // Deterministic: the same launch gives the same bits.
        for (x, y) in [(&a.0, &f), (&a.1, &b)] {
            let (Model::Gmm(x), Model::Gmm(y)) = (x, y) else {
                panic!("not mixtures")
            };
            assert!(x
                .components()
                .zip(y.components())
                .all(|(p, q)| p.0 == q.0 && p.1 == q.1 && p.2 == q.2));
        }
    }
}

/// Classes of one colour, and of fewer colours than components (the fit uses as many components
/// as there are distinct samples), and a one-pixel class: the host's models.
#[test]
fn flat_and_few_colour_classes_fit_like_the_host() {
    if !gpu_or_skip() {
        return;
    }
    for (what, ch, colours) in [
        ("flat grey", 1, 1usize),
        ("flat rgb", 3, 1),
        ("three grey levels", 1, 3),
        ("two rgb colours", 3, 2),
    ] {
        let img = image([40, 30, 1], ch, |i| {
            let pixel = i / ch;
            ((pixel % colours) * 60 + (i % ch) * 7) as f32
        });
        let mut seeds = Seeds::unknown(img.dims);
        seeds.labels[0] = Seed::Foreground;
        for p in 1..img.num_pixels() {
            seeds.labels[p] = if p % 2 == 0 {
                Seed::Foreground
            } else {
                Seed::Background
            };
        }
        let mut mask = vec![false; img.num_pixels()];
        mask[7] = true;
        compare(
            what,
            &img,
            &seeds,
            &mask,
            ColorSpace::AsIs,
            ModelKind::Gmm { components: 5 },
        );
    }
}
