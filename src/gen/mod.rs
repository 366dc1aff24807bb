//! Deterministic instance generators: vision-like grids, GENRMF, Washington random level
//! graphs and random sparse graphs.
//!
//! Every generator draws from [`crate::rng::Rng`] only, so the same spec gives the same graph on
//! every platform and crate version, and every one checks its parameters and returns a
//! [`crate::Error`] rather than panicking. Each family has a spec type with a compact text form, and
//! [`InstanceSpec`] names any of them in one string for the command line and benchmark suites:
//!
//! | text | family |
//! | --- | --- |
//! | `2d:1024x1024:n4:c10:s1`, `3d:128x128x128:n6:c100:s7` | [`vision_grid`] ([`GridSpec`]) |
//! | `genrmf:a32:b1024:c1-10000:s1` | [`genrmf()`] ([`GenrmfSpec`]) |
//! | `genrmf-long:20:s1`, `genrmf-wide:20:s1` | [`GenrmfSpec::long`], [`GenrmfSpec::wide`] (`2^20` nodes) |
//! | `rlg:64x1024:d3:m10000:s1` | [`washington_rlg`] ([`WashingtonSpec`]) |
//! | `rlg-long:20:s1`, `rlg-wide:20:s1` | [`WashingtonSpec::long`], [`WashingtonSpec::wide`] |
//! | `sparse:1048576:d6:m1000:s1` | [`random_sparse`] ([`SparseSpec`]) |
//!
//! The construction of each family is described in its module: [`grid`], [`mod@genrmf`],
//! [`washington`], [`sparse`].
//!
//! ```
//! use segcut::gen::{generate, InstanceSpec};
//! use segcut::graph::FlowNetwork;
//!
//! let spec: InstanceSpec = "genrmf-long:8:s3".parse().unwrap();
//! let net = generate(&spec).unwrap();
//! assert_eq!(net.num_nodes(), 4 * 4 * 16 - 2);
//! ```

pub mod genrmf;
pub mod grid;
pub mod sparse;
pub mod washington;

use std::fmt;
use std::str::FromStr;

pub use genrmf::{genrmf, GenrmfSpec};
pub use grid::{
    grid_from_scene, vision_grid, vision_grid_with, vision_scene, GridSpec, Scene, VisionOptions,
    DEFAULT_HARD_SEEDS, DEFAULT_MEMORY_LIMIT, MAX_NOISE, MAX_SCALE,
};
pub use sparse::{random_sparse, SparseSpec};
pub use washington::{washington_rlg, WashingtonSpec};

use crate::graph::Network;
use crate::{Error, Result};

/// Any generated instance, by family.
#[derive(Clone, Debug, PartialEq)]
pub enum InstanceSpec {
    /// A vision-like grid.
    Vision(GridSpec),
    /// A GENRMF graph.
    Genrmf(GenrmfSpec),
    /// A Washington random level graph.
    Washington(WashingtonSpec),
    /// A random sparse graph.
    Sparse(SparseSpec),
}

impl InstanceSpec {
    /// The number of non-terminal nodes it generates, when that fits `usize`.
    pub fn num_nodes(&self) -> Option<usize> {
        match self {
            InstanceSpec::Vision(s) => s.num_nodes(),
            InstanceSpec::Genrmf(s) => s.num_nodes(),
            InstanceSpec::Washington(s) => s.num_nodes(),
            InstanceSpec::Sparse(s) => s.num_nodes(),
        }
    }

    /// Checks the parameters without generating anything (vision grids: without the memory
    /// limit, which depends on the machine).
    pub fn check(&self) -> Result<()> {
        match self {
            InstanceSpec::Vision(s) => s.check(u64::MAX),
            InstanceSpec::Genrmf(s) => s.check(),
            InstanceSpec::Washington(s) => s.check(),
            InstanceSpec::Sparse(s) => s.check(),
        }
    }
}

impl fmt::Display for InstanceSpec {
    /// The family's own text form (presets are written out in full).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstanceSpec::Vision(s) => s.fmt(f),
            InstanceSpec::Genrmf(s) => s.fmt(f),
            InstanceSpec::Washington(s) => s.fmt(f),
            InstanceSpec::Sparse(s) => s.fmt(f),
        }
    }
}

impl FromStr for InstanceSpec {
    type Err = Error;

    /// Parses any form in the [module table](self); the family is named by the first field.
    fn from_str(text: &str) -> Result<Self> {
        let family = text.split(':').next().unwrap_or("");
        match family {
            "2d" | "3d" => Ok(InstanceSpec::Vision(text.parse()?)),
            "genrmf" => Ok(InstanceSpec::Genrmf(text.parse()?)),
            "rlg" => Ok(InstanceSpec::Washington(text.parse()?)),
            "sparse" => Ok(InstanceSpec::Sparse(text.parse()?)),
            "genrmf-long" | "genrmf-wide" | "rlg-long" | "rlg-wide" => {
                let (x, seed) = parse_preset(text)?;
                Ok(match family {
                    "genrmf-long" => InstanceSpec::Genrmf(GenrmfSpec::long(x, seed)?),
                    "genrmf-wide" => InstanceSpec::Genrmf(GenrmfSpec::wide(x, seed)?),
                    "rlg-long" => InstanceSpec::Washington(WashingtonSpec::long(x, seed)?),
                    _ => InstanceSpec::Washington(WashingtonSpec::wide(x, seed)?),
                })
            }
            other => Err(Error::Input {
                file: format!("instance spec '{text}'"),
                msg: format!(
                    "unknown family '{other}' (expected 2d, 3d, genrmf, genrmf-long, genrmf-wide, \
                     rlg, rlg-long, rlg-wide or sparse)"
                ),
            }),
        }
    }
}

/// `FAMILY:LOG2_NODES[:sSEED]` → (log2 nodes, seed).
fn parse_preset(text: &str) -> Result<(u32, u64)> {
    let bad = |msg: String| Error::Input {
        file: format!("instance spec '{text}'"),
        msg,
    };
    let mut parts = text.split(':').skip(1);
    let x = parts
        .next()
        .ok_or_else(|| bad("missing the size, log2 of the node count (e.g. ':20')".into()))?;
    let x = x
        .parse::<u32>()
        .map_err(|_| bad(format!("size '{x}' is not log2 of a node count (e.g. 20)")))?;
    let mut seed = 1;
    if let Some(opt) = parts.next() {
        seed = opt
            .strip_prefix('s')
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| bad(format!("'{opt}' is not a seed 'sN'")))?;
    }
    if let Some(extra) = parts.next() {
        return Err(bad(format!("unexpected field '{extra}' after the seed")));
    }
    Ok((x, seed))
}

/// Generates the instance named by `spec` (vision grids with the default [`VisionOptions`]).
pub fn generate(spec: &InstanceSpec) -> Result<Network> {
    match spec {
        InstanceSpec::Vision(s) => Ok(Network::Grid(vision_grid(s)?)),
        InstanceSpec::Genrmf(s) => Ok(Network::Csr(genrmf(s)?)),
        InstanceSpec::Washington(s) => Ok(Network::Csr(washington_rlg(s)?)),
        InstanceSpec::Sparse(s) => Ok(Network::Csr(random_sparse(s)?)),
    }
}
