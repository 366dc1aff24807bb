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
use crate::graph::{Connectivity, CsrGraph, CsrParts, GridGraph, Network};
use crate::{Error, Result};

/// The first eight bytes of every `.sgb` file.
pub const SGB_MAGIC: &[u8; 8] = b"SEGCUTG\0";
/// The newest version this build writes and reads: 2 stores a grid as the grid's own arrays
/// (general graphs are written as version 1, which has not changed).
pub const SGB_VERSION: u32 = 2;
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
    let header =
        |w: &mut Crc32cWriter<_>, version: u32, flags: u32, dims: [usize; 3], counts: [u64; 9]| {
            w.write_all(SGB_MAGIC)?;
            w.write_all(&version.to_le_bytes())?;
            w.write_all(&flags.to_le_bytes())?;
            for d in dims {
                w.write_all(&(d as u64).to_le_bytes())?;
            }
            for c in counts {
                w.write_all(&c.to_le_bytes())?;
            }
            std::io::Result::Ok(())
        };
    let ids = [
        inst.source_id,
        inst.sink_id,
        inst.declared_nodes,
        inst.declared_arcs,
        inst.dropped_arcs,
        inst.paired_arcs,
    ];
    match (&inst.network, &inst.layout) {
        (Network::Grid(g), layout) => {
            // Version 2: the grid's own arrays, so that reading one is a read into them.
            let from_hint = matches!(
                layout,
                Layout::Grid {
                    from_hint: true,
                    ..
                }
            );
            let conn = g.connectivity();
            let flags = 1 | (u32::from(conn.is_3d()) << 1) | (u32::from(from_hint) << 2);
            let n = g.num_nodes() as u64;
            let degree = conn.degree() as u64;
            let [a, b, c, d, e, f] = ids;
            header(
                &mut w,
                SGB_VERSION,
                flags,
                g.dims(),
                [n, degree, 0, a, b, c, d, e, f],
            )?;
            for k in 0..conn.degree() {
                write_le(&mut w, g.caps(k), i32::to_le_bytes)?;
            }
            write_le(&mut w, g.source_caps(), i32::to_le_bytes)?;
            write_le(&mut w, g.sink_caps(), i32::to_le_bytes)?;
        }
        (Network::Csr(csr), _) => {
            // Version 1, which every reader knows.
            let [a, b, c, d, e, f] = ids;
            let counts = [
                csr.num_nodes() as u64,
                csr.num_arcs() as u64,
                csr.constant_flow() as u64,
                a,
                b,
                c,
                d,
                e,
                f,
            ];
            header(&mut w, 1, 0, [0; 3], counts)?;
            write_le(&mut w, csr.first(), u32::to_le_bytes)?;
            write_le(&mut w, csr.heads(), u32::to_le_bytes)?;
            write_le(&mut w, csr.sisters(), u32::to_le_bytes)?;
            for arr in [csr.caps(), csr.source_caps(), csr.sink_caps()] {
                write_le(&mut w, arr, i32::to_le_bytes)?;
            }
        }
    }
    let crc = w.crc.value();
    w.inner.write_all(&crc.to_le_bytes())?;
    w.inner.flush()
}

/// Writes `arr` little-endian (`bytes`: the type's `to_le_bytes`), a quarter-million values at a
/// time.
fn write_le<W: Write, T: Copy, const B: usize>(
    w: &mut W,
    arr: &[T],
    bytes: fn(T) -> [u8; B],
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(arr.len().min(1 << 18) * B);
    for chunk in arr.chunks(1 << 18) {
        buf.clear();
        buf.extend(chunk.iter().flat_map(|&v| bytes(v)));
        w.write_all(&buf)?;
    }
    Ok(())
}

/// Reads an `.sgb` graph from `r`; `name` names it in errors.
pub fn read_sgb<R: Read>(mut r: R, name: &str) -> Result<MaxInstance> {
    read_from(Body::Stream(&mut r), name)
}

/// [`read_sgb`] of a file on disk: the arrays are read with positioned reads on every core,
/// each piece straight into its place in the final arrays and checksummed while it is in the
/// cache. (No memory map: a file cut short or changed while it is read must give an error, not
/// a bus error.)
#[cfg(unix)]
pub(super) fn read_sgb_file(
    file: &std::fs::File,
    name: &str,
    progress: Option<&crate::progress::SharedProgress>,
) -> Result<MaxInstance> {
    read_from(Body::File(file, progress), name)
}

/// Where the bytes come from.
enum Body<'a> {
    Stream(&'a mut dyn Read),
    #[cfg(unix)]
    File(
        &'a std::fs::File,
        Option<&'a crate::progress::SharedProgress>,
    ),
}

impl Body<'_> {
    /// The header's bytes.
    fn header(&mut self, head: &mut [u8]) -> std::io::Result<()> {
        match self {
            Body::Stream(r) => r.read_exact(head),
            #[cfg(unix)]
            Body::File(f, _) => {
                use std::os::unix::fs::FileExt;
                f.read_exact_at(head, 0)
            }
        }
    }

    /// Fills `views` one after the other with the bytes after the header, then up to `tail`'s
    /// length more: the bytes read (fewer than asked where the input ends) and the CRC-32C of
    /// the views' bytes (meaningful only when they were all filled).
    fn fill(&mut self, mut views: Vec<&mut [u8]>, tail: &mut [u8]) -> std::io::Result<(u64, u32)> {
        match self {
            Body::Stream(r) => {
                let mut got = 0u64;
                for v in views.iter_mut() {
                    let n = read_full(r, v)?;
                    got += n as u64;
                    if n < v.len() {
                        return Ok((got, 0));
                    }
                }
                got += read_full(r, tail)? as u64;
                let parts: Vec<&[u8]> = views.iter().map(|v| &v[..]).collect();
                Ok((got, crc_of(&parts)))
            }
            #[cfg(unix)]
            Body::File(f, progress) => {
                let (f, progress) = (*f, *progress);
                use rayon::prelude::*;
                use std::os::unix::fs::FileExt;
                let read_at = |buf: &mut [u8], mut at: u64| -> std::io::Result<usize> {
                    let mut n = 0;
                    while n < buf.len() {
                        match f.read_at(&mut buf[n..], at) {
                            Ok(0) => break,
                            Ok(k) => {
                                n += k;
                                at += k as u64;
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(e),
                        }
                    }
                    Ok(n)
                };
                let mut pieces = Vec::new();
                let mut at = HEADER as u64;
                let size = piece_size(views.iter().map(|v| v.len()).sum());
                for v in views {
                    for piece in v.chunks_mut(size) {
                        let len = piece.len() as u64;
                        pieces.push((at, piece));
                        at += len;
                    }
                }
                let done: Vec<(usize, usize, u32)> = pieces
                    .into_par_iter()
                    .map(|(at, buf)| {
                        let n = read_at(buf, at)?;
                        let mut c = Crc32c::new();
                        c.update(&buf[..n]);
                        if let Some(p) = progress {
                            p.advance(n as u64);
                        }
                        Ok((buf.len(), n, c.value()))
                    })
                    .collect::<std::io::Result<_>>()?;
                let (mut got, mut crc) = (0u64, Crc32c::new().value());
                for (want, n, c) in done {
                    got += n as u64;
                    if n < want {
                        return Ok((got, 0));
                    }
                    crc = crc32c_combine(crc, c, n as u64);
                }
                got += read_at(tail, at)? as u64;
                Ok((got, crc))
            }
        }
    }
}

/// Bytes per piece of the parallel reads and checksums at most.
const PIECE: usize = 4 << 20;

/// Bytes per piece for a body of `total` bytes: [`PIECE`], or less for a small file, so that
/// every core gets about four pieces (a 25 MB file in 4 MiB pieces kept 6 of 16 cores busy),
/// but not below 512 KiB (a positioned read and a checksum each).
fn piece_size(total: usize) -> usize {
    let per_core = total.div_ceil(4 * rayon::current_num_threads().max(1));
    per_core.next_multiple_of(64 << 10).clamp(512 << 10, PIECE)
}

/// `len` zeroed values, or `None` where the memory cannot be had. Zeroed by the allocator: a
/// large block comes as fresh pages that are zero already, first touched by the reads that
/// fill them (on every core), so no pass writes zeros that the reads then overwrite.
fn alloc<T: bytemuck::Pod>(len: usize) -> Option<Vec<T>> {
    let v = bytemuck::allocation::try_zeroed_slice_box(len)
        .ok()
        .map(<[T]>::into_vec)?;
    crate::io::advise_huge_pages(&v);
    Some(v)
}

fn read_from(mut r: Body<'_>, name: &str) -> Result<MaxInstance> {
    let err = |msg: String| Error::Input {
        file: name.to_string(),
        msg,
    };
    let mut head = [0u8; HEADER];
    r.header(&mut head)
        .map_err(|e| err(format!("not a complete .sgb header: {e}")))?;
    if &head[..8] != SGB_MAGIC {
        return Err(err("not an .sgb file (wrong magic)".into()));
    }
    let u32_at = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if !(1..=SGB_VERSION).contains(&version) {
        return Err(err(format!(
            ".sgb version {version} is not supported (this build reads versions 1 to \
             {SGB_VERSION})"
        )));
    }
    let flags = u32_at(12);
    let dims = [u64_at(16), u64_at(24), u64_at(32)];
    let c: Vec<u64> = (0..9).map(|k| u64_at(40 + 8 * k)).collect();
    let (n, m) = (c[0], c[1]);
    let grid = grid_header(flags, dims, n).map_err(err)?;
    // Version 2 stores a grid as its own arrays: `m` is then the connectivity's degree.
    let grid_arrays = match grid {
        Some((_, is_3d)) if version >= 2 => {
            let conn = match (is_3d, m) {
                (false, 4) => Connectivity::N4,
                (false, 8) => Connectivity::N8,
                (true, 6) => Connectivity::N6,
                (true, 26) => Connectivity::N26,
                _ => {
                    return Err(err(format!(
                        "the header says a {} grid of {m} directions: a grid has 4 or 8 (2D), \
                         6 or 26 (3D)",
                        if is_3d { "3D" } else { "2D" }
                    )))
                }
            };
            if c[2] != 0 {
                return Err(err(format!(
                    "the header gives a grid a constant flow of {}: a grid has none",
                    c[2] as i64
                )));
            }
            Some(conn)
        }
        _ => None,
    };
    // The body's size follows from n and m: check it against memory before reading it.
    let words = match grid_arrays {
        Some(conn) => n.checked_mul(conn.degree() as u64 + 2),
        None => n
            .checked_add(1)
            .and_then(|f| f.checked_add(n.checked_mul(2)?))
            .and_then(|x| x.checked_add(m.checked_mul(3)?)),
    };
    let body = words
        .and_then(|words| words.checked_mul(4))
        .filter(|_| n <= crate::graph::MAX_NODES as u64 && m < u64::from(u32::MAX))
        .ok_or_else(|| {
            err(format!(
                "the header declares {n} nodes and {m} arcs: too many"
            ))
        })?;
    // The arrays read, and for a version 1 grid also the grid and a byte per arc while one is
    // made from the other.
    let grid_bytes = match (grid, grid_arrays) {
        (Some((_, is_3d)), None) => {
            let words = 2 + if is_3d { 26 } else { 8 };
            n.saturating_mul(4 * words)
                .saturating_add(m)
                .saturating_add(body)
        }
        _ => 0,
    };
    let need = body.saturating_add(grid_bytes);
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
    let short = |got: u64| {
        err(format!(
            "the file is {} bytes long where its header implies {}: truncated or padded",
            HEADER as u64 + got,
            HEADER as u64 + body + 4
        ))
    };
    // Each array is read straight into its own vector (the file's layout is the arrays' in
    // memory on a little-endian machine), its checksum computed on every core: loading is a
    // read and a checksum.
    let (nu, mu) = (n as usize, m as usize);
    let oom = || err("not enough memory for the graph".into());
    let mut tail = [0u8; 5];
    let mut check = |views: Vec<&mut [u8]>| -> Result<()> {
        let (got, crc) = r
            .fill(views, &mut tail)
            .map_err(|e| err(format!("read error: {e}")))?;
        if got != body + 4 {
            return Err(short(got));
        }
        let mut h = Crc32c::new();
        h.update(&head);
        let computed = crc32c_combine(h.value(), crc, body);
        let stored = u32::from_le_bytes(tail[..4].try_into().expect("4 bytes"));
        if computed != stored {
            return Err(err(format!(
                "checksum mismatch (stored {stored:08x}, computed {computed:08x}): the file is \
                 corrupt"
            )));
        }
        Ok(())
    };
    if let (Some((d, _)), Some(conn)) = (grid, grid_arrays) {
        let mut caps: Vec<Vec<i32>> = Vec::with_capacity(conn.degree());
        for _ in 0..conn.degree() {
            caps.push(alloc(nu).ok_or_else(oom)?);
        }
        let mut source: Vec<i32> = alloc(nu).ok_or_else(oom)?;
        let mut sink: Vec<i32> = alloc(nu).ok_or_else(oom)?;
        {
            let mut views: Vec<&mut [u8]> = caps
                .iter_mut()
                .map(|c| bytemuck::cast_slice_mut(c))
                .collect();
            views.push(bytemuck::cast_slice_mut(&mut source));
            views.push(bytemuck::cast_slice_mut(&mut sink));
            check(views)?;
        }
        #[cfg(target_endian = "big")]
        for a in caps.iter_mut().chain([&mut source, &mut sink]) {
            a.iter_mut().for_each(|x| *x = i32::from_le(*x));
        }
        let g = GridGraph::from_arrays(d, conn, caps, source, sink)
            .and_then(|g| g.validate().map(|_| g))
            .map_err(|e| err(e.to_string()))?;
        let layout = Layout::Grid {
            dims: d,
            connectivity: conn,
            from_hint: flags & 4 != 0,
        };
        return finish(name, Network::Grid(g), layout, flags, dims, &c);
    }
    let mut first: Vec<u32> = alloc(nu + 1).ok_or_else(oom)?;
    let mut head_: Vec<u32> = alloc(mu).ok_or_else(oom)?;
    let mut sister: Vec<u32> = alloc(mu).ok_or_else(oom)?;
    let mut cap: Vec<i32> = alloc(mu).ok_or_else(oom)?;
    let mut source: Vec<i32> = alloc(nu).ok_or_else(oom)?;
    let mut sink: Vec<i32> = alloc(nu).ok_or_else(oom)?;
    check(vec![
        bytemuck::cast_slice_mut(&mut first),
        bytemuck::cast_slice_mut(&mut head_),
        bytemuck::cast_slice_mut(&mut sister),
        bytemuck::cast_slice_mut(&mut cap),
        bytemuck::cast_slice_mut(&mut source),
        bytemuck::cast_slice_mut(&mut sink),
    ])?;
    #[cfg(target_endian = "big")]
    {
        for a in [&mut first, &mut head_, &mut sister] {
            a.iter_mut().for_each(|x| *x = u32::from_le(*x));
        }
        for a in [&mut cap, &mut source, &mut sink] {
            a.iter_mut().for_each(|x| *x = i32::from_le(*x));
        }
    }
    // A flow must fit 64 bits: the constant and every source capacity together bound it (a
    // file from the text reader always passes; a crafted constant near 2^63 would make the
    // solvers fail on an accepted graph).
    let most = {
        use rayon::prelude::*;
        source.par_iter().map(|&c| i128::from(c)).sum::<i128>() + i128::from(c[2] as i64)
    };
    if most > i128::from(i64::MAX) {
        return Err(err(format!(
            "the constant flow {} and the source capacities add up to more than a 64-bit flow",
            c[2] as i64
        )));
    }
    let parts = CsrParts {
        first,
        head: head_,
        sister,
        cap,
        source,
        sink,
        constant: c[2] as i64,
    };
    let csr = CsrGraph::from_parts(parts).map_err(|e| err(e.to_string()))?;
    let (network, layout) = if let Some((d, is_3d)) = grid {
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
    finish(name, network, layout, flags, dims, &c)
}

/// The instance, once the terminal ids are checked.
fn finish(
    name: &str,
    network: Network,
    layout: Layout,
    flags: u32,
    dims: [u64; 3],
    c: &[u64],
) -> Result<MaxInstance> {
    let (source_id, sink_id) = (c[3], c[4]);
    if source_id == sink_id || source_id == 0 || sink_id == 0 {
        return Err(Error::Input {
            file: name.to_string(),
            msg: format!("source id {source_id} and sink id {sink_id} must differ and be positive"),
        });
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

/// The grid a header announces (`[W, H, D]` and whether it is 3D), `None` for a general graph,
/// or why the header cannot be right: unknown flag bits, a 3D or hint flag without the grid
/// flag, a zero or overflowing size, `D > 1` in 2D, or `W·H·D` other than the node count. All
/// checked before anything is allocated, since the grid's arrays are sized by these numbers.
fn grid_header(
    flags: u32,
    dims: [u64; 3],
    n: u64,
) -> std::result::Result<Option<([usize; 3], bool)>, String> {
    if flags & !7 != 0 {
        return Err(format!("unknown flags {flags:#x} in the header"));
    }
    if flags & 1 == 0 {
        if flags != 0 {
            return Err(format!(
                "flags {flags:#x} mark a 3D or hinted grid without the grid flag"
            ));
        }
        return Ok(None);
    }
    let [w, h, d] = dims;
    let is_3d = flags & 2 != 0;
    let size = w
        .checked_mul(h)
        .and_then(|x| x.checked_mul(d))
        .filter(|_| w > 0 && h > 0 && d > 0);
    if size != Some(n) || (!is_3d && d != 1) {
        return Err(format!(
            "the header says grid {w}x{h}x{d}{} but {n} nodes",
            if is_3d { "" } else { " (2D)" }
        ));
    }
    // Each side is at most n, which fits in usize (n is checked against MAX_NODES first).
    Ok(Some((dims.map(|x| x as usize), is_3d)))
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The CRC-32C of `parts` one after the other, computed in 4 MiB pieces on every core and
/// combined in order.
fn crc_of(parts: &[&[u8]]) -> u32 {
    use rayon::prelude::*;
    let pieces: Vec<&[u8]> = parts.iter().flat_map(|p| p.chunks(4 << 20)).collect();
    let crcs: Vec<(u32, usize)> = pieces
        .par_iter()
        .map(|p| {
            let mut c = Crc32c::new();
            c.update(p);
            (c.value(), p.len())
        })
        .collect();
    let mut all = Crc32c::new();
    all.update(&[]);
    crcs.into_iter().fold(all.value(), |acc, (c, len)| {
        crc32c_combine(acc, c, len as u64)
    })
}

/// `crc(A ‖ B)` from `crc(A)`, `crc(B)` and the length of `B`: `crc(A)` carried through
/// `len_b` zero bytes by squaring the one-zero-bit operator over GF(2) (as zlib's
/// `crc32_combine`, with the Castagnoli polynomial), then `crc(B)` added.
pub(crate) fn crc32c_combine(crc_a: u32, crc_b: u32, len_b: u64) -> u32 {
    fn times(mat: &[u32; 32], mut v: u32) -> u32 {
        let mut sum = 0;
        let mut i = 0;
        while v != 0 {
            if v & 1 != 0 {
                sum ^= mat[i];
            }
            v >>= 1;
            i += 1;
        }
        sum
    }
    fn square(mat: &[u32; 32]) -> [u32; 32] {
        std::array::from_fn(|n| times(mat, mat[n]))
    }
    if len_b == 0 {
        return crc_a;
    }
    // The operator for one zero bit, then for two, four: `odd` and `even` alternate.
    let mut odd = [0u32; 32];
    odd[0] = 0x82f6_3b78;
    for (n, row) in odd.iter_mut().enumerate().skip(1) {
        *row = 1 << (n - 1);
    }
    let mut even = square(&odd);
    odd = square(&even);
    let (mut crc, mut len) = (crc_a, len_b);
    loop {
        // Each round squares the operator (one zero byte, then two, four, ...).
        even = square(&odd);
        if len & 1 != 0 {
            crc = times(&even, crc);
        }
        len >>= 1;
        if len == 0 {
            break;
        }
        odd = square(&even);
        if len & 1 != 0 {
            crc = times(&odd, crc);
        }
        len >>= 1;
        if len == 0 {
            break;
        }
    }
    crc ^ crc_b
}

/// The CRC-32C register `c` carried over `data` by the SSE 4.2 `crc32` instruction, eight bytes
/// at a time: the same polynomial as the tables, so both give the same value.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(mut c: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut words = data.chunks_exact(8);
    let mut c64 = u64::from(c);
    for w in &mut words {
        c64 = _mm_crc32_u64(c64, u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    c = c64 as u32;
    for &b in words.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    c
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

    pub(crate) fn update(&mut self, data: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU was just seen to have SSE 4.2, the only feature the function uses.
            self.state = unsafe { crc32c_sse42(self.state, data) };
            return;
        }
        self.update_tables(data);
    }

    /// [`update`](Self::update) from the tables alone (about 1.5 GB/s a core; the SSE 4.2
    /// instruction does 8 bytes a cycle).
    fn update_tables(&mut self, mut data: &[u8]) {
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
    fn crc_of_pieces_combines_to_the_crc_of_the_whole() {
        let data: Vec<u8> = (0..(9u32 << 20)).map(|i| (i * 31 + 7) as u8).collect();
        let mut whole = Crc32c::new();
        whole.update(&data);
        for cut in [0, 1, 4095, 4 << 20, (4 << 20) + 3, data.len()] {
            let (a, b) = data.split_at(cut);
            assert_eq!(super::crc_of(&[a, b]), whole.value(), "cut at {cut}");
        }
        assert_eq!(super::crc_of(&[]), Crc32c::new().value());
    }

    #[test]
    fn crc32c_instruction_and_tables_agree() {
        // Every length around the 8-byte steps, from a register that is not the initial one.
        let data: Vec<u8> = (0..300u32).map(|i| (i * 131 + 17) as u8).collect();
        for start in [0, 1, 5] {
            for len in 0..=(data.len() - start) {
                let part = &data[start..start + len];
                let (mut fast, mut tables) = (Crc32c { state: 0x1234_5678 }, Crc32c::new());
                tables.state = 0x1234_5678;
                fast.update(part);
                tables.update_tables(part);
                assert_eq!(fast.value(), tables.value(), "start {start}, length {len}");
            }
        }
    }

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
