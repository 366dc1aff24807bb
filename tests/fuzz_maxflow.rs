//! A stable fuzz harness for the `.max` / `.sol` reader and the archive reader (plain, gzip,
//! bzip2, tar): valid files are mutated by a seeded mutator — at the byte level (bit flips,
//! truncations, inserted, deleted and repeated bytes) and at the token level (numbers set to
//! extremes, lines duplicated, dropped or swapped) — and every result must be a value or an
//! error, never a panic, a hang or an abort. Every accepted graph is solved by BK and by the
//! reference Dinic: both cuts must verify (cut capacity = flow) and the flows must agree, so a
//! reader that accepts a file and builds the wrong graph for it shows up as a wrong answer only
//! where the solvers disagree, and a reader that builds an invalid graph shows up always.
//!
//! The time budget is `SEGCUT_FUZZ_SECONDS` (default 20; CI runs the default), at least
//! `SEGCUT_FUZZ_INPUTS` inputs (default 200); `SEGCUT_FUZZ_SEED` picks the stream. A local
//! campaign (see docs/safety.md for the counts it gave):
//!
//! ```sh
//! (ulimit -v 4000000; SEGCUT_FUZZ_SECONDS=1 SEGCUT_FUZZ_INPUTS=100000 \
//!   cargo test --release --test fuzz_maxflow -- --nocapture)
//! ```
//!
//! Any failing input is written to `target/fuzz-failures/` for replay.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use segcut::gen::{generate, InstanceSpec};
use segcut::graph::{FlowNetwork, Network};
use segcut::io::dimacs::{read_instances, write_max, ReadOptions};
use segcut::maxflow::{bk::Bk, reference::Dinic, verify, Solver};
use segcut::rng::Rng;

/// Graphs with more nodes than this are read but not solved (a mutated count can make a valid
/// graph of millions of isolated nodes: correct, but slow to solve twice per input).
const SOLVE_MAX_NODES: usize = 200_000;

fn max_text(spec: &str, hint: bool) -> Vec<u8> {
    let net = generate(&spec.parse::<InstanceSpec>().unwrap()).unwrap();
    let mut out = Vec::new();
    write_max(&mut out, &net, &["fuzz corpus"]).unwrap();
    if !hint {
        // Without the regulargrid hint: the grid must be inferred from the arc offsets.
        let text = String::from_utf8(out).unwrap();
        out = text
            .lines()
            .filter(|l| !l.starts_with("c regulargrid"))
            .flat_map(|l| [l, "\n"])
            .collect::<String>()
            .into_bytes();
    }
    out
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

fn tar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in members {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, path, *data).unwrap();
    }
    b.into_inner().unwrap()
}

/// The valid files the mutations start from: (file name, bytes). Text files are also mutated
/// at the token level.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let grid = max_text("2d:8x6:n4:c10:s1", true);
    let grid8 = max_text("2d:6x5:n8:c10:s2", false);
    let vol = max_text("3d:4x3x3:n6:c10:s3", true);
    let rlg = max_text("rlg:6x5:s4", false);
    let rmf = max_text("genrmf:a3:b4:s5", false);
    let sparse = max_text("sparse:40:d4:s6", false);
    // A hand-written file: terminals declared late, comments and blank lines, a source → sink
    // arc, parallel arcs, arcs into the source and out of the sink, a self loop.
    let hand = b"c hand\n\np max 6 9\na 3 4 5\nn 6 s\nn 1 t\na 6 3 7\na 4 1 9\na 6 1 2\n\
a 3 4 1\na 4 3 2\na 4 6 3\na 1 5 4\na 5 5 1\n"
        .to_vec();
    let sol = b"c value\ns 11\n".to_vec();
    let mut out = vec![
        ("grid.max".to_string(), grid.clone()),
        ("grid8.max".into(), grid8.clone()),
        ("vol.max".into(), vol),
        ("rlg.max".into(), rlg.clone()),
        ("rmf.max".into(), rmf),
        ("sparse.max".into(), sparse),
        ("hand.max".into(), hand.clone()),
        ("hand.max.gz".into(), gzip(&hand)),
        ("grid.max.bz2".into(), bzip2(&grid)),
    ];
    let archive = tar(&[
        ("a/hand.sol", &sol),
        ("a/hand.max", &hand),
        ("b/grid8.max", &grid8),
        ("b/rlg.max.gz", &gzip(&rlg)),
    ]);
    out.push(("set.tar".into(), archive.clone()));
    out.push(("set.tar.gz".into(), gzip(&archive)));
    out.push(("set.tbz2".into(), bzip2(&archive)));
    out
}

/// A byte-level mutation.
fn mutate_bytes(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    let n = d.len().max(1);
    let len = d.len();
    let at = |rng: &mut Rng| (rng.below(n as u64) as usize).min(len);
    match rng.below(5) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = at(rng);
                if i < d.len() {
                    d[i] ^= 1 << rng.below(8);
                }
            }
        }
        1 => d.truncate(at(rng)),
        2 => {
            let i = at(rng);
            let extra: Vec<u8> = (0..1 + rng.below(16))
                .map(|_| b" \n0123456789-+acnpst\x1b\0\xff"[rng.below(22) as usize])
                .collect();
            d.splice(i..i, extra);
        }
        3 => {
            let i = at(rng);
            let j = (i + 1 + rng.below(32) as usize).min(d.len());
            d.drain(i..j);
        }
        _ => {
            let i = at(rng);
            let j = (i + rng.below(64) as usize).min(d.len());
            let b = rng.below(256) as u8;
            d[i..j].fill(b);
        }
    }
    d
}

/// A token-level mutation of a text file.
fn mutate_tokens(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(data);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return data.to_vec();
    }
    let i = rng.below(lines.len() as u64) as usize;
    match rng.below(5) {
        0 => {
            // A number set to an extreme or a neighbour of a boundary.
            let extremes = [
                "0",
                "1",
                "2",
                "3",
                "-1",
                "4294967295",
                "4294967296",
                "2147483647",
                "2147483648",
                "9223372036854775807",
                "18446744073709551616",
                "1000000000",
                "007",
                "+5",
            ];
            let mut toks: Vec<String> = lines[i].split_whitespace().map(str::to_string).collect();
            if toks.len() > 1 {
                let k = 1 + rng.below(toks.len() as u64 - 1) as usize;
                toks[k] = extremes[rng.below(extremes.len() as u64) as usize].to_string();
                lines[i] = toks.join(" ");
            }
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            lines.remove(i);
        }
        3 => {
            let j = rng.below(lines.len() as u64) as usize;
            lines.swap(i, j);
        }
        _ => {
            // A plausible arc between random ids.
            let n = 2 + rng.below(60);
            lines.insert(
                i,
                format!(
                    "a {} {} {}",
                    1 + rng.below(n),
                    1 + rng.below(n),
                    rng.below(100)
                ),
            );
        }
    }
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    out
}

/// What happened to one input: `Ok(what)` or `Err(why it is a failure)`.
fn exercise(path: &Path) -> Result<&'static str, String> {
    let run = || -> Result<&'static str, String> {
        let mut solved = 0;
        let mut wrong = None;
        let read = read_instances(path, &ReadOptions::default(), |inst| {
            let net: &Network = &inst.network;
            if net.num_nodes() > SOLVE_MAX_NODES {
                return Ok(());
            }
            let bk = Bk::default().solve(net)?;
            let dinic = Dinic.solve(net)?;
            let check = |name: &str, cut| match verify(net, cut) {
                Ok(_) => None,
                Err(e) => Some(format!("{}: {name} cut does not verify: {e}", inst.name)),
            };
            wrong = wrong
                .take()
                .or_else(|| check("bk", &bk))
                .or_else(|| check("dinic", &dinic));
            if bk.flow != dinic.flow && wrong.is_none() {
                wrong = Some(format!(
                    "{}: bk flow {} != dinic flow {}",
                    inst.name, bk.flow, dinic.flow
                ));
            }
            solved += 1;
            Ok(())
        });
        if let Some(w) = wrong {
            return Err(w);
        }
        match read {
            Ok(_) if solved > 0 => Ok("solved"),
            Ok(_) => Ok("accepted, too large to solve twice"),
            Err(e) => {
                let msg = e.to_string();
                if msg.contains('\x1b') {
                    return Err(format!("raw escape in the message: {msg:?}"));
                }
                Ok(if solved > 0 {
                    "partly solved"
                } else {
                    "rejected"
                })
            }
        }
    };
    std::panic::catch_unwind(run).unwrap_or_else(|e| {
        Err(e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into()))
    })
}

fn env_num(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(default)
}

/// Saves a failing input for replay and returns where.
fn keep(name: &str, data: &[u8]) -> PathBuf {
    let dir = common::repo_root().join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::write(&p, data);
    p
}

/// How long one input may take before it counts as a hang: 10 s, plus 1 s per 100 MB that a
/// text's `p max` line declares (on a machine with a lot of memory, a mutated count of 10^8
/// nodes passes the memory budget and is read, correctly but not quickly).
fn time_limit(text: Option<&[u8]>) -> Duration {
    let declared = text
        .and_then(|t| {
            let t = String::from_utf8_lossy(t);
            let line = t.lines().find(|l| l.starts_with("p "))?.to_owned();
            let mut f = line
                .split_whitespace()
                .skip(2)
                .map(|x| x.parse::<u64>().ok());
            Some(segcut::io::dimacs::max_memory_needed(
                f.next()??,
                f.next()??,
            ))
        })
        .unwrap_or(0);
    Duration::from_secs(10) + Duration::from_secs(declared / 100_000_000)
}

#[test]
fn mutated_max_files_and_archives_never_panic_or_give_wrong_answers() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus();
    let seed = env_num("SEGCUT_FUZZ_SEED", 0x3A4_u64 as f64) as u64;
    let budget = Duration::from_secs_f64(env_num("SEGCUT_FUZZ_SECONDS", 20.0));
    let min_inputs = env_num("SEGCUT_FUZZ_INPUTS", 200.0) as usize;
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    let (mut tried, mut counts) = (0usize, BTreeMap::new());
    let mut failures = Vec::new();
    let quiet = std::panic::take_hook();
    // Panics are caught and reported below; the default hook would print each one.
    std::panic::set_hook(Box::new(|_| {}));
    while start.elapsed() < budget || tried < min_inputs {
        let (name, data) = &files[rng.below(files.len() as u64) as usize];
        let text = name.ends_with(".max");
        let mut bytes = data.clone();
        for _ in 0..1 + rng.below(3) {
            bytes = if text && rng.below(2) == 0 {
                mutate_tokens(&mut rng, &bytes)
            } else {
                mutate_bytes(&mut rng, &bytes)
            };
        }
        let target = dir.path().join(format!("m-{name}"));
        std::fs::write(&target, &bytes).unwrap();
        let t = Instant::now();
        match exercise(&target) {
            Ok(what) => *counts.entry(what).or_insert(0usize) += 1,
            Err(msg) => failures.push(format!("{}: {msg}", keep(name, &bytes).display())),
        }
        if t.elapsed() > time_limit(text.then_some(&bytes[..])) {
            failures.push(format!(
                "{}: took {:?}",
                keep(name, &bytes).display(),
                t.elapsed()
            ));
        }
        tried += 1;
    }
    std::panic::set_hook(quiet);
    let _ = writeln!(
        std::io::stderr(),
        "fuzz_maxflow: {tried} inputs in {:.0?} (seed {seed:#x}): {counts:?}, {} failures",
        start.elapsed(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    // The harness must get past the readers' first checks as well as be stopped by them.
    assert!(counts.get("solved").copied().unwrap_or(0) > 0, "{counts:?}");
    assert!(
        counts.get("rejected").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
}
