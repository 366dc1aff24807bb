//! Hostile manifests and summaries (issue 21 D6 and A): duplicate ids and columns, control
//! characters in ids and paths, JSON that the old hand-written reader got wrong, Excel's BOM,
//! options of another kind; the summary written and read back with serde.

use segcut::batch::manifest::parse_manifest;
use segcut::batch::summary::{read_summary, Row, Status, SummaryWriter};
use segcut::options::Value;
use std::path::Path;

fn err(text: &str, file: &str) -> String {
    parse_manifest(text, file, Path::new("."))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_duplicate_id_names_both_lines() {
    let e = err("id,max\na,x.max\nb,y.max\na,z.max\n", "m.csv");
    assert!(e.starts_with("m.csv:4:") && e.contains("m.csv:2"), "{e}");
    // Two `id` columns: the second would silently win.
    let e = err("id,max,id\na,x.max,b\n", "m.csv");
    assert!(
        e.starts_with("m.csv:1:") && e.contains("'id' appears twice"),
        "{e}"
    );
    // The same key twice in a JSON row.
    let e = err(
        "{\"max\": \"x.max\", \"id\": \"a\", \"id\": \"b\"}\n",
        "m.jsonl",
    );
    assert!(e.starts_with("m.jsonl:1:") && e.contains("twice"), "{e}");
}

#[test]
fn control_characters_in_ids_and_paths_are_refused_before_any_job() {
    for (text, file) in [
        ("id,max\na\u{0}b,x.max\n", "m.csv"),
        ("id,max\na\u{1b}[31mred,x.max\n", "m.csv"),
        ("max\nx\u{1b}]0;title\u{7}.max\n", "m.csv"),
        ("{\"max\": \"x.max\", \"id\": \"a\\u0000b\"}\n", "m.jsonl"),
        (
            "{\"max\": \"x.max\", \"output\": \"o\\u001b[2J.cut\"}\n",
            "m.jsonl",
        ),
        // A quoted cell over two lines holds a newline.
        ("max\n\"x.max\ny.max\"\n", "m.csv"),
    ] {
        let e = err(text, file);
        assert!(e.starts_with(&format!("{file}:")), "{text:?}: {e}");
        assert!(e.contains("control character"), "{text:?}: {e}");
        assert!(
            !e.contains('\u{1b}') && !e.contains('\u{0}'),
            "the message is escaped: {e:?}"
        );
    }
}

#[test]
fn an_unclosed_quote_names_its_line() {
    let e = err("max\na.max\n\"b.max\nc.max\n", "m.csv");
    assert!(e.starts_with("m.csv:3:") && e.contains("not closed"), "{e}");
}

#[test]
fn json_rows_are_json() {
    // A surrogate pair is one character (the old reader made two replacement characters).
    let jobs = parse_manifest(
        "{\"max\": \"x.max\", \"id\": \"g\\ud83d\\ude00\"}\n",
        "m.jsonl",
        Path::new("."),
    )
    .unwrap();
    assert_eq!(jobs[0].id, "g😀");
    // NaN is not JSON (the old reader took it as a number).
    let e = err(
        "{\"image\": \"a.png\", \"seeds\": \"s.png\", \"lambda\": NaN}\n",
        "m.jsonl",
    );
    assert!(e.starts_with("m.jsonl:1:"), "{e}");
    // Numbers and booleans are values; a string "nan" is refused by the range check.
    let e = err(
        "{\"image\": \"a.png\", \"seeds\": \"s.png\", \"lambda\": \"nan\"}\n",
        "m.jsonl",
    );
    assert!(e.contains("lambda") && e.contains("finite"), "{e}");
    let jobs = parse_manifest(
        "{\"image\": \"a.png\", \"seeds\": \"s.png\", \"lambda\": 2e1, \"drop_unseeded\": false}\n",
        "m.jsonl",
        Path::new("."),
    )
    .unwrap();
    assert_eq!(jobs[0].overrides.get("lambda"), Some(&Value::Float(20.0)));
    assert_eq!(
        jobs[0].overrides.get("drop_unseeded"),
        Some(&Value::Bool(false))
    );
}

#[test]
fn an_excel_csv_with_a_byte_order_mark_reads() {
    let jobs = parse_manifest(
        "\u{feff}id,image,seeds,lambda\r\ncat,c.jpg,c.png,50\r\n",
        "m.csv",
        Path::new("/d"),
    )
    .unwrap();
    assert_eq!(jobs[0].id, "cat");
    assert_eq!(jobs[0].overrides.get("lambda"), Some(&Value::Float(50.0)));
}

#[test]
fn options_are_checked_per_kind_and_kept_when_equal_to_the_default() {
    // A stereo option on a segment row is refused, not ignored.
    let e = err("image,seeds,disparities\na.png,s.png,8\n", "m.csv");
    assert!(
        e.starts_with("m.csv:2:") && e.contains("disparities"),
        "{e}"
    );
    let e = err("max,lambda\nx.max,3\n", "m.csv");
    assert!(e.contains("lambda") && e.contains("maxflow"), "{e}");
    for bad in ["nan", "inf", "-1"] {
        let e = err(&format!("image,seeds,lambda\na.png,s.png,{bad}\n"), "m.csv");
        assert!(
            e.starts_with("m.csv:2:") && e.contains("lambda"),
            "{bad}: {e}"
        );
    }
    let e = err("left,right,cost_scale\nl.png,r.png,0\n", "m.csv");
    assert!(e.contains("cost_scale"), "{e}");
    // The default's value, given: kept as given.
    let jobs = parse_manifest("max,gpu_min_nodes\nx.max,65536\n", "m.csv", Path::new(".")).unwrap();
    assert_eq!(
        jobs[0].overrides.get("gpu_min_nodes"),
        Some(&Value::Int(65536))
    );
}

#[test]
fn summary_rows_round_trip_through_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("summary");
    let rows = vec![
        Row {
            job: "a,\"b\"".into(),
            kind: "segment".into(),
            status: Status::Failed,
            error: "line one\nline two, with \"quotes\"".into(),
            solver: "bk".into(),
            flow: None,
            read_ms: 1.23456,
            ..Row::default()
        },
        Row {
            job: "é😀".into(),
            kind: "maxflow".into(),
            status: Status::Ok,
            flow: Some(-3),
            verified: true,
            ..Row::default()
        },
    ];
    let mut w = SummaryWriter::open(&stem).unwrap();
    for r in &rows {
        w.append(r).unwrap();
    }
    drop(w);
    for ext in ["csv", "jsonl"] {
        let back = read_summary(&dir.path().join(format!("summary.{ext}"))).unwrap();
        assert_eq!(back.len(), 2, "{ext}");
        assert_eq!(back[0].job, rows[0].job);
        assert_eq!(back[0].error, rows[0].error, "{ext}");
        assert_eq!(back[0].read_ms, 1.235, "{ext}: ms to 3 decimals");
        assert_eq!(back[1], rows[1], "{ext}");
    }
    // A summary with a BOM (re-saved by Excel) reads too.
    let p = dir.path().join("excel.csv");
    let text = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    std::fs::write(&p, format!("\u{feff}{text}")).unwrap();
    assert_eq!(read_summary(&p).unwrap().len(), 2);
}
