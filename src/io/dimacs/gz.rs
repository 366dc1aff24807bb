//! A `.gz` file inflated whole with libdeflate, for the parser to read on every core.
//!
//! libdeflate inflates about twice as fast as zlib, but only from a whole buffer into a whole
//! buffer: the streaming path (flate2, which overlaps inflate with parsing) stays for pipes,
//! for text over the memory budget, for small machines, and for every file this path refuses.
//! A file is taken whole only when it is a regular file and its text fits half the memory
//! budget: the trailer's ISIZE (untrusted, modulo 2^32) sizes the first attempt, checked
//! against the budget before anything is allocated; a member that does not fit grows the
//! buffer by doubling, within the same limit. libdeflate checks each member's CRC-32 and
//! ISIZE; anything it refuses (corrupt, truncated, trailing bytes that are no member) sends
//! the file back to the streaming path, which reports it at its line as before.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use libdeflate_sys::{
    libdeflate_alloc_decompressor, libdeflate_decompressor, libdeflate_free_decompressor,
    libdeflate_gzip_decompress_ex, libdeflate_result,
};

const SUCCESS: libdeflate_result = libdeflate_sys::libdeflate_result_LIBDEFLATE_SUCCESS;
const NO_ROOM: libdeflate_result = libdeflate_sys::libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE;

/// The shortest gzip member: a 10-byte header, an empty deflate block, the 8-byte trailer.
const MIN_MEMBER: usize = 20;

/// Whether inflating whole, then parsing, beats the streaming path's overlap of inflate with
/// parsing. Measured on the 16-core host of an H200 (2026-11-28, `segcut bench --suite load`,
/// median of 3): it does not. libdeflate alone inflated the 1024² grid's text at 432 MB/s against
/// 506 for `gzip -dc` and 448 for the streamed load, and the whole-file load took 397 MB/s of text
/// at 4.7× the graph's memory against 448 MB/s at 1.4×; on 2 cores the overlap wins as well. So
/// no machine chooses it by default; the load suite still times both paths.
pub(super) fn pays_here() -> bool {
    false
}

/// How `.gz` files are read: 0 as [`pays_here`] and [`par_reader`] say, 1 inflated whole
/// wherever that is safe, 2 always streamed, 3 inflated on every core wherever it can be.
/// Set only by the load suite ([`with_choice`]), to time every path on one machine.
static CHOICE: AtomicU8 = AtomicU8::new(0);

/// A way of reading `.gz` files, for the load suite to time each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GzPath {
    /// Inflated whole with libdeflate, then parsed.
    Whole,
    /// Streamed through flate2 on one thread beside the parse.
    Stream,
    /// Inflated on every core in chunks (`pargz`), handed to the parse as it is resolved.
    Parallel,
}

/// Runs `f` with `.gz` files read the `how` way (where safe). Process-wide: for the load
/// suite, which loads one file at a time.
pub(crate) fn with_choice<T>(how: GzPath, f: impl FnOnce() -> T) -> T {
    let c = match how {
        GzPath::Whole => 1,
        GzPath::Stream => 2,
        GzPath::Parallel => 3,
    };
    let was = CHOICE.swap(c, Relaxed);
    let out = f();
    CHOICE.store(was, Relaxed);
    out
}

/// Whether a `.gz` file of `len` bytes would be worth inflating on every core, once the
/// parallel path is chosen by default: at least 2 threads and [`pargz::MIN_FILE`] bytes
/// (smaller files inflate on one thread in about the time the pool takes to start, and the
/// stream overlaps that with the parse anyway). Pipes are never (they cannot be read by
/// position).
///
/// [`pargz::MIN_FILE`]: super::pargz::MIN_FILE
#[allow(dead_code)] // the rule waits for a decoder fast enough to use it (see `par_reader`)
pub(super) fn par_worth_it(len: u64) -> bool {
    len >= super::pargz::MIN_FILE && rayon::current_num_threads() >= 2
}

/// The text of the `.gz` file at `path` inflated on every core (`pargz`), where that is
/// chosen: only where the load suite forces it ([`with_choice`]). It is exact but not yet fast
/// enough to be chosen by default: on the 2-core dev VM (2026-11-28, the 1024² grid's 20 MB
/// `.max.gz`) it inflated 117 MB/s of text on 2 threads against 642 for flate2 on one, because
/// in `.max` text the window's bytes (`"a "`, `"\n"`) are copied on from line to line, so markers
/// never die out and whole chunks are decoded and resolved as `u16`. When it is chosen by
/// default, the rule is [`par_worth_it`]. `None`: streamed. The reader errs where the parallel
/// inflate refuses the file; the caller then streams it, which reports what is wrong at its
/// line.
pub(super) fn par_reader(path: &Path) -> Option<super::pargz::ParGzReader> {
    if CHOICE.load(Relaxed) != 3 {
        return None;
    }
    let file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || !cfg!(unix) {
        return None;
    }
    // The text in flight (two rounds) is held against half the budget, as the whole-file
    // path's text was.
    let limit = usize::try_from(crate::io::memory_budget()?.bytes / 2).unwrap_or(usize::MAX);
    Some(super::pargz::ParGzReader::new(
        file,
        usize::try_from(meta.len()).ok()?,
        limit,
    ))
}

/// libdeflate's decompressor, freed when dropped.
struct Inflater(NonNull<libdeflate_decompressor>);

impl Inflater {
    fn new() -> Option<Self> {
        // SAFETY: no arguments; a null return (no memory) is checked.
        NonNull::new(unsafe { libdeflate_alloc_decompressor() }).map(Inflater)
    }

    /// Inflates the gzip member at the start of `input` into `out`'s spare capacity: the
    /// bytes of input it took, or why not (`Err(true)`: the spare capacity is too small).
    fn member(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, bool> {
        let spare = out.capacity() - out.len();
        let (mut took, mut wrote) = (0usize, 0usize);
        // SAFETY: libdeflate reads at most `input.len()` bytes from `input` and writes at most
        // `spare` bytes from the end of `out`'s initialised part, inside its allocation; on
        // success it wrote exactly `wrote <= spare` bytes there, which the new length takes in.
        let r = unsafe {
            libdeflate_gzip_decompress_ex(
                self.0.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                out.as_mut_ptr().add(out.len()).cast(),
                spare,
                &mut took,
                &mut wrote,
            )
        };
        if r == SUCCESS && wrote <= spare && took <= input.len() {
            // SAFETY: see above.
            unsafe { out.set_len(out.len() + wrote) };
            Ok(took)
        } else {
            Err(r == NO_ROOM)
        }
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // SAFETY: allocated by `libdeflate_alloc_decompressor`, freed once.
        unsafe { libdeflate_free_decompressor(self.0.as_ptr()) }
    }
}

/// The text of every gzip member of `data` in turn (a file of concatenated members reads as
/// their texts one after the other, as `gzip -dc` gives it), or `None`: `data` is not all
/// whole, valid members, or the text would pass `limit` bytes. Never allocates more than
/// `limit` bytes for the text, whatever the trailer says.
pub(crate) fn inflate_members(data: &[u8], limit: usize) -> Option<Vec<u8>> {
    if data.len() < MIN_MEMBER {
        return None;
    }
    // The last member's size modulo 2^32: the whole text's for a file of one member (most).
    let isize = u32::from_le_bytes(data[data.len() - 4..].try_into().ok()?) as usize;
    if isize > limit {
        return None;
    }
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(isize).ok()?;
    // 2 MiB pages where Linux allows: the text's first touch was a page fault per 4 KiB (a
    // third of the CPU time of inflating the 1024² grid's text on the 2-core VM went to
    // the kernel).
    crate::io::advise_huge_pages(out.spare_capacity_mut());
    let mut inflater = Inflater::new()?;
    let mut at = 0;
    while at < data.len() {
        match inflater.member(&data[at..], &mut out) {
            Ok(took) => at += took.max(1),
            Err(true) => {
                // A member larger than the room left (concatenated members, a lying or
                // wrapped ISIZE): more room, then the member again from its start.
                let cap = out.capacity();
                if cap >= limit {
                    return None;
                }
                let grown = cap.saturating_mul(2).max(4 * data.len()).max(1 << 20);
                out.try_reserve_exact(grown.min(limit) - out.len()).ok()?;
                crate::io::advise_huge_pages(out.spare_capacity_mut());
            }
            Err(false) => return None,
        }
    }
    Some(out)
}

/// The text of the `.gz` file at `path` inflated whole, where that pays here and is safe
/// ([`pays_here`], a regular file, the compressed bytes and the text within half the memory
/// budget); `None` sends the caller to the streaming path. `progress` is advanced by the
/// compressed bytes read.
pub(super) fn read_whole(
    path: &Path,
    progress: Option<&crate::progress::SharedProgress>,
) -> Option<Vec<u8>> {
    let whole = match CHOICE.load(Relaxed) {
        0 => pays_here(),
        c => c == 1,
    };
    if !whole {
        return None;
    }
    let limit = usize::try_from(crate::io::memory_budget()?.bytes / 2).unwrap_or(usize::MAX);
    let file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None; // a pipe or a device: streamed
    }
    let len = usize::try_from(meta.len()).ok()?;
    if len > limit {
        return None;
    }
    let mut data = Vec::new();
    data.try_reserve_exact(len).ok()?;
    let mut r = crate::progress::ReadProgress::new(file, progress.cloned());
    // One byte more than the size read at the start: a file that grew meanwhile is streamed.
    (&mut r).take(len as u64 + 1).read_to_end(&mut data).ok()?;
    if data.len() != len {
        return None;
    }
    let t = std::time::Instant::now();
    let text = inflate_members(&data, limit - len);
    crate::phases::mark("gzip: inflating whole (libdeflate)", t);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(text: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    fn text(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"a 1 2 3\n"[i % 8] ^ (i / 4096 % 2) as u8)
            .collect()
    }

    #[test]
    fn one_member_is_its_text() {
        let t = text(300_000);
        assert_eq!(inflate_members(&gz(&t), 1 << 30).unwrap(), t);
        // Over the limit: refused, nothing allocated past it.
        assert_eq!(inflate_members(&gz(&t), t.len() - 1), None);
        assert_eq!(inflate_members(&gz(&t), t.len()).unwrap(), t);
    }

    #[test]
    fn concatenated_members_read_one_after_the_other() {
        let (a, b, c) = (text(200_000), text(5), text(1_000_000));
        let mut file = gz(&a);
        file.extend(gz(b""));
        file.extend(gz(&b));
        file.extend(gz(&c));
        let want: Vec<u8> = [a, b, c].concat();
        assert_eq!(inflate_members(&file, 1 << 30).unwrap(), want);
        // The last member's ISIZE is small: the first one grows the buffer.
        let mut small_last = gz(&want);
        small_last.extend(gz(b"x\n"));
        let got = inflate_members(&small_last, 1 << 30).unwrap();
        assert_eq!(got.len(), want.len() + 2);
        // Only empty members.
        let empty = [gz(b""), gz(b"")].concat();
        assert_eq!(inflate_members(&empty, 1 << 30).unwrap(), b"");
    }

    #[test]
    fn a_lying_isize_is_refused_or_outgrown_never_trusted() {
        let t = text(400_000);
        let good = gz(&t);
        let n = good.len();
        for lie in [0u32, 1, 399_999, 400_001, u32::MAX] {
            let mut f = good.clone();
            f[n - 4..].copy_from_slice(&lie.to_le_bytes());
            // libdeflate checks ISIZE against the text: a lie is a bad member, whatever room
            // it asked for, and a huge one is refused before any allocation.
            assert_eq!(inflate_members(&f, 1 << 30), None, "ISIZE {lie}");
        }
        // The limit holds even where ISIZE says nothing of it (below it, text above it).
        let mut f = gz(&t);
        f.extend(gz(b""));
        assert_eq!(inflate_members(&f, 100_000), None);
    }

    /// What reading `file` gives, in a form to compare: the graph and what the reader found,
    /// or the error's text.
    fn outcome(path: &Path) -> String {
        let mut got = Vec::new();
        let r = crate::io::dimacs::read_instances(path, &Default::default(), |i| {
            let net = match &i.network {
                crate::graph::Network::Grid(g) => format!("{g:?}"),
                crate::graph::Network::Csr(c) => format!("{c:?}"),
            };
            got.push(format!(
                "{net} {} {} {}",
                i.layout, i.paired_arcs, i.dropped_arcs
            ));
            Ok(())
        });
        match r {
            Ok(_) => got.join("\n"),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn the_whole_text_reads_as_the_stream_reads_it() {
        // Graphs and errors through the whole-file path and the streaming path, same files:
        // more than one batch of text, members, the grid placement's reread, errors late.
        let mut rng = crate::rng::Rng::new(3);
        let mut big = String::from("c a general graph\np max 40002 400000\nn 1 s\nn 2 t\n");
        for _ in 0..400_000 {
            let (u, v) = (1 + rng.below(40_002), 1 + rng.below(40_002));
            big += &format!("a {u} {v} {}\n", rng.below(1000));
        }
        // Pixels 0 and 5 of a 3x2 grid are no neighbours: the placement gives up, reads again.
        let grid_not = "c regulargrid 3 2\np max 8 2\nn 1 s\nn 2 t\na 3 8 1\na 8 3 1\n";
        let grid =
            "c regulargrid 2 2\np max 6 4\nn 1 s\nn 2 t\na 1 3 5\na 3 4 1\na 4 3 1\na 6 2 2\n";
        let mid = big.len() / 2 + big[big.len() / 2..].find('\n').unwrap() + 1;
        let late = format!("{}a 0 5 1\n{}", &big[..mid], &big[mid..]);
        let mut bad_end = big.clone();
        bad_end += "a 3 4 oops\n";
        let long = format!(
            "p max 3 1\nn 1 s\nn 2 t\nc {}\na 1 3 4\n",
            "x".repeat(1 << 21)
        );
        let dir = std::env::temp_dir().join(format!("segcut-gz-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("big", gz(big.as_bytes())),
            ("members", {
                let (a, b) = big.as_bytes().split_at(big.len() / 3);
                [gz(a), gz(b""), gz(b)].concat()
            }),
            ("grid", gz(grid.as_bytes())),
            ("grid-not", gz(grid_not.as_bytes())),
            ("late", gz(late.as_bytes())),
            ("bad-end", gz(bad_end.as_bytes())),
            ("long", gz(long.as_bytes())),
            ("empty", gz(b"")),
            ("truncated", gz(big.as_bytes())[..100_000].to_vec()),
        ];
        for (name, bytes) in cases {
            let path = dir.join(format!("{name}.max.gz"));
            std::fs::write(&path, &bytes).unwrap();
            let stream = with_choice(GzPath::Stream, || outcome(&path));
            let par = with_choice(GzPath::Parallel, || outcome(&path));
            assert_eq!(par, stream, "{name}: parallel");
            let whole = with_choice(GzPath::Whole, || {
                let taken = read_whole(&path, None).is_some();
                assert_eq!(taken, name != "truncated", "{name}: taken whole");
                outcome(&path)
            });
            assert_eq!(whole, stream, "{name}");
            let failed = stream.starts_with("error");
            assert_eq!(
                failed,
                ["late", "bad-end", "long", "empty", "truncated"].contains(&name),
                "{name}: {}",
                &stream[..stream.len().min(300)]
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncated_corrupt_or_trailing_bytes_are_refused() {
        let t = text(100_000);
        let good = gz(&t);
        for cut in [0, 1, 10, 19, good.len() / 2, good.len() - 8, good.len() - 1] {
            assert_eq!(inflate_members(&good[..cut], 1 << 30), None, "cut at {cut}");
        }
        let mut crc = good.clone();
        let k = crc.len() - 6;
        crc[k] ^= 1;
        assert_eq!(inflate_members(&crc, 1 << 30), None, "CRC");
        let mut body = good.clone();
        body[40] ^= 0x55;
        assert_eq!(inflate_members(&body, 1 << 30), None, "body");
        for tail in [&b"\0\0\0\0"[..], b"junk that is no gzip member"] {
            let mut f = good.clone();
            f.extend_from_slice(tail);
            assert_eq!(inflate_members(&f, 1 << 30), None, "trailing {tail:?}");
        }
    }
}
