//! Random sparse graphs: no geometry at all, the opposite of a grid, for timing general-graph
//! solvers (and the GPU's fixed costs) on graphs that no grid specialisation can help.
//!
//! `nodes` nodes; node `v` gets `degree / 2` edges to uniformly drawn other nodes (parallel edges
//! allowed), each stored as an arc pair with both capacities uniform in `[1, max_cap]`, so the
//! average node has `degree` arcs counting both directions. A quarter of the nodes, drawn at
//! random, get a source arc and another quarter a sink arc, each uniform in
//! `[1, degree · max_cap / 2]`: about what the node's own edges can carry, so that neither the
//! terminals nor the edges alone decide the cut.

use std::fmt;
use std::str::FromStr;

use super::grid::split_option;
use crate::graph::{Cap, CsrBuilder, CsrGraph, MAX_NODES};
use crate::rng::Rng;
use crate::{Error, Result};

/// Parameters of a random sparse graph.
///
/// Text form (`Display` / `FromStr`): `sparse:NODES[:dDEGREE][:mMAX_CAP][:sSEED]`, defaults
/// `d6`, `m1000`, `s1`, e.g. `sparse:1048576:d6:m1000:s2`.
///
/// ```
/// use segcut::gen::{random_sparse, SparseSpec};
/// let spec = SparseSpec { nodes: 100, ..SparseSpec::default() };
/// let g = random_sparse(&spec).unwrap();
/// assert_eq!(g.num_nodes(), 100);
/// assert_eq!(g.num_arcs(), 100 * 6); // 3 edges per node, each stored as two arcs
/// assert_eq!(spec.to_string().parse::<SparseSpec>().unwrap(), spec);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparseSpec {
    /// Number of nodes (at least 2).
    pub nodes: usize,
    /// Average arcs per node, both directions counted: an even number in `2..=64`.
    pub degree: usize,
    /// Largest arc capacity; capacities are uniform in `[1, max_cap]`.
    pub max_cap: Cap,
    /// Seed of the edges and capacities.
    pub seed: u64,
}

impl Default for SparseSpec {
    /// 65536 nodes, degree 6, capacities up to 1000, seed 1.
    fn default() -> Self {
        SparseSpec {
            nodes: 1 << 16,
            degree: 6,
            max_cap: 1000,
            seed: 1,
        }
    }
}

impl SparseSpec {
    /// A spec with `nodes` nodes and the default degree, capacities and seed.
    pub fn new(nodes: usize) -> Self {
        SparseSpec {
            nodes,
            ..SparseSpec::default()
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> Option<usize> {
        Some(self.nodes)
    }

    /// Checks every parameter; the error names the one at fault.
    pub fn check(&self) -> Result<()> {
        let SparseSpec {
            nodes,
            degree,
            max_cap,
            ..
        } = *self;
        if !(2..=MAX_NODES).contains(&nodes) {
            return Err(Error::Graph(format!(
                "sparse: the node count must be in 2..={MAX_NODES}, got {nodes}"
            )));
        }
        if !(2..=64).contains(&degree) || degree % 2 != 0 {
            return Err(Error::Graph(format!(
                "sparse: the degree must be an even number in 2..=64, got {degree}"
            )));
        }
        if max_cap < 1 {
            return Err(Error::Graph(format!(
                "sparse: max_cap must be at least 1, got {max_cap}"
            )));
        }
        if nodes as u128 * degree as u128 > (u32::MAX - 16) as u128 {
            return Err(Error::Graph(format!(
                "sparse: {nodes} nodes of degree {degree} is more arcs than 32-bit arc indices \
                 allow"
            )));
        }
        // The terminal capacities reach degree · max_cap / 2.
        if degree as i128 * max_cap as i128 / 2 > Cap::MAX as i128 {
            return Err(Error::Overflow(format!(
                "sparse: degree·max_cap/2 = {degree}·{max_cap}/2 exceeds {}",
                Cap::MAX
            )));
        }
        Ok(())
    }
}

impl fmt::Display for SparseSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sparse:{}:d{}:m{}:s{}",
            self.nodes, self.degree, self.max_cap, self.seed
        )
    }
}

impl FromStr for SparseSpec {
    type Err = Error;

    /// Parses `sparse:NODES[:dDEGREE][:mMAX_CAP][:sSEED]` (syntax only; see
    /// [`check`](Self::check)).
    fn from_str(text: &str) -> Result<Self> {
        let bad = |msg: String| Error::Input {
            file: format!("sparse spec '{text}'"),
            msg,
        };
        let mut parts = text.split(':');
        if parts.next() != Some("sparse") {
            return Err(bad("expected it to start with 'sparse:'".into()));
        }
        let whole = |v: &str, what: &str| {
            v.parse::<u64>()
                .map_err(|_| bad(format!("{what} '{v}' is not a whole number")))
        };
        let nodes = parts
            .next()
            .ok_or_else(|| bad("missing the node count".into()))?;
        let mut spec = SparseSpec::new(whole(nodes, "node count")? as usize);
        let mut seen = Vec::new();
        for opt in parts {
            let (key, value) = split_option(opt, &["d", "m", "s"]).ok_or_else(|| {
                bad(format!(
                    "unknown option '{opt}' (expected dDEGREE, mMAX_CAP or sSEED)"
                ))
            })?;
            if seen.contains(&key) {
                return Err(bad(format!("option '{key}' given twice")));
            }
            seen.push(key);
            match key {
                "d" => spec.degree = whole(value, "degree")? as usize,
                "m" => {
                    spec.max_cap = value.parse().map_err(|_| {
                        bad(format!(
                            "max_cap '{value}' is not a capacity (0 ..= {})",
                            Cap::MAX
                        ))
                    })?
                }
                _ => spec.seed = whole(value, "seed")?,
            }
        }
        Ok(spec)
    }
}

/// Generates the random sparse graph of `spec`; see the [module docs](self).
///
/// ```
/// use segcut::gen::{random_sparse, SparseSpec};
/// let a = random_sparse(&SparseSpec { nodes: 50, seed: 3, ..SparseSpec::default() }).unwrap();
/// let b = random_sparse(&SparseSpec { nodes: 50, seed: 3, ..SparseSpec::default() }).unwrap();
/// assert_eq!(a.heads(), b.heads()); // the same seed, the same graph
/// assert!(random_sparse(&SparseSpec { degree: 5, ..SparseSpec::default() }).is_err());
/// ```
pub fn random_sparse(spec: &SparseSpec) -> Result<CsrGraph> {
    spec.check()?;
    let SparseSpec {
        nodes: n,
        degree,
        max_cap,
        seed,
    } = *spec;
    let mut builder = CsrBuilder::with_capacity(n, n * degree / 2);
    let mut rng = Rng::new(seed);
    let terminal_max = (degree as i64 * max_cap as i64 / 2).max(1);
    for v in 0..n {
        for _ in 0..degree / 2 {
            // Uniform over the other n - 1 nodes: draw from 0..n-1 and skip v.
            let mut u = rng.below(n as u64 - 1) as usize;
            if u >= v {
                u += 1;
            }
            let cap = rng.range_i64(1, max_cap as i64) as Cap;
            let rev = rng.range_i64(1, max_cap as i64) as Cap;
            builder.add_edge(v as u32, u as u32, cap, rev)?;
        }
        let t = rng.range_i64(1, terminal_max) as Cap;
        match rng.below(4) {
            0 => builder.add_terminals(v as u32, t, 0)?,
            1 => builder.add_terminals(v as u32, 0, t)?,
            _ => {}
        }
    }
    builder.build()
}
