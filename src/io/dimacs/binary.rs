//! `.sgb`, segcut's binary graph format: the arrays of the CSR graph as they lie in memory, so
//! that loading is a read and a checksum rather than parsing text.
//!
//! Layout, all little-endian (version 1):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `SEGCUTG\0` |
//! | 4 | version, `1` |
//! | 4 | flags: bit 0 a grid, bit 1 3D (with bit 0), bit 2 the grid came from a hint |
//! | 8 × 3 | grid `W`, `H`, `D` (zero for a general graph) |
//! | 8 × 8 | `n` nodes, `m` arcs, constant flow, source id, sink id, declared `N`, declared `M`, dropped arcs |
//! | 8 | paired arcs |
//! | 4 (n + 1) | `first` (u32) |
//! | 4 m × 3 | `head`, `sister` (u32), `cap` (i32) |
//! | 4 n × 2 | `source`, `sink` capacities (i32) |
//! | 4 | CRC-32C of every byte before it |
//!
//! A reader refuses a wrong magic, an unknown version, a size that disagrees with `n` and `m`,
//! a checksum mismatch, and arrays that do not form a valid graph ([`CsrGraph::from_parts`]).

use std::io::{Read, Write};

use super::grid::grid_of;
use super::{Layout, MaxInstance};
use crate::graph::{Connectivity, CsrGraph, CsrParts, Network};
use crate::{Error, Result};

/// The first eight bytes of every `.sgb` file.
pub const SGB_MAGIC: &[u8; 8] = b"SEGCUTG\0";
/// The version this build writes and reads.
pub const SGB_VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 4 + 24 + 64 + 8;

/// Writes `inst` in the `.sgb` format to `w`.
///
/// ```
/// use segcut::graph::Network;
/// use segcut::io::dimacs::{read_max, read_sgb, write_sgb};
/// let text = "p max 4 3\nn 1 s\nn 4 t\na 1 2 5\na 2 3 4\na 3 4 6\n";
/// let inst = read_max(text.as_bytes(), "path.max").unwrap();
/// let mut bin = Vec::new();
/// write_sgb(&mut bin, &inst).unwrap();
/// let back = read_sgb(&bin[..], "path.sgb").unwrap();
/// match (&back.network, &inst.network) {
///     (Network::Csr(a), Network::Csr(b)) => assert_eq!(a, b),
///     _ => unreachable!("a path is a general graph"),
/// }
/// assert_eq!((back.source_id, back.sink_id), (1, 4));
/// let k = bin.len() / 2;
/// bin[k] ^= 1; // any flipped bit is caught by the checksum
/// assert!(read_sgb(&bin[..], "path.sgb").unwrap_err().to_string().contains("checksum"));
/// ```
pub fn write_sgb<W: Write>(w: W, inst: &MaxInstance) -> std::io::Result<()> {
    let mut w = Crc32cWriter {
        inner: std::io::BufWriter::with_capacity(1 << 20, w),
        crc: Crc32c::new(),
    };
    let (csr, flags, dims) = match (&inst.network, &inst.layout) {
        (Network::Grid(g), layout) => {
            let from_hint = matches!(
                layout,
                Layout::Grid {
                    from_hint: true,
                    ..
                }
            );
            let is_3d = g.connectivity().is_3d();
            let flags = 1 | (u32::from(is_3d) << 1) | (u32::from(from_hint) << 2);
            let csr = g.to_csr().map_err(std::io::Error::other)?;
            (std::borrow::Cow::Owned(csr), flags, g.dims())
        }
        (Network::Csr(c), _) => (std::borrow::Cow::Borrowed(c), 0, [0; 3]),
    };
    w.write_all(SGB_MAGIC)?;
    w.write_all(&SGB_VERSION.to_le_bytes())?;
    w.write_all(&flags.to_le_bytes())?;
    for d in dims {
        w.write_all(&(d as u64).to_le_bytes())?;
    }
    let counts = [
        csr.num_nodes() as u64,
        csr.num_arcs() as u64,
        csr.constant_flow() as u64,
        inst.source_id,
        inst.sink_id,
        inst.declared_nodes,
        inst.declared_arcs,
        inst.dropped_arcs,
        inst.paired_arcs,
    ];
    for c in counts {
        w.write_all(&c.to_le_bytes())?;
    }
    write_u32s(&mut w, csr.first())?;
    write_u32s(&mut w, csr.heads())?;
    write_u32s(&mut w, csr.sisters())?;
    for arr in [csr.caps(), csr.source_caps(), csr.sink_caps()] {
        let mut buf = Vec::with_capacity(arr.len().min(1 << 18) * 4);
        for chunk in arr.chunks(1 << 18) {
            buf.clear();
            buf.extend(chunk.iter().flat_map(|v| v.to_le_bytes()));
            w.write_all(&buf)?;
        }
    }
    let crc = w.crc.value();
    w.inner.write_all(&crc.to_le_bytes())?;
    w.inner.flush()
}

fn write_u32s<W: Write>(w: &mut W, arr: &[u32]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(arr.len().min(1 << 18) * 4);
    for chunk in arr.chunks(1 << 18) {
        buf.clear();
        buf.extend(chunk.iter().flat_map(|v| v.to_le_bytes()));
        w.write_all(&buf)?;
    }
    Ok(())
}

/// Reads an `.sgb` graph from `r`; `name` names it in errors.
pub fn read_sgb<R: Read>(mut r: R, name: &str) -> Result<MaxInstance> {
    let err = |msg: String| Error::Input {
        file: name.to_string(),
        msg,
    };
    let mut head = [0u8; HEADER];
    r.read_exact(&mut head)
        .map_err(|e| err(format!("not a complete .sgb header: {e}")))?;
    if &head[..8] != SGB_MAGIC {
        return Err(err("not an .sgb file (wrong magic)".into()));
    }
    let u32_at = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if version != SGB_VERSION {
        return Err(err(format!(
            ".sgb version {version} is not supported (this build reads version {SGB_VERSION})"
        )));
    }
    let flags = u32_at(12);
    let dims = [u64_at(16), u64_at(24), u64_at(32)];
    let c: Vec<u64> = (0..9).map(|k| u64_at(40 + 8 * k)).collect();
    let (n, m) = (c[0], c[1]);
    // The body's size follows from n and m: check it against memory before reading it.
    let body = n
        .checked_add(1)
        .and_then(|f| f.checked_add(n.checked_mul(2)?))
        .and_then(|x| x.checked_add(m.checked_mul(3)?))
        .and_then(|words| words.checked_mul(4))
        .filter(|_| n <= crate::graph::MAX_NODES as u64 && m < u64::from(u32::MAX))
        .ok_or_else(|| {
            err(format!(
                "the header declares {n} nodes and {m} arcs: too many"
            ))
        })?;
    let need = body.saturating_mul(2);
    if let Some(budget) = crate::io::memory_budget() {
        if need > budget.bytes {
            return Err(err(format!(
                "the graph needs about {} to load, more than {} allows ({})",
                crate::io::memory::bytes_text(need),
                budget.source,
                crate::io::memory::bytes_text(budget.bytes)
            )));
        }
    }
    let mut data = Vec::new();
    data.try_reserve_exact(body as usize + 4)
        .map_err(|_| err("not enough memory for the graph".into()))?;
    r.take(body + 5)
        .read_to_end(&mut data)
        .map_err(|e| err(format!("read error: {e}")))?;
    if data.len() as u64 != body + 4 {
        return Err(err(format!(
            "the file is {} bytes long where its header implies {}: truncated or padded",
            HEADER as u64 + data.len() as u64,
            HEADER as u64 + body + 4
        )));
    }
    let stored = u32::from_le_bytes(data[body as usize..].try_into().expect("4 bytes"));
    let mut crc = Crc32c::new();
    crc.update(&head);
    crc.update(&data[..body as usize]);
    if crc.value() != stored {
        return Err(err(format!(
            "checksum mismatch (stored {stored:08x}, computed {:08x}): the file is corrupt",
            crc.value()
        )));
    }
    let (n, m) = (n as usize, m as usize);
    let mut at = 0usize;
    let mut take = |len: usize| {
        let s = &data[at..at + 4 * len];
        at += 4 * len;
        s
    };
    let u32s = |b: &[u8]| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    };
    let i32s = |b: &[u8]| -> Vec<i32> {
        b.chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    };
    let parts = CsrParts {
        first: u32s(take(n + 1)),
        head: u32s(take(m)),
        sister: u32s(take(m)),
        cap: i32s(take(m)),
        source: i32s(take(n)),
        sink: i32s(take(n)),
        constant: c[2] as i64,
    };
    drop(data);
    let csr = CsrGraph::from_parts(parts).map_err(|e| err(e.to_string()))?;
    let (network, layout) = if flags & 1 != 0 {
        let d = dims.map(|x| x as usize);
        let is_3d = flags & 2 != 0;
        let g = grid_of(&csr, d, is_3d).ok_or_else(|| {
            err(format!(
                "the header says grid {}x{}x{} but the arcs are not that grid's",
                d[0], d[1], d[2]
            ))
        })?;
        let connectivity: Connectivity = g.connectivity();
        let layout = Layout::Grid {
            dims: d,
            connectivity,
            from_hint: flags & 4 != 0,
        };
        (Network::Grid(g), layout)
    } else {
        (
            Network::Csr(csr),
            Layout::General("stored as a general graph in the .sgb file".into()),
        )
    };
    let (source_id, sink_id) = (c[3], c[4]);
    if source_id == sink_id || source_id == 0 || sink_id == 0 {
        return Err(err(format!(
            "source id {source_id} and sink id {sink_id} must differ and be positive"
        )));
    }
    Ok(MaxInstance {
        name: name.to_string(),
        member: None,
        network,
        source_id,
        sink_id,
        declared_nodes: c[5],
        declared_arcs: c[6],
        expected_flow: None,
        grid_hint: (flags & 4 != 0).then_some(dims.map(|x| x as usize)),
        dropped_arcs: c[7],
        paired_arcs: c[8],
        layout,
    })
}

/// A writer that keeps the CRC-32C of what passed through.
struct Crc32cWriter<W> {
    inner: W,
    crc: Crc32c,
}

impl<W: Write> Write for Crc32cWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// CRC-32C (Castagnoli, reflected polynomial `0x82f63b78`), computed eight bytes at a time
/// with eight tables ("slicing-by-8").
pub(crate) struct Crc32c {
    state: u32,
}

const fn crc_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

static CRC_TABLES: [[u32; 256]; 8] = crc_tables();

impl Crc32c {
    pub(crate) fn new() -> Self {
        Crc32c { state: !0 }
    }

    pub(crate) fn update(&mut self, mut data: &[u8]) {
        let t = &CRC_TABLES;
        let mut c = self.state;
        while data.len() >= 8 {
            let lo = c ^ u32::from_le_bytes(data[..4].try_into().expect("4 bytes"));
            let hi = u32::from_le_bytes(data[4..8].try_into().expect("4 bytes"));
            c = t[7][(lo & 0xff) as usize]
                ^ t[6][((lo >> 8) & 0xff) as usize]
                ^ t[5][((lo >> 16) & 0xff) as usize]
                ^ t[4][(lo >> 24) as usize]
                ^ t[3][(hi & 0xff) as usize]
                ^ t[2][((hi >> 8) & 0xff) as usize]
                ^ t[1][((hi >> 16) & 0xff) as usize]
                ^ t[0][(hi >> 24) as usize];
            data = &data[8..];
        }
        for &b in data {
            c = (c >> 8) ^ t[0][((c ^ u32::from(b)) & 0xff) as usize];
        }
        self.state = c;
    }

    pub(crate) fn value(&self) -> u32 {
        !self.state
    }
}

#[cfg(test)]
mod tests {
    use super::Crc32c;

    #[test]
    fn crc32c_matches_the_published_check_value() {
        // The check value of CRC-32C (RFC 3720, and every CRC catalogue): "123456789".
        let mut c = Crc32c::new();
        c.update(b"123456789");
        assert_eq!(c.value(), 0xe306_9283);
        // Split anywhere, the same.
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut whole = Crc32c::new();
        whole.update(&data);
        for cut in [0, 1, 7, 8, 9, 500, 999] {
            let mut parts = Crc32c::new();
            parts.update(&data[..cut]);
            parts.update(&data[cut..]);
            assert_eq!(parts.value(), whole.value(), "cut at {cut}");
        }
    }
}
