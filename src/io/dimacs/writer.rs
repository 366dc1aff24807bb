//! Writing `.max` files: ids s = 1, t = 2, node v = v + 3; only arcs with capacity.

use crate::io::AtomicFile;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::archive::{compression_of_name, Compression};
use crate::graph::{Cap, CsrGraph, GridGraph, Network};
use crate::{Error, Result};

const SOURCE_ID: u64 = 1;
const SINK_ID: u64 = 2;
/// File id of node 0.
const FIRST_NODE_ID: u64 = 3;

/// Formats lines into a byte buffer without going through `fmt`, which would be the bottleneck
/// on files of hundreds of millions of lines.
struct LineWriter<W: Write> {
    out: BufWriter<W>,
    line: Vec<u8>,
}

impl<W: Write> LineWriter<W> {
    fn num(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.line.extend_from_slice(&digits[i..]);
    }

    fn arc(&mut self, u: u64, v: u64, cap: Cap) -> io::Result<()> {
        self.line.clear();
        self.line.extend_from_slice(b"a ");
        self.num(u);
        self.line.push(b' ');
        self.num(v);
        self.line.push(b' ');
        self.num(cap as u64);
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    fn header(
        &mut self,
        comments: &[&str],
        hint: Option<String>,
        n: u64,
        m: u64,
    ) -> io::Result<()> {
        for c in comments {
            for l in c.lines() {
                if l.is_empty() {
                    writeln!(self.out, "c")?;
                } else {
                    writeln!(self.out, "c {l}")?;
                }
            }
            if c.is_empty() {
                writeln!(self.out, "c")?;
            }
        }
        if let Some(h) = hint {
            writeln!(self.out, "c regulargrid {h}")?;
        }
        writeln!(self.out, "p max {n} {m}")?;
        writeln!(self.out, "n {SOURCE_ID} s")?;
        writeln!(self.out, "n {SINK_ID} t")
    }
}

/// Writes `net` as a DIMACS max-flow file, `comments` first as `c` lines (one per line of each
/// string).
///
/// Grids get a `c regulargrid W H` line (`W H D` for 3D connectivities or depth > 1) so that
/// [`read_max`](super::read_max) loads them back as the same grid; an arc and its reverse are
/// written on adjacent lines so that they are read back as one pair. Arcs with zero capacity
/// are left out, and the `M` of the `p` line counts exactly the `a` lines. (A grid of depth > 1
/// with a 2D connectivity, a stack of independent slices, comes back as N6 or N26 with the same
/// arcs.) A grid that fails
/// [`GridGraph::validate`] is refused with [`io::ErrorKind::InvalidInput`].
///
/// ```
/// use segcut::graph::{CsrBuilder, Network};
/// use segcut::io::dimacs::write_max;
/// let mut b = CsrBuilder::new(2).unwrap();
/// b.add_terminals(0, 5, 0).unwrap();
/// b.add_edge(0, 1, 3, 0).unwrap();
/// b.add_terminals(1, 0, 4).unwrap();
/// let mut out = Vec::new();
/// write_max(&mut out, &Network::Csr(b.build().unwrap()), &[]).unwrap();
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "p max 4 3\nn 1 s\nn 2 t\na 1 3 5\na 4 2 4\na 3 4 3\n"
/// );
/// ```
pub fn write_max<W: Write>(w: W, net: &Network, comments: &[&str]) -> io::Result<()> {
    let mut lw = LineWriter {
        out: BufWriter::with_capacity(1 << 20, w),
        line: Vec::with_capacity(64),
    };
    match net {
        Network::Grid(g) => write_grid(&mut lw, g, comments)?,
        Network::Csr(g) => write_csr(&mut lw, g, comments)?,
    }
    lw.out.flush()
}

fn write_terminals<W: Write>(
    lw: &mut LineWriter<W>,
    source: &[Cap],
    sink: &[Cap],
) -> io::Result<()> {
    for (v, (&s, &t)) in source.iter().zip(sink).enumerate() {
        let id = v as u64 + FIRST_NODE_ID;
        if s > 0 {
            lw.arc(SOURCE_ID, id, s)?;
        }
        if t > 0 {
            lw.arc(id, SINK_ID, t)?;
        }
    }
    Ok(())
}

fn positive(caps: &[Cap]) -> u64 {
    caps.iter().filter(|&&c| c > 0).count() as u64
}

fn write_grid<W: Write>(
    lw: &mut LineWriter<W>,
    g: &GridGraph,
    comments: &[&str],
) -> io::Result<()> {
    g.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let conn = g.connectivity();
    let [w, h, d] = g.dims();
    let n = g.num_nodes();
    // validate() guarantees that slots leaving the grid are zero, so counting all is exact.
    let m = positive(g.source_caps())
        + positive(g.sink_caps())
        + (0..conn.degree()).map(|k| positive(g.caps(k))).sum::<u64>();
    let hint = if conn.is_3d() || d > 1 {
        format!("{w} {h} {d}")
    } else {
        format!("{w} {h}")
    };
    lw.header(comments, Some(hint), n as u64 + 2, m)?;
    write_terminals(lw, g.source_caps(), g.sink_caps())?;
    for k in (0..conn.degree()).step_by(2) {
        let (fwd, rev) = (g.caps(k), g.caps(k + 1));
        for (v, &c) in fwd.iter().enumerate() {
            let Some(u) = g.neighbor(v, k) else { continue };
            let (vid, uid) = (v as u64 + FIRST_NODE_ID, u as u64 + FIRST_NODE_ID);
            if c > 0 {
                lw.arc(vid, uid, c)?;
            }
            if rev[u] > 0 {
                lw.arc(uid, vid, rev[u])?;
            }
        }
    }
    Ok(())
}

fn write_csr<W: Write>(lw: &mut LineWriter<W>, g: &CsrGraph, comments: &[&str]) -> io::Result<()> {
    let constant = g.constant_flow().max(0) as u64;
    let max = Cap::MAX as u64;
    // Direct s → t capacity is an i64; split it into arcs that fit a capacity.
    let constant_arcs = constant.div_ceil(max);
    let m =
        positive(g.source_caps()) + positive(g.sink_caps()) + positive(g.caps()) + constant_arcs;
    lw.header(comments, None, g.num_nodes() as u64 + 2, m)?;
    let mut left = constant;
    while left > 0 {
        let c = left.min(max);
        lw.arc(SOURCE_ID, SINK_ID, c as Cap)?;
        left -= c;
    }
    write_terminals(lw, g.source_caps(), g.sink_caps())?;
    let (heads, sisters, caps) = (g.heads(), g.sisters(), g.caps());
    for v in 0..g.num_nodes() {
        for a in g.arcs_of(v) {
            let s = sisters[a] as usize;
            if a > s {
                continue; // each pair once, from its lower arc
            }
            let (vid, uid) = (v as u64 + FIRST_NODE_ID, heads[a] as u64 + FIRST_NODE_ID);
            if caps[a] > 0 {
                lw.arc(vid, uid, caps[a])?;
            }
            if caps[s] > 0 {
                lw.arc(uid, vid, caps[s])?;
            }
        }
    }
    Ok(())
}

/// Writes `net` to `path` with [`write_max`], compressed when the name ends in `.gz` or `.bz2`.
///
/// ```
/// use segcut::io::dimacs::{read_instances, write_max_file, ReadOptions};
/// use segcut::graph::{Connectivity, GridGraph, Network};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("g.max.bz2");
/// let mut g = GridGraph::new_2d(2, 2, Connectivity::N8).unwrap();
/// g.set_arc(0, 3, 9).unwrap(); // a diagonal
/// write_max_file(&path, &Network::Grid(g.clone()), &["made by a doctest"]).unwrap();
/// read_instances(&path, &ReadOptions::default(), |inst| {
///     assert!(matches!(inst.network, Network::Grid(ref back) if *back == g));
///     Ok(())
/// })
/// .unwrap();
/// ```
pub fn write_max_file(path: &Path, net: &Network, comments: &[&str]) -> Result<()> {
    stage_max_file(path, net, comments)?.commit()
}

/// [`write_max_file`] up to the last step: the file is complete and synced beside `path`, and
/// [`commit`](crate::io::AtomicFile::commit) (or [`commit_all`](crate::io::commit_all) with a
/// run's other outputs) puts it in place.
pub fn stage_max_file(path: &Path, net: &Network, comments: &[&str]) -> Result<AtomicFile> {
    let io_err = |e| Error::io(path, e);
    // The name says the format (`.max`, `.max.gz`, `.max.bz2`): a `.sgb` or `.png` name would
    // hold DIMACS text.
    crate::io::output_format::DIMACS.check(path)?;
    let mut file = AtomicFile::create(path)?;
    match compression_of_name(&path.to_string_lossy()) {
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(&mut file, flate2::Compression::default());
            write_max(&mut enc, net, comments).map_err(io_err)?;
            enc.finish().map(drop).map_err(io_err)?;
        }
        Compression::Bzip2 => {
            // Blocks compressed on every core, into one stream as `bzip2` writes it.
            let mut enc = super::bz2::ParBzEncoder::new(&mut file);
            write_max(&mut enc, net, comments).map_err(io_err)?;
            enc.finish().map(drop).map_err(io_err)?;
        }
        Compression::None => write_max(&mut file, net, comments).map_err(io_err)?,
    }
    file.sync().map_err(io_err)?;
    Ok(file)
}
