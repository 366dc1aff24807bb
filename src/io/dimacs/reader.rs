//! The streaming `.max` / `.sol` parser.
//!
//! Files reach gigabytes, so the input is read in large blocks into one reusable buffer and
//! each line is tokenized in place: no allocation per line, numbers parsed straight from bytes.
//! Arcs go into a [`CsrBuilder`] as they are read; a grid is recognised only at the end.

use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use super::grid::grid_of;
use super::place::{FastArc, GridPlace, Link};
use super::{infer, Layout, MaxInstance, ReadOptions};
use crate::graph::{Cap, CsrBuilder, Network, PairParts, Vertex, MAX_NODES};
use crate::io::escape_text;
use crate::io::memory::bytes_text;
use crate::progress::ReadProgress;
use crate::{Error, Result};

/// Size of the read buffer.
const BLOCK: usize = 1 << 20;
/// Longer lines are refused: no DIMACS line needs this much, and binary input has few newlines.
const MAX_LINE: usize = 1 << 20;
/// Reserve at most this many arc pairs up front, whatever `M` a file claims.
const MAX_RESERVE_PAIRS: u64 = 1 << 22;

/// Why a line could not be read.
enum LineError {
    Io(io::Error),
    TooLong,
}

/// Splits a byte stream into lines using one large buffer.
struct Lines<R> {
    src: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes.
    start: usize,
    /// End of the valid bytes.
    end: usize,
    /// Bytes in `start..scanned` are known to hold no newline.
    scanned: usize,
    eof: bool,
    /// Number of lines returned so far: the current line's number.
    line: u64,
}

impl<R: Read> Lines<R> {
    fn new(src: R) -> Self {
        Lines {
            src,
            buf: vec![0; BLOCK],
            start: 0,
            end: 0,
            scanned: 0,
            eof: false,
            line: 0,
        }
    }

    /// The next line, without its `\n`, as a range of [`Self::bytes`].
    fn next_line(&mut self) -> Result<Option<std::ops::Range<usize>>, LineError> {
        loop {
            if let Some(i) = self.buf[self.scanned..self.end]
                .iter()
                .position(|&b| b == b'\n')
            {
                let range = self.start..self.scanned + i;
                self.start = self.scanned + i + 1;
                self.scanned = self.start;
                self.line += 1;
                return Ok(Some(range));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start < self.end {
                    let range = self.start..self.end;
                    self.start = self.end;
                    self.line += 1;
                    return Ok(Some(range));
                }
                return Ok(None);
            }
            if self.end - self.start > MAX_LINE {
                // Report it as the line being read.
                self.line += 1;
                return Err(LineError::TooLong);
            }
            if self.start > 0 {
                // Move the partial line to the front to make room.
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scanned -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(2 * self.buf.len(), 0);
            }
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.line += 1;
                    return Err(LineError::Io(e));
                }
            }
        }
    }

    /// The buffer that ranges from [`Self::next_line`] index into.
    fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Whitespace-separated tokens of one line.
struct Tokens<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn new(line: &'a [u8]) -> Self {
        Tokens { line, pos: 0 }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let line = self.line;
        let mut i = self.pos;
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == line.len() {
            self.pos = i;
            return None;
        }
        let start = i;
        while i < line.len() && !line[i].is_ascii_whitespace() {
            i += 1;
        }
        self.pos = i;
        Some(&line[start..i])
    }
}

/// Why a token is not a number we accept.
enum NumError {
    NotNumber,
    Negative,
    TooLarge,
}

/// Parses a non-negative decimal integer.
#[inline]
fn parse_u64(tok: &[u8]) -> Result<u64, NumError> {
    let (neg, digits) = match tok {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, tok),
    };
    if digits.is_empty() {
        return Err(NumError::NotNumber);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(NumError::NotNumber);
        }
        match v.checked_mul(10).and_then(|v| v.checked_add(d as u64)) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if neg && (v != 0 || overflow) {
        Err(NumError::Negative)
    } else if overflow {
        Err(NumError::TooLarge)
    } else {
        Ok(v)
    }
}

/// The fast path for ids and capacities: 1 to 18 plain digits (no sign), so no overflow check
/// is needed; anything else goes to the slow path, which says what is wrong.
#[inline]
fn plain_number(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || tok.len() > 18 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in tok {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

/// A token for an error message: lossy UTF-8, shortened.
fn show(tok: &[u8]) -> String {
    let s = String::from_utf8_lossy(tok);
    // Escaped: a token may hold terminal escape sequences.
    if s.chars().count() > 40 {
        let short: String = s.chars().take(40).collect();
        format!("{}...", escape_text(&short))
    } else {
        escape_text(&s)
    }
}

/// The first line of a problem.
#[derive(Clone, Copy)]
struct Problem {
    nodes: u64,
    arcs: u64,
    line: u64,
}

/// A node-to-node arc held back for one line, in case the next line is its reverse.
#[derive(Clone, Copy)]
struct Held {
    u: u32,
    v: u32,
    cap: Cap,
    u_id: u64,
    v_id: u64,
    line: u64,
}

/// An arc seen before both terminals were declared, replayed once they are.
#[derive(Clone, Copy)]
struct EarlyArc {
    u_id: u64,
    v_id: u64,
    cap: Cap,
    line: u64,
}

/// The parser's state between lines.
struct MaxParser<'a> {
    file: &'a str,
    line: u64,
    problem: Option<Problem>,
    builder: Option<CsrBuilder>,
    /// Terminal ids with the line that declared them.
    source: Option<(u64, u64)>,
    sink: Option<(u64, u64)>,
    arcs_seen: u64,
    held: Option<Held>,
    early: Vec<EarlyArc>,
    hint: Option<([usize; 3], bool)>,
    paired: u64,
    /// Whether arcs go straight into a grid (see [`super::place`]).
    grid: GridMode,
    /// The grid the arcs are placed into, and whether its size was inferred from the arc
    /// offsets (no hint) rather than read off the hint.
    placed: Option<([usize; 3], bool, bool)>,
    /// Without a hint: the builder's pairs looked at so far for the row width, and the
    /// smallest id offset above 1 among them (see [`MaxParser::guess_grid`]).
    width_scan: usize,
    width_seen: Option<usize>,
    width_count: usize,
    /// The terminal-arc buffers of the last run of pieces applied on every core, for the next
    /// (as the batch parser keeps the arc buffers).
    spare_terminals: Vec<Vec<TerminalArc>>,
}

/// Arc pairs with an offset above 1 to see before a grid is guessed from them (a file that
/// lists its arcs row by row shows its width in the first rows; a guess that turns out wrong
/// costs a second read).
const GUESS_AFTER: usize = if cfg!(test) { 1 } else { 4096 };

/// How a parser stores arcs.
enum GridMode {
    /// In the CSR builder, always (the file cannot be read again, or the grid cannot hold it).
    Off,
    /// In the builder until the hint, the problem line and the terminals say the file is a
    /// grid in segcut's layout, then in the grid.
    Maybe,
    /// In the grid: its arrays, the arc held for its reverse, and the arcs dropped since.
    On(Box<GridPlace>, Option<Link>, u64),
}

/// Why a read stopped.
enum Fail {
    Error(Error),
    /// The grid placement met something it cannot hold: read the file again the general way.
    Reread,
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Error(e)
    }
}

impl<'a> MaxParser<'a> {
    fn err_at(&self, line: u64, msg: impl Into<String>) -> Error {
        Error::Parse {
            file: self.file.to_string(),
            line,
            msg: msg.into(),
        }
    }

    fn err(&self, msg: impl Into<String>) -> Error {
        self.err_at(self.line, msg)
    }

    fn line(&mut self, line: &[u8]) -> Result<()> {
        let mut tok = Tokens::new(line);
        let Some(kind) = tok.next() else {
            return Ok(()); // blank line
        };
        match kind {
            b"a" => self.arc_line(tok),
            b"n" => self.node_line(tok),
            b"p" => self.problem_line(tok),
            [b'c', ..] => {
                if kind == b"c" {
                    self.comment_line(tok);
                }
                Ok(())
            }
            _ => Err(self.err(format!(
                "unknown line type '{}': lines start with c (comment), p (problem), n (node) or a (arc)",
                show(kind)
            ))),
        }
    }

    /// Records a `c regulargrid W H [D]` hint; any other comment is ignored.
    fn comment_line(&mut self, mut tok: Tokens<'_>) {
        if self.hint.is_some() || tok.next() != Some(b"regulargrid".as_slice()) {
            return;
        }
        let nums: Vec<Option<usize>> = tok
            .map(|t| parse_u64(t).ok().and_then(|v| usize::try_from(v).ok()))
            .collect();
        let dims = match nums[..] {
            [Some(w), Some(h)] => Some(([w, h, 1], false)),
            [Some(w), Some(h), Some(d)] => Some(([w, h, d], true)),
            _ => None,
        };
        // A malformed hint is only a comment.
        self.hint = dims.filter(|(d, _)| d.iter().all(|&x| x > 0));
    }

    fn problem_line(&mut self, mut tok: Tokens<'_>) -> Result<()> {
        if let Some(p) = self.problem {
            return Err(self.err(format!(
                "duplicate problem line (the first is on line {})",
                p.line
            )));
        }
        match tok.next() {
            None => return Err(self.err("missing problem type: expected 'p max N M'")),
            Some(b"max") => {}
            Some(t) => {
                return Err(self.err(format!(
                    "problem type '{}' is not supported: expected 'p max N M' (a max-flow problem)",
                    show(t)
                )))
            }
        }
        let nodes = self.count(tok.next(), "node count")?;
        let arcs = self.count(tok.next(), "arc count")?;
        self.no_more(tok, "p max N M")?;
        if nodes < 2 {
            return Err(self.err(format!(
                "the problem declares {nodes} nodes; a max-flow problem needs at least 2 \
                 (the source and the sink)"
            )));
        }
        let inner = nodes - 2;
        if inner > MAX_NODES as u64 {
            return Err(self.err(format!(
                "the problem declares {nodes} nodes, more than the {} segcut supports",
                MAX_NODES as u64 + 2
            )));
        }
        // Compare what reading and solving this graph will take with what this process may
        // still allocate (available memory, `ulimit -v`, the cgroup), so that a 30-byte file
        // declaring 10^9 nodes is refused here with a message, not an abort in the builder.
        let need = super::max_memory_needed(nodes, arcs);
        if let Some(budget) = crate::io::memory_budget() {
            if need > budget.bytes {
                return Err(self.err(format!(
                    "the problem declares {nodes} nodes and {arcs} arcs, which need about {} to \
                     read and solve, more than {} allows ({}); run it where more memory is \
                     available or raise the limit",
                    bytes_text(need),
                    budget.source,
                    bytes_text(budget.bytes)
                )));
            }
        }
        // Ask for the node arrays before the builder does, so that what slips past the budget
        // (no limit readable) is an error here rather than an abort.
        let bytes = (inner as usize).saturating_mul(2 * std::mem::size_of::<i64>());
        if Vec::<u8>::new().try_reserve_exact(bytes).is_err() {
            return Err(self.err(format!(
                "not enough memory for the {nodes} nodes the problem declares"
            )));
        }
        let pairs = (arcs / 2).min(MAX_RESERVE_PAIRS) as usize;
        self.builder = Some(CsrBuilder::with_capacity(inner as usize, pairs));
        self.problem = Some(Problem {
            nodes,
            arcs,
            line: self.line,
        });
        Ok(())
    }

    /// A count of the `p` line.
    fn count(&self, tok: Option<&[u8]>, what: &str) -> Result<u64> {
        let Some(t) = tok else {
            return Err(self.err(format!("missing {what}: expected 'p max N M'")));
        };
        parse_u64(t).map_err(|e| {
            self.err(match e {
                NumError::NotNumber => format!("{what} '{}' is not a number", show(t)),
                NumError::Negative => format!("negative {what} {}", show(t)),
                NumError::TooLarge => format!("{what} {} is too large", show(t)),
            })
        })
    }

    /// A node id: a number in `1..=N`.
    #[inline]
    fn node_id(&self, tok: Option<&[u8]>, what: &str, form: &str) -> Result<u64> {
        let n = self.problem.map_or(0, |p| p.nodes);
        match tok.and_then(plain_number) {
            Some(id) if (1..=n).contains(&id) => Ok(id),
            _ => self.node_id_slow(tok, what, form),
        }
    }

    /// [`Self::node_id`] for signs, leading zeros, and errors.
    #[cold]
    fn node_id_slow(&self, tok: Option<&[u8]>, what: &str, form: &str) -> Result<u64> {
        let Some(t) = tok else {
            return Err(self.err(format!("missing {what}: expected '{form}'")));
        };
        let n = self.problem.map_or(0, |p| p.nodes);
        match parse_u64(t) {
            Ok(id) if (1..=n).contains(&id) => Ok(id),
            Ok(_) | Err(NumError::Negative) | Err(NumError::TooLarge) => Err(self.err(format!(
                "{what} {} is out of range: ids run from 1 to {n}",
                show(t)
            ))),
            Err(NumError::NotNumber) => {
                Err(self.err(format!("{what} '{}' is not a number", show(t))))
            }
        }
    }

    #[inline]
    fn capacity(&self, tok: Option<&[u8]>) -> Result<Cap> {
        match tok.and_then(plain_number) {
            Some(c) if c <= Cap::MAX as u64 => Ok(c as Cap),
            _ => self.capacity_slow(tok),
        }
    }

    /// [`Self::capacity`] for signs, leading zeros, and errors.
    #[cold]
    fn capacity_slow(&self, tok: Option<&[u8]>) -> Result<Cap> {
        let Some(t) = tok else {
            return Err(self.err("missing capacity: expected 'a U V CAP'"));
        };
        let too_large = || {
            self.err(format!(
                "capacity {} is larger than {}, the largest supported (32-bit) capacity",
                show(t),
                Cap::MAX
            ))
        };
        match parse_u64(t) {
            Ok(c) => Cap::try_from(c).map_err(|_| too_large()),
            Err(NumError::TooLarge) => Err(too_large()),
            Err(NumError::Negative) => Err(self.err(format!("negative capacity {}", show(t)))),
            Err(NumError::NotNumber) => {
                Err(self.err(format!("capacity '{}' is not a number", show(t))))
            }
        }
    }

    fn no_more(&self, mut tok: Tokens<'_>, form: &str) -> Result<()> {
        match tok.next() {
            None => Ok(()),
            Some(t) => Err(self.err(format!(
                "unexpected extra token '{}': expected '{form}'",
                show(t)
            ))),
        }
    }

    fn node_line(&mut self, mut tok: Tokens<'_>) -> Result<()> {
        if self.problem.is_none() {
            return Err(self.err("node line before the problem line 'p max N M'"));
        }
        let id = self.node_id(tok.next(), "node id", "n ID s")?;
        let kind = tok.next();
        let is_source = match kind {
            Some(b"s") => true,
            Some(b"t") => false,
            None => return Err(self.err("missing node kind: expected 'n ID s' or 'n ID t'")),
            Some(k) => {
                return Err(self.err(format!(
                    "unknown node kind '{}': expected s (source) or t (sink)",
                    show(k)
                )))
            }
        };
        self.no_more(tok, if is_source { "n ID s" } else { "n ID t" })?;
        let (mine, other, name, other_name) = if is_source {
            (self.source, self.sink, "source", "sink")
        } else {
            (self.sink, self.source, "sink", "source")
        };
        if let Some((prev, line)) = mine {
            return Err(self.err(format!(
                "duplicate {name}: node {prev} was already declared the {name} on line {line}"
            )));
        }
        if let Some((o, line)) = other {
            if o == id {
                return Err(self.err(format!(
                    "node {id} cannot be both source and sink (it is the {other_name} since line {line})"
                )));
            }
        }
        if is_source {
            self.source = Some((id, self.line));
        } else {
            self.sink = Some((id, self.line));
        }
        if self.source.is_some() && self.sink.is_some() {
            for a in std::mem::take(&mut self.early) {
                self.add_arc(a.u_id, a.v_id, a.cap, a.line)?;
            }
        }
        Ok(())
    }

    fn arc_line(&mut self, mut tok: Tokens<'_>) -> Result<()> {
        let Some(p) = self.problem else {
            return Err(self.err("arc line before the problem line 'p max N M'"));
        };
        let u = self.node_id(tok.next(), "tail node id", "a U V CAP")?;
        let v = self.node_id(tok.next(), "head node id", "a U V CAP")?;
        let cap = self.capacity(tok.next())?;
        self.no_more(tok, "a U V CAP")?;
        self.arc(p, u, v, cap)
    }

    /// Counts and stores an arc whose ids and capacity are valid.
    #[inline]
    fn arc(&mut self, p: Problem, u: u64, v: u64, cap: Cap) -> Result<()> {
        self.arcs_seen += 1;
        if self.arcs_seen > p.arcs {
            return Err(self.err(format!(
                "more arc lines than the {} declared in the problem line (line {})",
                p.arcs, p.line
            )));
        }
        if self.source.is_some() && self.sink.is_some() {
            self.add_arc(u, v, cap, self.line)
        } else {
            self.early.push(EarlyArc {
                u_id: u,
                v_id: v,
                cap,
                line: self.line,
            });
            Ok(())
        }
    }

    /// The builder's vertex for a file id (both terminals known).
    #[inline]
    fn vertex(&self, id: u64) -> Vertex {
        let (s, t) = (self.source.map_or(0, |x| x.0), self.sink.map_or(0, |x| x.0));
        if id == s {
            Vertex::Source
        } else if id == t {
            Vertex::Sink
        } else {
            let k = id - 1 - (id > s) as u64 - (id > t) as u64;
            Vertex::Node(k as u32)
        }
    }

    fn add_arc(&mut self, u_id: u64, v_id: u64, cap: Cap, line: u64) -> Result<()> {
        let (from, to) = (self.vertex(u_id), self.vertex(v_id));
        if let (Vertex::Node(u), Vertex::Node(v)) = (from, to) {
            if u != v {
                if let Some(h) = self.held.take() {
                    if h.u == v && h.v == u {
                        self.paired += 1;
                        return self.add_pair(h, cap, line);
                    }
                    self.add_pair(h, 0, h.line)?;
                }
                self.held = Some(Held {
                    u,
                    v,
                    cap,
                    u_id,
                    v_id,
                    line,
                });
                return Ok(());
            }
        }
        if let Some(h) = self.held.take() {
            self.add_pair(h, 0, h.line)?;
        }
        let b = self
            .builder
            .as_mut()
            .expect("builder exists after the p line");
        b.add_arc(from, to, cap).map_err(|e| {
            let msg = match (from, e) {
                (Vertex::Source, Error::Overflow(_)) => terminal_overflow(true, v_id),
                (_, Error::Overflow(_)) => terminal_overflow(false, u_id),
                (_, e) => e.to_string(),
            };
            self.err_at(line, msg)
        })
    }

    /// Adds a held arc with the capacity of its reverse (0 when the next line was not it).
    fn add_pair(&mut self, h: Held, rev_cap: Cap, line: u64) -> Result<()> {
        if h.cap as i64 + rev_cap as i64 > Cap::MAX as i64 {
            return Err(self.err_at(
                line,
                format!(
                    "arc {} -> {} (capacity {}, line {}) and its reverse (capacity {rev_cap}) \
                     add up to more than {}, the largest supported capacity of a pair",
                    h.u_id,
                    h.v_id,
                    h.cap,
                    h.line,
                    Cap::MAX
                ),
            ));
        }
        let b = self
            .builder
            .as_mut()
            .expect("builder exists after the p line");
        b.add_edge(h.u, h.v, h.cap, rev_cap)
            .map_err(|e| self.err_at(line, e.to_string()))
    }

    /// Applies a run of pieces of plain arc lines to the builder on every core: each piece is
    /// scanned on its own (ids in range, the reverse-arc pairing from both ways its first arc can
    /// go, terminal arcs), the pairing is stitched in file order, and the pairs are written into
    /// the builder's arrays at their places in file order, so the builder ends as the serial
    /// apply leaves it. False, with nothing changed, where the run needs the serial apply (not
    /// ready yet, an id out of range, a pair that overflows, too many arc lines, no memory):
    /// that gives the error with its line. A terminal sum past `Cap::MAX` is the one error found
    /// here, at the first line where a sum passes it, as the serial apply would find it.
    fn apply_general(&mut self, pieces: &mut [Piece]) -> Result<bool> {
        use rayon::prelude::*;
        let (Some(p), Some((s, _)), Some((t, _)), Some(builder)) =
            (self.problem, self.source, self.sink, self.builder.as_ref())
        else {
            return Ok(false);
        };
        if !self.early.is_empty() || matches!(self.grid, GridMode::On(..)) {
            return Ok(false);
        }
        let arcs: u64 = pieces.iter().map(|pc| pc.arcs.len() as u64).sum();
        if arcs == 0 || self.arcs_seen + arcs > p.arcs {
            return Ok(false);
        }
        let map = VertexMap::new(s, t);
        let spare = &mut self.spare_terminals;
        // The scans the pre-parse made (for this same problem and terminals: see
        // `scan_context`), the others made here.
        let bufs: Vec<Option<Vec<TerminalArc>>> = pieces
            .iter()
            .map(|pc| pc.scan.is_none().then(|| spare.pop().unwrap_or_default()))
            .collect();
        let scans: Vec<GeneralScan> = pieces
            .par_iter_mut()
            .zip(bufs)
            .map(|(pc, buf)| match (pc.scan.take(), buf) {
                (Some(sc), _) => sc,
                (None, buf) => GeneralScan::of(&pc.arcs, p.nodes, map, buf.unwrap_or_default()),
            })
            .collect();
        let pieces = &*pieces;
        if scans.iter().any(|sc| !sc.in_range) {
            return Ok(false);
        }
        // The pairing stitched in file order: where each piece's pairs go, and what it starts
        // with (the arc held before it, and whether its first arc is that arc's reverse).
        struct Plan {
            len: usize,
            held: Option<Link>,
            skip_first: bool,
        }
        let mut plans = Vec::with_capacity(pieces.len());
        let mut held = self.held;
        let (mut at, mut paired) = (builder.num_pairs(), 0u64);
        let mut base = self.line;
        for (pc, sc) in pieces.iter().zip(&scans) {
            let line0 = base;
            base += pc.lines;
            let incoming = held.map(|h| Link {
                u: h.u,
                v: h.v,
                cap: h.cap,
            });
            if pc.arcs.is_empty() {
                plans.push(Plan {
                    len: 0,
                    held: None,
                    skip_first: false,
                });
                continue; // what is held waits across blank and comment lines
            }
            let skip_first = match (incoming, sc.first) {
                (Some(h), Some(l)) if l.pairs_with(h) => {
                    if !l.pair_fits(h) {
                        return Ok(false);
                    }
                    true
                }
                _ => false,
            };
            let chain = if skip_first {
                &sc.skip_first
            } else {
                &sc.fresh
            };
            if !chain.fits {
                return Ok(false);
            }
            let len = usize::from(incoming.is_some()) + chain.pairs;
            plans.push(Plan {
                len,
                held: incoming,
                skip_first,
            });
            at += len;
            paired += chain.paired + u64::from(skip_first);
            held = chain.held.map(|i| {
                let a = pc.arcs[i];
                let (Vertex::Node(u), Vertex::Node(v)) = (map.of(a.u), map.of(a.v)) else {
                    unreachable!("only arcs between nodes are held")
                };
                Held {
                    u,
                    v,
                    cap: a.cap,
                    u_id: u64::from(a.u),
                    v_id: u64::from(a.v),
                    line: line0 + u64::from(a.line) + 1,
                }
            });
        }
        let (constant, dropped) = scans
            .iter()
            .fold((0i64, 0u64), |(c, d), sc| (c + sc.constant, d + sc.dropped));
        let terminals = scans.iter().any(|sc| !sc.terminals.is_empty());
        if builder.constant().checked_add(constant).is_none() {
            return Ok(false); // past i64 only after 2^32 full arcs: the serial apply says so
        }
        // Nothing has changed so far; from here on the builder is written.
        let builder = self.builder.as_mut().expect("checked above");
        if terminals && builder.terminal_sums_mut().is_none() {
            return Ok(false);
        }
        let first_pair = builder.num_pairs();
        let tz = std::time::Instant::now();
        let Some(parts) = builder.append_pairs(at - first_pair) else {
            return Ok(false);
        };
        let mut jobs = Vec::with_capacity(pieces.len());
        let PairParts {
            mut tail,
            mut head,
            mut cap,
            mut rev,
        } = parts;
        for (pc, plan) in pieces.iter().zip(&plans) {
            let (t0, t1) = std::mem::take(&mut tail).split_at_mut(plan.len);
            let (h0, h1) = std::mem::take(&mut head).split_at_mut(plan.len);
            let (c0, c1) = std::mem::take(&mut cap).split_at_mut(plan.len);
            let (r0, r1) = std::mem::take(&mut rev).split_at_mut(plan.len);
            (tail, head, cap, rev) = (t1, h1, c1, r1);
            jobs.push((pc, plan, t0, h0, c0, r0));
        }
        crate::phases::mark("apply: zeroing pair arrays", tz);
        let tw = std::time::Instant::now();
        jobs.into_par_iter().for_each(|(pc, plan, t, h, c, r)| {
            let mut k = 0;
            let mut put = |l: Link, rev_cap: Cap| {
                (t[k], h[k], c[k], r[k]) = (l.u, l.v, l.cap, rev_cap);
                k += 1;
            };
            let from = match (plan.held, plan.skip_first) {
                (Some(l), true) => {
                    put(l, pc.arcs[0].cap);
                    1
                }
                (Some(l), false) => {
                    put(l, 0);
                    0
                }
                (None, _) => 0,
            };
            if plan.len > 0 {
                pair_chain(&pc.arcs[from..], map, &mut put);
            }
            debug_assert_eq!(k, plan.len, "the write follows the scan");
        });
        crate::phases::mark("apply: writing pairs", tw);
        let tt = std::time::Instant::now();
        if terminals {
            let (source, sink) = builder.terminal_sums_mut().expect("allocated above");
            let first_bad = add_terminals(source, sink, pieces, &scans, self.line);
            if let Some((line, is_source, id)) = first_bad {
                return Err(self.err_at(line, terminal_overflow(is_source, id)));
            }
        }
        crate::phases::mark("apply: terminal sums", tt);
        let added = builder.add_counts(constant, dropped);
        debug_assert!(added && builder.num_pairs() == at, "checked above");
        self.spare_terminals
            .extend(scans.into_iter().map(|sc| sc.terminals));
        self.paired += paired;
        self.held = held;
        self.arcs_seen += arcs;
        self.line = base;
        Ok(true)
    }

    /// What a pre-parse worker needs to scan its piece for [`Self::apply_general`] (the node
    /// count and the terminals), where the scan will be used: both terminals known, no arc
    /// waiting for them, and arcs going to the builder for good. None of these can change
    /// without an error before the batch's pieces are applied.
    fn scan_context(&self) -> Option<(u64, VertexMap)> {
        let (Some(p), Some((s, _)), Some((t, _))) = (self.problem, self.source, self.sink) else {
            return None;
        };
        (self.early.is_empty() && matches!(self.grid, GridMode::Off))
            .then(|| (p.nodes, VertexMap::new(s, t)))
    }

    /// Moves to the grid placement once the file is known to be a grid in segcut's layout
    /// (the hint, `N` = pixels + 2, source 1, sink 2), carrying over the arcs read so far;
    /// gives it up for good where the file cannot be one. Without a hint, the grid is guessed
    /// from the arcs read so far ([`Self::guess_grid`]) and checked at the end against what
    /// the inference from the whole file would find.
    fn try_grid(&mut self) {
        if !matches!(self.grid, GridMode::Maybe) {
            return;
        }
        let (Some(p), Some((source, _)), Some((sink, _))) = (self.problem, self.source, self.sink)
        else {
            return; // not known yet
        };
        let (candidates, is_3d, inferred) = match self.hint {
            Some((dims, is_3d)) => (vec![dims], is_3d, false),
            None => match self.guess_grid(p.nodes) {
                Some(c) if c.is_empty() => {
                    self.grid = GridMode::Off;
                    return;
                }
                Some(c) => (c, false, true),
                None => return, // not enough arcs yet
            },
        };
        // The grid placement has no use for them: not held while the grid is allocated.
        self.spare_terminals = Vec::new();
        // Past this many arc lines the builder could refuse the pair count: leave it to it.
        let arcs_fit = p.arcs < u64::from(u32::MAX - 16) / 2 - 1;
        let layout_fits = arcs_fit && (source, sink) == (1, 2) && self.early.is_empty();
        let held = self.held.map(|h| Link {
            u: h.u,
            v: h.v,
            cap: h.cap,
        });
        for dims in candidates {
            let builder = self
                .builder
                .as_mut()
                .expect("builder exists after the p line");
            let pixels_fit = dims
                .iter()
                .try_fold(1u64, |n, &x| n.checked_mul(x as u64))
                .and_then(|n| n.checked_add(2))
                == Some(p.nodes);
            let place = (pixels_fit && layout_fits)
                .then(|| GridPlace::new(dims, is_3d, p.nodes))
                .flatten();
            let Some(mut place) = place else {
                continue;
            };
            if !place.add_builder(builder) || held.is_some_and(|l| !place.add_link(l)) {
                continue;
            }
            // The terminal sums move into the grid as they are (no second copy held).
            if !place.adopt_terminals(builder.take_terminal_sums()) {
                continue; // none were held: nothing is lost
            }
            let dropped = builder.dropped();
            self.held = None;
            self.builder = None;
            self.placed = Some((dims, is_3d, inferred));
            self.grid = GridMode::On(Box::new(place), held, dropped);
            return;
        }
        self.grid = GridMode::Off;
    }

    /// The 2D grids a file without a hint may be, from the pairs the builder holds: widths `W`
    /// and `W + 1` for the smallest id offset `W` above 1 (as [`super::infer`] reads them off
    /// the whole file), those that make whole rows. `None` until enough pairs are seen; empty
    /// where the file cannot be placed (terminals elsewhere than ids 1 and 2, whose grids the
    /// inference finds in other id layouts).
    fn guess_grid(&mut self, nodes: u64) -> Option<Vec<[usize; 3]>> {
        if (self.source.map(|x| x.0), self.sink.map(|x| x.0)) != (Some(1), Some(2)) {
            return Some(Vec::new());
        }
        let b = self.builder.as_ref()?;
        let (tails, heads, caps, revs) = b.pairs();
        // Only the pairs added since the last look.
        for i in self.width_scan.min(tails.len())..tails.len() {
            let off = tails[i].abs_diff(heads[i]) as usize;
            if off > 1 && (caps[i] > 0 || revs[i] > 0) {
                self.width_count += 1;
                self.width_seen = Some(self.width_seen.map_or(off, |w| w.min(off)));
            }
        }
        self.width_scan = tails.len();
        if self.width_count < GUESS_AFTER {
            return None;
        }
        let w0 = self.width_seen?;
        let n = usize::try_from(nodes - 2).ok()?;
        Some(
            [w0, w0 + 1]
                .into_iter()
                .filter(|&w| w >= 2 && n.is_multiple_of(w) && n / w >= 2)
                .map(|w| [w, n / w, 1])
                .collect(),
        )
    }

    /// Applies pre-parsed pieces to the grid: checked on every core, paired in file order,
    /// then placed on every core. Anything out of the ordinary asks for a general reread.
    fn apply_grid(&mut self, pieces: &[Piece]) -> Result<(), Fail> {
        use rayon::prelude::*;
        let p = self
            .problem
            .expect("the grid placement starts after the p line");
        let GridMode::On(place, held, dropped) = &mut self.grid else {
            unreachable!("called in grid mode")
        };
        if pieces
            .iter()
            .any(|pc| !pc.specials.is_empty() || pc.rest.is_some())
        {
            return Err(Fail::Reread);
        }
        let arcs: u64 = pieces.iter().map(|pc| pc.arcs.len() as u64).sum();
        if self.arcs_seen + arcs > p.arcs {
            return Err(Fail::Reread);
        }
        let scans: Vec<_> = pieces.par_iter().map(|pc| place.scan(&pc.arcs)).collect();
        let dirs = scans.iter().fold(0, |d, sc| d | sc.dirs);
        if scans.iter().any(|sc| !sc.fits) || !place.ensure(dirs) {
            return Err(Fail::Reread);
        }
        for (pc, sc) in pieces.iter().zip(&scans) {
            if pc.arcs.is_empty() {
                continue; // what is held waits across blank and comment lines
            }
            let chain = match (*held, sc.first) {
                (Some(h), Some(l)) if l.pairs_with(h) => {
                    if !l.pair_fits(h) {
                        return Err(Fail::Reread);
                    }
                    self.paired += 1;
                    sc.skip_first
                }
                _ => sc.fresh,
            };
            if !chain.fits {
                return Err(Fail::Reread);
            }
            self.paired += chain.paired;
            *held = chain.held;
            *dropped += sc.dropped;
        }
        let place: &GridPlace = place;
        if !pieces.par_iter().all(|pc| place.place(&pc.arcs)) {
            return Err(Fail::Reread);
        }
        self.arcs_seen += arcs;
        self.line += pieces.iter().map(|pc| pc.lines).sum::<u64>();
        Ok(())
    }

    /// Checks what only the end can show and builds the graph.
    fn finish(mut self) -> Result<MaxInstance, Fail> {
        // Not held through the graph's build, where the peak is.
        self.spare_terminals = Vec::new();
        let last = self.line;
        let Some(p) = self.problem else {
            if last == 0 {
                return Err(Fail::Error(Error::Input {
                    file: self.file.to_string(),
                    msg: "empty file: expected a DIMACS max-flow problem ('p max N M')".into(),
                }));
            }
            return Err(self.err("no problem line 'p max N M' in the file").into());
        };
        let Some((source_id, _)) = self.source else {
            return Err(self.err("no source: the file has no 'n ID s' line").into());
        };
        let Some((sink_id, _)) = self.sink else {
            return Err(self.err("no sink: the file has no 'n ID t' line").into());
        };
        if self.arcs_seen < p.arcs {
            return Err(self
                .err(format!(
                    "the problem line (line {}) declares {} arcs but the file has only {}",
                    p.line, p.arcs, self.arcs_seen
                ))
                .into());
        }
        if let GridMode::On(place, _, dropped) = std::mem::replace(&mut self.grid, GridMode::Off) {
            let t = std::time::Instant::now();
            let grid = place.finish().ok_or(Fail::Reread)?;
            let (dims, _, inferred) = self.placed.expect("the placement knows its grid");
            if inferred && !infer::inference_agrees(&grid) {
                return Err(Fail::Reread);
            }
            crate::phases::mark("grid: finishing the placed grid", t);
            return Ok(MaxInstance {
                name: self.file.to_string(),
                member: None,
                layout: Layout::Grid {
                    dims,
                    connectivity: grid.connectivity(),
                    from_hint: !inferred,
                },
                network: Network::Grid(grid),
                source_id,
                sink_id,
                declared_nodes: p.nodes,
                declared_arcs: p.arcs,
                expected_flow: None,
                grid_hint: self.hint.map(|(d, _)| d),
                dropped_arcs: dropped,
                paired_arcs: self.paired,
            });
        }
        if let Some(h) = self.held.take() {
            self.add_pair(h, 0, h.line)?;
        }
        let builder = self
            .builder
            .take()
            .expect("builder exists after the p line");
        let dropped = builder.dropped();
        let hint = self.hint;
        // Without a hint the arcs' offsets are counted as the graph is built, and what the
        // grid inference asks of them is answered there (the counts are gone by the peak).
        let tb = std::time::Instant::now();
        let (csr, offsets) = match hint {
            Some(_) => (builder.build(), None),
            None => match builder.build_counting_offsets(|counts, total| {
                infer::OffsetPlan::of(counts, total, counts.len())
            }) {
                Ok((g, o)) => (Ok(g), Some(o)),
                Err(e) => (Err(e), None),
            },
        };
        crate::phases::mark("build: total", tb);
        let ti = std::time::Instant::now();
        let csr = csr.map_err(|e| self.err(e.to_string()))?;
        let (network, layout) = match hint {
            Some((dims, is_3d)) => {
                let fits = source_id == 1
                    && sink_id == 2
                    && dims
                        .iter()
                        .try_fold(1u64, |n, &x| n.checked_mul(x as u64))
                        .and_then(|n| n.checked_add(2))
                        == Some(p.nodes);
                match fits.then(|| grid_of(&csr, dims, is_3d)).flatten() {
                    Some(g) => {
                        let connectivity = g.connectivity();
                        let layout = Layout::Grid {
                            dims,
                            connectivity,
                            from_hint: true,
                        };
                        (Network::Grid(g), layout)
                    }
                    None => {
                        let [w, h, d] = dims;
                        let size = if is_3d {
                            format!("{w} {h} {d}")
                        } else {
                            format!("{w} {h}")
                        };
                        let why = format!(
                            "the hint 'c regulargrid {size}' does not match the file's layout \
                             (source 1, sink 2, N = pixels + 2) or arcs"
                        );
                        (Network::Csr(csr), Layout::General(why))
                    }
                }
            }
            None => infer::infer_grid(
                csr,
                offsets.expect("counted without a hint"),
                source_id,
                sink_id,
                p.nodes,
            ),
        };
        crate::phases::mark("grid inference", ti);
        Ok(MaxInstance {
            name: self.file.to_string(),
            member: None,
            network,
            source_id,
            sink_id,
            declared_nodes: p.nodes,
            declared_arcs: p.arcs,
            expected_flow: None,
            grid_hint: hint.map(|(d, _)| d),
            dropped_arcs: dropped,
            paired_arcs: self.paired,
            layout,
        })
    }
}

/// Reads a DIMACS max-flow problem from `r`; `name` is the file name used in errors.
///
/// See the [module documentation](super) for the format and an example.
pub fn read_max<R: BufRead>(r: R, name: &str) -> Result<MaxInstance> {
    read_max_with(r, name, &ReadOptions::default())
}

/// [`read_max`] with options: the progress receiver is advanced by the bytes read from `r` (no
/// total is given: a stream has no known size).
pub fn read_max_with<R: BufRead>(r: R, name: &str, opts: &ReadOptions) -> Result<MaxInstance> {
    let src = ReadProgress::new(r, opts.progress.clone());
    parse_max(src, name, "input", None)
}

/// Bytes of text parsed per batch at most: read, split at line ends, pre-parsed in parallel,
/// applied in order. Large enough to keep every core busy, small enough to keep memory flat.
const BATCH: usize = 32 << 20;

/// The first batch, which holds the problem line of any file segcut writes; later batches are
/// sized from it by [`batch_for`].
const FIRST_BATCH: usize = 4 << 20;

/// The batch size for a problem of `nodes` and `arcs`: about 1/64 of what its graph takes in
/// memory at the least (12 bytes a node, 8 an arc line), within 4 to 32 MiB, so that the three
/// batches in flight and their pre-parsed arcs stay a small part of the peak of a large graph.
/// Not below 4 MiB: each batch costs a few rounds of work handed to every core, and at 1 MiB
/// (a 90 MB file of a 25 MB graph) those rounds held a 16-core load near 1.5 GB/s where the
/// 6 MiB batches of a 4K graph reached 2.7 GB/s.
fn batch_for(nodes: u64, arcs: u64) -> usize {
    let graph = nodes
        .saturating_mul(12)
        .saturating_add(arcs.saturating_mul(8));
    (graph / 64).clamp(FIRST_BATCH as u64, BATCH as u64) as usize
}

/// Bytes asked of the source per `read`, so that progress moves smoothly.
const READ_SIZE: usize = 4 << 20;

/// A line a worker left to the serial parser (the problem, node and hint lines, and anything
/// unusual): it comes after the first `arcs_before` fast arcs of its piece.
#[derive(Clone, Copy)]
struct Special {
    arcs_before: usize,
    line: u32,
    start: usize,
    end: usize,
}

/// Special lines recorded per piece at most: past them the worker stops and the serial parser
/// reads the rest of the piece line by line. Blank and comment lines are only counted, so a
/// file of short odd lines costs no memory per line (a `.max.gz` of 40 Mi newlines once took
/// 1.6 GB here).
const MAX_SPECIALS: usize = 256;

/// A piece of a batch, pre-parsed.
struct Piece {
    from: usize,
    to: usize,
    arcs: Vec<FastArc>,
    specials: Vec<Special>,
    /// Lines pre-parsed (all of the piece's unless `rest`).
    lines: u64,
    /// Where the worker stopped, if it did: the serial parser reads on from this byte.
    rest: Option<usize>,
    /// The piece's scan for [`MaxParser::apply_general`], made by the worker that pre-parsed
    /// it (while its arcs are in that core's cache, and without another round of work on
    /// every core) where the parser's state allowed it when the batch came.
    scan: Option<GeneralScan>,
}

/// What a worker makes of one line.
enum Kind {
    Arc(u32, u32, Cap),
    /// Blank lines, and comments that are not a grid hint.
    Skip,
    Special,
}

/// `a`, blanks, three plain numbers separated by blanks, trailing white space: the form of
/// nearly every line of a large file, read without the tokenizer.
#[inline]
fn fast_arc(line: &[u8]) -> Option<(u32, u32, Cap)> {
    if line.first() != Some(&b'a') {
        return None;
    }
    let mut i = 1;
    let mut nums = [0u64; 3];
    for n in nums.iter_mut() {
        let sep = i;
        while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        let digits = i;
        let mut v = 0u64;
        while i < line.len() {
            let d = line[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Wrapping: a longer number is read whole before the length test below turns it
            // away, and its digits must not trip the overflow check of a debug build.
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        // 18 digits cannot overflow; longer numbers take the careful path.
        if digits == sep || i == digits || i - digits > 18 {
            return None;
        }
        *n = v;
    }
    if !line[i..].iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    arc_numbers(nums)
}

/// An arc line's numbers as ids and a capacity, where they fit.
#[inline]
fn arc_numbers([u, v, c]: [u64; 3]) -> Option<(u32, u32, Cap)> {
    Some((
        u32::try_from(u).ok()?,
        u32::try_from(v).ok()?,
        Cap::try_from(c).ok()?,
    ))
}

/// The line at `text[pos..]` when it is `a U V CAP` with single spaces and a `\n` right
/// after the capacity (what segcut and the Waterloo files write), with the position of that
/// `\n`: read in one pass, without first looking for the line's end. `None` for any other
/// line (a tab, a long number, trailing blanks, the last line without `\n`), which
/// [`classify`] then reads as before.
#[inline]
fn arc_line_at(text: &[u8], pos: usize) -> Option<(u32, u32, Cap, usize)> {
    let t = text.get(pos..)?;
    if t.first() != Some(&b'a') {
        return None;
    }
    let mut i = 1;
    let mut nums = [0u64; 3];
    for n in nums.iter_mut() {
        if t.get(i) != Some(&b' ') {
            return None;
        }
        i += 1;
        let digits = i;
        let mut v = 0u64;
        while let Some(&c) = t.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Wrapping, as in `fast_arc`: longer numbers are turned away below.
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        // At most 10 digits (u32's): longer numbers take the careful path.
        if i == digits || i - digits > 10 {
            return None;
        }
        *n = v;
    }
    if t.get(i) != Some(&b'\n') {
        return None;
    }
    let (u, v, c) = arc_numbers(nums)?;
    Some((u, v, c, pos + i))
}

#[inline]
fn classify(line: &[u8]) -> Kind {
    if let Some((u, v, c)) = fast_arc(line) {
        return Kind::Arc(u, v, c);
    }
    if line.len() > MAX_LINE {
        return Kind::Special;
    }
    let mut tok = Tokens::new(line);
    match tok.next() {
        None => Kind::Skip,
        Some(b"c") if tok.next() == Some(b"regulargrid".as_slice()) => Kind::Special,
        Some([b'c', ..]) => Kind::Skip,
        Some(b"a") => match preparse_arc(line) {
            Some((u, v, c)) => match (u32::try_from(u), u32::try_from(v)) {
                (Ok(u), Ok(v)) => Kind::Arc(u, v, c),
                _ => Kind::Special,
            },
            None => Kind::Special,
        },
        Some(_) => Kind::Special,
    }
}

/// The fast path of an arc line with other blanks (tabs, leading spaces): `a`, three plain
/// numbers, nothing else; `None` for any other line (the serial parser handles it and its
/// errors).
#[inline]
fn preparse_arc(line: &[u8]) -> Option<(u64, u64, Cap)> {
    let mut tok = Tokens::new(line);
    if tok.next()? != b"a" {
        return None;
    }
    let u = plain_number(tok.next()?)?;
    let v = plain_number(tok.next()?)?;
    let c = plain_number(tok.next()?)?;
    if tok.next().is_some() || c > Cap::MAX as u64 {
        return None;
    }
    Some((u, v, c as Cap))
}

/// The lines of `text[from..to]` (`from` at a line start), pre-parsed; the arcs go into `arcs`
/// (emptied first: a buffer of an earlier batch, so that its pages are not had anew).
fn preparse(text: &[u8], from: usize, to: usize, mut arcs: Vec<FastArc>) -> Piece {
    arcs.clear();
    arcs.reserve((to - from) / 20);
    let mut out = Piece {
        from,
        to,
        arcs,
        specials: Vec::new(),
        lines: 0,
        rest: None,
        scan: None,
    };
    let mut pos = from;
    let mut line = 0u32;
    let piece = &text[..to];
    while pos < to {
        // Nearly every line: read in one pass that also finds its end.
        if let Some((u, v, cap, end)) = arc_line_at(piece, pos) {
            out.arcs.push(FastArc { u, v, cap, line });
            line += 1;
            pos = end + 1;
            continue;
        }
        let end = memchr::memchr(b'\n', &text[pos..to]).map_or(to, |i| pos + i);
        match classify(&text[pos..end]) {
            Kind::Arc(u, v, cap) => out.arcs.push(FastArc { u, v, cap, line }),
            Kind::Skip => {}
            Kind::Special => {
                if out.specials.len() == MAX_SPECIALS {
                    out.rest = Some(pos);
                    break;
                }
                out.specials.push(Special {
                    arcs_before: out.arcs.len(),
                    line,
                    start: pos,
                    end,
                });
            }
        }
        line += 1;
        pos = end + 1;
    }
    out.lines = u64::from(line);
    out
}

/// Line `k` (from 0) of `text`, without its `\n`.
fn nth_line(text: &[u8], k: u32) -> &[u8] {
    let line = text.split(|&b| b == b'\n').nth(k as usize);
    line.expect("the line was pre-parsed from this text")
}

/// Splits `text` (whole lines) into about `parts` pieces at line starts.
fn split_at_lines(text: &[u8], parts: usize) -> Vec<(usize, usize)> {
    let mut cuts = vec![0];
    for k in 1..parts {
        let at = (text.len() * k / parts).max(*cuts.last().unwrap_or(&0));
        match memchr::memchr(b'\n', &text[at..]) {
            Some(i) if at + i + 1 < text.len() => cuts.push(at + i + 1),
            _ => break,
        }
    }
    cuts.dedup();
    let mut ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    ranges.push((*cuts.last().unwrap_or(&0), text.len()));
    ranges
}

/// Parses a `.max` stream; `stream` names it in read errors (`gzip data`, ...).
///
/// This thread reads (and decompresses) the text in batches of [`BATCH`] bytes cut at a line
/// end and hands them to a parser thread, so that reading overlaps parsing. The parser splits
/// each batch into pieces that worker threads pre-parse (line boundaries, and the numbers of
/// plain arc lines: most of the work), then applies them to the parser in file order, so errors
/// name the same line and say the same as a serial read.
///
/// Where `reopen` can give the same text again, the arcs of a file in segcut's grid layout go
/// straight into the grid's arrays ([`super::place`]); should the file turn out not to fit,
/// it is read again from `reopen` the general way.
pub(super) fn parse_max<R: Read>(
    src: R,
    name: &str,
    stream: &str,
    reopen: Option<&dyn Fn() -> Result<Box<dyn Read>>>,
) -> Result<MaxInstance> {
    match parse_max_in_batches(src, name, stream, None, reopen.is_some(), true) {
        Ok(inst) => Ok(inst),
        Err(Fail::Error(e)) => Err(e),
        Err(Fail::Reread) => {
            let again = reopen.expect("a reread is asked for only where it can be had")()?;
            match parse_max_in_batches(again, name, stream, None, false, true) {
                Ok(inst) => Ok(inst),
                Err(Fail::Error(e)) => Err(e),
                Err(Fail::Reread) => unreachable!("the general path never asks for a reread"),
            }
        }
    }
}

/// [`parse_max`] of a text already in memory (a `.gz` file inflated whole): cut into the
/// batches the reading thread would cut, each parsed in place with no copy, so that the graph
/// and the errors are the stream's. `Ok(None)`: the grid placement asked for a reread and the
/// text was already let go (before the build, where the peak is): the caller streams the file.
pub(super) fn parse_max_text(text: Vec<u8>, name: &str) -> Result<Option<MaxInstance>> {
    let size = AtomicUsize::new(FIRST_BATCH);
    let mut parser = BatchParser::new(name, "input", true, Some(&size));
    let mut at = 0;
    let failed = loop {
        let batch = size.load(Relaxed);
        let mut end = (at + batch).min(text.len());
        // As `read_batches` cuts: at the last line end of a batch, more for one long line.
        let cut = loop {
            if end == text.len() {
                break Ok(end);
            }
            match memchr::memrchr(b'\n', &text[at..end]) {
                Some(i) => break Ok(at + i + 1),
                None if end - at > MAX_LINE => break Err(()),
                None => end = (end + batch).min(text.len()),
            }
        };
        let Ok(cut) = cut else {
            let p = &parser.p;
            break Some(Fail::Error(line_error(
                p.file,
                p.line + 1,
                LineError::TooLong,
                "input",
            )));
        };
        if let Err(e) = parser.text(&text[at..cut]) {
            break Some(e);
        }
        if cut == text.len() {
            break None;
        }
        at = cut;
    };
    drop(text);
    match failed.map_or_else(|| parser.finish(), Err) {
        Ok(inst) => Ok(Some(inst)),
        Err(Fail::Error(e)) => Err(e),
        Err(Fail::Reread) => Ok(None),
    }
}

/// What the reading thread sends the parser.
enum Msg {
    /// A buffer whose first `len` bytes are whole lines (or the end of the stream).
    Text(Vec<u8>, usize),
    /// A read error, after as many newlines as given past the last text sent.
    ReadError(io::Error, u64),
    /// No line end within [`MAX_LINE`] bytes.
    TooLong,
}

/// [`parse_max`] with batches of `batch` bytes (tests cut files at every line; `None`: sized
/// from the problem line), placing the arcs of a grid straight into it where `grid` says so.
fn parse_max_in_batches<R: Read>(
    src: R,
    name: &str,
    stream: &str,
    batch: Option<usize>,
    grid: bool,
    parallel_apply: bool,
) -> Result<MaxInstance, Fail> {
    let size = AtomicUsize::new(batch.unwrap_or(FIRST_BATCH).max(1));
    let adapt = batch.is_none().then_some(&size);
    if rayon::current_thread_index().is_some() {
        // Called from a pool task: a thread of ours waiting on the pool could deadlock it if
        // every pool thread were such a caller, so read and parse in turn on this thread.
        let spare = std::cell::RefCell::new(None);
        let mut parser = BatchParser::new(name, stream, grid, adapt);
        parser.parallel_apply = parallel_apply;
        let mut failed = None;
        read_batches(
            src,
            &size,
            |msg| match parser.handle(msg) {
                Ok(buf) => {
                    *spare.borrow_mut() = buf;
                    true
                }
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
            || spare.borrow_mut().take(),
        );
        if let Some(e) = failed {
            return Err(e);
        }
        // Not held through the graph's build, where the peak is.
        drop(spare.borrow_mut().take());
        return parser.finish();
    }
    std::thread::scope(|scope| {
        // One batch queued while one is parsed and one is read: memory stays at three batches.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(1);
        let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let parser = scope.spawn(move || {
            let work = move || {
                let mut parser = BatchParser::new(name, stream, grid, adapt);
                parser.parallel_apply = parallel_apply;
                let mut waited = std::time::Instant::now();
                for msg in rx {
                    crate::phases::mark("parser: waiting for text", waited);
                    let r = parser.handle(msg)?;
                    waited = std::time::Instant::now();
                    if let Some(buf) = r {
                        let _ = back_tx.send(buf);
                    }
                }
                let t = std::time::Instant::now();
                let r = parser.finish();
                crate::phases::mark("end of text to graph", t);
                r
            };
            match parse_pool(stream) {
                Some(pool) => pool.install(work),
                None => work(),
            }
        });
        read_batches(
            src,
            &size,
            |msg| {
                let t = std::time::Instant::now();
                let sent = tx.send(msg).is_ok();
                crate::phases::mark("reader: waiting for the parser", t);
                sent
            },
            || back_rx.try_recv().ok(),
        );
        drop(tx);
        // The buffers handed back from here on are let go at once: held until the parser
        // ends, two or three batches of text (12 MiB for most files) stayed alive through the
        // graph's build, where the peak is.
        drop(back_rx);
        parser
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// For compressed input, a pool two threads smaller than rayon's for the parse, so that the
/// decompressing thread and the parser's own keep a core each: one inflate thread is what a
/// `.max.gz` load waits for, and parse workers crowding it out slow the whole load. `None`
/// (parse on rayon's pool) for plain text, on small machines, or where no pool can be made.
/// Made once per process and kept: starting its threads anew for every file was a fixed cost
/// of each compressed load (a batch of many small files pays it once).
fn parse_pool(stream: &str) -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    if stream == "input" {
        return None;
    }
    POOL.get_or_init(|| {
        let threads = rayon::current_num_threads();
        if threads < 6 {
            return None;
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads - 2)
            .thread_name(|k| format!("segcut-parse-{k}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Reads `src` into batches of whole lines and sends them until the end, an error, or the
/// parser hangs up (`send` says false: it found an error). Used buffers come back through
/// `back` to be reused.
fn read_batches<R: Read>(
    mut src: R,
    batch: &AtomicUsize,
    mut send: impl FnMut(Msg) -> bool,
    mut back: impl FnMut() -> Option<Vec<u8>>,
) {
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buf = back().unwrap_or_default();
        let mut len = carry.len();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf[..len].copy_from_slice(&carry);
        let batch = batch.load(Relaxed);
        if buf.capacity() > 2 * (len + batch) {
            // A larger buffer of an earlier batch size: give its memory back.
            buf = carry.clone();
        }
        let mut target = len + batch;
        let mut eof = false;
        loop {
            while len < target {
                let want = (len + READ_SIZE).min(target);
                if buf.len() < want {
                    buf.resize(want, 0);
                }
                let t = std::time::Instant::now();
                let got = src.read(&mut buf[len..want]);
                crate::phases::mark("reader: reading (and decompressing)", t);
                match got {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => len += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        // Reported at the line being read, as a serial reader would.
                        let lines = memchr::memchr_iter(b'\n', &buf[..len]).count() as u64;
                        send(Msg::ReadError(e, lines));
                        return;
                    }
                }
            }
            if eof {
                send(Msg::Text(buf, len));
                return;
            }
            match memchr::memrchr(b'\n', &buf[..len]) {
                Some(i) => {
                    carry.clear();
                    carry.extend_from_slice(&buf[i + 1..len]);
                    if !send(Msg::Text(buf, i + 1)) {
                        return;
                    }
                    break;
                }
                None if len > MAX_LINE => {
                    send(Msg::TooLong);
                    return;
                }
                // One long partial line: read more into the same buffer.
                None => target = len + batch,
            }
        }
    }
}

/// The parser's side of [`parse_max_in_batches`]: batches in, applied in order.
struct BatchParser<'a> {
    p: MaxParser<'a>,
    stream: &'a str,
    parts: usize,
    /// The reader's batch size, set from the problem line once it is known.
    adapt: Option<&'a AtomicUsize>,
    /// Whether runs of plain arc lines are applied on every core (tests compare with the
    /// serial apply).
    parallel_apply: bool,
    /// The pieces' arc buffers of the last batch, for the next: allocated and freed each batch,
    /// they were had from the system anew each time (a page fault per 4 KiB, half of a general
    /// file's faults on the dev VM).
    spare_arcs: Vec<Vec<FastArc>>,
}

impl<'a> BatchParser<'a> {
    fn new(name: &'a str, stream: &'a str, grid: bool, adapt: Option<&'a AtomicUsize>) -> Self {
        BatchParser {
            p: MaxParser {
                file: name,
                line: 0,
                problem: None,
                builder: None,
                source: None,
                sink: None,
                arcs_seen: 0,
                held: None,
                early: Vec::new(),
                hint: None,
                paired: 0,
                grid: if grid { GridMode::Maybe } else { GridMode::Off },
                placed: None,
                width_scan: 0,
                width_seen: None,
                width_count: 0,
                spare_terminals: Vec::new(),
            },
            stream,
            parts: 4 * rayon::current_num_threads().max(1),
            adapt,
            parallel_apply: true,
            spare_arcs: Vec::new(),
        }
    }

    /// The instance, once every message is parsed; the spare arc buffers are let go first, so
    /// that they are not held through the graph's build, where the peak is.
    fn finish(self) -> Result<MaxInstance, Fail> {
        let BatchParser { p, spare_arcs, .. } = self;
        drop(spare_arcs);
        p.finish()
    }

    /// Parses one message; gives back the text's buffer for reuse.
    fn handle(&mut self, msg: Msg) -> Result<Option<Vec<u8>>, Fail> {
        let (p, stream) = (&mut self.p, self.stream);
        match msg {
            Msg::Text(buf, len) => {
                self.text(&buf[..len])?;
                Ok(Some(buf))
            }
            Msg::ReadError(e, lines) => Err(Fail::Error(line_error(
                p.file,
                p.line + 1 + lines,
                LineError::Io(e),
                stream,
            ))),
            Msg::TooLong => Err(Fail::Error(line_error(
                p.file,
                p.line + 1,
                LineError::TooLong,
                stream,
            ))),
        }
    }

    /// Parses a batch of whole lines (or the end of the text).
    fn text(&mut self, text: &[u8]) -> Result<(), Fail> {
        use rayon::prelude::*;
        let (p, stream) = (&mut self.p, self.stream);
        {
            {
                let ranges = split_at_lines(text, self.parts);
                let ctx = if self.parallel_apply {
                    p.scan_context()
                } else {
                    None
                };
                let spare = &mut self.spare_arcs;
                let spare_terminals = &mut p.spare_terminals;
                let bufs: Vec<(Vec<FastArc>, Option<Vec<TerminalArc>>)> = ranges
                    .iter()
                    .map(|_| {
                        let terminals = ctx.map(|_| spare_terminals.pop().unwrap_or_default());
                        (spare.pop().unwrap_or_default(), terminals)
                    })
                    .collect();
                let tp = std::time::Instant::now();
                let mut pieces: Vec<Piece> = ranges
                    .into_par_iter()
                    .zip(bufs)
                    .map(|((a, b), (buf, terminals))| {
                        let mut pc = preparse(text, a, b, buf);
                        if let (Some((nodes, map)), Some(t)) = (ctx, terminals) {
                            if pc.specials.is_empty() && pc.rest.is_none() {
                                pc.scan = Some(GeneralScan::of(&pc.arcs, nodes, map, t));
                            }
                        }
                        pc
                    })
                    .collect();
                crate::phases::mark("pre-parse", tp);
                let ta = std::time::Instant::now();
                let mut k = 0;
                while k < pieces.len() {
                    p.try_grid();
                    if matches!(p.grid, GridMode::On(..)) {
                        p.apply_grid(&pieces[k..])?;
                        break;
                    }
                    // A run of pieces of plain arc lines is applied on every core.
                    let run = pieces[k..]
                        .iter()
                        .take_while(|pc| pc.specials.is_empty() && pc.rest.is_none())
                        .count();
                    if run > 0 && self.parallel_apply && p.apply_general(&mut pieces[k..k + run])? {
                        k += run;
                        continue;
                    }
                    p.apply_piece(text, &pieces[k], stream)?;
                    k += 1;
                }
                crate::phases::mark("apply", ta);
                self.spare_arcs.extend(pieces.into_iter().map(|pc| pc.arcs));
                if let (Some(size), Some(problem)) = (self.adapt, p.problem) {
                    size.store(batch_for(problem.nodes, problem.arcs), Relaxed);
                    self.adapt = None;
                }
                Ok(())
            }
        }
    }
}

impl MaxParser<'_> {
    /// Applies a pre-parsed piece of `text` in file order.
    fn apply_piece(&mut self, text: &[u8], piece: &Piece, stream: &str) -> Result<()> {
        let base = self.line;
        let mut specials = piece.specials.iter().peekable();
        for (k, a) in piece.arcs.iter().enumerate() {
            while let Some(s) = specials.next_if(|s| s.arcs_before == k) {
                self.line = base + u64::from(s.line) + 1;
                self.special(&text[s.start..s.end], stream)?;
            }
            self.line = base + u64::from(a.line) + 1;
            let (u, v) = (u64::from(a.u), u64::from(a.v));
            match self.problem {
                Some(p) if (1..=p.nodes).contains(&u) && (1..=p.nodes).contains(&v) => {
                    self.arc(p, u, v, a.cap)?
                }
                // Out of range, or no problem line yet: the serial parser says which.
                _ => self.line(nth_line(&text[piece.from..piece.to], a.line))?,
            }
        }
        for s in specials {
            self.line = base + u64::from(s.line) + 1;
            self.special(&text[s.start..s.end], stream)?;
        }
        self.line = base + piece.lines;
        if let Some(mut pos) = piece.rest {
            while pos < piece.to {
                let end = memchr::memchr(b'\n', &text[pos..piece.to]).map_or(piece.to, |i| pos + i);
                self.line += 1;
                self.special(&text[pos..end], stream)?;
                pos = end + 1;
            }
        }
        Ok(())
    }

    /// A line for the serial parser, refused if it is too long.
    fn special(&mut self, raw: &[u8], stream: &str) -> Result<()> {
        if raw.len() > MAX_LINE {
            return Err(line_error(self.file, self.line, LineError::TooLong, stream));
        }
        self.line(raw)
    }
}

/// The message for a node whose summed source (or sink) capacity passes `Cap::MAX`.
fn terminal_overflow(is_source: bool, id: u64) -> String {
    if is_source {
        format!(
            "the source arcs into node {id} add up to more than {}, the largest supported \
             capacity",
            Cap::MAX
        )
    } else {
        format!(
            "the sink arcs out of node {id} add up to more than {}, the largest supported \
             capacity",
            Cap::MAX
        )
    }
}

/// File ids to the builder's vertices, both terminals known (as [`MaxParser::vertex`]).
#[derive(Clone, Copy)]
struct VertexMap {
    source: u64,
    sink: u64,
}

impl VertexMap {
    fn new(source: u64, sink: u64) -> Self {
        VertexMap { source, sink }
    }

    #[inline]
    fn of(self, id: u32) -> Vertex {
        let id = u64::from(id);
        if id == self.source {
            Vertex::Source
        } else if id == self.sink {
            Vertex::Sink
        } else {
            let k = id - 1 - u64::from(id > self.source) - u64::from(id > self.sink);
            Vertex::Node(k as u32)
        }
    }
}

/// The reverse-arc pairing as the serial apply does it, one arc at a time: the pairs made, of
/// them those with their reverse, the arc held waiting for its reverse (by its index), and
/// whether every pair's capacities fit.
#[derive(Clone, Copy)]
struct ChainState {
    pairs: usize,
    paired: u64,
    held: Option<(usize, Link)>,
    fits: bool,
}

impl ChainState {
    const START: ChainState = ChainState {
        pairs: 0,
        paired: 0,
        held: None,
        fits: true,
    };

    /// Takes arc `i` (`link`: `None` unless it joins two distinct nodes); `put` gets each pair
    /// made (an arc and its reverse's capacity, or 0). False where the pair made does not fit.
    #[inline]
    fn step(&mut self, i: usize, link: Option<Link>, put: &mut impl FnMut(Link, Cap)) -> bool {
        let Some(link) = link else {
            if let Some((_, h)) = self.held.take() {
                self.pairs += 1;
                put(h, 0);
            }
            return true;
        };
        if let Some((_, h)) = self.held.take() {
            self.pairs += 1;
            if link.pairs_with(h) {
                let fits = link.pair_fits(h);
                self.fits &= fits;
                self.paired += 1;
                put(h, link.cap);
                return fits;
            }
            put(h, 0);
        }
        self.held = Some((i, link));
        true
    }

    fn chain(self) -> GeneralChain {
        GeneralChain {
            pairs: self.pairs,
            paired: self.paired,
            held: self.held.map(|(i, _)| i),
            fits: self.fits,
        }
    }
}

/// The link an arc is to the pairing: `Some` where it joins two distinct nodes.
#[inline]
fn node_link(a: &FastArc, map: VertexMap) -> Option<Link> {
    match (map.of(a.u), map.of(a.v)) {
        (Vertex::Node(u), Vertex::Node(v)) if u != v => Some(Link { u, v, cap: a.cap }),
        _ => None,
    }
}

/// The reverse-arc pairing over a run of arcs with nothing held at its start, as the serial
/// apply does it: `put` gets each pair in order (an arc and its reverse's capacity, or 0 when
/// the next arc was not its reverse). Gives the pairing's outcome, the arc left held being an
/// index into `arcs`.
#[inline]
fn pair_chain(arcs: &[FastArc], map: VertexMap, mut put: impl FnMut(Link, Cap)) -> GeneralChain {
    let mut state = ChainState::START;
    for (i, a) in arcs.iter().enumerate() {
        state.step(i, node_link(a, map), &mut put);
    }
    state.chain()
}

/// What [`pair_chain`] found over a piece from one start.
#[derive(Debug, PartialEq)]
struct GeneralChain {
    /// Pairs written.
    pairs: usize,
    /// Of them, arcs paired with their reverse.
    paired: u64,
    /// The arc held at the end, by its index in the piece.
    held: Option<usize>,
    /// Every pair's two capacities fit one `Cap`.
    fits: bool,
}

/// A terminal arc of a piece: `s → node` or `node → t`.
struct TerminalArc {
    node: u32,
    cap: Cap,
    to_sink: bool,
    /// The other end's file id (for the message).
    id: u32,
    line: u32,
}

/// One piece of plain arc lines, scanned for [`MaxParser::apply_general`].
struct GeneralScan {
    in_range: bool,
    fresh: GeneralChain,
    skip_first: GeneralChain,
    /// The first arc, when it joins two distinct nodes.
    first: Option<Link>,
    terminals: Vec<TerminalArc>,
    constant: i64,
    dropped: u64,
}

impl GeneralScan {
    /// The scan of `arcs`; its terminal arcs go into `terminals` (emptied first: a buffer of
    /// an earlier batch).
    fn of(arcs: &[FastArc], nodes: u64, map: VertexMap, mut terminals: Vec<TerminalArc>) -> Self {
        terminals.clear();
        let mut scan = GeneralScan {
            in_range: true,
            fresh: ChainState::START.chain(),
            skip_first: ChainState::START.chain(),
            first: None,
            terminals,
            constant: 0,
            dropped: 0,
        };
        // One pass: ids, terminal arcs and both pairings. The pairing that skips the first
        // arc is followed only until it holds what the one from the first arc holds (after an
        // arc or two): from there the two go alike, and it takes the rest from the other.
        let mut fresh = ChainState::START;
        let mut skip = ChainState::START;
        let mut skip_first = false;
        // The fresh pairing's counts where the two met, and whether its pairs after fit.
        let mut met: Option<(usize, u64)> = None;
        let mut fits_after = true;
        let mut none = |_: Link, _: Cap| {};
        for (i, a) in arcs.iter().enumerate() {
            if !((1..=nodes).contains(&u64::from(a.u)) && (1..=nodes).contains(&u64::from(a.v))) {
                scan.in_range = false;
                scan.terminals.clear();
                return scan;
            }
            let link = match (map.of(a.u), map.of(a.v)) {
                (Vertex::Source, Vertex::Node(v)) => {
                    scan.terminals.push(TerminalArc {
                        node: v,
                        cap: a.cap,
                        to_sink: false,
                        id: a.v,
                        line: a.line,
                    });
                    None
                }
                (Vertex::Node(u), Vertex::Sink) => {
                    scan.terminals.push(TerminalArc {
                        node: u,
                        cap: a.cap,
                        to_sink: true,
                        id: a.u,
                        line: a.line,
                    });
                    None
                }
                (Vertex::Source, Vertex::Sink) => {
                    scan.constant += i64::from(a.cap);
                    None
                }
                (Vertex::Node(u), Vertex::Node(v)) if u != v => Some(Link { u, v, cap: a.cap }),
                _ => {
                    scan.dropped += 1; // self loops, into the source, out of the sink
                    None
                }
            };
            if i == 0 {
                scan.first = link;
                skip_first = link.is_some();
            }
            let fits = fresh.step(i, link, &mut none);
            if met.is_some() {
                fits_after &= fits;
            } else if skip_first && i > 0 {
                skip.step(i, link, &mut none);
                if skip.held.map(|h| h.0) == fresh.held.map(|h| h.0) {
                    met = Some((fresh.pairs, fresh.paired));
                }
            }
        }
        scan.fresh = fresh.chain();
        if skip_first {
            scan.skip_first = match met {
                Some((pairs, paired)) => GeneralChain {
                    pairs: skip.pairs + (fresh.pairs - pairs),
                    paired: skip.paired + (fresh.paired - paired),
                    held: scan.fresh.held,
                    fits: skip.fits && fits_after,
                },
                None => skip.chain(),
            };
        }
        scan
    }
}

/// Adds the terminal arcs of `pieces` (first line `line0`) to the sums, on every core: each
/// thread owns a range of nodes and adds, in file order, the arcs of its nodes. Gives the
/// first line (and which sum, and the node's file id) where a sum passes `Cap::MAX`, as the
/// serial apply would meet it.
fn add_terminals(
    source: &mut [Cap],
    sink: &mut [Cap],
    pieces: &[Piece],
    scans: &[GeneralScan],
    line0: u64,
) -> Option<(u64, bool, u64)> {
    use rayon::prelude::*;
    let n = source.len();
    let owners = rayon::current_num_threads().clamp(1, 64);
    let step = n.div_ceil(owners).max(1);
    let mut starts = Vec::with_capacity(pieces.len());
    let mut line = line0;
    for pc in pieces {
        starts.push(line);
        line += pc.lines;
    }
    source
        .par_chunks_mut(step)
        .zip(sink.par_chunks_mut(step))
        .enumerate()
        .filter_map(|(k, (src, snk))| {
            let lo = k * step;
            let hi = lo + src.len();
            for (sc, &start) in scans.iter().zip(&starts) {
                for ta in &sc.terminals {
                    let v = ta.node as usize;
                    if !(lo..hi).contains(&v) {
                        continue;
                    }
                    let sum = if ta.to_sink {
                        &mut snk[v - lo]
                    } else {
                        &mut src[v - lo]
                    };
                    let total = i64::from(*sum) + i64::from(ta.cap);
                    if total > i64::from(Cap::MAX) {
                        return Some((
                            start + u64::from(ta.line) + 1,
                            !ta.to_sink,
                            u64::from(ta.id),
                        ));
                    }
                    *sum = total as Cap;
                }
            }
            None
        })
        .min_by_key(|&(line, _, _)| line)
}

/// The error for line `line` of `file`, which could not be read.
fn line_error(file: &str, line: u64, e: LineError, stream: &str) -> Error {
    let msg = match e {
        LineError::TooLong => format!("line longer than {MAX_LINE} bytes: is this a text file?"),
        // Escaped: decoders and the tar reader may quote the bytes they choked on.
        LineError::Io(e) if stream == "input" => {
            format!("read error: {}", escape_text(&e.to_string()))
        }
        LineError::Io(e) => format!(
            "corrupt or truncated {stream}: {}",
            escape_text(&e.to_string())
        ),
    };
    Error::Parse {
        file: file.to_string(),
        line,
        msg,
    }
}

/// Reads a `.sol` file's flow value: `c` comment lines, then `s <flow>` (DIMACS `f` flow lines
/// are allowed and ignored).
///
/// ```
/// let flow = segcut::io::dimacs::read_sol("c solved\ns 50\n".as_bytes(), "x.sol").unwrap();
/// assert_eq!(flow, 50);
/// ```
pub fn read_sol<R: BufRead>(r: R, name: &str) -> Result<i64> {
    parse_sol(r, name, "input")
}

pub(super) fn parse_sol<R: Read>(src: R, name: &str, stream: &str) -> Result<i64> {
    let mut lines = Lines::new(src);
    let err = |line: u64, msg: String| Error::Parse {
        file: name.to_string(),
        line,
        msg,
    };
    let mut flow: Option<(i64, u64)> = None;
    loop {
        let range = match lines.next_line() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => return Err(line_error(name, lines.line, e, stream)),
        };
        let line = lines.line;
        let mut tok = Tokens::new(&lines.bytes()[range]);
        match tok.next() {
            None | Some([b'c', ..]) | Some(b"f") => {}
            Some(b"s") => {
                if let Some((_, first)) = flow {
                    return Err(err(
                        line,
                        format!("duplicate solution line (the first is on line {first})"),
                    ));
                }
                let Some(t) = tok.next() else {
                    return Err(err(line, "missing flow value: expected 's FLOW'".into()));
                };
                let value = match parse_u64(t) {
                    Ok(v) => i64::try_from(v)
                        .map_err(|_| err(line, format!("flow value {} is too large", show(t))))?,
                    Err(NumError::Negative) => {
                        return Err(err(line, format!("negative flow value {}", show(t))))
                    }
                    Err(NumError::TooLarge) => {
                        return Err(err(line, format!("flow value {} is too large", show(t))))
                    }
                    Err(NumError::NotNumber) => {
                        return Err(err(
                            line,
                            format!("flow value '{}' is not a number", show(t)),
                        ))
                    }
                };
                if let Some(extra) = tok.next() {
                    return Err(err(
                        line,
                        format!(
                            "unexpected extra token '{}': expected 's FLOW'",
                            show(extra)
                        ),
                    ));
                }
                flow = Some((value, line));
            }
            Some(t) => {
                return Err(err(
                    line,
                    format!(
                        "unknown line type '{}' in a solution file: expected c (comment) or \
                         s (solution value)",
                        show(t)
                    ),
                ))
            }
        }
    }
    flow.map(|(v, _)| v).ok_or_else(|| {
        err(
            lines.line,
            "no solution line 's FLOW' in the file".to_string(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{generate, InstanceSpec};
    use crate::rng::Rng;

    fn parse(text: &[u8], batch: usize) -> std::result::Result<String, String> {
        parse_with(text, batch, false).0
    }

    /// A read that applies every arc on the parser thread, in file order: what the parallel
    /// apply must match.
    fn parse_serial(text: &[u8], batch: usize) -> std::result::Result<String, String> {
        match parse_max_in_batches(text, "t.max", "input", Some(batch), false, false) {
            Ok(m) => Ok(format!("{:?}", m)),
            Err(Fail::Error(e)) => Err(e.to_string()),
            Err(Fail::Reread) => panic!("the general path asked for a reread"),
        }
    }

    /// A read with or without the grid placement, and whether it asked for a reread.
    fn parse_with(
        text: &[u8],
        batch: usize,
        grid: bool,
    ) -> (std::result::Result<String, String>, bool) {
        let show =
            |r: Result<MaxInstance>| r.map(|m| format!("{:?}", m)).map_err(|e| e.to_string());
        match parse_max_in_batches(text, "t.max", "input", Some(batch), grid, true) {
            Ok(m) => (show(Ok(m)), false),
            Err(Fail::Error(e)) => (show(Err(e)), false),
            Err(Fail::Reread) => {
                let again =
                    match parse_max_in_batches(text, "t.max", "input", Some(batch), false, true) {
                        Ok(m) => Ok(m),
                        Err(Fail::Error(e)) => Err(e),
                        Err(Fail::Reread) => panic!("the general path asked for a reread"),
                    };
                (show(again), true)
            }
        }
    }

    #[test]
    fn the_parse_pool_is_made_once() {
        // Asked from an 8-thread pool, so that the first call (if it is this one) makes a pool;
        // either way every later call must give that same pool.
        let eight = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        let ptr = |p: Option<&'static rayon::ThreadPool>| p.map(|p| p as *const _ as usize);
        let (a, b) =
            eight.install(|| (ptr(parse_pool("gzip data")), ptr(parse_pool("bzip2 data"))));
        assert_eq!(a, b);
        assert_eq!(ptr(parse_pool("gzip data")), a);
        assert!(
            parse_pool("input").is_none(),
            "plain text parses on rayon's pool"
        );
    }

    /// A generated file, then a few edits: blank lines, comments, CR, a corrupted token, no final
    /// newline.
    fn text(rng: &mut Rng, spec: &str) -> Vec<u8> {
        let net = generate(&spec.parse::<InstanceSpec>().unwrap()).unwrap();
        let mut out = Vec::new();
        super::super::write_max(&mut out, &net, &["batch test"]).unwrap();
        let mut lines: Vec<Vec<u8>> = out.split(|&b| b == b'\n').map(|l| l.to_vec()).collect();
        for _ in 0..rng.below(4) {
            let i = rng.below(lines.len() as u64) as usize;
            match rng.below(9) {
                0 => lines.insert(i, Vec::new()),
                1 => lines.insert(i, b"c a comment 1 2 3".to_vec()),
                2 => lines[i].push(b'\r'),
                3 => {
                    if let Some(b) = lines[i].iter_mut().rev().find(|b| b.is_ascii_digit()) {
                        *b = b'x';
                    }
                }
                4 => lines[i].extend_from_slice(b" 99999999999"),
                // Edits the grid placement must notice: a parallel arc (and one line too
                // many), capacities that overflow a cell or a pair, arcs out of order or across
                // the grid.
                5 => lines.insert(i, lines[i].clone()),
                6 => {
                    if lines[i].starts_with(b"a ") {
                        let mut t: Vec<&[u8]> = lines[i].split(|&b| b == b' ').collect();
                        t.truncate(3);
                        lines[i] = [t.join(&b' '), b" 2147483000".to_vec()].concat();
                    }
                }
                7 => {
                    let j = rng.below(lines.len() as u64) as usize;
                    lines.swap(i, j);
                }
                _ => {
                    if lines[i].starts_with(b"a ") {
                        let mut t: Vec<Vec<u8>> =
                            lines[i].split(|&b| b == b' ').map(|x| x.to_vec()).collect();
                        if t.len() > 2 {
                            t[2] = b"3".to_vec(); // node 1: across the grid, or a self loop
                        }
                        lines[i] = t.join(&b' ');
                    }
                }
            }
        }
        if rng.below(2) == 0 {
            // Without the hint: grids are then guessed from the first arcs and inferred.
            lines.retain(|l| !l.starts_with(b"c regulargrid"));
        }
        let mut t = lines.join(&b'\n');
        if rng.below(2) == 0 {
            while t.last() == Some(&b'\n') {
                t.pop();
            }
        }
        t
    }

    /// The one-pass read of an arc line takes only lines the careful read reads the same way,
    /// to the same numbers, and ends at the line's `\n`; every other line is left to it.
    #[test]
    fn arc_lines_read_in_one_pass_are_read_as_the_careful_read_reads_them() {
        let lines: &[&[u8]] = &[
            b"a 1 2 3\n",
            b"a 10 20 30\na 1 2 3\n",
            b"a 4294967295 4294967295 2147483647\n",
            b"a 0 0 0\n",
            b"a 0000000001 2 3\n",
            // Left to the careful read:
            b"a 1 2 3",
            b"a 1 2 3 \n",
            b"a 1 2 3\r\n",
            b"a\t1 2 3\n",
            b"a  1 2 3\n",
            b" a 1 2 3\n",
            b"a 1 2\n",
            b"a 1 2 3 4\n",
            b"a 1 2 x\n",
            b"a 1 2 -3\n",
            b"a 1 2 3x\n",
            b"a 4294967296 1 1\n",
            b"a 1 1 2147483648\n",
            b"a 00000000001 2 3\n",
            b"a 1 2 99999999999\n",
            b"a 1 2 \n",
            b"c 1 2 3\n",
            b"\n",
            b"a\n",
            b"",
        ];
        let mut fast = 0;
        for &l in lines {
            let end = memchr::memchr(b'\n', l).unwrap_or(l.len());
            if let Some((u, v, c, at)) = arc_line_at(l, 0) {
                fast += 1;
                assert_eq!(at, end, "{}", show(l));
                assert!(
                    matches!(classify(&l[..end]), Kind::Arc(a, b, d) if (a, b, d) == (u, v, c)),
                    "{}",
                    show(l)
                );
            }
        }
        assert_eq!(fast, 5, "the plain lines take the one-pass read");
        // From the middle of a text, and never past its end.
        assert_eq!(arc_line_at(b"x\na 5 6 7\n", 2), Some((5, 6, 7, 9)));
        assert_eq!(arc_line_at(b"a 5 6 7\n", 8), None);
        assert_eq!(arc_line_at(&b"a 5 6 7\n"[..7], 0), None);
    }

    /// The scan's one pass (ids, terminals, and the pairing from the first arc and from the
    /// second, the latter followed only until the two meet) gives what a pass for each gives.
    #[test]
    fn the_one_pass_scan_gives_what_separate_pairings_give() {
        let mut rng = Rng::new(29);
        let map = VertexMap::new(1, 2);
        let nodes = 6u64;
        let (mut met, mut skipped) = (0, 0);
        for case in 0..5000 {
            let len = rng.below(14) as usize;
            let mut arcs: Vec<FastArc> = Vec::with_capacity(len);
            for k in 0..len {
                let cap = match rng.below(6) {
                    0 => Cap::MAX - 1,
                    _ => rng.below(9) as Cap,
                };
                // Often the reverse of the arc before, as in the files; ids 1 and 2 are the
                // terminals, 7 is out of range.
                let (u, v) = match arcs.last() {
                    Some(a) if rng.below(2) == 0 => (a.v, a.u),
                    _ => {
                        let id = |r: &mut Rng| {
                            if r.below(40) == 0 {
                                7
                            } else {
                                1 + r.below(6) as u32
                            }
                        };
                        (id(&mut rng), id(&mut rng))
                    }
                };
                arcs.push(FastArc {
                    u,
                    v,
                    cap,
                    line: k as u32,
                });
            }
            let sc = GeneralScan::of(&arcs, nodes, map, Vec::new());
            let in_range = arcs.iter().all(|a| {
                (1..=nodes).contains(&u64::from(a.u)) && (1..=nodes).contains(&u64::from(a.v))
            });
            assert_eq!(sc.in_range, in_range, "case {case}");
            if !in_range {
                continue;
            }
            assert_eq!(sc.fresh, pair_chain(&arcs, map, |_, _| {}), "case {case}");
            let first = arcs.first().and_then(|a| node_link(a, map));
            assert_eq!(sc.first, first, "case {case}");
            if first.is_some() {
                let mut skip = pair_chain(&arcs[1..], map, |_, _| {});
                skip.held = skip.held.map(|i| i + 1);
                assert_eq!(sc.skip_first, skip, "case {case}");
                skipped += 1;
                met += usize::from(skip.pairs > 2);
            }
            let terminals = arcs
                .iter()
                .filter(|a| {
                    matches!(
                        (map.of(a.u), map.of(a.v)),
                        (Vertex::Source, Vertex::Node(_)) | (Vertex::Node(_), Vertex::Sink)
                    )
                })
                .count();
            assert_eq!(sc.terminals.len(), terminals, "case {case}");
        }
        assert!(
            skipped > 1000 && met > 200,
            "{skipped} scans from the second arc, {met} long"
        );
    }

    #[test]
    fn batches_cut_at_any_line_give_the_same_graph_or_error() {
        let mut rng = Rng::new(11);
        let specs = [
            "2d:6x5:n4:c10:s1",
            "2d:5x4:n8:c100:s2",
            "rlg:3x4:s3",
            "3d:3x3x3:n6:c10:s4",
            "sparse:40:d4:s5",
        ];
        let (mut ok, mut errors) = (0, 0);
        let (mut placed_ok, mut rereads, mut inferred_ok) = (0, 0, 0);
        for case in 0..120 {
            let t = text(&mut rng, specs[case % specs.len()]);
            let whole = parse_serial(&t, BATCH);
            match &whole {
                Ok(_) => ok += 1,
                Err(e) => {
                    errors += 1;
                    assert!(e.contains("t.max"), "{e}");
                }
            }
            assert_eq!(parse(&t, BATCH), whole, "case {case}, parallel apply");
            for batch in [1, 2, 3, 5, 17, 64, 1000] {
                assert_eq!(parse(&t, batch), whole, "case {case}, batch {batch}");
                // Placed straight into the grid: the same graph or error, rereading if need be.
                let (placed, reread) = parse_with(&t, batch, true);
                assert_eq!(placed, whole, "case {case}, batch {batch}, grid placement");
                if reread {
                    rereads += 1;
                } else if whole.as_ref().is_ok_and(|m| m.contains("Grid {")) {
                    placed_ok += 1;
                    if whole.as_ref().is_ok_and(|m| m.contains("from_hint: false")) {
                        inferred_ok += 1;
                    }
                }
            }
            // As files are read: batches sized from the problem line, grids placed, and the
            // text given again where the placement gives up.
            let again = t.clone();
            let reopen =
                move || -> Result<Box<dyn Read>> { Ok(Box::new(io::Cursor::new(again.clone()))) };
            let read = parse_max(&t[..], "t.max", "input", Some(&reopen))
                .map(|m| format!("{:?}", m))
                .map_err(|e| e.to_string());
            assert_eq!(read, whole, "case {case}, as a file");
            // From inside a pool task, where it reads and parses on the one thread.
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            assert_eq!(
                pool.install(|| parse(&t, 7)),
                whole,
                "case {case}, in a pool"
            );
        }
        // Both kinds of input were exercised, and grids were placed as well as reread.
        assert!(ok > 5 && errors > 5, "{ok} read, {errors} refused");
        assert!(
            placed_ok > 50 && rereads > 50 && inferred_ok > 20,
            "{placed_ok} placed ({inferred_ok} without a hint), {rereads} reread"
        );
    }
}
