//! The `load` suite: how fast each file format segcut reads becomes a graph ready to solve.
//!
//! Each instance is generated, written as `.max`, `.max.gz`, `.max.bz2`, a `.tbz2` archive
//! holding the `.max` (as the Waterloo benchmark ships its files) and `.sgb`, all by segcut
//! itself (gzip at the default level 6, bzip2 at level 9 with its blocks compressed on every
//! core). Then every file is loaded `runs` times from the page cache with
//! [`read_instances`] (decompression, parsing and grid recognition all counted) and the median
//! is reported as MB/s of the file and of the DIMACS text it holds, beside single-threaded
//! baselines: a plain read of the bytes, gzip and bzip2 decompression alone (what `gzip -dc` and
//! `bzip2 -dc` do). Every format must give the graph the `.max` file gives.
//!
//! ```no_run
//! use segcut::bench::{load, BenchInstance};
//! let inst: BenchInstance = "2d:256x256:n4:c10:s1".parse().unwrap();
//! let dir = tempfile::tempdir().unwrap();
//! let records = load::run(&[inst], dir.path(), 1, |_| {}).unwrap();
//! assert!(records.iter().all(|r| r.same_graph));
//! ```

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::{BenchInstance, Source};
use crate::graph::Network;
use crate::io::dimacs::{
    read_instances, with_gzip_choice, write_max_file, write_sgb, GzPath, MaxInstance, ReadOptions,
};
use crate::{Error, Result};

/// One row of the load table.
#[derive(Clone, Debug, Serialize)]
pub struct LoadRecord {
    /// The instance's spec.
    pub instance: String,
    /// What was timed: a format (`.max`, `.max.gz`, ...) or a baseline (`read .max`, ...).
    pub what: String,
    /// Size of the file read, bytes.
    pub file_bytes: u64,
    /// Size of the DIMACS text the file stands for, bytes.
    pub text_bytes: u64,
    /// Median seconds over the runs.
    pub seconds: f64,
    /// `file_bytes / seconds`, MB/s.
    pub file_mb_s: f64,
    /// `text_bytes / seconds`, MB/s.
    pub text_mb_s: f64,
    /// Whether the graph loaded is the one the `.max` file gives (always true for baselines).
    pub same_graph: bool,
    /// Bytes the loaded graph takes in memory (0 for baselines).
    pub graph_bytes: u64,
    /// The most the process's resident size rose above where it stood before a load, over
    /// the runs: the graph and everything alive with it at the load's peak (`None` where the
    /// system cannot tell: it needs Linux's `/proc/self/clear_refs`).
    pub peak_bytes: Option<u64>,
    /// Where the time of the median run went: milliseconds per stage of the text reader and
    /// the CSR build, summed per stage, in the order the stages first ran (empty for
    /// baselines and `.sgb`). The reading thread runs beside the parser, so the stages overlap
    /// and do not add up to `seconds`.
    pub phases: Vec<(String, f64)>,
}

/// Bytes a network's arrays take.
pub fn network_bytes(net: &Network) -> u64 {
    let n = crate::graph::FlowNetwork::num_nodes(net) as u64;
    match net {
        // One capacity per direction and node, and the two terminal capacities.
        Network::Grid(g) => 4 * n * (g.connectivity().degree() as u64 + 2),
        // Offsets, then head, sister and capacity per arc, and the terminal capacities.
        Network::Csr(c) => 4 * (n + 1) + 12 * c.num_arcs() as u64 + 8 * n,
    }
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Runs `f` and returns what it gives, the seconds it took, and how far the resident size rose
/// above where it stood (the peak mark reset first, which Linux allows a process for itself).
/// Only `f` is timed: the memory bookkeeping around it is not part of a load.
fn with_peak<T>(f: impl FnOnce() -> T) -> (T, f64, Option<u64>) {
    // What earlier loads freed would otherwise be reused unseen, hiding this load's peak.
    crate::io::release_freed_memory();
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = status_bytes("VmRSS");
    let t = Instant::now();
    let out = f();
    let seconds = t.elapsed().as_secs_f64();
    let peak = status_bytes("VmHWM");
    let rise = match (reset, before, peak) {
        (true, Some(b), Some(p)) => Some(p.saturating_sub(b)),
        _ => None,
    };
    (out, seconds, rise)
}

/// What [`run`] reports as it goes.
#[derive(Debug)]
pub enum LoadEvent<'a> {
    /// Writing a file.
    Writing(&'a Path),
    /// Timing a row.
    Timing(&'a str, &'a str),
    /// A row is done.
    Done(&'a LoadRecord),
    /// A row could not be timed here (instance, why): a baseline program that is missing.
    Missing(&'a str, &'a str),
}

/// Whether two networks are the same graph, of the same kind.
fn same(a: &Network, b: &Network) -> bool {
    match (a, b) {
        (Network::Grid(x), Network::Grid(y)) => x == y,
        (Network::Csr(x), Network::Csr(y)) => x == y,
        _ => false,
    }
}

/// Loads `path` into its one instance.
fn load(path: &Path) -> Result<MaxInstance> {
    let mut one = None;
    read_instances(path, &ReadOptions::default(), |i| {
        one = Some(i);
        Ok(())
    })?;
    one.ok_or_else(|| Error::Input {
        file: path.display().to_string(),
        msg: "no instance in the file".into(),
    })
}

/// Reads `r` to its end in 1 MiB pieces.
fn drain(mut r: impl Read) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    while r.read(&mut buf)? > 0 {}
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The files of one instance, written into `dir` by segcut itself, and for a grid the same
/// `.max` without its `c regulargrid` hint (written from the grid's CSR: the reader must
/// infer the grid from the arc offsets, as for Waterloo's files).
fn write_files(
    net: &Network,
    dir: &Path,
    on: &mut impl FnMut(LoadEvent),
) -> Result<([PathBuf; 5], Option<PathBuf>)> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e: std::io::Error| Error::io(&p, e)
    };
    let max = dir.join("g.max");
    on(LoadEvent::Writing(&max));
    write_max_file(&max, net, &["segcut bench --suite load"])?;
    let gz = dir.join("g.max.gz");
    on(LoadEvent::Writing(&gz));
    {
        let out = File::create(&gz).map_err(io(&gz))?;
        let mut e = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(out),
            flate2::Compression::default(),
        );
        std::io::copy(&mut File::open(&max).map_err(io(&max))?, &mut e).map_err(io(&gz))?;
        e.finish().and_then(|mut w| w.flush()).map_err(io(&gz))?;
    }
    let bz = dir.join("g.max.bz2");
    on(LoadEvent::Writing(&bz));
    write_max_file(&bz, net, &["segcut bench --suite load"])?;
    let tbz = dir.join("g.tbz2");
    on(LoadEvent::Writing(&tbz));
    {
        let out = File::create(&tbz).map_err(io(&tbz))?;
        let enc = crate::io::dimacs::ParBzEncoder::new(std::io::BufWriter::new(out));
        let mut tar = tar::Builder::new(enc);
        tar.append_path_with_name(&max, "g/g.max")
            .map_err(io(&tbz))?;
        let enc = tar.into_inner().map_err(io(&tbz))?;
        enc.finish().and_then(|mut w| w.flush()).map_err(io(&tbz))?;
    }
    let sgb = dir.join("g.sgb");
    on(LoadEvent::Writing(&sgb));
    let inst = load(&max)?;
    let mut f = crate::io::AtomicFile::create(&sgb)?;
    write_sgb(&mut f, &inst).map_err(io(&sgb))?;
    f.commit()?;
    drop(inst);
    let nohint = match net {
        Network::Grid(g) => {
            let path = dir.join("g-nohint.max");
            on(LoadEvent::Writing(&path));
            let csr = Network::Csr(g.to_csr()?);
            write_max_file(
                &path,
                &csr,
                &["segcut bench --suite load: a grid without its hint"],
            )?;
            Some(path)
        }
        Network::Csr(_) => None,
    };
    Ok(([max, gz, bz, tbz, sgb], nohint))
}

/// Whether the `bzip2` program can be run here.
fn bzip2_installed() -> bool {
    use std::process::{Command, Stdio};
    Command::new("bzip2")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Runs the `bzip2` program on `path` into nothing; `Ok(false)` where it is not installed.
fn bzip2_program(path: &Path) -> Result<bool> {
    use std::process::{Command, Stdio};
    let status = Command::new("bzip2")
        .arg("-dc")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Ok(true),
        Ok(s) => Err(Error::Input {
            file: path.display().to_string(),
            msg: format!("bzip2 -dc failed ({s})"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Writes each instance's files into `dir` (replacing earlier ones) and times loading them,
/// `runs` times each (the median is reported). Photo instances are refused: this suite
/// generates its graphs.
pub fn run(
    instances: &[BenchInstance],
    dir: &Path,
    runs: usize,
    mut on: impl FnMut(LoadEvent),
) -> Result<Vec<LoadRecord>> {
    let runs = runs.max(1);
    let mut records = Vec::new();
    for inst in instances {
        let Source::Gen(spec) = &inst.source else {
            return Err(Error::Unsupported(format!(
                "the load suite generates its graphs; {inst} is a photo"
            )));
        };
        let name = inst.to_string();
        let net = crate::gen::generate(spec)?;
        let ([max, gz, bz, tbz, sgb], nohint) = write_files(&net, dir, &mut on)?;
        drop(net);
        let size = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| Error::io(p, e))
        };
        let text_bytes = size(&max)?;
        let reference = load(&max)?.network;
        // A load row gives the graph loaded (`None` for a baseline), compared with the
        // reference and dropped after the clock stops (a load ends with the graph ready, and
        // comparing 60 MB took a quarter of a small `.sgb` row's time); the single-threaded
        // decoding baselines run once (bzip2 -dc of the large graph alone takes a minute), the
        // others `runs` times.
        let mut row = |what: &str,
                       path: &Path,
                       runs: usize,
                       f: &mut dyn FnMut() -> Result<Option<Network>>| {
            on(LoadEvent::Timing(&name, what));
            let mut times = Vec::new();
            let mut all_phases = Vec::new();
            let mut same_graph = true;
            let (mut graph_bytes, mut peak_bytes) = (0, Some(0u64));
            for _ in 0..runs {
                let ((got, seconds, peak), phases) = crate::phases::record(|| with_peak(&mut *f));
                times.push(seconds);
                all_phases.push(phases);
                if let Some(net) = got? {
                    same_graph &= same(&net, &reference);
                    graph_bytes = network_bytes(&net);
                }
                peak_bytes = peak_bytes.zip(peak).map(|(a, b)| a.max(b));
            }
            let seconds = median(times.clone());
            let at = times.iter().position(|&t| t == seconds).unwrap_or(0);
            let phases = std::mem::take(&mut all_phases[at]);
            let file_bytes = size(path)?;
            let rec = LoadRecord {
                instance: name.clone(),
                what: what.to_string(),
                file_bytes,
                text_bytes,
                seconds,
                file_mb_s: file_bytes as f64 / 1e6 / seconds,
                text_mb_s: text_bytes as f64 / 1e6 / seconds,
                same_graph,
                graph_bytes,
                peak_bytes: peak_bytes.filter(|_| graph_bytes > 0),
                phases,
            };
            on(LoadEvent::Done(&rec));
            records.push(rec);
            Ok::<(), Error>(())
        };
        let open = |p: &Path| File::open(p).map_err(|e| Error::io(p, e));
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e: std::io::Error| Error::io(&p, e)
        };
        row("read .max (baseline)", &max, runs, &mut || {
            drain(open(&max)?).map_err(io(&max))?;
            Ok(None)
        })?;
        let mut formats = vec![
            (".max", &max),
            (".max.gz", &gz),
            (".max.bz2", &bz),
            (".tbz2", &tbz),
            (".sgb", &sgb),
        ];
        if let Some(p) = &nohint {
            formats.insert(1, (".max without the grid hint", p));
        }
        for (what, path) in formats {
            row(what, path, runs, &mut || Ok(Some(load(path)?.network)))?;
        }
        // Both ways of reading `.gz` on this machine, whichever `.max.gz` took above.
        for (what, how) in [
            (
                ".max.gz streamed (flate2, inflate beside the parse)",
                GzPath::Stream,
            ),
            (
                ".max.gz inflated in parallel (pargz), beside the parse",
                GzPath::Parallel,
            ),
            (
                ".max.gz inflated whole (libdeflate), then parsed",
                GzPath::Whole,
            ),
        ] {
            row(what, &gz, runs, &mut || {
                let inst = with_gzip_choice(how, || load(&gz))?;
                Ok(Some(inst.network))
            })?;
        }
        row(
            "gzip inflate alone, pargz, every core (baseline)",
            &gz,
            1,
            &mut || {
                crate::io::dimacs::par_inflate_file(&gz, usize::MAX).ok_or_else(|| {
                    Error::Input {
                        file: gz.display().to_string(),
                        msg: "the parallel inflate refused the file".into(),
                    }
                })?;
                Ok(None)
            },
        )?;
        row("gzip -dc alone, 1 thread (baseline)", &gz, 1, &mut || {
            drain(flate2::read::MultiGzDecoder::new(open(&gz)?)).map_err(io(&gz))?;
            Ok(None)
        })?;
        row(
            "gzip inflate alone, libdeflate, whole file (baseline)",
            &gz,
            1,
            &mut || {
                let data = std::fs::read(&gz).map_err(io(&gz))?;
                crate::io::dimacs::inflate_members(&data, usize::MAX).ok_or_else(|| {
                    Error::Input {
                        file: gz.display().to_string(),
                        msg: "libdeflate refused the file".into(),
                    }
                })?;
                Ok(None)
            },
        )?;
        row("bzip2 -dc alone, 1 thread (baseline)", &bz, 1, &mut || {
            let r = std::io::BufReader::new(open(&bz)?);
            drain(bzip2::bufread::MultiBzDecoder::new(r)).map_err(io(&bz))?;
            Ok(None)
        })?;
        // The program itself, where it is installed (a missing one is said, not an error).
        let bzip2_here = bzip2_installed();
        if bzip2_here {
            row(
                "bzip2 -dc program, 1 thread (baseline)",
                &bz,
                1,
                &mut || {
                    bzip2_program(&bz)?;
                    Ok(None)
                },
            )?;
        }
        row("read .sgb (baseline)", &sgb, runs, &mut || {
            drain(open(&sgb)?).map_err(io(&sgb))?;
            Ok(None)
        })?;
        if !bzip2_here {
            on(LoadEvent::Missing(
                &name,
                "bzip2 -dc program (baseline): bzip2 is not installed here",
            ));
        }
    }
    Ok(records)
}
