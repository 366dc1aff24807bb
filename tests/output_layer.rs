//! One output layer (issue 21 B, D5): every command writes through `io::OutputPlan`, so no
//! output replaces an input or another output under any name (links, hard links, `..`), batch
//! outputs stay inside `-o DIR`, files are replaced by a rename (never truncated in place), a
//! name says the format written, and a failed write is a failure. Also the batch's set-up
//! errors and its summary on a rerun (one row per job).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use segcut::batch::summary::{read_summary, Row, Status};

fn segcut_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::segcut_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run segcut")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run that must fail with status 2, no panic, and an error that contains every `want`.
fn fails(dir: &Path, args: &[&str], want: &[&str]) -> String {
    let o = segcut_in(dir, args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(!e.contains("panicked"), "{args:?}: {e}");
    for w in want {
        assert!(e.contains(w), "{args:?}: missing '{w}' in: {e}");
    }
    e
}

fn succeeds(dir: &Path, args: &[&str]) {
    let o = segcut_in(dir, args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
}

fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// A small graph of flow 4 (`g.max`), its value (`g.sol`) and a gzip copy (`g.max.gz`).
fn graph_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let text = "p max 4 4\nn 1 s\nn 4 t\na 1 2 3\na 1 3 2\na 2 4 2\na 3 4 3\n";
    std::fs::write(d.join("g.max"), text).unwrap();
    std::fs::write(d.join("g.sol"), "s 4\n").unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
    std::fs::write(d.join("g.max.gz"), gz.finish().unwrap()).unwrap();
    (dir, d)
}

/// Every file directly in `dir` with its bytes: what a refused run must leave as it was.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                bytes(&p),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn maxflow_never_writes_over_its_graph() {
    let (_t, d) = graph_dir();
    std::os::unix::fs::symlink(d.join("g.max"), d.join("link.max")).unwrap();
    std::fs::hard_link(d.join("g.max"), d.join("hard.cut")).unwrap();
    let before = snapshot(&d);
    let cases: &[(&[&str], &[&str])] = &[
        (&["g.max", "--cut", "g.max"], &["--cut", "graph input"]),
        (&["g.max", "--flows", "g.max"], &["--flows", "graph input"]),
        (
            &["g.max.gz", "--cut", "g.max.gz"],
            &["--cut", "graph input"],
        ),
        // A link read as the input, the file named as the output, and the other way round: both
        // names appear.
        (
            &["link.max", "--cut", "g.max"],
            &["g.max", "graph input (link.max)"],
        ),
        (
            &["g.max", "--flows", "link.max"],
            &["link.max", "graph input (g.max)"],
        ),
        // A hard link is the same file under another name, whatever its extension.
        (
            &["g.max", "--cut", "hard.cut"],
            &["hard.cut", "graph input"],
        ),
        (&["g.max", "--cut", "./sub/../g.max"], &["graph input"]),
        // The .sol read beside the graph is an input too.
        (&["g.max", "--flows", "g.sol"], &["solution (.sol) input"]),
        (
            &["g.max", "--cut", "x.cut", "--flows", "x.cut"],
            &["also the --cut output"],
        ),
    ];
    std::fs::create_dir(d.join("sub")).unwrap();
    for (args, want) in cases {
        let mut full = vec!["maxflow"];
        full.extend_from_slice(args);
        fails(&d, &full, want);
        assert_eq!(snapshot(&d), before, "{args:?} changed a file");
    }
    // The same run with outputs of their own writes both, with the expected flow.
    succeeds(
        &d,
        &["maxflow", "g.max", "--cut", "g.cut", "--flows", "g.flow"],
    );
    assert!(String::from_utf8(bytes(&d.join("g.flow")))
        .unwrap()
        .contains("s 4\n"));
    // The only minimum cut is {s, 2} | {3, t} (arcs 1→3 and 2→4, 2 + 2).
    assert_eq!(bytes(&d.join("g.cut")), b"1\n2\n");
}

#[test]
fn maxflow_replaces_its_outputs_by_a_rename_never_in_place() {
    let (_t, d) = graph_dir();
    // An earlier output that shares its inode with another file: writing in place (O_TRUNC)
    // would change both; a temporary file renamed over the name leaves the other alone.
    for (flag, name) in [("--cut", "old.cut"), ("--flows", "old.flow")] {
        std::fs::write(d.join("keep.txt"), b"not a cut\n").unwrap();
        let _ = std::fs::remove_file(d.join(name));
        std::fs::hard_link(d.join("keep.txt"), d.join(name)).unwrap();
        succeeds(&d, &["maxflow", "g.max", flag, name]);
        assert_eq!(bytes(&d.join("keep.txt")), b"not a cut\n", "{flag}");
        assert_ne!(bytes(&d.join(name)), b"not a cut\n", "{flag}: replaced");
        let temps: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("segcut-tmp"))
            .collect();
        assert!(temps.is_empty(), "{temps:?}");
    }
}

/// A tiny Middlebury-style scene folder `S` (unknown name: scale given) and a map `d.png`.
fn scene_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let s = d.join("S");
    std::fs::create_dir(&s).unwrap();
    let (w, h) = (24u32, 16u32);
    let view = |shift: u32| {
        image::GrayImage::from_fn(w, h, |x, y| {
            image::Luma([((x + shift) * 37 + y * 11) as u8])
        })
    };
    view(0).save(s.join("imL.png")).unwrap();
    view(2).save(s.join("imR.png")).unwrap();
    image::GrayImage::from_pixel(w, h, image::Luma([2 * 16]))
        .save(s.join("gt.png"))
        .unwrap();
    for m in ["nonocc.png", "all.png", "disc.png"] {
        image::GrayImage::from_pixel(w, h, image::Luma([255]))
            .save(s.join(m))
            .unwrap();
    }
    image::GrayImage::from_pixel(w, h, image::Luma([2 * 16]))
        .save(d.join("d.png"))
        .unwrap();
    (dir, d)
}

#[test]
fn stereo_eval_json_never_replaces_a_map_or_a_scene_file() {
    let (_t, d) = scene_dir();
    let (top, scene) = (snapshot(&d), snapshot(&d.join("S")));
    let base = [
        "stereo-eval",
        "--gt",
        "S",
        "--gt-scale",
        "16",
        "d.png",
        "--json",
    ];
    for (out, want) in [
        ("d.png", "disparity map input"),
        ("S/gt.png", "scene's gt.png input"),
        ("S/imL.png", "scene's imL.png input"),
        ("./S/../S/disc.png", "scene's disc.png input"),
    ] {
        let mut args = base.to_vec();
        args.push(out);
        fails(&d, &args, &["--json", want]);
        assert_eq!(snapshot(&d), top, "{out}");
        assert_eq!(snapshot(&d.join("S")), scene, "{out}");
    }
    // Running the scene: --json and --save are checked against the scene's files too.
    fails(
        &d,
        &[
            "stereo-eval",
            "S",
            "--gt-scale",
            "16",
            "--json",
            "S/imR.png",
        ],
        &["scene's imR.png input"],
    );
    // A JSON file under a name that says another format is refused too.
    let mut args = base.to_vec();
    args.push("scores.png");
    fails(&d, &args, &["JSON", ".png"]);
    assert!(!d.join("scores.png").exists());
    let mut args = base.to_vec();
    args.push("scores.json");
    succeeds(&d, &args);
    let json: serde_json::Value = serde_json::from_slice(&bytes(&d.join("scores.json"))).unwrap();
    assert!(json.is_array());
}

/// `n` small graphs `a0.max`, ... in `dir`.
fn graphs(dir: &Path, n: usize) {
    for i in 0..n {
        let c = i + 1;
        std::fs::write(
            dir.join(format!("a{i}.max")),
            format!("p max 4 4\nn 1 s\nn 4 t\na 1 2 {c}\na 1 3 2\na 2 4 2\na 3 4 3\n"),
        )
        .unwrap();
    }
}

fn batch_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["batch", "-q", "--gpus", "none", "--threads", "1"];
    v.extend_from_slice(extra);
    v
}

#[test]
fn batch_outputs_never_replace_inputs_or_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    graphs(d, 2);
    let cases: &[(&str, &[&str])] = &[
        // One job's output is another job's input (the output folder is the inputs' folder).
        (
            "max,output\na0.max,a1.max\na1.max,b.cut\n",
            &["job 'a0'", "job 'a1' input"],
        ),
        // One file under two names.
        (
            "max,output\na0.max,x.cut\na1.max,sub/../x.cut\n",
            &["job 'a1'", "also the job 'a0' output"],
        ),
        // The manifest itself.
        ("max,output\na0.max,jobs.csv\n", &["manifest input"]),
    ];
    for (manifest, want) in cases {
        std::fs::write(d.join("jobs.csv"), manifest).unwrap();
        let before = snapshot(d);
        for force in [false, true] {
            let mut args = batch_args(&["jobs.csv", "-o", "."]);
            if force {
                args.push("--force");
            }
            fails(d, &args, want);
            assert_eq!(snapshot(d), before, "{manifest} (force {force})");
            assert!(!d.join("summary.csv").exists(), "started: {manifest}");
        }
    }
    // The same jobs with outputs of their own run.
    std::fs::write(
        d.join("jobs.csv"),
        "max,output\na0.max,x.cut\na1.max,sub/y.cut\n",
    )
    .unwrap();
    succeeds(d, &batch_args(&["jobs.csv", "-o", "."]));
    assert!(d.join("x.cut").is_file() && d.join("sub/y.cut").is_file());
}

#[test]
fn batch_outputs_stay_inside_the_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let inputs = d.join("in");
    std::fs::create_dir(&inputs).unwrap();
    graphs(&inputs, 2);
    let out = d.join("out");
    std::fs::create_dir_all(out.join("deep")).unwrap();
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("link")).unwrap();
    std::fs::write(elsewhere.join("victim.cut"), b"keep").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("victim.cut"), out.join("v.cut")).unwrap();
    let abs = d.join("abs.cut");
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (
            "max,output\nin/a0.max,../../x.cut\n".into(),
            vec![],
            "outside the output folder",
        ),
        (
            "max,output\nin/a0.max,deep/../../x.cut\n".into(),
            vec![],
            "outside the output folder",
        ),
        (
            format!("max,output\nin/a0.max,{}\n", abs.display()),
            vec![],
            "outside the output folder",
        ),
        (
            "max,output\nin/a0.max,link/x.cut\n".into(),
            vec![],
            "outside the output folder",
        ),
        (
            "max,output\nin/a0.max,link/new/x.cut\n".into(),
            vec![],
            "outside the output folder",
        ),
        (
            "max,output\nin/a0.max,v.cut\n".into(),
            vec![],
            "outside the output folder",
        ),
        (
            "max\nin/a0.max\n".into(),
            vec!["--name", "../{id}.cut"],
            "outside the output folder",
        ),
        (
            "max\nin/a0.max\n".into(),
            vec!["--name", "link/{id}.cut"],
            "outside the output folder",
        ),
    ];
    for (manifest, extra, want) in &cases {
        std::fs::write(d.join("jobs.csv"), manifest).unwrap();
        let mut args = batch_args(&["jobs.csv", "-o", "out"]);
        args.extend_from_slice(extra);
        fails(d, &args, &[want]);
        assert!(!d.join("x.cut").exists() && !abs.exists() && !d.join("a0.cut").exists());
        assert_eq!(
            std::fs::read_dir(&elsewhere).unwrap().count(),
            1,
            "{manifest}: written through the link"
        );
        assert_eq!(bytes(&elsewhere.join("victim.cut")), b"keep");
        assert!(
            !out.join("summary.csv").exists(),
            "{manifest}: the batch started"
        );
    }
    // Inside the folder, `..` that stays in it is fine.
    std::fs::write(d.join("jobs.csv"), "max,output\nin/a0.max,deep/../a.cut\n").unwrap();
    succeeds(d, &batch_args(&["jobs.csv", "-o", "out"]));
    assert!(out.join("a.cut").is_file());
}

#[test]
fn merge_summaries_never_replaces_its_own_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    graphs(d, 2);
    succeeds(d, &batch_args(&["a0.max", "a1.max", "-o", "out"]));
    let before = snapshot(&d.join("out"));
    for input in ["out/summary.csv", "out/summary.jsonl", "out/./summary.csv"] {
        fails(
            d,
            &["batch", "--merge-summaries", input, "-o", "out/summary"],
            &["merged summary", "summary input"],
        );
        assert_eq!(snapshot(&d.join("out")), before, "{input}");
    }
    succeeds(
        d,
        &[
            "batch",
            "--merge-summaries",
            "out/summary.csv",
            "-o",
            "merged",
        ],
    );
    assert_eq!(read_summary(&d.join("merged.csv")).unwrap().len(), 2);
}

#[test]
fn an_output_name_says_the_format_written() {
    let (_t, d) = graph_dir();
    let (l, r) = (d.join("l.png"), d.join("r.png"));
    let view = |shift: u32| {
        image::GrayImage::from_fn(24, 16, |x, y| {
            image::Luma([((x + shift) * 37 + y * 11) as u8])
        })
    };
    view(0).save(&l).unwrap();
    view(2).save(&r).unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        // Disparity maps are PNG or PFM: a JPEG (lossy) or text name would hold PNG bytes.
        (
            &["stereo", "l.png", "r.png", "-n", "4", "-o", "d.jpg"],
            &["disparity", ".png, .pfm"],
        ),
        (
            &["stereo", "l.png", "r.png", "-n", "4", "-o", "d.txt"],
            &["disparity", ".png, .pfm"],
        ),
        (
            &[
                "stereo", "l.png", "r.png", "-n", "4", "-o", "d.png", "--color", "c.pfm",
            ],
            &["--color", ".pfm"],
        ),
        (
            &[
                "stereo",
                "l.png",
                "r.png",
                "-n",
                "4",
                "-o",
                "d.png",
                "--stats-json",
                "s.png",
            ],
            &["--stats-json", "JSON"],
        ),
        (&["maxflow", "g.max", "--cut", "c.png"], &["--cut", ".png"]),
        (
            &["maxflow", "g.max", "--cut", "c.cut.gz"],
            &["--cut", ".gz"],
        ),
        (
            &["maxflow", "g.max", "--flows", "f.json"],
            &["--flows", ".json"],
        ),
        (&["convert", "g.max", "g.png"], &["graph", ".sgb"]),
        (
            &["gen", "grid", "2d:8x8:n4:c10:s1", "-o", "g.sgb"],
            &["DIMACS", ".max"],
        ),
        (
            &["bench", "--json", "b.png", "--only", "nothing"],
            &["--json", "JSON"],
        ),
        (
            &["batch", "g.max", "-o", "out", "--name", "{id}.png"],
            &["job 'g'", "cut"],
        ),
    ];
    let before = snapshot(&d);
    for (args, want) in cases {
        fails(&d, args, want);
        assert_eq!(snapshot(&d), before, "{args:?} wrote a file");
        assert!(!d.join("out").join("g.png").exists());
    }
    // The names of their formats work, and so do text names for text outputs.
    succeeds(&d, &["stereo", "l.png", "r.png", "-n", "4", "-o", "d.pfm"]);
    assert!(bytes(&d.join("d.pfm")).starts_with(b"Pf"));
    succeeds(
        &d,
        &["maxflow", "g.max", "--cut", "c.txt", "--flows", "f.sol.txt"],
    );
    succeeds(&d, &["convert", "g.max", "g.sgb"]);
    // The library's DIMACS writer (what Python's write_max calls) checks the name too.
    let net = segcut::io::dimacs::read_max(&bytes(&d.join("g.max"))[..], "g.max").unwrap();
    assert!(segcut::io::dimacs::write_max_file(&d.join("p.max"), &net.network, &[]).is_ok());
    let err = segcut::io::dimacs::write_max_file(&d.join("p.sgb"), &net.network, &[]).unwrap_err();
    assert!(err.to_string().contains(".max"), "{err}");
    assert!(!d.join("p.sgb").exists());
}

#[test]
fn a_failed_write_is_a_failure_for_every_command() {
    if !Path::new("/dev/full").exists() {
        common::skipped("no /dev/full on this system");
        return;
    }
    let (_t, d) = graph_dir();
    let (_s, sd) = scene_dir();
    for name in [
        "full.cut",
        "full.flow",
        "full.max",
        "full.sgb",
        "full.png",
        "full.json",
    ] {
        std::os::unix::fs::symlink("/dev/full", d.join(name)).unwrap();
    }
    std::os::unix::fs::symlink("/dev/full", sd.join("full.json")).unwrap();
    std::fs::create_dir(d.join("out")).unwrap();
    for ext in ["csv", "jsonl"] {
        std::os::unix::fs::symlink("/dev/full", d.join(format!("out/full.{ext}"))).unwrap();
        std::os::unix::fs::symlink("/dev/full", d.join(format!("merged.{ext}"))).unwrap();
    }
    let cases: &[&[&str]] = &[
        &["maxflow", "g.max", "--cut", "full.cut"],
        &["maxflow", "g.max", "--flows", "full.flow"],
        &["convert", "g.max", "full.max"],
        &["convert", "g.max", "full.sgb"],
        &["gen", "grid", "2d:8x8:n4:c10:s1", "-o", "full.max"],
        &[
            "batch",
            "-q",
            "--gpus",
            "none",
            "g.max",
            "-o",
            "out",
            "--summary",
            "out/full",
        ],
    ];
    for args in cases {
        fails(&d, args, &["No space left"]);
    }
    succeeds(
        &d,
        &["batch", "-q", "--gpus", "none", "g.max", "-o", "out2"],
    );
    fails(
        &d,
        &[
            "batch",
            "--merge-summaries",
            "out2/summary.csv",
            "-o",
            "merged",
        ],
        &["No space left"],
    );
    fails(
        &sd,
        &[
            "stereo-eval",
            "--gt",
            "S",
            "--gt-scale",
            "16",
            "d.png",
            "--json",
            "full.json",
        ],
        &["No space left"],
    );
    // Printed results onto a full disk: exit 2 with the error, not 0, not a panic.
    for (dir, args) in [
        (&d, &["maxflow", "g.max"][..]),
        (&d, &["convert", "g.max", "c.max"][..]),
        (
            &sd,
            &["stereo-eval", "--gt", "S", "--gt-scale", "16", "d.png"][..],
        ),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(common::segcut_bin())
            .args(args)
            .current_dir(dir)
            .stdout(full)
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("No space left") && !e.contains("panicked"),
            "{args:?}: {e}"
        );
    }
    // A read-only folder takes no output: refused before any work, naming it.
    let ro = d.join("ro");
    std::fs::create_dir(&ro).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let writable = std::fs::write(ro.join("probe"), b"").is_ok(); // root writes anyway
    if !writable {
        fails(
            &d,
            &["maxflow", "g.max", "--cut", "ro/c.cut"],
            &["ro/c.cut"],
        );
        fails(
            &d,
            &["batch", "-q", "--gpus", "none", "g.max", "-o", "ro"],
            &["ro"],
        );
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn rows(path: &Path) -> Vec<Row> {
    read_summary(path).unwrap()
}

#[test]
fn a_gpu_solver_without_a_gpu_is_a_setup_error_before_any_job() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    graphs(d, 3);
    for solver in ["cuda-grid", "cuda-csr"] {
        fails(
            d,
            &[
                "batch", "-q", "--gpus", "none", "a0.max", "a1.max", "a2.max", "-o", "out",
                "--solver", solver,
            ],
            &[solver, "no GPU"],
        );
        assert!(!d.join("out/summary.csv").exists(), "jobs ran");
        assert!(!d.join("out/a0.cut").exists());
    }
    // Per job, in a manifest, too.
    std::fs::write(
        d.join("jobs.csv"),
        "max,solver\na0.max,bk\na1.max,cuda-grid\n",
    )
    .unwrap();
    fails(
        d,
        &["batch", "-q", "--gpus", "none", "jobs.csv", "-o", "out"],
        &["job 'a1'", "cuda-grid"],
    );
    assert!(!d.join("out/a0.cut").exists());
    // Without --gpus, on a machine with no usable GPU, the same.
    if segcut::cuda::gpu_unavailable_reason().is_some() {
        fails(
            d,
            &[
                "batch",
                "-q",
                "a0.max",
                "-o",
                "out",
                "--solver",
                "cuda-grid",
            ],
            &["cuda-grid"],
        );
    }
    // A CPU solver runs.
    succeeds(
        d,
        &[
            "batch", "-q", "--gpus", "none", "a0.max", "-o", "out", "--solver", "bk",
        ],
    );
}

#[test]
fn a_rerun_keeps_one_summary_row_per_job() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 39;
    graphs(d, n);
    let files: Vec<String> = (0..n).map(|i| format!("a{i}.max")).collect();
    let run = |extra: &[&str]| {
        let mut args = batch_args(&["-o", "out"]);
        args.extend(files.iter().map(String::as_str));
        args.extend_from_slice(extra);
        succeeds(d, &args);
    };
    run(&[]);
    let summary = d.join("out/summary.csv");
    let first = rows(&summary);
    assert_eq!(first.len(), n);
    assert!(first.iter().all(|r| r.status == Status::Ok));
    let sorted = |mut v: Vec<Row>| {
        v.sort_by(|a, b| a.job.cmp(&b.job));
        v
    };
    let first = sorted(first);
    for _ in 0..2 {
        run(&[]);
        let again = rows(&summary);
        assert_eq!(again.len(), n, "one row per job after a rerun");
        // The rows of the run that did the work stay, flows and all.
        assert_eq!(sorted(again), first);
        assert_eq!(sorted(rows(&d.join("out/summary.jsonl"))), first);
    }
    run(&["--force"]);
    let forced = rows(&summary);
    assert_eq!(forced.len(), n);
    assert!(forced.iter().all(|r| r.status == Status::Ok));
    let forced = sorted(forced);
    let flows = |v: &[Row]| {
        v.iter()
            .map(|r| (r.job.clone(), r.flow))
            .collect::<Vec<_>>()
    };
    assert_eq!(flows(&forced), flows(&first));
}

#[test]
fn a_job_whose_row_was_lost_gets_one_from_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    graphs(d, 4);
    let args = batch_args(&["a0.max", "a1.max", "a2.max", "a3.max", "-o", "out"]);
    succeeds(d, &args);
    let summary = d.join("out/summary");
    let all = rows(&summary.with_extension("csv"));
    let lost = all.iter().find(|r| r.job == "a2").unwrap().clone();
    assert!(lost.flow.is_some());
    // As a run killed after a2's output was renamed into place but before its row was written
    // leaves it: the output, and no row.
    for ext in ["csv", "jsonl"] {
        let p = summary.with_extension(ext);
        let kept: String = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .filter(|l| !l.contains("a2"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&p, kept).unwrap();
    }
    succeeds(d, &args);
    let again = rows(&summary.with_extension("csv"));
    assert_eq!(again.len(), 4);
    let back = again.iter().find(|r| r.job == "a2").expect("a2 has a row");
    assert_eq!(back.status, Status::Skipped);
    assert_eq!(back.flow, lost.flow, "its flow read back from its output");
    assert_eq!(back.output, lost.output);
    let jsonl = rows(&summary.with_extension("jsonl"));
    assert!(jsonl.iter().any(|r| r.job == "a2" && r.flow == lost.flow));
}
