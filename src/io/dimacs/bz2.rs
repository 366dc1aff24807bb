//! bzip2 decoded block by block on every core, and written the same way.
//!
//! A bzip2 stream is `BZh` and a level digit, then blocks, each opened by the 48-bit magic
//! `0x314159265359` and its CRC, then the end-of-stream magic `0x177245385090` and the combined
//! CRC of all blocks; blocks are not byte aligned. Blocks do not depend on each other, so the
//! reader finds their starts by the magic at any bit offset, copies each block's bits into a
//! stream of its own (header, the block, an end marker whose combined CRC is the block's CRC) and
//! decodes those on worker threads, keeping their order. The stream's combined CRC is checked
//! against the block CRCs. The magic can occur by chance inside compressed data (about once in
//! 2^47 bits): a block that fails to decode is joined with the next piece and decoded again
//! before the data is called corrupt.
//!
//! [`ParBzEncoder`] does the reverse: blocks compressed on every core, each as a stream of one
//! block, then their bits joined into one stream that any bzip2 decoder reads.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::mpsc;

const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
const END_MAGIC: u64 = 0x1772_4538_5090;
const MASK48: u64 = (1 << 48) - 1;

/// Bits, most significant first in each byte, as bzip2 writes them.
#[derive(Default, Clone)]
struct Bits {
    bytes: Vec<u8>,
    len: u64,
}

impl Bits {
    fn push(&mut self, value: u64, n: u32) {
        for k in (0..n).rev() {
            self.push_bit((value >> k) & 1 == 1);
        }
    }

    #[inline]
    fn push_bit(&mut self, bit: bool) {
        let i = (self.len / 8) as usize;
        if i == self.bytes.len() {
            self.bytes.push(0);
        }
        if bit {
            self.bytes[i] |= 0x80 >> (self.len % 8);
        }
        self.len += 1;
    }

    /// Appends bits `from..to` of `src`, a byte at a time where it can.
    fn extend_from(&mut self, src: &[u8], from: u64, to: u64) {
        let mut p = from;
        while p < to && !self.len.is_multiple_of(8) {
            self.push_bit(bit_at(src, p));
            p += 1;
        }
        // Now byte aligned on our side: take 8 bits at a time from any offset of the source,
        // in one pass the compiler can vectorise (this runs over every compressed byte).
        let shift = (p % 8) as u32;
        let whole = (to - p) / 8;
        if whole > 0 {
            let i = (p / 8) as usize;
            let n = whole as usize;
            // Byte `k` takes the low bits of `src[i + k]` and the high bits of the next one
            // (which may lie past `src`'s end only when no bit of it is used).
            let last = src.get(i + n).copied().unwrap_or(0);
            self.bytes.reserve(n);
            self.bytes.extend(
                src[i..i + n]
                    .iter()
                    .zip(src[i + 1..i + n].iter().chain(std::iter::once(&last)))
                    .map(|(&a, &b)| ((u16::from(a) << 8 | u16::from(b)) >> (8 - shift)) as u8),
            );
            self.len += 8 * whole;
            p += 8 * whole;
        }
        while p < to {
            self.push_bit(bit_at(src, p));
            p += 1;
        }
    }

    fn append(&mut self, other: &Bits) {
        self.extend_from(&other.bytes, 0, other.len);
    }
}

#[inline]
fn bit_at(src: &[u8], p: u64) -> bool {
    src[(p / 8) as usize] & (0x80 >> (p % 8)) != 0
}

/// The `n` bits (at most 57) at bit `p` of `src`, or `None` past its end.
#[inline]
fn bits_at(src: &[u8], p: u64, n: u32) -> Option<u64> {
    if p + u64::from(n) > 8 * src.len() as u64 {
        return None;
    }
    let i = (p / 8) as usize;
    let mut w = [0u8; 8];
    let end = (i + 8).min(src.len());
    w[..end - i].copy_from_slice(&src[i..end]);
    let v = u64::from_be_bytes(w) << (p % 8);
    Some(v >> (64 - n))
}

/// A bit per 16-bit value: whether bytes 1 and 2 of a 64-bit word starting with a magic at bit
/// offset 0..8 can be that value ([`find_magic`]'s quick test).
static MAGIC_PROBES: [u8; 8192] = magic_probes();

const fn magic_probes() -> [u8; 8192] {
    let mut t = [0u8; 8192];
    let magics = [BLOCK_MAGIC, END_MAGIC];
    let mut m = 0;
    while m < 2 {
        let mut s = 0;
        while s < 8 {
            // The magic at bits [16 - s, 64 - s) of the word; bytes 1 and 2 are bits 40..56.
            let w = magics[m] << (16 - s);
            let v = ((w >> 40) & 0xffff) as usize;
            t[v >> 3] |= 1 << (v & 7);
            s += 1;
        }
        m += 1;
    }
    t
}

/// The first bit offset `>= from` where either magic starts, with which one; `None` if there is
/// none in `src` (the last 47 bits may still start one once more bytes come).
fn find_magic(src: &[u8], from: u64) -> Option<(u64, bool)> {
    let total = 8 * src.len() as u64;
    let mut p = from;
    // Bit by bit up to a byte boundary, then eight offsets per byte from one 64-bit word.
    while !p.is_multiple_of(8) && p + 48 <= total {
        match bits_at(src, p, 48) {
            Some(BLOCK_MAGIC) => return Some((p, true)),
            Some(END_MAGIC) => return Some((p, false)),
            _ => p += 1,
        }
    }
    let mut i = (p / 8) as usize;
    while i + 8 <= src.len() {
        // Bytes 1 and 2 of the word lie inside the magic whatever its bit offset: a magic can
        // start in byte `i` only where they are one of 16 values (two magics, eight offsets).
        let probe = u16::from_be_bytes([src[i + 1], src[i + 2]]);
        if MAGIC_PROBES[usize::from(probe >> 3)] & (1 << (probe & 7)) == 0 {
            i += 1;
            continue;
        }
        let w = u64::from_be_bytes(src[i..i + 8].try_into().expect("8 bytes"));
        for s in 0..8u32 {
            let v = (w >> (16 - s)) & MASK48;
            if v == BLOCK_MAGIC || v == END_MAGIC {
                return Some((8 * i as u64 + u64::from(s), v == BLOCK_MAGIC));
            }
        }
        i += 1;
    }
    p = 8 * i as u64;
    while p + 48 <= total {
        match bits_at(src, p, 48) {
            Some(BLOCK_MAGIC) => return Some((p, true)),
            Some(END_MAGIC) => return Some((p, false)),
            _ => p += 1,
        }
    }
    None
}

fn corrupt(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Output a worker keeps of one block at most. A block holds at most 900 kB before bzip2's first
/// run-length stage, which can grow it to 46 MB (runs of blank lines do): such a block is handed
/// back undecoded and streamed by the reading thread, so that the blocks in flight hold at most
/// this much each.
const MAX_BLOCK_OUT: usize = 4 << 20;

/// A block decoded by a worker.
enum Decoded {
    Data(Vec<u8>),
    /// Its output passed [`MAX_BLOCK_OUT`]: the one-block stream, to be decoded as it is read.
    Big(Vec<u8>),
}

/// The one-block stream of a block's bits (from its magic to the next magic).
fn one_block_stream(level: u8, block: &Bits) -> io::Result<Vec<u8>> {
    let crc = bits_at(&block.bytes, 48, 32).ok_or_else(|| corrupt("a bzip2 block is cut short"))?;
    let mut s = Bits::default();
    s.bytes.reserve(block.bytes.len() + 16);
    s.bytes.extend_from_slice(b"BZh");
    s.bytes.push(level);
    s.len = 32;
    s.append(block);
    s.push(END_MAGIC, 48);
    s.push(crc, 32);
    Ok(s.bytes)
}

/// Decodes one block as a stream of its own.
fn decode_block(level: u8, block: &Bits) -> io::Result<Decoded> {
    let stream = one_block_stream(level, block)?;
    let mut d = bzip2::Decompress::new(false);
    let mut out = Vec::with_capacity(1 << 20);
    let mut input = &stream[..];
    loop {
        if out.len() == out.capacity() {
            if out.len() >= MAX_BLOCK_OUT {
                return Ok(Decoded::Big(stream));
            }
            out.reserve(out.capacity());
        }
        let before = d.total_in();
        let status = d
            .decompress_vec(input, &mut out)
            .map_err(|e| corrupt(format!("bzip2 block: {e}")))?;
        input = &input[(d.total_in() - before) as usize..];
        match status {
            bzip2::Status::StreamEnd => return Ok(Decoded::Data(out)),
            _ if input.is_empty() && out.len() < out.capacity() => {
                return Err(corrupt("a bzip2 block ends early"))
            }
            _ => {}
        }
    }
}

/// A block handed to a worker: its result, and its bits back in case it must be retried.
type Pending = mpsc::Receiver<(io::Result<Decoded>, Bits)>;

/// Where the scanner is in the compressed stream.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// At a byte boundary where a stream header (or the end of the data) is expected.
    Header,
    /// Inside a stream, at bit `at` of the buffer: a block or the end marker starts there.
    Blocks {
        at: u64,
    },
    Done,
}

/// A reader of bzip2 data (one or several streams) that decodes its blocks on rayon's threads.
pub(super) struct ParBzDecoder<R> {
    src: R,
    /// Compressed bytes not yet consumed; bit offsets count from `buf[0]`.
    buf: Vec<u8>,
    src_eof: bool,
    state: State,
    level: u8,
    /// The combined CRC of the blocks of the current stream so far.
    combined: u32,
    /// CRCs of the blocks handed out, in order, not yet folded into `combined`: a block is
    /// folded when it has decoded, since a retried block changes which CRCs count.
    pending: VecDeque<(Pending, u32)>,
    /// End markers met, in order, with the block count before each: their stored combined CRC
    /// is compared once those blocks are decoded.
    ends: VecDeque<(usize, u32)>,
    /// Blocks decoded and delivered since the start.
    delivered: usize,
    handed: usize,
    out: Vec<u8>,
    out_pos: usize,
    /// A block too large to hold whole, being decoded as it is read.
    big: Option<bzip2::read::BzDecoder<io::Cursor<Vec<u8>>>>,
    error: Option<io::Error>,
}

impl<R: Read> ParBzDecoder<R> {
    pub(super) fn new(src: R) -> Self {
        ParBzDecoder {
            src,
            buf: Vec::new(),
            src_eof: false,
            state: State::Header,
            level: b'9',
            combined: 0,
            pending: VecDeque::new(),
            ends: VecDeque::new(),
            delivered: 0,
            handed: 0,
            out: Vec::new(),
            out_pos: 0,
            big: None,
            error: None,
        }
    }

    /// Reads more compressed bytes; false at the end of the input.
    fn fill(&mut self) -> io::Result<bool> {
        if self.src_eof {
            return Ok(false);
        }
        let len = self.buf.len();
        self.buf.resize(len + (1 << 20), 0);
        loop {
            match self.src.read(&mut self.buf[len..]) {
                Ok(n) => {
                    self.buf.truncate(len + n);
                    self.src_eof = n == 0;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        }
    }

    /// Drops the consumed whole bytes before bit `at`; returns the new offset of `at`.
    fn compact(&mut self, at: u64) -> u64 {
        let bytes = (at / 8) as usize;
        if bytes > (1 << 20) {
            self.buf.drain(..bytes);
            return at - 8 * bytes as u64;
        }
        at
    }

    fn hand_out(&mut self, block: Bits) {
        let crc = bits_at(&block.bytes, 48, 32).unwrap_or(0) as u32;
        let (tx, rx) = mpsc::channel();
        let level = self.level;
        let job = move || {
            let r = decode_block(level, &block);
            let _ = tx.send((r, block));
        };
        // Inside a pool thread, waiting for pool work could deadlock: decode here instead.
        if rayon::current_thread_index().is_some() {
            job();
        } else {
            rayon::spawn(job);
        }
        self.pending.push_back((rx, crc));
        self.handed += 1;
    }

    /// Scans for the next block and hands it out; false when the input is used up.
    fn scan_one(&mut self) -> io::Result<bool> {
        loop {
            match self.state {
                State::Done => return Ok(false),
                State::Header => {
                    while self.buf.len() < 4 && self.fill()? {}
                    if self.buf.is_empty() {
                        self.state = State::Done;
                        return Ok(false);
                    }
                    let h = &self.buf[..self.buf.len().min(4)];
                    if h.len() < 4 || &h[..3] != b"BZh" || !(b'1'..=b'9').contains(&h[3]) {
                        return Err(corrupt(if self.handed == 0 {
                            "not bzip2 data (no BZh header)"
                        } else {
                            "data after the end of a bzip2 stream is not another stream"
                        }));
                    }
                    self.level = h[3];
                    self.state = State::Blocks { at: 32 };
                }
                State::Blocks { at } => {
                    // The marker at `at`.
                    while bits_at(&self.buf, at, 48).is_none() {
                        if !self.fill()? {
                            return Err(corrupt("the bzip2 data ends early"));
                        }
                    }
                    match bits_at(&self.buf, at, 48) {
                        Some(END_MAGIC) => {
                            while bits_at(&self.buf, at + 48, 32).is_none() {
                                if !self.fill()? {
                                    return Err(corrupt("the bzip2 data ends early"));
                                }
                            }
                            let stored = bits_at(&self.buf, at + 48, 32).unwrap_or(0) as u32;
                            self.ends.push_back((self.handed, stored));
                            // The next stream starts at the next byte boundary.
                            let next = (at + 80).div_ceil(8) as usize;
                            self.buf.drain(..next.min(self.buf.len()));
                            self.state = State::Header;
                        }
                        Some(BLOCK_MAGIC) => {
                            let end = loop {
                                if let Some((p, _)) = find_magic(&self.buf, at + 80) {
                                    break p;
                                }
                                if !self.fill()? {
                                    return Err(corrupt("the bzip2 data ends early"));
                                }
                            };
                            let mut block = Bits::default();
                            block.bytes.reserve(((end - at) / 8 + 2) as usize);
                            block.extend_from(&self.buf, at, end);
                            let at = self.compact(end);
                            self.state = State::Blocks { at };
                            self.hand_out(block);
                            return Ok(true);
                        }
                        _ => return Err(corrupt("bad bzip2 block header")),
                    }
                }
            }
        }
    }

    /// Keeps enough blocks in flight for every core.
    fn top_up(&mut self) -> io::Result<()> {
        let want = 2 * rayon::current_num_threads().max(1) + 2;
        while self.pending.len() < want {
            if !self.scan_one()? {
                break;
            }
        }
        Ok(())
    }

    /// The next block's data in order, after a retry joined with the following pieces where
    /// it failed; `None` at the end.
    fn next_block(&mut self) -> io::Result<Option<Decoded>> {
        self.top_up()?;
        let Some((rx, crc)) = self.pending.pop_front() else {
            self.check_ends()?;
            return Ok(None);
        };
        let (mut result, mut bits) = rx.recv().map_err(|_| corrupt("a bzip2 worker stopped"))?;
        let mut crc = crc;
        let mut joined = 0;
        // A false magic inside a block splits it: join the pieces (at most a few) and retry.
        while result.is_err() && joined < 4 {
            self.top_up()?;
            // Only pieces of the same stream can be joined.
            if self
                .ends
                .front()
                .is_some_and(|&(n, _)| n <= self.delivered + 1 + joined)
            {
                break;
            }
            let Some((rx2, _)) = self.pending.pop_front() else {
                break;
            };
            let (_, bits2) = rx2.recv().map_err(|_| corrupt("a bzip2 worker stopped"))?;
            bits.append(&bits2);
            joined += 1;
            crc = bits_at(&bits.bytes, 48, 32).unwrap_or(0) as u32;
            result = decode_block(self.level, &bits);
        }
        let data = result?;
        // Joined pieces count as one block for the end markers.
        for e in self.ends.iter_mut() {
            e.0 -= joined;
        }
        self.handed -= joined;
        self.combined = self.combined.rotate_left(1) ^ crc;
        self.delivered += 1;
        self.check_ends()?;
        Ok(Some(data))
    }

    /// Compares the stored combined CRC of every stream whose blocks are all delivered.
    fn check_ends(&mut self) -> io::Result<()> {
        while let Some(&(n, stored)) = self.ends.front() {
            if n > self.delivered {
                break;
            }
            if stored != self.combined {
                return Err(corrupt(format!(
                    "bzip2 stream CRC mismatch (stored {stored:08x}, computed {:08x})",
                    self.combined
                )));
            }
            self.combined = 0;
            self.ends.pop_front();
        }
        Ok(())
    }
}

impl<R: Read> Read for ParBzDecoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.out_pos == self.out.len() {
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if let Some(big) = &mut self.big {
                match big.read(buf) {
                    Ok(0) if !buf.is_empty() => self.big = None,
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.state = State::Done;
                        self.big = None;
                        self.pending.clear();
                        return Err(corrupt(format!("bzip2 block: {e}")));
                    }
                }
                continue;
            }
            match self.next_block() {
                Ok(Some(Decoded::Data(d))) => {
                    self.out = d;
                    self.out_pos = 0;
                }
                Ok(Some(Decoded::Big(stream))) => {
                    self.big = Some(bzip2::read::BzDecoder::new(io::Cursor::new(stream)));
                }
                Ok(None) => return Ok(0),
                Err(e) => {
                    self.state = State::Done;
                    self.pending.clear();
                    return Err(e);
                }
            }
        }
        let n = buf.len().min(self.out.len() - self.out_pos);
        buf[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}

/// Input bytes per block that [`compress`] gives each worker: small enough that bzip2's first
/// run-length stage (at most 5 bytes for 4) keeps it within one 900 kB block.
const CHUNK: usize = 700_000;

/// A writer that compresses at level 9 into one bzip2 stream, its blocks compressed on every
/// core (about 180 MB of input at a time); [`finish`](Self::finish) writes the end marker.
pub(crate) struct ParBzEncoder<W: Write> {
    inner: W,
    group: Vec<u8>,
    out: Bits,
    combined: u32,
}

impl<W: Write> ParBzEncoder<W> {
    pub(crate) fn new(inner: W) -> Self {
        let mut out = Bits::default();
        out.bytes.extend_from_slice(b"BZh9");
        out.len = 32;
        ParBzEncoder {
            inner,
            group: Vec::with_capacity(CHUNK * 256),
            out,
            combined: 0,
        }
    }

    /// Compresses the buffered input, one block per [`CHUNK`], and appends the blocks' bits.
    fn compress_group(&mut self) -> io::Result<()> {
        use rayon::prelude::*;
        let streams: Vec<io::Result<Vec<u8>>> = self
            .group
            .par_chunks(CHUNK)
            .map(|chunk| {
                let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
                e.write_all(chunk)?;
                e.finish()
            })
            .collect();
        self.group.clear();
        for s in streams {
            let s = s?;
            // Its one block: from bit 32 to the end marker.
            let end = find_magic(&s, 80)
                .filter(|&(_, block)| !block)
                .map(|(p, _)| p)
                .ok_or_else(|| corrupt("bzip2 wrote more than one block for a chunk"))?;
            let crc = bits_at(&s, 80, 32).unwrap_or(0) as u32;
            self.combined = self.combined.rotate_left(1) ^ crc;
            self.out.extend_from(&s, 32, end);
            let whole = (self.out.len / 8) as usize;
            if whole > (1 << 20) {
                self.inner.write_all(&self.out.bytes[..whole])?;
                self.out.bytes.drain(..whole);
                self.out.len -= 8 * whole as u64;
            }
        }
        Ok(())
    }

    /// Compresses what is left, writes the end of the stream and returns the inner writer.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.compress_group()?;
        self.out.push(END_MAGIC, 48);
        self.out.push(u64::from(self.combined), 32);
        self.inner.write_all(&self.out.bytes)?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for ParBzEncoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.group.capacity() - self.group.len();
        let n = buf.len().min(room);
        self.group.extend_from_slice(&buf[..n]);
        if self.group.len() == self.group.capacity() {
            self.compress_group()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Compresses `data` with [`ParBzEncoder`] (tests).
#[cfg(test)]
fn compress(data: &[u8], w: &mut Vec<u8>) -> io::Result<()> {
    let mut e = ParBzEncoder::new(w);
    e.write_all(data)?;
    e.finish().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = crate::rng::Rng::new(seed);
        let mut t = Vec::new();
        while t.len() < n {
            let line = format!(
                "a {} {} {}\n",
                rng.below(1 << 20),
                rng.below(1 << 20),
                rng.below(100)
            );
            t.extend_from_slice(line.as_bytes());
        }
        t
    }

    fn serial(data: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        bzip2::read::MultiBzDecoder::new(data).read_to_end(&mut out)?;
        Ok(out)
    }

    fn parallel(data: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        ParBzDecoder::new(data).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn blocks_decoded_in_parallel_give_the_stream() {
        let t = text(1 << 20, 1);
        // Level 1: 100 kB blocks, so many blocks in one stream; then two streams back to back.
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
        e.write_all(&t).unwrap();
        let one = e.finish().unwrap();
        assert_eq!(parallel(&one).unwrap(), t);
        let mut two = one.clone();
        two.extend_from_slice(&one);
        assert_eq!(parallel(&two).unwrap(), [&t[..], &t[..]].concat());
        assert!(parallel(&[]).unwrap().is_empty());
        // The parallel compressor's single stream, read by both decoders.
        let mut ours = Vec::new();
        compress(&t, &mut ours).unwrap();
        assert_eq!(serial(&ours).unwrap(), t);
        assert_eq!(parallel(&ours).unwrap(), t);
    }

    #[test]
    fn concatenated_streams_of_any_level_and_empty_ones_are_read_in_order() {
        // Streams of different block sizes, an empty stream (no blocks at all) between them,
        // and a stream of one tiny block: blocks end at every bit offset the encoder gives.
        let z = |t: &[u8], level: u32| {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
            e.write_all(t).unwrap();
            e.finish().unwrap()
        };
        let (a, b, c) = (text(400_000, 5), text(250_000, 6), b"a 1 2 3\n".to_vec());
        let mut all = z(&a, 1);
        all.extend(z(b"", 9));
        all.extend(z(&b, 9));
        all.extend(z(&c, 4));
        all.extend(z(b"", 1));
        let want = [&a[..], &b[..], &c[..]].concat();
        assert_eq!(parallel(&all).unwrap(), want);
        assert_eq!(serial(&all).unwrap(), want);
        // Cut anywhere inside the last non-empty stream: refused, never short text.
        let end = all.len() - z(b"", 1).len();
        for cut in [end - 1, end - 10, end - 30] {
            assert!(parallel(&all[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn blocks_of_long_runs_are_streamed_not_held() {
        // Blank lines: each block holds tens of MB once its runs are expanded.
        let mut t = b"p max 4 2\n".to_vec();
        t.resize(60 << 20, b'\n');
        t.extend_from_slice(b"a 1 3 5\n");
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(9));
        e.write_all(&t).unwrap();
        let z = e.finish().unwrap();
        assert!(z.len() < 100_000);
        assert_eq!(parallel(&z).unwrap(), t);
    }

    #[test]
    fn corrupt_and_truncated_streams_are_refused() {
        let t = text(300_000, 2);
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
        e.write_all(&t).unwrap();
        let good = e.finish().unwrap();
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..40 {
            let mut bad = good.clone();
            let i = rng.below(bad.len() as u64) as usize;
            bad[i] ^= 1 << rng.below(8);
            // Either refused, or (a flip in padding) the same text: never other text.
            if let Ok(out) = parallel(&bad) {
                assert_eq!(out, t, "byte {i}");
            }
        }
        for cut in [
            1,
            5,
            10,
            100,
            good.len() / 2,
            good.len() - 5,
            good.len() - 1,
        ] {
            assert!(parallel(&good[..cut]).is_err(), "cut at {cut}");
        }
        // The stream CRC itself is checked.
        let mut bad = good.clone();
        let k = bad.len() - 2;
        bad[k] ^= 0x01;
        assert!(parallel(&bad).is_err());
    }

    #[test]
    fn a_false_magic_inside_a_block_is_joined_back() {
        // Split a real block's bits at an arbitrary point and present the two pieces as blocks:
        // the decoder must join them.
        let t = text(50_000, 4);
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(9));
        e.write_all(&t).unwrap();
        let s = e.finish().unwrap();
        let end = find_magic(&s, 80).unwrap().0;
        let mut whole = Bits::default();
        whole.extend_from(&s, 32, end);
        let cut = whole.len / 2;
        let mut first = Bits::default();
        first.extend_from(&whole.bytes, 0, cut);
        let mut second = Bits::default();
        second.extend_from(&whole.bytes, cut, whole.len);
        let mut d = ParBzDecoder::new(&b""[..]);
        d.level = b'9';
        d.state = State::Done;
        d.hand_out(first);
        d.hand_out(second);
        d.ends.push_back((2, bits_at(&s, 80, 32).unwrap() as u32));
        let mut out = Vec::new();
        d.read_to_end(&mut out).unwrap();
        assert_eq!(out, t);
    }
}
