//! How long-running library calls report progress: through a [`Progress`] the caller hands in.
//! The library itself prints nothing; the command line implements this trait with progress
//! bars, a batch job with log lines, a test with a counter.
//!
//! ```
//! use segcut::progress::Progress;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! /// Counts what it is told.
//! #[derive(Default)]
//! struct Count(AtomicU64);
//! impl Progress for Count {
//!     fn advance(&self, n: u64) {
//!         self.0.fetch_add(n, Ordering::Relaxed);
//!     }
//! }
//!
//! let c = Count::default();
//! c.start(Some(10));
//! c.advance(4);
//! c.advance(6);
//! assert_eq!(c.0.load(Ordering::Relaxed), 10);
//! ```

/// A receiver of progress reports. Every method has a default that ignores the report, so an
/// implementation picks what it shows. Implementations must be cheap: readers call
/// [`advance`](Progress::advance) once per block read.
pub trait Progress: Send + Sync {
    /// Work of `total` units (bytes for readers, items for batches) is starting; `None` when
    /// the total is not known.
    fn start(&self, total: Option<u64>) {
        let _ = total;
    }

    /// `n` more units are done.
    fn advance(&self, n: u64) {
        let _ = n;
    }

    /// A one-line note for the user about the work in progress (a fallback taken, an input
    /// skipped).
    fn note(&self, text: &str) {
        let _ = text;
    }
}

/// Reports nowhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Progress for Silent {}

/// A shared progress receiver, as options structs hold it.
pub type SharedProgress = std::sync::Arc<dyn Progress>;

/// Wraps a reader and reports the bytes read from it.
pub struct ReadProgress<R> {
    inner: R,
    progress: Option<SharedProgress>,
}

impl<R> ReadProgress<R> {
    /// Reports the bytes read from `inner` to `progress`, if any.
    pub fn new(inner: R, progress: Option<SharedProgress>) -> Self {
        ReadProgress { inner, progress }
    }
}

impl<R: std::io::Read> std::io::Read for ReadProgress<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(p) = &self.progress {
            p.advance(n as u64);
        }
        Ok(n)
    }
}
