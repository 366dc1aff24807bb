//! Hostile `.max` files and archives (issue 11): a header declaring 10^9 nodes refused under a
//! memory limit, archives recognised by structure, `.sol` values and outputs keyed by member
//! path (duplicate names refused, never silently merged), untrusted text escaped in messages.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;

use common::segcut_bin;
use segcut::io::dimacs::{read_instances, ReadOptions};
use segcut::maxflow::Solver;

/// A tar archive of `(path, data)` members, in order.
fn tar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        // `append_data` refuses some names (`..`); set the raw path as an archive may hold it.
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap()
}

/// A two-node-path graph whose maximum flow is `flow`.
fn graph(flow: i32) -> Vec<u8> {
    format!("p max 3 2\nn 1 s\nn 2 t\na 1 3 {flow}\na 3 2 100\n").into_bytes()
}

/// Every instance of `path` as (key, flow computed by BK, expected flow from its .sol).
fn solve_all(path: &Path) -> segcut::Result<Vec<(String, i64, Option<i64>)>> {
    let mut out = Vec::new();
    read_instances(path, &ReadOptions::default(), |inst| {
        let cut = segcut::maxflow::bk::Bk::default().solve(&inst.network)?;
        out.push((inst.key().to_string(), cut.flow, inst.expected_flow));
        Ok(())
    })?;
    Ok(out)
}

#[test]
fn a_billion_node_header_is_refused_cleanly_under_a_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.max");
    // 30-odd bytes declaring 10^8 and 10^9 nodes with one arc: valid apart from its size.
    for nodes in ["100000000", "1000000000"] {
        std::fs::write(&file, format!("p max {nodes} 1\nn 1 s\nn 2 t\na 1 3 1\n")).unwrap();
        let out = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 2000000 && exec \"$0\" maxflow --solver bk \"$1\"")
            .arg(segcut_bin())
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        // An abort is status 134 (or a signal); a clean refusal is an error exit with a message.
        assert_eq!(out.status.code(), Some(2), "{nodes} nodes: {err}");
        assert!(
            err.contains("huge.max:1:"),
            "names the file and line: {err}"
        );
        assert!(
            err.contains("ulimit -v") || err.contains("memory"),
            "says it is memory: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_plain_max_with_ustar_at_byte_257_is_not_taken_for_a_tar_archive() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = b"c ".to_vec();
    text.resize(257, b'x');
    text.extend_from_slice(b"ustar comment\n");
    text.extend_from_slice(&graph(7));
    assert_eq!(&text[257..262], b"ustar");
    for name in ["plain.max", "plain.tar"] {
        let path = dir.path().join(name);
        std::fs::write(&path, &text).unwrap();
        let got = solve_all(&path).unwrap();
        assert_eq!(got.len(), 1, "{name}");
        assert_eq!(got[0].1, 7, "{name}");
    }
    // A real archive without any tar-like extension is still found by its header checksum.
    let path = dir.path().join("archive.data");
    std::fs::write(&path, tar_of(&[("g.max", &graph(5))])).unwrap();
    let got = solve_all(&path).unwrap();
    assert_eq!(got, [("g".to_string(), 5, None)]);
}

#[test]
fn sol_values_are_matched_by_member_path_and_outputs_keep_member_paths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dups.tar");
    let archive = tar_of(&[
        ("a/dup.sol", b"s 8\n"),
        ("b/dup.sol", b"s 3\n"),
        ("a/dup.max", &graph(8)),
        ("b/dup.max", &graph(3)),
    ]);
    std::fs::write(&path, archive).unwrap();
    let got = solve_all(&path).unwrap();
    assert_eq!(
        got,
        [
            ("a/dup".to_string(), 8, Some(8)),
            ("b/dup".to_string(), 3, Some(3))
        ]
    );
    // Through the command line: both match, and --cut DIR writes both files.
    let cuts = dir.path().join("cuts");
    std::fs::create_dir(&cuts).unwrap();
    let out = Command::new(segcut_bin())
        .args(["maxflow", "--solver", "bk", "--json", "--cut"])
        .arg(&cuts)
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("\"matches\":true").count(), 2, "{stdout}");
    let a = std::fs::read_to_string(cuts.join("a/dup.cut")).unwrap();
    let b = std::fs::read_to_string(cuts.join("b/dup.cut")).unwrap();
    assert!(!a.is_empty() && !b.is_empty());
}

#[test]
fn duplicate_member_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.tar");
    std::fs::write(
        &path,
        tar_of(&[("x/g.max", &graph(1)), ("x/g.max", &graph(2))]),
    )
    .unwrap();
    let e = solve_all(&path).unwrap_err().to_string();
    assert!(e.contains("two .max members named 'x/g'"), "{e}");
    // The same name in two archives of one run: the second output is refused, not overwritten.
    let (one, two) = (dir.path().join("one.tar"), dir.path().join("two.tar"));
    std::fs::write(&one, tar_of(&[("g.max", &graph(1))])).unwrap();
    std::fs::write(&two, tar_of(&[("g.max", &graph(2))])).unwrap();
    let cuts = dir.path().join("cuts");
    std::fs::create_dir(&cuts).unwrap();
    let out = Command::new(segcut_bin())
        .args(["maxflow", "--solver", "bk", "--cut"])
        .arg(&cuts)
        .args([&one, &two])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("written twice"), "{err}");
    // The first file's cut is intact: the source and node 3 (flow 1 saturates 1 → 3 only).
    let cut = std::fs::read_to_string(cuts.join("g.cut")).unwrap();
    assert_eq!(cut.split_whitespace().collect::<Vec<_>>(), ["1"]);
}

#[test]
fn member_paths_cannot_escape_the_output_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.tar");
    std::fs::write(&path, tar_of(&[("../../evil.max", &graph(1))])).unwrap();
    let cuts = dir.path().join("deep/cuts");
    std::fs::create_dir_all(&cuts).unwrap();
    let out = Command::new(segcut_bin())
        .args(["maxflow", "--solver", "bk", "--cut"])
        .arg(&cuts)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cuts.join("evil.cut").is_file());
    assert!(!dir.path().join("evil.cut").exists());
}

#[test]
fn terminal_escapes_in_tokens_and_names_are_escaped_in_messages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("esc\x1b[2J.max");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"p max 3 1\nn 1 s\nn 2 t\na 1 3 \x1b]0;pwned\x07\n")
        .unwrap();
    drop(f);
    let e = solve_all(&path).unwrap_err().to_string();
    assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
    assert!(e.contains("\\u{1b}]0;pwned\\u{7}"), "{e}");
    assert!(e.contains("esc\\u{1b}[2J.max:4:"), "{e}");
    // A member name with an escape sequence.
    let path = dir.path().join("m.tar");
    std::fs::write(&path, tar_of(&[("bad\x1b[31m.max", b"p max 3 0\nq\n")])).unwrap();
    let e = solve_all(&path).unwrap_err().to_string();
    assert!(!e.contains('\x1b'), "{e:?}");
    assert!(e.contains("bad\\u{1b}[31m.max"), "{e}");
}
