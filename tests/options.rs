//! The options model reaches every front end: each option of `segcut::options` is a command-line
//! flag (with its default in the help), a manifest column, a Python keyword and an
//! `eval --cv --grid` key, and the docs' tables are the model's. Walking the table here means a
//! new option is checked everywhere without a line in this file.

mod common;

use segcut::batch::manifest::{option_columns, parse_manifest, MAXFLOW_OPTIONS};
use segcut::options::{markdown, Table, Value};
use std::path::Path;
use std::process::Command;

fn segcut() -> Command {
    Command::new(common::segcut_bin())
}

fn help(sub: &str) -> String {
    let out = segcut().args([sub, "--help"]).output().unwrap();
    assert!(out.status.success());
    // clap wraps long lines; join them so a default split over two lines still matches.
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_option_is_a_flag_with_its_default_in_the_help() {
    for (sub, table) in [
        ("segment", Table::Segment),
        ("stereo", Table::Stereo),
        ("batch", Table::Segment),
        ("eval", Table::Segment),
    ] {
        let h = help(sub);
        for spec in table.specs() {
            assert!(
                h.contains(&format!("--{}", spec.name)),
                "{sub}: no --{}",
                spec.name
            );
            let default: String = spec
                .default
                .text()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                h.contains(&format!("[default: {default}]")),
                "{sub} --{}: the help does not show [default: {default}]",
                spec.name
            );
        }
    }
}

#[test]
fn every_option_is_a_manifest_column() {
    let cols = option_columns();
    for (table, kind_cols) in [
        (Table::Segment, "image,seeds"),
        (Table::Stereo, "left,right"),
    ] {
        for spec in table.specs() {
            assert!(cols.contains(&spec.snake()), "no column {}", spec.snake());
            let text = format!(
                "{kind_cols},{}\na.png,b.png,\"{}\"\n",
                spec.snake(),
                spec.example
            );
            let jobs = parse_manifest(&text, "m.csv", Path::new("."))
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            let want = spec.parse(spec.example).unwrap();
            assert_eq!(
                jobs[0].overrides.get(spec.name),
                Some(&want),
                "{}",
                spec.name
            );
            // JSON lines: the same value as a JSON string.
            let (a, b) = kind_cols.split_once(',').unwrap();
            let line = format!(
                "{{\"{a}\": \"a.png\", \"{b}\": \"b.png\", \"{}\": \"{}\"}}\n",
                spec.snake(),
                spec.example
            );
            let jobs = parse_manifest(&line, "m.jsonl", Path::new(".")).unwrap();
            assert_eq!(
                jobs[0].overrides.get(spec.name),
                Some(&want),
                "{}",
                spec.name
            );
        }
    }
    for name in MAXFLOW_OPTIONS {
        assert!(Table::Segment.find(name).is_some(), "{name}");
    }
}

#[test]
fn every_segmentation_option_is_a_grid_key() {
    // The grid's keys are checked before any dataset is read: an unknown key or a bad value
    // fails with `--grid`, a good one goes on to the (missing) dataset.
    for spec in Table::Segment.specs() {
        for key in [spec.name.to_string(), spec.snake()] {
            let mut cmd = segcut();
            cmd.args(["eval", "--cv", "/nonexistent-segcut-dataset", "--grid"])
                .arg(format!("{key}={}|{}", spec.example, spec.example));
            if spec.name == "bins" {
                cmd.args(["--model", "hist"]); // bins are the histograms'
            }
            let out = cmd.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success());
            assert!(!err.contains("--grid"), "{key}: {err}");
        }
    }
    let out = segcut()
        .args(["eval", "--cv", "/nonexistent", "--grid", "lambda=nan"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--grid") && err.contains("lambda"), "{err}");
}

#[test]
fn python_keywords_are_the_table() {
    // The Python package takes its keyword list from the table (`_segcut.option_table`) and
    // hard-codes none; every name is a Python identifier, `lambda` being spelt `lambda_` where
    // the language needs it.
    let init =
        std::fs::read_to_string(common::repo_root().join("python/segcut/__init__.py")).unwrap();
    for kind in ["segment", "stereo"] {
        assert!(
            init.contains(&format!("_segcut.option_table(\"{kind}\")")),
            "__init__.py does not take the {kind} keywords from the table"
        );
    }
    let native =
        std::fs::read_to_string(common::repo_root().join("python/src/options.rs")).unwrap();
    assert!(
        native.contains("table.specs()"),
        "option_table walks the table"
    );
    for t in [Table::Segment, Table::Stereo] {
        for spec in t.specs() {
            let k = spec.snake();
            assert!(
                k.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{k} is not a keyword"
            );
        }
    }
}

#[test]
fn not_given_is_not_the_default() {
    // `--unary p.png --lambda 100`: λ = 100 (the colour models' default), not the probability
    // map's 2.
    let mut v = segcut::options::Values::segment();
    v.set("lambda", "100").unwrap();
    let o = v
        .probability_options(segcut::segment::SegmentOptions::default())
        .unwrap();
    assert_eq!(o.lambda, 100.0);
    assert_eq!(v.get("lambda"), Some(&Value::Float(100.0)));
}

/// The text between `<!-- NAME -->` and `<!-- /NAME -->` in a doc.
fn between(doc: &str, name: &str) -> String {
    let (a, b) = (format!("<!-- {name} -->\n"), format!("<!-- /{name} -->"));
    let start = doc.find(&a).unwrap_or_else(|| panic!("no {a:?}")) + a.len();
    let end = doc[start..].find(&b).unwrap_or_else(|| panic!("no {b:?}")) + start;
    doc[start..end].to_string()
}

#[test]
fn the_docs_tables_are_the_model() {
    let root = common::repo_root();
    let doc = std::fs::read_to_string(root.join("docs/options.md")).unwrap();
    for (name, table) in [
        ("segment-options", Table::Segment),
        ("stereo-options", Table::Stereo),
    ] {
        assert_eq!(
            between(&doc, name),
            markdown(table),
            "docs/options.md is out of date: regenerate it with \
             `cargo test --test options -- --ignored regenerate_docs`"
        );
    }
    // docs/python.md gives each keyword's default; they must be the model's.
    let py = std::fs::read_to_string(root.join("docs/python.md")).unwrap();
    for (name, table) in [
        ("python-segment", Table::Segment),
        ("python-stereo", Table::Stereo),
    ] {
        assert_eq!(
            between(&py, name),
            python_table(table),
            "docs/python.md {name} is out of date: regenerate it (see above)"
        );
    }
}

/// The keyword table of docs/python.md.
fn python_table(table: Table) -> String {
    let mut s = String::from("| keyword | default | meaning |\n|---|---|---|\n");
    for o in table.specs() {
        let key = match o.name {
            "lambda" => "`lambda` / `lambda_`".to_string(),
            _ => format!("`{}`", o.snake()),
        };
        s.push_str(&format!(
            "| {key} | {} | {} |\n",
            o.default.text().replace('|', "\\|"),
            o.help.replace('|', "\\|")
        ));
    }
    s
}

/// Writes the tables into docs/options.md and docs/python.md (run by hand after changing the
/// model).
#[test]
#[ignore]
fn regenerate_docs() {
    let root = common::repo_root();
    let replace = |file: &str, name: &str, body: &str| {
        let p = root.join(file);
        let doc = std::fs::read_to_string(&p).unwrap();
        let old = between(&doc, name);
        let doc = doc.replacen(
            &format!("<!-- {name} -->\n{old}"),
            &format!("<!-- {name} -->\n{body}"),
            1,
        );
        std::fs::write(&p, doc).unwrap();
    };
    replace(
        "docs/options.md",
        "segment-options",
        &markdown(Table::Segment),
    );
    replace(
        "docs/options.md",
        "stereo-options",
        &markdown(Table::Stereo),
    );
    for (name, table) in [
        ("python-segment", Table::Segment),
        ("python-stereo", Table::Stereo),
    ] {
        replace("docs/python.md", name, &python_table(table));
    }
}
