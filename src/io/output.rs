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
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file for `target` (in the same folder, so the rename cannot cross
    /// file systems). Fails, naming `target`, when the folder is missing or not writable.
    pub fn create(target: &Path) -> Result<Self> {
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
            temp,
            file: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, syncs the data to disk, and renames the file over the target. Any failure is an
    /// error naming the target; the temporary file is then removed and the target is untouched.
    pub fn commit(mut self) -> Result<()> {
        let file = self.file.take().expect("committed once");
        let result = (|| -> std::io::Result<()> {
            let file = file.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            drop(file);
            std::fs::rename(&self.temp, &self.target)?;
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
            let _ = std::fs::remove_file(&self.temp);
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
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
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
