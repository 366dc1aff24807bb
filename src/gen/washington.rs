//! Washington random level graphs (RLG), the family of R. Anderson's "washington" generator used
//! in the DIMACS challenge and in Cherkassky and Goldberg's push-relabel study.
//!
//! `levels` levels of `width` nodes each. Every node of level `k < levels − 1` has arcs to
//! `degree` distinct random nodes of level `k + 1`, capacities uniform in `[1, max_cap]`. The
//! source feeds every node of the first level and every node of the last level feeds the sink,
//! with capacities large enough never to be the only bottleneck: a first-level node's source arc
//! equals the total capacity of its out-arcs, a last-level node's sink arc the total capacity of
//! its in-arcs (no flow through the node can exceed either). Node `(level k, position i)` is
//! `k·width + i`.

use std::fmt;
use std::str::FromStr;

use super::grid::split_option;
use crate::graph::{Cap, CsrBuilder, CsrGraph, MAX_NODES};
use crate::rng::Rng;
use crate::{Error, Result};

/// Parameters of a random level graph.
///
/// Text form (`Display` / `FromStr`): `rlg:LEVELSxWIDTH[:dDEGREE][:mMAX_CAP][:sSEED]`, defaults
/// `d3`, `m10000`, `s1`, e.g. `rlg:64x1024:d3:m10000:s2`.
///
/// ```
/// use segcut::gen::{washington_rlg, WashingtonSpec};
/// let spec = WashingtonSpec { levels: 5, width: 8, ..WashingtonSpec::default() };
/// let g = washington_rlg(&spec).unwrap();
/// assert_eq!(g.num_nodes(), 40);
/// assert_eq!(g.num_arcs(), 2 * 4 * 8 * 3); // each arc is stored with its zero-capacity reverse
/// assert_eq!(spec.to_string().parse::<WashingtonSpec>().unwrap(), spec);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WashingtonSpec {
    /// Number of levels (at least 2).
    pub levels: usize,
    /// Nodes per level.
    pub width: usize,
    /// Out-arcs of each node to distinct nodes of the next level (1 ..= width).
    pub degree: usize,
    /// Largest arc capacity; capacities are uniform in `[1, max_cap]`.
    pub max_cap: Cap,
    /// Seed of the arc choices and capacities.
    pub seed: u64,
}

impl Default for WashingtonSpec {
    /// 64 levels of 64 nodes, degree 3, capacities up to 10000, seed 1.
    fn default() -> Self {
        WashingtonSpec {
            levels: 64,
            width: 64,
            degree: 3,
            max_cap: 10_000,
            seed: 1,
        }
    }
}

impl WashingtonSpec {
    /// The "long" shape: about `2^log2_nodes` nodes, narrow and deep: `width = 2^⌊x/3⌋`,
    /// `levels = 2^(x − ⌊x/3⌋)`; default degree and capacities. `log2_nodes` in 6..=21.
    ///
    /// ```
    /// let s = segcut::gen::WashingtonSpec::long(21, 1).unwrap();
    /// assert_eq!((s.levels, s.width), (16384, 128));
    /// ```
    pub fn long(log2_nodes: u32, seed: u64) -> Result<Self> {
        let (short, long) = Self::split("long", log2_nodes)?;
        Ok(WashingtonSpec {
            levels: long,
            width: short,
            seed,
            ..WashingtonSpec::default()
        })
    }

    /// The "wide" shape: about `2^log2_nodes` nodes, few wide levels: `levels = 2^⌊x/3⌋`,
    /// `width = 2^(x − ⌊x/3⌋)`; default degree and capacities. `log2_nodes` in 6..=21.
    ///
    /// ```
    /// let s = segcut::gen::WashingtonSpec::wide(21, 1).unwrap();
    /// assert_eq!((s.levels, s.width), (128, 16384));
    /// ```
    pub fn wide(log2_nodes: u32, seed: u64) -> Result<Self> {
        let (short, long) = Self::split("wide", log2_nodes)?;
        Ok(WashingtonSpec {
            levels: short,
            width: long,
            seed,
            ..WashingtonSpec::default()
        })
    }

    fn split(name: &str, x: u32) -> Result<(usize, usize)> {
        if !(6..=21).contains(&x) {
            return Err(Error::Graph(format!(
                "washington {name}: log2 of the node count must be in 6..=21, got {x}"
            )));
        }
        Ok((1 << (x / 3), 1 << (x - x / 3)))
    }

    /// Number of nodes, `levels · width`, if it fits `usize`.
    pub fn num_nodes(&self) -> Option<usize> {
        self.levels.checked_mul(self.width)
    }

    /// Checks every parameter; the error names the one at fault.
    pub fn check(&self) -> Result<()> {
        let WashingtonSpec {
            levels,
            width,
            degree,
            max_cap,
            ..
        } = *self;
        if levels < 2 || width == 0 {
            return Err(Error::Graph(format!(
                "washington: need at least 2 levels and 1 node per level, got {levels} levels \
                 of width {width}"
            )));
        }
        if degree == 0 || degree > width {
            return Err(Error::Graph(format!(
                "washington: degree must be in 1..={width} (the level width), got {degree}"
            )));
        }
        if max_cap < 1 {
            return Err(Error::Graph(format!(
                "washington: max_cap must be at least 1, got {max_cap}"
            )));
        }
        let n = self
            .num_nodes()
            .filter(|&n| n <= MAX_NODES)
            .ok_or_else(|| {
                Error::Graph(format!(
                    "washington: {levels} levels × {width} is more than {MAX_NODES} nodes"
                ))
            })?;
        let arcs = 2 * (n - width) as u128 * degree as u128;
        if arcs > (u32::MAX - 16) as u128 {
            return Err(Error::Graph(format!(
                "washington: {arcs} arcs is more than 32-bit arc indices allow"
            )));
        }
        // A first-level node's source arc is the sum of its `degree` out-arcs.
        if degree as i128 * max_cap as i128 > Cap::MAX as i128 {
            return Err(Error::Overflow(format!(
                "washington: degree·max_cap = {degree}·{max_cap} exceeds {}",
                Cap::MAX
            )));
        }
        Ok(())
    }
}

impl fmt::Display for WashingtonSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rlg:{}x{}:d{}:m{}:s{}",
            self.levels, self.width, self.degree, self.max_cap, self.seed
        )
    }
}

impl FromStr for WashingtonSpec {
    type Err = Error;

    /// Parses `rlg:LEVELSxWIDTH[:dDEGREE][:mMAX_CAP][:sSEED]` (syntax only).
    fn from_str(text: &str) -> Result<Self> {
        let bad = |msg: String| Error::Input {
            file: format!("rlg spec '{text}'"),
            msg,
        };
        let mut parts = text.split(':');
        if parts.next() != Some("rlg") {
            return Err(bad("expected it to start with 'rlg:'".into()));
        }
        let size = parts
            .next()
            .ok_or_else(|| bad("missing the size LEVELSxWIDTH".into()))?;
        let (l, w) = size
            .split_once('x')
            .ok_or_else(|| bad(format!("size '{size}' should be LEVELSxWIDTH")))?;
        let whole = |v: &str, what: &str| {
            v.parse::<u64>()
                .map_err(|_| bad(format!("{what} '{v}' is not a whole number")))
        };
        let mut spec = WashingtonSpec {
            levels: whole(l, "level count")? as usize,
            width: whole(w, "width")? as usize,
            ..WashingtonSpec::default()
        };
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

/// Generates the random level graph of `spec`; see the [module docs](self).
///
/// ```
/// use segcut::gen::{washington_rlg, WashingtonSpec};
/// let g = washington_rlg(&WashingtonSpec::wide(10, 7).unwrap()).unwrap();
/// assert_eq!(g.num_nodes(), 1 << 10);
/// assert!(washington_rlg(&WashingtonSpec { degree: 0, ..WashingtonSpec::default() }).is_err());
/// ```
pub fn washington_rlg(spec: &WashingtonSpec) -> Result<CsrGraph> {
    spec.check()?;
    let WashingtonSpec {
        levels,
        width,
        degree,
        max_cap,
        seed,
    } = *spec;
    let n = levels * width;
    let mut builder = CsrBuilder::with_capacity(n, (n - width) * degree);
    let mut rng = Rng::new(seed);
    let mut in_sum = vec![0i64; width];
    let mut targets: Vec<usize> = Vec::with_capacity(degree);
    let mut scratch: Vec<usize> = Vec::new();
    for k in 0..levels - 1 {
        let next = (k + 1) * width;
        for i in 0..width {
            let u = k * width + i;
            pick_distinct(&mut rng, width, degree, &mut targets, &mut scratch);
            let mut out_sum = 0i64;
            for &t in &targets {
                let cap = rng.range_i64(1, max_cap as i64) as Cap;
                out_sum += cap as i64;
                if k + 1 == levels - 1 {
                    in_sum[t] += cap as i64;
                }
                builder.add_edge(u as u32, (next + t) as u32, cap, 0)?;
            }
            if k == 0 {
                // ≤ degree · max_cap, checked by `check`.
                builder.add_terminals(u as u32, out_sum as Cap, 0)?;
            }
        }
    }
    let last = (levels - 1) * width;
    for (i, &s) in in_sum.iter().enumerate() {
        let cap = Cap::try_from(s).map_err(|_| {
            Error::Overflow(format!(
                "washington: node {} receives total capacity {s}, more than {}",
                last + i,
                Cap::MAX
            ))
        })?;
        builder.add_terminals((last + i) as u32, 0, cap)?;
    }
    builder.build()
}

/// Fills `out` with `count` distinct values of `0..width`, in the order drawn.
fn pick_distinct(
    rng: &mut Rng,
    width: usize,
    count: usize,
    out: &mut Vec<usize>,
    scratch: &mut Vec<usize>,
) {
    out.clear();
    if 2 * count <= width {
        // Sparse case (the usual one, degree 3): rejection keeps it O(degree²) per node.
        while out.len() < count {
            let t = rng.below(width as u64) as usize;
            if !out.contains(&t) {
                out.push(t);
            }
        }
    } else {
        // Dense case: a partial Fisher–Yates over the whole level.
        scratch.clear();
        scratch.extend(0..width);
        for j in 0..count {
            let r = j + rng.below((width - j) as u64) as usize;
            scratch.swap(j, r);
            out.push(scratch[j]);
        }
    }
}
