//! A generic α-expansion engine (Boykov, Veksler & Zabih, PAMI 2001) over a user cost volume and
//! a pairwise model, on 4- or 8-connected image grids.
//!
//! The energy of a labelling `f` is
//!
//! ```text
//! E(f) = Σ_p D_p(f_p) + Σ_{(p,q)} w_pq · V(f_p, f_q)
//! ```
//!
//! with `D` the [`CostVolume`] and `V` the [`Pairwise`] model: Potts (`V = [a ≠ b]`) or truncated
//! linear (`V = min(|a − b|, T)`), both metrics, so every expansion move is a graph cut. Each move
//! "switch to α or keep your label" is one binary grid graph built with the Kolmogorov–Zabih
//! construction and solved through the max-flow API ([`MaxFlow`]): node on the sink side =
//! takes α. Because every solver returns the same canonical cut (the smallest sink side), the
//! labelling is the same whichever solver runs — bit for bit.
//!
//! ```
//! use segcut::stereo::{expand, CostVolume, ExpansionOptions, Pairwise, PairwiseModel};
//! // 3×1 image, 2 labels: the middle pixel mildly prefers label 1, its neighbours label 0.
//! let cost = CostVolume::from_fn(3, 1, 2, |x, _, l| match (x, l) {
//!     (1, 1) => 0,
//!     (1, 0) => 2,
//!     (_, 0) => 0,
//!     _ => 10,
//! }).unwrap();
//! let weak = PairwiseModel::uniform(3, 1, Pairwise::Potts, 0);
//! assert_eq!(expand(&cost, &weak, &ExpansionOptions::default()).unwrap().labels, [0, 1, 0]);
//! let strong = PairwiseModel::uniform(3, 1, Pairwise::Potts, 5);
//! assert_eq!(expand(&cost, &strong, &ExpansionOptions::default()).unwrap().labels, [0, 0, 0]);
//! ```

use crate::graph::{Cap, Connectivity, GridGraph};
use crate::maxflow::{MaxFlow, SolveOptions, SolverKind};
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// The largest value a unary cost or an edge weight times `V` may take: keeps every capacity of
/// an expansion graph (a node's terminal arc collects its own cost plus up to 8 pairwise terms)
/// within `i32` with room for the solver's sums.
pub const MAX_COST: i32 = 1 << 24;

/// Unary costs `D_p(l)`: `data[l · W·H + p]` with pixel `p = x + W·y`, one plane per label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostVolume {
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// Number of labels.
    pub labels: usize,
    /// `labels` planes of `width × height` costs, each in `0..=MAX_COST`.
    pub data: Vec<i32>,
}

impl CostVolume {
    /// A volume from its planes; checks the length and the range of every cost.
    ///
    /// ```
    /// let c = segcut::stereo::CostVolume::new(2, 1, 2, vec![0, 1, 5, 0]).unwrap();
    /// assert_eq!(c.cost(1, 0), 5); // label 1 at pixel 0
    /// assert!(segcut::stereo::CostVolume::new(2, 1, 2, vec![0, 1, -5, 0]).is_err());
    /// ```
    pub fn new(width: usize, height: usize, labels: usize, data: Vec<i32>) -> Result<Self> {
        let n = width
            .checked_mul(height)
            .and_then(|n| n.checked_mul(labels));
        if width == 0 || height == 0 || labels == 0 || n != Some(data.len()) {
            return Err(Error::Graph(format!(
                "cost volume {width}x{height} with {labels} labels needs {} costs, got {}",
                n.map_or("too many".to_string(), |n| n.to_string()),
                data.len()
            )));
        }
        if let Some(i) = data.iter().position(|&c| !(0..=MAX_COST).contains(&c)) {
            let p = i % (width * height);
            return Err(Error::Graph(format!(
                "cost {} of label {} at pixel (x={}, y={}) is outside 0..={MAX_COST}",
                data[i],
                i / (width * height),
                p % width,
                p / width
            )));
        }
        Ok(CostVolume {
            width,
            height,
            labels,
            data,
        })
    }

    /// A volume with `D_(x,y)(l) = f(x, y, l)`.
    pub fn from_fn(
        width: usize,
        height: usize,
        labels: usize,
        mut f: impl FnMut(usize, usize, usize) -> i32,
    ) -> Result<Self> {
        let mut data = Vec::with_capacity(width * height * labels);
        for l in 0..labels {
            for y in 0..height {
                for x in 0..width {
                    data.push(f(x, y, l));
                }
            }
        }
        Self::new(width, height, labels, data)
    }

    /// Number of pixels.
    pub fn num_pixels(&self) -> usize {
        self.width * self.height
    }

    /// `D_p(label)`.
    #[inline]
    pub fn cost(&self, label: usize, p: usize) -> i32 {
        self.data[label * self.num_pixels() + p]
    }

    /// The plane of `label`.
    pub fn plane(&self, label: usize) -> &[i32] {
        let n = self.num_pixels();
        &self.data[label * n..(label + 1) * n]
    }

    /// The labelling that minimises the unary costs alone ("winner takes all"; ties: the lower
    /// label).
    pub fn winner_takes_all(&self) -> Vec<u16> {
        let n = self.num_pixels();
        (0..n)
            .map(|p| {
                (0..self.labels)
                    .min_by_key(|&l| (self.cost(l, p), l))
                    .unwrap_or(0) as u16
            })
            .collect()
    }
}

/// The distance `V(a, b)` between two labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairwise {
    /// `V(a, b) = 0` if `a == b`, else 1.
    Potts,
    /// `V(a, b) = min(|a − b|, truncation)`; a metric for `truncation ≥ 1`.
    TruncatedLinear {
        /// `T ≥ 1`.
        truncation: u32,
    },
}

impl Pairwise {
    /// `V(a, b)`.
    ///
    /// ```
    /// use segcut::stereo::Pairwise;
    /// assert_eq!(Pairwise::Potts.distance(3, 7), 1);
    /// assert_eq!(Pairwise::TruncatedLinear { truncation: 2 }.distance(3, 7), 2);
    /// assert_eq!(Pairwise::TruncatedLinear { truncation: 9 }.distance(3, 7), 4);
    /// ```
    #[inline]
    pub fn distance(self, a: u16, b: u16) -> i32 {
        match self {
            Pairwise::Potts => (a != b) as i32,
            Pairwise::TruncatedLinear { truncation } => {
                (a as i32 - b as i32).abs().min(truncation as i32)
            }
        }
    }

    /// The largest `V` can be.
    pub fn max_distance(self) -> i32 {
        match self {
            Pairwise::Potts => 1,
            Pairwise::TruncatedLinear { truncation } => truncation as i32,
        }
    }
}

/// The pairwise part of the energy: `V` and a non-negative weight `w_pq` per neighbour pair.
///
/// `weights[k][p]` is the weight of the pair `(p, p + offset)` for the `k`-th forward direction
/// of the connectivity (`Connectivity::offsets()[2k]`: +x, +y, then for 8-connectivity the two
/// diagonals); slots whose neighbour lies outside the image are ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairwiseModel {
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// 4 or 8 neighbours.
    pub connectivity: Connectivity,
    /// The label distance.
    pub distance: Pairwise,
    /// One weight plane per forward direction.
    pub weights: Vec<Vec<i32>>,
}

impl PairwiseModel {
    /// The same weight on every 4-connected pair.
    ///
    /// ```
    /// use segcut::stereo::{Pairwise, PairwiseModel};
    /// let m = PairwiseModel::uniform(4, 3, Pairwise::Potts, 7);
    /// assert_eq!(m.weights.len(), 2);
    /// assert_eq!(m.weights[1][5], 7);
    /// ```
    pub fn uniform(width: usize, height: usize, distance: Pairwise, weight: i32) -> Self {
        PairwiseModel {
            width,
            height,
            connectivity: Connectivity::N4,
            distance,
            weights: vec![vec![weight; width * height]; 2],
        }
    }

    /// Weights from `f(p, q)` for every forward pair `(p, q)` of `connectivity` (N4 or N8).
    pub fn from_fn(
        width: usize,
        height: usize,
        connectivity: Connectivity,
        distance: Pairwise,
        mut f: impl FnMut(usize, usize) -> i32,
    ) -> Result<Self> {
        check_2d(connectivity)?;
        let offsets = connectivity.offsets();
        let mut weights = Vec::new();
        for d in (0..offsets.len()).step_by(2) {
            let [dx, dy, _] = offsets[d];
            let mut plane = vec![0; width * height];
            for y in 0..height {
                for x in 0..width {
                    let (nx, ny) = (x as i64 + dx as i64, y as i64 + dy as i64);
                    if nx >= 0 && ny >= 0 && (nx as usize) < width && (ny as usize) < height {
                        plane[x + width * y] = f(x + width * y, nx as usize + width * ny as usize);
                    }
                }
            }
            weights.push(plane);
        }
        Ok(PairwiseModel {
            width,
            height,
            connectivity,
            distance,
            weights,
        })
    }

    /// Checks the shape against a cost volume and the weights' range.
    pub fn check(&self, cost: &CostVolume) -> Result<()> {
        check_2d(self.connectivity)?;
        if (self.width, self.height) != (cost.width, cost.height) {
            return Err(Error::Graph(format!(
                "pairwise model is {}x{} but the cost volume is {}x{}",
                self.width, self.height, cost.width, cost.height
            )));
        }
        let n = self.width * self.height;
        if self.weights.len() != self.connectivity.degree() / 2
            || self.weights.iter().any(|w| w.len() != n)
        {
            return Err(Error::Graph(format!(
                "pairwise model needs {} weight planes of {n} values",
                self.connectivity.degree() / 2
            )));
        }
        if let Pairwise::TruncatedLinear { truncation: 0 } = self.distance {
            return Err(Error::Graph(
                "truncated linear needs a truncation of at least 1".into(),
            ));
        }
        let vmax = self.distance.max_distance() as i64;
        for (k, plane) in self.weights.iter().enumerate() {
            if let Some(p) = plane
                .iter()
                .position(|&w| w < 0 || w as i64 * vmax > MAX_COST as i64)
            {
                return Err(Error::Graph(format!(
                    "pairwise weight {} at pixel (x={}, y={}), direction {k}, is outside 0..={}",
                    plane[p],
                    p % self.width,
                    p / self.width,
                    MAX_COST as i64 / vmax
                )));
            }
        }
        Ok(())
    }

    /// Calls `f(p, q, w_pq)` for every forward pair.
    fn for_each_pair(&self, mut f: impl FnMut(usize, usize, i32)) {
        let offsets = self.connectivity.offsets();
        let dims = [self.width, self.height, 1];
        for (k, plane) in self.weights.iter().enumerate() {
            let off = offsets[2 * k];
            let step = crate::graph::offset_step(dims, off);
            let [xr, yr, _] = crate::graph::valid_box(dims, off);
            for y in yr {
                for x in xr.clone() {
                    let p = x + self.width * y;
                    f(p, (p as isize + step) as usize, plane[p]);
                }
            }
        }
    }
}

pub(crate) fn check_2d(c: Connectivity) -> Result<()> {
    if c.is_3d() {
        return Err(Error::Unsupported(format!(
            "α-expansion takes 4- or 8-connected images, not {c}"
        )));
    }
    Ok(())
}

/// `E(f)`: unary plus pairwise energy of `labels`.
///
/// ```
/// use segcut::stereo::{energy, CostVolume, Pairwise, PairwiseModel};
/// let c = CostVolume::new(2, 1, 2, vec![0, 3, 4, 0]).unwrap();
/// let m = PairwiseModel::uniform(2, 1, Pairwise::Potts, 10);
/// assert_eq!(energy(&c, &m, &[0, 1]).unwrap(), 10);
/// assert_eq!(energy(&c, &m, &[0, 0]).unwrap(), 3);
/// ```
pub fn energy(cost: &CostVolume, model: &PairwiseModel, labels: &[u16]) -> Result<i64> {
    model.check(cost)?;
    check_labels(cost.width, cost.height, cost.labels, labels)?;
    Ok(energy_unchecked(cost, model, labels))
}

fn energy_unchecked(cost: &CostVolume, model: &PairwiseModel, labels: &[u16]) -> i64 {
    let mut e: i64 = labels
        .iter()
        .enumerate()
        .map(|(p, &l)| cost.cost(l as usize, p) as i64)
        .sum();
    model.for_each_pair(|p, q, w| {
        e += w as i64 * model.distance.distance(labels[p], labels[q]) as i64;
    });
    e
}

/// An error unless `labels` has a label below `count` for each of the `width × height` pixels.
fn check_labels(width: usize, height: usize, count: usize, labels: &[u16]) -> Result<()> {
    if labels.len() != width * height {
        return Err(Error::Graph(format!(
            "labelling has {} pixels, the cost volume {}",
            labels.len(),
            width * height
        )));
    }
    if let Some(p) = labels.iter().position(|&l| l as usize >= count) {
        return Err(Error::Graph(format!(
            "label {} at pixel (x={}, y={}) is not below {count}",
            labels[p],
            p % width,
            p / width,
        )));
    }
    Ok(())
}

/// The checked starting labelling (`None`: the winner-takes-all one, which the caller computes)
/// and expansion order of `opts` for `count` labels on a `width × height` image.
pub(crate) fn start_and_order(
    width: usize,
    height: usize,
    count: usize,
    opts: &ExpansionOptions,
) -> Result<(Option<Vec<u16>>, Vec<u16>)> {
    if let Some(l) = &opts.initial {
        check_labels(width, height, count, l)?;
    }
    let order: Vec<u16> = match &opts.order {
        Some(o) => {
            if let Some(&l) = o.iter().find(|&&l| l as usize >= count) {
                return Err(Error::Graph(format!(
                    "label {l} in the expansion order is not below {count}"
                )));
            }
            o.clone()
        }
        None => (0..count as u16).collect(),
    };
    Ok((opts.initial.clone(), order))
}

/// Options of [`expand`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExpansionOptions {
    /// The max-flow solver and its options (default: BK without certificate checks, which a
    /// test can turn on).
    pub solve: SolveOptions,
    /// At most this many passes over all labels; `None`: until a pass lowers the energy no more.
    pub max_passes: Option<usize>,
    /// The labelling to start from; `None`: every pixel at its cheapest label
    /// ([`CostVolume::winner_takes_all`]).
    pub initial: Option<Vec<u16>>,
    /// The order labels are expanded in within a pass; `None`: `0, 1, …, L−1`.
    pub order: Option<Vec<u16>>,
}

impl Default for ExpansionOptions {
    fn default() -> Self {
        ExpansionOptions {
            solve: SolveOptions {
                solver: SolverKind::Bk,
                verify: false,
                ..Default::default()
            },
            max_passes: None,
            initial: None,
            order: None,
        }
    }
}

/// One expansion move.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MoveStats {
    /// The pass (from 0).
    pub pass: usize,
    /// The label α.
    pub label: u16,
    /// Building the binary graph.
    #[serde(serialize_with = "ser_ms")]
    pub build: Duration,
    /// The max-flow solve, as the solver reports it (its own build and solve).
    #[serde(serialize_with = "ser_ms")]
    pub solve: Duration,
    /// The max-flow value.
    pub flow: i64,
    /// Pixels that switched to α (0 when the move was not taken).
    pub switched: usize,
    /// The energy after the move.
    pub energy: i64,
    /// The solver that ran.
    pub solver: SolverKind,
    /// The solve started from the preflow of the last move for the same label (the device
    /// engine's dynamic moves, `src/stereo/gpu.rs`); `false` for a solve from scratch.
    pub warm: bool,
    /// The GPU grid solver's work on this move (`None` for a CPU solver or a skipped move):
    /// what a move's solve time is made of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_work: Option<GpuWork>,
}

/// The grid solver's counters for one move ([`MoveStats::gpu_work`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GpuWork {
    /// Discharge rounds.
    pub rounds: u64,
    /// Global relabels (a warm start's local relabel included).
    pub relabels: u64,
    /// Tile passes over all the relabels.
    pub relabel_passes: u64,
}

/// One pass over all labels.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PassStats {
    /// The energy at the end of the pass.
    pub energy: i64,
    /// Moves that lowered the energy.
    pub moves_taken: usize,
    /// Wall time of the pass.
    #[serde(serialize_with = "ser_ms")]
    pub time: Duration,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// What [`expand`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Expansion {
    /// The final labelling, one label per pixel.
    pub labels: Vec<u16>,
    /// Its energy.
    pub energy: i64,
    /// The energy of the starting labelling.
    pub initial_energy: i64,
    /// One entry per pass.
    pub passes: Vec<PassStats>,
    /// One entry per expansion move, in order.
    pub moves: Vec<MoveStats>,
    /// Whether the last pass lowered the energy no more (else `max_passes` stopped it).
    pub converged: bool,
}

/// Minimises `E` by α-expansion: passes over the labels, each label's move solved exactly as a
/// max-flow problem, a move taken only when it lowers the energy. The grid graph and the solver
/// (with its device buffers, for a GPU solver) are allocated once and reused by every move.
///
/// ```
/// use segcut::stereo::{energy, expand, CostVolume, ExpansionOptions, Pairwise, PairwiseModel};
/// let cost = CostVolume::from_fn(8, 8, 4, |x, y, l| ((x + y) % 4 != l) as i32 * 5).unwrap();
/// let model = PairwiseModel::uniform(8, 8, Pairwise::TruncatedLinear { truncation: 2 }, 1);
/// let r = expand(&cost, &model, &ExpansionOptions::default()).unwrap();
/// assert!(r.converged && r.energy <= r.initial_energy);
/// assert_eq!(r.energy, energy(&cost, &model, &r.labels).unwrap());
/// ```
pub fn expand(
    cost: &CostVolume,
    model: &PairwiseModel,
    opts: &ExpansionOptions,
) -> Result<Expansion> {
    expand_observed(cost, model, opts, &mut |_, _| Ok(()))
}

/// [`expand`], calling `observe` after every move with the move's statistics and its binary
/// graph (as solved): how the graph export sees the moves. An error from `observe` stops the
/// run.
pub fn expand_observed(
    cost: &CostVolume,
    model: &PairwiseModel,
    opts: &ExpansionOptions,
    observe: &mut dyn FnMut(&MoveStats, &GridGraph) -> Result<()>,
) -> Result<Expansion> {
    model.check(cost)?;
    let (start, order) = start_and_order(cost.width, cost.height, cost.labels, opts)?;
    let mut labels = start.unwrap_or_else(|| cost.winner_takes_all());
    let mut mf = MaxFlow::new(opts.solve.clone());
    let mut graph = GridGraph::new_2d(cost.width, cost.height, model.connectivity)?;
    let mut e = energy_unchecked(cost, model, &labels);
    let initial_energy = e;
    let (mut passes, mut moves) = (Vec::new(), Vec::new());
    let mut proposal = labels.clone();
    let mut converged = false;
    while opts.max_passes.is_none_or(|m| passes.len() < m) {
        let t_pass = Instant::now();
        let mut taken = 0;
        for &alpha in &order {
            let t = Instant::now();
            build_move(cost, model, &labels, alpha, &mut graph);
            let build = t.elapsed();
            let solved = mf.solve(&graph)?;
            for (p, l) in proposal.iter_mut().enumerate() {
                *l = if solved.cut.sink_side[p] {
                    alpha
                } else {
                    labels[p]
                };
            }
            let e_new = energy_unchecked(cost, model, &proposal);
            let mut switched = 0;
            if e_new < e {
                switched = labels.iter().zip(&proposal).filter(|(a, b)| a != b).count();
                labels.copy_from_slice(&proposal);
                e = e_new;
                taken += 1;
            }
            moves.push(MoveStats {
                pass: passes.len(),
                label: alpha,
                build,
                solve: solved.stats.build + solved.stats.solve,
                flow: solved.cut.flow,
                switched,
                energy: e,
                solver: solved.ran.solver,
                warm: false,
                gpu_work: None,
            });
            observe(moves.last().expect("just pushed"), &graph)?;
        }
        passes.push(PassStats {
            energy: e,
            moves_taken: taken,
            time: t_pass.elapsed(),
        });
        if taken == 0 {
            converged = true;
            break;
        }
    }
    Ok(Expansion {
        labels,
        energy: e,
        initial_energy,
        passes,
        moves,
        converged,
    })
}

/// The binary graph of the move "switch to `alpha`" from `labels`, written into `graph`
/// (every capacity overwritten). A node on the sink side takes α.
///
/// Binary energy per node: `E_p(0) = D_p(f_p)`, `E_p(1) = D_p(α)`; per pair, with
/// `A = V(f_p, f_q)`, `B = V(f_p, α)`, `C = V(α, f_q)` (all times `w_pq`) and `V(α, α) = 0`:
/// `E = A + (C − A)·x_p − C·x_q + (B + C − A)·(1 − x_p)·x_q`, so an arc `p → q` of capacity
/// `B + C − A ≥ 0` (the triangle inequality) and the linear terms on the terminals. Each
/// node's terminal arcs keep only the difference of its two costs (the smaller one is a
/// constant of the move), so the flow is the move's energy minus a constant.
pub fn build_move(
    cost: &CostVolume,
    model: &PairwiseModel,
    labels: &[u16],
    alpha: u16,
    graph: &mut GridGraph,
) {
    let n = cost.num_pixels();
    // delta[p] = E_p(1) − E_p(0), accumulated in i64.
    let mut delta: Vec<i64> = (0..n)
        .map(|p| cost.cost(alpha as usize, p) as i64 - cost.cost(labels[p] as usize, p) as i64)
        .collect();
    let offsets = model.connectivity.offsets();
    let dims = [cost.width, cost.height, 1];
    let v = model.distance;
    for (k, plane) in model.weights.iter().enumerate() {
        let d = 2 * k;
        let off = offsets[d];
        let step = crate::graph::offset_step(dims, off);
        let [xr, yr, _] = crate::graph::valid_box(dims, off);
        // Every arc points forward (p → q); the reverse planes stay zero.
        graph.caps_mut(d + 1).fill(0);
        let fwd = graph.caps_mut(d);
        fwd.fill(0);
        for y in yr {
            for x in xr.clone() {
                let p = x + cost.width * y;
                let q = (p as isize + step) as usize;
                let w = plane[p] as i64;
                if w == 0 {
                    continue;
                }
                let (fp, fq) = (labels[p], labels[q]);
                let a = w * v.distance(fp, fq) as i64;
                let b = w * v.distance(fp, alpha) as i64;
                let c = w * v.distance(alpha, fq) as i64;
                delta[p] += c - a;
                delta[q] -= c;
                // x_p = 0, x_q = 1: p stays, q takes α: arc p → q.
                fwd[p] = (b + c - a) as Cap;
            }
        }
    }
    let (src, snk) = graph.terminal_caps_mut();
    for p in 0..n {
        let dp = delta[p];
        // Cost of the sink side (taking α) on the source arc, of the source side on the sink arc.
        src[p] = dp.max(0) as Cap;
        snk[p] = (-dp).max(0) as Cap;
    }
}
