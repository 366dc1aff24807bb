//! α-expansion engine and stereo: energy never increases, every move is the optimal expansion
//! (checked by enumeration on tiny images), labellings identical across CPU solvers, Middlebury
//! scoring against hand-computed rates, disparity I/O, the graph export replayed, multi-label
//! segmentation on a synthetic image.

mod common;

use segcut::graph::{Connectivity, GridGraph};
use segcut::io::{decode_disparity, encode_disparity, DisparityFormat, Image};
use segcut::maxflow::{bk::Bk, MaxFlow, SolveOptions, Solver, SolverKind};
use segcut::rng::Rng;
use segcut::stereo::eval::{bad_pixels, score, Masks};
use segcut::stereo::{
    build_move, energy, expand, CostVolume, ExpansionOptions, Pairwise, PairwiseModel,
};

fn random_problem(
    rng: &mut Rng,
    w: usize,
    h: usize,
    labels: usize,
    conn: Connectivity,
    distance: Pairwise,
) -> (CostVolume, PairwiseModel) {
    let cost = CostVolume::from_fn(w, h, labels, |_, _, _| rng.below(20) as i32).unwrap();
    let model = PairwiseModel::from_fn(w, h, conn, distance, |_, _| rng.below(8) as i32).unwrap();
    (cost, model)
}

fn distances() -> [Pairwise; 3] {
    [
        Pairwise::Potts,
        Pairwise::TruncatedLinear { truncation: 1 },
        Pairwise::TruncatedLinear { truncation: 3 },
    ]
}

fn bk_opts() -> ExpansionOptions {
    let mut o = ExpansionOptions::default();
    o.solve.verify = true; // every move's certificate checked
    o
}

#[test]
fn energy_never_increases() {
    let mut rng = Rng::new(12);
    for trial in 0..24 {
        let conn = if trial % 2 == 0 {
            Connectivity::N4
        } else {
            Connectivity::N8
        };
        let d = distances()[trial % 3];
        let (cost, model) = random_problem(&mut rng, 9, 7, 5, conn, d);
        // Start from a random labelling so that the first pass has work to do.
        let mut opts = bk_opts();
        opts.initial = Some((0..63).map(|_| rng.below(5) as u16).collect());
        let r = expand(&cost, &model, &opts).unwrap();
        let mut prev = r.initial_energy;
        for m in &r.moves {
            assert!(
                m.energy <= prev,
                "trial {trial}: move to {} raised the energy",
                m.label
            );
            prev = m.energy;
        }
        for w in r.passes.windows(2) {
            assert!(w[1].energy <= w[0].energy);
        }
        assert!(r.converged);
        assert_eq!(
            r.energy,
            energy(&cost, &model, &r.labels).unwrap(),
            "trial {trial}"
        );
        assert!(
            r.energy < r.initial_energy,
            "trial {trial}: a random start is improvable"
        );
    }
}

/// The energy of the move "pixels in `set` take α".
fn move_energy(
    cost: &CostVolume,
    model: &PairwiseModel,
    labels: &[u16],
    alpha: u16,
    set: u32,
) -> i64 {
    let l: Vec<u16> = (0..labels.len())
        .map(|p| if set >> p & 1 == 1 { alpha } else { labels[p] })
        .collect();
    energy(cost, model, &l).unwrap()
}

#[test]
fn every_move_is_the_optimal_expansion() {
    let mut rng = Rng::new(7);
    let (w, h) = (4, 3); // 12 pixels: 4096 moves per label, enumerated
    for trial in 0..30 {
        let conn = if trial % 3 == 0 {
            Connectivity::N8
        } else {
            Connectivity::N4
        };
        let d = distances()[trial % 3];
        let (cost, model) = random_problem(&mut rng, w, h, 4, conn, d);
        let labels: Vec<u16> = (0..w * h).map(|_| rng.below(4) as u16).collect();
        let mut g = GridGraph::new_2d(w, h, conn).unwrap();
        for alpha in 0..4u16 {
            build_move(&cost, &model, &labels, alpha, &mut g);
            g.validate().unwrap();
            let cut = Bk::default().solve_grid(&g).unwrap();
            let mut chosen = 0u32;
            for p in 0..w * h {
                if cut.sink_side[p] {
                    chosen |= 1 << p;
                }
            }
            let got = move_energy(&cost, &model, &labels, alpha, chosen);
            let energies: Vec<i64> = (0..1u32 << (w * h))
                .map(|s| move_energy(&cost, &model, &labels, alpha, s))
                .collect();
            let best = *energies.iter().min().unwrap();
            assert_eq!(
                got, best,
                "trial {trial}, α = {alpha}: the cut is not the best move"
            );
            // The flow is the move's energy up to a constant: the same constant for every move
            // of this labelling and α, so the cut value of any set differs by the energy gap.
            let keep = energies[0];
            let cap_keep = {
                use segcut::graph::FlowNetwork;
                g.cut_capacity(&vec![false; w * h]) as i64
            };
            assert_eq!(
                cut.flow - best,
                cap_keep - keep,
                "trial {trial}, α = {alpha}"
            );
        }
    }
}

#[test]
fn labellings_identical_across_cpu_solvers() {
    let mut rng = Rng::new(99);
    for trial in 0..6 {
        let d = distances()[trial % 3];
        // Few distinct costs and weights: many ties, where only the canonical cut decides.
        let cost = CostVolume::from_fn(20, 15, 6, |_, _, _| rng.below(4) as i32 * 3).unwrap();
        let model = PairwiseModel::from_fn(20, 15, Connectivity::N4, d, |_, _| 3).unwrap();
        let run = |kind: SolverKind| {
            let o = ExpansionOptions {
                solve: SolveOptions::with_solver(kind),
                ..Default::default()
            };
            expand(&cost, &model, &o).unwrap()
        };
        let bk = run(SolverKind::Bk);
        for kind in [SolverKind::Dinic, SolverKind::Auto] {
            let other = run(kind);
            assert_eq!(
                other.labels, bk.labels,
                "trial {trial}: {kind} labelling differs"
            );
            assert_eq!(other.energy, bk.energy);
            let flows: Vec<i64> = other.moves.iter().map(|m| m.flow).collect();
            assert_eq!(flows, bk.moves.iter().map(|m| m.flow).collect::<Vec<_>>());
        }
    }
}

#[test]
fn expansion_reaches_the_global_optimum_of_two_labels() {
    // With two labels and Potts, one expansion is an exact binary cut: compare to enumeration.
    let mut rng = Rng::new(3);
    for _ in 0..10 {
        let (cost, model) = random_problem(&mut rng, 4, 3, 2, Connectivity::N4, Pairwise::Potts);
        let r = expand(&cost, &model, &bk_opts()).unwrap();
        let best = (0..1u32 << 12)
            .map(|s| {
                let l: Vec<u16> = (0..12).map(|p| (s >> p & 1) as u16).collect();
                energy(&cost, &model, &l).unwrap()
            })
            .min()
            .unwrap();
        assert_eq!(r.energy, best);
    }
}

#[test]
fn bad_input_is_an_error() {
    assert!(CostVolume::new(2, 2, 2, vec![0; 7]).is_err());
    assert!(CostVolume::new(2, 1, 1, vec![0, segcut::stereo::MAX_COST + 1]).is_err());
    let cost = CostVolume::new(2, 1, 2, vec![0; 4]).unwrap();
    let mut model = PairwiseModel::uniform(2, 1, Pairwise::Potts, 1);
    model.weights[0][0] = -1;
    let e = expand(&cost, &model, &ExpansionOptions::default()).unwrap_err();
    assert!(e.to_string().contains("x=0, y=0"), "{e}");
    let ok = PairwiseModel::uniform(2, 1, Pairwise::Potts, 1);
    let bad_init = ExpansionOptions {
        initial: Some(vec![0, 5]),
        ..Default::default()
    };
    let e = expand(&cost, &ok, &bad_init).unwrap_err();
    assert!(e.to_string().contains("label 5"), "{e}");
    let wrong_size = PairwiseModel::uniform(3, 1, Pairwise::Potts, 1);
    assert!(expand(&cost, &wrong_size, &ExpansionOptions::default()).is_err());
}

#[test]
fn bad_pixel_rates_by_hand() {
    // 4×2 scene. gt: row 0 = 1 2 3 4, row 1 = 5 NaN 7 8.
    let nan = f32::NAN;
    let gt = [1.0, 2.0, 3.0, 4.0, 5.0, nan, 7.0, 8.0];
    // Errors:     0    1.5   1.0  -2   unknown  x   0.25  3
    let est = [1.0, 3.5, 4.0, 2.0, nan, 9.0, 7.25, 11.0];
    let masks = Masks {
        // nonocc: pixels 0, 1, 2, 6 → bad: 1 (1.5 > 1; 1.0 is not > 1) → 1/4 = 25 %
        nonocc: vec![true, true, true, false, false, false, true, false],
        // all: every pixel; pixel 5 has no gt (not counted): 7 counted, bad: 1, 3, 4, 7 → 4/7
        all: vec![true; 8],
        // disc: pixels 3 and 4 → both bad → 100 %
        disc: vec![false, false, false, true, true, false, false, false],
    };
    let s = score(&est, &gt, &masks, 1.0).unwrap();
    assert_eq!(s.counted, [4, 7, 2]);
    assert!((s.nonocc - 25.0).abs() < 1e-9);
    assert!((s.all - 400.0 / 7.0).abs() < 1e-9);
    assert!((s.disc - 100.0).abs() < 1e-9);
    // Threshold 0.5: 1.0 is now bad too in nonocc.
    assert_eq!(bad_pixels(&est, &gt, &masks.nonocc, 0.5).unwrap(), (2, 4));
    assert!(bad_pixels(&est[..3], &gt, &masks.all, 1.0).is_err());
}

#[test]
fn disparity_files_round_trip() {
    let (w, h) = (5, 3);
    let disp: Vec<f32> = (0..w * h).map(|i| (i % 7) as f32 + 1.0).collect();
    for (fmt, scale) in [
        (DisparityFormat::Png8 { scale: 16.0 }, 16.0),
        (DisparityFormat::Png16 { scale: 256.0 }, 256.0),
        (DisparityFormat::Pfm, 1.0),
    ] {
        let bytes = encode_disparity(&disp, w, h, fmt).unwrap();
        let (bw, bh, back) = decode_disparity(&bytes, "t", scale).unwrap();
        assert_eq!((bw, bh), (w, h));
        assert_eq!(back, disp, "{fmt:?}");
    }
    // PFM stores the bottom row first: check against an independent reading of the bytes.
    let pfm = encode_disparity(&disp, w, h, DisparityFormat::Pfm).unwrap();
    let header = b"Pf\n5 3\n-1\n".len();
    let first_stored = f32::from_le_bytes(pfm[header..header + 4].try_into().unwrap());
    assert_eq!(first_stored, disp[w * (h - 1)]);
    let color = encode_disparity(&disp, w, h, DisparityFormat::Color).unwrap();
    let img = image::load_from_memory(&color).unwrap().into_rgb8();
    assert_ne!(img.get_pixel(0, 0), img.get_pixel(6 % w as u32, 1)); // d = 1 vs d = 7
    assert!(decode_disparity(b"Pf\n5 3\n-1\n\0\0", "short.pfm", 1.0)
        .unwrap_err()
        .to_string()
        .contains("short.pfm"));
}

/// A textured synthetic pair: a background at disparity 2 and a square at disparity 6. The
/// ground truth is NaN at background pixels the square hides in the right view.
pub fn synthetic_pair(w: usize, h: usize) -> (Image, Image, Vec<f32>) {
    let tex = |x: i64, y: i64| {
        let v = (x.wrapping_mul(2654435761) ^ y.wrapping_mul(40503)).rem_euclid(251);
        v as f32
    };
    let inside = |x: usize, y: usize| x >= w / 3 && x < 2 * w / 3 && y >= h / 4 && y < 3 * h / 4;
    let mut gt = vec![0f32; w * h];
    let mut left = vec![0f32; w * h];
    let mut right = vec![0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let d = if inside(x, y) { 6 } else { 2 };
            let occluded = d == 2 && x + 4 < w && inside(x + 4, y);
            gt[x + w * y] = if occluded { f32::NAN } else { d as f32 };
            // The left view samples the scene at x − d in scene coordinates of the right view.
            left[x + w * y] = tex(x as i64 - d, y as i64 + if d == 6 { 1000 } else { 0 });
        }
    }
    for y in 0..h {
        for xr in 0..w {
            // The right view sees the square where it covers column xr, else the background.
            let xs = xr + 6;
            let d = if xs < w && inside(xs, y) { 6 } else { 2 };
            right[xr + w * y] = tex(xr as i64, y as i64 + if d == 6 { 1000 } else { 0 });
        }
    }
    (
        Image::new([w, h, 1], 1, left),
        Image::new([w, h, 1], 1, right),
        gt,
    )
}

#[test]
fn stereo_recovers_a_synthetic_scene() {
    use segcut::stereo::{stereo, DataTerm, StereoOptions};
    let (w, h) = (60, 40);
    let (l, r, gt) = synthetic_pair(w, h);
    for data in [DataTerm::Bt, DataTerm::BtCensus] {
        let mut opts = StereoOptions {
            num_disparities: 10,
            ..Default::default()
        };
        opts.cost.data = data;
        let res = stereo(&l, &r, &opts).unwrap();
        // Score away from the left border (no match there) and the occluded band.
        let mask: Vec<bool> = (0..w * h).map(|p| p % w >= 8).collect();
        let (bad, n) = bad_pixels(&res.disparity(), &gt, &mask, 0.5).unwrap();
        assert!(
            (bad as f64) < 0.05 * n as f64,
            "{data:?}: {bad} of {n} pixels wrong"
        );
        assert!(res.expansion.converged);
    }
}

#[test]
fn export_replays_with_its_sol_values() {
    use segcut::io::dimacs::{read_instances, ReadOptions};
    use segcut::stereo::export::{export_first_pass, ExportOptions};
    use segcut::stereo::{cost_volume, pair_weights, StereoOptions};
    let (l, r, _) = synthetic_pair(30, 20);
    let opts = StereoOptions {
        num_disparities: 8,
        ..Default::default()
    };
    let cost = cost_volume(&l, &r, 0, 8, &opts.cost).unwrap();
    let model = pair_weights(&l, &opts).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for tbz2 in [false, true] {
        let sub = dir.path().join(if tbz2 { "packed" } else { "loose" });
        let ex = ExportOptions {
            name: "syn".into(),
            tbz2,
        };
        let files = export_first_pass(&cost, &model, &opts.expansion, &sub, &ex).unwrap();
        assert_eq!(files.len(), 8);
        // Each graph solved afresh from its file must give the value in its .sol.
        let mut seen = 0;
        let mut check = |inst: segcut::io::dimacs::MaxInstance| {
            let expected = inst
                .expected_flow
                .unwrap_or_else(|| panic!("no .sol value for {}", inst.name));
            let got = MaxFlow::new(SolveOptions::with_solver(SolverKind::Bk))
                .solve(&inst.network)
                .unwrap();
            assert_eq!(got.cut.flow, expected, "{}", inst.name);
            let file = inst.name.rsplit(['/', ':']).next().unwrap();
            let label: u16 = file
                .strip_prefix("syn")
                .and_then(|f| f.strip_suffix(".max"))
                .unwrap_or_else(|| panic!("instance name {}", inst.name))
                .parse()
                .unwrap();
            assert_eq!(
                files.iter().find(|f| f.label == label).unwrap().flow,
                expected
            );
            seen += 1;
            Ok(())
        };
        if tbz2 {
            read_instances(&sub.join("syn.tbz2"), &ReadOptions::default(), &mut check).unwrap();
        } else {
            for f in &files {
                read_instances(&f.path, &ReadOptions::default(), &mut check).unwrap();
            }
        }
        assert_eq!(seen, 8);
        assert!(files.iter().any(|f| f.flow > 0));
    }
}

#[test]
fn multilabel_segments_a_synthetic_image() {
    use segcut::stereo::multilabel::{multilabel, MultilabelOptions};
    // Three colour regions (red left, green top right, blue bottom right) with noise.
    let (w, h) = (48, 32);
    let mut rng = Rng::new(5);
    let truth = |x: usize, y: usize| -> u16 {
        if x < w / 2 {
            0
        } else if y < h / 2 {
            1
        } else {
            2
        }
    };
    let base = [
        [200.0, 30.0, 30.0],
        [30.0, 180.0, 40.0],
        [40.0, 40.0, 190.0],
    ];
    let mut data = Vec::new();
    for y in 0..h {
        for x in 0..w {
            for c in base[truth(x, y) as usize] {
                let noise = rng.below(61) as f32 - 30.0;
                data.push((c + noise).clamp(0.0, 255.0));
            }
        }
    }
    let img = Image::new([w, h, 1], 3, data);
    let mut seeds = vec![0u16; w * h];
    for (x, y) in [(5, 16), (40, 5), (40, 28)] {
        for dx in 0..4 {
            seeds[x + dx + w * y] = truth(x, y) + 1;
        }
    }
    let r = multilabel(&img, &seeds, 3, &MultilabelOptions::default()).unwrap();
    let wrong = (0..w * h)
        .filter(|&p| r.labels[p] != truth(p % w, p / w))
        .count();
    assert!(
        wrong < w * h / 50,
        "{wrong} of {} pixels mislabelled",
        w * h
    );
    // A label without seeds is an error, not a panic.
    seeds.iter_mut().filter(|s| **s == 3).for_each(|s| *s = 0);
    assert!(multilabel(&img, &seeds, 3, &MultilabelOptions::default()).is_err());
}
