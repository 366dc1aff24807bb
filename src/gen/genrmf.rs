//! GENRMF instances (Goldfarb and Grigoriadis, "A computational comparison of the Dinic and network
//! simplex methods for maximum flow", 1988; the first DIMACS implementation challenge family).
//!
//! `b` frames, each an `a × a` grid. Inside a frame every pair of 4-neighbours is joined in both
//! directions with capacity `c2 · a²`. Between consecutive frames each node of frame `k` has one
//! arc to a node of frame `k + 1`, chosen through a random permutation of the frame (a new one for
//! every frame pair), with capacity uniform in `[c1, c2]`. The source is the first node of the
//! first frame and the sink the last node of the last frame; both become terminals, so the graph
//! has `a²·b − 2` nodes.
//!
//! Global node numbering (before removing the terminals): frame `k`, row `i`, column `j` is
//! `k·a² + i·a + j`; graph node `v` is global node `v + 1`.

use std::fmt;
use std::str::FromStr;

use super::grid::split_option;
use crate::graph::{Cap, CsrBuilder, CsrGraph, Vertex, MAX_NODES};
use crate::rng::Rng;
use crate::{Error, Result};

/// Parameters of a GENRMF instance.
///
/// Text form (`Display` / `FromStr`): `genrmf:aA:bB[:cC1-C2][:sSEED]`, defaults `c1-10000` and
/// `s1`, e.g. `genrmf:a16:b64:c1-10000:s3`.
///
/// ```
/// use segcut::gen::{genrmf, GenrmfSpec};
/// let spec = GenrmfSpec { a: 4, b: 5, c1: 1, c2: 100, seed: 9 };
/// let g = genrmf(&spec).unwrap();
/// assert_eq!(g.num_nodes(), 4 * 4 * 5 - 2);
/// assert_eq!(spec.to_string().parse::<GenrmfSpec>().unwrap(), spec);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenrmfSpec {
    /// Side of each square frame.
    pub a: usize,
    /// Number of frames.
    pub b: usize,
    /// Smallest inter-frame capacity (at least 1).
    pub c1: Cap,
    /// Largest inter-frame capacity; in-frame arcs get `c2 · a²`.
    pub c2: Cap,
    /// Seed of the permutations and capacities.
    pub seed: u64,
}

/// Inter-frame capacity range of the presets, as in the literature's runs.
const PRESET_C1: Cap = 1;
const PRESET_C2: Cap = 10_000;

impl GenrmfSpec {
    /// The "long" family (Cherkassky and Goldberg's GENRMF-LONG shape): about `2^log2_nodes`
    /// nodes with `a = 2^(x/4)` and `b = 2^(x/2)` (rounded), so many small frames.
    /// `log2_nodes` must be in 6..=21 (up to about 2 M nodes).
    ///
    /// ```
    /// let s = segcut::gen::GenrmfSpec::long(20, 1).unwrap();
    /// assert_eq!((s.a, s.b), (32, 1024));
    /// ```
    pub fn long(log2_nodes: u32, seed: u64) -> Result<Self> {
        Self::preset("long", log2_nodes, (1, 4), (1, 2), seed)
    }

    /// The "wide" family (GENRMF-WIDE shape): about `2^log2_nodes` nodes with `a = 2^(2x/5)` and
    /// `b = 2^(x/5)` (rounded), so few large frames. `c2` is lowered from 10000 where `2·c2·a²`
    /// would not fit an `i32` arc pair. `log2_nodes` must be in 6..=21.
    ///
    /// ```
    /// let s = segcut::gen::GenrmfSpec::wide(20, 1).unwrap();
    /// assert_eq!((s.a, s.b), (256, 16));
    /// ```
    pub fn wide(log2_nodes: u32, seed: u64) -> Result<Self> {
        Self::preset("wide", log2_nodes, (2, 5), (1, 5), seed)
    }

    /// `a = round(2^(x·a_exp))`, `b = round(2^(x·b_exp))`, exponents as (numerator, denominator).
    fn preset(name: &str, x: u32, a_exp: (u32, u32), b_exp: (u32, u32), seed: u64) -> Result<Self> {
        if !(6..=21).contains(&x) {
            return Err(Error::Graph(format!(
                "genrmf {name}: log2 of the node count must be in 6..=21, got {x}"
            )));
        }
        let a = round_pow2(x * a_exp.0, a_exp.1);
        let b = round_pow2(x * b_exp.0, b_exp.1);
        let pair_limit = Cap::MAX as i64 / (2 * (a * a) as i64);
        Ok(GenrmfSpec {
            a,
            b,
            c1: PRESET_C1,
            c2: PRESET_C2.min(pair_limit as Cap),
            seed,
        })
    }

    /// Number of graph nodes, `a²·b − 2`, if it fits `usize`.
    pub fn num_nodes(&self) -> Option<usize> {
        self.a
            .checked_mul(self.a)?
            .checked_mul(self.b)?
            .checked_sub(2)
    }

    /// Checks every parameter; the error names the one at fault.
    pub fn check(&self) -> Result<()> {
        let GenrmfSpec { a, b, c1, c2, .. } = *self;
        if a == 0 || b == 0 {
            return Err(Error::Graph(format!(
                "genrmf: frame side a and frame count b must be positive, got a={a}, b={b}"
            )));
        }
        let total = a
            .checked_mul(a)
            .and_then(|n| n.checked_mul(b))
            .filter(|&n| n <= MAX_NODES + 2)
            .ok_or_else(|| {
                Error::Graph(format!(
                    "genrmf: a²·b with a={a}, b={b} is more than {MAX_NODES} nodes"
                ))
            })?;
        if total < 2 {
            return Err(Error::Graph(
                "genrmf: a=1, b=1 has a single node, which cannot be both source and sink".into(),
            ));
        }
        if c1 < 1 {
            return Err(Error::Graph(format!(
                "genrmf: c1 must be at least 1, got {c1}"
            )));
        }
        if c1 > c2 {
            return Err(Error::Graph(format!(
                "genrmf: c1={c1} is greater than c2={c2}"
            )));
        }
        // In-frame pairs carry c2·a² each way; a pair must fit i32.
        let in_frame = c2 as i128 * (a * a) as i128;
        if 2 * in_frame > Cap::MAX as i128 {
            return Err(Error::Overflow(format!(
                "genrmf: in-frame capacity c2·a² = {c2}·{a}² = {in_frame} (twice that per arc pair) \
                 exceeds {}; lower c2 or a",
                Cap::MAX
            )));
        }
        // Arcs: 2 per in-frame pair and 2 per inter-frame arc, indexed by u32.
        let pairs = 2 * a as u128 * (a as u128 - 1) * b as u128 + (a * a) as u128 * (b as u128 - 1);
        if 2 * pairs > (u32::MAX - 16) as u128 {
            return Err(Error::Graph(format!(
                "genrmf: a={a}, b={b} has {} arcs, more than 32-bit arc indices allow",
                2 * pairs
            )));
        }
        Ok(())
    }
}

/// `round(2^(p/q))` in integers, so presets do not depend on the platform's `powf`: the `m`
/// with `(m − ½)^q ≤ 2^(p/q·q) < (m + ½)^q`, i.e. `(2m − 1)^q ≤ 2^(p+q) < (2m + 1)^q`.
fn round_pow2(p: u32, q: u32) -> usize {
    let target = 1u128 << (p + q);
    let mut m = 1u128;
    while (2 * m + 1).pow(q) <= target {
        m += 1;
    }
    m as usize
}

impl fmt::Display for GenrmfSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "genrmf:a{}:b{}:c{}-{}:s{}",
            self.a, self.b, self.c1, self.c2, self.seed
        )
    }
}

impl FromStr for GenrmfSpec {
    type Err = Error;

    /// Parses `genrmf:aA:bB[:cC1-C2][:sSEED]` (syntax only; [`genrmf`] checks the values).
    fn from_str(text: &str) -> Result<Self> {
        let bad = |msg: String| Error::Input {
            file: format!("genrmf spec '{text}'"),
            msg,
        };
        let mut parts = text.split(':');
        if parts.next() != Some("genrmf") {
            return Err(bad("expected it to start with 'genrmf:'".into()));
        }
        let (mut a, mut b) = (None, None);
        let mut spec = GenrmfSpec {
            a: 0,
            b: 0,
            c1: PRESET_C1,
            c2: PRESET_C2,
            seed: 1,
        };
        let mut seen = Vec::new();
        for opt in parts {
            let (key, value) = split_option(opt, &["a", "b", "c", "s"]).ok_or_else(|| {
                bad(format!(
                    "unknown option '{opt}' (expected aA, bB, cC1-C2 or sSEED)"
                ))
            })?;
            if seen.contains(&key) {
                return Err(bad(format!("option '{key}' given twice")));
            }
            seen.push(key);
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| bad(format!("'{opt}': '{v}' is not a whole number")))
            };
            match key {
                "a" => a = Some(number(value)? as usize),
                "b" => b = Some(number(value)? as usize),
                "c" => {
                    let (lo, hi) = value
                        .split_once('-')
                        .ok_or_else(|| bad(format!("'{opt}' should be cC1-C2, e.g. c1-10000")))?;
                    let cap = |v: &str| {
                        v.parse::<Cap>().map_err(|_| {
                            bad(format!(
                                "'{opt}': '{v}' is not a capacity (0 ..= {})",
                                Cap::MAX
                            ))
                        })
                    };
                    spec.c1 = cap(lo)?;
                    spec.c2 = cap(hi)?;
                }
                _ => spec.seed = number(value)?,
            }
        }
        spec.a = a.ok_or_else(|| bad("missing the frame side 'aA'".into()))?;
        spec.b = b.ok_or_else(|| bad("missing the frame count 'bB'".into()))?;
        Ok(spec)
    }
}

/// Generates the GENRMF instance of `spec`; see the [module docs](self) for the construction.
///
/// ```
/// use segcut::gen::{genrmf, GenrmfSpec};
/// let g = genrmf(&GenrmfSpec { a: 3, b: 4, c1: 5, c2: 50, seed: 1 }).unwrap();
/// assert_eq!(g.num_nodes(), 3 * 3 * 4 - 2);
/// assert!(genrmf(&GenrmfSpec { a: 3, b: 4, c1: 60, c2: 50, seed: 1 }).is_err());
/// ```
pub fn genrmf(spec: &GenrmfSpec) -> Result<CsrGraph> {
    spec.check()?;
    let GenrmfSpec { a, b, c1, c2, seed } = *spec;
    let frame = a * a;
    let total = frame * b;
    let sink = total - 1;
    let vertex = |g: usize| match g {
        0 => Vertex::Source,
        _ if g == sink => Vertex::Sink,
        _ => Vertex::Node(g as u32 - 1),
    };
    let in_frame_cap = c2 * frame as Cap;
    let pairs = 2 * a * (a - 1) * b + frame * (b - 1);
    // `check` bounded total − 2 by MAX_NODES, so this cannot panic.
    let mut builder = CsrBuilder::with_capacity(total - 2, pairs);

    // In-frame pairs: one arc pair with the same capacity both ways. Where one end is a terminal
    // only the arc that can carry flow survives (out of s, into t).
    let join = |builder: &mut CsrBuilder, u: usize, v: usize| -> Result<()> {
        match (vertex(u), vertex(v)) {
            (Vertex::Node(x), Vertex::Node(y)) => {
                builder.add_edge(x, y, in_frame_cap, in_frame_cap)
            }
            (from, to) => {
                builder.add_arc(from, to, in_frame_cap)?;
                builder.add_arc(to, from, in_frame_cap)
            }
        }
    };
    for k in 0..b {
        for i in 0..a {
            for j in 0..a {
                let g = k * frame + i * a + j;
                if j + 1 < a {
                    join(&mut builder, g, g + 1)?;
                }
                if i + 1 < a {
                    join(&mut builder, g, g + a)?;
                }
            }
        }
    }

    // Inter-frame arcs: node p of frame k → node perm[p] of frame k + 1.
    let mut rng = Rng::new(seed);
    let mut perm: Vec<usize> = (0..frame).collect();
    for k in 0..b - 1 {
        rng.shuffle(&mut perm);
        for (p, &q) in perm.iter().enumerate() {
            let cap = rng.range_i64(c1 as i64, c2 as i64) as Cap;
            builder.add_arc(vertex(k * frame + p), vertex((k + 1) * frame + q), cap)?;
        }
    }
    builder.build()
}
