//! End-to-end tests of the `segcut` binary.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn segcut(args: &[&str]) -> Output {
    Command::new(common::segcut_bin())
        .args(args)
        .output()
        .expect("run segcut")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn maxflow_on_crop_prints_flow_and_verified() {
    for (path, expected) in common::waterloo_crops() {
        let o = segcut(&["maxflow", path.to_str().unwrap(), "--verify"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let row = out.lines().nth(1).expect("a row under the header");
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[4], expected.to_string(), "flow column: {row}");
        assert_eq!(cols[5], expected.to_string(), "expected column: {row}");
        assert_eq!(cols[6], "yes", "match column: {row}");
        assert_eq!(*cols.last().unwrap(), "yes", "verified column: {row}");
    }
}

#[test]
fn maxflow_json_has_the_documented_fields() {
    for (path, expected) in common::waterloo_crops().into_iter().take(1) {
        for solver in ["bk", "dinic"] {
            let o = segcut(&[
                "maxflow",
                path.to_str().unwrap(),
                "--verify",
                "--json",
                "--solver",
                solver,
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
            assert_eq!(v["flow"], expected);
            assert_eq!(v["expected"], expected);
            assert_eq!(v["solver"], solver);
            assert_eq!(v["verified"], true);
            assert_eq!(v["nodes"], 256);
            for key in ["file", "arcs", "parse_ms", "solve_ms", "build_ms"] {
                assert!(!v[key].is_null(), "missing {key}");
            }
        }
    }
}

#[test]
fn cut_file_lists_source_side_with_the_flow_as_capacity() {
    let dir = tempfile::tempdir().unwrap();
    for (path, expected) in common::waterloo_crops() {
        let out = dir.path().join("crop.cut");
        let o = segcut(&[
            "maxflow",
            path.to_str().unwrap(),
            "--cut",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let ids: std::collections::HashSet<u64> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        let (s, t, arcs) = common::raw_arcs(&std::fs::read_to_string(&path).unwrap());
        assert!(ids.contains(&s) && !ids.contains(&t));
        let cap: i64 = arcs
            .iter()
            .filter(|(u, v, _)| ids.contains(u) && !ids.contains(v))
            .map(|a| a.2)
            .sum();
        assert_eq!(cap, expected);
    }
}

/// `--flows` writes a maximum flow of the file itself: checked here against the raw `a` lines
/// (parallel arcs summed), with its own parser, for every solver that runs on this machine.
#[test]
fn flows_file_is_a_maximum_flow_of_the_file() {
    use std::collections::HashMap;
    let dir = tempfile::tempdir().unwrap();
    let mut solvers = vec!["bk", "dinic", "auto"];
    if segcut::cuda::gpu_available() {
        solvers.extend(["cuda-grid", "cuda-csr"]);
    }
    for (path, expected) in common::waterloo_crops() {
        let (s, t, arcs) = common::raw_arcs(&std::fs::read_to_string(&path).unwrap());
        let mut cap: HashMap<(u64, u64), i64> = HashMap::new();
        for &(u, v, c) in &arcs {
            *cap.entry((u, v)).or_default() += c;
        }
        for solver in &solvers {
            let out = dir.path().join(format!("{solver}.flow"));
            let o = segcut(&[
                "maxflow",
                path.to_str().unwrap(),
                "--solver",
                solver,
                "--flows",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{solver}: {}", stderr(&o));
            let text = std::fs::read_to_string(&out).unwrap();
            let mut value = None;
            let mut balance: HashMap<u64, i64> = HashMap::new();
            for line in text.lines() {
                let f: Vec<&str> = line.split_whitespace().collect();
                match f.first() {
                    Some(&"s") => value = Some(f[1].parse::<i64>().unwrap()),
                    Some(&"f") => {
                        let (u, v, x): (u64, u64, i64) = (
                            f[1].parse().unwrap(),
                            f[2].parse().unwrap(),
                            f[3].parse().unwrap(),
                        );
                        let c = cap.get(&(u, v)).copied().unwrap_or(0);
                        assert!(x > 0 && x <= c, "{solver}: {line}: capacity {c}");
                        *balance.entry(u).or_default() -= x;
                        *balance.entry(v).or_default() += x;
                    }
                    _ => {}
                }
            }
            assert_eq!(value, Some(expected), "{solver}: s line");
            assert_eq!(
                balance.get(&s).copied(),
                Some(-expected),
                "{solver}: out of s"
            );
            assert_eq!(balance.get(&t).copied(), Some(expected), "{solver}: into t");
            for (v, b) in &balance {
                assert!(
                    *v == s || *v == t || *b == 0,
                    "{solver}: node {v} unbalanced by {b}"
                );
            }
        }
    }
}

fn make_archive(dir: &Path, sol_first: bool) -> std::path::PathBuf {
    let path = dir.join(format!("crops-{sol_first}.tbz2"));
    let file = std::fs::File::create(&path).unwrap();
    let enc = bzip2::write::BzEncoder::new(file, bzip2::Compression::fast());
    let mut tar = tar::Builder::new(enc);
    for (max, _) in common::waterloo_crops() {
        let name = max.file_name().unwrap().to_str().unwrap().to_string();
        let sol = max.with_extension("sol");
        let sol_name = sol.file_name().unwrap().to_str().unwrap().to_string();
        let mut files = vec![
            (max, format!("seq/{name}")),
            (sol, format!("seq/{sol_name}")),
        ];
        if sol_first {
            files.reverse();
        }
        for (p, n) in files {
            tar.append_path_with_name(p, n).unwrap();
        }
    }
    tar.into_inner().unwrap().finish().unwrap();
    path
}

#[test]
fn archive_gives_one_row_per_instance_with_sol_match() {
    if common::waterloo_crops().is_empty() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for sol_first in [true, false] {
        let archive = make_archive(dir.path(), sol_first);
        let o = segcut(&["maxflow", archive.to_str().unwrap(), "--verify"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("seq/tsukuba_crop"))
            .collect();
        assert_eq!(rows.len(), 3, "{out}");
        for row in rows {
            let cols: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cols[6], "yes", "{row}");
        }
        assert!(out.contains("3 instances, total solve"), "{out}");
        assert!(out.contains("3/3 match"), "{out}");

        let o = segcut(&["maxflow", archive.to_str().unwrap(), "--json"]);
        let lines: Vec<serde_json::Value> = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|v| v["expected"] == v["flow"]));
    }
}

#[test]
fn wrong_sol_value_exits_with_status_1() {
    let Some((max, _)) = common::waterloo_crops().into_iter().next() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("crop.max");
    std::fs::copy(&max, &copy).unwrap();
    std::fs::write(dir.path().join("crop.sol"), "c wrong on purpose\ns 49\n").unwrap();
    let o = segcut(&["maxflow", copy.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("NO"));
}

#[test]
fn gen_is_deterministic_and_solvable() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.max");
    let b = dir.path().join("b.max");
    for spec in [
        "2d:40x30:n4:c10:s5",
        "2d:20x20:n8:c100:s1",
        "3d:8x8x6:n6:c10:s2",
        "3d:5x5x5:n26:c10:s3",
    ] {
        for out in [&a, &b] {
            let o = segcut(&["gen", "grid", spec, "-o", out.to_str().unwrap()]);
            assert!(o.status.success(), "{}", stderr(&o));
        }
        let (ta, tb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(ta, tb, "{spec} differs between runs");
        assert!(String::from_utf8_lossy(&ta).contains("c regulargrid"));
        let o = segcut(&["maxflow", a.to_str().unwrap(), "--verify", "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["verified"], true, "{spec}");
        assert!(
            v["graph"].as_str().unwrap().starts_with("grid"),
            "{spec}: {v}"
        );
    }
    for args in [
        vec!["gen", "genrmf", "--a", "4", "--b", "5", "--seed", "3"],
        vec![
            "gen",
            "washington",
            "--width",
            "8",
            "--levels",
            "10",
            "--seed",
            "3",
        ],
    ] {
        let mut full = args.clone();
        full.extend(["-o", a.to_str().unwrap()]);
        let o = segcut(&full);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = segcut(&[
            "maxflow",
            a.to_str().unwrap(),
            "--verify",
            "--solver",
            "dinic",
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["verified"], true);
        assert!(v["flow"].as_i64().unwrap() > 0);
    }
}

#[test]
fn errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.max");
    let o = segcut(&["maxflow", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.max"), "{}", stderr(&o));

    let bad = dir.path().join("bad.max");
    std::fs::write(&bad, "p max 3 1\nn 1 s\nn 2 t\na 1 3 -5\n").unwrap();
    let o = segcut(&["maxflow", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.max:4"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let o = segcut(&[
        "gen",
        "grid",
        "2d:0x10:n4:c10:s1",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = segcut(&[
        "gen",
        "grid",
        "2d:10x10:n6:c10:s1",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn bench_tiny_verifies_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let o = segcut(&[
        "bench",
        "--suite",
        "tiny",
        "--solvers",
        "bk,dinic",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let recs = v.as_array().unwrap();
    let instances = segcut::bench::suite("tiny", &Default::default())
        .unwrap()
        .instances;
    assert_eq!(recs.len(), 2 * instances.len());
    assert!(recs
        .iter()
        .all(|r| r["verified"] == true && r["agrees"] == true));
    assert!(stdout(&o).contains("vs bk"));
}

#[test]
fn maxflow_explain_says_how_each_file_was_loaded() {
    let dir = tempfile::tempdir().unwrap();
    // A 3x2 grid in the BVZ layout (no hint), and the same file with an arc wrapping a row end.
    let grid = "p max 8 6\nn 1 s\nn 2 t\na 1 3 5\na 8 2 5\na 3 4 2\na 4 3 2\na 3 6 4\na 6 3 4\n";
    let wrap = grid.replace("p max 8 6", "p max 8 7") + "a 5 6 1\n";
    let (g, w) = (dir.path().join("g.max"), dir.path().join("w.max"));
    std::fs::write(&g, grid).unwrap();
    std::fs::write(&w, wrap).unwrap();
    let o = segcut(&[
        "maxflow",
        g.to_str().unwrap(),
        w.to_str().unwrap(),
        "--explain",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("g: grid 3x2 N4 inferred from arc offsets"),
        "{err}"
    );
    assert!(err.contains("w: general: "), "{err}");
    let o = segcut(&["maxflow", w.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let layout = v["layout"].as_str().unwrap();
    assert!(
        layout.starts_with("general: ") && layout.contains("width 3"),
        "{layout}"
    );
}

#[test]
fn maxflow_reports_the_solver_choice_and_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("g.max");
    let grid = "p max 8 6\nn 1 s\nn 2 t\na 1 3 5\na 8 2 5\na 3 4 2\na 4 3 2\na 3 6 4\na 6 3 4\n";
    std::fs::write(&g, grid).unwrap();
    let json = |envs: &[(&str, &str)], extra: &[&str]| {
        let o = Command::new(common::segcut_bin())
            .args(["maxflow", g.to_str().unwrap(), "--json"])
            .args(extra)
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<serde_json::Value>(stdout(&o).trim()).unwrap()
    };
    // Six nodes: under the default threshold, BK, and the reason says so.
    let v = json(&[], &[]);
    assert_eq!(v["solver"], "bk");
    let why = v["solver_reason"].as_str().unwrap();
    assert!(
        why.contains("grid of 6 nodes") && why.contains("threshold"),
        "{why}"
    );
    // The threshold lowered to 4: the GPU is considered, and used only if there is one.
    let v = json(&[], &["--gpu-min-nodes", "4"]);
    let why = v["solver_reason"].as_str().unwrap();
    match v["solver"].as_str().unwrap() {
        "bk" => assert!(
            why.contains("no usable GPU") || why.contains("declined"),
            "{why}"
        ),
        "cuda-grid" => assert!(why.contains("threshold 4"), "{why}"),
        other => panic!("unexpected solver {other}: {why}"),
    }
    // A named solver is itself.
    let v = json(&[], &["--solver", "dinic"]);
    assert_eq!(v["solver"], "dinic");
    assert!(v["solver_reason"].as_str().unwrap().contains("requested"));
    // The table names the solver in a column and the reason under the rows; --explain too.
    let o = segcut(&["maxflow", g.to_str().unwrap(), "--explain"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let row = out.lines().nth(1).unwrap();
    assert_eq!(row.split_whitespace().nth(1), Some("bk"), "{out}");
    assert!(out.contains("  solver bk: auto: grid of 6 nodes"), "{out}");
    assert!(
        stderr(&o).contains("g: solver bk: auto: grid of 6 nodes"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bench_marks_grid_only_solvers_n_a_on_general_graphs() {
    let o = segcut(&[
        "bench",
        "--instances",
        "rlg:6x5:s1,csr:2d:9x7:n4:c10:s2",
        "--solvers",
        "bk,cuda-grid",
        "--runs",
        "1",
    ]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let rlg_grid = out
        .lines()
        .find(|l| l.starts_with("rlg:") && l.contains("cuda-grid"))
        .expect("a cuda-grid row for the rlg instance");
    assert!(
        rlg_grid.contains("n/a") && rlg_grid.contains("takes grids only"),
        "{out}"
    );
    assert!(out.contains("total ms"), "{out}");
    let csr_bk = out
        .lines()
        .find(|l| l.starts_with("csr:2d:9x7") && l.contains(" bk "))
        .expect("a bk row for the csr instance");
    assert!(csr_bk.trim_end().ends_with("yes"), "{csr_bk}");
}

/// `batch --help` states the packing and workers-per-GPU defaults that the library uses (the
/// help is formatted from the library's constants; this checks it reaches the output).
#[test]
fn batch_help_states_the_library_pack_default() {
    let out = segcut(&["batch", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    // Clap wraps the help text: compare it with its whitespace collapsed.
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let want = format!(
        "default: {} stereo pairs and {} photos on a GPU",
        segcut::batch::DEFAULT_STEREO_PACK,
        segcut::batch::DEFAULT_SEGMENT_PACK
    );
    assert!(help.contains(&want), "{help}");
    let r = segcut::batch::BatchOptions::WORKERS_PER_GPU;
    let want = format!("over the GPUs, {} to {} each", r.start(), r.end());
    assert!(help.contains(&want), "{help}");
}
