//! The mixture fit's parallel passes (`segment::model`, chunks of `FIT_CHUNK` samples summed in
//! a fixed order): the same parameters, bit for bit, whatever the number of threads, on random
//! mixtures of 1, 3 and 4 channels, sample counts that split into many chunks or leave a short
//! last one, a flat class and a class of fewer distinct colours than components; and a fit that
//! still finds the clusters it is given; and the warm refit of the later rounds.

use rayon::ThreadPoolBuilder;
use segcut::rng::Rng;
use segcut::segment::model::{Gmm, FIT_CHUNK, MAX_FIT_SAMPLES};

/// `n` samples of `dim` channels from `clusters` random Gaussian clusters of unequal sizes.
fn mixture(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    let centres: Vec<Vec<f64>> = (0..clusters)
        .map(|_| (0..dim).map(|_| rng.unit_f64() * 200.0).collect())
        .collect();
    let spread: Vec<f64> = (0..clusters).map(|_| 2.0 + 10.0 * rng.unit_f64()).collect();
    let mut out = Vec::with_capacity(n * dim);
    for _ in 0..n {
        // Squaring the uniform makes the first clusters larger.
        let c = ((rng.unit_f64().powi(2)) * clusters as f64) as usize;
        for v in &centres[c] {
            out.push((v + spread[c] * rng.normal()) as f32);
        }
    }
    out
}

/// Every parameter of a fit, in order: per component `log_coef`, mean, `L⁻¹`.
fn parameters(g: &Gmm) -> Vec<f64> {
    g.components()
        .flat_map(|(c, m, l)| {
            std::iter::once(c)
                .chain(m.iter().copied())
                .chain(l.iter().copied())
        })
        .collect()
}

fn fit_with_threads(threads: usize, samples: &[f32], dim: usize, k: usize) -> Gmm {
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| Gmm::fit(samples, dim, k, 0.5).unwrap())
}

#[test]
fn gmm_fit_does_not_depend_on_the_thread_count() {
    let cases: Vec<(String, Vec<f32>, usize, usize)> = vec![
        (
            "rgb, full cap".into(),
            mixture(MAX_FIT_SAMPLES, 3, 6, 1),
            3,
            5,
        ),
        (
            "rgb, short last chunk".into(),
            mixture(7 * FIT_CHUNK + 13, 3, 4, 2),
            3,
            5,
        ),
        ("rgb, strided".into(), mixture(30_011, 3, 5, 3), 3, 5),
        ("grey".into(), mixture(5_000, 1, 3, 4), 1, 5),
        ("4 channels".into(), mixture(4_321, 4, 3, 5), 4, 3),
        ("rgb, 16 components".into(), mixture(9_000, 3, 20, 6), 3, 16),
        (
            "rgb, one chunk".into(),
            mixture(FIT_CHUNK / 2, 3, 2, 7),
            3,
            5,
        ),
    ];
    for (what, samples, dim, k) in &cases {
        let one = fit_with_threads(1, samples, *dim, *k);
        assert_eq!(one.num_components(), *k.min(&one.num_components()));
        let reference = parameters(&one);
        assert!(reference.iter().all(|v| v.is_finite()), "{what}");
        for threads in [2, 3, 8] {
            let many = fit_with_threads(threads, samples, *dim, *k);
            assert_eq!(
                parameters(&many),
                reference,
                "{what}: {threads} threads give other parameters than 1"
            );
        }
    }
}

#[test]
fn flat_and_nearly_flat_classes_fit_under_any_thread_count() {
    // One colour repeated past several chunks: one component, the floor as its variance.
    let flat: Vec<f32> = [12.5f32, 80.0, 3.0].repeat(3 * FIT_CHUNK + 7);
    // Two colours only: at most two components, whatever k asks.
    let two: Vec<f32> = (0..2 * FIT_CHUNK + 1)
        .flat_map(|i| {
            if i % 3 == 0 {
                [10.0f32, 10.0, 10.0]
            } else {
                [200.0, 50.0, 7.0]
            }
        })
        .collect();
    for (what, samples, most) in [("flat", &flat, 1), ("two colours", &two, 2)] {
        let one = fit_with_threads(1, samples, 3, 5);
        assert!(
            one.num_components() <= most,
            "{what}: {}",
            one.num_components()
        );
        for threads in [2, 5] {
            let many = fit_with_threads(threads, samples, 3, 5);
            assert_eq!(
                parameters(&many),
                parameters(&one),
                "{what}, {threads} threads"
            );
        }
        for m in one.means() {
            assert!(m.iter().all(|v| v.is_finite()), "{what}: {m:?}");
        }
    }
    // The flat class's one Gaussian: its mean is the colour, its precision the floor's.
    let g = fit_with_threads(2, &flat, 3, 5);
    let (_, mean, inv_chol) = g.components().next().unwrap();
    for (m, want) in mean.iter().zip([12.5, 80.0, 3.0]) {
        assert!((m - want).abs() < 1e-9, "{mean:?}");
    }
    let want = 1.0 / 0.5f64.sqrt();
    for i in 0..3 {
        assert!((inv_chol[i * 3 + i] - want).abs() < 1e-6, "{inv_chol:?}");
    }
}

#[test]
fn parallel_fit_finds_well_separated_clusters() {
    // Three tight clusters of known weights, spread over many chunks.
    let centres = [
        [20.0, 30.0, 40.0],
        [120.0, 60.0, 200.0],
        [220.0, 220.0, 20.0],
    ];
    let weights = [0.5, 0.3, 0.2];
    let mut rng = Rng::new(9);
    let n = 9_000;
    let mut samples = Vec::new();
    for i in 0..n {
        let c = if i % 10 < 5 {
            0
        } else if i % 10 < 8 {
            1
        } else {
            2
        };
        for v in centres[c] {
            samples.push((v + 3.0 * rng.normal()) as f32);
        }
    }
    let g = fit_with_threads(4, &samples, 3, 3);
    assert_eq!(g.num_components(), 3);
    let (means, w) = (g.means(), g.weights());
    for (c, want) in centres.iter().zip(weights) {
        let j = (0..3)
            .min_by(|&a, &b| {
                let d = |m: &Vec<f64>| m.iter().zip(c).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
                d(&means[a]).total_cmp(&d(&means[b]))
            })
            .unwrap();
        let dist: f64 = means[j]
            .iter()
            .zip(c)
            .map(|(x, y)| (x - y).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(dist < 0.5, "mean {:?} vs {c:?}", means[j]);
        assert!((w[j] - want).abs() < 0.01, "weight {} vs {want}", w[j]);
    }
}

/// A warm refit (`Gmm::refit`, the later GrabCut rounds' fit) continues EM from its start: two
/// single steps are one double step, bit for bit, under any thread count; it falls back to the
/// fit from scratch where the start cannot serve (no steps, another dimension, fewer components
/// than the samples would get).
#[test]
fn warm_refit_continues_em_from_its_start() {
    let samples = mixture(7_000, 3, 4, 21);
    // The classes moved a little between rounds: the start is fitted on other samples.
    let start = fit_with_threads(2, &mixture(5_000, 3, 4, 21), 3, 5);
    let twice = start
        .refit(&samples, 3, 5, 0.5, 1)
        .unwrap()
        .refit(&samples, 3, 5, 0.5, 1)
        .unwrap();
    for threads in [1, 3] {
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let once = pool.install(|| start.refit(&samples, 3, 5, 0.5, 2).unwrap());
        assert_eq!(parameters(&once), parameters(&twice), "{threads} threads");
    }
    let one = start.refit(&samples, 3, 5, 0.5, 1).unwrap();
    assert_ne!(
        parameters(&one),
        parameters(&twice),
        "a step must move the mixture"
    );
    assert_ne!(parameters(&one), parameters(&start));
    let scratch = fit_with_threads(2, &samples, 3, 5);
    assert_ne!(parameters(&one), parameters(&scratch));
    // Where the start cannot serve: the fit from scratch.
    assert_eq!(
        parameters(&start.refit(&samples, 3, 5, 0.5, 0).unwrap()),
        parameters(&scratch)
    );
    let fewer = fit_with_threads(2, &samples, 3, 2);
    assert_eq!(
        parameters(&fewer.refit(&samples, 3, 5, 0.5, 2).unwrap()),
        parameters(&scratch)
    );
    let grey = mixture(3_000, 1, 3, 4);
    assert_eq!(
        parameters(&start.refit(&grey, 1, 3, 0.5, 2).unwrap()),
        parameters(&fit_with_threads(2, &grey, 1, 3))
    );
}

/// A warm refit follows its samples: from a mixture fitted on clusters that then moved, two
/// steps bring every mean to its moved cluster.
#[test]
fn warm_refit_follows_moved_clusters() {
    let centres = [
        [20.0, 30.0, 40.0],
        [120.0, 60.0, 200.0],
        [220.0, 220.0, 20.0],
    ];
    let cloud = |shift: f64, seed: u64| {
        let mut rng = Rng::new(seed);
        let mut s = Vec::new();
        for i in 0..6_000 {
            for v in centres[i % 3] {
                s.push((v + shift + 3.0 * rng.normal()) as f32);
            }
        }
        s
    };
    let start = fit_with_threads(2, &cloud(0.0, 1), 3, 3);
    let moved = start.refit(&cloud(4.0, 2), 3, 3, 0.5, 2).unwrap();
    assert_eq!(moved.num_components(), 3);
    for c in centres {
        let near = moved
            .means()
            .into_iter()
            .any(|m| m.iter().zip(c).all(|(x, y)| (x - (y + 4.0)).abs() < 0.5));
        assert!(near, "no mean near {c:?} + 4: {:?}", moved.means());
    }
}
