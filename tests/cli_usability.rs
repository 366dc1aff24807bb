//! The command line as a new user meets it: help with defaults and examples, a mistyped
//! subcommand, errors printed once, options that do not apply, lossy seed files, stable names in
//! `--stats-json`, every documented bench suite accepted.

mod common;

use std::process::{Command, Output};

fn segcut(args: &[&str]) -> Output {
    Command::new(common::segcut_bin())
        .args(args)
        .current_dir(common::repo_root())
        .output()
        .expect("run segcut")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The error text of a run that must fail with status 2 and no panic.
fn fails(args: &[&str]) -> String {
    let o = segcut(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(!e.contains("panicked"), "{e}");
    e
}

const SAMPLE: &str = "samples/balloon.png";
const SEEDS: &str = "samples/balloon-seeds.png";

#[test]
fn help_shows_defaults_and_examples_for_every_subcommand() {
    for sub in ["segment", "eval", "maxflow", "gen", "bench"] {
        let o = segcut(&[sub, "--help"]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{sub}: {}", stderr(&o));
        assert!(out.contains("Examples:"), "{sub}: {out}");
        assert!(
            out.contains(&format!("segcut {sub}")) || sub == "segment",
            "{out}"
        );
    }
    let out = String::from_utf8_lossy(&segcut(&["segment", "--help"]).stdout).into_owned();
    let d = segcut::segment::SegmentOptions::default();
    for shown in [
        // λ and the rounds also say their probability-map defaults.
        format!("[default: {} (", d.lambda),
        format!("[default: {} (", d.iterations),
        "[default: auto]".to_string(),
        "[default: lab]".to_string(),
    ] {
        assert!(out.contains(&shown), "missing {shown} in\n{out}");
    }
}

#[test]
fn a_mistyped_subcommand_is_named_not_segmented() {
    let e = fails(&["maxflw", "g.max"]);
    assert!(e.contains("did you mean 'maxflow'"), "{e}");
    let e = fails(&["evl"]);
    assert!(e.contains("did you mean 'eval'"), "{e}");
    // A real file with a name like that is still segmented (and here fails on its content).
    let e = fails(&["./maxflw", "--seeds", SEEDS, "-o", "/tmp/x.png"]);
    assert!(!e.contains("did you mean"), "{e}");
}

#[test]
fn an_os_error_is_printed_once() {
    let e = fails(&["no-such-photo.png", "--seeds", SEEDS, "-o", "/tmp/x.png"]);
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");
    assert!(e.contains("no-such-photo.png"), "{e}");
}

#[test]
fn options_that_do_not_apply_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.png");
    let out = out.to_str().unwrap();
    let e = fails(&[SAMPLE, "--seeds", SEEDS, "-o", out, "-c", "26"]);
    assert!(e.contains("connectivity 26") && e.contains("4 or 8"), "{e}");
    let e = fails(&[SAMPLE, "--seeds", SEEDS, "-o", out, "--bins", "8"]);
    assert!(e.contains("--bins") && e.contains("model hist"), "{e}");
    let e = fails(&[
        SAMPLE,
        "--seeds",
        SEEDS,
        "-o",
        out,
        "--model",
        "hist",
        "--components",
        "3",
    ]);
    assert!(e.contains("--components"), "{e}");
    assert!(!std::path::Path::new(out).exists(), "nothing written");
}

#[test]
fn jpeg_seeds_are_refused_as_lossy() {
    let dir = tempfile::tempdir().unwrap();
    let jpg = dir.path().join("seeds.jpg");
    image::open(common::repo_root().join(SEEDS))
        .unwrap()
        .to_rgb8()
        .save(&jpg)
        .unwrap();
    let out = dir.path().join("m.png");
    let e = fails(&[
        SAMPLE,
        "--seeds",
        jpg.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(e.contains("JPEG") && e.contains("lossy"), "{e}");
    assert!(e.contains("seeds.jpg"), "{e}");
}

#[test]
fn stats_json_uses_stable_names_and_the_solver_that_ran() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.png");
    let json = dir.path().join("s.json");
    let o = segcut(&[
        SAMPLE,
        "--seeds",
        SEEDS,
        "-o",
        out.to_str().unwrap(),
        "--stats-json",
        json.to_str().unwrap(),
        "--solver",
        "bk",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["options"]["model"]["kind"], "gmm");
    assert_eq!(v["options"]["model"]["components"], 5);
    assert_eq!(v["options"]["color_space"], "lab");
    assert_eq!(v["solver"], "bk");
    assert_eq!(v["solver_requested"], "bk");
    assert_eq!(v["solver_reason"], "requested");
    // The summary line names the solver and explains a zero flow where it prints one.
    let line = stderr(&o);
    assert!(line.contains("by bk"), "{line}");
    if line.contains("flow 0") {
        assert!(line.contains("zero-capacity"), "{line}");
    }
}

#[test]
fn every_listed_bench_suite_is_accepted() {
    // The photo suite reads the dev set before filtering; name it (packed tests run elsewhere).
    let Some(shared) = common::shared_data() else {
        return;
    };
    let data = shared.join("segmentation/grabcut-bsds-dev");
    let data = data.to_str().unwrap();
    for suite in segcut::bench::SUITES {
        let o = segcut(&[
            "bench",
            "--data",
            data,
            "--suite",
            suite,
            "--max-nodes",
            "1",
            "--runs",
            "1",
            "--only",
            "no-instance-has-this-name",
        ]);
        let e = stderr(&o);
        // Filtered to nothing: a clean "no instance left" error, never "invalid value".
        assert!(!e.contains("invalid value"), "{suite}: {e}");
        assert!(e.contains("no instance left"), "{suite}: {e}");
    }
}

/// `bench --pipeline --set KEY=VALUE` goes through the options model: a missing `=`, an unknown
/// option and a bad value are refused before any work, naming what was wrong.
#[test]
fn bench_set_is_checked_by_the_options_model() {
    let e = fails(&["bench", "--pipeline", "--set", "refit-steps"]);
    assert!(e.contains("KEY=VALUE"), "{e}");
    let e = fails(&["bench", "--pipeline", "--set", "refit=1"]);
    assert!(e.contains("unknown") && e.contains("refit_steps"), "{e}");
    let e = fails(&["bench", "--pipeline", "--set", "refit-steps=101"]);
    assert!(e.contains("refit-steps") && e.contains("[0, 100]"), "{e}");
    let e = fails(&["bench", "--pipeline", "--set", "lambda=nan"]);
    assert!(e.contains("lambda"), "{e}");
    let e = fails(&["bench", "--set", "refit-steps=1"]);
    assert!(e.contains("--pipeline"), "{e}");
}
