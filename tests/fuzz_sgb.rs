//! A stable fuzz harness for the binary graph reader (`.sgb`): valid files of grids and general
//! graphs are mutated by a seeded mutator, and every result must be a value or an error, never
//! a panic, a hang or an abort. Most mutations are re-sealed (the checksum made right again) so
//! that they reach the checks behind it: header fields set to extremes (counts, flags, grid
//! sizes, terminal ids), array entries changed (offsets, heads, sisters, capacities), bytes
//! flipped, dropped or inserted. Every accepted graph is solved by BK and by the reference
//! Dinic: both cuts must verify and the flows agree. A file that was not changed must give the
//! flow of the graph it was written from.
//!
//! `SEGCUT_FUZZ_INPUTS` (default 2000) inputs at least, for `SEGCUT_FUZZ_SECONDS` (default 5)
//! at least; `SEGCUT_FUZZ_SEED` picks the stream. The CI campaign (.ci/run) runs 10 000 under
//! a 4 GB address-space limit, where an abort fails the run:
//!
//! ```sh
//! (ulimit -v 4000000; SEGCUT_FUZZ_INPUTS=10000 cargo test --release --test fuzz_sgb -- --nocapture)
//! ```
//!
//! Any failing input is written to `target/fuzz-failures/` for replay. The libFuzzer target
//! `fuzz/fuzz_targets/sgb.rs` runs the same reader on raw bytes.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use segcut::gen::{generate, InstanceSpec};
use segcut::graph::{FlowNetwork, Network};
use segcut::io::dimacs::{read_instances, read_max, read_sgb, write_max, write_sgb, ReadOptions};
use segcut::maxflow::{bk::Bk, reference::Dinic, verify, Solver};
use segcut::rng::Rng;

/// Where the header's fields start: magic 8, version 4, flags 4, then W, H, D and nine counts of
/// 8 bytes each; the arrays follow.
const FLAGS: usize = 12;
const FIELDS: usize = 16;
const HEADER: usize = 16 + 24 + 72;

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

/// Makes the trailing checksum right for the bytes before it.
fn reseal(b: &mut [u8]) {
    if b.len() >= 4 {
        let end = b.len() - 4;
        let crc = crc32c(&b[..end]);
        b[end..].copy_from_slice(&crc.to_le_bytes());
    }
}

/// The corpus: (name, `.sgb` bytes, maximum flow).
fn corpus() -> Vec<(String, Vec<u8>, i64)> {
    let mut out = Vec::new();
    let hand =
        "p max 6 7\nn 4 s\nn 2 t\na 4 1 5\na 1 3 4\na 3 2 6\na 4 2 3\na 2 5 1\na 5 6 2\na 1 1 9\n";
    let mut texts = vec![("hand".to_string(), hand.as_bytes().to_vec())];
    for (spec, hint) in [
        ("2d:7x5:n4:c10:s1", true),
        ("2d:6x6:n8:c100:s2", true),
        ("2d:6x5:n8:c10:s3", false),
        ("3d:4x3x3:n6:c10:s4", true),
        ("3d:3x3x3:n26:c10:s5", true),
        ("rlg:6x5:s6", false),
        ("genrmf:a3:b4:s7", false),
        ("sparse:60:d4:s8", false),
    ] {
        let net = generate(&spec.parse::<InstanceSpec>().unwrap()).unwrap();
        let mut text = Vec::new();
        write_max(&mut text, &net, &[]).unwrap();
        if !hint {
            let t = String::from_utf8(text).unwrap();
            text = t
                .lines()
                .filter(|l| !l.starts_with("c regulargrid"))
                .flat_map(|l| [l, "\n"])
                .collect::<String>()
                .into_bytes();
        }
        texts.push((spec.to_string(), text));
    }
    for (name, text) in texts {
        let inst = read_max(&text[..], &name).unwrap();
        let flow = Bk::default().solve(&inst.network).unwrap().flow;
        let mut bin = Vec::new();
        write_sgb(&mut bin, &inst).unwrap();
        out.push((name, bin, flow));
    }
    out
}

/// A value that tends to break size arithmetic.
fn extreme(rng: &mut Rng, near: u64) -> u64 {
    let picks = [
        0,
        1,
        2,
        3,
        near.wrapping_sub(1),
        near.wrapping_add(1),
        near.wrapping_mul(2),
        near / 2,
        u64::from(u32::MAX),
        u64::from(u32::MAX) + 1,
        u64::from(u32::MAX - 16),
        i64::MAX as u64,
        u64::MAX,
        1 << 31,
        1 << 32,
        1 << 62,
        60000,
        3_600_000_000,
        rng.below(1 << 20),
    ];
    picks[rng.below(picks.len() as u64) as usize]
}

/// One mutation of `d`, in place.
fn mutate(rng: &mut Rng, d: &mut Vec<u8>) {
    let len = d.len();
    if len < HEADER + 4 {
        // Already cut short: only cut or grow it further.
        let i = rng.below(len as u64 + 1) as usize;
        if rng.below(2) == 0 {
            d.truncate(i);
        } else {
            d.insert(i, rng.below(256) as u8);
        }
        return;
    }
    match rng.below(8) {
        // A header field (grid size, counts, terminal ids, ...) set to an extreme, re-sealed.
        0 | 1 => {
            let k = rng.below(12) as usize;
            let at = FIELDS + 8 * k;
            let old = u64::from_le_bytes(d[at..at + 8].try_into().unwrap());
            let v = extreme(rng, old);
            d[at..at + 8].copy_from_slice(&v.to_le_bytes());
            reseal(d);
        }
        // The flags, re-sealed.
        2 => {
            let f = rng.below(16) as u32;
            d[FLAGS..FLAGS + 4].copy_from_slice(&f.to_le_bytes());
            reseal(d);
        }
        // An array entry (offset, head, sister, capacity or terminal capacity), re-sealed.
        3 | 4 => {
            if len > HEADER + 8 {
                let words = (len - HEADER - 4) / 4;
                let at = HEADER + 4 * rng.below(words as u64) as usize;
                let old = u32::from_le_bytes(d[at..at + 4].try_into().unwrap());
                let v = match rng.below(4) {
                    0 => old.wrapping_add(1),
                    1 => old.wrapping_sub(1),
                    2 => extreme(rng, u64::from(old)) as u32,
                    _ => rng.below(64) as u32,
                };
                d[at..at + 4].copy_from_slice(&v.to_le_bytes());
                reseal(d);
            }
        }
        // Bytes flipped; re-sealed half the time.
        5 => {
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(len as u64) as usize;
                d[i] ^= 1 << rng.below(8);
            }
            if rng.below(2) == 0 {
                reseal(d);
            }
        }
        // Truncated, or grown, then (sometimes) re-sealed.
        6 => {
            let cut = rng.below(len as u64 + 1) as usize;
            d.truncate(cut);
            if rng.below(2) == 0 {
                reseal(d);
            }
        }
        _ => {
            let i = rng.below(len as u64 + 1) as usize;
            let extra: Vec<u8> = (0..1 + rng.below(8))
                .map(|_| rng.below(256) as u8)
                .collect();
            d.splice(i..i, extra);
            if rng.below(2) == 0 {
                reseal(d);
            }
        }
    }
}

/// Reads `bytes` (from memory, or as a file through `read_instances`) and solves what is
/// accepted: `Ok(what happened)` or `Err(why it is a failure)`.
fn exercise(
    bytes: &[u8],
    file: Option<&std::path::Path>,
    expect: Option<i64>,
) -> Result<&'static str, String> {
    let run = || -> Result<&'static str, String> {
        let mut insts = Vec::new();
        let read = match file {
            Some(p) => read_instances(p, &ReadOptions::default(), |i| {
                insts.push(i);
                Ok(())
            })
            .map(|_| ()),
            None => read_sgb(bytes, "fuzz.sgb").map(|i| insts.push(i)),
        };
        if let Err(e) = read {
            let msg = e.to_string();
            if !msg.contains("fuzz") {
                return Err(format!("the error does not name the file: {msg}"));
            }
            if expect.is_some() {
                return Err(format!("an unchanged file was refused: {msg}"));
            }
            return Ok("rejected");
        }
        for inst in &insts {
            let net: &Network = &inst.network;
            let bk = Bk::default().solve(net).map_err(|e| e.to_string())?;
            let dinic = Dinic.solve(net).map_err(|e| e.to_string())?;
            for (name, cut) in [("bk", &bk), ("dinic", &dinic)] {
                verify(net, cut).map_err(|e| format!("{name} cut does not verify: {e}"))?;
            }
            if bk.flow != dinic.flow {
                return Err(format!("bk flow {} != dinic flow {}", bk.flow, dinic.flow));
            }
            if let Some(f) = expect {
                if bk.flow != f {
                    return Err(format!("flow {} where the graph written had {f}", bk.flow));
                }
            }
            if net.num_nodes() > 1 << 20 {
                return Err(format!("{} nodes from a small file", net.num_nodes()));
            }
        }
        Ok("accepted and solved")
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

fn keep(name: &str, data: &[u8]) -> PathBuf {
    let dir = common::repo_root().join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!(
        "{}-{}.sgb",
        std::process::id(),
        name.replace([':', '/'], "_")
    ));
    let _ = std::fs::write(&p, data);
    p
}

#[test]
fn mutated_sgb_files_never_panic_or_give_wrong_flows() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus();
    let seed = env_num("SEGCUT_FUZZ_SEED", 0x56B_u64 as f64) as u64;
    let budget = Duration::from_secs_f64(env_num("SEGCUT_FUZZ_SECONDS", 5.0));
    let min_inputs = env_num("SEGCUT_FUZZ_INPUTS", 2000.0) as usize;
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    let (mut tried, mut counts) = (0usize, BTreeMap::new());
    let mut failures = Vec::new();
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    while start.elapsed() < budget || tried < min_inputs {
        let (name, data, flow) = &files[rng.below(files.len() as u64) as usize];
        let mut bytes = data.clone();
        // One input in 16 is left whole: it must come back with its flow.
        let whole = rng.below(16) == 0;
        if !whole {
            for _ in 0..1 + rng.below(3) {
                mutate(&mut rng, &mut bytes);
            }
        }
        let expect = (bytes == *data).then_some(*flow);
        // A third through the file reader (format detection, gzip), the rest from memory.
        let file = match rng.below(6) {
            0 => Some(("fuzz.sgb", bytes.clone())),
            1 => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(&bytes).unwrap();
                Some(("fuzz.sgb.gz", e.finish().unwrap()))
            }
            _ => None,
        };
        let path = file.as_ref().map(|(n, b)| {
            let p = dir.path().join(n);
            std::fs::write(&p, b).unwrap();
            p
        });
        let t = Instant::now();
        match exercise(&bytes, path.as_deref(), expect) {
            Ok(what) => *counts.entry(what).or_insert(0usize) += 1,
            Err(msg) => failures.push(format!("{}: {msg}", keep(name, &bytes).display())),
        }
        if t.elapsed() > Duration::from_secs(10) {
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
        "fuzz_sgb: {tried} inputs in {:.0?} (seed {seed:#x}): {counts:?}, {} failures",
        start.elapsed(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(tried >= min_inputs);
    // Both sides of the reader's checks were reached.
    assert!(
        counts.get("rejected").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
    assert!(
        counts.get("accepted and solved").copied().unwrap_or(0) > tried / 50,
        "{counts:?}"
    );
}
