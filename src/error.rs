//! The library's error type.

use std::path::PathBuf;

/// Every error the library returns. Messages name the file and line (or node) at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A malformed input file: `file:line: message`.
    #[error("{file}:{line}: {msg}")]
    Parse {
        /// The file (or archive member) being read.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        msg: String,
    },
    /// A problem with a whole input file that no single line is to blame for.
    #[error("{file}: {msg}")]
    Input {
        /// The file (or archive member).
        file: String,
        /// What was wrong.
        msg: String,
    },
    /// An I/O error on a named path.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A graph that cannot be built or solved as given (bad index, negative capacity, ...).
    #[error("invalid graph: {0}")]
    Graph(String),
    /// Capacities whose sums would not fit the solver's integer widths.
    #[error("capacity overflow: {0}")]
    Overflow(String),
    /// A cut whose capacity differs from the flow value: the result is not proven optimal.
    #[error(
        "certificate failed: flow value {flow} but the returned cut has capacity {cut_capacity}"
    )]
    Certificate {
        /// The flow value the solver reported.
        flow: i64,
        /// The capacity of the cut it returned, from the original capacities.
        cut_capacity: i64,
    },
    /// Arc flows that break a capacity, conservation or the flow value (see
    /// [`verify_flows`](crate::maxflow::verify_flows)).
    #[error("flow check failed: {0}")]
    InvalidFlow(String),
    /// A request that this build or this machine cannot serve.
    #[error("{0}")]
    Unsupported(String),
    /// A job that needs more memory than this process may use (see
    /// [`memory_budget`](crate::io::memory_budget)), refused before the allocation: what it was,
    /// what it needed, the budget, and what to change.
    #[error("{0}")]
    Memory(String),
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Shorthand for `Result<T, segcut::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
