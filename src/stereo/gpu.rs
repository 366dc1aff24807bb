//! α-expansion kept on the GPU: the cost volume, the pair weights and the labelling live in device
//! memory from the start to the end of a run, every move's graph is written by a kernel straight
//! into the grid solver's arrays (allocated once per image), the proposal's energy and the cut's
//! capacity (the certificate) are summed on the device, and a move is committed there. Only the
//! final labels, a few numbers per pass and one flag per move (for the skip below) go back to the
//! host; the solver itself (`ResidentGrid` in `src/maxflow/cuda/grid.rs`) reads its counters back
//! as it always does.
//!
//! The result is the host engine's ([`expand`](super::expand) with any solver) bit for bit: the
//! cost volume's arithmetic is the host's operation for operation (`kernels/stereo.cu` is compiled
//! without fused multiply-adds), the move graph is the same construction, and the solver returns
//! the canonical cut. Tests: `tests/gpu_stereo.rs`.
//!
//! **Later passes.** A move whose graph is the one solved before is not solved again: when no
//! move has been taken since the last move for the same α, and that move was not taken either,
//! the labelling is unchanged, so the graph, its flow and its canonical cut are those of that
//! move, which was not taken. The skipped move is reported with that move's flow.
//!
//! **Dynamic moves** (Alahari, Kohli & Torr's reuse of the last flow; [`DeviceTuning::warm_moves`],
//! on by default). The graph of the move for α in pass k differs from the one for α in pass k−1
//! only where the labelling changed in between. Each label keeps the capacities and the maximum
//! preflow of its last solve on the device (`KeptFlow`, `(2·deg + 5)·4` bytes per pixel and
//! label, checked against free memory first; without room the moves are solved from scratch),
//! and its next move starts from it: every arc pair's flow is kept where the new capacities
//! admit it and clamped otherwise, the difference moving between the pair's excesses; the
//! terminals follow (Kohli & Torr's `update_terminals`, a negative excess settled by the same
//! constant on both terminal arcs, which keeps every minimum cut); push-relabel then goes on from
//! a fresh global relabel. The flow is the new graph's maximum flow and the cut the canonical one,
//! so the labelling is the same bit for bit; the certificate is checked on every move as before.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};

use super::cost::{check_pair, View};
use super::expansion::{check_2d, start_and_order, GpuWork};
use super::median::{WeightedMedian, Weights, DEVICE_MAX_LABELS};
use super::{
    CostVolume, DataTerm, Expansion, ExpansionOptions, MoveStats, Pairwise, PairwiseModel,
    PassStats, StereoOptions, StereoResult, MAX_COST,
};
use crate::cuda::launch::stereo::StereoKernels;
use crate::cuda::{self, Call, Device, GridShape};
use crate::io::Image;
use crate::maxflow::cuda::{CudaGrid, GridTuning, KeptFlow, ResidentGrid};
use crate::maxflow::SolverKind;
use crate::{Error, Result};

/// How the device engine runs its moves; no setting changes the result.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTuning {
    /// The grid solver's tuning.
    pub grid: GridTuning,
    /// Start each move from the preflow of the last move for the same label (the module's
    /// "dynamic moves"), where device memory allows; `false`: every move from scratch.
    pub warm_moves: bool,
    /// With `warm_moves`: a label's first move (first pass) starts from the preflow of the move
    /// solved just before it, for another label, instead of from scratch. Exact for the same
    /// reason as the dynamic moves (any new capacities are admitted); only the time differs.
    pub warm_first: bool,
}

impl Default for DeviceTuning {
    fn default() -> Self {
        DeviceTuning {
            grid: GridTuning::default(),
            warm_moves: true,
            warm_first: false,
        }
    }
}

/// A problem on the device: the cost volume and the pair weights, on the stream that runs it.
struct Problem {
    device: Device,
    stream: Arc<CudaStream>,
    k: StereoKernels,
    shape: GridShape,
    labels: usize,
    vtrunc: u32,
    cost: CudaSlice<i32>,
    weights: CudaSlice<i32>,
    /// The left view's whole 8-bit colours and their channel count (the weighted median
    /// filter's guide); none for a problem given as a cost volume.
    guide: Option<(CudaSlice<u8>, u32)>,
}

/// A new stream on `device` and the stereo kernels loaded there.
fn start(device: Device) -> Result<(Arc<CudaStream>, StereoKernels)> {
    let gpu = device.gpu()?;
    gpu.bind()?;
    let stream = gpu.ctx.new_stream().call("cuStreamCreate")?;
    Ok((stream, StereoKernels::load(gpu)?))
}

/// The distance's parameter as the kernels take it: 0 for Potts, else the truncation.
fn vtrunc(p: Pairwise) -> u32 {
    match p {
        Pairwise::Potts => 0,
        Pairwise::TruncatedLinear { truncation } => truncation,
    }
}

/// An error unless `bytes` of device memory are free.
fn check_free(device: Device, bytes: u64, what: &str) -> Result<()> {
    let gpu = device.gpu()?;
    let free = gpu.free_memory()?;
    if bytes > free {
        return Err(Error::Unsupported(format!(
            "{what} needs {bytes} bytes of GPU memory but {} has {free} free",
            gpu.name
        )));
    }
    Ok(())
}

impl Problem {
    /// A host cost volume and pairwise model, uploaded.
    fn from_volume(cost: &CostVolume, model: &PairwiseModel, device: Device) -> Result<Self> {
        model.check(cost)?;
        let shape = GridShape::new([cost.width, cost.height, 1], model.connectivity)?;
        check_free(
            device,
            4 * (cost.data.len() + model.weights.len() * cost.num_pixels()) as u64,
            "the cost volume",
        )?;
        let (stream, k) = start(device)?;
        let weights: Vec<i32> = model.weights.concat();
        let p = Problem {
            device,
            cost: cuda::upload(&stream, &cost.data, "cost volume")?,
            weights: cuda::upload(&stream, &weights, "pair weights")?,
            stream,
            k,
            shape,
            labels: cost.labels,
            vtrunc: vtrunc(model.distance),
            guide: None,
        };
        // The host arrays are borrowed: finish the copies.
        cuda::sync(&p.stream)?;
        Ok(p)
    }

    /// The cost volume and the pair weights of a rectified pair, computed on the device.
    fn from_pair(left: &Image, right: &Image, opts: &StereoOptions) -> Result<Self> {
        let (l, r) = (View::of(left, "left view")?, View::of(right, "right view")?);
        let count = opts.num_disparities;
        check_pair(&l, &r, count, &opts.cost)?;
        check_2d(opts.connectivity)?;
        let distance = opts.smoothness.pairwise();
        if distance == (Pairwise::TruncatedLinear { truncation: 0 }) {
            return Err(Error::Graph(
                "truncated linear needs a truncation of at least 1".into(),
            ));
        }
        let (lam1, lam2) = super::lambdas(opts);
        let top = MAX_COST as i64 / distance.max_distance() as i64;
        if let Some(bad) = [lam1, lam2].into_iter().find(|&l| l < 0 || l as i64 > top) {
            return Err(Error::Graph(format!(
                "pairwise weight {bad} is outside 0..={top}"
            )));
        }
        let (w, h, ch) = (l.width, l.height, l.channels);
        let n = w * h;
        let shape = GridShape::new([w, h, 1], opts.connectivity)?;
        if ch * n > u32::MAX as usize {
            return Err(Error::Unsupported(format!(
                "stereo on the GPU takes up to {} values per view, not {w}x{h} × {ch}",
                u32::MAX
            )));
        }
        let deg = opts.connectivity.degree();
        // Images, planes, ranges (ch·n floats each, times 2 views × 4), grey and census, costs,
        // weights; the filter's guide (ch·n bytes) and its output (n).
        let bytes =
            4 * (8 * ch * n + 4 * n + count * n + deg / 2 * n) as u64 + (ch * n + 4 * n) as u64;
        let device = opts.expansion.solve.device;
        check_free(device, bytes, "the cost volume")?;
        let (stream, k) = start(device)?;
        let s = &stream;
        let census = opts.cost.data == DataTerm::BtCensus;
        let side = |img: &Image, v: &View, what: &str| -> Result<Side> {
            let data = cuda::upload(s, &img.data, what)?;
            let mut sd = Side {
                planes: cuda::zeros(s, ch * n, "planes")?,
                grey: cuda::zeros(s, n, "grey")?,
                lo: cuda::zeros(s, ch * n, "BT ranges")?,
                hi: cuda::zeros(s, ch * n, "BT ranges")?,
                census: None,
            };
            // SAFETY: data and planes have n·ch entries, grey n, lo and hi n·ch (a multiple of
            // w), the census n.
            unsafe {
                k.view_planes(
                    s,
                    n as u32,
                    ch as u32,
                    &data,
                    v.factor,
                    &mut sd.planes,
                    &mut sd.grey,
                )?;
                k.bt_ranges(
                    s,
                    w as u32,
                    (ch * n) as u32,
                    &sd.planes,
                    &mut sd.lo,
                    &mut sd.hi,
                )?;
                if census {
                    let mut c = cuda::zeros::<u32>(s, n, "census")?;
                    k.census(s, w as u32, h as u32, &sd.grey, &mut c)?;
                    sd.census = Some(c);
                }
            }
            // The image is borrowed: the upload must finish before it may go.
            cuda::sync(s)?;
            Ok(sd)
        };
        let ls = side(left, &l, "left view")?;
        let rs = side(right, &r, "right view")?;
        let mut cost = cuda::zeros::<i32>(s, count * n, "cost volume")?;
        let mut weights = cuda::zeros::<i32>(s, deg / 2 * n, "pair weights")?;
        let guide = if opts.median.is_on() {
            let mut g = cuda::zeros::<u8>(s, ch * n, "filter guide")?;
            // SAFETY: the planes and the guide have ch·n entries.
            unsafe { k.guide_bytes(s, n as u32, ch as u32, &ls.planes, &mut g)? };
            Some((g, ch as u32))
        } else {
            None
        };
        let c = &opts.cost;
        // SAFETY: every plane and range has ch·n entries, the census n, the cost count·n, the
        // weights deg/2·n; the grid is 2D (checked above).
        unsafe {
            k.cost_volume(
                s,
                w as u32,
                h as u32,
                ch as u32,
                count as u32,
                opts.min_disparity,
                &ls.planes,
                &rs.planes,
                &ls.lo,
                &ls.hi,
                &rs.lo,
                &rs.hi,
                ls.census.as_ref(),
                rs.census.as_ref(),
                c.truncation,
                c.census_weight,
                c.scale,
                &mut cost,
            )?;
            k.pair_weights(
                s,
                shape,
                ch as u32,
                &ls.planes,
                opts.contrast_threshold,
                lam1,
                lam2,
                &mut weights,
            )?;
        }
        Ok(Problem {
            device,
            stream,
            k,
            shape,
            labels: count,
            vtrunc: vtrunc(distance),
            cost,
            weights,
            guide,
        })
    }
}

/// One view's planes on the device.
struct Side {
    planes: CudaSlice<f32>,
    grey: CudaSlice<f32>,
    lo: CudaSlice<f32>,
    hi: CudaSlice<f32>,
    census: Option<CudaSlice<u32>>,
}

/// Per-move records of one pass, on the device.
struct PassBuffers {
    sums: CudaSlice<u64>,
    hist: CudaSlice<u64>,
    flows: CudaSlice<u64>,
    taken: CudaSlice<u32>,
    switched: CudaSlice<u32>,
}

impl Problem {
    /// α-expansion to convergence (or `opts.max_passes`), as [`expand`](super::expand), with the
    /// grid solver tuned by `tuning`; the labelling is left on the device too.
    fn expand(
        &self,
        opts: &ExpansionOptions,
        tuning: &DeviceTuning,
    ) -> Result<(Expansion, CudaSlice<u32>)> {
        let (w, h) = (self.shape.w as usize, self.shape.h as usize);
        let n = w * h;
        let (start, order) = start_and_order(w, h, self.labels, opts)?;
        let s = &self.stream;
        let k = &self.k;
        let shape = self.shape;
        let mut labels = match start {
            Some(l) => {
                let l32: Vec<u32> = l.iter().map(|&v| v as u32).collect();
                let d = cuda::upload(s, &l32, "labels")?;
                cuda::sync(s)?;
                d
            }
            None => {
                let mut d = cuda::zeros::<u32>(s, n, "labels")?;
                // SAFETY: cost has labels·n entries, d n.
                unsafe { k.winner_takes_all(s, n as u32, self.labels as u32, &self.cost, &mut d)? };
                d
            }
        };
        let mut solver = CudaGrid::new(self.device, tuning.grid.clone());
        let conn = match shape.deg {
            8 => crate::graph::Connectivity::N8,
            _ => crate::graph::Connectivity::N4,
        };
        let mut grid = ResidentGrid::new(&mut solver, [w, h, 1], conn, s)?;
        // One kept flow per label for the dynamic moves, if the device has room for all of them
        // (and a margin for the scratch buffers).
        let warm_moves = tuning.warm_moves
            && check_free(
                self.device,
                grid.kept_bytes().saturating_mul(self.labels as u64 + 2),
                "the dynamic moves' kept flows",
            )
            .is_ok();
        let mut kept: Vec<Option<KeptFlow>> = (0..self.labels).map(|_| None).collect();
        let moves_per = order.len();
        let mut b = PassBuffers {
            sums: cuda::zeros(s, 2 * moves_per + 2, "move sums")?,
            hist: cuda::zeros(s, moves_per + 1, "energies")?,
            flows: cuda::zeros(s, moves_per, "flows")?,
            taken: cuda::zeros(s, moves_per, "taken")?,
            switched: cuda::zeros(s, moves_per, "switched")?,
        };
        // SAFETY: cost, weights and labels as the problem says; sums has two entries or more.
        unsafe {
            k.move_energy(
                s,
                shape,
                &self.cost,
                &self.weights,
                self.vtrunc,
                &labels,
                None,
                0,
                0,
                &mut b.sums,
            )?
        };
        let mut e = cuda::download(s, &b.sums, "energy")?[0];
        let initial_energy = e as i64;
        let (mut passes, mut moves) = (Vec::<PassStats>::new(), Vec::<MoveStats>::new());
        // Per label: the count of taken moves after its last solve, and whether that solve's
        // move was taken (see the module's note on skipped moves).
        let mut last: Vec<Option<(u64, bool)>> = vec![None; self.labels];
        let mut last_flow: Vec<i64> = vec![0; self.labels];
        // The label of the move solved last (its kept flow starts a first move with `warm_first`).
        let mut prev_solved: Option<usize> = None;
        let mut changes = 0u64;
        let mut converged = false;
        while opts.max_passes.is_none_or(|m| passes.len() < m) {
            let t_pass = Instant::now();
            cuda::clear(s, &mut b.sums)?;
            cuda::clear(s, &mut b.switched)?;
            s.memcpy_htod(&[e], &mut b.hist.slice_mut(0..1))
                .call("cuMemcpyHtoD (energy)")?;
            let mut solved = vec![false; moves_per];
            let mut times = vec![(Duration::ZERO, Duration::ZERO); moves_per];
            let mut warm = vec![false; moves_per];
            let mut work = vec![None; moves_per];
            for (m, &alpha) in order.iter().enumerate() {
                let a = alpha as u32;
                let skip = last[alpha as usize] == Some((changes, false));
                if skip {
                    // SAFETY: the pass buffers have moves_per (+1, +2) entries, m < moves_per.
                    unsafe {
                        k.commit_move(
                            s,
                            n as u32,
                            a,
                            &mut labels,
                            grid.side(),
                            &b.sums,
                            &mut b.hist,
                            grid.flow(),
                            &mut b.flows,
                            &mut b.taken,
                            &mut b.switched,
                            m as u32,
                            0,
                        )?
                    };
                    continue;
                }
                let t = Instant::now();
                {
                    let (caps, source, sink) = grid.capacities_mut();
                    // SAFETY: the problem's arrays as it says, the solver's caps deg·n, source
                    // and sink n; every label and α below the label count.
                    unsafe {
                        k.build_move(
                            s,
                            shape,
                            &self.cost,
                            &self.weights,
                            self.vtrunc,
                            &labels,
                            a,
                            caps,
                            source,
                            sink,
                        )?
                    };
                }
                let build = t.elapsed();
                let t = Instant::now();
                if warm_moves {
                    if tuning.warm_first && kept[alpha as usize].is_none() {
                        if let Some(from) = prev_solved.and_then(|p| kept[p].as_ref()) {
                            let copy = grid.copy_kept(from)?;
                            kept[alpha as usize] = Some(copy);
                        }
                    }
                    warm[m] = grid.solve_keeping(&mut solver, &mut kept[alpha as usize])?;
                    prev_solved = Some(alpha as usize);
                } else {
                    grid.solve(&mut solver)?;
                }
                let solve = t.elapsed();
                work[m] = Some(GpuWork {
                    rounds: solver.stats.rounds,
                    relabels: solver.stats.global_relabels + solver.stats.local_relabels,
                    relabel_passes: solver.stats.bfs_levels,
                });
                // SAFETY: as above; the solver's labels have n entries, sums 2·moves_per + 2.
                unsafe {
                    k.move_energy(
                        s,
                        shape,
                        &self.cost,
                        &self.weights,
                        self.vtrunc,
                        &labels,
                        Some(grid.side()),
                        a,
                        m as u32,
                        &mut b.sums,
                    )?;
                    k.commit_move(
                        s,
                        n as u32,
                        a,
                        &mut labels,
                        grid.side(),
                        &b.sums,
                        &mut b.hist,
                        grid.flow(),
                        &mut b.flows,
                        &mut b.taken,
                        &mut b.switched,
                        m as u32,
                        1,
                    )?;
                }
                let mut taken = [0u32];
                s.memcpy_dtoh(&b.taken.slice(m..m + 1), &mut taken[..])
                    .call("cuMemcpyDtoH (taken)")?;
                cuda::sync(s)?;
                if taken[0] != 0 {
                    changes += 1;
                }
                last[alpha as usize] = Some((changes, taken[0] != 0));
                solved[m] = true;
                times[m] = (build, solve);
            }
            let hist = cuda::download(s, &b.hist, "energies")?;
            let flows = cuda::download(s, &b.flows, "flows")?;
            let sums = cuda::download(s, &b.sums, "move sums")?;
            let switched = cuda::download(s, &b.switched, "switched")?;
            let mut taken = 0;
            for (m, &alpha) in order.iter().enumerate() {
                let flow = if solved[m] {
                    // The certificate: the cut's capacity equals the flow.
                    if sums[2 * m + 1] != flows[m] {
                        return Err(Error::Graph(format!(
                            "the move for label {alpha} (pass {}): cut capacity {} but flow {} \
                             (please report this pair)",
                            passes.len(),
                            sums[2 * m + 1],
                            flows[m]
                        )));
                    }
                    last_flow[alpha as usize] = flows[m] as i64;
                    flows[m] as i64
                } else {
                    last_flow[alpha as usize]
                };
                let took = hist[m + 1] < hist[m];
                taken += took as usize;
                moves.push(MoveStats {
                    pass: passes.len(),
                    label: alpha,
                    build: times[m].0,
                    solve: times[m].1,
                    flow,
                    switched: if took { switched[m] as usize } else { 0 },
                    energy: hist[m + 1] as i64,
                    solver: SolverKind::CudaGrid,
                    warm: warm[m],
                    gpu_work: work[m],
                });
            }
            e = hist[moves_per];
            passes.push(PassStats {
                energy: e as i64,
                moves_taken: taken,
                time: t_pass.elapsed(),
            });
            if taken == 0 {
                converged = true;
                break;
            }
        }
        let out = cuda::download(s, &labels, "labels")?;
        let expansion = Expansion {
            labels: out.into_iter().map(|l| l as u16).collect(),
            energy: e as i64,
            initial_energy,
            passes,
            moves,
            converged,
        };
        Ok((expansion, labels))
    }

    /// The weighted median filter of the device labelling `labels` (all below the problem's
    /// label count), guided by the left view, brought back; `None` when the problem has no guide
    /// or more labels than the device filter takes ([`DEVICE_MAX_LABELS`]).
    fn filter(&self, labels: &CudaSlice<u32>, f: &WeightedMedian) -> Result<Option<Vec<u16>>> {
        let Some((guide, ch)) = &self.guide else {
            return Ok(None);
        };
        if !f.is_on() || self.labels > DEVICE_MAX_LABELS {
            return Ok(None);
        }
        let weights = Weights::new(f, *ch as usize)?;
        let (w, h) = (self.shape.w, self.shape.h);
        filter_on_device(
            &self.stream,
            &self.k,
            [w, h, *ch],
            self.labels,
            guide,
            labels,
            &weights,
        )
        .map(Some)
    }
}

/// Runs the weighted median filter kernel on a device labelling (`labels`, `w·h` entries below
/// `count` ≤ [`DEVICE_MAX_LABELS`]) with a device guide (`ch·w·h` bytes) and brings the filtered
/// map back.
fn filter_on_device(
    s: &Arc<CudaStream>,
    k: &StereoKernels,
    [w, h, ch]: [u32; 3],
    count: usize,
    guide: &CudaSlice<u8>,
    labels: &CudaSlice<u32>,
    weights: &Weights,
) -> Result<Vec<u16>> {
    let n = w as usize * h as usize;
    debug_assert!(count <= DEVICE_MAX_LABELS && guide.len() == ch as usize * n);
    let colour = cuda::upload(s, &weights.colour, "filter colour weights")?;
    let space = cuda::upload(s, &weights.space, "filter spatial weights")?;
    let mut out = cuda::zeros::<u32>(s, n, "filtered labels")?;
    // SAFETY: the guide has ch·w·h entries, labels and out w·h with every label below count;
    // colour and space are the tables' own lengths, space (2·radius + 1)² as Weights makes it,
    // radius checked by Weights::new.
    unsafe {
        k.weighted_median(
            s,
            w,
            h,
            ch,
            weights.radius,
            count as u32,
            guide,
            labels,
            &colour,
            weights.colour.len() as u32,
            &space,
            &mut out,
        )?
    };
    // The download waits for the kernel; the uploaded tables are the host's own until then.
    let filtered = cuda::download(s, &out, "filtered labels")?;
    Ok(filtered.into_iter().map(|l| l as u16).collect())
}

/// [`expand`](super::expand) on the GPU: the cost volume and the weights are uploaded once, and
/// the run stays on the device (see the module's notes). `opts.solve` is not consulted: the
/// grid solver runs every move, and every move's certificate is checked.
///
/// ```no_run
/// use segcut::stereo::{expand, gpu::expand_on_device, CostVolume, ExpansionOptions, Pairwise, PairwiseModel};
/// let cost = CostVolume::from_fn(8, 8, 4, |x, y, l| ((x + y) % 4 != l) as i32 * 5).unwrap();
/// let model = PairwiseModel::uniform(8, 8, Pairwise::Potts, 1);
/// let gpu = expand_on_device(&cost, &model, &ExpansionOptions::default()).unwrap(); // needs a GPU
/// let cpu = expand(&cost, &model, &ExpansionOptions::default()).unwrap();
/// assert_eq!((gpu.labels, gpu.energy), (cpu.labels, cpu.energy));
/// ```
pub fn expand_on_device(
    cost: &CostVolume,
    model: &PairwiseModel,
    opts: &ExpansionOptions,
) -> Result<Expansion> {
    Problem::from_volume(cost, model, opts.solve.device)?
        .expand(opts, &DeviceTuning::default())
        .map(|(e, _)| e)
}

/// [`stereo`](super::stereo) on the GPU for the left view: the pair is uploaded, the cost volume
/// and the weights are computed there, and only the disparities come back. With
/// `opts.median` on, the weighted median filter runs on the device labelling too
/// (`StereoResult::filtered`, the host filter's map bit for bit), unless the labels are more than
/// [`DEVICE_MAX_LABELS`] (then `filtered` is `None` and [`stereo`](super::stereo) filters on the
/// host). [`stereo`](super::stereo) calls it (for each view, with the filter off, with the
/// left–right check) when the solver is `cuda-grid` (or `auto` picks it); this function does no
/// left–right check.
pub fn stereo_on_device(left: &Image, right: &Image, opts: &StereoOptions) -> Result<StereoResult> {
    stereo_on_device_tuned(left, right, opts, &DeviceTuning::default())
}

/// [`stereo_on_device`] with the engine's tuning given (which changes the time, never the
/// result): for measuring which suits the move graphs, and for tests of every path.
pub fn stereo_on_device_tuned(
    left: &Image,
    right: &Image,
    opts: &StereoOptions,
    tuning: &DeviceTuning,
) -> Result<StereoResult> {
    let t = Instant::now();
    let p = Problem::from_pair(left, right, opts)?;
    cuda::sync(&p.stream)?;
    let cost_time = t.elapsed();
    let (expansion, labels) = p.expand(&opts.expansion, tuning)?;
    let tf = Instant::now();
    let filtered = p.filter(&labels, &opts.median)?;
    let filter_time = if filtered.is_some() {
        tf.elapsed()
    } else {
        Duration::ZERO
    };
    Ok(StereoResult {
        width: p.shape.w as usize,
        height: p.shape.h as usize,
        min_disparity: opts.min_disparity,
        expansion,
        cost_time,
        occlusions: None,
        filtered,
        filter_time,
        total_time: t.elapsed(),
    })
}

/// [`weighted_median`](super::median::weighted_median) on the GPU: the guide and the labels are
/// uploaded, the filter runs there ([`stereo_on_device`]'s kernel), and the map comes back,
/// equal to the host's bit for bit. Labels must be below [`DEVICE_MAX_LABELS`] (else
/// `Error::Unsupported`).
///
/// ```no_run
/// use segcut::cuda::Device;
/// use segcut::io::Image;
/// use segcut::stereo::gpu::weighted_median_on_device;
/// use segcut::stereo::median::weighted_median;
/// use segcut::stereo::DEFAULT_MEDIAN;
/// let guide = Image::new([16, 4, 1], 1, (0..64).map(|v| (v * 7 % 31) as f32).collect());
/// let labels: Vec<u16> = (0..64).map(|v| (v * 5 % 9) as u16).collect();
/// let gpu = weighted_median_on_device(Device::new(0), &labels, &guide, &DEFAULT_MEDIAN).unwrap();
/// assert_eq!(gpu, weighted_median(&labels, &guide, &DEFAULT_MEDIAN).unwrap()); // needs a GPU
/// ```
pub fn weighted_median_on_device(
    device: Device,
    labels: &[u16],
    guide: &Image,
    f: &WeightedMedian,
) -> Result<Vec<u16>> {
    f.check()?;
    let v = View::of(guide, "guide view")?;
    let (w, h, ch) = (v.width, v.height, v.channels);
    let n = w * h;
    if labels.len() != n {
        return Err(Error::Graph(format!(
            "{} labels for a {w}x{h} guide",
            labels.len()
        )));
    }
    if !f.is_on() || n == 0 {
        return Ok(labels.to_vec());
    }
    let count = labels.iter().copied().max().unwrap_or(0) as usize + 1;
    if count > DEVICE_MAX_LABELS {
        return Err(Error::Unsupported(format!(
            "the device filter takes labels below {DEVICE_MAX_LABELS}, got {}",
            count - 1
        )));
    }
    if ch * n > u32::MAX as usize {
        return Err(Error::Unsupported(format!(
            "the device filter takes up to {} values, not {w}x{h} × {ch}",
            u32::MAX
        )));
    }
    let weights = Weights::new(f, ch)?;
    // The view and its planes (4·ch·n bytes each), the guide (ch·n), grey, labels, output (4·n).
    check_free(device, (9 * ch * n + 12 * n) as u64, "the filter")?;
    let (stream, k) = start(device)?;
    let s = &stream;
    let data = cuda::upload(s, &guide.data, "guide view")?;
    let l32: Vec<u32> = labels.iter().map(|&l| l as u32).collect();
    let dl = cuda::upload(s, &l32, "labels")?;
    let mut planes = cuda::zeros::<f32>(s, ch * n, "planes")?;
    let mut grey = cuda::zeros::<f32>(s, n, "grey")?;
    let mut bytes = cuda::zeros::<u8>(s, ch * n, "filter guide")?;
    // SAFETY: data, planes and bytes have ch·n entries, grey n.
    unsafe {
        k.view_planes(
            s,
            n as u32,
            ch as u32,
            &data,
            v.factor,
            &mut planes,
            &mut grey,
        )?;
        k.guide_bytes(s, n as u32, ch as u32, &planes, &mut bytes)?;
    }
    let [w, h, ch] = [w as u32, h as u32, ch as u32];
    // The download inside waits for the uploads, whose host arrays live until then.
    filter_on_device(s, &k, [w, h, ch], count, &bytes, &dl, &weights)
}

/// The cost volume of [`cost_volume`](super::cost_volume), computed on the GPU and brought back
/// (equal to the host's bit for bit; what [`stereo_on_device`] starts from). Costs beside the
/// point of the pair weights: the default [`StereoOptions`] but for `min_disparity`, `count` and
/// `opts`.
///
/// ```no_run
/// use segcut::io::Image;
/// use segcut::cuda::Device;
/// use segcut::stereo::{cost_volume, gpu::cost_volume_on_device, CostOptions};
/// let l = Image::new([16, 4, 1], 1, (0..64).map(|v| (v * 7 % 31) as f32).collect());
/// let r = Image::new([16, 4, 1], 1, (0..64).map(|v| (v * 5 % 29) as f32).collect());
/// let o = CostOptions::default();
/// let gpu = cost_volume_on_device(Device::new(0), &l, &r, 0, 4, &o).unwrap(); // needs a GPU
/// assert_eq!(gpu, cost_volume(&l, &r, 0, 4, &o).unwrap());
/// ```
pub fn cost_volume_on_device(
    device: Device,
    left: &Image,
    right: &Image,
    min_disparity: i32,
    count: usize,
    opts: &super::CostOptions,
) -> Result<CostVolume> {
    let mut o = StereoOptions {
        min_disparity,
        num_disparities: count,
        cost: *opts,
        ..Default::default()
    };
    o.expansion.solve.device = device;
    let p = Problem::from_pair(left, right, &o)?;
    let data = cuda::download(&p.stream, &p.cost, "cost volume")?;
    CostVolume::new(p.shape.w as usize, p.shape.h as usize, count, data)
}
