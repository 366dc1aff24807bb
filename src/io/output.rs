//! Writing output files safely: every file segcut writes goes to a temporary file beside its
//! target, is flushed and synced, and only then renamed over the target. A failure at any point
//! (a full disk, a killed process, an encoder error) removes the temporary file and leaves the
//! previous file at the target, if there was one, untouched.
//!
//! ```
//! use std::io::Write;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("out.txt");
//! segcut::io::write_atomic(&path, |w| w.write_all(b"hello\n")).unwrap();
//! assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
//!
//! // A failed write leaves the old file as it was.
//! let failed = segcut::io::write_atomic(&path, |w| {
//!     w.write_all(b"half")?;
//!     Err(std::io::Error::other("encoder failed"))
//! });
//! assert!(failed.is_err());
//! assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
//! ```

use crate::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Component, Path, PathBuf};

/// A file being written: a temporary file in the target's folder, renamed over the target by
/// [`commit`](AtomicFile::commit). Dropped without a commit, it removes the temporary file.
///
/// A target that exists and is not a regular file (a device such as `/dev/null`, a pipe) is
/// written directly: there is no earlier file to protect, and renaming over it would replace
/// the device itself. Errors still surface at [`commit`](AtomicFile::commit).
pub struct AtomicFile {
    target: PathBuf,
    /// The temporary file; `None` when writing straight to a special file.
    temp: Option<PathBuf>,
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file for `target` (in the same folder, so the rename cannot cross
    /// file systems). Fails, naming `target`, when the folder is missing or not writable.
    pub fn create(target: &Path) -> Result<Self> {
        if let Ok(m) = std::fs::metadata(target) {
            if !m.is_file() && !m.is_dir() {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(target)
                    .map_err(|e| Error::io(target, e))?;
                return Ok(AtomicFile {
                    target: target.to_path_buf(),
                    temp: None,
                    file: Some(BufWriter::with_capacity(1 << 20, file)),
                });
            }
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .ok_or_else(|| Error::Input {
                file: target.display().to_string(),
                msg: "not a file name".into(),
            })?
            .to_string_lossy();
        // Unique per process and per call, so concurrent writers never share a temporary file.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.{}-{n}.segcut-tmp", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| Error::io(target, e))?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp: Some(temp),
            file: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes and syncs the data written so far to disk (what [`commit`](Self::commit) does
    /// before its rename), so that a full disk shows up here.
    pub fn sync(&mut self) -> std::io::Result<()> {
        let f = self.file.as_mut().expect("not committed");
        f.flush()?;
        match self.temp {
            Some(_) => f.get_ref().sync_all(),
            // Devices and pipes cannot be synced; the flush surfaced any write error.
            None => Ok(()),
        }
    }

    /// Flushes, syncs the data to disk, and renames the file over the target. Any failure is an
    /// error naming the target; the temporary file is then removed and the target is untouched.
    pub fn commit(mut self) -> Result<()> {
        let file = self.file.take().expect("committed once");
        let Some(temp) = self.temp.clone() else {
            return file
                .into_inner()
                .map(drop)
                .map_err(|e| Error::io(&self.target, e.into_error()));
        };
        let result = (|| -> std::io::Result<()> {
            let file = file.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            drop(file);
            std::fs::rename(&temp, &self.target)?;
            // The rename itself is durable once the folder is synced; where folders cannot be
            // opened for that (some file systems), the file is still complete.
            if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty()) {
                if let Ok(d) = File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            Ok(())
        })();
        result.map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            Error::io(&self.target, e)
        })
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let (Some(_), Some(temp)) = (self.file.take(), &self.temp) {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Writes `path` atomically: `write` fills the temporary file, which then replaces `path`. An
/// error from `write` or from the disk leaves `path` as it was.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    write(&mut f).map_err(|e| Error::io(path, e))?;
    f.commit()
}

/// Writes several files as one: each goes to its temporary file first, and only when every one
/// is complete and synced are they renamed over their targets. A failure before that leaves
/// every target as it was (no half set of outputs); the renames themselves, which follow, do not
/// fail on a sound file system.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
/// segcut::io::write_all_atomic(vec![(a.clone(), b"A".to_vec()), (b.clone(), b"B".to_vec())])
///     .unwrap();
/// assert_eq!(std::fs::read(&b).unwrap(), b"B");
/// // The second target's folder is missing: neither file is written.
/// let bad = dir.path().join("no-such-folder").join("c.txt");
/// let failed = segcut::io::write_all_atomic(vec![(a.clone(), b"new".to_vec()), (bad, vec![])]);
/// assert!(failed.is_err());
/// assert_eq!(std::fs::read(&a).unwrap(), b"A");
/// ```
pub fn write_all_atomic(files: Vec<(PathBuf, Vec<u8>)>) -> Result<()> {
    let staged = files
        .iter()
        .map(|(path, bytes)| stage(path, bytes))
        .collect::<Result<Vec<_>>>()?;
    commit_all(staged)
}

/// Writes `bytes` to a temporary file for `path` and syncs it, without renaming it yet: a
/// staged output for [`commit_all`].
pub fn stage(path: &Path, bytes: &[u8]) -> Result<AtomicFile> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.sync().map_err(|e| Error::io(path, e))?;
    Ok(f)
}

/// Renames staged outputs over their targets, in order. Stage every output of a run first, so
/// that a failure while writing any of them leaves all targets as they were.
pub fn commit_all(staged: Vec<AtomicFile>) -> Result<()> {
    staged.into_iter().try_for_each(AtomicFile::commit)
}

/// What an output file holds, for the check of its name: a name that says another format is
/// refused before any work (`stereo -o d.jpg` would otherwise hold PNG bytes, `--json d.png`
/// JSON, `--cut g.max` a list of node ids).
///
/// Binary formats need one of their own endings. Text formats (a cut, flows, JSON) also take a
/// name with no extension or one segcut does not know (`cut.txt`, `run.log`), but not one that
/// says another format (`.png`, `.max`, `.gz`: a reader would expect that format's bytes).
///
/// ```
/// use segcut::io::output_format::{DISPARITY, JSON};
/// use std::path::Path;
/// assert!(DISPARITY.check(Path::new("d.pfm")).is_ok());
/// assert!(DISPARITY.check(Path::new("d.jpg")).is_err());
/// assert!(JSON.check(Path::new("scores.txt")).is_ok());
/// assert!(JSON.check(Path::new("scores")).is_ok());
/// assert!(JSON.check(Path::new("d.png")).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// What is written, for messages ("JSON", "a PNG image").
    pub name: &'static str,
    /// The name endings, lowercase, that say this format (`.png`, `.max.gz`).
    pub endings: &'static [&'static str],
    /// Text that a name of no known format may also hold.
    pub text: bool,
}

/// Name endings of the formats segcut reads or writes, and of common ones a name could be
/// mistaken for: a text output is refused under any of these that is not its own.
const KNOWN_ENDINGS: &[&str] = &[
    ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".pgm", ".ppm", ".pbm",
    ".pnm", ".tga", ".ico", ".exr", ".hdr", ".avif", ".qoi", ".ff", ".dds", ".pfm", ".nii", ".gz",
    ".bz2", ".xz", ".zst", ".zip", ".tar", ".tgz", ".tbz2", ".tbz", ".sgb", ".max", ".sol",
    ".json", ".jsonl", ".ndjson", ".csv", ".cut", ".flow", ".ptx", ".cubin",
];

impl Format {
    /// Checks `path`'s name against the format (see [`Format`]).
    pub fn check(&self, path: &Path) -> Result<()> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if self.endings.iter().any(|e| name.ends_with(e)) {
            return Ok(());
        }
        let other = KNOWN_ENDINGS.iter().find(|e| name.ends_with(*e));
        if self.text && other.is_none() {
            return Ok(());
        }
        let endings = self.endings.join(", ");
        let msg = match other {
            Some(e) => format!(
                "this output is {}, but its name ends in {e}, another format; name it {endings}",
                self.name
            ),
            None => format!("unknown output format for {}: name it {endings}", self.name),
        };
        Err(Error::Input {
            file: path.display().to_string(),
            msg,
        })
    }
}

/// The formats of segcut's outputs other than masks (whose check is
/// [`check_mask_path`](crate::io::check_mask_path), by the data's shape too).
pub mod output_format {
    use super::Format;

    /// JSON (`--json`, `--stats-json`).
    pub const JSON: Format = Format {
        name: "JSON",
        endings: &[".json"],
        text: true,
    };
    /// A cut as text: source-side node ids, one per line (`maxflow --cut`, batch max-flow jobs).
    pub const CUT: Format = Format {
        name: "a cut (text: node ids)",
        endings: &[".cut", ".txt"],
        text: true,
    };
    /// Arc flows in the DIMACS solution format (`maxflow --flows`).
    pub const FLOWS: Format = Format {
        name: "flows (DIMACS solution text)",
        endings: &[".flow", ".sol", ".txt"],
        text: true,
    };
    /// A disparity map: grey PNG (8 or 16 bits) or PFM, by the name.
    pub const DISPARITY: Format = Format {
        name: "a disparity map (PNG or PFM)",
        endings: &[".png", ".pfm"],
        text: false,
    };
    /// A PNG picture (colour-mapped disparities, label maps).
    pub const PNG: Format = Format {
        name: "a PNG image",
        endings: &[".png"],
        text: false,
    };
    /// A DIMACS max-flow file, plain or compressed by the name's ending.
    pub const DIMACS: Format = Format {
        name: "a DIMACS .max graph",
        endings: &[".max", ".max.gz", ".max.bz2"],
        text: false,
    };
    /// A graph in DIMACS text or segcut's binary `.sgb`, by the name's ending.
    pub const GRAPH: Format = Format {
        name: "a graph (.sgb or DIMACS .max)",
        endings: &[".sgb", ".max", ".max.gz", ".max.bz2"],
        text: false,
    };
    /// A batch summary: its CSV or JSON-lines half.
    pub const SUMMARY: Format = Format {
        name: "a batch summary (CSV and JSON lines)",
        endings: &[".csv", ".jsonl"],
        text: false,
    };
}

/// The files a run reads and the files it will write, checked before any work starts: no output
/// may be one of the inputs (under any name: links and `..` are resolved, hard links are known by
/// their inode) or another output, and every output's folder must exist and take a new file.
///
/// ```
/// use segcut::io::OutputPlan;
/// let dir = tempfile::tempdir().unwrap();
/// let photo = dir.path().join("photo.png");
/// std::fs::write(&photo, b"...").unwrap();
/// let mut plan = OutputPlan::default();
/// plan.input(&photo, "image").unwrap();
/// plan.output(&dir.path().join("mask.png"), "mask").unwrap();
/// let err = plan.output(&dir.path().join(".").join("photo.png"), "overlay").unwrap_err();
/// assert!(err.to_string().contains("is the image"));
/// let err = plan.output(&dir.path().join("mask.png"), "overlay").unwrap_err();
/// assert!(err.to_string().contains("mask"));
/// ```
#[derive(Debug, Default)]
pub struct OutputPlan {
    by_path: HashMap<PathBuf, Entry>,
    by_inode: HashMap<(u64, u64), Entry>,
    /// Folders already shown to take a new file.
    writable: HashSet<PathBuf>,
}

/// A planned file: its role and the name it was given, for messages.
#[derive(Debug, Clone)]
struct Entry {
    role: String,
    given: PathBuf,
    output: bool,
}

/// A file's identity: its resolved path, and for an existing file its device and inode (hard
/// links share them).
#[derive(Debug, Clone)]
struct FileId {
    path: PathBuf,
    inode: Option<(u64, u64)>,
    /// A device or a pipe (`/dev/null`, `/dev/full`): no file to lose, and outputs may share it.
    special: bool,
}

impl FileId {
    fn of(path: &Path) -> Result<Self> {
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| Error::io(path, e))?
                .join(path)
        };
        let real = resolve(&abs);
        let special = std::fs::metadata(&real).is_ok_and(|m| !m.is_file() && !m.is_dir());
        Ok(FileId {
            inode: inode(&real),
            path: real,
            special,
        })
    }
}

/// `path` (absolute) with every link and `..` resolved as far as it exists, and the rest (a
/// folder not made yet) by its components, so that `new/../x.png` is `x.png`.
fn resolve(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let mut out = PathBuf::new();
    let mut exists = true;
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => {
                out.push(c);
                if exists {
                    match std::fs::canonicalize(&out) {
                        Ok(p) => out = p,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    out
}

#[cfg(unix)]
fn inode(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn inode(_: &Path) -> Option<(u64, u64)> {
    None
}

impl OutputPlan {
    /// Records an input file (`role` names it in messages: `image`, `seeds`, ...). A file that
    /// does not exist (yet) is recorded by its resolved path.
    pub fn input(&mut self, path: &Path, role: &str) -> Result<()> {
        let id = FileId::of(path)?;
        self.record(id, path, role, false);
        Ok(())
    }

    /// Records an output file, refusing one that is an input or an earlier output, and one whose
    /// folder is missing or does not take new files.
    pub fn output(&mut self, path: &Path, role: &str) -> Result<()> {
        let id = self.check_new(path, role)?;
        self.add_output(id, path, role)
    }

    /// [`output`](Self::output), and `format` must be what the name says (see [`Format`]).
    pub fn output_as(&mut self, path: &Path, role: &str, format: &Format) -> Result<()> {
        let id = self.check_new(path, role)?;
        format.check(path).map_err(|e| with_role(e, role))?;
        self.add_output(id, path, role)
    }

    fn add_output(&mut self, id: FileId, path: &Path, role: &str) -> Result<()> {
        let dir = id.path.parent().unwrap_or(Path::new("/")).to_path_buf();
        if !self.writable.contains(&dir) {
            // The folder must take a new file: try the temporary file every write starts with.
            drop(AtomicFile::create(path)?);
            self.writable.insert(dir);
        }
        self.record(id, path, role, true);
        Ok(())
    }

    /// Records an output that another process writes (another shard of a batch): it must not be
    /// an input or another output either, but its folder is that process's to make and check.
    pub fn claim(&mut self, path: &Path, role: &str) -> Result<()> {
        let id = self.check_new(path, role)?;
        self.record(id, path, role, true);
        Ok(())
    }

    fn check_new(&self, path: &Path, role: &str) -> Result<FileId> {
        if path.file_name().is_none() {
            return Err(Error::Input {
                file: path.display().to_string(),
                msg: format!("the {role} output is not a file name"),
            });
        }
        let id = FileId::of(path)?;
        let found = self
            .by_path
            .get(&id.path)
            .or_else(|| id.inode.as_ref().and_then(|i| self.by_inode.get(i)));
        if let Some(e) = found.filter(|e| !(e.output && id.special)) {
            let other = if e.given == path {
                String::new()
            } else {
                format!(" ({})", e.given.display())
            };
            let msg = if e.output {
                format!(
                    "the {role} output is also the {} output{other}: one file would be written \
                     twice",
                    e.role
                )
            } else {
                format!(
                    "the {role} output is the {} input{other}; refusing to overwrite it",
                    e.role
                )
            };
            return Err(Error::Input {
                file: path.display().to_string(),
                msg,
            });
        }
        if id.path.is_dir() {
            return Err(Error::Input {
                file: path.display().to_string(),
                msg: format!("the {role} output names a folder, not a file"),
            });
        }
        Ok(id)
    }

    fn record(&mut self, id: FileId, given: &Path, role: &str, output: bool) {
        let entry = Entry {
            role: role.to_string(),
            given: given.to_path_buf(),
            output,
        };
        if let Some(i) = id.inode {
            self.by_inode.entry(i).or_insert_with(|| entry.clone());
        }
        self.by_path.entry(id.path).or_insert(entry);
    }
}

/// A format error with the output's role in front of its message.
fn with_role(e: Error, role: &str) -> Error {
    match e {
        Error::Input { file, msg } => Error::Input {
            file,
            msg: format!("{role}: {msg}"),
        },
        e => e,
    }
}
