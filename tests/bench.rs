//! Benchmark suites: every suite's instance list is valid (without generating the large ones),
//! `csr:` instances solve like their grid form, grid-only solvers get `n/a` rows on general
//! graphs, and photo instances build (native and upscaled) from the dev set when it is there.

mod common;

use segcut::bench::{
    load_photo, photo_graph, photo_instances, run, suite, BenchInstance, BenchOptions, PhotoSpec,
    Source, SuiteOptions, SUITES,
};
use segcut::maxflow::{Solver, SolverKind};
use segcut::segment::Seed;

fn opts_for(data: Option<std::path::PathBuf>) -> SuiteOptions {
    SuiteOptions {
        photo_data: data.unwrap_or_else(|| "/nonexistent/segcut-photos".into()),
    }
}

fn photo_dir() -> Option<std::path::PathBuf> {
    let dir = common::shared_data()?.join("segmentation/grabcut-bsds-dev");
    dir.is_dir().then_some(dir)
}

#[test]
fn every_suite_lists_valid_instances() {
    let data = photo_dir();
    for &name in SUITES {
        let s = match suite(name, &opts_for(data.clone())) {
            Ok(s) => s,
            Err(e) => {
                assert!(name == "photo" && data.is_none(), "suite {name}: {e}");
                continue;
            }
        };
        assert!(!s.instances.is_empty(), "suite {name} is empty");
        for inst in &s.instances {
            let text = inst.to_string();
            match &inst.source {
                Source::Gen(spec) => {
                    spec.check()
                        .unwrap_or_else(|e| panic!("{name}: {text}: {e}"));
                    // The text form reads back as the same instance.
                    assert_eq!(&text.parse::<BenchInstance>().unwrap(), inst, "{text}");
                }
                Source::Photo(p) => {
                    assert!(p.image.is_file() && p.seeds.is_file(), "{text}");
                }
            }
        }
    }
}

#[test]
fn suites_hold_what_they_promise() {
    let no_data = opts_for(None);
    let nodes = |i: &BenchInstance| i.num_nodes().unwrap();
    for (name, general_nodes) in [
        ("generic", (1 << 14)..(1 << 18)),
        ("generic-large", (1 << 19)..(1 << 22) + 1),
    ] {
        let list = suite(name, &no_data).unwrap().instances;
        let texts: Vec<String> = list.iter().map(|i| i.to_string()).collect();
        for family in ["genrmf:", "rlg:", "sparse:", "csr:2d:", "csr:3d:"] {
            assert!(
                texts.iter().any(|t| t.starts_with(family)),
                "{family} in {texts:?}"
            );
        }
        for i in &list {
            // Grids at 1-4 M nodes, as general graphs; the other families at the suite's size.
            let want = if i.as_general {
                (1 << 20)..(1 << 22) + 1
            } else {
                general_nodes.clone()
            };
            assert!(
                want.contains(&nodes(i)),
                "{name}: {i} has {} nodes",
                nodes(i)
            );
        }
    }
    let crossover = suite("crossover", &no_data).unwrap().instances;
    let sizes: Vec<usize> = crossover.iter().map(nodes).collect();
    assert!(sizes.iter().min().unwrap() <= &1100);
    assert!(sizes.iter().max().unwrap() >= &4_000_000);
    // Standard without photo data: the grids, and a note saying what was left out.
    let standard = suite("standard", &no_data).unwrap();
    assert_eq!(standard.notes.len(), 1, "{:?}", standard.notes);
    assert!(standard.notes[0].contains("photo"), "{:?}", standard.notes);
    assert!(suite("photo", &no_data).is_err());
    assert!(suite("nonesuch", &no_data).is_err());
}

#[test]
fn csr_instances_solve_like_their_grid_and_grid_only_solvers_say_n_a() {
    let grid: BenchInstance = "2d:30x20:n8:c10:s3".parse().unwrap();
    let general: BenchInstance = "csr:2d:30x20:n8:c10:s3".parse().unwrap();
    let sparse: BenchInstance = "sparse:400:d4:s2".parse().unwrap();
    assert!(general.as_general && !grid.as_general);
    let opts = BenchOptions {
        runs: 2,
        ..Default::default()
    };
    let recs = run(
        &[grid, general, sparse],
        &[SolverKind::Bk, SolverKind::CudaGrid, SolverKind::Dinic],
        &opts,
        |_| {},
    )
    .unwrap();
    assert_eq!(recs.len(), 9);
    let (g, c, s) = (&recs[0..3], &recs[3..6], &recs[6..9]);
    // The same graph either way: the same flow, from every solver that ran.
    assert_eq!(g[0].flow, c[0].flow);
    assert_eq!(c[0].flow, c[2].flow);
    for r in &recs {
        assert!(r.verified && r.agrees, "{r:?}");
        if r.not_run.is_none() {
            assert!(
                r.total_ms >= r.solve_ms && r.total_ms >= r.build_ms,
                "{r:?}"
            );
            assert_eq!(r.solve_ms_all.len(), 2);
        }
    }
    // BK builds its own arcs from either form, and that is build time, not solve time.
    assert!(
        g[0].build_ms > 0.0 && c[0].build_ms > 0.0,
        "{:?} {:?}",
        g[0],
        c[0]
    );
    // cuda-grid: a grid in both grid-derived rows (n/a only without a GPU), never on sparse.
    assert_eq!(s[1].not_run.as_deref(), Some("takes grids only"));
    assert_eq!(g[1].not_run.is_some(), c[1].not_run.is_some());
    if let Some(why) = &c[1].not_run {
        assert_ne!(why, "takes grids only");
    }
}

#[test]
fn photo_instances_build_native_and_upscaled() {
    let Some(data) = photo_dir() else {
        common::skipped("no segmentation dev set beside the checkout");
        return;
    };
    let list = photo_instances(&data, &[None]).unwrap();
    assert_eq!(list.len(), 9);
    let Source::Photo(p) = &list[0].source else {
        panic!("not a photo instance");
    };
    let native = photo_graph(p).unwrap();
    let [w, h, _] = native.dims();
    let width = w + w / 2;
    let up = photo_graph(&PhotoSpec {
        width: Some(width),
        ..p.clone()
    })
    .unwrap();
    let [uw, uh, ud] = up.dims();
    assert_eq!((uw, ud), (width, 1));
    assert_eq!(uh, (h as f64 * width as f64 / w as f64).round() as usize);
    assert_eq!(native.num_nodes(), w * h);
    // Seeds survive the nearest-neighbour upscale: about 2.25 times as many of each kind, and
    // the photo's values stay in range.
    let (img0, s0) = load_photo(p).unwrap();
    let (img1, s1) = load_photo(&PhotoSpec {
        width: Some(width),
        ..p.clone()
    })
    .unwrap();
    assert_eq!(img1.dims, [uw, uh, 1]);
    assert_eq!(s1.labels.len(), uw * uh);
    for kind in [Seed::Foreground, Seed::Background] {
        let count = |s: &segcut::segment::Seeds| s.labels.iter().filter(|&&l| l == kind).count();
        let (a, b) = (count(&s0) as f64, count(&s1) as f64);
        assert!(
            a > 0.0 && (1.8..2.8).contains(&(b / a)),
            "{kind:?}: {a} -> {b}"
        );
    }
    let range = |img: &segcut::segment::Image| {
        img.data
            .iter()
            .fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)))
    };
    let ((lo0, hi0), (lo1, hi1)) = (range(&img0), range(&img1));
    assert!(lo1 >= lo0 && hi1 <= hi0);
}

/// `--dump` writes every instance as a `.max` file that loads back to the same graph (same flow).
#[test]
fn dump_writes_instances_that_load_back() {
    let dir = std::env::temp_dir().join(format!("segcut-bench-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let insts: Vec<BenchInstance> = ["2d:12x9:n8:c10:s1", "sparse:300:d4:s5"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let opts = BenchOptions {
        runs: 1,
        dump: Some(dir.clone()),
        ..Default::default()
    };
    let recs = run(&insts, &[SolverKind::Bk], &opts, |_| {}).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    for rec in &recs {
        let stem: String = rec
            .instance
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{stem}.max"));
        let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
        let inst = segcut::io::dimacs::read_max(file, &path.display().to_string()).unwrap();
        let cut = segcut::maxflow::bk::Bk::default()
            .solve(&inst.network)
            .unwrap();
        assert_eq!(cut.flow, rec.flow, "{}", path.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
