//! Warm-started solves (dynamic graph cuts) against solves from scratch: random grids, random
//! terminal changes over several rounds; each warm result must have the flow value and the
//! canonical cut of a from-scratch BK solve and of the Dinic reference, and a certificate.

mod common;

use segcut::graph::{Cap, Connectivity, GridGraph};
use segcut::maxflow::reference::Dinic;
use segcut::maxflow::{verify, Bk, Dynamic, Solver, SolverKind};
use segcut::rng::Rng;

/// A grid with random n-links (a third of them zero) and random terminals.
fn random_grid(rng: &mut Rng, conn: Connectivity, max_side: u64, hi: u64) -> GridGraph {
    let side = |rng: &mut Rng| 1 + rng.below(max_side) as usize;
    let (w, h) = (side(rng), side(rng));
    let d = if conn.is_3d() { side(rng) } else { 1 };
    let mut g = GridGraph::new(w, h, d, conn).unwrap();
    for dir in 0..conn.degree() {
        for v in 0..g.num_nodes() {
            if g.neighbor(v, dir).is_some() && rng.below(3) > 0 {
                g.caps_mut(dir)[v] = rng.below(hi) as Cap;
            }
        }
    }
    randomise_terminals(rng, &mut g, 1.0, hi);
    g
}

/// Gives a random `fraction` of the nodes new terminal capacities below `hi`: some zero, some
/// on one side only, some on both.
fn randomise_terminals(rng: &mut Rng, g: &mut GridGraph, fraction: f64, hi: u64) -> usize {
    let mut changed = 0;
    for v in 0..g.num_nodes() {
        if (rng.below(1000) as f64) >= fraction * 1000.0 {
            continue;
        }
        let (s, t) = match rng.below(4) {
            0 => (0, 0),
            1 => (rng.below(hi) as Cap, 0),
            2 => (0, rng.below(hi) as Cap),
            _ => (rng.below(hi) as Cap, rng.below(hi) as Cap),
        };
        g.set_terminals(v, s, t);
        changed += 1;
    }
    changed
}

/// Checks one warm result against BK and Dinic from scratch.
fn check(g: &GridGraph, warm: &segcut::maxflow::Solved, what: &str) {
    let scratch = Bk::default().solve_grid(g).unwrap();
    let reference = Dinic.solve_grid(g).unwrap();
    assert_eq!(scratch.flow, reference.flow, "{what}: bk vs dinic");
    assert_eq!(warm.cut.flow, scratch.flow, "{what}: warm flow");
    assert_eq!(
        warm.cut.sink_side, scratch.sink_side,
        "{what}: warm cut differs from the canonical cut"
    );
    assert_eq!(
        scratch.sink_side, reference.sink_side,
        "{what}: bk vs dinic cut"
    );
    let cert = warm.certificate.expect("verify was asked for");
    assert_eq!(cert, verify(g, &warm.cut).unwrap(), "{what}");
    assert_eq!(cert.cut_capacity, scratch.flow, "{what}");
}

/// Several rounds of random terminal changes on random grids of each connectivity: every warm
/// round agrees with solves from scratch.
#[test]
fn warm_rounds_match_scratch_solves() {
    let mut rng = Rng::new(13);
    let mut warm_rounds = 0;
    let mut flows_changed = 0;
    for (k, conn) in [Connectivity::N4, Connectivity::N8, Connectivity::N6]
        .into_iter()
        .cycle()
        .take(240)
        .enumerate()
    {
        let hi = [4, 20, 1000][k % 3];
        let mut g = random_grid(&mut rng, conn, if conn.is_3d() { 6 } else { 14 }, hi);
        let mut dynamic =
            Dynamic::new(SolverKind::Bk, true, segcut::cuda::Device::default()).unwrap();
        let first = dynamic.solve(&g).unwrap();
        check(&g, &first, &format!("case {k} {conn} first"));
        assert!(!dynamic.last_was_warm());
        let mut before = first.cut.flow;
        for round in 1..=5 {
            let fraction = [1.0, 0.5, 0.1, 0.02, 0.3][round - 1];
            randomise_terminals(&mut rng, &mut g, fraction, hi);
            let warm = dynamic.resolve(&g).unwrap();
            assert!(dynamic.last_was_warm(), "case {k} round {round} fell back");
            check(&g, &warm, &format!("case {k} {conn} round {round}"));
            warm_rounds += 1;
            flows_changed += (warm.cut.flow != before) as usize;
            before = warm.cut.flow;
        }
    }
    assert_eq!(warm_rounds, 240 * 5);
    // The changes must have moved the answer, or the test proves little.
    assert!(flows_changed > 500, "only {flows_changed} flows changed");
}

/// GrabCut-like rounds on a larger grid: strong n-links, t-links that move a little each round
/// (a few percent of the nodes), through [`Dynamic::update_terminals`].
#[test]
fn small_updates_on_a_larger_grid() {
    let mut rng = Rng::new(5);
    for conn in [Connectivity::N4, Connectivity::N8, Connectivity::N6] {
        let (w, h, d) = if conn.is_3d() {
            (24, 20, 10)
        } else {
            (96, 80, 1)
        };
        let mut g = GridGraph::new(w, h, d, conn).unwrap();
        for dir in 0..conn.degree() {
            for v in 0..g.num_nodes() {
                if g.neighbor(v, dir).is_some() {
                    g.caps_mut(dir)[v] = 20 + rng.below(40) as Cap;
                }
            }
        }
        // A blob of source preference in the middle, sink preference outside.
        let blob = |g: &GridGraph, v: usize| {
            let [x, y, z] = g.coords(v);
            let (dx, dy, dz) = (
                x as f64 - w as f64 / 2.0,
                y as f64 - h as f64 / 2.0,
                z as f64,
            );
            (dx * dx + dy * dy + dz * dz).sqrt() < w.min(h) as f64 / 3.0
        };
        for v in 0..g.num_nodes() {
            let noise = rng.below(60) as Cap;
            if blob(&g, v) {
                g.set_terminals(v, 40 + noise, noise / 2);
            } else {
                g.set_terminals(v, noise / 2, 40 + noise);
            }
        }
        let mut dynamic =
            Dynamic::new(SolverKind::Bk, true, segcut::cuda::Device::default()).unwrap();
        let first = dynamic.solve(&g).unwrap();
        check(&g, &first, &format!("{conn} first"));
        for round in 1..=4 {
            let changes: Vec<(usize, Cap, Cap)> = (0..g.num_nodes() / 20)
                .map(|_| {
                    let v = rng.below(g.num_nodes() as u64) as usize;
                    (v, rng.below(120) as Cap, rng.below(120) as Cap)
                })
                .collect();
            let warm = dynamic.update_terminals(&mut g, &changes).unwrap();
            assert!(dynamic.last_was_warm());
            for &(v, s, t) in &changes {
                // The last change of a node wins.
                let last = changes.iter().rev().find(|c| c.0 == v).unwrap();
                if (s, t) == (last.1, last.2) {
                    assert_eq!((g.source_caps()[v], g.sink_caps()[v]), (s, t));
                }
            }
            check(&g, &warm, &format!("{conn} round {round}"));
        }
    }
}

/// Terminal capacities near `i32::MAX` whose folded residual overflows: the solver falls back to
/// a solve from scratch and still answers exactly.
#[test]
fn overflowing_updates_fall_back_to_scratch() {
    let mut g = GridGraph::new_2d(3, 1, Connectivity::N4).unwrap();
    g.set_arc(0, 1, Cap::MAX / 2).unwrap();
    g.set_arc(1, 2, Cap::MAX / 2).unwrap();
    g.set_terminals(0, Cap::MAX, 0);
    g.set_terminals(2, 0, Cap::MAX);
    let mut dynamic = Dynamic::new(SolverKind::Bk, true, segcut::cuda::Device::default()).unwrap();
    dynamic.solve(&g).unwrap();
    // Node 2 receives MAX/2 through its arc, so its folded residual is about −MAX/2; moving
    // all of its capacity from the sink arc to the source arc adds 2·MAX to it, past i32.
    let s = dynamic
        .update_terminals(&mut g, &[(0, Cap::MAX, Cap::MAX), (2, Cap::MAX, 0)])
        .unwrap();
    assert!(!dynamic.last_was_warm(), "the overflow was not noticed");
    check(&g, &s, "overflow");
    let s = dynamic
        .update_terminals(&mut g, &[(0, 0, 0), (1, Cap::MAX, 0), (2, 0, Cap::MAX)])
        .unwrap();
    assert!(dynamic.last_was_warm());
    check(&g, &s, "after overflow");
}

/// Bad input: a node outside the grid, a negative capacity, a solver that keeps no state.
#[test]
fn bad_updates_are_errors() {
    let mut g = GridGraph::new_2d(2, 2, Connectivity::N4).unwrap();
    g.set_terminals(0, 3, 0);
    g.set_terminals(3, 0, 3);
    let mut dynamic = Dynamic::new(SolverKind::Bk, true, segcut::cuda::Device::default()).unwrap();
    dynamic.solve(&g).unwrap();
    let e = dynamic.update_terminals(&mut g, &[(4, 1, 1)]).unwrap_err();
    assert!(e.to_string().contains("node 4"), "{e}");
    let e = dynamic.update_terminals(&mut g, &[(1, -1, 0)]).unwrap_err();
    assert!(e.to_string().contains("negative"), "{e}");
    assert!(Dynamic::new(SolverKind::Dinic, true, segcut::cuda::Device::default()).is_err());
}

/// GrabCut rounds warm-started on the CPU give the masks, flows and energies of rounds solved
/// from scratch, round by round, on dev photos.
#[test]
fn grabcut_rounds_warm_equal_scratch_on_dev_photos() {
    use segcut::segment::{segment, SegmentOptions};
    let photos = common::load_dev_photos(1);
    if photos.is_empty() {
        common::skipped("no shared data");
        return;
    }
    assert!(photos.len() >= 3);
    let mut warm_rounds = 0;
    for (id, image, seeds) in photos.iter().take(3) {
        let opts = |warm_start| SegmentOptions {
            solver: SolverKind::Bk,
            warm_start,
            ..SegmentOptions::default()
        };
        let warm = segment(image, seeds, &opts(true)).unwrap();
        let cold = segment(image, seeds, &opts(false)).unwrap();
        assert!(warm.verified && cold.verified);
        assert_eq!(warm.mask, cold.mask, "{id}: masks differ");
        assert_eq!(warm.flow, cold.flow, "{id}");
        let (w, c) = (&warm.stats.iterations, &cold.stats.iterations);
        assert_eq!(w.len(), c.len(), "{id}: rounds run");
        for (r, (w, c)) in w.iter().zip(c).enumerate() {
            assert_eq!(
                (w.flow, w.changed),
                (c.flow, c.changed),
                "{id} round {}",
                r + 1
            );
            assert!(!c.warm);
            assert_eq!(w.warm, r > 0, "{id} round {}", r + 1);
            warm_rounds += w.warm as usize;
        }
    }
    assert!(warm_rounds >= 3, "only {warm_rounds} warm rounds ran");
}

/// `segcut segment --solver bk`: rounds 2.. run warm by default and cold with
/// `--no-warm-start`, the masks are the same, and `phases_ms` adds up to its total.
#[test]
fn cli_warm_flag_and_phases() {
    let root = common::repo_root();
    let dir = std::env::temp_dir().join(format!("segcut-warm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |extra: &[&str], name: &str| {
        let (mask, stats) = (
            dir.join(format!("{name}.png")),
            dir.join(format!("{name}.json")),
        );
        let mut cmd = std::process::Command::new(common::segcut_bin());
        cmd.arg(root.join("samples/balloon.png"))
            .arg("--seeds")
            .arg(root.join("samples/balloon-seeds.png"))
            .args(["--solver", "bk", "--iterations", "5", "-o"])
            .arg(&mask)
            .arg("--stats-json")
            .arg(&stats)
            .args(extra);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        (std::fs::read(&mask).unwrap(), s)
    };
    let (warm_mask, warm) = run(&[], "warm");
    let (cold_mask, cold) = run(&["--no-warm-start"], "cold");
    assert_eq!(warm_mask, cold_mask);
    let flags = |s: &serde_json::Value| -> Vec<bool> {
        s["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|it| it["warm"].as_bool().unwrap())
            .collect()
    };
    let (w, c) = (flags(&warm), flags(&cold));
    assert!(w.len() >= 2, "only {} round(s) ran", w.len());
    assert!(!w[0] && w[1..].iter().all(|&x| x), "{w:?}");
    assert!(c.iter().all(|&x| !x), "{c:?}");
    for s in [&warm, &cold] {
        let p = &s["phases_ms"];
        let f = |k: &str| {
            p[k].as_f64()
                .unwrap_or_else(|| panic!("phases_ms lacks {k}"))
        };
        let rounds: f64 = p["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_f64().unwrap())
            .sum();
        assert_eq!(p["rounds"].as_array().unwrap().len(), w.len());
        // Every phase but the remainder, the total and the overlapped GPU set-up is additive.
        let named = p
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !["other", "total", "gpu_context", "rounds"].contains(&k.as_str()))
            .map(|(k, v)| v.as_f64().unwrap_or_else(|| panic!("{k} is not a number")))
            .sum::<f64>()
            + rounds;
        for k in [
            "startup",
            "decode_image",
            "decode_seeds",
            "checks",
            "plan",
            "prepare",
        ] {
            f(k);
        }
        for k in ["models", "graph", "mask", "post", "encode"] {
            f(k);
        }
        let (other, total) = (f("other"), f("total"));
        assert!((named + other - total).abs() < 1e-6 * total.max(1.0), "{p}");
        // The remainder is small next to what is named (start-up of a CPU run is tiny).
        assert!(other >= -1e-9 && other < total, "{p}");
        assert!(f("models") > 0.0 && rounds > 0.0, "{p}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The GPU version: cuda-grid warm-started over rounds of random terminal changes agrees with
/// BK and Dinic from scratch (flow, canonical cut, certificate). Skips without a GPU unless
/// `SEGCUT_REQUIRE_GPU=1`.
#[test]
fn gpu_warm_rounds_match_scratch_solves() {
    if !common::gpu_or_skip() {
        return;
    }
    let mut rng = Rng::new(31);
    let mut warm_rounds = 0;
    for (k, conn) in [Connectivity::N4, Connectivity::N8, Connectivity::N6]
        .into_iter()
        .cycle()
        .take(60)
        .enumerate()
    {
        let hi = [4, 20, 1000][k % 3];
        let mut g = random_grid(&mut rng, conn, if conn.is_3d() { 12 } else { 40 }, hi);
        let mut dynamic =
            Dynamic::new(SolverKind::CudaGrid, true, segcut::cuda::Device::default()).unwrap();
        let first = dynamic.solve(&g).unwrap();
        check(&g, &first, &format!("gpu case {k} {conn} first"));
        for round in 1..=5 {
            let fraction = [1.0, 0.5, 0.1, 0.02, 0.3][round - 1];
            randomise_terminals(&mut rng, &mut g, fraction, hi);
            let warm = dynamic.resolve(&g).unwrap();
            assert!(
                dynamic.last_was_warm(),
                "gpu case {k} round {round} fell back"
            );
            check(&g, &warm, &format!("gpu case {k} {conn} round {round}"));
            warm_rounds += 1;
        }
    }
    assert_eq!(warm_rounds, 300);
}

/// The balloon sample's image and seeds, then the dev photos `ids` when the shared data is there.
fn sample_and_dev_photos(ids: &[&str]) -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let root = common::repo_root();
    let mut cases = vec![(
        root.join("samples/balloon.png"),
        root.join("samples/balloon-seeds.png"),
    )];
    if let Some(data) = common::shared_data() {
        let dir = data.join("segmentation/grabcut-bsds-dev");
        for id in ids {
            cases.push((
                dir.join(format!("images/{id}.jpg")),
                dir.join(format!("scribbles-1/{id}-anno.png")),
            ));
        }
    }
    cases
}

/// GrabCut rounds on the GPU solver, graph built on the CPU (cuda-grid named: `Dynamic`) and on
/// the GPU (`WarmGrid` on the device's t-links): warm-started and from scratch give the same
/// masks and per-round flows, and the same as BK, on the sample and on three dev photos.
#[test]
fn gpu_grabcut_rounds_warm_equal_scratch() {
    use segcut::io::{load_image, load_seeds};
    use segcut::segment::{segment, SegmentOptions};
    if !common::gpu_or_skip() {
        return;
    }
    let cases = sample_and_dev_photos(&["124084", "153077", "181079"]);
    for (img, seeds) in &cases {
        let what = img.display().to_string();
        let image = load_image(img).unwrap();
        let seeds = load_seeds(seeds, image.dims, &Default::default()).unwrap();
        let opts = |solver, warm_start, gpu_build| SegmentOptions {
            solver,
            warm_start,
            gpu_build,
            ..SegmentOptions::default()
        };
        let bk = segment(&image, &seeds, &opts(SolverKind::Bk, false, false)).unwrap();
        let flows = |s: &segcut::segment::Segmentation| -> Vec<i64> {
            s.stats.iterations.iter().map(|i| i.flow).collect()
        };
        for gpu_build in [false, true] {
            let warm =
                segment(&image, &seeds, &opts(SolverKind::CudaGrid, true, gpu_build)).unwrap();
            let cold = segment(
                &image,
                &seeds,
                &opts(SolverKind::CudaGrid, false, gpu_build),
            )
            .unwrap();
            assert!(warm.verified && cold.verified);
            assert_eq!(
                warm.stats.gpu.is_some(),
                gpu_build,
                "{what}: where the graph was built"
            );
            assert_eq!(warm.mask, cold.mask, "{what} gpu_build={gpu_build}");
            assert_eq!(flows(&warm), flows(&cold), "{what} gpu_build={gpu_build}");
            let w: Vec<bool> = warm.stats.iterations.iter().map(|i| i.warm).collect();
            assert!(
                w.len() >= 2 && !w[0] && w[1..].iter().all(|&x| x),
                "{what} gpu_build={gpu_build}: {w:?}"
            );
            if !gpu_build {
                // The same graph as BK's: the same canonical cuts.
                assert_eq!(warm.mask, bk.mask, "{what}");
                assert_eq!(flows(&warm), flows(&bk), "{what}");
            }
        }
    }
}

/// Issue 22: a second segmentation of an image of the same size on a warm [`Segmenter`] (GPU
/// build, GPU solver) allocates nothing on the device, and around the cut each GrabCut round
/// waits for the device exactly as `docs/gpu.md` ("What a small photo's round costs around the
/// cut") documents: the fit 2 (round 1: plus 1 for the enclosure counted on the device, plus 2
/// for the nearer-background fit made there), the t-links 0, the certificate check 1; the solve's waits are its own
/// (convergence reads, the overflow flag, the cut). Its mask is the first run's.
#[test]
fn gpu_warm_segmenter_allocates_nothing_and_waits_as_documented() {
    use segcut::cuda::DeviceCounts;
    use segcut::io::{load_image, load_seeds};
    use segcut::segment::report::Report;
    use segcut::segment::session::Segmenter;
    use segcut::segment::SegmentOptions;
    if !common::gpu_or_skip() {
        return;
    }
    let cases = sample_and_dev_photos(&["124084", "65019"]);
    for (img, seeds) in &cases {
        let what = img.display().to_string();
        let image = load_image(img).unwrap();
        let seeds = load_seeds(seeds, image.dims, &Default::default()).unwrap();
        let opts = SegmentOptions {
            solver: SolverKind::CudaGrid,
            gpu_build: true,
            ..SegmentOptions::default()
        };
        let mut s = Segmenter::new(opts.clone());
        let first = s.segment(&image, &seeds).unwrap();
        assert!(first.stats.gpu.is_some(), "{what}: built on the GPU");
        let before = DeviceCounts::on_this_thread();
        let second = s.segment(&image, &seeds).unwrap();
        let counted = DeviceCounts::on_this_thread().since(before);
        assert_eq!(second.mask, first.mask, "{what}");
        assert_eq!(second.flow, first.flow, "{what}");
        let r = Report::new(&second, &opts);
        assert_eq!(
            counted.device_allocations, 0,
            "{what}: a warm image allocated {:?}",
            r.device_allocations
        );
        assert_eq!(r.device_allocations.total, 0, "{what}");
        assert_eq!(
            r.host_waits.total, counted.host_waits,
            "{what}: {:?}",
            r.host_waits
        );
        for (i, it) in r.iterations.iter().enumerate() {
            let w = it.host_waits;
            // Round 1: the seeds' fit, the enclosure counted once (for the nearer-background
            // check and the prior's scaling), the nearer-background fit when it ran.
            let fits: &[u64] = if i == 0 { &[2, 3, 5] } else { &[2] };
            assert!(fits.contains(&w.models), "{what} round {}: {w:?}", i + 1);
            assert_eq!(w.graph, 0, "{what} round {}: {w:?}", i + 1);
            assert_eq!(
                w.verify,
                u64::from(opts.verify),
                "{what} round {}: {w:?}",
                i + 1
            );
            // The cut's flow and its labels at least.
            assert!(w.solve >= 2, "{what} round {}: {w:?}", i + 1);
            assert_eq!(w.total, w.models + w.graph + w.solve + w.verify, "{what}");
        }
        assert_eq!(r.host_waits.post, 0, "{what}");
        eprintln!(
            "{what}: warm image: {} host waits (prepare {}, rounds {:?})",
            r.host_waits.total,
            r.host_waits.prepare,
            r.iterations
                .iter()
                .map(|it| it.host_waits)
                .collect::<Vec<_>>()
        );
    }
}
