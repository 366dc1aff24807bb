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
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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

/// The files a run reads and the files it will write, checked before any work starts: no output
/// may be one of the inputs (under any name: links and `..` are resolved) or another output, and
/// every output's folder must exist and take a new file.
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
    inputs: Vec<(FileId, String)>,
    outputs: Vec<(FileId, String)>,
}

/// A file's identity: its resolved path, and for an existing file its device and inode (hard
/// links share them).
#[derive(Debug, Clone)]
struct FileId {
    path: PathBuf,
    inode: Option<(u64, u64)>,
}

impl FileId {
    fn of(path: &Path) -> Result<Self> {
        let name = path.file_name().ok_or_else(|| Error::Input {
            file: path.display().to_string(),
            msg: "not a file name".into(),
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
        let resolved = dir.join(name);
        // An existing file (or a link to one) is known by its inode, whatever the name.
        let real = std::fs::canonicalize(&resolved).unwrap_or(resolved);
        Ok(FileId {
            inode: inode(&real),
            path: real,
        })
    }

    fn same(&self, other: &FileId) -> bool {
        self.path == other.path || (self.inode.is_some() && self.inode == other.inode)
    }
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
    /// Records an input file (`role` names it in messages: `image`, `seeds`, ...).
    pub fn input(&mut self, path: &Path, role: &str) -> Result<()> {
        self.inputs.push((FileId::of(path)?, role.to_string()));
        Ok(())
    }

    /// Records an output file, refusing one that is an input or an earlier output, and one whose
    /// folder is missing or does not take new files.
    pub fn output(&mut self, path: &Path, role: &str) -> Result<()> {
        let id = FileId::of(path)?;
        let clash = |what: &str| Error::Input {
            file: path.display().to_string(),
            msg: format!("the {role} output is {what}; refusing to overwrite it"),
        };
        if let Some((_, r)) = self.inputs.iter().find(|(i, _)| i.same(&id)) {
            return Err(clash(&format!("the {r} input")));
        }
        if let Some((_, r)) = self.outputs.iter().find(|(o, _)| o.same(&id)) {
            return Err(clash(&format!("also the {r} output")));
        }
        if id.path.is_dir() {
            return Err(Error::Input {
                file: path.display().to_string(),
                msg: format!("the {role} output names a folder, not a file"),
            });
        }
        // The folder must take a new file: try the temporary file every write starts with.
        drop(AtomicFile::create(path)?);
        self.outputs.push((id, role.to_string()));
        Ok(())
    }
}
