//! The names of the solvers: [`SolverKind`].

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// The max-flow solvers segcut ships, by the names the command line and the Python package use.
///
/// | kind | name | runs on | takes |
/// |------|------|---------|-------|
/// | [`Auto`](SolverKind::Auto) | `auto` | picks one of the others per graph ([`AutoPolicy`](super::AutoPolicy)) | any graph |
/// | [`Bk`](SolverKind::Bk) | `bk` | CPU: Boykov–Kolmogorov | any graph |
/// | [`Dinic`](SolverKind::Dinic) | `dinic` | CPU: Dinic's blocking flows, a simple reference | any graph |
/// | [`CudaGrid`](SolverKind::CudaGrid) | `cuda-grid` | GPU: tiled push-relabel | grids only |
/// | [`CudaCsr`](SolverKind::CudaCsr) | `cuda-csr` | GPU: worklist push-relabel | any graph |
///
/// ```
/// use segcut::maxflow::SolverKind;
/// let k: SolverKind = "cuda-grid".parse().unwrap();
/// assert_eq!(k, SolverKind::CudaGrid);
/// assert_eq!(k.to_string(), "cuda-grid");
/// assert!("cuda".parse::<SolverKind>().unwrap_err().to_string().contains("cuda-grid"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SolverKind {
    /// The best solver for each graph on this machine (see [`AutoPolicy`](super::AutoPolicy)).
    #[default]
    Auto,
    /// Boykov–Kolmogorov on the CPU.
    Bk,
    /// Dinic's algorithm on the CPU.
    Dinic,
    /// The tiled GPU push-relabel for grids.
    CudaGrid,
    /// The worklist GPU push-relabel for general graphs.
    CudaCsr,
}

impl SolverKind {
    /// Every kind with its name, in the order help texts list them.
    pub const ALL: [(SolverKind, &'static str); 5] = [
        (SolverKind::Auto, "auto"),
        (SolverKind::Bk, "bk"),
        (SolverKind::Dinic, "dinic"),
        (SolverKind::CudaGrid, "cuda-grid"),
        (SolverKind::CudaCsr, "cuda-csr"),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("auto", |(_, n)| n)
    }

    /// Every name, for help texts and parsers.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|(_, n)| *n)
    }

    /// Whether the solver runs on a GPU.
    pub fn is_gpu(self) -> bool {
        matches!(self, SolverKind::CudaGrid | SolverKind::CudaCsr)
    }

    /// Whether the solver takes grid graphs only.
    pub fn grids_only(self) -> bool {
        self == SolverKind::CudaGrid
    }
}

impl fmt::Display for SolverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Serialised as its name (`"cuda-grid"`), as the command line and the JSON outputs show it.
impl serde::Serialize for SolverKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl FromStr for SolverKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "unknown solver '{s}' (available: {})",
                    Self::names().collect::<Vec<_>>().join(", ")
                ))
            })
    }
}
