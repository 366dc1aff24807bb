//! The device-resident α-expansion (`segcut::stereo::gpu`) against the host engine with BK: the
//! same cost volume, labelling, energies and per-move flows, bit for bit, on the Middlebury dev
//! scenes and on random cost volumes; several runs at once on one GPU (what `segcut batch` does
//! with several workers). Without a usable GPU each test says so and returns, unless
//! `SEGCUT_REQUIRE_GPU=1` is set (on the GPU machine): then it fails.

mod common;

use common::{gpu_or_skip, shared_data};
use segcut::cuda::Device;
use segcut::graph::Connectivity;
use segcut::io::Image;
use segcut::maxflow::{SolveOptions, SolverKind};
use segcut::rng::Rng;
use segcut::stereo::gpu::{
    cost_volume_on_device, expand_on_device, stereo_on_device, weighted_median_on_device,
};
use segcut::stereo::median::{weighted_median, WeightedMedian, DEVICE_MAX_LABELS};
use segcut::stereo::{
    cost_volume, expand, CostOptions, CostVolume, DataTerm, Expansion, ExpansionOptions, Pairwise,
    PairwiseModel, Smoothness, StereoOptions, DEFAULT_MEDIAN,
};

/// Asserts two expansions are the same run: labels, energies, passes, per-move flows.
fn assert_same(gpu: &Expansion, cpu: &Expansion, what: &str) {
    assert_eq!(
        gpu.initial_energy, cpu.initial_energy,
        "{what}: initial energy"
    );
    let pe = |e: &Expansion| e.passes.iter().map(|p| p.energy).collect::<Vec<_>>();
    assert_eq!(pe(gpu), pe(cpu), "{what}: energy per pass");
    let mv = |e: &Expansion| {
        e.moves
            .iter()
            .map(|m| (m.pass, m.label, m.flow, m.switched, m.energy))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        mv(gpu),
        mv(cpu),
        "{what}: moves (pass, label, flow, switched, energy)"
    );
    assert_eq!(gpu.energy, cpu.energy, "{what}: energy");
    assert_eq!(gpu.converged, cpu.converged, "{what}: converged");
    if let Some(p) = (0..cpu.labels.len()).find(|&p| gpu.labels[p] != cpu.labels[p]) {
        panic!(
            "{what}: labellings differ first at pixel {p}: gpu {} cpu {}",
            gpu.labels[p], cpu.labels[p]
        );
    }
}

fn bk() -> ExpansionOptions {
    ExpansionOptions {
        solve: SolveOptions::with_solver(SolverKind::Bk), // certificates checked
        ..Default::default()
    }
}

fn scene(name: &str) -> Option<segcut::stereo::eval::Scene> {
    let data = shared_data()?;
    Some(segcut::stereo::eval::load_scene(&data.join("stereo").join(name), None).unwrap())
}

#[test]
fn device_cost_volume_equals_host() {
    if !gpu_or_skip() {
        return;
    }
    let Some(s) = scene("venus") else { return };
    for data in [DataTerm::Bt, DataTerm::BtCensus] {
        for (scale, weight) in [(1.0, 0.5), (3.7, 0.35)] {
            let o = CostOptions {
                data,
                scale,
                census_weight: weight,
                ..Default::default()
            };
            let gpu =
                cost_volume_on_device(Device::default(), &s.left, &s.right, -2, 23, &o).unwrap();
            let cpu = cost_volume(&s.left, &s.right, -2, 23, &o).unwrap();
            if let Some(i) = (0..cpu.data.len()).find(|&i| gpu.data[i] != cpu.data[i]) {
                panic!(
                    "{data:?} scale {scale}: cost {i} (label {}, pixel {}): gpu {} cpu {}",
                    i / cpu.num_pixels(),
                    i % cpu.num_pixels(),
                    gpu.data[i],
                    cpu.data[i]
                );
            }
        }
    }
    // A grey pair with 16-bit values (rescaled by the range) and a float pair in 0..1.
    let mut rng = Rng::new(5);
    let (w, h) = (37, 21);
    for max in [65535.0f32, 1.0] {
        let mut img = || {
            let v = (0..w * h)
                .map(|_| {
                    let v = rng.unit_f64() as f32 * max;
                    if max > 1.0 {
                        v.floor()
                    } else {
                        v
                    }
                })
                .collect();
            Image::new([w, h, 1], 1, v)
        };
        let (l, r) = (img(), img());
        let o = CostOptions::default();
        assert_eq!(
            cost_volume_on_device(Device::default(), &l, &r, 0, 9, &o).unwrap(),
            cost_volume(&l, &r, 0, 9, &o).unwrap(),
            "range {max}"
        );
    }
}

/// The dynamic moves (each move from the last preflow of its label) and moves from scratch give
/// the host's run bit for bit on tsukuba, and the dynamic run does start later passes warm.
#[test]
fn dynamic_moves_and_scratch_moves_equal_bk() {
    use segcut::stereo::gpu::{stereo_on_device_tuned, DeviceTuning};
    if !gpu_or_skip() {
        return;
    }
    let Some(s) = scene("tsukuba") else { return };
    let o = StereoOptions {
        num_disparities: s.num_disparities,
        expansion: bk(),
        ..Default::default()
    };
    let cpu = segcut::stereo::stereo(&s.left, &s.right, &o).unwrap();
    for (warm_moves, warm_first) in [(true, false), (false, false), (true, true)] {
        let tuning = DeviceTuning {
            warm_moves,
            warm_first,
            ..DeviceTuning::default()
        };
        let gpu = stereo_on_device_tuned(&s.left, &s.right, &o, &tuning).unwrap();
        let what = format!("tsukuba, warm moves {warm_moves}, first {warm_first}");
        assert_same(&gpu.expansion, &cpu.expansion, &what);
        let warm = gpu.expansion.moves.iter().filter(|m| m.warm).count();
        if warm_first {
            // Every move but the very first starts from a kept preflow.
            let first_pass_warm = gpu
                .expansion
                .moves
                .iter()
                .filter(|m| m.pass == 0 && m.warm)
                .count();
            assert!(
                first_pass_warm > 0,
                "{what}: no first-pass move started warm"
            );
            assert!(
                !gpu.expansion.moves[0].warm,
                "{what}: the first move has nothing to start from"
            );
        } else if warm_moves {
            assert!(
                gpu.expansion.moves.iter().all(|m| m.pass > 0 || !m.warm),
                "{what}: a first-pass move cannot be warm"
            );
            assert!(warm > 0, "{what}: no move started warm");
        } else {
            assert_eq!(warm, 0, "{what}");
        }
    }
}

#[test]
fn device_stereo_equals_bk_on_dev_scenes() {
    if !gpu_or_skip() {
        return;
    }
    for name in ["tsukuba", "venus"] {
        let Some(s) = scene(name) else { return };
        let o = StereoOptions {
            num_disparities: s.num_disparities,
            expansion: bk(),
            ..Default::default()
        };
        let cpu = segcut::stereo::stereo(&s.left, &s.right, &o).unwrap();
        let gpu = stereo_on_device(&s.left, &s.right, &o).unwrap();
        assert_same(&gpu.expansion, &cpu.expansion, name);
        // stereo() itself takes the device path for cuda-grid.
        let mut og = o.clone();
        og.expansion.solve = SolveOptions::with_solver(SolverKind::CudaGrid);
        let via = segcut::stereo::stereo(&s.left, &s.right, &og).unwrap();
        assert_eq!(
            via.expansion.labels, cpu.expansion.labels,
            "{name} via stereo()"
        );
        // The host post-processing (the default weighted median filter) gives the same map.
        assert_eq!(via.filtered.is_some(), cpu.filtered.is_some(), "{name}");
        assert_eq!(via.disparity(), cpu.disparity(), "{name} final map");
    }
}

#[test]
fn device_stereo_equals_bk_other_settings() {
    if !gpu_or_skip() {
        return;
    }
    let Some(s) = scene("tsukuba") else { return };
    // A crop keeps the CPU side short.
    let crop = |img: &Image| {
        let [w, _, _] = img.dims;
        let c = img.channels;
        let (x0, y0, cw, ch) = (100, 60, 150, 97);
        let mut v = Vec::new();
        for y in y0..y0 + ch {
            v.extend_from_slice(&img.data[(x0 + w * y) * c..(x0 + cw + w * y) * c]);
        }
        Image::new([cw, ch, 1], c, v)
    };
    let (l, r) = (crop(&s.left), crop(&s.right));
    let settings = [
        (
            Smoothness::TruncatedLinear { truncation: 2 },
            Connectivity::N4,
            20.0,
        ),
        (Smoothness::Potts, Connectivity::N8, 10.0),
        (
            Smoothness::TruncatedLinear { truncation: 3 },
            Connectivity::N8,
            7.5,
        ),
    ];
    for (smoothness, connectivity, lambda) in settings {
        let o = StereoOptions {
            num_disparities: 16,
            smoothness,
            connectivity,
            lambda,
            expansion: bk(),
            ..Default::default()
        };
        let cpu = segcut::stereo::stereo(&l, &r, &o).unwrap();
        let gpu = stereo_on_device(&l, &r, &o).unwrap();
        assert_same(
            &gpu.expansion,
            &cpu.expansion,
            &format!("{smoothness:?} {connectivity} λ {lambda}"),
        );
    }
    // The left–right check runs both views through the device engine.
    let mut o = StereoOptions {
        num_disparities: 16,
        left_right: Some(1),
        expansion: bk(),
        ..Default::default()
    };
    let cpu = segcut::stereo::stereo(&l, &r, &o).unwrap();
    o.expansion.solve = SolveOptions::with_solver(SolverKind::CudaGrid);
    let gpu = segcut::stereo::stereo(&l, &r, &o).unwrap();
    assert!(gpu.occlusions.is_some());
    assert_eq!(gpu.occlusions, cpu.occlusions, "left-right check");
    assert_eq!(gpu.disparity(), cpu.disparity());
}

/// A random cost volume and pairwise model.
fn random_problem(
    rng: &mut Rng,
    w: usize,
    h: usize,
    labels: usize,
    conn: Connectivity,
    distance: Pairwise,
) -> (CostVolume, PairwiseModel) {
    let cmax = 1 + rng.below(200) as i32;
    let cost =
        CostVolume::from_fn(w, h, labels, |_, _, _| rng.below(cmax as u64 + 1) as i32).unwrap();
    let wmax = 1 + rng.below(60);
    let model =
        PairwiseModel::from_fn(w, h, conn, distance, |_, _| rng.below(wmax + 1) as i32).unwrap();
    (cost, model)
}

#[test]
fn device_expansion_equals_bk_on_random_volumes() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(24);
    let shapes = [
        (1, 1, 3),
        (5, 1, 2),
        (33, 17, 4),
        (64, 64, 7),
        (97, 45, 12),
        (130, 70, 5),
    ];
    for (i, &(w, h, labels)) in shapes.iter().cycle().take(18).enumerate() {
        let conn = if i % 2 == 0 {
            Connectivity::N4
        } else {
            Connectivity::N8
        };
        let distance = match i % 3 {
            0 => Pairwise::Potts,
            1 => Pairwise::TruncatedLinear { truncation: 1 },
            _ => Pairwise::TruncatedLinear {
                truncation: 1 + rng.below(4) as u32,
            },
        };
        let (cost, model) = random_problem(&mut rng, w, h, labels, conn, distance);
        let mut o = bk();
        if i % 4 == 3 {
            // A given start and an order with a repeat and a missing label.
            o.initial = Some(
                (0..w * h)
                    .map(|_| rng.below(labels as u64) as u16)
                    .collect(),
            );
            let mut order: Vec<u16> = (0..labels as u16).rev().collect();
            order.push(0);
            order.remove(1.min(order.len() - 1));
            o.order = Some(order);
        }
        if i % 5 == 4 {
            o.max_passes = Some(1);
        }
        let cpu = expand(&cost, &model, &o).unwrap();
        let gpu = expand_on_device(&cost, &model, &o).unwrap();
        assert_same(
            &gpu,
            &cpu,
            &format!("case {i}: {w}x{h}, {labels} labels, {conn}, {distance:?}"),
        );
    }
}

#[test]
fn concurrent_runs_on_one_gpu_agree() {
    if !gpu_or_skip() {
        return;
    }
    let Some(s) = scene("tsukuba") else { return };
    let o = StereoOptions {
        num_disparities: s.num_disparities,
        ..Default::default()
    };
    let one = stereo_on_device(&s.left, &s.right, &o).unwrap();
    let runs: Vec<_> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|_| sc.spawn(|| stereo_on_device(&s.left, &s.right, &o).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in runs {
        assert_eq!(r.expansion.labels, one.expansion.labels);
        assert_eq!(r.expansion.energy, one.expansion.energy);
    }
}

#[test]
fn device_errors_are_errors() {
    if !gpu_or_skip() {
        return;
    }
    let l = Image::new([8, 4, 1], 1, vec![1.0; 32]);
    let r = Image::new([7, 4, 1], 1, vec![1.0; 28]);
    let o = StereoOptions::default();
    assert!(
        stereo_on_device(&l, &r, &o).is_err(),
        "views of different sizes"
    );
    let bad = StereoOptions {
        lambda: -1.0,
        ..Default::default()
    };
    assert!(stereo_on_device(&l, &l, &bad).is_err(), "negative λ");
    let (cost, model) =
        random_problem(&mut Rng::new(1), 6, 5, 3, Connectivity::N4, Pairwise::Potts);
    let o = ExpansionOptions {
        initial: Some(vec![3; 30]),
        ..Default::default()
    };
    assert!(
        expand_on_device(&cost, &model, &o).is_err(),
        "a start label out of range"
    );
}

/// The device engine's weighted median filter (run on its labelling before the map comes down)
/// gives the host filter's map of the BK labelling, bit for bit, on both dev scenes; and the
/// device filter alone equals the host's on random guides (grey, RGB, RGBA, 16-bit and float
/// values) and labellings, with several settings.
#[test]
fn device_median_filter_equals_host() {
    if !gpu_or_skip() {
        return;
    }
    for name in ["tsukuba", "venus"] {
        let Some(s) = scene(name) else { return };
        let o = StereoOptions {
            num_disparities: s.num_disparities,
            expansion: bk(),
            ..Default::default()
        };
        assert!(o.median.is_on(), "the default filter is on");
        let cpu = segcut::stereo::stereo(&s.left, &s.right, &o).unwrap();
        let gpu = stereo_on_device(&s.left, &s.right, &o).unwrap();
        assert_same(&gpu.expansion, &cpu.expansion, name);
        let host = weighted_median(&cpu.expansion.labels, &s.left, &o.median).unwrap();
        let device = gpu.filtered.as_ref().expect("the device engine filtered");
        if let Some(p) = (0..host.len()).find(|&p| device[p] != host[p]) {
            panic!(
                "{name}: filtered maps differ first at pixel {p}: gpu {} cpu {}",
                device[p], host[p]
            );
        }
        assert_eq!(
            cpu.filtered.as_ref(),
            Some(&host),
            "{name}: stereo() on the host"
        );
        // A wider window and other σ, through the device filter alone.
        let f = WeightedMedian {
            radius: 9,
            sigma_colour: 5.0,
            sigma_space: 9.0,
        };
        assert_eq!(
            weighted_median_on_device(Device::default(), &cpu.expansion.labels, &s.left, &f)
                .unwrap(),
            weighted_median(&cpu.expansion.labels, &s.left, &f).unwrap(),
            "{name}: 9 / 5 / 9"
        );
    }
    let mut rng = Rng::new(28);
    for case in 0..24 {
        let (w, h) = (1 + rng.below(90) as usize, 1 + rng.below(60) as usize);
        let c = [1, 3, 4, 2][case % 4];
        let max = [255.0f32, 65535.0, 1.0][case % 3];
        // Few levels, so that neighbours share colours and sums tie.
        let levels = 2 + rng.below(6);
        let data: Vec<f32> = (0..w * h * c)
            .map(|_| {
                let v = rng.below(levels) as f32 / (levels - 1) as f32 * max;
                if max > 1.0 {
                    v.floor()
                } else {
                    v
                }
            })
            .collect();
        let guide = Image::new([w, h, 1], c, data);
        let top = [2u64, 16, 60, DEVICE_MAX_LABELS as u64 - 1][case % 4];
        let labels: Vec<u16> = (0..w * h).map(|_| rng.below(top + 1) as u16).collect();
        let f = WeightedMedian {
            radius: [1, 4, 9, 32][case % 4],
            sigma_colour: [0.5f32, 10.0, 1e6][case % 3],
            sigma_space: [0.1f32, 4.0, 100.0][(case / 3) % 3],
        };
        let what = format!("case {case}: {w}x{h}x{c}, max {max}, labels ≤ {top}, {f:?}");
        assert_eq!(
            weighted_median_on_device(Device::default(), &labels, &guide, &f).unwrap(),
            weighted_median(&labels, &guide, &f).unwrap(),
            "{what}"
        );
    }
    // More labels than the device filter takes: refused alone, filtered on the host in stereo().
    let guide = Image::new([4, 2, 1], 1, vec![7.0; 8]);
    let labels = vec![DEVICE_MAX_LABELS as u16; 8];
    assert!(
        weighted_median_on_device(Device::default(), &labels, &guide, &DEFAULT_MEDIAN).is_err()
    );
    let Some(s) = scene("tsukuba") else { return };
    let o = StereoOptions {
        num_disparities: DEVICE_MAX_LABELS + 1,
        expansion: ExpansionOptions {
            max_passes: Some(1),
            ..bk()
        },
        ..Default::default()
    };
    let mut og = o.clone();
    og.expansion.solve = SolveOptions::with_solver(SolverKind::CudaGrid);
    assert!(stereo_on_device(&s.left, &s.right, &og)
        .unwrap()
        .filtered
        .is_none());
    let via = segcut::stereo::stereo(&s.left, &s.right, &og).unwrap();
    let cpu = segcut::stereo::stereo(&s.left, &s.right, &o).unwrap();
    assert!(via.filtered.is_some(), "stereo() filters on the host");
    assert_eq!(
        via.disparity(),
        cpu.disparity(),
        "{} labels",
        o.num_disparities
    );
}

// Packed pairs (`stereo_packed_on_device`, `expand_packed_on_device`): each part must be its own
// run. Fields that may differ from a single run, and so are not compared: every move's `build` and
// `solve` times, `warm` and `gpu_work` (the shared solve's; a move a single run skips is solved
// when another part needs it), the passes' `time` and the results' `cost_time`, `filter_time`,
// `total_time`. Everything `assert_same` compares is equal.

/// The pair with both views moved left by `dx` columns (the last column repeated), and with a
/// deterministic noise of up to ±`noise` added to the left view; flipped upside down with `flip`
/// (so the rows that meet at a seam differ most).
fn altered(left: &Image, right: &Image, dx: usize, noise: u64, flip: bool) -> (Image, Image) {
    let [w, h, _] = left.dims;
    let c = left.channels;
    let mut rng = Rng::new(7 + dx as u64 + noise);
    let mut one = |img: &Image, add: bool| {
        let mut v = Vec::with_capacity(img.data.len());
        for y in 0..h {
            let sy = if flip { h - 1 - y } else { y };
            for x in 0..w {
                let sx = (x + dx).min(w - 1);
                for ch in 0..c {
                    let mut val = img.data[(sx + w * sy) * c + ch];
                    if add && noise > 0 {
                        val = (val + rng.below(2 * noise + 1) as f32 - noise as f32)
                            .clamp(0.0, 255.0);
                    }
                    v.push(val);
                }
            }
        }
        Image::new(img.dims, c, v)
    };
    (one(left, true), one(right, false))
}

/// K ∈ {1, 2, 3} packed parts of each dev scene (the scene, the scene moved by a column, the scene
/// with noise and upside down, so the parts differ and converge after different passes): every
/// part equals the single-pair device run (labels, filtered map, energies, passes, moves) and the
/// host engine with BK.
#[test]
fn packed_stereo_equals_single_runs_and_bk() {
    use segcut::stereo::gpu::{stereo_packed_on_device, DeviceTuning};
    if !gpu_or_skip() {
        return;
    }
    for name in ["tsukuba", "venus"] {
        let Some(s) = scene(name) else { return };
        let parts = [
            (s.left.clone(), s.right.clone()),
            altered(&s.left, &s.right, 1, 0, false),
            altered(&s.left, &s.right, 0, 3, true),
        ];
        let o = StereoOptions {
            num_disparities: s.num_disparities,
            expansion: bk(),
            ..Default::default()
        };
        let mut og = o.clone();
        og.expansion.solve = SolveOptions::with_solver(SolverKind::CudaGrid);
        let cpu: Vec<_> = parts
            .iter()
            .map(|(l, r)| segcut::stereo::stereo(l, r, &o).unwrap())
            .collect();
        let single: Vec<_> = parts
            .iter()
            .map(|(l, r)| stereo_on_device(l, r, &og).unwrap())
            .collect();
        let passes: Vec<usize> = cpu.iter().map(|c| c.expansion.passes.len()).collect();
        for k in 1..=3 {
            let pairs: Vec<(&Image, &Image)> = parts[..k].iter().map(|(l, r)| (l, r)).collect();
            let packed = stereo_packed_on_device(&pairs, &og, &DeviceTuning::default()).unwrap();
            assert_eq!(packed.len(), k);
            for (i, p) in packed.iter().enumerate() {
                let what = format!("{name}, part {i} of {k} (passes alone: {passes:?})");
                assert_same(
                    &p.expansion,
                    &single[i].expansion,
                    &format!("{what} vs single"),
                );
                assert_same(&p.expansion, &cpu[i].expansion, &format!("{what} vs BK"));
                assert_eq!((p.width, p.height), (single[i].width, single[i].height));
                assert!(p.filtered.is_some(), "{what}: filtered on the device");
                assert_eq!(p.filtered, single[i].filtered, "{what}: filtered map");
                assert_eq!(p.disparity(), cpu[i].disparity(), "{what}: final map vs BK");
            }
        }
    }
}

/// Packed random cost volumes with random weights everywhere (also on the pairs that leave the
/// image, which a single problem never reads and a seam must not join): Potts and truncated
/// linear, 4- and 8-connected, moves from scratch and dynamic; every part equals its BK run and
/// its single device run.
#[test]
fn packed_expansion_equals_bk_on_random_volumes() {
    use segcut::stereo::gpu::{expand_packed_on_device, DeviceTuning};
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(2424);
    let shapes = [(1, 1, 3), (5, 1, 2), (33, 17, 4), (64, 40, 7), (97, 23, 12)];
    for (i, &(w, h, labels)) in shapes.iter().cycle().take(12).enumerate() {
        let conn = if i % 2 == 0 {
            Connectivity::N4
        } else {
            Connectivity::N8
        };
        let distance = match i % 3 {
            0 => Pairwise::Potts,
            _ => Pairwise::TruncatedLinear {
                truncation: 1 + rng.below(4) as u32,
            },
        };
        let k = 1 + i % 3;
        let problems: Vec<_> = (0..k)
            .map(|_| {
                let (c, mut m) = random_problem(&mut rng, w, h, labels, conn, distance);
                // Weights on the pairs that leave the image too (and on zero ones inside).
                for v in m.weights.iter_mut().flatten().filter(|v| **v == 0) {
                    *v = 1 + rng.below(60) as i32;
                }
                (c, m)
            })
            .collect();
        let mut o = bk();
        if i % 4 == 3 {
            o.initial = Some(
                (0..w * h)
                    .map(|_| rng.below(labels as u64) as u16)
                    .collect(),
            );
        }
        if i % 5 == 4 {
            o.max_passes = Some(1);
        }
        let tuning = DeviceTuning {
            warm_moves: i % 4 != 1,
            warm_first: i % 4 == 2,
            ..DeviceTuning::default()
        };
        let refs: Vec<_> = problems.iter().map(|(c, m)| (c, m)).collect();
        let packed = expand_packed_on_device(&refs, &o, &tuning).unwrap();
        for (j, ((cost, model), p)) in problems.iter().zip(&packed).enumerate() {
            let what = format!(
                "case {i}: part {j} of {k}, {w}x{h}, {labels} labels, {conn}, {distance:?}"
            );
            assert_same(
                p,
                &expand(cost, model, &o).unwrap(),
                &format!("{what} vs BK"),
            );
            assert_same(
                p,
                &expand_on_device(cost, model, &o).unwrap(),
                &format!("{what} vs single"),
            );
        }
    }
}

/// A seam that joined two parts would show: part 0's last row wants label 0, part 1's first row
/// label 2 a little less strongly, and every weight (the leaving pairs' too) is far above the
/// costs, so one arc of capacity across the seam would pull part 1 to label 0.
#[test]
fn packed_seam_does_not_leak() {
    use segcut::stereo::gpu::{expand_packed_on_device, DeviceTuning};
    if !gpu_or_skip() {
        return;
    }
    let (w, h) = (16, 6);
    for conn in [Connectivity::N4, Connectivity::N8] {
        let top = CostVolume::from_fn(w, h, 3, |_, _, l| if l == 0 { 0 } else { 50 }).unwrap();
        let bottom = CostVolume::from_fn(w, h, 3, |_, y, l| match (y, l) {
            (0, 2) => 0,
            (0, _) => 10,
            (_, 2) => 0,
            _ => 40,
        })
        .unwrap();
        let mut model = PairwiseModel::from_fn(w, h, conn, Pairwise::Potts, |_, _| 1000).unwrap();
        // The pairs that leave the image weigh as much: stacked, they would cross the seam.
        model.weights.iter_mut().for_each(|p| p.fill(1000));
        let o = bk();
        let packed = expand_packed_on_device(
            &[(&top, &model), (&bottom, &model)],
            &o,
            &DeviceTuning::default(),
        )
        .unwrap();
        assert!(packed[0].labels.iter().all(|&l| l == 0), "{conn}: part 0");
        assert!(packed[1].labels.iter().all(|&l| l == 2), "{conn}: part 1");
        for (p, c) in packed.iter().zip([&top, &bottom]) {
            assert_same(p, &expand(c, &model, &o).unwrap(), &format!("{conn}"));
        }
    }
}

/// Packing checks its input before it touches a device: no pairs, pairs of different sizes or
/// channel counts, volumes of different label counts or models are errors that say which.
#[test]
fn packed_input_errors_need_no_gpu() {
    use segcut::stereo::gpu::{expand_packed_on_device, stereo_packed_on_device, DeviceTuning};
    let t = DeviceTuning::default();
    let o = StereoOptions::default();
    let a = Image::new([8, 4, 1], 1, vec![1.0; 32]);
    let b = Image::new([8, 5, 1], 1, vec![1.0; 40]);
    let c = Image::new([8, 4, 1], 3, vec![1.0; 96]);
    let err = |r: segcut::Result<Vec<segcut::stereo::StereoResult>>| r.err().unwrap().to_string();
    assert!(err(stereo_packed_on_device(&[], &o, &t)).contains("no pairs"));
    let e = err(stereo_packed_on_device(&[(&a, &a), (&b, &b)], &o, &t));
    assert!(
        e.contains("pair 1 (left view)") && e.contains("8x5x1"),
        "{e}"
    );
    let e = err(stereo_packed_on_device(&[(&a, &a), (&a, &c)], &o, &t));
    assert!(
        e.contains("pair 1 (right view)") && e.contains("3 channels"),
        "{e}"
    );
    let mut rng = Rng::new(3);
    let (c1, m1) = random_problem(&mut rng, 6, 5, 3, Connectivity::N4, Pairwise::Potts);
    let (c2, _) = random_problem(&mut rng, 6, 5, 4, Connectivity::N4, Pairwise::Potts);
    let (_, m8) = random_problem(&mut rng, 6, 5, 3, Connectivity::N8, Pairwise::Potts);
    let eo = ExpansionOptions::default();
    let e = expand_packed_on_device(&[(&c1, &m1), (&c2, &m1)], &eo, &t)
        .err()
        .unwrap();
    assert!(e.to_string().contains("problem 1"), "{e}");
    let e = expand_packed_on_device(&[(&c1, &m1), (&c1, &m8)], &eo, &t)
        .err()
        .unwrap();
    assert!(e.to_string().contains("problem 1"), "{e}");
    assert!(expand_packed_on_device(&[], &eo, &t).is_err());
}

/// Small enough for compute-sanitizer (memcheck, racecheck): three packed 48×20 pairs with the
/// filter on, each equal to its single run.
#[test]
fn sanitizer_packed_stereo_small() {
    use segcut::stereo::gpu::{stereo_packed_on_device, DeviceTuning};
    if !gpu_or_skip() {
        return;
    }
    let (w, h) = (48, 20);
    let view = |seed: u64, shift: usize| {
        let mut rng = Rng::new(seed);
        let base: Vec<f32> = (0..(w + 8) * h).map(|_| rng.below(256) as f32).collect();
        let v = (0..w * h)
            .map(|p| base[(p % w + shift) + (w + 8) * (p / w)])
            .collect();
        Image::new([w, h, 1], 1, v)
    };
    let pairs_owned: Vec<(Image, Image)> = (0..3)
        .map(|i| (view(i, 0), view(i, 3 + i as usize)))
        .collect();
    let o = StereoOptions {
        num_disparities: 6,
        expansion: ExpansionOptions {
            solve: SolveOptions::with_solver(SolverKind::CudaGrid),
            ..Default::default()
        },
        ..Default::default()
    };
    let pairs: Vec<(&Image, &Image)> = pairs_owned.iter().map(|(l, r)| (l, r)).collect();
    let packed = stereo_packed_on_device(&pairs, &o, &DeviceTuning::default()).unwrap();
    for (i, ((l, r), p)) in pairs.iter().zip(&packed).enumerate() {
        let one = stereo_on_device(l, r, &o).unwrap();
        assert_same(&p.expansion, &one.expansion, &format!("part {i}"));
        assert_eq!(p.filtered, one.filtered, "part {i}: filtered map");
    }
}
