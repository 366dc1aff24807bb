//! The binary graph format `.sgb` and `segcut convert`: round trips keep the graph, its layout
//! and its DIMACS numbering exactly; any flipped bit or truncation is refused (checksum, sizes),
//! never a panic or a different graph; `segcut maxflow` reads `.sgb` like `.max`.

mod common;

use std::process::Command;

use common::segcut_bin;
use segcut::gen::{generate, InstanceSpec};
use segcut::graph::Network;
use segcut::io::dimacs::{read_max, read_sgb, write_max, write_sgb, Layout, MaxInstance};
use segcut::maxflow::{bk::Bk, Solver};

fn instance(spec: &str, hint: bool) -> MaxInstance {
    let net = generate(&spec.parse::<InstanceSpec>().unwrap()).unwrap();
    let mut text = Vec::new();
    write_max(&mut text, &net, &[]).unwrap();
    let mut text = String::from_utf8(text).unwrap();
    if !hint {
        text = text
            .lines()
            .filter(|l| !l.starts_with("c regulargrid"))
            .map(|l| format!("{l}\n"))
            .collect();
    }
    read_max(text.as_bytes(), spec).unwrap()
}

fn same(a: &Network, b: &Network) -> bool {
    match (a, b) {
        (Network::Grid(x), Network::Grid(y)) => x == y,
        (Network::Csr(x), Network::Csr(y)) => x == y,
        _ => false,
    }
}

/// `bytes` written to `path` and loaded as a file on disk (read by position on every core).
fn load_file(path: &std::path::Path, bytes: &[u8]) -> segcut::Result<MaxInstance> {
    use segcut::io::dimacs::{read_instances, ReadOptions};
    std::fs::write(path, bytes).unwrap();
    let mut got = None;
    read_instances(path, &ReadOptions::default(), |i| {
        got = Some(i);
        Ok(())
    })
    .map(|_| got.expect("one instance"))
}

fn sgb(inst: &MaxInstance) -> Vec<u8> {
    let mut out = Vec::new();
    write_sgb(&mut out, inst).unwrap();
    out
}

#[test]
fn round_trips_keep_graph_layout_and_numbering() {
    // Terminals in the middle of the numbering, a source → sink arc, a dropped arc.
    let hand = "p max 6 6\nn 4 s\nn 2 t\na 4 1 5\na 1 3 4\na 3 2 6\na 4 2 3\na 2 5 1\na 5 6 2\n";
    let mut cases = vec![read_max(hand.as_bytes(), "hand.max").unwrap()];
    for (spec, hint) in [
        ("2d:9x7:n4:c10:s1", true),
        ("2d:9x7:n8:c10:s2", false),
        ("3d:5x4x3:n26:c10:s3", true),
        ("rlg:8x6:s4", false),
        ("genrmf:a4:b5:s5", false),
        ("sparse:300:d6:s6", false),
    ] {
        cases.push(instance(spec, hint));
    }
    for inst in &cases {
        let back = read_sgb(&sgb(inst)[..], "x.sgb").unwrap();
        assert!(same(&back.network, &inst.network), "{}", inst.name);
        // A grid's layout comes back whole; a general graph's reason becomes "stored as a
        // general graph" (the file does not keep the text reader's reasoning).
        match &inst.layout {
            Layout::Grid { .. } => assert_eq!(back.layout, inst.layout, "{}", inst.name),
            Layout::General(_) => assert!(matches!(back.layout, Layout::General(_))),
        }
        assert_eq!(
            (
                back.source_id,
                back.sink_id,
                back.declared_nodes,
                back.declared_arcs
            ),
            (
                inst.source_id,
                inst.sink_id,
                inst.declared_nodes,
                inst.declared_arcs
            ),
            "{}",
            inst.name
        );
        for node in 0..3.min(segcut::graph::FlowNetwork::num_nodes(&inst.network)) {
            assert_eq!(back.dimacs_id(node), inst.dimacs_id(node));
        }
        let (a, b) = (
            Bk::default().solve(&inst.network).unwrap(),
            Bk::default().solve(&back.network).unwrap(),
        );
        assert_eq!(a.flow, b.flow, "{}", inst.name);
    }
}

#[test]
fn every_flipped_byte_and_every_truncation_is_refused() {
    let inst = instance("2d:6x5:n8:c10:s7", true);
    let good = sgb(&inst);
    for i in 0..good.len() {
        for bit in [0, 3, 7] {
            let mut bad = good.clone();
            bad[i] ^= 1 << bit;
            let r = std::panic::catch_unwind(|| read_sgb(&bad[..], "bad.sgb"));
            let r = r.unwrap_or_else(|_| panic!("panic at byte {i} bit {bit}"));
            assert!(r.is_err(), "byte {i} bit {bit} flipped was accepted");
        }
    }
    for len in 0..good.len() {
        assert!(read_sgb(&good[..len], "short.sgb").is_err(), "length {len}");
    }
    let mut long = good.clone();
    long.push(0);
    let e = read_sgb(&long[..], "long.sgb").unwrap_err().to_string();
    assert!(e.contains("truncated or padded"), "{e}");
    let mut flipped = good.clone();
    let k = flipped.len() - 10;
    flipped[k] ^= 0x10;
    let e = read_sgb(&flipped[..], "c.sgb").unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
}

#[test]
fn convert_between_text_and_binary_and_solve_each() {
    let dir = tempfile::tempdir().unwrap();
    let max = dir.path().join("g.max");
    let inst = instance("rlg:12x10:s9", false);
    let mut text = Vec::new();
    write_max(&mut text, &inst.network, &[]).unwrap();
    std::fs::write(&max, &text).unwrap();
    let (bin, back) = (dir.path().join("g.sgb"), dir.path().join("back.max.gz"));
    for (from, to) in [(&max, &bin), (&bin, &back)] {
        let out = Command::new(segcut_bin())
            .arg("convert")
            .args([from, to])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut flows = Vec::new();
    for f in [&max, &bin, &back] {
        let out = Command::new(segcut_bin())
            .args(["maxflow", "--solver", "bk", "--json"])
            .arg(f)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        flows.push(v["flow"].as_i64().unwrap());
    }
    assert_eq!(flows[0], flows[1]);
    assert_eq!(flows[0], flows[2]);
    // The output may not be the input, and an unknown extension is refused before any work.
    let out = Command::new(segcut_bin())
        .arg("convert")
        .args([&bin, &bin])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(segcut_bin())
        .arg("convert")
        .arg(&bin)
        .arg(dir.path().join("g.txt"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown output format"));
}

/// CRC-32C, bit by bit (the reader's table-driven one is not public): to re-seal a crafted file.
fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// `good` with its flags and grid size replaced and the checksum made right again, so that only
/// the header's consistency can refuse it.
fn crafted(good: &[u8], flags: u32, dims: [u64; 3]) -> Vec<u8> {
    let mut b = good.to_vec();
    b[12..16].copy_from_slice(&flags.to_le_bytes());
    for (k, d) in dims.iter().enumerate() {
        b[16 + 8 * k..24 + 8 * k].copy_from_slice(&d.to_le_bytes());
    }
    let end = b.len() - 4;
    let crc = crc32c(&b[..end]);
    b[end..].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Issue 21 C5 and C6: grid headers that disagree with the node count (zero, overflowing or
/// mismatched sizes, a 60000×60000 grid over no nodes) are refused with a message, before the
/// grid's arrays are sized by them: no division by zero, no panic, no abort.
#[test]
fn grid_headers_that_disagree_with_the_node_count_are_refused() {
    let inst = instance("2d:3x2:n4:c10:s1", true);
    let good = sgb(&inst);
    assert_eq!(good[12], 1 | 4, "a hinted 2D grid");
    let empty = sgb(&read_max(&b"p max 2 0\nn 1 s\nn 2 t\n"[..], "e.max").unwrap());
    let big = 1u64 << 32;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "60000x60000 over no nodes",
            crafted(&empty, 1, [60000, 60000, 1]),
        ),
        ("width 0", crafted(&good, 1, [0, 3, 1])),
        ("width 0 over no nodes", crafted(&empty, 1, [0, 60000, 1])),
        ("height 0", crafted(&good, 5, [6, 0, 1])),
        ("overflowing to 0", crafted(&good, 1, [1 << 63, 2, 1])),
        ("overflowing", crafted(&good, 1, [big, big, 1])),
        ("too few nodes", crafted(&good, 1, [2, 2, 1])),
        ("too many nodes", crafted(&good, 1, [3, 3, 1])),
        ("depth 2 in 2D", crafted(&good, 1, [3, 1, 2])),
        ("3D flag without grid", crafted(&good, 2, [3, 2, 1])),
        ("hint flag without grid", crafted(&good, 4, [3, 2, 1])),
        ("unknown flag", crafted(&good, 1 | 8, [3, 2, 1])),
    ];
    assert_eq!(
        crafted(&good, 5, [3, 2, 1]),
        good,
        "the crafting keeps a good file good"
    );
    for (what, bytes) in &cases {
        let r = std::panic::catch_unwind(|| read_sgb(&bytes[..], "c.sgb"));
        let e = r
            .unwrap_or_else(|_| panic!("{what}: panic"))
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"))
            .to_string();
        assert!(
            e.starts_with("c.sgb:") && (e.contains("grid") || e.contains("flag")),
            "{what}: {e}"
        );
        assert!(!e.contains("checksum"), "{what}: {e}");
    }
    // The 144-byte file of the report: every front end refuses it under a 4 GB limit.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crafted.sgb");
    std::fs::write(&path, &cases[0].1).unwrap();
    for args in [vec!["maxflow", "--solver", "bk"], vec!["convert"]] {
        let mut sh = String::from("ulimit -v 4000000 && exec \"$0\"");
        for a in &args {
            sh.push(' ');
            sh.push_str(a);
        }
        sh.push_str(" \"$1\"");
        if args[0] == "convert" {
            sh.push_str(" \"$1.max\"");
        }
        let out = Command::new("sh")
            .arg("-c")
            .arg(sh)
            .arg(segcut_bin())
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("60000x60000"), "{args:?}: {err}");
    }
}

/// Version 2 stores a grid as its own arrays: the header's direction count and constant flow
/// are checked before anything is read, arrays that break the grid's rules are refused after
/// the checksum, and a file on disk (read by position on every core) is refused the same way
/// when cut short, padded or changed, never with a panic or a bus error.
#[test]
fn version_2_grids_are_checked_and_files_read_by_position_refuse_damage() {
    let inst = instance("2d:6x5:n8:c10:s7", true);
    let good = sgb(&inst);
    assert_eq!(
        u32::from_le_bytes(good[8..12].try_into().unwrap()),
        2,
        "a grid is version 2"
    );
    let general = sgb(&instance("rlg:4x3:s1", false));
    assert_eq!(
        u32::from_le_bytes(general[8..12].try_into().unwrap()),
        1,
        "general stays 1"
    );
    // The direction count (the `m` field) and the constant flow, re-sealed.
    let reseal = |b: &mut Vec<u8>| {
        let end = b.len() - 4;
        let crc = crc32c(&b[..end]);
        b[end..].copy_from_slice(&crc.to_le_bytes());
    };
    for (field, value, what) in [
        (48, 5u64, "directions"),
        (48, 6, "directions"),
        (56, 7, "constant"),
    ] {
        let mut b = good.clone();
        b[field..field + 8].copy_from_slice(&value.to_le_bytes());
        reseal(&mut b);
        let e = read_sgb(&b[..], "c.sgb").unwrap_err().to_string();
        assert!(e.starts_with("c.sgb:") && e.contains("grid"), "{what}: {e}");
    }
    // A negative capacity in a direction array, re-sealed: the grid's own check refuses it.
    let mut b = good.clone();
    let at = 112 + 4 * 3;
    b[at..at + 4].copy_from_slice(&(-1i32).to_le_bytes());
    reseal(&mut b);
    let e = read_sgb(&b[..], "c.sgb").unwrap_err().to_string();
    assert!(e.starts_with("c.sgb:") && !e.contains("checksum"), "{e}");
    // From disk: the good file loads to the same grid; damaged ones are refused.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.sgb");
    let load = |bytes: &[u8]| load_file(&path, bytes);
    let back = load(&good).unwrap();
    assert!(same(&back.network, &inst.network));
    let mut padded = good.clone();
    padded.extend_from_slice(&[0; 3]);
    let mut flipped = good.clone();
    flipped[200] ^= 4;
    for (what, bytes) in [
        ("cut short", good[..good.len() - 9].to_vec()),
        ("cut in the header", good[..50].to_vec()),
        ("padded", padded),
        ("flipped", flipped),
    ] {
        let e = load(&bytes).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("g.sgb"), "{what}: {e}");
    }
}

/// A file on disk large enough to be read in several pieces on every core (pieces are sized
/// from the file, down to 512 KiB): it loads to the same graph, and damage in any piece, or a
/// cut anywhere, is refused as in a one-piece file.
#[test]
fn files_read_in_many_pieces_load_the_same_and_refuse_damage_in_any_piece() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.sgb");
    let load = |bytes: &[u8]| load_file(&path, bytes);
    for spec in ["2d:400x400:n4:c10:s3", "sparse:70000:d4:s2"] {
        let inst = instance(spec, true);
        let good = sgb(&inst);
        assert!(good.len() > 3 << 20, "{spec}: {} bytes", good.len());
        // Read in 1, 2 and 16 threads: pieces of other sizes and counts.
        for threads in [1, 2, 16] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let back = pool.install(|| load(&good)).unwrap();
            assert!(
                same(&back.network, &inst.network),
                "{spec}, {threads} threads"
            );
            for at in [
                200,
                good.len() / 3,
                good.len() / 2 + 12_345,
                good.len() - 10,
            ] {
                let mut flipped = good.clone();
                flipped[at] ^= 0x10;
                let e = pool.install(|| load(&flipped)).map(|_| ()).unwrap_err();
                assert!(e.to_string().contains("big.sgb"), "{spec}, byte {at}: {e}");
            }
            for len in [good.len() / 2, good.len() - 1 - (700 << 10), good.len() - 1] {
                let e = pool.install(|| load(&good[..len])).map(|_| ()).unwrap_err();
                assert!(
                    e.to_string().contains("truncated"),
                    "{spec}, {len} bytes: {e}"
                );
            }
        }
    }
}
