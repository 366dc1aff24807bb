//! The real Waterloo data: BVZ-tsukuba0 crops solved by every CPU solver against their `.sol`
//! values, and the `.sol` files of the full sequences read by segcut's parser.

mod common;

use segcut::graph::{FlowNetwork, Network};
use segcut::io::dimacs::{self, ReadOptions};
use segcut::maxflow::{solver_of, verify, AutoPolicy, SolverKind};

/// The solvers that take any graph on any machine (`auto` falls back to BK for general graphs).
const CPU_SOLVERS: [&str; 3] = ["bk", "dinic", "auto"];

fn load(path: &std::path::Path) -> dimacs::MaxInstance {
    let mut found = None;
    dimacs::read_instances(path, &ReadOptions::default(), |inst| {
        found = Some(inst);
        Ok(())
    })
    .unwrap();
    found.expect("one instance")
}

#[test]
fn crops_solve_to_their_sol_values_with_every_solver() {
    for (path, expected) in common::waterloo_crops() {
        let inst = load(&path);
        assert_eq!(inst.expected_flow, Some(expected), "{}", path.display());
        let mut cuts = Vec::new();
        for name in CPU_SOLVERS {
            let cut = solver_of(
                name.parse().unwrap(),
                AutoPolicy::default(),
                segcut::cuda::Device::default(),
            )
            .solve(&inst.network)
            .unwrap();
            assert_eq!(cut.flow, expected, "{name} on {}", path.display());
            let cert = verify(&inst.network, &cut).unwrap();
            assert_eq!(cert.cut_capacity, expected);
            cuts.push(cut);
        }
        assert!(
            cuts.windows(2).all(|w| w[0] == w[1]),
            "canonical cuts differ"
        );
    }
}

#[test]
fn crop_cut_capacity_recomputed_from_raw_file() {
    // The certificate recomputed from the file's own lines, independently of segcut's graph.
    for (path, expected) in common::waterloo_crops() {
        let inst = load(&path);
        let cut = solver_of(
            SolverKind::Bk,
            AutoPolicy::default(),
            segcut::cuda::Device::default(),
        )
        .solve(&inst.network)
        .unwrap();
        let mut source_side = std::collections::HashSet::new();
        source_side.insert(inst.source_id);
        for v in cut.source_side() {
            source_side.insert(inst.dimacs_id(v));
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let (s, t, arcs) = common::raw_arcs(&text);
        assert_eq!((s, t), (inst.source_id, inst.sink_id));
        let cap: i64 = arcs
            .iter()
            .filter(|(u, v, _)| source_side.contains(u) && !source_side.contains(v))
            .map(|a| a.2)
            .sum();
        assert_eq!(cap, expected, "{}", path.display());
    }
}

#[test]
fn crop_round_trips_through_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    for (path, expected) in common::waterloo_crops() {
        let inst = load(&path);
        for ext in ["max", "max.gz", "max.bz2"] {
            let out = dir.path().join(format!("copy.{ext}"));
            dimacs::write_max_file(&out, &inst.network, &["round trip"]).unwrap();
            let back = load(&out);
            assert_eq!(back.network.num_nodes(), inst.network.num_nodes());
            let cut = solver_of(
                SolverKind::Bk,
                AutoPolicy::default(),
                segcut::cuda::Device::default(),
            )
            .solve(&back.network)
            .unwrap();
            assert_eq!(cut.flow, expected);
        }
    }
}

#[test]
fn crops_are_grids_inferred_without_a_hint() {
    // The BVZ layout (pixel (x, y) is id 3 + x + W·y) is recognised from the arc offsets.
    for (path, _) in common::waterloo_crops() {
        let inst = load(&path);
        assert!(
            matches!(inst.network, Network::Grid(_)),
            "{}",
            path.display()
        );
        assert!(
            inst.layout
                .to_string()
                .ends_with("N4 inferred from arc offsets"),
            "{}",
            inst.layout
        );
    }
}

#[test]
fn full_sequence_sol_files_match_known_flows() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let known = std::fs::read_to_string(data.join("waterloo/known_flows.csv")).unwrap();
    let known: std::collections::HashMap<&str, i64> = known
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split(',');
            Some((f.next()?, f.next()?.parse().ok()?))
        })
        .collect();
    let mut checked = 0;
    for seq in ["BVZ-tsukuba", "KZ2-venus"] {
        for entry in std::fs::read_dir(data.join("waterloo").join(seq)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sol") {
                let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
                let file = std::fs::File::open(&path).unwrap();
                let flow = dimacs::read_sol(std::io::BufReader::new(file), &stem).unwrap();
                if let Some(&k) = known.get(stem.as_str()) {
                    assert_eq!(flow, k, "{stem}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 30, "only {checked} .sol files checked");
}
