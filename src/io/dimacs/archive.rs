//! Opening files: plain, `.gz`, `.bz2`, and tar archives of many `.max` / `.sol` members (the
//! way the Waterloo benchmark ships each sequence, as `.tbz2`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::binary::{read_sgb, SGB_MAGIC};
use super::reader::{parse_max, parse_max_text, parse_sol};
use super::{member_key, stem_of, strip_suffix_ci, MaxInstance, ReadOptions};
use crate::io::escape_text;
use crate::progress::ReadProgress;
use crate::{Error, Result};

/// A compression layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Compression {
    None,
    Gzip,
    Bzip2,
}

impl Compression {
    /// How a read error in this layer is described.
    fn describe(self) -> &'static str {
        match self {
            Compression::None => "input",
            Compression::Gzip => "gzip data",
            Compression::Bzip2 => "bzip2 data",
        }
    }

    /// `r`, decompressed. Multi-stream decoders, since parallel compressors (pigz, pbzip2)
    /// write one stream per block; bzip2 blocks are decoded on every core.
    fn decode<'a, R: Read + 'a>(self, r: R) -> Box<dyn Read + 'a> {
        match self {
            Compression::None => Box::new(r),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
            Compression::Bzip2 => Box::new(super::bz2::ParBzDecoder::new(r)),
        }
    }
}

const GZIP_EXT: &[&str] = &[".gz", ".tgz"];
const BZIP2_EXT: &[&str] = &[".bz2", ".tbz2", ".tbz"];
const TAR_EXT: &[&str] = &[".tar", ".tgz", ".tbz2", ".tbz", ".tar.gz", ".tar.bz2"];

fn has_ext(name: &str, exts: &[&str]) -> bool {
    exts.iter().any(|e| strip_suffix_ci(name, e).is_some())
}

/// The compression a file name announces.
pub(super) fn compression_of_name(name: &str) -> Compression {
    if has_ext(name, GZIP_EXT) {
        Compression::Gzip
    } else if has_ext(name, BZIP2_EXT) {
        Compression::Bzip2
    } else {
        Compression::None
    }
}

/// The compression the first bytes show, if any: checked by structure, not only the magic
/// number. A gzip member header is `1f 8b`, method 8 (deflate) and no reserved flag bits; a
/// bzip2 stream is `BZh`, a block size digit `1`–`9`, then the 48-bit magic of a block
/// (`31 41 59 26 53 59`) or of the end of the stream (`17 72 45 38 50 90`).
pub(super) fn compression_of_magic(head: &[u8]) -> Option<Compression> {
    if head.len() >= 4 && head[..3] == [0x1f, 0x8b, 8] && head[3] & 0xe0 == 0 {
        return Some(Compression::Gzip);
    }
    if head.len() >= 10
        && head.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&head[3])
        && (head[4..10] == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
            || head[4..10] == [0x17, 0x72, 0x45, 0x38, 0x50, 0x90])
    {
        return Some(Compression::Bzip2);
    }
    None
}

/// Whether the first bytes are a tar header: recognised by its checksum (bytes 148..156, the
/// octal sum of the header's 512 bytes with the checksum field taken as spaces), which text
/// files do not have, rather than by the `ustar` magic alone, which a `.max` comment can hold.
pub(super) fn is_tar_header(head: &[u8]) -> bool {
    let Some(h) = head.get(..512) else {
        return false;
    };
    let field = &h[148..156];
    let digits: Vec<u8> = field
        .iter()
        .copied()
        .skip_while(|&b| b == b' ')
        .take_while(|&b| (b'0'..=b'7').contains(&b))
        .collect();
    let rest_ok = field
        .iter()
        .skip_while(|&b| *b == b' ')
        .skip(digits.len())
        .all(|&b| b == 0 || b == b' ');
    if digits.is_empty() || !rest_ok {
        return false;
    }
    let stored = digits
        .iter()
        .fold(0u64, |v, &d| v * 8 + u64::from(d - b'0'));
    let sum: u64 = h
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(b)
            }
        })
        .sum();
    // A header of zeros (the end-of-archive block) sums to 256 with the spaces: not a member.
    stored == sum && h[0] != 0
}

/// A stream whose first bytes were read ahead to look at them. A read error met while reading
/// ahead is kept and returned in its place in the stream, so that the parser reports it at the
/// line where it happened.
struct Peeked<R> {
    head: io::Cursor<Vec<u8>>,
    error: Option<io::Error>,
    rest: R,
}

impl<R: Read> Peeked<R> {
    /// Reads up to `n` bytes ahead.
    fn new(mut rest: R, n: usize) -> Self {
        let mut head = vec![0; n];
        let mut len = 0;
        let mut error = None;
        while len < n {
            match rest.read(&mut head[len..]) {
                Ok(0) => break,
                Ok(k) => len += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        head.truncate(len);
        Peeked {
            head: io::Cursor::new(head),
            error,
            rest,
        }
    }

    fn head(&self) -> &[u8] {
        self.head.get_ref()
    }
}

impl<R: Read> Read for Peeked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.head.read(buf)?;
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => self.rest.read(buf),
        }
    }
}

/// An archive member's data, with early end of data made an error (the tar reader reports a
/// truncated member as a short read).
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the archive member ends {} bytes early", self.left),
            ));
        }
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

/// Reads every max-flow instance in `path` and calls `f` on each, in file order.
///
/// `path` may be a plain `.max` file, a `.max.gz` or `.max.bz2`, a binary `.sgb` graph
/// ([`write_sgb`](super::write_sgb)), or a tar archive (`.tar`,
/// `.tar.gz`/`.tgz`, `.tar.bz2`/`.tbz2`) of `.max` and `.sol` members, which may themselves be
/// compressed. The format is recognised by structure first (gzip and bzip2 headers, a tar
/// header's checksum), by the extension otherwise. An instance's `expected_flow` is set when
/// its `.sol` (the same path inside the archive but for the extension,
/// [`MaxInstance::key`]) came earlier in the archive or, for a single file, lies next to it
/// on disk. Returns every `.sol` value seen by that key, so that a caller can match `.sol`
/// members that come after their `.max`. Two `.max` members with the same key are refused.
///
/// Errors name the file as `archive.tbz2:member.max` with the line at fault; an archive without
/// any `.max` member is an error too.
///
/// ```
/// use segcut::io::dimacs::{read_instances, ReadOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("pair.max");
/// std::fs::write(&path, "p max 3 2\nn 1 s\nn 2 t\na 1 3 4\na 3 2 5\n").unwrap();
/// std::fs::write(dir.path().join("pair.sol"), "s 4\n").unwrap();
/// let mut flows = Vec::new();
/// read_instances(&path, &ReadOptions::default(), |inst| {
///     flows.push(inst.expected_flow);
///     Ok(())
/// })
/// .unwrap();
/// assert_eq!(flows, [Some(4)]);
/// ```
pub fn read_instances(
    path: &Path,
    opts: &ReadOptions,
    mut f: impl FnMut(MaxInstance) -> Result<()>,
) -> Result<BTreeMap<String, i64>> {
    // Escaped: a file name may hold terminal escape sequences, and it appears in messages.
    let name = escape_text(&path.display().to_string());
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    if let Some(p) = &opts.progress {
        p.start(file.metadata().ok().map(|m| m.len()));
    }
    let raw = ReadProgress::new(file, opts.progress.clone());
    let raw = Peeked::new(raw, 512);
    let comp = compression_of_magic(raw.head()).unwrap_or_else(|| compression_of_name(&name));
    let data = Peeked::new(comp.decode(raw), 512);
    if is_tar_header(data.head()) || (has_ext(&name, TAR_EXT) && !looks_like_text(data.head())) {
        return read_tar(path, &name, Box::new(data), comp, f);
    }
    let mut inst = if data.head().starts_with(SGB_MAGIC) {
        if cfg!(unix) && comp == Compression::None {
            // Read again by position, on every core, into the final arrays.
            drop(data);
            let file = File::open(path).map_err(|e| Error::io(path, e))?;
            read_sgb_at(&file, &name, opts)?
        } else {
            read_sgb(data, &name)?
        }
    } else {
        // A file can be opened again, should the grid placement need a general reread.
        let reopen = || -> Result<Box<dyn Read>> {
            let file = File::open(path).map_err(|e| Error::io(path, e))?;
            Ok(comp.decode(file))
        };
        // A `.gz` file inflated whole where that pays (`gz::read_whole`); streamed where it is
        // refused, and also where the parse of the whole text failed: the stream gives the
        // same graph or error, and the text held may be what ran short of memory.
        let whole = match comp {
            Compression::Gzip => super::gz::read_whole(path, opts.progress.as_ref()),
            _ => None,
        };
        // Else inflated on every core where that is chosen (`gz::par_reader`); any error of
        // that read (a file it refuses, or one the parse refuses) is had again from the stream,
        // so that messages and budgets are the stream's.
        let par = match (comp, &whole) {
            (Compression::Gzip, None) => super::gz::par_reader(path),
            _ => None,
        };
        let parsed = match (whole, par) {
            (Some(text), _) => parse_max_text(text, &name).ok().flatten(),
            (None, Some(r)) => parse_max(r, &name, comp.describe(), Some(&reopen)).ok(),
            (None, None) => None,
        };
        match parsed {
            Some(inst) => inst,
            None => parse_max(data, &name, comp.describe(), Some(&reopen))?,
        }
    };
    let stem = stem_of(&name).to_string();
    let mut sols = BTreeMap::new();
    let sol_path = path.with_file_name(format!("{stem}.sol"));
    if sol_path.is_file() {
        let sol_name = sol_path.display().to_string();
        let sol_file = File::open(&sol_path).map_err(|e| Error::io(&sol_path, e))?;
        let flow = parse_sol(sol_file, &sol_name, "input")?;
        sols.insert(stem, flow);
        inst.expected_flow = Some(flow);
    }
    f(inst)?;
    Ok(sols)
}

/// An uncompressed `.sgb` file read with positioned reads on every core.
#[cfg(unix)]
fn read_sgb_at(file: &File, name: &str, opts: &ReadOptions) -> Result<MaxInstance> {
    super::binary::read_sgb_file(file, name, opts.progress.as_ref())
}

#[cfg(not(unix))]
fn read_sgb_at(file: &File, name: &str, _: &ReadOptions) -> Result<MaxInstance> {
    read_sgb(io::BufReader::new(file), name)
}

/// Whether the first bytes look like a DIMACS text file (printable ASCII and whitespace only),
/// so that a `.max` misnamed `.tar` is still read as what it is.
fn looks_like_text(head: &[u8]) -> bool {
    !head.is_empty()
        && head
            .iter()
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
}

/// The members of a tar stream, in order.
fn read_tar(
    path: &Path,
    name: &str,
    data: Box<dyn Read + '_>,
    outer: Compression,
    mut f: impl FnMut(MaxInstance) -> Result<()>,
) -> Result<BTreeMap<String, i64>> {
    let corrupt = |e: io::Error| Error::Input {
        file: name.to_string(),
        // Escaped: the tar reader quotes header bytes in its messages.
        msg: format!(
            "corrupt or truncated archive: {}",
            escape_text(&e.to_string())
        ),
    };
    // Where a member's data ends early, the outer layer is the likely culprit.
    let outer_desc = match outer {
        Compression::None => "archive",
        c => c.describe(),
    };
    let mut archive = tar::Archive::new(data);
    let mut sols = BTreeMap::new();
    let mut max_members: BTreeMap<String, String> = BTreeMap::new();
    let mut found_max = false;
    for entry in archive.entries().map_err(corrupt)? {
        let entry = entry.map_err(corrupt)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let member_name = format!("{name}:{}", escape_text(&member));
        let inner = compression_of_name(&member);
        let base = strip_suffix_ci(&member, ".gz")
            .or_else(|| strip_suffix_ci(&member, ".bz2"))
            .unwrap_or(&member);
        let is_max = strip_suffix_ci(base, ".max").is_some();
        let is_sol = strip_suffix_ci(base, ".sol").is_some();
        if !is_max && !is_sol {
            continue;
        }
        let size = entry.size();
        let at = entry.raw_file_position();
        let exact = Exact {
            inner: entry,
            left: size,
        };
        let desc = if inner == Compression::None {
            outer_desc
        } else {
            inner.describe()
        };
        // `.sol` values are matched by the member's whole path (`a/dup.sol` to `a/dup.max`),
        // never by the bare file name, which two directories of an archive can share.
        let key = member_key(&member).to_string();
        if is_max {
            found_max = true;
            if let Some(first) = max_members.insert(key.clone(), member_name.clone()) {
                return Err(Error::Input {
                    file: name.to_string(),
                    msg: format!(
                        "the archive holds two .max members named '{}' ({first} and this one): \
                         their results would be indistinguishable",
                        escape_text(&key)
                    ),
                });
            }
            // The member can be had again (the archive opened anew, its data skipped up to the
            // member's), should the grid placement need a general reread.
            let reopen = || -> Result<Box<dyn Read>> {
                let file = File::open(path).map_err(|e| Error::io(path, e))?;
                let mut data = outer.decode(file);
                let skipped = io::copy(&mut (&mut data).take(at), &mut io::sink())
                    .map_err(|e| Error::io(path, e))?;
                if skipped < at {
                    return Err(Error::Input {
                        file: name.to_string(),
                        msg: "the archive changed while it was read".into(),
                    });
                }
                let exact = Exact {
                    inner: data.take(size),
                    left: size,
                };
                Ok(inner.decode(exact))
            };
            let mut inst = parse_max(inner.decode(exact), &member_name, desc, Some(&reopen))?;
            inst.expected_flow = sols.get(&key).copied();
            inst.member = Some(member.clone());
            f(inst)?;
        } else {
            let flow = parse_sol(inner.decode(exact), &member_name, desc)?;
            sols.insert(key, flow);
        }
    }
    if !found_max {
        return Err(Error::Input {
            file: name.to_string(),
            msg: "the archive holds no .max file".into(),
        });
    }
    Ok(sols)
}
