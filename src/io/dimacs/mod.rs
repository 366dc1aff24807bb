//! DIMACS max-flow files (`.max`, `.sol`): a streaming reader, a writer, and the compressed files
//! and archives that the Waterloo vision benchmark ships.
//!
//! The format, one item per line:
//!
//! ```text
//! c any comment (anywhere; blank lines too)
//! c regulargrid W H [D]      <- optional hint written by segcut: the nodes form a grid
//! p max N M                  <- N nodes, M arc lines; once, before any n or a line
//! n 1 s                      <- the source
//! n 2 t                      <- the sink
//! a U V CAP                  <- an arc, 1-based ids
//! ```
//!
//! Source and sink become terminals (see [`crate::graph`]); the other nodes are numbered `0..`
//! in id order ([`MaxInstance::dimacs_id`] maps back). Arcs into the source, out of the sink and
//! self loops are dropped; source → sink arcs become the constant flow; an arc line immediately
//! followed by its reverse becomes one pair (as in every Waterloo file).
//!
//! A file with the grid hint loads as a [`Network::Grid`] when it is in segcut's own layout:
//! source 1, sink 2, pixel `i` is id `i + 3`, `N = W·H·D + 2`, no source → sink arc, and every arc
//! with capacity joins neighbours in the 3×3(×3) neighbourhood. The connectivity is the smallest
//! that holds all arcs: N4 or N8 for a two-number hint, N6 or N26 when the hint gives `D` (even
//! `D = 1`, so that any grid written by [`write_max`] comes back with its connectivity, unless
//! all its diagonal capacities are zero).
//!
//! A file without the hint is a grid when its arc offsets say so: the pixels must be one block
//! of ids (source and sink 1 and 2, or the last two, or first and last), the width `W` is the
//! smallest id offset above 1 (or that plus one, for 8-connected grids), `N - 2` must be a whole
//! number of rows, and every arc with capacity must join grid neighbours, never across a row
//! end. Waterloo's BVZ stereo files are such grids. When both candidate widths fit, the file
//! stays general rather than guess. Any other file loads as a [`Network::Csr`];
//! [`MaxInstance::layout`] says which way it went and why.
//!
//! ```
//! use segcut::io::dimacs::{read_max, write_max};
//! use segcut::graph::{Connectivity, GridGraph, Network};
//!
//! let mut g = GridGraph::new_2d(3, 2, Connectivity::N4).unwrap();
//! g.set_terminals(0, 7, 0);
//! g.set_terminals(5, 0, 4);
//! g.set_arc(0, 1, 2).unwrap();
//! let mut text = Vec::new();
//! write_max(&mut text, &Network::Grid(g.clone()), &["a tiny grid"]).unwrap();
//!
//! let inst = read_max(&text[..], "tiny.max").unwrap();
//! assert_eq!(inst.declared_nodes, 8); // 6 pixels + source + sink
//! match inst.network {
//!     Network::Grid(back) => assert_eq!(back, g),
//!     Network::Csr(_) => unreachable!("the hint makes it a grid"),
//! }
//! ```

mod archive;
mod binary;
mod bz2;
mod grid;
mod gz;
mod infer;
mod inflate;
mod pargz;
mod place;
mod reader;
mod writer;

pub use archive::read_instances;
pub use binary::{read_sgb, write_sgb, SGB_MAGIC, SGB_VERSION};
pub(crate) use bz2::ParBzEncoder;
pub(crate) use gz::{inflate_members, with_choice as with_gzip_choice, GzPath};
pub(crate) use pargz::inflate_file as par_inflate_file;
pub use reader::{read_max, read_max_with, read_sol};
pub use writer::{stage_max_file, write_max, write_max_file};

use crate::graph::{Connectivity, Network};

/// A max-flow instance read from a DIMACS file.
#[derive(Clone, Debug)]
pub struct MaxInstance {
    /// Where it came from: the path, or `archive.tbz2:member.max`.
    pub name: String,
    /// The graph: a grid when the file carries segcut's grid hint and layout, else CSR.
    pub network: Network,
    /// The member's path inside the archive it came from (`None` for a plain file).
    pub member: Option<String>,
    /// The file id of the source.
    pub source_id: u64,
    /// The file id of the sink.
    pub sink_id: u64,
    /// `N` of the `p max N M` line (source and sink included).
    pub declared_nodes: u64,
    /// `M` of the `p max N M` line: the number of `a` lines.
    pub declared_arcs: u64,
    /// The flow value of the matching `.sol` file, when one was found.
    pub expected_flow: Option<i64>,
    /// `[W, H, D]` of a `c regulargrid W H [D]` line (D = 1 when absent), whether or not the
    /// graph matched it.
    pub grid_hint: Option<[usize; 3]>,
    /// Arcs that can carry no flow and were left out: self loops, arcs into the source, arcs out
    /// of the sink.
    pub dropped_arcs: u64,
    /// How many times an arc line was immediately followed by its reverse and the two were
    /// stored as one pair.
    pub paired_arcs: u64,
    /// What the reader found: a grid (from the hint or inferred from the arc offsets), or why
    /// the file loaded as a general graph.
    pub layout: Layout,
}

/// How a file's nodes were laid out, as far as the reader could tell.
///
/// Its [`Display`](std::fmt::Display) form is the line `segcut maxflow --explain` prints.
///
/// ```
/// let text = "p max 6 4\nn 1 s\nn 2 t\na 3 4 1\na 4 3 1\na 3 5 2\na 5 3 2\n";
/// let inst = segcut::io::dimacs::read_max(text.as_bytes(), "x.max").unwrap();
/// assert_eq!(inst.layout.to_string(), "grid 2x2 N4 inferred from arc offsets");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The network is a [`Network::Grid`].
    Grid {
        /// `[W, H, D]`.
        dims: [usize; 3],
        /// The smallest connectivity that holds every arc.
        connectivity: Connectivity,
        /// Whether a `c regulargrid` hint named the size (else it was inferred from the arcs).
        from_hint: bool,
    },
    /// The network is a [`Network::Csr`]; the text says why it is not a grid.
    General(String),
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layout::Grid {
                dims: [w, h, d],
                connectivity,
                from_hint,
            } => {
                write!(f, "grid {w}x{h}")?;
                if connectivity.is_3d() {
                    write!(f, "x{d}")?;
                }
                let how = if *from_hint {
                    "from the regulargrid hint"
                } else {
                    "inferred from arc offsets"
                };
                write!(f, " {connectivity} {how}")
            }
            Layout::General(why) => write!(f, "general: {why}"),
        }
    }
}

impl MaxInstance {
    /// The file id of internal node `node` (the inverse of the numbering the reader uses:
    /// ids in increasing order, skipping the source and the sink).
    ///
    /// ```
    /// let text = "p max 4 0\nn 3 s\nn 1 t\n";
    /// let inst = segcut::io::dimacs::read_max(text.as_bytes(), "x.max").unwrap();
    /// assert_eq!((inst.dimacs_id(0), inst.dimacs_id(1)), (2, 4));
    /// ```
    pub fn dimacs_id(&self, node: usize) -> u64 {
        let (lo, hi) = if self.source_id < self.sink_id {
            (self.source_id, self.sink_id)
        } else {
            (self.sink_id, self.source_id)
        };
        let mut id = node as u64 + 1;
        if id >= lo {
            id += 1;
        }
        if id >= hi {
            id += 1;
        }
        id
    }

    /// The name without directories, archive prefix, `.max` and compression extensions: the key
    /// of this instance's `.sol` value in the map [`read_instances`] returns.
    ///
    /// ```
    /// # use segcut::io::dimacs::stem_of;
    /// assert_eq!(stem_of("data/BVZ-tsukuba.tbz2:BVZ-tsukuba/BVZ-tsukuba3.max"), "BVZ-tsukuba3");
    /// ```
    pub fn stem(&self) -> &str {
        stem_of(&self.name)
    }

    /// What tells this instance apart from the others of its file: the member's path inside an
    /// archive without `.max` and compression extensions (`a/dup` for `a/dup.max.gz`), else the
    /// [stem](Self::stem). The key of its `.sol` value in the map [`read_instances`] returns,
    /// and the name `segcut maxflow` gives it.
    ///
    /// ```
    /// let text = "p max 2 0\nn 1 s\nn 2 t\n";
    /// let mut inst = segcut::io::dimacs::read_max(text.as_bytes(), "x/y.max").unwrap();
    /// assert_eq!(inst.key(), "y");
    /// inst.member = Some("a/dup.max.bz2".into());
    /// assert_eq!(inst.key(), "a/dup");
    /// ```
    pub fn key(&self) -> &str {
        match &self.member {
            Some(m) => member_key(m),
            None => self.stem(),
        }
    }
}

/// An archive member's path without compression and `.max` / `.sol` extensions.
pub(crate) fn member_key(member: &str) -> &str {
    let base = strip_suffix_ci(member, ".gz")
        .or_else(|| strip_suffix_ci(member, ".bz2"))
        .unwrap_or(member);
    strip_suffix_ci(base, ".max")
        .or_else(|| strip_suffix_ci(base, ".sol"))
        .unwrap_or(base)
}

/// The stem of a `.max` or `.sol` name (see [`MaxInstance::stem`]).
pub fn stem_of(name: &str) -> &str {
    let base = name.rsplit(['/', '\\', ':']).next().unwrap_or(name);
    let base = strip_suffix_ci(base, ".gz")
        .or_else(|| strip_suffix_ci(base, ".bz2"))
        .unwrap_or(base);
    strip_suffix_ci(base, ".max")
        .or_else(|| strip_suffix_ci(base, ".sol"))
        .or_else(|| strip_suffix_ci(base, ".sgb"))
        .unwrap_or(base)
}

/// `s` without `suffix`, compared ASCII case-insensitively.
fn strip_suffix_ci<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = s.len().checked_sub(suffix.len())?;
    let tail = s.get(cut..)?;
    tail.eq_ignore_ascii_case(suffix).then(|| &s[..cut])
}

/// Bytes per declared node that reading and solving a `.max` file takes at its peak: measured
/// (peak resident size of `segcut maxflow --solver bk`) at 40.6 on a file of 10^7 nodes and one
/// arc, with a margin.
pub const MAX_BYTES_PER_NODE: u64 = 44;

/// Bytes per declared arc line at the peak, on top of [`MAX_BYTES_PER_NODE`], for the worst
/// case: every line its own arc pair (one-way arcs, as in RLG files), solved by Dinic (what
/// `auto` picks for such graphs). Measured (peak resident size less the 5.8 MB of an empty run)
/// on a Washington RLG of 262 146 nodes and 786 366 one-way arc lines: BK 58 MB (59 bytes a
/// line), Dinic 93 MB (103 bytes a line). Files whose reverse arcs are on adjacent lines (every
/// grid segcut or Waterloo writes) need less: 18–28 bytes a line (a random sparse graph as CSR,
/// 524 288 nodes and 2 097 152 arcs in 80 MB with BK; 4- and 8-connected grids, 4.2 M nodes and
/// 16.8 M arcs in 464 MB).
pub const MAX_BYTES_PER_ARC: u64 = 104;

/// The memory that reading and solving a file whose problem line is `p max NODES ARCS` needs,
/// estimated from the measured costs [`MAX_BYTES_PER_NODE`] and [`MAX_BYTES_PER_ARC`]. The
/// reader compares it with the process's [`memory_budget`](crate::io::memory_budget) before it
/// allocates anything.
///
/// ```
/// use segcut::io::dimacs::max_memory_needed;
/// assert_eq!(max_memory_needed(1_000_000_000, 0), 44_000_000_000);
/// assert_eq!(max_memory_needed(0, 1000), 104_000);
/// assert!(max_memory_needed(u64::MAX, u64::MAX) == u64::MAX); // saturates
/// ```
pub fn max_memory_needed(nodes: u64, arcs: u64) -> u64 {
    nodes
        .saturating_mul(MAX_BYTES_PER_NODE)
        .saturating_add(arcs.saturating_mul(MAX_BYTES_PER_ARC))
}

/// Options for reading files.
#[derive(Clone, Default)]
pub struct ReadOptions {
    /// Told the file's size when reading a file starts, then advanced by the bytes read from
    /// disk (compressed bytes for compressed files).
    pub progress: Option<crate::progress::SharedProgress>,
}

impl std::fmt::Debug for ReadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOptions")
            .field("progress", &self.progress.is_some())
            .finish()
    }
}
