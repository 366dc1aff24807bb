//! A deflate decoder (RFC 1951) that can start at any bit offset without the preceding 32 KiB
//! window, for inflating one gzip member on many cores ([`super::pargz`]).
//!
//! Output that may depend on the unknown window is kept as `u16`: values below 256 are bytes,
//! values `256 + w` are *markers* for byte `w` of the window (`w = 32768 - d`, `d` bytes before
//! the chunk's start), replaced once the previous chunk's text is known. As soon as 32 KiB of
//! output hold no marker, nothing later can reach one and the decoder goes on in bytes.
//!
//! It is at least as strict as zlib (which the streaming path uses): over-subscribed or
//! incomplete codes (but a single code of length 1), a missing end-of-block code, too many
//! symbols, repeats without a previous length or past the end, symbols 286/287 and distances
//! 30/31, distances before the member's start, and a stored block whose LEN/NLEN disagree are
//! all errors, so the parallel path never accepts what the stream refuses.

/// Why decoding stopped short. Only whether it failed matters to the caller (it then tries
/// another start or falls back to the stream, which names the error), so there is no detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bad;

type R<T> = Result<T, Bad>;

/// Input bits, least significant first, in a 64-bit buffer refilled 7 bytes at a time.
pub(crate) struct Bits<'a> {
    data: &'a [u8],
    /// The next byte to load.
    next: usize,
    buf: u64,
    /// Valid bits in `buf` (bits above it are the next input bits or zero, never garbage).
    cnt: u32,
}

impl<'a> Bits<'a> {
    pub(crate) fn at(data: &'a [u8], bit: usize) -> Self {
        let mut b = Bits {
            data,
            next: bit / 8,
            buf: 0,
            cnt: 0,
        };
        b.refill();
        b.consume((bit % 8) as u32);
        b
    }

    /// The bit position of the next unread bit; past `8 * data.len()` when the input ran out
    /// (zeros are read there).
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.next * 8 - self.cnt as usize
    }

    /// Whether more bits were read than the input holds.
    #[inline]
    fn overrun(&self) -> bool {
        self.pos() > self.data.len() * 8
    }

    #[inline]
    fn refill(&mut self) {
        if self.next + 8 <= self.data.len() {
            let w = u64::from_le_bytes(self.data[self.next..self.next + 8].try_into().unwrap());
            // The bits above `cnt` already loaded are these same input bits, so OR is exact.
            self.buf |= w << self.cnt;
            self.next += ((63 - self.cnt) / 8) as usize;
            self.cnt |= 56;
        } else {
            while self.cnt <= 56 {
                let b = self.data.get(self.next).copied().unwrap_or(0);
                self.buf |= (b as u64) << self.cnt;
                self.next += 1;
                self.cnt += 8;
            }
        }
    }

    #[inline]
    fn peek(&self, n: u32) -> u32 {
        (self.buf & ((1u64 << n) - 1)) as u32
    }

    #[inline]
    fn consume(&mut self, n: u32) {
        self.buf >>= n;
        self.cnt -= n;
    }

    #[inline]
    pub(crate) fn take(&mut self, n: u32) -> u32 {
        if self.cnt < n {
            self.refill();
        }
        let v = self.peek(n);
        self.consume(n);
        v
    }

    pub(crate) fn align(&mut self) {
        let r = self.cnt % 8;
        self.consume(r);
    }
}

/// Entry flags of a decoding table; the low 4 bits are the bits to consume.
const SUB: u32 = 1 << 4;
const INVALID: u32 = 1 << 5;

/// A Huffman decoding table: a primary table of `2^primary` entries indexed by the next bits,
/// and subtables for longer codes. Entry: `symbol << 16 | flags | length`; a subtable entry
/// holds `offset << 16 | bits << 8 | SUB | primary`.
pub(crate) struct Table {
    primary: u32,
    e: Vec<u32>,
}

impl Table {
    fn new(primary: u32) -> Self {
        Table {
            primary,
            e: Vec::with_capacity(2 << primary),
        }
    }

    /// Builds the table of the code with these lengths, zlib's way: over-subscribed is an
    /// error, incomplete only for one code of length 1 (or, where `allow_empty`, no code).
    fn build(&mut self, lens: &[u8], allow_empty: bool, strict: bool) -> R<()> {
        let mut count = [0u32; 16];
        for &l in lens {
            count[l as usize] += 1;
        }
        count[0] = 0;
        let max = (1..16).rev().find(|&l| count[l] > 0).unwrap_or(0);
        let mut left: i32 = 1;
        for c in &count[1..] {
            left = (left << 1) - *c as i32;
            if left < 0 {
                return Err(Bad);
            }
        }
        if max == 0 && !allow_empty {
            return Err(Bad);
        }
        if left > 0 && (max > 1 || strict) {
            return Err(Bad);
        }
        let p = self.primary;
        self.e.clear();
        self.e.resize(1 << p, INVALID);
        let mut next = [0u32; 16];
        let mut code = 0;
        for l in 1..16 {
            code = (code + count[l - 1]) << 1;
            next[l] = code;
        }
        // First pass: how many bits each long code's subtable needs.
        let mut sub_bits = vec![0u8; if max as u32 > p { 1 << p } else { 0 }];
        let mut codes = [0u32; 320];
        for (s, &l) in lens.iter().enumerate() {
            if l == 0 {
                continue;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            let r = c.reverse_bits() >> (32 - l as u32);
            codes[s] = r;
            if l as u32 > p {
                let pre = (r & ((1 << p) - 1)) as usize;
                sub_bits[pre] = sub_bits[pre].max(l - p as u8);
            }
        }
        for (pre, &b) in sub_bits.iter().enumerate() {
            if b > 0 {
                let off = self.e.len() as u32;
                self.e.resize(self.e.len() + (1 << b), INVALID);
                self.e[pre] = off << 16 | (b as u32) << 8 | SUB | p;
            }
        }
        for (s, &l) in lens.iter().enumerate() {
            let (l, r) = (l as u32, codes[s]);
            if l == 0 {
                continue;
            }
            if l <= p {
                let mut i = r;
                while i < 1 << p {
                    self.e[i as usize] = (s as u32) << 16 | l;
                    i += 1 << l;
                }
            } else {
                let head = self.e[(r & ((1 << p) - 1)) as usize];
                let (off, b) = (head >> 16, (head >> 8) & 0xf);
                let rest = l - p;
                let mut i = r >> p;
                while i < 1 << b {
                    self.e[(off + i) as usize] = (s as u32) << 16 | rest;
                    i += 1 << rest;
                }
            }
        }
        Ok(())
    }

    /// The next symbol; the caller has refilled at least 15 bits.
    #[inline]
    fn decode(&self, b: &mut Bits) -> R<u32> {
        let mut e = self.e[b.peek(self.primary) as usize];
        if e & SUB != 0 {
            b.consume(self.primary);
            let (off, bits) = (e >> 16, (e >> 8) & 0xf);
            e = self.e[(off + b.peek(bits)) as usize];
        }
        if e & INVALID != 0 {
            return Err(Bad);
        }
        b.consume(e & 0xf);
        Ok(e >> 16)
    }
}

const LBASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DBASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DEXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The two tables of a Huffman block, reused from block to block.
pub(crate) struct Codes {
    lit: Table,
    dist: Table,
    cl: Table,
}

impl Default for Codes {
    fn default() -> Self {
        Codes {
            lit: Table::new(10),
            dist: Table::new(8),
            cl: Table::new(7),
        }
    }
}

impl Codes {
    fn fixed(&mut self) {
        let mut l = [8u8; 288];
        l[144..256].fill(9);
        l[256..280].fill(7);
        self.lit
            .build(&l, false, false)
            .expect("the fixed code is valid");
        self.dist
            .build(&[5u8; 32], false, false)
            .expect("the fixed code is valid");
    }

    /// Reads a dynamic block's code lengths (after its 3 header bits) and builds the tables.
    fn dynamic(&mut self, b: &mut Bits) -> R<()> {
        let hlit = b.take(5) as usize + 257;
        let hdist = b.take(5) as usize + 1;
        let hclen = b.take(4) as usize + 4;
        if hlit > 286 || hdist > 30 {
            return Err(Bad);
        }
        let mut cl = [0u8; 19];
        for &i in &CL_ORDER[..hclen] {
            cl[i] = b.take(3) as u8;
        }
        self.cl.build(&cl, false, true)?;
        let mut lens = [0u8; 320];
        let n = hlit + hdist;
        let mut i = 0;
        while i < n {
            b.refill();
            let sym = self.cl.decode(b)?;
            let (val, rep) = match sym {
                0..=15 => (sym as u8, 1),
                16 => {
                    if i == 0 {
                        return Err(Bad);
                    }
                    (lens[i - 1], 3 + b.take(2) as usize)
                }
                17 => (0, 3 + b.take(3) as usize),
                _ => (0, 11 + b.take(7) as usize),
            };
            if i + rep > n {
                return Err(Bad);
            }
            lens[i..i + rep].fill(val);
            i += rep;
        }
        if b.overrun() || lens[256] == 0 {
            return Err(Bad);
        }
        self.lit.build(&lens[..hlit], false, false)?;
        self.dist.build(&lens[hlit..n], true, false)
    }
}

/// Where decoded output goes: bytes, or `u16` with markers for the unknown window.
pub(crate) trait Out {
    /// Makes room for one symbol pair's output without further checks; `Err` past the limit.
    fn room(&mut self) -> R<()>;
    fn lit(&mut self, b: u8);
    /// Copies `len` items from `dist` back; `Err` where that is before what may be referenced.
    fn copy(&mut self, dist: usize, len: usize) -> R<()>;
    fn stored(&mut self, bytes: &[u8]) -> R<()>;
}

/// Plain output; references may not reach before `floor`.
pub(crate) struct Plain {
    pub(crate) v: Vec<u8>,
    pub(crate) floor: usize,
    /// The most bytes `v` may hold (the memory budget's share).
    pub(crate) limit: usize,
}

/// At least 300 free entries in `v` (a symbol pair's most), growing it within `limit` entries:
/// the budget's share, refused past it.
#[inline]
fn room<T>(v: &mut Vec<T>, limit: usize) -> R<()> {
    if v.capacity() - v.len() < 300 {
        if v.len() >= limit {
            return Err(Bad);
        }
        let more = v.len().max(1 << 16).min(limit - v.len()) + 300;
        v.try_reserve(more).map_err(|_| Bad)?;
    }
    Ok(())
}

impl Out for Plain {
    #[inline]
    fn room(&mut self) -> R<()> {
        room(&mut self.v, self.limit)
    }

    #[inline]
    fn lit(&mut self, b: u8) {
        let n = self.v.len();
        // SAFETY: `room` left at least 300 bytes of capacity, and a symbol pair writes at
        // most 258 bytes (plus 8 of overshoot in `copy`).
        unsafe {
            *self.v.as_mut_ptr().add(n) = b;
            self.v.set_len(n + 1);
        }
    }

    #[inline]
    fn copy(&mut self, dist: usize, len: usize) -> R<()> {
        let n = self.v.len();
        if dist > n - self.floor {
            return Err(Bad);
        }
        let p = self.v.as_mut_ptr();
        // SAFETY: `room` left 300 bytes of capacity; `len <= 258`, and the 8-byte steps write
        // at most 7 bytes past `n + len`, inside it. Sources are at or after `n - dist >= 0`
        // and before what is being written; with `dist >= 8` each 8-byte step reads only
        // bytes written before it.
        unsafe {
            let (mut s, mut d) = (p.add(n - dist), p.add(n));
            let end = p.add(n + len);
            if dist >= 8 {
                while d < end {
                    std::ptr::copy_nonoverlapping(s, d, 8);
                    s = s.add(8);
                    d = d.add(8);
                }
            } else {
                while d < end {
                    *d = *s;
                    s = s.add(1);
                    d = d.add(1);
                }
            }
            self.v.set_len(n + len);
        }
        Ok(())
    }

    fn stored(&mut self, bytes: &[u8]) -> R<()> {
        if bytes.len() > self.limit.saturating_sub(self.v.len()) {
            return Err(Bad);
        }
        self.v.try_reserve(bytes.len()).map_err(|_| Bad)?;
        self.v.extend_from_slice(bytes);
        Ok(())
    }
}

/// Output that may hold markers; `floor` is `None` while references may reach the unknown
/// window (before any member started in this chunk), else as [`Plain::floor`].
pub(crate) struct Marked {
    pub(crate) v: Vec<u16>,
    pub(crate) floor: Option<usize>,
    /// The most items `v` may hold.
    pub(crate) limit: usize,
}

impl Marked {
    /// How many items at the end hold no marker and may be referenced by what follows: all
    /// of the last 32 KiB, or all since the member's start; `None` while that is not so.
    pub(crate) fn clean_tail(&self) -> Option<usize> {
        let n = self.v.len();
        let lo = n.saturating_sub(32768).max(self.floor.unwrap_or(0));
        let whole = n - lo == 32768 || self.floor == Some(lo);
        // From the end: where markers are dense (text repeating its window) this stops at once.
        (whole && !self.v[lo..].iter().rev().any(|&x| x >= 256)).then_some(n - lo)
    }
}

impl Out for Marked {
    #[inline]
    fn room(&mut self) -> R<()> {
        room(&mut self.v, self.limit)
    }

    #[inline]
    fn lit(&mut self, b: u8) {
        self.v.push(b as u16);
    }

    #[inline]
    fn copy(&mut self, dist: usize, len: usize) -> R<()> {
        let n = self.v.len();
        match self.floor {
            Some(f) if dist > n - f => return Err(Bad),
            _ => {}
        }
        let p = self.v.as_mut_ptr();
        if dist <= n {
            // SAFETY: `room` reserved 300 items and `len <= 258`; sources are before `n`.
            unsafe {
                let (mut s, mut d) = (p.add(n - dist), p.add(n));
                let end = p.add(n + len);
                while d < end {
                    *d = *s;
                    s = s.add(1);
                    d = d.add(1);
                }
                self.v.set_len(n + len);
            }
        } else {
            for k in 0..len {
                let at = n + k;
                let x = if dist <= at {
                    self.v[at - dist]
                } else {
                    // Before the chunk: window byte `32768 - (dist - at)`.
                    (256 + 32768 - (dist - at)) as u16
                };
                self.v.push(x);
            }
        }
        Ok(())
    }

    fn stored(&mut self, bytes: &[u8]) -> R<()> {
        if bytes.len() > self.limit.saturating_sub(self.v.len()) {
            return Err(Bad);
        }
        self.v.try_reserve(bytes.len()).map_err(|_| Bad)?;
        self.v.extend(bytes.iter().map(|&b| b as u16));
        Ok(())
    }
}

/// How a block ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Another block follows.
    More,
    /// It was the last block of the member.
    Last,
}

/// Decodes one block at `b`'s position into `out`.
pub(crate) fn block<O: Out>(b: &mut Bits, codes: &mut Codes, out: &mut O) -> R<End> {
    b.refill();
    let last = b.take(1) == 1;
    match b.take(2) {
        0 => {
            b.align();
            let len = b.take(16) as usize;
            let nlen = b.take(16) as usize;
            if len != !nlen & 0xffff {
                return Err(Bad);
            }
            // What of the buffer is unread bytes: whole bytes now, after `align`.
            let at = b.pos() / 8;
            if b.overrun() || at + len > b.data.len() {
                return Err(Bad);
            }
            out.stored(&b.data[at..at + len])?;
            *b = Bits::at(b.data, (at + len) * 8);
        }
        1 => {
            codes.fixed();
            symbols(b, codes, out)?;
        }
        2 => {
            codes.dynamic(b)?;
            symbols(b, codes, out)?;
        }
        _ => return Err(Bad),
    }
    if b.overrun() {
        return Err(Bad);
    }
    Ok(if last { End::Last } else { End::More })
}

#[inline]
fn symbols<O: Out>(b: &mut Bits, codes: &Codes, out: &mut O) -> R<()> {
    loop {
        b.refill();
        if b.overrun() {
            return Err(Bad);
        }
        out.room()?;
        let sym = codes.lit.decode(b)?;
        if sym < 256 {
            out.lit(sym as u8);
            // A second literal without refilling: 56 bits hold two 15-bit codes.
            let sym = codes.lit.decode(b)?;
            if sym < 256 {
                out.lit(sym as u8);
                continue;
            }
            if sym == 256 {
                return Ok(());
            }
            b.refill();
            length(b, codes, out, sym)?;
        } else if sym == 256 {
            return Ok(());
        } else {
            length(b, codes, out, sym)?;
        }
    }
}

#[inline]
fn length<O: Out>(b: &mut Bits, codes: &Codes, out: &mut O, sym: u32) -> R<()> {
    let i = (sym - 257) as usize;
    if i >= 29 {
        return Err(Bad);
    }
    let len = LBASE[i] as usize + b.take(LEXTRA[i] as u32) as usize;
    let d = codes.dist.decode(b)? as usize;
    if d >= 30 {
        return Err(Bad);
    }
    let dist = DBASE[d] as usize + b.take(DEXTRA[d] as u32) as usize;
    out.copy(dist, len)
}

/// Whether a non-final dynamic block header with valid, complete codes starts at bit `bit`:
/// the cheap test of a candidate chunk start.
pub(crate) fn dynamic_header_at(data: &[u8], bit: usize, codes: &mut Codes) -> bool {
    let mut b = Bits::at(data, bit);
    // BFINAL = 0, BTYPE = 2.
    if b.peek(3) != 0b100 {
        return false;
    }
    let h = b.peek(13) >> 3;
    if (h & 31) > 29 || (h >> 5) & 31 > 29 {
        return false;
    }
    b.consume(3);
    codes.dynamic(&mut b).is_ok()
}
