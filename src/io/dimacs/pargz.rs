//! Ordinary gzip files inflated on every core, the way pugz and rapidgzip do it.
//!
//! A deflate stream has no sync points, but a block can be recognised at any bit offset: a
//! non-final dynamic block header whose three Huffman codes are valid and complete, and that
//! then decodes cleanly to its end, is rarely anything else. The compressed file is cut into
//! chunks of `C` bytes; for each boundary a worker looks for such a start at or after it
//! ([`find_start`]). Each chunk is then decoded on its own core from its start, without the
//! 32 KiB window before it ([`inflate`]: references into that window become markers), until it
//! stands at a block boundary that is *exactly* one of the later chunks' starts. A false start
//! is one no chunk lands on: it is skipped (its chunk's output is thrown away, the chunk
//! before it decodes on). So the text is exactly the stream's, never a guess.
//!
//! The chunks are then resolved in order: the last 32 KiB of a chunk's text are the next one's
//! window, whose bytes replace its markers; each member's CRC-32 and ISIZE are checked. Work
//! goes in rounds of one chunk per thread, each round's text handed to the reader as it is
//! resolved, so the parser starts on the first round while later ones inflate and no more
//! than two rounds of text are held.
//!
//! Anything it refuses (no start found, a chunk that fails, a bad CRC, trailing bytes that are
//! no member, text over the budget) ends the reader with an error; the caller then reads the
//! file with the streaming decoder, which reports it as before.

use std::fs::File;
use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc;

use rayon::prelude::*;

use super::inflate::{self, Bad, Bits, Codes, End, Marked, Plain};

type R<T> = Result<T, Bad>;

/// Chunk size override for tests (0: chosen from the file size and the thread count).
static CHUNK_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` with compressed chunks of `bytes` bytes (tests: many chunks in small files).
#[cfg(test)]
pub(crate) fn with_chunk_bytes<T>(bytes: usize, f: impl FnOnce() -> T) -> T {
    let was = CHUNK_BYTES.swap(bytes, Relaxed);
    let out = f();
    CHUNK_BYTES.store(was, Relaxed);
    out
}

/// The smallest compressed file worth cutting: below it one thread inflates it in the time
/// the pool takes to start (and the streaming path overlaps it with the parse anyway).
pub(crate) const MIN_FILE: u64 = 4 << 20;

fn chunk_bytes(file_len: usize, threads: usize) -> usize {
    match CHUNK_BYTES.load(Relaxed) {
        0 => (file_len / (8 * threads)).clamp(512 << 10, 4 << 20),
        c => c,
    }
}

/// The offset of the deflate data after a gzip member header at `at`, or `Err` for anything
/// but a well-formed header (reserved flags, a header CRC that does not match).
pub(crate) fn member_header(data: &[u8], at: usize) -> R<usize> {
    let h = data.get(at..at + 10).ok_or(Bad)?;
    if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 || h[3] & 0xe0 != 0 {
        return Err(Bad);
    }
    let flg = h[3];
    let mut p = at + 10;
    if flg & 4 != 0 {
        let x = data.get(p..p + 2).ok_or(Bad)?;
        p += 2 + u16::from_le_bytes([x[0], x[1]]) as usize;
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            let z = memchr::memchr(0, data.get(p..).ok_or(Bad)?).ok_or(Bad)?;
            p += z + 1;
        }
    }
    if flg & 2 != 0 {
        let x = data.get(p..p + 2).ok_or(Bad)?;
        let crc = crc32fast::hash(&data[at..p]);
        if u16::from_le_bytes([x[0], x[1]]) != crc as u16 {
            return Err(Bad);
        }
        p += 2;
    }
    if p > data.len() {
        return Err(Bad);
    }
    Ok(p)
}

/// A member's end inside a chunk: where in the chunk's text, and its trailer.
struct MemberEnd {
    at: usize,
    crc: u32,
    isize: u32,
}

/// One chunk's text: `marked` (with markers) then `plain`, and the members that ended in it.
struct Chunk {
    marked: Vec<u16>,
    plain: Vec<u8>,
    ends: Vec<MemberEnd>,
    /// Index in the round's start list where it stopped; `None`: at the end of the file.
    next: Option<usize>,
}

/// The compressed bytes of a round: `data` is the file from byte `base`; `eof` whether it
/// reaches the end of the file.
struct Span<'a> {
    data: &'a [u8],
    base: usize,
    eof: bool,
}

/// Decodes from file bit `start` until a block boundary at one of `starts` (sorted file bit
/// offsets after `start`) or the end of the file. `first`: `start` is a member's first block
/// (no window before it).
fn inflate(span: &Span, start: usize, starts: &[usize], first: bool, limit: usize) -> R<Chunk> {
    let mut b = Bits::at(span.data, start - span.base * 8);
    let mut codes = Codes::default();
    let mut ends = Vec::new();
    let mut marked = Marked {
        v: Vec::new(),
        floor: first.then_some(0),
        limit,
    };
    let mut plain: Option<Plain> = None;
    let mut at_start = true;
    loop {
        let p = span.base * 8 + b.pos();
        if !at_start {
            if let Ok(i) = starts.binary_search(&p) {
                let marked = marked.v;
                let plain = plain.map_or_else(Vec::new, |p| p.v);
                return Ok(Chunk {
                    marked,
                    plain,
                    ends,
                    next: Some(i),
                });
            }
            if starts.last().is_some_and(|&l| p > l) && !span.eof {
                return Err(Bad); // passed every start: the round cannot be stitched
            }
        }
        at_start = false;
        let end = match &mut plain {
            Some(o) => inflate::block(&mut b, &mut codes, o)?,
            None => inflate::block(&mut b, &mut codes, &mut marked)?,
        };
        let len = marked.v.len() + plain.as_ref().map_or(0, |p| p.v.len());
        if end == End::Last {
            b.align();
            let t = b.pos() / 8;
            let tr = span.data.get(t..t + 8).ok_or(Bad)?;
            let crc = u32::from_le_bytes(tr[..4].try_into().unwrap());
            let isize = u32::from_le_bytes(tr[4..].try_into().unwrap());
            ends.push(MemberEnd {
                at: len,
                crc,
                isize,
            });
            if span.eof && t + 8 == span.data.len() {
                let plain = plain.map_or_else(Vec::new, |p| p.v);
                return Ok(Chunk {
                    marked: marked.v,
                    plain,
                    ends,
                    next: None,
                });
            }
            // Another member (any other trailing bytes are refused).
            let d = member_header(span.data, t + 8)?;
            b = Bits::at(span.data, d * 8);
            match &mut plain {
                Some(o) => o.floor = o.v.len(),
                None => marked.floor = Some(len),
            }
        }
        if plain.is_none() {
            // Bytes from here on: once 32 KiB hold no marker, or the member started after
            // the last one, nothing later can reach a marker.
            let n = marked.v.len();
            if let Some(w) = marked.clean_tail() {
                let mut v = Vec::new();
                v.try_reserve(w + (1 << 20)).map_err(|_| Bad)?;
                v.extend(marked.v[n - w..].iter().map(|&x| x as u8));
                marked.v.truncate(n - w);
                let floor = marked.floor.map_or(0, |f| f.saturating_sub(n - w));
                plain = Some(Plain {
                    v,
                    floor,
                    limit: limit.saturating_sub(n - w),
                });
            }
        }
    }
}

/// The first bit offset in `from..to` (file bits) where a block start passes the test: a
/// valid non-final dynamic header, and the block decodes to its end followed by a header of
/// a known type.
fn find_start(span: &Span, from: usize, to: usize) -> Option<usize> {
    let mut codes = Codes::default();
    let lo = from.checked_sub(span.base * 8)?;
    let hi = (to - span.base * 8).min(span.data.len() * 8);
    (lo..hi).find_map(|bit| {
        if !inflate::dynamic_header_at(span.data, bit, &mut codes) {
            return None;
        }
        let mut out = Marked {
            v: Vec::new(),
            floor: None,
            limit: 16 << 20,
        };
        let mut b = Bits::at(span.data, bit);
        match inflate::block(&mut b, &mut codes, &mut out) {
            Ok(End::More) if b.pos() + 3 <= span.data.len() * 8 => {
                let mut nb = Bits::at(span.data, b.pos());
                let kind = nb.take(3) >> 1;
                (kind != 3).then_some(bit + span.base * 8)
            }
            _ => None,
        }
    })
}

/// Inflates gzip file `file` (of `len` bytes) on the current rayon pool, sending its text in
/// pieces, in order, over `tx`; `Err` (also sent) where it refuses the file. `limit`: the
/// most text bytes in memory at once.
fn run(file: &File, len: usize, limit: usize, tx: &mpsc::SyncSender<io::Result<Vec<u8>>>) -> R<()> {
    let threads = rayon::current_num_threads().max(1);
    let c = chunk_bytes(len, threads);
    let read = |from: usize, to: usize| -> R<Vec<u8>> {
        let mut v = Vec::new();
        v.try_reserve_exact(to - from).map_err(|_| Bad)?;
        v.resize(to - from, 0);
        read_at(file, &mut v, from as u64).map_err(|_| Bad)?;
        Ok(v)
    };
    let head = read(0, len.min(64 << 10))?;
    let mut next = member_header(&head, 0)? * 8;
    drop(head);
    let mut first = true;
    // The text of the current member before the next chunk: up to 32 KiB.
    let mut window: Vec<u8> = Vec::new();
    let mut crc = crc32fast::Hasher::new();
    let mut member_len: u64 = 0;
    let limit_per_chunk = limit / (4 * threads + 4);
    // Chunks per round's span; doubled while a round finds no start to cut at (stored or
    // fixed blocks, or blocks longer than the chunks).
    let mut wide = 1;
    loop {
        let from = next / 8;
        let to = len.min(from + (threads + 2) * c * wide);
        let data = read(from, to)?;
        let span = Span {
            data: &data,
            base: from,
            eof: to == len,
        };
        // Boundaries of this round's chunks after the first, and the next round's start.
        let bounds: Vec<usize> = (1..=threads)
            .map(|j| from + j * c * wide)
            .take_while(|&b| b < len)
            .collect();
        let found: Vec<Option<usize>> = bounds
            .par_iter()
            .map(|&b| find_start(&span, b * 8, (b + c * wide) * 8))
            .collect();
        let mut starts = vec![next];
        starts.extend(found.into_iter().flatten());
        if starts.len() == 1 && !span.eof {
            wide *= 2;
            continue;
        }
        wide = 1;
        let decoded: Vec<R<Chunk>> = (0..starts.len())
            .into_par_iter()
            .map(|i| {
                if i + 1 == starts.len() && !span.eof {
                    return Err(Bad); // the next round's start: decoded then
                }
                inflate(
                    &span,
                    starts[i],
                    &starts[i + 1..],
                    first && i == 0,
                    limit_per_chunk,
                )
            })
            .collect();
        let eof = span.eof;
        drop(data);
        // Follow the chunks that land on each other from the first.
        let mut i = 0;
        let mut decoded: Vec<Option<R<Chunk>>> = decoded.into_iter().map(Some).collect();
        let mut done = false;
        while !done {
            let chunk = decoded[i].take().ok_or(Bad)??;
            let marked_text = resolve(&chunk.marked, &window)?;
            let plain = chunk.plain;
            let text_len = marked_text.len() + plain.len();
            // CRC and size per member, and the window the next chunk reads.
            let mut at = 0;
            let piece = |from: usize, to: usize| -> (&[u8], &[u8]) {
                let m = marked_text.len();
                (
                    &marked_text[from.min(m)..to.min(m)],
                    &plain[from.max(m) - m..to.max(m) - m],
                )
            };
            for e in &chunk.ends {
                let (a, b) = piece(at, e.at);
                crc.update(a);
                crc.update(b);
                member_len += (e.at - at) as u64;
                let got = std::mem::take(&mut crc).finalize();
                if got != e.crc || member_len as u32 != e.isize {
                    return Err(Bad);
                }
                member_len = 0;
                window.clear();
                at = e.at;
            }
            let (a, b) = piece(at, text_len);
            crc.update(a);
            crc.update(b);
            member_len += (text_len - at) as u64;
            window = last_32k(&window, a, b);
            for v in [marked_text, plain] {
                if !v.is_empty() && tx.send(Ok(v)).is_err() {
                    return Ok(()); // the reader went away
                }
            }
            first = false;
            match chunk.next {
                None => done = true,
                Some(k) => {
                    i += 1 + k;
                    if i + 1 == starts.len() && !eof {
                        next = starts[i];
                        break;
                    }
                }
            }
        }
        if done {
            return Ok(());
        }
    }
}

/// The last 32 KiB of `w`, `a` and `b` one after the other.
fn last_32k(w: &[u8], a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32768);
    let need_b = b.len().min(32768);
    let need_a = a.len().min(32768 - need_b);
    let need_w = w.len().min(32768 - need_b - need_a);
    out.extend_from_slice(&w[w.len() - need_w..]);
    out.extend_from_slice(&a[a.len() - need_a..]);
    out.extend_from_slice(&b[b.len() - need_b..]);
    out
}

/// A chunk's marked text with its markers replaced from `window` (the member's text before the
/// chunk, its last 32 KiB).
fn resolve(marked: &[u16], window: &[u8]) -> R<Vec<u8>> {
    let mut out = Vec::new();
    out.try_reserve_exact(marked.len()).map_err(|_| Bad)?;
    for &x in marked {
        out.push(if x < 256 {
            x as u8
        } else {
            let back = 32768 + 256 - x as usize;
            if back > window.len() {
                return Err(Bad); // before the member's start
            }
            window[window.len() - back]
        });
    }
    Ok(out)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(not(unix))]
fn read_at(_: &File, _: &mut [u8], _: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// A reader of the text of a gzip file inflated on every core, a round ahead of its reader.
pub(crate) struct ParGzReader {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ParGzReader {
    /// Starts inflating `file` (`len` bytes) on the rayon pool; `limit`: the most text bytes
    /// held at once.
    pub(crate) fn new(file: File, len: usize, limit: usize) -> Self {
        let threads = rayon::current_num_threads().max(1);
        let (tx, rx) = mpsc::sync_channel(2 * threads + 2);
        std::thread::spawn(move || {
            if run(&file, len, limit, &tx).is_err() {
                let _ = tx.send(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "gzip data refused by the parallel inflate",
                )));
            } else {
                let _ = tx.send(Ok(Vec::new()));
            }
        });
        ParGzReader {
            rx,
            cur: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl Read for ParGzReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(v)) if v.is_empty() => self.done = true,
                Ok(Ok(v)) => {
                    self.cur = v;
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Err(io::Error::other("the parallel inflate stopped"));
                }
            }
        }
        let n = buf.len().min(self.cur.len() - self.pos);
        buf[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// The whole text of gzip file `path` through [`ParGzReader`] (tests and the load suite).
pub(crate) fn inflate_file(path: &std::path::Path, limit: usize) -> Option<Vec<u8>> {
    let file = File::open(path).ok()?;
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    let mut out = Vec::new();
    ParGzReader::new(file, len, limit)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(text: &[u8], level: u32) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    /// What the parallel inflate gives for `bytes` with chunks of `c` bytes.
    fn par(bytes: &[u8], c: usize) -> Option<Vec<u8>> {
        let path = std::env::temp_dir().join(format!(
            "segcut-pargz-{}-{:?}.gz",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, bytes).unwrap();
        let out = with_chunk_bytes(c, || inflate_file(&path, 1 << 30));
        std::fs::remove_file(&path).unwrap();
        out
    }

    fn max_text(arcs: usize, seed: u64) -> Vec<u8> {
        let mut rng = crate::rng::Rng::new(seed);
        let mut t = format!("p max 10002 {arcs}\nn 1 s\nn 2 t\n");
        for _ in 0..arcs {
            let (u, v) = (1 + rng.below(10_002), 1 + rng.below(10_002));
            t += &format!("a {u} {v} {}\n", rng.below(1000));
        }
        t.into_bytes()
    }

    #[test]
    fn max_text_at_every_level_and_many_chunk_sizes() {
        let t = max_text(200_000, 1);
        for level in [1, 6, 9] {
            let z = gz(&t, level);
            for c in [4 << 10, 16 << 10, 100_000, 1 << 20] {
                assert_eq!(
                    par(&z, c).as_deref(),
                    Some(&t[..]),
                    "level {level} chunk {c}"
                );
            }
        }
    }

    #[test]
    fn random_and_repetitive_data_stored_fixed_and_long_matches() {
        let mut rng = crate::rng::Rng::new(7);
        // Incompressible: stored blocks; no dynamic block to start a chunk at, so one chunk.
        let noise: Vec<u8> = (0..300_000).map(|_| rng.below(256) as u8).collect();
        // Long runs: matches of 258 bytes cross every chunk boundary; markers reach far.
        let mut runs = Vec::new();
        for i in 0..2000 {
            runs.extend(std::iter::repeat_n(
                b"abcdefgh"[i % 8],
                1 + rng.below(3000) as usize,
            ));
            runs.extend_from_slice(format!("{i}\n").as_bytes());
        }
        // A mix where markers stay for long: text repeating one 20 KiB stretch.
        let unit = max_text(1000, 9);
        let rep: Vec<u8> = unit.iter().cycle().take(unit.len() * 40).copied().collect();
        for (name, t) in [("noise", noise), ("runs", runs), ("rep", rep)] {
            for level in [0, 1, 6, 9] {
                let z = gz(&t, level);
                for c in [4 << 10, 33_333] {
                    let got = par(&z, c);
                    assert!(
                        got.as_deref() == Some(&t[..]),
                        "{name} level {level} chunk {c}: {:?}",
                        got.map(|g| g.len())
                    );
                }
            }
        }
        // Tiny texts: fixed blocks, empty members.
        for t in [&b""[..], b"a", b"a 1 2 3\n"] {
            assert_eq!(par(&gz(t, 6), 4096).as_deref(), Some(t));
        }
    }

    #[test]
    fn members_one_after_another_and_header_fields() {
        let (a, b) = (max_text(50_000, 2), max_text(30_000, 3));
        let mut f = gz(&a, 6);
        f.extend(gz(b"", 6));
        f.extend(gz(b"x\n", 6));
        f.extend(gz(&b, 1));
        let want = [&a[..], b"x\n", &b[..]].concat();
        for c in [4096, 50_000, 1 << 20] {
            assert_eq!(par(&f, c).as_deref(), Some(&want[..]), "chunk {c}");
        }
        // FEXTRA, FNAME, FCOMMENT, FHCRC.
        let mut e = flate2::GzBuilder::new()
            .extra(b"ex".to_vec())
            .filename("a.max")
            .comment("a comment")
            .write(Vec::new(), flate2::Compression::default());
        e.write_all(&a).unwrap();
        let z = e.finish().unwrap();
        assert_eq!(par(&z, 8192).as_deref(), Some(&a[..]));
        let mut h = z.clone();
        h[3] |= 2; // FHCRC claimed, but the bytes after the header are no CRC
        assert_eq!(par(&h, 8192), None);
    }

    #[test]
    fn corrupt_truncated_lying_or_trailing_files_are_refused() {
        let t = max_text(100_000, 4);
        let z = gz(&t, 6);
        let n = z.len();
        for cut in [0, 1, 10, 19, n / 3, n / 2, n - 8, n - 1] {
            assert_eq!(par(&z[..cut], 8192), None, "cut at {cut}");
        }
        for (k, what) in [(n - 6, "CRC"), (n - 2, "ISIZE"), (n - 4, "ISIZE low byte")] {
            let mut f = z.clone();
            f[k] ^= 1;
            assert_eq!(par(&f, 8192), None, "{what}");
        }
        for tail in [&b"\0\0\0\0"[..], b"junk", &z[..30]] {
            let mut f = z.clone();
            f.extend_from_slice(tail);
            assert_eq!(par(&f, 8192), None, "trailing {tail:?}");
        }
        // Flipped bits anywhere: refused or the same text, never other text or a panic.
        let mut rng = crate::rng::Rng::new(5);
        for _ in 0..200 {
            let mut f = z.clone();
            let k = 10 + rng.below(n as u64 - 18) as usize;
            f[k] ^= 1 << rng.below(8);
            if let Some(got) = par(&f, 8192) {
                assert_eq!(got, t, "byte {k}");
            }
        }
    }

    #[test]
    fn markers_resolved_from_the_wrong_window_fail() {
        // A text whose chunks reach back into the previous chunk's text: resolving their
        // markers from any other window changes the text, which the CRC catches; and the
        // resolution itself reads the window at the right distance.
        let window: Vec<u8> = (0..32768u32).map(|i| (i % 251) as u8).collect();
        let marked = [256u16, 256 + 32767, b'x' as u16, 256 + 100];
        assert_eq!(
            resolve(&marked, &window).unwrap(),
            vec![window[0], window[32767], b'x', window[100]]
        );
        // A window shorter than the distance: before the member's start.
        assert_eq!(resolve(&[256 + 32767 - 10], &window[..10]), Err(Bad));
        assert_eq!(
            resolve(&[256 + 32767 - 9], &window[..10]).unwrap(),
            vec![window[0]]
        );
    }
}
