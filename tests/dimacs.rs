//! DIMACS `.max` / `.sol` reading and writing: malformed input, the real Waterloo crops,
//! compressed files and archives, writer round trips, and no panics on any bytes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use segcut::graph::{Connectivity, CsrBuilder, CsrGraph, FlowNetwork, GridGraph, Network};
use segcut::io::dimacs::{
    read_instances, read_max, read_sol, stem_of, write_max, write_max_file, Layout, MaxInstance,
    ReadOptions,
};
use segcut::maxflow::bk::Bk;
use segcut::maxflow::Solver;
use segcut::rng::Rng;
use segcut::Error;

mod common;

// ---------------------------------------------------------------------------------------------
// Helpers

fn parse(text: &str) -> segcut::Result<MaxInstance> {
    read_max(text.as_bytes(), "t.max")
}

/// The line and message of the parse error `text` must give.
fn parse_err(text: &str) -> (u64, String) {
    match parse(text) {
        Err(Error::Parse { file, line, msg }) => {
            assert_eq!(file, "t.max");
            (line, msg)
        }
        Err(e) => panic!("expected a parse error, got {e:?}"),
        Ok(_) => panic!("expected a parse error for {text:?}, got a graph"),
    }
}

/// Asserts that `text` fails on `line` with a message containing every key word.
#[track_caller]
fn assert_fails(text: &str, line: u64, keys: &[&str]) {
    let (l, msg) = parse_err(text);
    assert_eq!(l, line, "wrong line for {text:?}: {msg}");
    for k in keys {
        assert!(
            msg.contains(k),
            "message {msg:?} lacks {k:?} (input {text:?})"
        );
    }
}

fn csr(inst: &MaxInstance) -> &CsrGraph {
    match &inst.network {
        Network::Csr(g) => g,
        Network::Grid(_) => panic!("{}: expected a CSR graph, got a grid", inst.name),
    }
}

fn grid(inst: &MaxInstance) -> &GridGraph {
    match &inst.network {
        Network::Grid(g) => g,
        Network::Csr(_) => panic!("{}: expected a grid, got a CSR graph", inst.name),
    }
}

/// A CSR graph in an order-free form: arcs with capacity as sorted (tail, head, cap), then the
/// terminal capacities and the constant flow.
type Canon = (Vec<(u32, u32, i32)>, Vec<i32>, Vec<i32>, i64);

fn canon(g: &CsrGraph) -> Canon {
    let mut arcs = Vec::new();
    for v in 0..g.num_nodes() {
        for a in g.arcs_of(v) {
            if g.caps()[a] > 0 {
                arcs.push((v as u32, g.heads()[a], g.caps()[a]));
            }
        }
    }
    arcs.sort_unstable();
    (
        arcs,
        g.source_caps().to_vec(),
        g.sink_caps().to_vec(),
        g.constant_flow(),
    )
}

fn write_to_vec(net: &Network, comments: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    write_max(&mut out, net, comments).unwrap();
    out
}

fn random_grid(w: usize, h: usize, d: usize, conn: Connectivity, seed: u64) -> GridGraph {
    let mut rng = Rng::new(seed);
    let mut g = GridGraph::new(w, h, d, conn).unwrap();
    let n = g.num_nodes();
    for v in 0..n {
        // Some zeros, so that "only arcs with capacity are written" is exercised.
        let s = rng.range_i64(-3, 50).max(0) as i32;
        let t = rng.range_i64(-3, 50).max(0) as i32;
        g.set_terminals(v, s, t);
    }
    for dir in 0..conn.degree() {
        for v in 0..n {
            if g.neighbor(v, dir).is_some() {
                g.caps_mut(dir)[v] = rng.range_i64(-2, 1000).max(0) as i32;
            }
        }
    }
    g.validate().unwrap();
    g
}

/// Small valid file used as the base of mutations.
const SMALL: &str = "c small\np max 6 7\nn 1 s\nn 6 t\na 1 2 5\na 2 3 4\na 3 2 1\na 3 6 3\na 1 4 2\na 4 5 2\na 5 6 9\n";

// ---------------------------------------------------------------------------------------------
// Malformed input: line numbers and messages

#[test]
fn error_unknown_line_type() {
    assert_fails(
        "p max 3 0\nn 1 s\nn 2 t\nx 1 2\n",
        4,
        &["unknown line type", "'x'"],
    );
}

#[test]
fn error_arc_before_problem() {
    assert_fails(
        "c hello\na 1 2 3\n",
        2,
        &["arc line", "before the problem line"],
    );
}

#[test]
fn error_node_before_problem() {
    assert_fails("\n\nn 1 s\n", 3, &["node line", "before the problem line"]);
}

#[test]
fn error_duplicate_problem() {
    assert_fails(
        "p max 3 0\nc\np max 3 0\n",
        3,
        &["duplicate problem line", "line 1"],
    );
}

#[test]
fn error_problem_not_max() {
    assert_fails("p min 3 0\n", 1, &["problem type 'min'", "not supported"]);
    assert_fails("p\n", 1, &["missing problem type"]);
}

#[test]
fn error_problem_counts() {
    assert_fails("p max 3\n", 1, &["missing arc count"]);
    assert_fails("p max\n", 1, &["missing node count"]);
    assert_fails("p max x3 0\n", 1, &["node count 'x3' is not a number"]);
    assert_fails("p max 3 many\n", 1, &["arc count 'many' is not a number"]);
    assert_fails("p max -3 0\n", 1, &["negative node count"]);
    assert_fails("p max 3 -1\n", 1, &["negative arc count"]);
    assert_fails(
        "p max 3 99999999999999999999999\n",
        1,
        &["arc count", "too large"],
    );
}

#[test]
fn error_zero_or_one_node() {
    assert_fails("p max 0 0\n", 1, &["0 nodes", "at least 2"]);
    assert_fails("c\np max 1 0\n", 2, &["1 nodes", "source and the sink"]);
}

#[test]
fn error_too_many_nodes() {
    assert_fails(
        "p max 99999999999 0\n",
        1,
        &["99999999999 nodes", "more than"],
    );
}

#[test]
fn error_extra_tokens() {
    assert_fails("p max 3 0 7\n", 1, &["extra token '7'", "p max N M"]);
    assert_fails(
        "p max 3 1\nn 1 s\nn 2 t\na 1 3 4 5\n",
        4,
        &["extra token '5'"],
    );
    assert_fails("p max 3 0\nn 1 s extra\n", 2, &["extra token 'extra'"]);
}

#[test]
fn error_too_few_tokens_on_arc() {
    assert_fails("p max 3 1\nn 1 s\nn 2 t\na 1 3\n", 4, &["missing capacity"]);
    assert_fails(
        "p max 3 1\nn 1 s\nn 2 t\na 1\n",
        4,
        &["missing head node id"],
    );
    assert_fails("p max 3 1\nn 1 s\nn 2 t\na\n", 4, &["missing tail node id"]);
}

#[test]
fn error_bad_capacity() {
    let head = "p max 3 1\nn 1 s\nn 2 t\n";
    assert_fails(
        &format!("{head}a 1 3 x\n"),
        4,
        &["capacity 'x' is not a number"],
    );
    assert_fails(&format!("{head}a 1 3 -4\n"), 4, &["negative capacity -4"]);
    assert_fails(&format!("{head}a 1 3 2.5\n"), 4, &["not a number"]);
    assert_fails(
        &format!("{head}a 1 3 2147483648\n"),
        4,
        &["2147483648", "larger than 2147483647"],
    );
    assert_fails(
        &format!("{head}a 1 3 1{}\n", "0".repeat(30)),
        4,
        &["larger than"],
    );
}

#[test]
fn zero_and_max_capacity_accepted() {
    let inst = parse("p max 4 3\nn 1 s\nn 2 t\na 1 3 2147483647\na 3 4 0\na 4 2 0\n").unwrap();
    let g = csr(&inst);
    assert_eq!(g.source_caps(), [i32::MAX, 0]);
    // The zero-capacity arc is kept as a pair.
    assert_eq!(g.num_arcs(), 2);
}

#[test]
fn error_node_id_out_of_range() {
    let head = "p max 3 1\nn 1 s\nn 2 t\n";
    assert_fails(
        &format!("{head}a 0 3 1\n"),
        4,
        &["tail node id 0", "out of range", "1 to 3"],
    );
    assert_fails(
        &format!("{head}a 1 4 1\n"),
        4,
        &["head node id 4", "out of range"],
    );
    assert_fails(&format!("{head}a 1 -3 1\n"), 4, &["out of range"]);
    assert_fails(
        &format!("{head}a one 3 1\n"),
        4,
        &["tail node id 'one' is not a number"],
    );
    assert_fails("p max 3 0\nn 0 s\n", 2, &["node id 0", "out of range"]);
    assert_fails(
        "p max 3 0\nn 1 s\nn 4 t\n",
        3,
        &["node id 4", "out of range"],
    );
}

#[test]
fn error_node_kind() {
    assert_fails(
        "p max 3 0\nn 1 x\n",
        2,
        &["unknown node kind 'x'", "s (source) or t (sink)"],
    );
    assert_fails("p max 3 0\nn 1\n", 2, &["missing node kind"]);
}

#[test]
fn error_duplicate_terminals() {
    assert_fails(
        "p max 4 0\nn 1 s\nn 3 s\n",
        3,
        &["duplicate source", "node 1", "line 2"],
    );
    assert_fails(
        "p max 4 0\nn 1 s\nn 2 t\nc\nn 2 t\n",
        5,
        &["duplicate sink", "line 3"],
    );
    assert_fails("p max 4 0\nn 3 t\nn 3 s\n", 3, &["both source and sink"]);
    assert_fails("p max 4 0\nn 3 s\nn 3 t\n", 3, &["both source and sink"]);
}

#[test]
fn error_missing_terminals_reported_at_end() {
    assert_fails("p max 3 0\nn 2 t\nc end\n", 3, &["no source", "n ID s"]);
    assert_fails("p max 3 0\nn 1 s\n\n\n", 4, &["no sink", "n ID t"]);
    // Arcs may come before the n lines; without them the error is still at the end.
    assert_fails("p max 3 1\na 1 3 4\nn 1 s\nc\n", 4, &["no sink"]);
    assert_fails("c only a comment\n", 1, &["no problem line"]);
}

#[test]
fn error_empty_file() {
    match parse("") {
        Err(Error::Input { file, msg }) => {
            assert_eq!(file, "t.max");
            assert!(msg.contains("empty file"), "{msg}");
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn error_arc_count_mismatch() {
    assert_fails(
        "p max 3 1\nn 1 s\nn 2 t\na 1 3 1\na 3 2 1\nc\n",
        5,
        &["more arc lines than the 1 declared", "line 1"],
    );
    assert_fails(
        "p max 3 3\nn 1 s\nn 2 t\na 1 3 1\na 3 2 1\nc trailing\n",
        6,
        &["declares 3 arcs", "only 2"],
    );
}

#[test]
fn error_terminal_overflow() {
    let head = "p max 4 2\nn 1 s\nn 2 t\n";
    assert_fails(
        &format!("{head}a 1 3 2147483647\na 1 3 1\n"),
        5,
        &["source arcs into node 3", "more than 2147483647"],
    );
    assert_fails(
        &format!("{head}a 4 2 2000000000\na 4 2 2000000000\n"),
        5,
        &["sink arcs out of node 4", "more than 2147483647"],
    );
}

#[test]
fn error_pair_overflow() {
    assert_fails(
        "p max 4 2\nn 1 s\nn 2 t\na 3 4 2000000000\na 4 3 2000000000\n",
        5,
        &["arc 3 -> 4", "line 4", "reverse", "more than 2147483647"],
    );
    // Not adjacent: two separate pairs, no overflow.
    let inst =
        parse("p max 4 3\nn 1 s\nn 2 t\na 3 4 2000000000\na 1 3 1\na 4 3 2000000000\n").unwrap();
    assert_eq!(inst.paired_arcs, 0);
    assert_eq!(csr(&inst).num_arcs(), 4);
}

#[test]
fn error_overflow_in_replayed_arc_names_its_own_line() {
    // Arcs before the n lines are replayed when the sink is declared; errors keep their line.
    assert_fails(
        "p max 4 2\na 1 3 2147483647\na 1 3 5\nn 1 s\nn 2 t\n",
        3,
        &["source arcs into node 3"],
    );
}

#[test]
fn error_line_too_long() {
    let text = format!("p max 3 0\nc {}\n", "x".repeat(3 << 20));
    assert_fails(&text, 2, &["longer than"]);
}

#[test]
fn error_binary_garbage() {
    let (line, msg) = parse_err("\u{0}\u{1}\u{2}junk\n");
    assert_eq!(line, 1);
    assert!(msg.contains("unknown line type"), "{msg}");
}

#[test]
fn sol_files() {
    assert_eq!(
        read_sol("c x\n\ns 186\nc after\n".as_bytes(), "x.sol").unwrap(),
        186
    );
    assert_eq!(read_sol("s 0\nf 1 2 3\n".as_bytes(), "x.sol").unwrap(), 0);
    let cases: &[(&str, u64, &str)] = &[
        ("c nothing\nc here\n", 2, "no solution line"),
        ("s fifty\n", 1, "flow value 'fifty' is not a number"),
        ("c\ns -5\n", 2, "negative flow value"),
        ("s\n", 1, "missing flow value"),
        ("s 1 2\n", 1, "extra token"),
        ("s 1\ns 2\n", 2, "duplicate solution line"),
        ("c\nq 1\n", 2, "unknown line type 'q'"),
        ("s 99999999999999999999\n", 1, "too large"),
    ];
    for &(text, line, key) in cases {
        match read_sol(text.as_bytes(), "x.sol") {
            Err(Error::Parse { file, line: l, msg }) => {
                assert_eq!((file.as_str(), l), ("x.sol", line), "{text:?}: {msg}");
                assert!(msg.contains(key), "{text:?}: {msg:?} lacks {key:?}");
            }
            other => panic!("{text:?}: expected a parse error, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Valid input: numbering, pairing, dropping

#[test]
fn numbering_skips_terminals_and_dimacs_id_inverts_it() {
    // Source 4, sink 2: nodes 1, 3, 5, 6 become 0, 1, 2, 3.
    let inst = parse("p max 6 4\nn 4 s\nn 2 t\na 4 1 7\na 3 2 8\na 5 6 9\na 6 5 1\n").unwrap();
    let g = csr(&inst);
    assert_eq!(g.num_nodes(), 4);
    assert_eq!(g.source_caps(), [7, 0, 0, 0]);
    assert_eq!(g.sink_caps(), [0, 8, 0, 0]);
    let ids: Vec<u64> = (0..4).map(|v| inst.dimacs_id(v)).collect();
    assert_eq!(ids, [1, 3, 5, 6]);
    assert_eq!(inst.paired_arcs, 1);
    let a = g.arcs_of(2).start;
    assert_eq!((g.heads()[a], g.caps()[a]), (3, 9));
    assert_eq!(g.caps()[g.sisters()[a] as usize], 1);
}

#[test]
fn dropped_and_constant_arcs() {
    let inst = parse(
        "p max 4 7\nn 1 s\nn 2 t\n\
         a 3 1 5\na 2 4 5\na 3 3 5\na 1 2 6\na 1 2 4\na 2 1 9\na 3 4 0\n",
    )
    .unwrap();
    // Into s, out of t, self loop, t → s.
    assert_eq!(inst.dropped_arcs, 4);
    let g = csr(&inst);
    assert_eq!(g.constant_flow(), 10);
    assert_eq!(g.num_arcs(), 2, "the zero-capacity arc is kept");
    assert_eq!(g.source_caps(), [0, 0]);
}

#[test]
fn arcs_before_node_lines_are_kept() {
    let late = parse("p max 4 3\na 1 3 5\na 3 4 2\na 4 3 1\nn 1 s\nn 2 t\n").unwrap();
    let early = parse("p max 4 3\nn 1 s\nn 2 t\na 1 3 5\na 3 4 2\na 4 3 1\n").unwrap();
    assert_eq!(canon(csr(&late)), canon(csr(&early)));
    assert_eq!(late.paired_arcs, 1);
}

#[test]
fn whitespace_variants() {
    let inst = parse("c crlf\r\np\tmax  3 1\r\n  n 1 s\r\nn 2 t\r\na 1 3   4\r\n\r\n").unwrap();
    assert_eq!(csr(&inst).source_caps(), [4]);
    // No final newline.
    let inst = parse("p max 3 1\nn 1 s\nn 2 t\na 3 2 4").unwrap();
    assert_eq!(csr(&inst).sink_caps(), [4]);
}

// ---------------------------------------------------------------------------------------------
// The real Waterloo crops

/// What a crop file holds, counted here from its text (independently of the reader).
struct Counted {
    nodes: u64,
    arcs: u64,
    a_lines: u64,
    source_total: i64,
    sink_total: i64,
    inner: u64,
    adjacent_pairs: u64,
    dropped: u64,
}

fn count_text(text: &str) -> Counted {
    let mut c = Counted {
        nodes: 0,
        arcs: 0,
        a_lines: 0,
        source_total: 0,
        sink_total: 0,
        inner: 0,
        adjacent_pairs: 0,
        dropped: 0,
    };
    let mut prev: Option<(u64, u64)> = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first().copied() {
            Some("p") => {
                c.nodes = f[2].parse().unwrap();
                c.arcs = f[3].parse().unwrap();
            }
            Some("a") => {
                c.a_lines += 1;
                let (u, v): (u64, u64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
                let cap: i64 = f[3].parse().unwrap();
                if v == 1 || u == 2 || u == v {
                    c.dropped += 1;
                    prev = None;
                } else if u == 1 {
                    c.source_total += cap;
                    prev = None;
                } else if v == 2 {
                    c.sink_total += cap;
                    prev = None;
                } else {
                    c.inner += 1;
                    if prev == Some((v, u)) {
                        c.adjacent_pairs += 1;
                        prev = None;
                    } else {
                        prev = Some((u, v));
                    }
                }
            }
            _ => {}
        }
    }
    c
}

#[test]
fn waterloo_crops() {
    let Some(data) = common::shared_data() else {
        return;
    };
    for (size, flow) in [(16, 50), (32, 186), (64, 590)] {
        let path = data.join(format!("waterloo/tsukuba_crop_{size}x{size}.max"));
        let text = std::fs::read_to_string(&path).unwrap();
        let want = count_text(&text);
        let mut seen = Vec::new();
        let sols = read_instances(&path, &ReadOptions::default(), |inst| {
            seen.push(inst);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 1);
        let inst = &seen[0];
        let stem = format!("tsukuba_crop_{size}x{size}");
        assert_eq!(inst.stem(), stem);
        assert_eq!(sols, BTreeMap::from([(stem, flow)]));
        assert_eq!(inst.expected_flow, Some(flow));
        assert_eq!((inst.source_id, inst.sink_id), (1, 2));
        assert_eq!(inst.declared_nodes, want.nodes);
        assert_eq!(inst.declared_nodes, (size * size + 2) as u64);
        assert_eq!(inst.declared_arcs, want.arcs);
        assert_eq!(want.a_lines, want.arcs, "the file's own arc count");
        assert_eq!(inst.dropped_arcs, want.dropped);
        assert_eq!(inst.paired_arcs, want.adjacent_pairs);
        // Waterloo lists every n-link with its reverse: all inner arcs pair up.
        assert_eq!(2 * inst.paired_arcs, want.inner);
        // The crops are grids without a hint (see `crops_load_as_inferred_grids`); a hint that
        // matches nothing keeps the CSR form checked here.
        let plain = read_max(format!("c regulargrid 1 1\n{text}").as_bytes(), "p.max").unwrap();
        let g = csr(&plain);
        assert_eq!(g.num_nodes() as u64, want.nodes - 2);
        assert_eq!(g.num_arcs() as u64, 2 * (want.inner - inst.paired_arcs));
        let total = |c: &[i32]| c.iter().map(|&x| x as i64).sum::<i64>();
        assert_eq!(total(g.source_caps()), want.source_total);
        assert_eq!(total(g.sink_caps()), want.sink_total);
        assert_eq!(g.constant_flow(), 0);
        // Source-side cut {all on source side} = total sink capacity.
        assert_eq!(
            g.cut_capacity(&vec![false; g.num_nodes()]),
            want.sink_total as i128
        );
    }
}

#[test]
fn waterloo_crop_with_grid_hint_loads_as_grid() {
    // The crops use segcut's layout (s = 1, t = 2, row-major pixels from 3), so adding the hint
    // makes them a 4-connected grid with the same capacities.
    let Some(data) = common::shared_data() else {
        return;
    };
    let text = std::fs::read_to_string(data.join("waterloo/tsukuba_crop_32x32.max")).unwrap();
    let plain = read_max(format!("c regulargrid 1 1\n{text}").as_bytes(), "crop.max").unwrap();
    let hinted = read_max(
        format!("c regulargrid 32 32\n{text}").as_bytes(),
        "crop.max",
    )
    .unwrap();
    assert_eq!(hinted.grid_hint, Some([32, 32, 1]));
    let g = grid(&hinted);
    assert_eq!(g.dims(), [32, 32, 1]);
    assert_eq!(g.connectivity(), Connectivity::N4);
    assert_eq!(canon(&g.to_csr().unwrap()), canon(csr(&plain)));
    // A wrong hint (size mismatch) is ignored.
    let wrong = read_max(
        format!("c regulargrid 31 33\n{text}").as_bytes(),
        "crop.max",
    )
    .unwrap();
    assert_eq!(wrong.grid_hint, Some([31, 33, 1]));
    csr(&wrong);
}

// ---------------------------------------------------------------------------------------------
// Writer round trips

/// Counts `a` lines and returns the `M` of the `p` line.
fn arc_lines_and_m(text: &[u8]) -> (u64, u64) {
    let text = std::str::from_utf8(text).unwrap();
    let a = text.lines().filter(|l| l.starts_with("a ")).count() as u64;
    let p = text.lines().find(|l| l.starts_with("p ")).unwrap();
    (a, p.split_whitespace().nth(3).unwrap().parse().unwrap())
}

#[test]
fn grid_round_trips() {
    let cases = [
        (7, 5, 1, Connectivity::N4, "7 5"),
        (6, 4, 1, Connectivity::N8, "6 4"),
        (4, 3, 5, Connectivity::N6, "4 3 5"),
        (3, 4, 3, Connectivity::N26, "3 4 3"),
        (5, 4, 1, Connectivity::N6, "5 4 1"),
    ];
    for (seed, &(w, h, d, conn, hint)) in cases.iter().enumerate() {
        let g = random_grid(w, h, d, conn, seed as u64 + 1);
        let text = write_to_vec(&Network::Grid(g.clone()), &["round trip", "two\nlines"]);
        let s = std::str::from_utf8(&text).unwrap();
        assert!(s.starts_with("c round trip\nc two\nc lines\n"), "{s:.60}");
        assert!(s.contains(&format!("c regulargrid {hint}\n")), "{conn}");
        let (a, m) = arc_lines_and_m(&text);
        assert_eq!(a, m, "{conn}: M must count the a lines");
        let back = read_max(&text[..], "g.max").unwrap();
        assert_eq!(back.declared_arcs, m);
        assert_eq!(back.declared_nodes, (w * h * d + 2) as u64);
        assert_eq!(grid(&back), &g, "{conn} grid must come back identical");
        // Adjacent reverse arcs were paired.
        assert!(back.paired_arcs > 0);
    }
}

#[test]
fn csr_round_trip() {
    let mut rng = Rng::new(42);
    let n = 40;
    let mut b = CsrBuilder::new(n).unwrap();
    for _ in 0..150 {
        let u = rng.below(n as u64) as u32;
        let v = rng.below(n as u64) as u32;
        let c = rng.range_i64(0, 100) as i32;
        let r = rng.range_i64(-50, 100).max(0) as i32;
        if u != v {
            b.add_edge(u, v, c, r).unwrap();
        }
    }
    for v in 0..n as u32 {
        let s = rng.range_i64(-40, 60).max(0) as i32;
        let t = rng.range_i64(-40, 60).max(0) as i32;
        b.add_terminals(v, s, t).unwrap();
    }
    // A constant larger than one capacity: written as several s → t arcs.
    b.add_arc(
        segcut::graph::Vertex::Source,
        segcut::graph::Vertex::Sink,
        i32::MAX,
    )
    .unwrap();
    b.add_arc(
        segcut::graph::Vertex::Source,
        segcut::graph::Vertex::Sink,
        5,
    )
    .unwrap();
    let g = b.build().unwrap();
    let text = write_to_vec(&Network::Csr(g.clone()), &[]);
    let (a, m) = arc_lines_and_m(&text);
    assert_eq!(a, m);
    let back = read_max(&text[..], "g.max").unwrap();
    assert_eq!(back.grid_hint, None);
    let h = csr(&back);
    assert_eq!(h.constant_flow(), i32::MAX as i64 + 5);
    assert_eq!(canon(h), canon(&g));
    // Any cut has the same capacity in both.
    let side: Vec<bool> = (0..n).map(|v| v % 3 == 0).collect();
    assert_eq!(h.cut_capacity(&side), g.cut_capacity(&side));
}

#[test]
fn grid_hint_falls_back_to_csr() {
    let g = random_grid(4, 4, 1, Connectivity::N4, 9);
    let text = String::from_utf8(write_to_vec(&Network::Grid(g.clone()), &[])).unwrap();
    let (_, m) = arc_lines_and_m(text.as_bytes());
    let bump = |text: &str, extra: &str| {
        let text = text.replace(&format!("p max 18 {m}"), &format!("p max 18 {}", m + 1));
        format!("{text}{extra}")
    };
    // Node 0 → node 5 is a diagonal: still a grid, now N8.
    let diag = read_max(bump(&text, "a 3 8 7\n").as_bytes(), "d.max").unwrap();
    let dg = grid(&diag);
    assert_eq!(dg.connectivity(), Connectivity::N8);
    assert_eq!(dg.caps(4)[0], 7); // direction 4 is (1, 1, 0)
                                  // Node 0 → node 2 skips a pixel: no grid holds it.
    let far = read_max(bump(&text, "a 3 5 7\n").as_bytes(), "f.max").unwrap();
    assert_eq!(far.grid_hint, Some([4, 4, 1]));
    let fg = csr(&far);
    let mut want = canon(&g.to_csr().unwrap());
    want.0.push((0, 2, 7));
    want.0.sort_unstable();
    assert_eq!(canon(fg), want);
    // Node 3 → node 4 wraps around a row end: not neighbours either.
    csr(&read_max(bump(&text, "a 6 7 1\n").as_bytes(), "w.max").unwrap());
    // A direct s → t arc has no grid form.
    csr(&read_max(bump(&text, "a 1 2 1\n").as_bytes(), "c.max").unwrap());
    // Terminals elsewhere than 1 and 2.
    let swapped = text.replace("n 1 s\nn 2 t", "n 2 s\nn 1 t");
    csr(&read_max(swapped.as_bytes(), "s.max").unwrap());
}

#[test]
fn writer_refuses_invalid_grid() {
    let mut g = GridGraph::new_2d(2, 2, Connectivity::N4).unwrap();
    g.caps_mut(0)[1] = 5; // node 1 has no right neighbour
    let err = write_max(Vec::new(), &Network::Grid(g), &[]).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

// ---------------------------------------------------------------------------------------------
// Compressed files and archives

fn collect(path: &Path) -> segcut::Result<(Vec<MaxInstance>, BTreeMap<String, i64>)> {
    let mut all = Vec::new();
    let sols = read_instances(path, &ReadOptions::default(), |i| {
        all.push(i);
        Ok(())
    })?;
    Ok((all, sols))
}

#[test]
fn gz_and_bz2_files() {
    let dir = tempfile::tempdir().unwrap();
    let g = random_grid(9, 7, 1, Connectivity::N8, 3);
    let net = Network::Grid(g.clone());
    for name in ["g.max.gz", "g.max.bz2", "g.max"] {
        let path = dir.path().join(name);
        write_max_file(&path, &net, &["compressed"]).unwrap();
        let (all, sols) = collect(&path).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(grid(&all[0]), &g, "{name}");
        assert!(sols.is_empty());
        assert_eq!(all[0].stem(), "g");
    }
    // Magic bytes win over a misleading extension.
    let gz = std::fs::read(dir.path().join("g.max.gz")).unwrap();
    assert_eq!(&gz[..2], [0x1f, 0x8b]);
    let bz = std::fs::read(dir.path().join("g.max.bz2")).unwrap();
    assert_eq!(&bz[..3], b"BZh");
    for (bytes, name) in [(&gz, "gz_named.max"), (&bz, "bz_named.max")] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(grid(&collect(&path).unwrap().0[0]), &g, "{name}");
    }
}

#[test]
fn progress_counts_file_bytes() {
    use std::sync::atomic::{AtomicU64, Ordering};
    /// The total it was told and the bytes it was advanced by.
    #[derive(Default)]
    struct Count(AtomicU64, AtomicU64);
    impl segcut::progress::Progress for Count {
        fn start(&self, total: Option<u64>) {
            self.0.store(total.unwrap_or(0), Ordering::Relaxed);
        }
        fn advance(&self, n: u64) {
            self.1.fetch_add(n, Ordering::Relaxed);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.max.bz2");
    let net = Network::Grid(random_grid(20, 20, 1, Connectivity::N4, 5));
    write_max_file(&path, &net, &[]).unwrap();
    let count = std::sync::Arc::new(Count::default());
    let opts = ReadOptions {
        progress: Some(count.clone()),
    };
    read_instances(&path, &opts, |_| Ok(())).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(count.0.load(Ordering::Relaxed), size);
    assert_eq!(count.1.load(Ordering::Relaxed), size);
}

#[test]
fn corrupt_and_truncated_compressed_files() {
    let dir = tempfile::tempdir().unwrap();
    // Big enough that truncation lands well inside the arc lines.
    let net = Network::Grid(random_grid(60, 60, 1, Connectivity::N4, 4));
    for (name, kind) in [("t.max.gz", "gzip"), ("t.max.bz2", "bzip2")] {
        let path = dir.path().join(name);
        write_max_file(&path, &net, &[]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
        match collect(&path) {
            Err(Error::Parse { file, line, msg }) => {
                assert_eq!(file, path.display().to_string());
                // bzip2 gives nothing until a whole block decodes, and this file is one block.
                assert!(line > 5 || kind == "bzip2", "{name}: line {line}");
                assert!(
                    msg.contains(&format!("corrupt or truncated {kind}")),
                    "{msg}"
                );
            }
            other => panic!("{name}: expected a parse error, got {other:?}"),
        }
        // Garbage after a valid header.
        let mut bad = bytes[..20].to_vec();
        bad.extend(std::iter::repeat_n(0xA5u8, 2000));
        std::fs::write(&path, &bad).unwrap();
        let err = collect(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("corrupt or truncated {kind}")),
            "{name}: {err}"
        );
    }
}

fn tar_bytes(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in members {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, &data[..]).unwrap();
    }
    builder.into_inner().unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn tar_archives() {
    let dir = tempfile::tempdir().unwrap();
    let ga = random_grid(5, 5, 1, Connectivity::N4, 11);
    let gb = random_grid(3, 3, 2, Connectivity::N6, 12);
    let gc = random_grid(4, 2, 1, Connectivity::N8, 13);
    let ta = write_to_vec(&Network::Grid(ga.clone()), &[]);
    let tb = write_to_vec(&Network::Grid(gb.clone()), &[]);
    let tc = write_to_vec(&Network::Grid(gc.clone()), &[]);
    let tar = tar_bytes(&[
        ("seq/seq0.sol", b"c before\ns 17\n".to_vec()),
        ("seq/seq0.max", ta),
        ("seq/README", b"not an instance".to_vec()),
        ("seq/seq1.max", tb),
        ("seq/seq1.sol", b"s 23\n".to_vec()),
        ("seq/seq2.max.gz", gzip(&tc)),
    ]);
    for (name, bytes) in [
        ("seq.tar", tar.clone()),
        ("seq.tgz", gzip(&tar)),
        ("seq.tar.gz", gzip(&tar)),
        ("seq.tbz2", bzip2(&tar)),
        ("seq.tar.bz2", bzip2(&tar)),
        ("seq_no_extension", bzip2(&tar)),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (all, sols) = collect(&path).unwrap();
        let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
        let p = path.display().to_string();
        assert_eq!(
            names,
            [
                format!("{p}:seq/seq0.max"),
                format!("{p}:seq/seq1.max"),
                format!("{p}:seq/seq2.max.gz")
            ],
            "{name}"
        );
        assert_eq!(grid(&all[0]), &ga);
        assert_eq!(grid(&all[1]), &gb);
        assert_eq!(grid(&all[2]), &gc);
        // seq0.sol came first; seq1.sol only after its .max: found in the returned map.
        assert_eq!(all[0].expected_flow, Some(17));
        assert_eq!(all[1].expected_flow, None);
        assert_eq!(all[2].expected_flow, None);
        assert_eq!(sols.get(all[1].key()), Some(&23));
        assert_eq!(sols.len(), 2);
    }
}

#[test]
fn archive_errors() {
    let dir = tempfile::tempdir().unwrap();
    // No .max member.
    let path = dir.path().join("empty.tbz2");
    std::fs::write(&path, bzip2(&tar_bytes(&[("a.sol", b"s 1\n".to_vec())]))).unwrap();
    match collect(&path) {
        Err(Error::Input { msg, .. }) => assert!(msg.contains("no .max"), "{msg}"),
        other => panic!("expected an input error, got {other:?}"),
    }
    // A bad member: the error names archive and member, with the line.
    let path = dir.path().join("bad.tar");
    let bad = b"p max 3 1\nn 1 s\nn 2 t\na 1 3 oops\n".to_vec();
    std::fs::write(&path, tar_bytes(&[("x/bad.max", bad)])).unwrap();
    match collect(&path) {
        Err(Error::Parse { file, line, msg }) => {
            assert_eq!(file, format!("{}:x/bad.max", path.display()));
            assert_eq!(line, 4);
            assert!(msg.contains("capacity 'oops'"), "{msg}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    // A bad .sol member.
    let path = dir.path().join("badsol.tar");
    std::fs::write(&path, tar_bytes(&[("q.sol", b"c\ns many\n".to_vec())])).unwrap();
    match collect(&path) {
        Err(Error::Parse { file, line, msg }) => {
            assert!(file.ends_with(":q.sol"), "{file}");
            assert_eq!(line, 2);
            assert!(msg.contains("not a number"), "{msg}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    // A truncated archive: the member ends early.
    let big = write_to_vec(
        &Network::Grid(random_grid(40, 40, 1, Connectivity::N4, 2)),
        &[],
    );
    let tar = tar_bytes(&[("big.max", big)]);
    let path = dir.path().join("cut.tar");
    std::fs::write(&path, &tar[..tar.len() / 2]).unwrap();
    match collect(&path) {
        Err(Error::Parse { file, line, msg }) => {
            assert!(file.ends_with(":big.max"), "{file}");
            assert!(line > 5);
            assert!(msg.contains("truncated") && msg.contains("early"), "{msg}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    // A truncated .tbz2.
    let path = dir.path().join("cut.tbz2");
    let tbz = bzip2(&tar);
    std::fs::write(&path, &tbz[..tbz.len() / 2]).unwrap();
    let err = collect(&path).unwrap_err().to_string();
    assert!(err.contains("corrupt or truncated"), "{err}");
    // A .sol next to a plain .max that is broken.
    let path = dir.path().join("lone.max");
    std::fs::write(&path, "p max 3 0\nn 1 s\nn 2 t\n").unwrap();
    std::fs::write(dir.path().join("lone.sol"), "c none\n").unwrap();
    let err = collect(&path).unwrap_err().to_string();
    assert!(err.contains("lone.sol:1: no solution line"), "{err}");
    // A missing file.
    assert!(matches!(
        collect(&dir.path().join("absent.max")),
        Err(Error::Io { .. })
    ));
}

#[test]
fn callback_errors_stop_reading() {
    let dir = tempfile::tempdir().unwrap();
    let t = write_to_vec(
        &Network::Grid(random_grid(2, 2, 1, Connectivity::N4, 1)),
        &[],
    );
    let path = dir.path().join("two.tar");
    std::fs::write(&path, tar_bytes(&[("a.max", t.clone()), ("b.max", t)])).unwrap();
    let mut calls = 0;
    let r = read_instances(&path, &ReadOptions::default(), |_| {
        calls += 1;
        Err(Error::Unsupported("stop".into()))
    });
    assert!(matches!(r, Err(Error::Unsupported(_))));
    assert_eq!(calls, 1);
}

#[test]
fn stems() {
    assert_eq!(stem_of("a/b/BVZ-sawtooth3.max"), "BVZ-sawtooth3");
    assert_eq!(stem_of("x.tbz2:dir/KZ2-venus1.sol"), "KZ2-venus1");
    assert_eq!(stem_of("c.max.bz2"), "c");
    assert_eq!(stem_of("C:\\data\\d.MAX.GZ"), "d");
}

// ---------------------------------------------------------------------------------------------
// No panics, whatever the bytes

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = read_max(&bytes[..], "r.max");
        let _ = read_sol(&bytes[..], "r.sol");
    }

    #[test]
    fn random_tokens_never_panic(
        lines in proptest::collection::vec(
            proptest::collection::vec(
                prop_oneof![
                    Just("p".to_string()), Just("max".to_string()), Just("a".to_string()),
                    Just("n".to_string()), Just("s".to_string()), Just("t".to_string()),
                    Just("c".to_string()), Just("regulargrid".to_string()),
                    Just("-1".to_string()), Just("2147483647".to_string()),
                    (0u64..8).prop_map(|v| v.to_string()),
                ],
                0..6,
            ),
            0..30,
        )
    ) {
        let text: String = lines.iter().map(|l| l.join(" ") + "\n").collect();
        let _ = read_max(text.as_bytes(), "r.max");
    }

    #[test]
    fn mutated_files_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)
    ) {
        let mut bytes = SMALL.as_bytes().to_vec();
        for (at, byte, op) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => {}
            }
        }
        if let Ok(inst) = read_max(&bytes[..], "m.max") {
            // Whatever was accepted is a well-formed graph.
            prop_assert!(inst.declared_nodes >= 2);
            prop_assert_eq!(inst.network.num_nodes() as u64, inst.declared_nodes - 2);
        }
    }
}

#[test]
fn random_bytes_in_compressed_and_archive_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let valid = write_to_vec(
        &Network::Grid(random_grid(6, 6, 1, Connectivity::N4, 8)),
        &[],
    );
    let seeds: Vec<(&str, Vec<u8>)> = vec![
        ("f.max.gz", gzip(&valid)),
        ("f.max.bz2", bzip2(&valid)),
        ("f.tar", tar_bytes(&[("f.max", valid.clone())])),
        ("f.tbz2", bzip2(&tar_bytes(&[("f.max", valid.clone())]))),
    ];
    let mut rng = Rng::new(7);
    for (name, base) in &seeds {
        let path = dir.path().join(name);
        for _ in 0..40 {
            let mut bytes = base.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(bytes.len() as u64) as usize;
                bytes[i] = rng.next_u64() as u8;
            }
            if rng.below(3) == 0 {
                bytes.truncate(rng.below(bytes.len() as u64) as usize);
            }
            std::fs::write(&path, &bytes).unwrap();
            let _ = collect(&path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Throughput (run by hand: cargo test --release --test dimacs -- --ignored --nocapture)

#[test]
#[ignore]
fn read_throughput() {
    let dir = std::env::var("SEGCUT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    let side: usize = std::env::var("SEGCUT_BENCH_SIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    // `.max.gz` or `.max.bz2` to measure decompression too (then read through read_instances).
    let ext = std::env::var("SEGCUT_BENCH_EXT").unwrap_or_else(|_| ".max".into());
    let g = random_grid(side, side, 1, Connectivity::N4, 1);
    let csr = g.to_csr().unwrap();
    for (kind, net) in [("grid", Network::Grid(g)), ("csr", Network::Csr(csr))] {
        let path = dir.join(format!("segcut_bench_{side}_{kind}{ext}"));
        let t = std::time::Instant::now();
        write_max_file(&path, &net, &["throughput"]).unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        let mb = bytes as f64 / 1e6;
        let wt = t.elapsed().as_secs_f64();
        println!("{kind}: wrote {mb:.0} MB in {wt:.2} s: {:.0} MB/s", mb / wt);
        // Best of three, the file in the page cache.
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let inst = if ext == ".max" {
                let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
                read_max(file, "bench").unwrap()
            } else {
                collect(&path).unwrap().0.pop().unwrap()
            };
            best = best.min(t.elapsed().as_secs_f64());
            assert_eq!(inst.declared_nodes as usize, side * side + 2);
            assert_eq!(inst.network.kind().starts_with("grid"), kind == "grid");
        }
        let lines = if ext == ".max" {
            arc_count(&path).to_string()
        } else {
            "?".into()
        };
        println!(
            "{kind}: read {mb:.0} MB in {best:.2} s: {:.0} MB/s of file ({side}x{side} N4, {lines} arc lines)",
            mb / best
        );
        std::fs::remove_file(&path).unwrap();
    }
}

/// The `M` of a file's `p` line.
fn arc_count(path: &Path) -> u64 {
    let mut text = vec![0; 4096];
    let mut f = std::fs::File::open(path).unwrap();
    let n = std::io::Read::read(&mut f, &mut text).unwrap();
    arc_lines_and_m(&text[..n]).1
}

// ---------------------------------------------------------------------------------------------
// Grids recognised without a hint

/// The text of a file in the BVZ layout (s = 1, t = 2, pixel `i` is id `i + 3`) with `pixels`
/// nodes in rows of `w`: every pixel linked to `+1` (not across a row end) and `+w` in both
/// directions, random terminal capacities, then the `extra` arc lines.
fn bvz_text(w: usize, pixels: usize, extra: &[(usize, usize, i32)], seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut arcs = Vec::new();
    for v in 0..pixels {
        arcs.push((1, v + 3, rng.range_i64(0, 40) as i32));
        arcs.push((v + 3, 2, rng.range_i64(0, 40) as i32));
        for u in [v + 1, v + w] {
            if u < pixels && (u == v + w || u % w != 0) {
                arcs.push((v + 3, u + 3, rng.range_i64(1, 30) as i32));
                arcs.push((u + 3, v + 3, rng.range_i64(1, 30) as i32));
            }
        }
    }
    arcs.extend(extra.iter().map(|&(u, v, c)| (u + 3, v + 3, c)));
    let mut text = format!("p max {} {}\nn 1 s\nn 2 t\n", pixels + 2, arcs.len());
    for (u, v, c) in arcs {
        text += &format!("a {u} {v} {c}\n");
    }
    text
}

/// The reason of a file that must stay general.
#[track_caller]
fn general_reason(text: &str) -> String {
    let inst = parse(text).unwrap();
    csr(&inst);
    match inst.layout {
        Layout::General(why) => why,
        l => panic!("expected a general layout, got {l}"),
    }
}

/// Flow and source-side file ids of `inst` solved by BK.
fn bk_cut(inst: &MaxInstance) -> (i64, Vec<u64>) {
    let cut = Bk::default().solve(&inst.network).unwrap();
    let ids = cut.source_side().map(|v| inst.dimacs_id(v)).collect();
    (cut.flow, ids)
}

#[test]
fn crops_load_as_inferred_grids() {
    let Some(data) = common::shared_data() else {
        return;
    };
    for (size, flow) in [(16usize, 50i64), (32, 186), (64, 590)] {
        let path = data.join(format!("waterloo/tsukuba_crop_{size}x{size}.max"));
        let text = std::fs::read_to_string(&path).unwrap();
        let inst = read_max(text.as_bytes(), "crop.max").unwrap();
        let g = grid(&inst);
        assert_eq!(g.dims(), [size, size, 1]);
        assert_eq!(g.connectivity(), Connectivity::N4);
        assert_eq!(
            inst.layout.to_string(),
            format!("grid {size}x{size} N4 inferred from arc offsets")
        );
        let plain = read_max(format!("c regulargrid 1 1\n{text}").as_bytes(), "p.max").unwrap();
        assert_eq!(canon(&g.to_csr().unwrap()), canon(csr(&plain)));
        let (grid_flow, grid_side) = bk_cut(&inst);
        let (csr_flow, csr_side) = bk_cut(&plain);
        assert_eq!(grid_flow, flow);
        assert_eq!(csr_flow, flow);
        assert_eq!(
            grid_side, csr_side,
            "canonical cuts differ on {size}x{size}"
        );
    }
}

#[test]
fn hinted_grid_says_so() {
    let g = random_grid(5, 3, 1, Connectivity::N4, 4);
    let inst = read_max(&write_to_vec(&Network::Grid(g), &[])[..], "h.max").unwrap();
    assert_eq!(
        inst.layout.to_string(),
        "grid 5x3 N4 from the regulargrid hint"
    );
    let bad = format!("c regulargrid 4 4\n{}", bvz_text(5, 15, &[], 1));
    assert!(general_reason(&bad).contains("regulargrid 4 4"));
}

#[test]
fn bvz_layout_without_hint_is_a_grid() {
    for (w, h) in [(5, 3), (3, 5), (2, 2), (7, 4)] {
        let text = bvz_text(w, w * h, &[], (w * h) as u64);
        let inst = parse(&text).unwrap();
        let g = grid(&inst);
        assert_eq!(g.dims(), [w, h, 1]);
        assert_eq!(g.connectivity(), Connectivity::N4);
        let plain = parse(&format!("c regulargrid 1 1\n{text}")).unwrap();
        assert_eq!(canon(&g.to_csr().unwrap()), canon(csr(&plain)));
        assert_eq!(bk_cut(&inst), bk_cut(&plain));
    }
}

#[test]
fn eight_connected_and_relocated_terminals_are_inferred() {
    for (w, h, seed) in [(4, 4, 1), (5, 3, 2), (3, 6, 3)] {
        let g = random_grid(w, h, 1, Connectivity::N8, seed);
        let text = String::from_utf8(write_to_vec(&Network::Grid(g.clone()), &[])).unwrap();
        let bare: String = text
            .lines()
            .filter(|l| !l.starts_with("c regulargrid"))
            .map(|l| format!("{l}\n"))
            .collect();
        let inst = parse(&bare).unwrap();
        assert_eq!(grid(&inst), &g, "{w}x{h}");
        assert_eq!(
            inst.layout.to_string(),
            format!("grid {w}x{h} N8 inferred from arc offsets")
        );
    }
    // Source and sink as the last two ids: pixels are ids 1..=6.
    let text = "p max 8 6\nn 7 s\nn 8 t\na 7 1 5\na 6 8 5\na 1 2 3\na 2 1 3\na 1 4 2\na 4 1 2\n";
    let inst = parse(text).unwrap();
    assert_eq!(grid(&inst).dims(), [3, 2, 1]);
}

#[test]
fn near_grids_stay_general() {
    let (w, h) = (4, 4);
    let base = bvz_text(w, w * h, &[], 7);
    grid(&parse(&base).unwrap());
    // An arc wrapping a row end: node 3 (x = 3, y = 0) to node 4 (x = 0, y = 1).
    let why = general_reason(&bvz_text(w, w * h, &[(3, 4, 9)], 7));
    assert!(
        why.contains("width 4") && why.contains("1 are not"),
        "{why}"
    );
    // Offsets 1 and W plus one stray arc (0 -> 6: dx = 2).
    let why = general_reason(&bvz_text(w, w * h, &[(0, 6, 9)], 7));
    assert!(
        why.contains("width 4") && why.contains("1 are not"),
        "{why}"
    );
    // A stray arc with a small offset changes the width guess to 2, and then every arc happens
    // to join neighbours of a 2x2x4 N26 volume; but most of that grid's arc slots would be
    // empty, so it stays general.
    let why = general_reason(&bvz_text(w, w * h, &[(5, 7, 9)], 7));
    assert!(
        why.contains("2x2x4 N26") && why.contains("too sparse"),
        "{why}"
    );
    // A missing node: 15 pixels are not whole rows of 4.
    let why = general_reason(&bvz_text(w, w * h - 1, &[], 7));
    assert!(why.contains("whole number of rows"), "{why}");
    // Every arc ±1: a path, the width is unknown.
    let why = general_reason(&bvz_text(w * h, w * h, &[], 7));
    assert!(why.contains("consecutive"), "{why}");
    // A tiny graph that both widths 3 (N4) and 4 (N8) hold.
    let why = general_reason("p max 14 1\nn 1 s\nn 2 t\na 4 7 1\n");
    assert!(why.contains("ambiguous"), "{why}");
    // No arcs between nodes at all.
    general_reason("p max 6 2\nn 1 s\nn 2 t\na 1 3 1\na 4 2 1\n");
    // The source in the middle of the ids shifts the pixels after it.
    let moved = base.replacen("n 1 s", "n 9 s", 1);
    let why = general_reason(&moved);
    assert!(why.contains("split"), "{why}");
    // A direct source -> sink arc.
    let st = base.replacen("n 2 t\n", "n 2 t\na 1 2 4\n", 1);
    let st = st.replacen(
        &format!(
            "p max 18 {}",
            st.lines().filter(|l| l.starts_with("a ")).count() - 1
        ),
        &format!(
            "p max 18 {}",
            st.lines().filter(|l| l.starts_with("a ")).count()
        ),
        1,
    );
    assert!(general_reason(&st).contains("source -> sink"));
}

// ---------------------------------------------------------------------------------------------
// Volumes recognised without a hint, and partial grids

/// `g` written by `write_max`, with the `c regulargrid` hint line removed.
fn without_hint(g: &GridGraph) -> String {
    let text = String::from_utf8(write_to_vec(&Network::Grid(g.clone()), &[])).unwrap();
    let bare: String = text
        .lines()
        .filter(|l| !l.starts_with("c regulargrid"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(bare.len(), text.len(), "the writer put a hint in");
    bare
}

/// `text` with a hint that cannot match, so that it loads as a general graph.
fn forced_general(text: &str) -> MaxInstance {
    let inst = parse(&format!("c regulargrid 1 1\n{text}")).unwrap();
    csr(&inst);
    inst
}

/// Checks that the hint-less file of `g` loads back as exactly `g`, and that it solves to the
/// same flow and canonical cut as its general form.
#[track_caller]
fn assert_volume_inferred(g: &GridGraph) {
    let [w, h, d] = g.dims();
    let text = without_hint(g);
    let inst = parse(&text).unwrap();
    assert_eq!(grid(&inst), g, "{w}x{h}x{d} {}", g.connectivity());
    assert_eq!(
        inst.layout,
        Layout::Grid {
            dims: [w, h, d],
            connectivity: g.connectivity(),
            from_hint: false
        }
    );
    assert_eq!(
        inst.layout.to_string(),
        format!(
            "grid {w}x{h}x{d} {} inferred from arc offsets",
            g.connectivity()
        )
    );
    let plain = forced_general(&text);
    assert_eq!(canon(&g.to_csr().unwrap()), canon(csr(&plain)));
    assert_eq!(bk_cut(&inst), bk_cut(&plain), "{w}x{h}x{d}");
}

#[test]
fn volumes_without_hint_are_inferred() {
    let cases = [
        (4, 3, 5, Connectivity::N6),
        (3, 3, 3, Connectivity::N6),
        (6, 2, 2, Connectivity::N6),
        (2, 5, 3, Connectivity::N6),
        (5, 4, 3, Connectivity::N26),
        (3, 3, 3, Connectivity::N26),
        (2, 3, 4, Connectivity::N26),
        (7, 2, 2, Connectivity::N26),
        (2, 2, 2, Connectivity::N26),
    ];
    for (k, (w, h, d, conn)) in cases.into_iter().enumerate() {
        assert_volume_inferred(&random_grid(w, h, d, conn, 40 + k as u64));
    }
}

#[test]
fn volume_with_missing_diagonals_is_still_inferred() {
    // N26 without the arcs that give the smallest plane offset (dx = dy = -1, dz = +1, and its
    // reverse): the plane size is read off another diagonal.
    let mut g = random_grid(5, 4, 3, Connectivity::N26, 11);
    for (dir, off) in Connectivity::N26.offsets().iter().enumerate() {
        if off[2] != 0 && off[0] != 0 && off[1] != 0 {
            g.caps_mut(dir).fill(0);
        }
    }
    assert_volume_inferred(&g);
}

#[test]
fn volume_without_vertical_arcs_loads_as_a_taller_image() {
    // No arc crosses planes: the same graph is a 2D grid of H·D rows, and solves the same.
    let mut g = random_grid(4, 3, 2, Connectivity::N6, 5);
    for (dir, off) in Connectivity::N6.offsets().iter().enumerate() {
        if off[2] != 0 {
            g.caps_mut(dir).fill(0);
        }
    }
    let text = without_hint(&g);
    let inst = parse(&text).unwrap();
    assert_eq!(grid(&inst).dims(), [4, 6, 1]);
    assert_eq!(bk_cut(&inst), bk_cut(&forced_general(&text)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_small_volume_round_trips_without_hint(
        w in 2usize..7, h in 2usize..6, d in 2usize..5, dense in any::<bool>(), seed in 0u64..1000,
    ) {
        let conn = if dense { Connectivity::N26 } else { Connectivity::N6 };
        assert_volume_inferred(&random_grid(w, h, d, conn, seed));
    }
}

/// The file of `g` without its hint, with `extra` arc lines (0-based pixel indices) added.
fn with_extra_arcs(g: &GridGraph, extra: &[(usize, usize, i32)]) -> String {
    let text = without_hint(g);
    let m = text.lines().filter(|l| l.starts_with("a ")).count();
    let n = g.num_nodes() + 2;
    let mut out = text.replacen(
        &format!("p max {n} {m}\n"),
        &format!("p max {n} {}\n", m + extra.len()),
        1,
    );
    assert_ne!(out, text, "problem line not found");
    for &(u, v, c) in extra {
        out += &format!("a {} {} {c}\n", u + 3, v + 3);
    }
    out
}

#[test]
fn volume_with_a_few_extra_arcs_stays_general_and_says_how_close() {
    let g = random_grid(6, 5, 4, Connectivity::N6, 3);
    let total = g
        .to_csr()
        .unwrap()
        .caps()
        .iter()
        .filter(|&&c| c > 0)
        .count();
    // Two strays: dx = 2 within a row (the smallest offset above 1, which spoils the width
    // read off the smallest offset), and a jump of two planes.
    let text = with_extra_arcs(&g, &[(0, 2, 7), (1, 1 + 2 * 30, 9)]);
    let why = general_reason(&text);
    assert!(why.contains("6x5x4 volume"), "{why}");
    assert!(why.contains("2 are not"), "{why}");
    assert!(why.contains(&format!("{total} of {}", total + 2)), "{why}");
    // Still solved right, as a general graph.
    let inst = parse(&text).unwrap();
    let (flow, _) = bk_cut(&inst);
    let (plain, _) = bk_cut(&forced_general(&text));
    assert_eq!(flow, plain);
}

#[test]
fn arc_wrapping_a_plane_end_stays_general() {
    // (x, H-1, z) -> (x, 0, z+1) has offset W, like a row step, but is no neighbour.
    let (w, h, d) = (4, 3, 3);
    let g = random_grid(w, h, d, Connectivity::N6, 8);
    let from = w * (h - 1); // x = 0, y = H - 1, z = 0
    let why = general_reason(&with_extra_arcs(&g, &[(from, from + w, 5)]));
    assert!(why.contains("1 are not"), "{why}");
    // A node short of whole planes.
    let g = random_grid(w, h, d, Connectivity::N6, 9);
    let text = without_hint(&g);
    let n = w * h * d + 2;
    // Drop the last pixel's id by declaring one node fewer, after removing its arcs.
    let last = (n) as u64;
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            !(t.first() == Some(&"a") && (t[1] == last.to_string() || t[2] == last.to_string()))
        })
        .collect();
    let m = kept.iter().filter(|l| l.starts_with("a ")).count();
    let text: String = kept
        .iter()
        .map(|l| {
            if l.starts_with("p max") {
                format!("p max {} {m}\n", n - 1)
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let inst = parse(&text).unwrap();
    assert!(matches!(inst.layout, Layout::General(_)), "{}", inst.layout);
}

/// Two `w × h` grids, one after the other in the ids (KZ2's layout), with `links` arcs from
/// pixel (x, y) of the first to (x + w/2 mod w, y) of the second.
fn two_grids(w: usize, h: usize, links: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let plane = w * h;
    let mut arcs: Vec<(usize, usize, i32)> = Vec::new();
    for base in [0, plane] {
        for y in 0..h {
            for x in 0..w {
                let v = base + x + w * y;
                if x + 1 < w {
                    arcs.push((v, v + 1, rng.range_i64(1, 9) as i32));
                    arcs.push((v + 1, v, rng.range_i64(1, 9) as i32));
                }
                if y + 1 < h {
                    arcs.push((v, v + w, rng.range_i64(1, 9) as i32));
                    arcs.push((v + w, v, rng.range_i64(1, 9) as i32));
                }
            }
        }
    }
    for k in 0..links {
        let (x, y) = ((k * 3) % w, (k * 5) % h);
        arcs.push((x + w * y, plane + (x + w / 2) % w + w * y, 4));
    }
    let mut text = format!("p max {} {}\nn 1 s\nn 2 t\n", 2 * plane + 2, arcs.len() + 2);
    text += "a 1 3 50\n";
    text += &format!("a {} 2 50\n", 2 * plane + 2);
    for (u, v, c) in arcs {
        text += &format!("a {} {} {c}\n", u + 3, v + 3);
    }
    text
}

#[test]
fn two_grids_with_sparse_links_stay_general_with_the_count() {
    let (w, h, links) = (8, 6, 5);
    let text = two_grids(w, h, links, 2);
    let why = general_reason(&text);
    assert!(why.contains(&format!("{links} are not")), "{why}");
    assert!(why.contains("% of arcs"), "{why}");
    assert!(why.contains("width 8"), "{why}");
}

#[test]
fn two_grids_linked_pixel_to_pixel_are_a_two_plane_volume() {
    // Links from (x, y) of the first grid to (x, y) of the second are plane steps: the file is
    // a W × H × 2 grid with some vertical capacities zero, and solves as one.
    let (w, h) = (5, 4);
    let plane = w * h;
    let mut g = GridGraph::new(w, h, 2, Connectivity::N6).unwrap();
    let mut rng = Rng::new(4);
    for v in 0..2 * plane {
        g.set_terminals(v, rng.range_i64(0, 20) as i32, rng.range_i64(0, 20) as i32);
        for (dir, off) in Connectivity::N6.offsets().iter().enumerate() {
            let vertical = off[2] != 0;
            // In-plane arcs everywhere, vertical ones on every third pixel only.
            if g.neighbor(v, dir).is_some() && (!vertical || (v % plane) % 3 == 0) {
                g.caps_mut(dir)[v] = rng.range_i64(1, 30) as i32;
            }
        }
    }
    assert_volume_inferred(&g);
}

// ---------------------------------------------------------------------------------------------
// Memory of blank and comment lines (issue 21, C1)

/// A 40 KB `.max.gz` of a four-node problem, 40 Mi blank lines and its two arcs is read and
/// solved under a 1 GB address-space limit: blank and comment lines cost the reader no memory
/// per line (it once needed 1.6 GB for them and aborted).
#[test]
fn forty_million_blank_lines_read_under_a_one_gigabyte_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = b"p max 4 2\nn 1 s\nn 2 t\n".to_vec();
    for k in 0..40 {
        text.resize(text.len() + (1 << 20), b'\n');
        // Comments too, which the reader also only counts.
        if k % 8 == 0 {
            text.extend_from_slice(&b"c a comment\n".repeat(1 << 16));
        }
    }
    text.extend_from_slice(b"a 1 3 5\na 3 2 4\n");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&text).unwrap();
    // bzip2 too: a block of blank lines expands to tens of MB, and blocks decode in parallel.
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    bz.write_all(&text).unwrap();
    for (name, bytes) in [
        ("blank.max.gz", gz.finish().unwrap()),
        ("blank.max.bz2", bz.finish().unwrap()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        assert!(bytes.len() < 200_000, "{name}: {} bytes", bytes.len());
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1000000 && exec \"$0\" maxflow --solver bk --json \"$1\"")
            .arg(common::segcut_bin())
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["flow"].as_i64(), Some(4), "{name}: {v}");
    }
    // An error after them still names its line.
    let mut text = b"p max 4 2\nn 1 s\nn 2 t\n".to_vec();
    text.extend(std::iter::repeat_n(b'\n', 3 << 20));
    text.extend_from_slice(b"a 1 3 5\na 3 9 4\n");
    let e = read_max(&text[..], "t.max").unwrap_err().to_string();
    assert!(e.contains(&format!("t.max:{}:", 3 + (3 << 20) + 2)), "{e}");
}
