//! Unit-level checks of the colour models, the energy graph and the pipeline's errors.

use segcut::graph::{Connectivity, FlowNetwork};
use segcut::maxflow::{bk::Bk, verify, Solver};
use segcut::rng::Rng;
use segcut::segment::energy::{beta, build_graph, build_nlinks, EnergyOptions};
use segcut::segment::eval::{score, GroundTruth};
use segcut::segment::model::{ColorModel, Gmm, Histogram, Model, ModelKind, ModelParams};
use segcut::segment::{segment, Image, Seed, Seeds, SegmentOptions};
use segcut::Error;

fn grey(w: usize, h: usize, d: usize, mut f: impl FnMut(usize, usize, usize) -> f32) -> Image {
    let mut data = Vec::with_capacity(w * h * d);
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                data.push(f(x, y, z));
            }
        }
    }
    Image {
        dims: [w, h, d],
        channels: 1,
        data,
        spacing: [1.0; 3],
        meta: Default::default(),
    }
}

fn fit(kind: ModelKind, samples: &[f32], image: &Image, class: &str) -> Model {
    let params = ModelParams::from_image(&image.data, image.channels);
    Model::fit(kind, samples, &params, class).unwrap()
}

const GMM1: ModelKind = ModelKind::Gmm { components: 1 };

#[test]
fn beta_matches_the_formula_on_a_tiny_image() {
    // 2x2 image [0 1; 3 7], N4 pairs: (0,1) (3,7) horizontal, (0,3) (1,7) vertical.
    let img = grey(2, 2, 1, |x, y, _| [[0.0, 1.0], [3.0, 7.0]][y][x]);
    let diffs = [1.0f64, 16.0, 9.0, 36.0];
    let mean = diffs.iter().sum::<f64>() / 4.0;
    let b = beta(&img, Connectivity::N4, None);
    assert!((b - 1.0 / (2.0 * mean)).abs() < 1e-12, "beta {b}");
    // N8 adds the diagonals (0,7) and (1,3).
    let mean8 = (diffs.iter().sum::<f64>() + 49.0 + 4.0) / 6.0;
    assert!((beta(&img, Connectivity::N8, None) - 1.0 / (2.0 * mean8)).abs() < 1e-12);
    assert_eq!(beta(&img, Connectivity::N4, Some(2.0)), 1.0 / 8.0);
    // A flat image has no contrast: β = 0, not infinity.
    assert_eq!(
        beta(&grey(3, 3, 1, |_, _, _| 5.0), Connectivity::N8, None),
        0.0
    );
}

#[test]
fn nlinks_follow_lambda_exp_over_distance() {
    let img = grey(5, 4, 1, |x, y, _| (x * 7 + y * 13) as f32);
    let opts = EnergyOptions {
        connectivity: Connectivity::N8,
        lambda: 10.0,
        sigma: Some(20.0),
        scale: Some(100.0),
    };
    let e = build_nlinks(&img, &opts).unwrap();
    let g = &e.graph;
    for d in 0..8 {
        let off = Connectivity::N8.offsets()[d];
        let dist = ((off[0] * off[0] + off[1] * off[1]) as f64).sqrt();
        for v in 0..g.num_nodes() {
            match g.neighbor(v, d) {
                None => assert_eq!(g.caps(d)[v], 0),
                Some(q) => {
                    let d2 = (img.data[v] - img.data[q]).powi(2) as f64;
                    let want = 100.0 * 10.0 * (-d2 / 800.0).exp() / dist;
                    assert!((g.caps(d)[v] as f64 - want).abs() <= 1.0, "{v} {d}");
                    // Symmetric: the reverse arc has the same capacity.
                    assert_eq!(g.caps(d)[v], g.caps(d ^ 1)[q]);
                }
            }
        }
    }
    g.validate().unwrap();
}

#[test]
fn hard_capacity_exceeds_every_nlink_sum_and_seeds_land_on_their_side() {
    // Random image, seeds placed against the colour evidence: they must still win.
    let mut rng = Rng::new(3);
    let mut img = grey(9, 7, 1, |_, _, _| rng.below(256) as f32);
    img.data[0] = 0.0; // the soft seed below: its colour says background
    let mut seeds = Seeds::unknown(img.dims);
    let fg_model = fit(GMM1, &[250.0, 240.0], &img, "foreground");
    let bg_model = fit(GMM1, &[5.0, 10.0], &img, "background");
    // The darkest pixel becomes a foreground seed, the brightest a background seed.
    let dark = (1..63)
        .min_by(|&a, &b| img.data[a].total_cmp(&img.data[b]))
        .unwrap();
    let bright = (1..63)
        .max_by(|&a, &b| img.data[a].total_cmp(&img.data[b]))
        .unwrap();
    seeds.labels[dark] = Seed::Foreground;
    seeds.labels[bright] = Seed::Background;
    seeds.labels[0] = Seed::ProbablyForeground; // soft: no hard capacity
    let e = build_graph(
        &img,
        &seeds,
        &fg_model,
        &bg_model,
        &EnergyOptions::default(),
    )
    .unwrap();
    let g = &e.graph;
    for v in 0..g.num_nodes() {
        let sum: i64 = (0..8).map(|d| g.caps(d)[v] as i64).sum();
        assert!(
            (e.hard as i64) > sum,
            "K {} <= n-link sum {sum} at {v}",
            e.hard
        );
        assert!(g.source_caps()[v] <= e.hard && g.sink_caps()[v] <= e.hard);
    }
    assert_eq!((g.source_caps()[dark], g.sink_caps()[dark]), (e.hard, 0));
    assert_eq!(
        (g.source_caps()[bright], g.sink_caps()[bright]),
        (0, e.hard)
    );
    // A soft seed gets exactly the t-links of an unlabelled pixel.
    let mut unlabelled = seeds.clone();
    unlabelled.labels[0] = Seed::Unknown;
    let u = build_graph(
        &img,
        &unlabelled,
        &fg_model,
        &bg_model,
        &EnergyOptions::default(),
    )
    .unwrap();
    assert_eq!(
        (g.source_caps()[0], g.sink_caps()[0]),
        (u.graph.source_caps()[0], u.graph.sink_caps()[0])
    );
    assert!(g.source_caps()[0] == 0 && g.sink_caps()[0] > 0);
    let cut = Bk::default().solve_grid(g).unwrap();
    verify(g, &cut).unwrap();
    assert!(
        !cut.sink_side[dark],
        "foreground seed must be on the source side"
    );
    assert!(
        cut.sink_side[bright],
        "background seed must be on the sink side"
    );
}

#[test]
fn tlinks_are_the_net_model_costs() {
    let img = grey(4, 1, 1, |x, _, _| [0.0, 90.0, 160.0, 255.0][x]);
    let seeds = Seeds::unknown(img.dims);
    let fg = fit(GMM1, &[250.0, 255.0, 245.0], &img, "foreground");
    let bg = fit(GMM1, &[0.0, 5.0, 10.0], &img, "background");
    let opts = EnergyOptions {
        lambda: 0.5,
        ..Default::default()
    };
    let e = build_graph(&img, &seeds, &fg, &bg, &opts).unwrap();
    for v in 0..4 {
        let px = [img.data[v]];
        let net = (bg.neg_log_likelihood(&px) - fg.neg_log_likelihood(&px)) * e.scale;
        let net = net.clamp(-(e.hard as f64), e.hard as f64);
        let (s, t) = (
            e.graph.source_caps()[v] as f64,
            e.graph.sink_caps()[v] as f64,
        );
        assert!((s - t - net).abs() <= 1.0, "pixel {v}: ({s}, {t}) vs {net}");
        assert!(s == 0.0 || t == 0.0);
    }
    // Dark pixels prefer the background (sink arc), bright ones the foreground (source arc).
    assert!(e.graph.sink_caps()[0] > 0 && e.graph.source_caps()[3] > 0);
}

#[test]
fn spacing_changes_the_nlink_ratio() {
    let mut img = grey(4, 4, 3, |x, y, z| (x + 2 * y + 3 * z) as f32);
    let opts = EnergyOptions {
        connectivity: Connectivity::N6,
        lambda: 10.0,
        sigma: Some(1e6), // contrast term ≈ 1: capacities are λ·scale/dist
        scale: Some(1000.0),
    };
    let iso = build_nlinks(&img, &opts).unwrap();
    let v = iso.graph.index(1, 1, 1);
    assert_eq!(iso.graph.caps(0)[v], iso.graph.caps(4)[v]);
    img.spacing = [0.5, 0.5, 2.0];
    let aniso = build_nlinks(&img, &opts).unwrap();
    let (x, z) = (aniso.graph.caps(0)[v] as f64, aniso.graph.caps(4)[v] as f64);
    // dist normalised by the smallest spacing: x at 1, z at 4.
    assert!((x / z - 4.0).abs() < 1e-2, "x {x} z {z}");
    assert!((x - 10_000.0).abs() <= 1.0);
}

#[test]
fn quantisation_overflow_is_an_error_not_a_wrap() {
    let img = grey(3, 3, 1, |x, _, _| x as f32);
    let opts = EnergyOptions {
        lambda: 1e6,
        scale: Some(1e4),
        ..Default::default()
    };
    match build_nlinks(&img, &opts) {
        Err(Error::Overflow(msg)) => assert!(msg.contains("lambda"), "{msg}"),
        other => panic!("expected an overflow error, got {other:?}"),
    }
    // The automatic scale fits the same λ by lowering the resolution.
    let auto = build_nlinks(
        &img,
        &EnergyOptions {
            lambda: 1e6,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(auto.scale < 1024.0 && auto.hard > 0);
    auto.graph.validate().unwrap();
    // Bad numbers are refused.
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        let o = EnergyOptions {
            lambda: bad,
            ..Default::default()
        };
        assert!(build_nlinks(&img, &o).is_err());
    }
}

#[test]
fn non_finite_pixels_and_mismatched_seeds_are_errors() {
    let mut img = grey(4, 3, 1, |_, _, _| 1.0);
    img.data[6] = f32::NAN;
    let err = build_nlinks(&img, &EnergyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("x=2, y=1"), "{err}");
    let img = grey(4, 3, 1, |x, _, _| x as f32);
    let seeds = Seeds::unknown([3, 4, 1]);
    let err = segment(&img, &seeds, &SegmentOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("3x4x1") && err.contains("4x3x1"), "{err}");
}

#[test]
fn missing_seed_classes_are_errors_with_counts() {
    let img = grey(4, 3, 1, |x, _, _| x as f32);
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[0] = Seed::Background;
    seeds.labels[1] = Seed::Background;
    let err = segment(&img, &seeds, &SegmentOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no foreground seeds") && err.contains("2 background"),
        "{err}"
    );
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[5] = Seed::Foreground;
    let err = segment(&img, &seeds, &SegmentOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no background seeds") && err.contains("1 foreground"),
        "{err}"
    );
}

#[test]
fn model_errors_name_the_class() {
    let img = grey(2, 2, 1, |x, _, _| x as f32);
    let params = ModelParams::from_image(&img.data, 1);
    let err = Model::fit(GMM1, &[], &params, "background")
        .unwrap_err()
        .to_string();
    assert!(err.contains("background"), "{err}");
    let err = Model::fit(
        ModelKind::Gmm { components: 0 },
        &[1.0],
        &params,
        "foreground",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("foreground"), "{err}");
    let params3 = ModelParams::from_image(&[0.0, 0.0, 0.0], 3);
    let err = Model::fit(
        ModelKind::Histogram { bins: 1 << 10 },
        &[1.0, 2.0, 3.0],
        &params3,
        "foreground",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("foreground") && err.contains("bins"), "{err}");
}

#[test]
fn gmm_recovers_two_clusters() {
    let mut rng = Rng::new(11);
    let centres = [[40.0, 200.0, 90.0], [210.0, 30.0, 120.0]];
    let mut samples = Vec::new();
    for i in 0..3000 {
        let c = centres[(i % 3 == 0) as usize]; // 2:1 mixture
        for &m in &c {
            samples.push((m + 6.0 * rng.normal()) as f32);
        }
    }
    let gmm = Gmm::fit(&samples, 3, 2, 1e-3).unwrap();
    assert_eq!(gmm.num_components(), 2);
    let means = gmm.means();
    let weights = gmm.weights();
    for (c, want_w) in centres.iter().zip([2.0 / 3.0, 1.0 / 3.0]) {
        let j = (0..2)
            .min_by(|&a, &b| dist(&means[a], c).total_cmp(&dist(&means[b], c)))
            .unwrap();
        assert!(dist(&means[j], c) < 1.5, "mean {:?} vs {c:?}", means[j]);
        assert!((weights[j] - want_w).abs() < 0.03, "weight {}", weights[j]);
    }
    // Density is highest near the centres.
    let near = gmm.neg_log_likelihood(&[40.0, 200.0, 90.0]);
    let between = gmm.neg_log_likelihood(&[125.0, 115.0, 105.0]);
    assert!(near + 20.0 < between);
}

fn dist(a: &[f64], b: &[f64; 3]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn degenerate_classes_still_fit() {
    // A single pixel and a flat colour: fewer components, finite costs everywhere.
    let g = Gmm::fit(&[7.0, 7.0, 7.0], 3, 5, 0.5).unwrap();
    assert_eq!(g.num_components(), 1);
    assert!(g.neg_log_likelihood(&[7.0, 7.0, 7.0]).is_finite());
    assert!(g.neg_log_likelihood(&[255.0, 0.0, 0.0]).is_finite());
    let flat: Vec<f32> = [3.0, 3.0, 9.0].repeat(100);
    let g = Gmm::fit(&flat, 1, 5, 0.5).unwrap();
    assert_eq!(g.num_components(), 2);
    assert!(g.neg_log_likelihood(&[3.0]) < g.neg_log_likelihood(&[6.0]));
}

#[test]
fn histogram_prefers_seen_colours() {
    let range = [[0.0f32, 255.0]; 3];
    let samples: Vec<f32> = [10.0, 20.0, 30.0].repeat(50);
    let h = Histogram::fit(&samples, &range, 8, "foreground").unwrap();
    let seen = h.neg_log_likelihood(&[12.0, 22.0, 28.0]);
    let unseen = h.neg_log_likelihood(&[200.0, 200.0, 200.0]);
    assert!(
        seen.is_finite() && unseen.is_finite() && seen + 3.0 < unseen,
        "{seen} {unseen}"
    );
}

#[test]
fn segmentation_is_deterministic_and_follows_the_seeds() {
    // Two noisy colour regions split by a vertical edge.
    let (w, h) = (40, 30);
    let img = two_colours(w, h, 5, 15.0, |x, _| x < 22);
    let mut seeds = Seeds::unknown(img.dims);
    for y in 10..20 {
        seeds.labels[y * w + 5] = Seed::Foreground;
        seeds.labels[y * w + 35] = Seed::Background;
    }
    let opts = SegmentOptions {
        keep_graph: true,
        ..Default::default()
    };
    let a = segment(&img, &seeds, &opts).unwrap();
    let b = segment(&img, &seeds, &opts).unwrap();
    assert_eq!(a.mask, b.mask);
    assert_eq!(a.flow, b.flow);
    assert!(a.verified);
    let gt = GroundTruth {
        dims: img.dims,
        values: (0..w * h)
            .map(|i| if i % w < 22 { 255 } else { 0 })
            .collect(),
    };
    let s = score(&a.mask, &gt).unwrap();
    assert!(s.error_rate < 2.0, "error {}", s.error_rate);
    // The kept graph's cut of the mask has the reported flow as its capacity.
    let g = a.graph.as_ref().unwrap();
    let sink: Vec<bool> = a.mask.iter().map(|&m| !m).collect();
    assert_eq!(g.cut_capacity(&sink), a.flow as i128);
    assert_eq!(a.stats.seed_counts[1], 10);
    assert!(a.stats.iterations_run() >= 1 && a.stats.iterations_run() <= 5);
}

#[test]
fn volumes_use_3d_connectivity() {
    let img = grey(6, 5, 4, |x, _, _| if x < 3 { 10.0 } else { 200.0 });
    let mut seeds = Seeds::unknown(img.dims);
    seeds.labels[0] = Seed::Foreground;
    seeds.labels[img.num_pixels() - 1] = Seed::Background;
    let seg = segment(&img, &seeds, &SegmentOptions::default()).unwrap();
    assert_eq!(seg.stats.connectivity, Connectivity::N6);
    let fg = seg.mask.iter().enumerate().filter(|(_, &m)| m).count();
    assert_eq!(fg, 3 * 5 * 4);
    let opts = SegmentOptions {
        connectivity: Some(Connectivity::N8),
        ..Default::default()
    };
    assert!(segment(&img, &seeds, &opts).is_err());
}

#[test]
fn grey_cost_table_matches_direct_evaluation() {
    // Large enough for the tabulated path; integer values (exact nodes), then fractional ones.
    let mut rng = Rng::new(9);
    for divisor in [1.0f32, 7.3] {
        let img = grey(600, 450, 1, |_, _, _| rng.below(4000) as f32 / divisor);
        let seeds = Seeds::unknown(img.dims);
        let lo: Vec<f32> = img
            .data
            .iter()
            .copied()
            .filter(|&v| v < 1000.0 / divisor)
            .take(500)
            .collect();
        let hi: Vec<f32> = img
            .data
            .iter()
            .copied()
            .filter(|&v| v > 2500.0 / divisor)
            .take(500)
            .collect();
        let kind = ModelKind::Gmm { components: 3 };
        let fg = fit(kind, &hi, &img, "foreground");
        let bg = fit(kind, &lo, &img, "background");
        let opts = EnergyOptions {
            lambda: 1.0,
            ..Default::default()
        };
        let e = build_graph(&img, &seeds, &fg, &bg, &opts).unwrap();
        for v in (0..img.num_pixels()).step_by(997) {
            let px = [img.data[v]];
            let net = (bg.neg_log_likelihood(&px) - fg.neg_log_likelihood(&px)) * e.scale;
            let net = net.clamp(-(e.hard as f64), e.hard as f64);
            let got = (e.graph.source_caps()[v] - e.graph.sink_caps()[v]) as f64;
            let tol = if divisor == 1.0 { 0.5 } else { 2.0 };
            assert!(
                (got - net).abs() <= tol,
                "pixel {v} value {}: {got} vs {net}",
                px[0]
            );
        }
    }
}

#[test]
fn one_component_gmm_is_the_regularised_gaussian() {
    // Against the closed form: biased sample covariance plus the floor, 3x3 inverse by cofactors.
    let mut rng = Rng::new(21);
    let mut samples = Vec::new();
    for _ in 0..500 {
        let (a, b, c) = (rng.normal(), rng.normal(), rng.normal());
        samples.extend([
            (50.0 + 9.0 * a) as f32,
            (80.0 + 4.0 * a + 3.0 * b) as f32,
            (20.0 + c) as f32,
        ]);
    }
    let floor = 0.7;
    let g = Gmm::fit(&samples, 3, 1, floor).unwrap();
    let n = 500.0;
    let xs: Vec<[f64; 3]> = samples
        .chunks(3)
        .map(|p| [p[0] as f64, p[1] as f64, p[2] as f64])
        .collect();
    let mut m = [0.0; 3];
    for x in &xs {
        for i in 0..3 {
            m[i] += x[i] / n;
        }
    }
    let mut s = [[0.0; 3]; 3];
    for x in &xs {
        for i in 0..3 {
            for j in 0..3 {
                s[i][j] += (x[i] - m[i]) * (x[j] - m[j]) / n;
            }
        }
    }
    for (i, row) in s.iter_mut().enumerate() {
        row[i] += floor;
    }
    let det = s[0][0] * (s[1][1] * s[2][2] - s[1][2] * s[2][1])
        - s[0][1] * (s[1][0] * s[2][2] - s[1][2] * s[2][0])
        + s[0][2] * (s[1][0] * s[2][1] - s[1][1] * s[2][0]);
    let cof = |i: usize, j: usize| {
        let r: Vec<usize> = (0..3).filter(|&k| k != j).collect();
        let c: Vec<usize> = (0..3).filter(|&k| k != i).collect();
        let minor = s[r[0]][c[0]] * s[r[1]][c[1]] - s[r[0]][c[1]] * s[r[1]][c[0]];
        if (i + j).is_multiple_of(2) {
            minor
        } else {
            -minor
        }
    };
    for probe in [
        [50.0f32, 80.0, 20.0],
        [70.0, 70.0, 25.0],
        [10.0, 200.0, 0.0],
    ] {
        let d: Vec<f64> = (0..3).map(|i| probe[i] as f64 - m[i]).collect();
        let mut maha = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                maha += d[i] * cof(i, j) / det * d[j];
            }
        }
        let want = 0.5 * (3.0 * (2.0 * std::f64::consts::PI).ln() + det.ln() + maha);
        let got = g.neg_log_likelihood(&probe);
        assert!(
            (got - want).abs() < 1e-6 * want.abs().max(1.0),
            "{probe:?}: {got} vs {want}"
        );
    }
}

// ---- stroke-geometry prior, outlier component, post-processing, probability maps, folds ----

use segcut::segment::cv::{cross_validate, folds};
use segcut::segment::post::{post_process, PostProcess};
use segcut::segment::prior::{prior_costs, SpatialPrior};
use segcut::segment::unary::segment_probability;

/// Dijkstra on the 8-neighbour grid with the prior's step lengths: the exact geodesic distance
/// the raster scans approximate (they may only be longer, never shorter).
fn dijkstra(image: &Image, seeds: &Seeds, class: Seed, kappa: f64) -> Vec<f64> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let [w, h, _] = image.dims;
    let ch = image.channels;
    let n = w * h;
    // σ² = mean squared difference over all 8-neighbour pairs, each once.
    let (mut sum, mut count) = (0.0f64, 0u64);
    for y in 0..h {
        for x in 0..w {
            for (dx, dy) in [(1i64, 0i64), (0, 1), (1, 1), (1, -1)] {
                let (qx, qy) = (x as i64 + dx, y as i64 + dy);
                if qx < 0 || qy < 0 || qx >= w as i64 || qy >= h as i64 {
                    continue;
                }
                let (p, q) = (x + w * y, qx as usize + w * qy as usize);
                let d2: f64 = (0..ch)
                    .map(|c| {
                        (image.data[p * ch + c] as f64 - image.data[q * ch + c] as f64).powi(2)
                    })
                    .sum();
                sum += d2;
                count += 1;
            }
        }
    }
    let colour = if sum > 0.0 {
        kappa * kappa * count as f64 / sum
    } else {
        0.0
    };
    let mut dist = vec![f64::INFINITY; n];
    let mut heap = BinaryHeap::new();
    for (i, &s) in seeds.labels.iter().enumerate() {
        if s == class {
            dist[i] = 0.0;
            heap.push(Reverse((0u64, i)));
        }
    }
    // Distances as fixed-point keys for the heap; the values are kept in f64.
    while let Some(Reverse((_, p))) = heap.pop() {
        let (x, y) = ((p % w) as i64, (p / w) as i64);
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let (qx, qy) = (x + dx, y + dy);
                if (dx == 0 && dy == 0) || qx < 0 || qy < 0 || qx >= w as i64 || qy >= h as i64 {
                    continue;
                }
                let q = qx as usize + w * qy as usize;
                let c2: f64 = (0..ch)
                    .map(|c| {
                        (image.data[p * ch + c] as f64 - image.data[q * ch + c] as f64).powi(2)
                    })
                    .sum();
                let step = ((dx * dx + dy * dy) as f64 + colour * c2).sqrt();
                if dist[p] + step < dist[q] - 1e-12 {
                    dist[q] = dist[p] + step;
                    heap.push(Reverse(((dist[q] * 1e6) as u64, q)));
                }
            }
        }
    }
    dist
}

/// A 40×30 image with a bright disc (the "object") and a bright bar far away that only an edge
/// separates from the dark background; a foreground stroke in the disc, a background stroke
/// beside the bar (where a user would draw it: on the background next to what is not wanted).
fn disc_and_bar() -> (Image, Seeds) {
    let (w, h) = (40, 30);
    let image = grey(w, h, 1, |x, y, _| {
        let disc = (x as f32 - 12.0).powi(2) + (y as f32 - 15.0).powi(2) < 36.0;
        let bar = (30..36).contains(&x);
        if disc || bar {
            200.0
        } else {
            40.0 + ((x * 7 + y * 3) % 5) as f32
        }
    });
    let mut seeds = Seeds::unknown(image.dims);
    for y in 13..18 {
        seeds.labels[12 + w * y] = Seed::Foreground;
    }
    for y in 5..25 {
        seeds.labels[38 + w * y] = Seed::Background;
    }
    (image, seeds)
}

#[test]
fn prior_is_the_normalised_geodesic_difference() {
    let (image, seeds) = disc_and_bar();
    for (kappa, softness) in [(0.0, 0.0), (3.0, 0.0), (3.0, 0.1)] {
        let p = SpatialPrior {
            weight: 4.0,
            contrast: kappa,
            softness,
            explained: 1.0,
            enclosure: 0.0,
            coverage: 0.0,
        };
        let soft = softness * 50.0; // L = s · the 40×30 image's diagonal
        let delta = prior_costs(&image, &seeds, &p).unwrap().unwrap();
        let df = dijkstra(&image, &seeds, Seed::Foreground, kappa);
        let db = dijkstra(&image, &seeds, Seed::Background, kappa);
        let mut worst = 0.0f64;
        for i in 0..delta.len() {
            let exact = 4.0 * (df[i] - db[i]) / (df[i] + db[i] + soft);
            worst = worst.max((delta[i] as f64 - exact).abs());
            assert!(delta[i].abs() <= 4.0 + 1e-5);
            match seeds.labels[i] {
                Seed::Foreground if softness == 0.0 => assert_eq!(delta[i], -4.0),
                Seed::Background if softness == 0.0 => assert_eq!(delta[i], 4.0),
                _ => {}
            }
        }
        // The sweeps run to the fixed point, which is Dijkstra's distance (here in f64, the
        // library's in f32), whether or not the paths wind around the disc.
        assert!(worst < 1e-4, "kappa {kappa}: largest deviation {worst}");
    }
}

/// A spiral corridor of bright pixels in a dark image: with κ > 0 the walls are expensive, so
/// the shortest path winds around the centre many times, more than the sweep pairs can follow
/// (the library then runs Dijkstra).
fn spiral() -> (Image, Seeds) {
    let (w, h) = (61usize, 61usize);
    let mut wall = vec![true; w * h];
    // Carve a square spiral corridor from the border inwards, walls two pixels apart.
    let (mut x0, mut y0, mut x1, mut y1) = (1i64, 1i64, w as i64 - 2, h as i64 - 2);
    let mut open = |x: i64, y: i64| wall[x as usize + w * y as usize] = false;
    while x0 < x1 && y0 < y1 {
        for x in x0..=x1 {
            open(x, y0);
        }
        for y in y0..=y1 {
            open(x1, y);
        }
        for x in (x0..=x1).rev() {
            open(x, y1);
        }
        for y in (y0 + 2..=y1).rev() {
            open(x0, y);
        }
        open(x0 + 1, y0 + 2);
        x0 += 2;
        y0 += 2;
        x1 -= 2;
        y1 -= 2;
    }
    let image = grey(w, h, 1, |x, y, _| if wall[x + w * y] { 0.0 } else { 250.0 });
    let mut seeds = Seeds::unknown(image.dims);
    seeds.labels[1 + w] = Seed::Foreground;
    seeds.labels[w / 2 + w * (h / 2)] = Seed::Background;
    (image, seeds)
}

#[test]
fn prior_distances_are_exact_where_paths_wind_many_times() {
    let (image, seeds) = spiral();
    // Crossing a wall costs more than going once around the spiral (a ring is < 240 steps),
    // so the paths follow the corridor: 16 sweep pairs would be needed.
    let kappa = 500.0;
    let p = SpatialPrior {
        weight: 1.0,
        contrast: kappa,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    let delta = prior_costs(&image, &seeds, &p).unwrap().unwrap();
    let df = dijkstra(&image, &seeds, Seed::Foreground, kappa);
    let db = dijkstra(&image, &seeds, Seed::Background, kappa);
    let (mut worst, mut far) = (0.0f64, 0.0f64);
    for i in 0..delta.len() {
        let exact = (df[i] - db[i]) / (df[i] + db[i]);
        worst = worst.max((delta[i] as f64 - exact).abs());
        far = far.max(df[i].min(db[i]));
    }
    // The corridor is long against the image: the test needs winding paths to mean anything.
    assert!(far > 600.0, "longest distance {far}");
    assert!(worst < 1e-4, "largest deviation {worst}");
}

#[test]
fn prior_steps_back_on_colours_the_strokes_explain() {
    use segcut::segment::prior::{adapt_to_colours, explained_threshold};
    let (mut image, seeds) = disc_and_bar();
    // A patch of a grey no stroke covers (the strokes see 200 and 40–44).
    let patch = |p: usize| (20..26).contains(&(p % 40)) && p / 40 < 6;
    for p in 0..image.data.len() {
        if patch(p) {
            image.data[p] = 120.0;
        }
    }
    let full = SpatialPrior {
        weight: 10.0,
        contrast: 3.0,
        softness: 0.15,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    let half = SpatialPrior {
        explained: 0.5,
        ..full
    };
    let delta = prior_costs(&image, &seeds, &full).unwrap().unwrap();
    let mut adapted = delta.clone();
    // A model per class, explained up to the 95 % quantile of its own samples' costs.
    let params = ModelParams::from_image(&image.data, 1);
    let class = |c: Seed| -> Vec<f32> {
        (0..image.data.len())
            .filter(|&i| seeds.labels[i] == c)
            .map(|i| image.data[i])
            .collect()
    };
    let (sf, sb) = (class(Seed::Foreground), class(Seed::Background));
    let kind = ModelKind::Gmm { components: 1 };
    let fg = Model::fit(kind, &sf, &params, "fg").unwrap();
    let bg = Model::fit(kind, &sb, &params, "bg").unwrap();
    let (tf, tb) = (
        explained_threshold(&fg, &sf, 1).unwrap(),
        explained_threshold(&bg, &sb, 1).unwrap(),
    );
    // The threshold is a cost of one of the samples, and at least 95 % are at or below it.
    let below = sf
        .iter()
        .filter(|&&x| fg.neg_log_likelihood(&[x]) <= tf)
        .count();
    assert!(below * 100 >= 95 * sf.len() && below < sf.len() + 1);
    let explained = |p: usize| {
        let x = [image.data[p]];
        fg.neg_log_likelihood(&x) <= tf || bg.neg_log_likelihood(&x) <= tb
    };
    adapt_to_colours(&mut adapted, &half, explained);
    let (mut kept, mut halved) = (0, 0);
    for p in 0..delta.len() {
        if explained(p) {
            assert_eq!(adapted[p], delta[p] * 0.5);
            halved += 1;
        } else {
            assert_eq!(adapted[p], delta[p]);
            kept += 1;
        }
    }
    // The disc's and the background's colours are in the strokes, and so is the bar's (the
    // disc's colour): only the patch keeps the full prior.
    assert_eq!(kept, 36, "halved {halved}, kept {kept}");
    assert!((0..delta.len()).all(|p| explained(p) != patch(p)));
    assert!(explained(33 + 40 * 15), "the bar's colour is the disc's");
    // Bad shares are refused.
    for bad in [1.5, -0.1, f64::NAN] {
        let p = SpatialPrior {
            explained: bad,
            ..full
        };
        assert!(prior_costs(&image, &seeds, &p).is_err(), "{bad}");
    }
}

#[test]
fn prior_is_off_without_weight_or_hard_seeds_and_checks_values() {
    let (image, seeds) = disc_and_bar();
    let off = SpatialPrior {
        weight: 0.0,
        contrast: 1.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    assert!(prior_costs(&image, &seeds, &off).unwrap().is_none());
    let mut soft = seeds.clone();
    for s in soft.labels.iter_mut() {
        if *s == Seed::Background {
            *s = Seed::ProbablyBackground;
        }
    }
    let on = SpatialPrior {
        weight: 2.0,
        contrast: 1.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    assert!(prior_costs(&image, &soft, &on).unwrap().is_none());
    let bad = SpatialPrior {
        weight: f64::NAN,
        contrast: 1.0,
        softness: 0.0,
        explained: 1.0,
        enclosure: 0.0,
        coverage: 0.0,
    };
    assert!(matches!(
        prior_costs(&image, &seeds, &bad),
        Err(Error::Input { .. })
    ));
}

#[test]
fn prior_and_outlier_decide_colours_no_stroke_covers() {
    // The bar has the disc's colour but no stroke: the colour models alone call it foreground;
    // with the prior (far from the foreground stroke, behind an edge) it is background.
    let (image, seeds) = disc_and_bar();
    let base = SegmentOptions {
        solver: segcut::maxflow::SolverKind::Bk,
        gpu_build: false,
        iterations: 1,
        lambda: 5.0,
        ..SegmentOptions::default()
    };
    let plain = SegmentOptions {
        prior: SpatialPrior {
            weight: 0.0,
            contrast: 0.0,
            softness: 0.0,
            explained: 1.0,
            enclosure: 0.0,
            coverage: 0.0,
        },
        outlier: 0.0,
        post: PostProcess::default(),
        ..base.clone()
    };
    let bar = 33 + 40 * 15;
    let without = segment(&image, &seeds, &plain).unwrap();
    assert!(without.mask[bar], "colour alone takes the bar");
    let with = SegmentOptions {
        prior: SpatialPrior {
            weight: 30.0,
            contrast: 3.0,
            softness: 0.0,
            explained: 1.0,
            enclosure: 0.0,
            coverage: 0.0,
        },
        outlier: 0.1,
        post: PostProcess::default(),
        ..base.clone()
    };
    let seg = segment(&image, &seeds, &with).unwrap();
    assert!(seg.verified);
    assert!(!seg.mask[bar], "the prior gives the bar to the background");
    assert!(
        seg.mask[12 + 40 * 15] && seg.mask[14 + 40 * 17],
        "the disc stays"
    );
    // The outlier component only changes costs of colours the models do not explain.
    let params = ModelParams::from_image(&image.data, 1);
    let m = fit(
        ModelKind::Gmm { components: 1 },
        &[200.0, 201.0, 199.0],
        &image,
        "fg",
    );
    let b = segcut::segment::model::Blend::new(m.clone(), &m, 0.0).with_outlier(0.1, &params);
    let (near, far) = (
        b.neg_log_likelihood(&[200.0]),
        b.neg_log_likelihood(&[40.0]),
    );
    assert!((near - m.neg_log_likelihood(&[200.0]) - (-(0.9f64).ln())).abs() < 1e-2);
    let floor = -(0.1f64.ln()) + (160.0f64).ln(); // −ln(ε u), u = 1 / (value range)
    assert!((far - floor).abs() < 1e-6 && m.neg_log_likelihood(&[40.0]) > far + 100.0);
}

#[test]
fn post_processing_drops_islands_and_fills_small_holes_only() {
    let (w, h) = (12, 9);
    // A seeded square 2..9 × 1..8 with a 1-pixel hole at (3, 6) and a 3×3 hole 5..8 × 3..6,
    // and an unseeded 2×2 island at 9..11 × 6..8.
    let mask: Vec<bool> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let square = (2..9).contains(&x) && (1..8).contains(&y);
            let hole = (x == 3 && y == 6) || ((5..8).contains(&x) && (3..6).contains(&y));
            let island = (10..12).contains(&x) && (6..8).contains(&y);
            (square && !hole) || island
        })
        .collect();
    let mut seeds = Seeds::unknown([w, h, 1]);
    seeds.labels[2 + w] = Seed::Foreground;
    let fill2 = PostProcess {
        drop_unseeded: true,
        max_hole: 2,
    };
    let (out, changed) = post_process(&mask, &seeds, &fill2).unwrap();
    assert_eq!(changed, 4 + 1);
    assert!(out[3 + 6 * w] && !out[6 + 4 * w] && !out[10 + 6 * w]);
    let fill10 = PostProcess {
        drop_unseeded: false,
        max_hole: 10,
    };
    let (out, changed) = post_process(&mask, &seeds, &fill10).unwrap();
    assert_eq!(changed, 1 + 9);
    assert!(out[6 + 4 * w] && out[10 + 6 * w]);
    // A background seed in a hole keeps it open; no hard foreground seed keeps every component.
    seeds.labels[6 + 4 * w] = Seed::Background;
    assert_eq!(post_process(&mask, &seeds, &fill10).unwrap().1, 1);
    let none = Seeds::unknown([w, h, 1]);
    let drop = PostProcess {
        drop_unseeded: true,
        max_hole: 0,
    };
    assert_eq!(post_process(&mask, &none, &drop).unwrap().1, 0);
    // Volumes keep their cut (imageproc labels 2D images): not processed slice by slice.
    let mut vol = Seeds::unknown([2, 2, 2]);
    vol.labels[0] = Seed::Foreground;
    let island = [true, false, false, false, false, false, false, true];
    assert_eq!(
        post_process(&island, &vol, &drop).unwrap(),
        (island.to_vec(), 0)
    );
}

#[test]
fn probability_cut_is_the_brute_force_minimum() {
    // 4×3 image, random probabilities: the cut's labelling has the lowest energy of all 2^12.
    let mut rng = Rng::new(5);
    let image = grey(4, 3, 1, |x, y, _| ((x * 37 + y * 91) % 200) as f32);
    let prob: Vec<f32> = (0..12).map(|_| rng.below(1001) as f32 / 1000.0).collect();
    let opts = SegmentOptions {
        solver: segcut::maxflow::SolverKind::Bk,
        lambda: 1.5,
        connectivity: Some(Connectivity::N4),
        keep_graph: true,
        post: PostProcess::default(),
        // One cut: a probability map has no colour models to refit.
        ..SegmentOptions::default().for_probability()
    };
    let seg = segment_probability(&image, &prob, None, &opts).unwrap();
    // More rounds are refused, not ignored.
    let rounds = SegmentOptions {
        iterations: 3,
        ..opts.clone()
    };
    let e = segment_probability(&image, &prob, None, &rounds).unwrap_err();
    assert!(e.to_string().contains("iterations"), "{e}");
    let g = seg.graph.as_ref().unwrap();
    let cap = |m: &[bool]| g.cut_capacity(&m.iter().map(|&f| !f).collect::<Vec<_>>());
    let best = (0..1u32 << 12)
        .map(|bits| cap(&(0..12).map(|i| bits >> i & 1 == 1).collect::<Vec<_>>()))
        .min()
        .unwrap();
    assert_eq!(cap(&seg.mask), best);
    assert_eq!(best, seg.flow as i128);
    // Certain pixels cost at most −ln(floor) and stay correctable; NaN is refused.
    let mut bad = prob.clone();
    bad[5] = f32::NAN;
    assert!(segment_probability(&image, &bad, None, &opts).is_err());
}

#[test]
fn folds_keep_a_photo_together_and_are_stable() {
    let photos: Vec<String> = (0..39)
        .flat_map(|i| {
            let p = format!("set/photo{i:02}");
            [p.clone(), p]
        })
        .collect();
    let f = folds(&photos, 5);
    assert_eq!(f, folds(&photos, 5), "deterministic");
    for pair in f.chunks(2) {
        assert_eq!(
            pair[0], pair[1],
            "both scribble sets of a photo in one fold"
        );
    }
    let mut sizes = [0; 5];
    for pair in f.chunks(2) {
        sizes[pair[0]] += 1;
    }
    assert!(sizes.iter().all(|&s| s == 7 || s == 8), "{sizes:?}");
    // A candidate that wins only on one fold's photos is not chosen for that fold.
    let s = |e: f64| {
        score(
            &[e > 0.0],
            &GroundTruth {
                dims: [1, 1, 1],
                values: vec![0],
            },
        )
        .unwrap()
    };
    let scores: Vec<Vec<_>> = (0..photos.len())
        .map(|i| {
            if f[i] == 0 {
                vec![s(1.0), s(0.0)]
            } else {
                vec![s(0.0), s(1.0)]
            }
        })
        .collect();
    let cv = cross_validate(&scores, &f, 5);
    assert_eq!(
        cv.chosen_per_fold[0], 0,
        "fold 0 is scored by what the others prefer"
    );
    assert!(cv
        .held_out
        .iter()
        .enumerate()
        .all(|(i, h)| (h.error_rate > 0.0) == (f[i] == 0)));
}

/// A flat 40×30 grey image with a foreground stroke in the middle and a background stroke
/// either drawn all around it (a ring) or beside it (a short bar to its right).
fn strokes_around_or_beside(around: bool) -> (Image, Seeds) {
    let (w, h) = (40usize, 30usize);
    let image = grey(w, h, 1, |x, y, _| 100.0 + ((x * 3 + y * 5) % 7) as f32);
    let mut seeds = Seeds::unknown(image.dims);
    for x in 18..22 {
        seeds.labels[x + w * 15] = Seed::Foreground;
    }
    for y in 0..h {
        for x in 0..w {
            let (dx, dy) = (x as f32 - 20.0, y as f32 - 15.0);
            let ring = (dx * dx + dy * dy).sqrt();
            let stroke = if around {
                (10.0..11.5).contains(&ring)
            } else {
                x == 30 && (12..18).contains(&y)
            };
            if stroke {
                seeds.labels[x + w * y] = Seed::Background;
            }
        }
    }
    (image, seeds)
}

#[test]
fn enclosure_is_the_border_share_the_background_reaches_first() {
    use segcut::segment::prior::enclosure;
    let prior = SegmentOptions::default().prior;
    let (image, ring) = strokes_around_or_beside(true);
    let delta = prior_costs(&image, &ring, &prior).unwrap().unwrap();
    assert_eq!(enclosure(&delta, image.dims), Some(1.0));
    let (_, bar) = strokes_around_or_beside(false);
    let delta = prior_costs(&image, &bar, &prior).unwrap().unwrap();
    let e = enclosure(&delta, image.dims).unwrap();
    // The bar is nearer the right edge; the left edge and most of the top and bottom are nearer
    // the foreground stroke.
    assert!(e > 0.1 && e < 0.5, "E {e}");
    // By hand: the border pixels with δ > 0, plus half those with δ = 0.
    let [w, h, _] = image.dims;
    let (mut n, mut pos) = (0.0, 0.0);
    for y in 0..h {
        for x in 0..w {
            if x == 0 || y == 0 || x + 1 == w || y + 1 == h {
                let v = delta[x + w * y];
                n += 1.0;
                pos += if v > 0.0 {
                    1.0
                } else if v == 0.0 {
                    0.5
                } else {
                    0.0
                };
            }
        }
    }
    assert_eq!(e, pos / n);
    // Volumes: the six faces. A 4×4×4 block (56 face voxels of 64), all nearer the background.
    let face =
        |x: usize, y: usize, z: usize| x == 0 || y == 0 || z == 0 || x == 3 || y == 3 || z == 3;
    let mut vol = vec![-1.0f32; 64];
    for z in 0..4 {
        for y in 0..4 {
            for x in 0..4 {
                if face(x, y, z) {
                    vol[x + 4 * (y + 4 * z)] = 1.0;
                }
            }
        }
    }
    assert_eq!(enclosure(&vol, [4, 4, 4]), Some(1.0));
    vol[0] = 0.0; // a tie on a corner counts half
    assert_eq!(enclosure(&vol, [4, 4, 4]), Some(55.5 / 56.0));
    assert_eq!(enclosure(&[], [0, 0, 1]), None);
    // A single column or row is all border.
    assert_eq!(enclosure(&[1.0, -1.0, 1.0, 1.0], [1, 4, 1]), Some(0.75));
}

#[test]
fn enclosure_scales_the_prior_and_silences_it_for_strokes_beside_the_object() {
    use segcut::segment::prior::{enclosure, scale_by_enclosure};
    let (image, bar) = strokes_around_or_beside(false);
    let base = SpatialPrior {
        enclosure: 0.0,
        coverage: 0.0,
        ..SegmentOptions::default().prior
    };
    let delta = prior_costs(&image, &bar, &base).unwrap().unwrap();
    let e = enclosure(&delta, image.dims).unwrap();
    // k = 0: nothing changes.
    let mut same = delta.clone();
    assert_eq!(scale_by_enclosure(&mut same, image.dims, &base, 0.5), None);
    assert_eq!(same, delta);
    // k = 3: every value times fl(E³), in f32.
    let k3 = SpatialPrior {
        enclosure: 3.0,
        ..base
    };
    let mut scaled = delta.clone();
    assert_eq!(
        scale_by_enclosure(&mut scaled, image.dims, &k3, 0.5),
        Some(e)
    );
    let g = e.powf(3.0) as f32;
    assert!(g > 0.0 && g < 0.2);
    for (s, d) in scaled.iter().zip(&delta) {
        assert_eq!(s.to_bits(), (d * g).to_bits());
    }
    // Bad exponents are refused.
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let p = SpatialPrior {
            enclosure: bad,
            ..base
        };
        assert!(prior_costs(&image, &bar, &p).is_err(), "{bad}");
    }
}

#[test]
fn coverage_scales_the_prior_only_above_its_threshold() {
    use segcut::segment::prior::{scale_by_enclosure, stroke_coverage};
    // The ring around the object: E = 1, so only the coverage factor acts.
    let (image, ring) = strokes_around_or_beside(true);
    let c = stroke_coverage(&ring);
    let n = ring.labels.len() as f64;
    let hard = ring
        .labels
        .iter()
        .filter(|l| matches!(l, Seed::Foreground | Seed::Background))
        .count();
    assert_eq!(c, hard as f64 / n);
    let base = SpatialPrior {
        enclosure: 8.0,
        coverage: 0.0,
        ..SegmentOptions::default().prior
    };
    let delta = prior_costs(&image, &ring, &base).unwrap().unwrap();
    for (c0, g) in [(c * 2.0, 1.0f32), (c, 1.0), (c / 4.0, 0.25)] {
        let prior = SpatialPrior {
            coverage: c0,
            ..base
        };
        let mut scaled = delta.clone();
        assert_eq!(
            scale_by_enclosure(&mut scaled, image.dims, &prior, c),
            Some(1.0)
        );
        for (s, d) in scaled.iter().zip(&delta) {
            assert_eq!(s.to_bits(), (d * g).to_bits(), "c0 {c0}");
        }
    }
    // The coverage alone (k = 0) scales too; a coverage above 1 is refused.
    let alone = SpatialPrior {
        enclosure: 0.0,
        coverage: c / 2.0,
        ..base
    };
    let mut scaled = delta.clone();
    assert_eq!(
        scale_by_enclosure(&mut scaled, image.dims, &alone, c),
        Some(1.0)
    );
    assert_eq!(scaled[0].to_bits(), (delta[0] * 0.5).to_bits());
    for bad in [1.5, -0.1, f64::NAN] {
        let p = SpatialPrior {
            coverage: bad,
            ..base
        };
        assert!(prior_costs(&image, &ring, &p).is_err(), "{bad}");
    }
}

#[test]
fn pipeline_reports_the_enclosure_and_keeps_the_prior_for_enclosing_strokes() {
    // Strokes around the object (E = 1): the scaled prior is the prior, so is the mask. Strokes
    // beside it with a huge exponent: the prior is 0 everywhere, the mask the no-prior one.
    let base = SegmentOptions {
        solver: segcut::maxflow::SolverKind::Bk,
        gpu_build: false,
        iterations: 2,
        prior: SpatialPrior {
            enclosure: 0.0,
            coverage: 0.0,
            ..SegmentOptions::default().prior
        },
        ..SegmentOptions::default()
    };
    let with_k = |k: f64| SegmentOptions {
        prior: SpatialPrior {
            enclosure: k,
            ..base.prior
        },
        ..base.clone()
    };
    let (image, ring) = strokes_around_or_beside(true);
    let fixed = segment(&image, &ring, &base).unwrap();
    let scaled = segment(&image, &ring, &with_k(8.0)).unwrap();
    assert_eq!(fixed.stats.prior_enclosure, None);
    assert_eq!(scaled.stats.prior_enclosure, Some(1.0));
    // Adapted on the host (the CPU build), and only where it follows the enclosure.
    use segcut::segment::gpu_prior::Adapted;
    assert_eq!(fixed.stats.prior_adapted, None);
    assert_eq!(scaled.stats.prior_adapted, Some(Adapted::Host));
    let report = segcut::segment::report::Report::new(&scaled, &with_k(8.0));
    assert_eq!(report.prior.adapted, Some("host"));
    assert_eq!(fixed.mask, scaled.mask);
    assert_eq!(fixed.flow, scaled.flow);
    let (image, bar) = strokes_around_or_beside(false);
    let silenced = segment(&image, &bar, &with_k(2000.0)).unwrap();
    let e = silenced.stats.prior_enclosure.unwrap();
    assert!(e < 0.5 && (e.powf(2000.0) as f32) == 0.0, "E {e}");
    let none = segment(
        &image,
        &bar,
        &SegmentOptions {
            prior: SpatialPrior {
                weight: 0.0,
                ..base.prior
            },
            ..base.clone()
        },
    )
    .unwrap();
    let full = segment(&image, &bar, &base).unwrap();
    assert_eq!(silenced.mask, none.mask);
    assert_eq!(silenced.flow, none.flow);
    // The test means something only if the full prior changes this cut.
    assert_ne!(full.flow, none.flow);
}

/// `first_round_graph` (what `segcut bench` times as the product graph) is the graph the first
/// round of `segment` cuts, capacity for capacity, with the default prior and its adaptation.
#[test]
fn first_round_graph_is_the_first_rounds_graph() {
    use segcut::maxflow::SolverKind;
    use segcut::segment::pipeline::first_round_graph;
    let (w, h) = (61, 37);
    let img = two_colours(w, h, 11, 25.0, |x, y| {
        (x as i64 - 30).pow(2) + (y as i64 - 18).pow(2) < 150
    });
    let mut seeds = Seeds::unknown(img.dims);
    for x in 26..35 {
        seeds.labels[18 * w + x] = Seed::Foreground;
    }
    for y in 2..h - 2 {
        seeds.labels[y * w + 3] = Seed::Background;
    }
    let opts = SegmentOptions {
        iterations: 1,
        keep_graph: true,
        solver: SolverKind::Bk,
        ..Default::default()
    };
    let s = segment(&img, &seeds, &opts).unwrap();
    let cut = s.graph.as_ref().expect("kept");
    let g = first_round_graph(&img, &seeds, &opts).unwrap();
    assert!(
        s.stats.prior_enclosure.is_some(),
        "the default prior adapts"
    );
    assert_eq!(g.source_caps(), cut.source_caps());
    assert_eq!(g.sink_caps(), cut.sink_caps());
    for d in 0..g.connectivity().degree() {
        assert_eq!(g.caps(d), cut.caps(d), "direction {d}");
    }
    // Not the plain graph: the prior is in the t-links.
    let plain = segcut::segment::pipeline::build_graph(&img, &seeds, &opts).unwrap();
    assert_ne!(plain.graph.sink_caps(), g.sink_caps());
}

/// A `w`×`h` RGB image of two noisy colours: red where `inside(x, y)`, blue elsewhere, Gaussian
/// noise of deviation `noise` from the seeded generator.
fn two_colours(
    w: usize,
    h: usize,
    seed: u64,
    noise: f64,
    inside: impl Fn(usize, usize) -> bool,
) -> Image {
    let mut rng = Rng::new(seed);
    let mut data = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let base = if inside(x, y) {
                [200.0, 60.0, 50.0]
            } else {
                [40.0, 90.0, 190.0]
            };
            data.extend(base.map(|b: f64| (b + noise * rng.normal()).clamp(0.0, 255.0) as f32));
        }
    }
    Image {
        dims: [w, h, 1],
        channels: 3,
        data,
        spacing: [1.0; 3],
        meta: Default::default(),
    }
}

#[test]
fn palette_tlinks_equal_per_pixel_tlinks_bit_for_bit() {
    use segcut::segment::energy::{set_tlinks_palette, set_tlinks_with_prior, Palette};
    let mut rng = Rng::new(7);
    for (case, (w, h, ch, colours)) in [
        (37, 23, 3, 40),
        (64, 48, 3, 300),
        (19, 31, 2, 9),
        (16, 16, 4, 100),
    ]
    .into_iter()
    .enumerate()
    {
        // An image of a few colours (with -0.0 and 0.0 both present: told apart, same costs).
        let pal: Vec<f32> = (0..colours * ch)
            .map(|i| {
                if i == 0 {
                    -0.0
                } else if i == ch {
                    0.0
                } else {
                    (rng.unit_f64() * 255.0) as f32
                }
            })
            .collect();
        let n = w * h;
        let data: Vec<f32> = (0..n)
            .flat_map(|_| {
                let c = rng.below(colours as u64) as usize;
                pal[c * ch..(c + 1) * ch].to_vec()
            })
            .collect();
        let img = Image::new([w, h, 1], ch, data);
        let mut seeds = Seeds::unknown(img.dims);
        for v in 0..n {
            seeds.labels[v] = match rng.below(10) {
                0 => Seed::Foreground,
                1 => Seed::Background,
                2 => Seed::ProbablyForeground,
                _ => Seed::Unknown,
            };
        }
        let half = n / 2 * ch;
        let fg = fit(
            ModelKind::Gmm { components: 3 },
            &img.data[..half],
            &img,
            "foreground",
        );
        let bg = fit(
            ModelKind::Gmm { components: 2 },
            &img.data[half..],
            &img,
            "background",
        );
        let prior: Vec<f32> = (0..n)
            .map(|_| (rng.unit_f64() * 4.0 - 2.0) as f32)
            .collect();
        let palette = Palette::new(&img, 1.0).expect("a palette of at most all pixels");
        assert!(
            palette.len() <= colours + 1,
            "case {case}: {} colours",
            palette.len()
        );
        for p in [None, Some(&prior[..])] {
            let opts = EnergyOptions::default();
            let mut a = build_nlinks(&img, &opts).unwrap();
            let mut b = build_nlinks(&img, &opts).unwrap();
            set_tlinks_with_prior(&mut a, &img, &seeds, &fg, &bg, p).unwrap();
            set_tlinks_palette(&mut b, &img, &palette, &seeds, &fg, &bg, p).unwrap();
            assert_eq!(a.graph.source_caps(), b.graph.source_caps(), "case {case}");
            assert_eq!(a.graph.sink_caps(), b.graph.sink_caps(), "case {case}");
            // The constant is a parallel sum over rows (its order is rayon's): equal up to
            // the rounding of that order.
            let (x, y) = (a.unary_constant, b.unary_constant);
            assert!(
                (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                "case {case}: {x} vs {y}"
            );
        }
        // A palette of another image is refused, naming both sizes.
        let other = Image::new([w + 1, h, 1], ch, vec![0.0; (w + 1) * h * ch]);
        let mut c = build_nlinks(&other, &EnergyOptions::default()).unwrap();
        let err = set_tlinks_palette(
            &mut c,
            &other,
            &palette,
            &Seeds::unknown(other.dims),
            &fg,
            &bg,
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("palette"), "{err}");
    }
    // Grey images and images with more distinct colours than the share get none.
    assert!(Palette::new(&grey(4, 4, 1, |x, y, _| (x + y) as f32), 1.0).is_none());
    let noisy = Image::new([8, 8, 1], 3, (0..192).map(|i| i as f32).collect());
    assert!(Palette::new(&noisy, 0.5).is_none());
    assert_eq!(Palette::new(&noisy, 1.0).map(|p| p.len()), Some(64));
}
