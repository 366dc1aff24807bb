//! `segment::session::Segmenter`: a session kept across images gives the one-shot masks, on the
//! CPU and (when a GPU is usable; required under `SEGCUT_REQUIRE_GPU=1`) on the GPU, where its
//! solvers' sessions and buffers are reused from image to image.

mod common;

use segcut::maxflow::SolverKind;
use segcut::rng::Rng;
use segcut::segment::session::{warm_up, Segmenter};
use segcut::segment::{segment, Image, Seed, Seeds, SegmentOptions};

/// A noisy blob on a background, its position and colours varying with `seed`.
fn picture(w: usize, h: usize, seed: u64) -> (Image, Seeds) {
    let mut rng = Rng::new(seed);
    let (cx, cy) = (w / 3 + rng.below(w as u64 / 3) as usize, h / 2);
    let r = (h / 4) as f32 + rng.below(4) as f32;
    let fg = [30.0 + rng.below(60) as f32, 150.0, 60.0];
    let bg = [200.0, 90.0 + rng.below(60) as f32, 40.0];
    let mut data = Vec::with_capacity(w * h * 3);
    for i in 0..w * h {
        let (x, y) = ((i % w) as f32, (i / w) as f32);
        let inside = ((x - cx as f32).powi(2) + (y - cy as f32).powi(2)).sqrt() < r;
        let c = if inside { fg } else { bg };
        for v in c {
            data.push((v + rng.below(50) as f32 - 25.0).clamp(0.0, 255.0).round());
        }
    }
    let image = Image::new([w, h, 1], 3, data);
    let mut seeds = Seeds::unknown(image.dims);
    // A 5×5 foreground stroke: two seed pixels fit the foreground model too poorly for the
    // stroke prior's defaults to grow anything from them (every mask was the seeds alone).
    for y in cy - 2..=cy + 2 {
        for x in cx - 2..=cx + 2 {
            seeds.labels[x + w * y] = Seed::Foreground;
        }
    }
    for x in 0..w {
        seeds.labels[x] = Seed::Background;
        seeds.labels[x + w * (h - 1)] = Seed::Background;
    }
    (image, seeds)
}

/// Segments every picture with one segmenter and each with a one-shot `segment`: same masks,
/// flows and energies. The list repeats a picture and mixes sizes, so both a reuse of the same
/// size and a change of size come up.
fn same_as_one_shot(opts: &SegmentOptions) {
    let pictures: Vec<(Image, Seeds)> = [
        (64, 48, 1),
        (64, 48, 2),
        (64, 48, 1),
        (50, 70, 3),
        (64, 48, 4),
    ]
    .iter()
    .map(|&(w, h, s)| picture(w, h, s))
    .collect();
    let mut session = Segmenter::new(opts.clone());
    let mut foregrounds = Vec::new();
    for (image, seeds) in &pictures {
        let kept = session.segment(image, seeds).unwrap();
        let fresh = segment(image, seeds, opts).unwrap();
        assert_eq!(kept.mask, fresh.mask);
        assert_eq!(kept.flow, fresh.flow);
        assert_eq!(kept.energy, fresh.energy);
        assert_eq!(kept.stats.solver.solver, fresh.stats.solver.solver);
        foregrounds.push(kept.mask.iter().filter(|&&m| m).count());
    }
    // The pictures differ: a test that sees one mask over and over would prove nothing.
    assert!(
        foregrounds.iter().any(|&f| f != foregrounds[0]),
        "{foregrounds:?}"
    );
    assert!(foregrounds.iter().all(|&f| f > 0), "{foregrounds:?}");
}

#[test]
fn segmenter_gives_the_one_shot_masks_on_the_cpu() {
    for warm_start in [true, false] {
        same_as_one_shot(&SegmentOptions {
            solver: SolverKind::Bk,
            warm_start,
            ..SegmentOptions::default()
        });
    }
}

#[test]
fn gpu_segmenter_gives_the_one_shot_masks() {
    if !common::gpu_or_skip() {
        return;
    }
    let device = SegmentOptions::default().device;
    warm_up(device).unwrap();
    for warm_start in [true, false] {
        same_as_one_shot(&SegmentOptions {
            solver: SolverKind::CudaGrid,
            warm_start,
            ..SegmentOptions::default()
        });
    }
}

/// Without a GPU the warm-up says why instead of failing later or panicking.
#[test]
fn warm_up_without_a_gpu_is_an_error_not_a_panic() {
    let device = SegmentOptions::default().device;
    match (warm_up(device), device.unavailable_reason()) {
        (Ok(_), None) => {}
        (Err(e), Some(_)) => assert!(!e.to_string().is_empty()),
        (r, why) => panic!("warm-up {r:?} but the device says {why:?}"),
    }
}

/// The second image of the same size on a kept segmenter costs no device allocation: the GPU
/// build takes its stream, kernels and buffers from the first image's, and the solvers (on that
/// stream) their buffers from their last solve. Masks stay the one-shot ones. A third image of
/// another size allocates again, and a fourth of that size does not.
#[test]
fn gpu_segmenter_allocates_nothing_for_an_image_of_the_same_size() {
    if !common::gpu_or_skip() {
        return;
    }
    for warm_start in [true, false] {
        let opts = SegmentOptions {
            solver: SolverKind::CudaGrid,
            warm_start,
            ..SegmentOptions::default()
        };
        let mut session = Segmenter::new(opts.clone());
        let mut last = None;
        for (i, &(w, h, seed)) in [(96, 64, 1), (96, 64, 2), (80, 72, 3), (80, 72, 4)]
            .iter()
            .enumerate()
        {
            let (image, seeds) = picture(w, h, seed);
            let before = session.device_allocations();
            let kept = session.segment(&image, &seeds).unwrap();
            let fresh = segment(&image, &seeds, &opts).unwrap();
            assert_eq!(kept.mask, fresh.mask, "image {i}");
            assert_eq!(kept.flow, fresh.flow, "image {i}");
            let gpu = kept.stats.gpu.as_ref().expect("built on the GPU");
            let added = session.device_allocations() - before;
            let same_size = last == Some((w, h));
            if same_size {
                assert!(gpu.reused, "image {i}: the build's state was not kept");
                assert_eq!(gpu.allocations, 0, "image {i}: the build allocated");
                assert_eq!(
                    added, 0,
                    "image {i} (warm {warm_start}): {added} allocations"
                );
            } else {
                // A new size must allocate: a counter that never moves would prove nothing.
                assert!(added > 0 && gpu.allocations > 0, "image {i}: {added}");
            }
            assert_eq!(gpu.reused, i > 0, "image {i}");
            last = Some((w, h));
        }
    }
}

/// The GPU path (graph built and cut on the device, samples gathered there, one kept segmenter
/// across all photos: 481×321 and 321×481 alternate, so buffers are reused and replaced) against
/// the CPU path (`bk`, host build, one-shot) on the dev photos, both scribble sets: the same
/// masks. The GPU path runs in a 4-thread pool and the CPU path in a 1-thread pool, so the
/// model fits' chunked sums must not depend on the thread count either.
#[test]
fn gpu_segmenter_masks_equal_the_cpu_path_on_the_dev_photos() {
    if !common::gpu_or_skip() {
        return;
    }
    if common::shared_data().is_none() {
        return;
    }
    let gpu_opts = SegmentOptions {
        solver: SolverKind::CudaGrid,
        ..SegmentOptions::default()
    };
    let cpu_opts = SegmentOptions {
        solver: SolverKind::Bk,
        gpu_build: false,
        ..SegmentOptions::default()
    };
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let (four, one) = (pool(4), pool(1));
    let mut session = Segmenter::new(gpu_opts);
    let (mut reused, mut runs) = (0, 0);
    for set in [1, 2] {
        for (id, image, seeds) in common::load_dev_photos(set) {
            runs += 1;
            let g = four.install(|| session.segment(&image, &seeds).unwrap());
            let c = one.install(|| segment(&image, &seeds, &cpu_opts).unwrap());
            let gpu = g.stats.gpu.as_ref().expect("built on the GPU");
            reused += (gpu.allocations == 0) as usize;
            let d = g.mask.iter().zip(&c.mask).filter(|(a, b)| a != b).count();
            assert_eq!(
                d,
                0,
                "{id} {set}: {d} pixels differ (flow {} / {}, rounds {} / {})",
                g.flow,
                c.flow,
                g.stats.iterations_run(),
                c.stats.iterations_run()
            );
        }
    }
    // Photos of one orientation follow each other: most builds must have allocated nothing.
    assert!(
        runs > 0 && reused * 4 >= runs,
        "{reused} of {runs} builds reused"
    );
}

/// The host waits and device allocations of a segmentation (issue 22): none on the CPU, in
/// every phase of the report and of `--stats-json`'s shape, and the round counts add up.
#[test]
fn cpu_segmentation_counts_no_host_waits_or_device_allocations() {
    use segcut::cuda::DeviceCounts;
    use segcut::segment::report::Report;
    let (image, seeds) = picture(48, 32, 7);
    let opts = SegmentOptions {
        solver: SolverKind::Bk,
        ..SegmentOptions::default()
    };
    let before = DeviceCounts::on_this_thread();
    let seg = segment(&image, &seeds, &opts).unwrap();
    assert_eq!(
        DeviceCounts::on_this_thread().since(before),
        DeviceCounts::ZERO
    );
    let r = Report::new(&seg, &opts);
    for c in [&r.host_waits, &r.device_allocations] {
        assert_eq!(c.total, 0);
        assert_eq!(c.rounds.len(), seg.stats.iterations.len());
    }
    for it in &r.iterations {
        assert_eq!(it.host_waits, Default::default());
        assert_eq!(it.device_allocations, Default::default());
    }
    let json = serde_json::to_value(&r).unwrap();
    for k in ["host_waits", "device_allocations"] {
        for phase in ["prepare", "models", "graph", "rounds", "post", "total"] {
            assert!(json[k].get(phase).is_some(), "{k} lacks {phase}");
        }
        for phase in ["models", "graph", "solve", "verify", "total"] {
            assert!(
                json["iterations"][0][k].get(phase).is_some(),
                "{k} lacks {phase}"
            );
        }
    }
}

/// A round's counts from the thread's readings after each phase: each phase its difference,
/// the total the whole round's.
#[test]
fn round_counts_split_the_readings_by_phase() {
    use segcut::cuda::DeviceCounts;
    use segcut::segment::pipeline::RoundCounts;
    let at = |w: u64, a: u64| DeviceCounts {
        host_waits: w,
        device_allocations: a,
    };
    let (w, a) = RoundCounts::of([at(10, 5), at(12, 5), at(12, 6), at(17, 6), at(18, 6)]);
    assert_eq!(
        w,
        RoundCounts {
            models: 2,
            graph: 0,
            solve: 5,
            verify: 1,
            total: 8
        }
    );
    assert_eq!(
        a,
        RoundCounts {
            models: 0,
            graph: 1,
            solve: 0,
            verify: 0,
            total: 1
        }
    );
    assert_eq!(at(3, 1).since(at(1, 1)), at(2, 0));
    assert_eq!(at(3, 1).plus(at(1, 1)), at(4, 2));
    // Process-wide readings never go back.
    assert!(segcut::cuda::host_waits() >= DeviceCounts::on_this_thread().host_waits);
    assert!(
        segcut::cuda::device_allocations() >= DeviceCounts::on_this_thread().device_allocations
    );
}
