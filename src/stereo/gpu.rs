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
//!
//! **Packed pairs** ([`stereo_packed_on_device`], [`expand_packed_on_device`]). K problems of
//! one size and one set of options are stacked along y into one grid of `w × K·h` and run their
//! α-expansions in lockstep: each move's graph is built, solved and committed once for all K.
//! Every pair weight that joins two parts is 0 (each part's weights are computed, or given, for
//! its own image, where such a pair leaves the image), so every seam arc of every move graph has
//! capacity 0 and the move graph is the disjoint union of the K parts' move graphs. Its maximum
//! flow is the sum of theirs and its canonical cut (the nodes that reach the sink) restricted to
//! part k is part k's canonical cut (the argument of `src/batch/pack.rs`). The energies are
//! summed per part and a move is committed per part (part k takes it iff part k's energy drops),
//! so each part goes through exactly the labellings of its own run. A part that had a pass with
//! no taken move has its final labelling: every later move graph of it is one solved before and
//! not taken, so the passes the other parts still need change nothing there (a part that took one
//! anyway would be an error, reported). The run ends when every part has converged (or at
//! `max_passes`). The certificate is checked on the stacked graph: each part's cut is at least
//! its maximum flow, so the sum of the cut capacities equal to the flow means equality in every
//! part, and each part reports its own cut capacity as its move's flow. A move is skipped only
//! when every part would skip it; a part's statistics can then differ from its own run only in
//! the moves' times, `warm` and `gpu_work`.

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
/// It is `parts` problems of `w × rows` pixels stacked along y (packed pairs, module
/// [`stereo_packed_on_device`]); a single problem is one part.
struct Problem {
    device: Device,
    stream: Arc<CudaStream>,
    k: StereoKernels,
    /// The stacked grid: `w × parts·rows`.
    shape: GridShape,
    /// The rows of one part.
    rows: usize,
    parts: usize,
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

/// A pair, checked: its views, the distance and the two pairwise weights.
struct CheckedPair {
    l: View,
    r: View,
    distance: Pairwise,
    lam1: i32,
    lam2: i32,
}

/// Checks a pair and the options for the device engine (before any device work).
fn check_stereo(left: &Image, right: &Image, opts: &StereoOptions) -> Result<CheckedPair> {
    let (l, r) = (View::of(left, "left view")?, View::of(right, "right view")?);
    check_pair(&l, &r, opts.num_disparities, &opts.cost)?;
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
    if l.channels * l.width * l.height > u32::MAX as usize {
        return Err(Error::Unsupported(format!(
            "stereo on the GPU takes up to {} values per view, not {}x{} × {}",
            u32::MAX,
            l.width,
            l.height,
            l.channels
        )));
    }
    Ok(CheckedPair {
        l,
        r,
        distance,
        lam1,
        lam2,
    })
}

/// The device bytes of one pair's computation of `n` pixels, `ch` channels: images, planes,
/// ranges (ch·n floats each, times 2 views × 4), grey and census, costs, weights; the filter's
/// guide (ch·n bytes) and its output (n).
fn pair_bytes(n: usize, ch: usize, opts: &StereoOptions) -> u64 {
    let deg = opts.connectivity.degree();
    4 * (8 * ch * n + 4 * n + opts.num_disparities * n + deg / 2 * n) as u64
        + (ch * n + 4 * n) as u64
}

/// One pair's cost volume, pair weights and filter guide (with `opts.median` on), computed on
/// the device.
struct PairBuffers {
    cost: CudaSlice<i32>,
    weights: CudaSlice<i32>,
    guide: Option<CudaSlice<u8>>,
}

/// Computes a checked pair's buffers on stream `s`.
fn pair_buffers(
    s: &Arc<CudaStream>,
    k: &StereoKernels,
    (left, right): (&Image, &Image),
    c: &CheckedPair,
    opts: &StereoOptions,
) -> Result<PairBuffers> {
    let (l, r) = (&c.l, &c.r);
    let count = opts.num_disparities;
    let (w, h, ch) = (l.width, l.height, l.channels);
    let n = w * h;
    let shape = GridShape::new([w, h, 1], opts.connectivity)?;
    let deg = opts.connectivity.degree();
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
    let ls = side(left, l, "left view")?;
    let rs = side(right, r, "right view")?;
    let mut cost = cuda::zeros::<i32>(s, count * n, "cost volume")?;
    let mut weights = cuda::zeros::<i32>(s, deg / 2 * n, "pair weights")?;
    let guide = if opts.median.is_on() {
        let mut g = cuda::zeros::<u8>(s, ch * n, "filter guide")?;
        // SAFETY: the planes and the guide have ch·n entries.
        unsafe { k.guide_bytes(s, n as u32, ch as u32, &ls.planes, &mut g)? };
        Some(g)
    } else {
        None
    };
    let o = &opts.cost;
    // SAFETY: every plane and range has ch·n entries, the census n, the cost count·n, the
    // weights deg/2·n; the grid is 2D (checked by check_stereo).
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
            o.truncation,
            o.census_weight,
            o.scale,
            &mut cost,
        )?;
        k.pair_weights(
            s,
            shape,
            ch as u32,
            &ls.planes,
            opts.contrast_threshold,
            c.lam1,
            c.lam2,
            &mut weights,
        )?;
    }
    Ok(PairBuffers {
        cost,
        weights,
        guide,
    })
}

/// Copies `count` planes of `n` entries from `src` (planes contiguous) into part `part` of `dst`,
/// whose planes have `total` entries: plane j of `src` goes to `dst[j·total + part·n ..]`.
fn copy_planes<T: cudarc::driver::DeviceRepr>(
    s: &Arc<CudaStream>,
    src: &CudaSlice<T>,
    dst: &mut CudaSlice<T>,
    [count, n, total, part]: [usize; 4],
) -> Result<()> {
    for j in 0..count {
        let at = j * total + part * n;
        s.memcpy_dtod(
            &src.slice(j * n..(j + 1) * n),
            &mut dst.slice_mut(at..at + n),
        )
        .call("cuMemcpyDtoD (packed part)")?;
    }
    Ok(())
}

/// An error naming (by `name(i)`) the first item whose size or channels differ from the first
/// item's.
fn check_same_dims(
    dims: impl Iterator<Item = ([usize; 3], usize)>,
    name: impl Fn(usize) -> String,
) -> Result<()> {
    let mut first = None;
    for (i, (d, ch)) in dims.enumerate() {
        match first {
            None => first = Some((d, ch)),
            Some((d0, ch0)) if (d, ch) != (d0, ch0) => {
                return Err(Error::Graph(format!(
                    "packed problems must have one size: {} is {}x{}x{} with {ch} channels, \
                     {} {}x{}x{} with {ch0}",
                    name(i),
                    d[0],
                    d[1],
                    d[2],
                    name(0),
                    d0[0],
                    d0[1],
                    d0[2]
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Cost volumes and pairwise models of one size, label count, connectivity and distance, stacked
/// along y into one volume and model of `w × K·h`; `room(bytes)` is asked first whether the
/// stacked arrays may be made. Every pair weight whose second pixel lies outside its own part is
/// set to 0 (a single problem never reads those; stacked, they would join the parts), so the
/// stacked energy of stacked labellings is the sum of the parts' energies. An error names the
/// first problem that differs from the first.
fn stack_volumes(
    problems: &[(&CostVolume, &PairwiseModel)],
    room: impl FnOnce(u64) -> Result<()>,
) -> Result<(CostVolume, PairwiseModel)> {
    let Some(&(c0, m0)) = problems.first() else {
        return Err(Error::Graph("no problems to pack".into()));
    };
    check_same_dims(
        problems
            .iter()
            .map(|(c, _)| ([c.width, c.height, c.labels], 1)),
        |i| format!("problem {i} (width, height, labels)"),
    )?;
    for (i, &(c, m)) in problems.iter().enumerate() {
        m.check(c)?;
        if (m.connectivity, m.distance) != (m0.connectivity, m0.distance) {
            return Err(Error::Graph(format!(
                "packed problems must have one pairwise model kind: problem {i} has {} and \
                 {:?}, problem 0 {} and {:?}",
                m.connectivity, m.distance, m0.connectivity, m0.distance
            )));
        }
    }
    let (w, rows, parts) = (c0.width, c0.height, problems.len());
    let n = w * rows;
    let planes = m0.weights.len();
    let total = n
        .checked_mul(parts)
        .filter(|t| t.checked_mul(c0.labels + planes).is_some())
        .ok_or_else(|| Error::Unsupported(format!("{parts} packed {w}x{rows} problems")))?;
    GridShape::new([w, rows * parts, 1], m0.connectivity)?;
    room(4 * ((c0.labels + planes) * total) as u64)?;
    let mut cost = vec![0i32; c0.labels * total];
    let mut weights = vec![vec![0i32; total]; planes];
    let offsets = m0.connectivity.offsets();
    for (part, &(c, m)) in problems.iter().enumerate() {
        for l in 0..c.labels {
            let at = l * total + part * n;
            cost[at..at + n].copy_from_slice(&c.data[l * n..(l + 1) * n]);
        }
        for (k, plane) in m.weights.iter().enumerate() {
            let [dx, dy, _] = offsets[2 * k];
            let out = &mut weights[k][part * n..(part + 1) * n];
            for (p, (o, &wt)) in out.iter_mut().zip(plane).enumerate() {
                let (x, y) = ((p % w) as i64 + dx as i64, (p / w) as i64 + dy as i64);
                let inside = x >= 0 && y >= 0 && x < w as i64 && y < rows as i64;
                *o = if inside { wt } else { 0 };
            }
        }
    }
    Ok((
        CostVolume::new(w, rows * parts, c0.labels, cost)?,
        PairwiseModel {
            width: w,
            height: rows * parts,
            connectivity: m0.connectivity,
            distance: m0.distance,
            weights,
        },
    ))
}

impl Problem {
    /// A host cost volume and pairwise model, uploaded.
    fn from_volume(cost: &CostVolume, model: &PairwiseModel, device: Device) -> Result<Self> {
        Self::from_volumes(&[(cost, model)], device)
    }

    /// Host cost volumes and pairwise models of one size, label count, connectivity and
    /// distance, stacked along y ([`stack_volumes`]) and uploaded.
    fn from_volumes(problems: &[(&CostVolume, &PairwiseModel)], device: Device) -> Result<Self> {
        let (cost, model) = stack_volumes(problems, |bytes| {
            check_free(device, bytes, "the cost volume")
        })?;
        let shape = GridShape::new([cost.width, cost.height, 1], model.connectivity)?;
        let (stream, k) = start(device)?;
        let p = Problem {
            device,
            cost: cuda::upload(&stream, &cost.data, "cost volume")?,
            weights: cuda::upload(&stream, &model.weights.concat(), "pair weights")?,
            stream,
            k,
            shape,
            rows: cost.height / problems.len(),
            parts: problems.len(),
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
        let c = check_stereo(left, right, opts)?;
        let (w, h, ch) = (c.l.width, c.l.height, c.l.channels);
        let shape = GridShape::new([w, h, 1], opts.connectivity)?;
        let device = opts.expansion.solve.device;
        check_free(device, pair_bytes(w * h, ch, opts), "the cost volume")?;
        let (stream, k) = start(device)?;
        let b = pair_buffers(&stream, &k, (left, right), &c, opts)?;
        Ok(Problem {
            device,
            stream,
            k,
            shape,
            rows: h,
            parts: 1,
            labels: opts.num_disparities,
            vtrunc: vtrunc(c.distance),
            cost: b.cost,
            weights: b.weights,
            guide: b.guide.map(|g| (g, ch as u32)),
        })
    }

    /// Pairs of one size, stacked along y: each pair's buffers are computed as
    /// [`from_pair`](Self::from_pair) computes them and copied into its part. A part's weights
    /// are 0 on every pair that leaves its image (the kernel's border rule), so no weight joins
    /// two parts.
    fn from_pairs(pairs: &[(&Image, &Image)], opts: &StereoOptions) -> Result<Self> {
        check_same_dims(
            pairs
                .iter()
                .flat_map(|(l, r)| [(l.dims, l.channels), (r.dims, r.channels)]),
            |i| format!("pair {} ({} view)", i / 2, ["left", "right"][i % 2]),
        )?;
        let checked = pairs
            .iter()
            .map(|(l, r)| check_stereo(l, r, opts))
            .collect::<Result<Vec<_>>>()?;
        let Some(c0) = checked.first() else {
            return Err(Error::Graph("no pairs to pack".into()));
        };
        if pairs.len() == 1 {
            return Self::from_pair(pairs[0].0, pairs[0].1, opts);
        }
        let (w, rows, ch, parts) = (c0.l.width, c0.l.height, c0.l.channels, pairs.len());
        let n = w * rows;
        let total = n
            .checked_mul(parts)
            .filter(|t| t.saturating_mul(ch) <= u32::MAX as usize)
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "{parts} packed {w}x{rows} pairs with {ch} channels pass {} values",
                    u32::MAX
                ))
            })?;
        let shape = GridShape::new([w, rows * parts, 1], opts.connectivity)?;
        let count = opts.num_disparities;
        let planes = opts.connectivity.degree() / 2;
        let device = opts.expansion.solve.device;
        let guide_bytes = if opts.median.is_on() { ch * total } else { 0 };
        check_free(
            device,
            (4 * (count + planes) * total + guide_bytes) as u64 + pair_bytes(n, ch, opts),
            "the packed cost volumes",
        )?;
        let (stream, k) = start(device)?;
        let s = &stream;
        let mut cost = cuda::zeros::<i32>(s, count * total, "cost volume")?;
        let mut weights = cuda::zeros::<i32>(s, planes * total, "pair weights")?;
        let mut guide = match opts.median.is_on() {
            true => Some(cuda::zeros::<u8>(s, ch * total, "filter guide")?),
            false => None,
        };
        for (part, (pair, c)) in pairs.iter().zip(&checked).enumerate() {
            let b = pair_buffers(s, &k, *pair, c, opts)?;
            copy_planes(s, &b.cost, &mut cost, [count, n, total, part])?;
            copy_planes(s, &b.weights, &mut weights, [planes, n, total, part])?;
            if let (Some(g), Some(bg)) = (guide.as_mut(), b.guide.as_ref()) {
                copy_planes(s, bg, g, [1, ch * n, ch * total, part])?;
            }
        }
        Ok(Problem {
            device,
            stream,
            k,
            shape,
            rows,
            parts,
            labels: count,
            vtrunc: vtrunc(c0.distance),
            cost,
            weights,
            guide: guide.map(|g| (g, ch as u32)),
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

/// Per-move records of one pass, on the device (per part where the kernels say so).
struct PassBuffers {
    sums: CudaSlice<u64>,
    hist: CudaSlice<u64>,
    flows: CudaSlice<u64>,
    taken: CudaSlice<u32>,
    switched: CudaSlice<u32>,
}

/// One part's run as it goes: what [`Expansion`] reports, and the skip rule's bookkeeping.
struct PartRun {
    energy: u64,
    initial_energy: i64,
    passes: Vec<PassStats>,
    moves: Vec<MoveStats>,
    /// A pass took no move: the labelling is final (module notes, "Packed pairs").
    converged: bool,
    /// Per label: the count of taken moves after its last solve, and whether that solve's move
    /// was taken (see the module's note on skipped moves).
    last: Vec<Option<(u64, bool)>>,
    last_flow: Vec<i64>,
    /// Moves taken so far.
    changes: u64,
}

impl Problem {
    /// α-expansion of every part to convergence (or `opts.max_passes`), as
    /// [`expand`](super::expand) runs each on its own, with the grid solver tuned by `tuning`;
    /// one [`Expansion`] per part, and the stacked labelling left on the device too.
    fn expand(
        &self,
        opts: &ExpansionOptions,
        tuning: &DeviceTuning,
    ) -> Result<(Vec<Expansion>, CudaSlice<u32>)> {
        let (w, rows, parts) = (self.shape.w as usize, self.rows, self.parts);
        let n = w * rows * parts;
        let part_n = w * rows;
        let (start, order) = start_and_order(w, rows, self.labels, opts)?;
        let s = &self.stream;
        let k = &self.k;
        let shape = self.shape;
        let mut labels = match start {
            Some(l) => {
                // Every part starts from the same labelling.
                let l32: Vec<u32> = l.iter().map(|&v| v as u32).collect();
                let d = cuda::upload(s, &l32.repeat(parts), "labels")?;
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
        let mut grid = ResidentGrid::new(&mut solver, [w, rows * parts, 1], conn, s)?;
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
            sums: cuda::zeros(s, 2 * (moves_per + 1) * parts, "move sums")?,
            hist: cuda::zeros(s, (moves_per + 1) * parts, "energies")?,
            flows: cuda::zeros(s, moves_per, "flows")?,
            taken: cuda::zeros(s, moves_per * parts, "taken")?,
            switched: cuda::zeros(s, moves_per * parts, "switched")?,
        };
        // SAFETY: cost, weights and labels as the problem says, rows divides the grid's height;
        // sums has 2·parts entries or more.
        unsafe {
            k.move_energy(
                s,
                shape,
                rows as u32,
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
        let first = cuda::download(s, &b.sums, "energy")?;
        let mut runs: Vec<PartRun> = (0..parts)
            .map(|i| PartRun {
                energy: first[2 * i],
                initial_energy: first[2 * i] as i64,
                passes: Vec::new(),
                moves: Vec::new(),
                converged: false,
                last: vec![None; self.labels],
                last_flow: vec![0; self.labels],
                changes: 0,
            })
            .collect();
        // The label of the move solved last (its kept flow starts a first move with `warm_first`).
        let mut prev_solved: Option<usize> = None;
        let mut pass = 0;
        while opts.max_passes.is_none_or(|m| pass < m) && runs.iter().any(|r| !r.converged) {
            let t_pass = Instant::now();
            cuda::clear(s, &mut b.sums)?;
            cuda::clear(s, &mut b.switched)?;
            let start_energy: Vec<u64> = runs.iter().map(|r| r.energy).collect();
            s.memcpy_htod(&start_energy, &mut b.hist.slice_mut(0..parts))
                .call("cuMemcpyHtoD (energy)")?;
            let mut solved = vec![false; moves_per];
            let mut times = vec![(Duration::ZERO, Duration::ZERO); moves_per];
            let mut warm = vec![false; moves_per];
            let mut work = vec![None; moves_per];
            for (m, &alpha) in order.iter().enumerate() {
                let a = alpha as u32;
                // Skipped only where every part would skip it (a converged part always would).
                let skip = runs
                    .iter()
                    .all(|r| r.last[alpha as usize] == Some((r.changes, false)));
                if skip {
                    // SAFETY: the pass buffers have moves_per (+1, +2) entries per part,
                    // m < moves_per, parts divides n.
                    unsafe {
                        k.commit_move(
                            s,
                            n as u32,
                            parts as u32,
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
                // SAFETY: as above; the solver's labels have n entries, sums
                // 2·(moves_per + 1)·parts.
                unsafe {
                    k.move_energy(
                        s,
                        shape,
                        rows as u32,
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
                        parts as u32,
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
                let mut taken = vec![0u32; parts];
                s.memcpy_dtoh(&b.taken.slice(m * parts..(m + 1) * parts), &mut taken[..])
                    .call("cuMemcpyDtoH (taken)")?;
                cuda::sync(s)?;
                for (r, &t) in runs.iter_mut().zip(&taken) {
                    if t != 0 {
                        if r.converged {
                            // Its graph is one solved before, whose move was not taken.
                            return Err(Error::Graph(format!(
                                "a converged packed part took the move for label {alpha} \
                                 (please report these pairs)"
                            )));
                        }
                        r.changes += 1;
                    }
                    r.last[alpha as usize] = Some((r.changes, t != 0));
                }
                solved[m] = true;
                times[m] = (build, solve);
            }
            let hist = cuda::download(s, &b.hist, "energies")?;
            let flows = cuda::download(s, &b.flows, "flows")?;
            let sums = cuda::download(s, &b.sums, "move sums")?;
            let switched = cuda::download(s, &b.switched, "switched")?;
            for (m, &alpha) in order.iter().enumerate() {
                // The certificate: the cut's capacity equals the flow. Summed over the parts,
                // whose graphs are disjoint: each part's cut is at least its maximum flow, so
                // equality of the sums is equality in every part, and a part's cut capacity is
                // its own move's flow.
                let cut: u64 = (0..parts).map(|i| sums[2 * (m * parts + i) + 1]).sum();
                if solved[m] && cut != flows[m] {
                    return Err(Error::Graph(format!(
                        "the move for label {alpha} (pass {pass}): cut capacity {cut} but flow {} \
                         (please report this pair)",
                        flows[m]
                    )));
                }
            }
            for (i, r) in runs.iter_mut().enumerate() {
                if r.converged {
                    continue;
                }
                let mut taken = 0;
                for (m, &alpha) in order.iter().enumerate() {
                    let at = m * parts + i;
                    let flow = if solved[m] {
                        let f = sums[2 * at + 1] as i64;
                        r.last_flow[alpha as usize] = f;
                        f
                    } else {
                        r.last_flow[alpha as usize]
                    };
                    let took = hist[at + parts] < hist[at];
                    taken += took as usize;
                    r.moves.push(MoveStats {
                        pass,
                        label: alpha,
                        build: times[m].0,
                        solve: times[m].1,
                        flow,
                        switched: if took { switched[at] as usize } else { 0 },
                        energy: hist[at + parts] as i64,
                        solver: SolverKind::CudaGrid,
                        warm: warm[m],
                        gpu_work: work[m],
                    });
                }
                r.energy = hist[moves_per * parts + i];
                r.passes.push(PassStats {
                    energy: r.energy as i64,
                    moves_taken: taken,
                    time: t_pass.elapsed(),
                });
                r.converged = taken == 0;
            }
            pass += 1;
        }
        let out = cuda::download(s, &labels, "labels")?;
        let expansions = runs
            .into_iter()
            .zip(out.chunks(part_n))
            .map(|(r, l)| Expansion {
                labels: l.iter().map(|&v| v as u16).collect(),
                energy: r.energy as i64,
                initial_energy: r.initial_energy,
                passes: r.passes,
                moves: r.moves,
                converged: r.converged,
            })
            .collect();
        Ok((expansions, labels))
    }

    /// The weighted median filter of the device labelling `labels` (all below the problem's
    /// label count), guided by the left view, each part on its own, brought back (the whole
    /// stacked map); `None` when the problem has no guide or more labels than the device filter
    /// takes ([`DEVICE_MAX_LABELS`]).
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
            [w, h, self.rows as u32, *ch],
            self.labels,
            guide,
            labels,
            &weights,
        )
        .map(Some)
    }
}

/// Runs the weighted median filter kernel on a device labelling (`labels`, `w·h` entries below
/// `count` ≤ [`DEVICE_MAX_LABELS`]) with a device guide (`ch·w·h` bytes), each part of `rows`
/// rows (dividing `h`) on its own, and brings the filtered map back.
fn filter_on_device(
    s: &Arc<CudaStream>,
    k: &StereoKernels,
    [w, h, rows, ch]: [u32; 4],
    count: usize,
    guide: &CudaSlice<u8>,
    labels: &CudaSlice<u32>,
    weights: &Weights,
) -> Result<Vec<u16>> {
    let n = w as usize * h as usize;
    debug_assert!(count <= DEVICE_MAX_LABELS && guide.len() == ch as usize * n);
    debug_assert!(rows >= 1 && h % rows == 0);
    let colour = cuda::upload(s, &weights.colour, "filter colour weights")?;
    let space = cuda::upload(s, &weights.space, "filter spatial weights")?;
    let mut out = cuda::zeros::<u32>(s, n, "filtered labels")?;
    // SAFETY: the guide has ch·w·h entries, labels and out w·h with every label below count;
    // colour and space are the tables' own lengths, space (2·radius + 1)² as Weights makes it,
    // radius checked by Weights::new; rows ≥ 1 divides h.
    unsafe {
        k.weighted_median(
            s,
            w,
            h,
            rows,
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
        .map(|(mut e, _)| e.remove(0))
}

/// [`expand_on_device`] for several problems of one size, label count, connectivity and
/// distance at once, packed into one stacked problem (the module's "Packed pairs"): one
/// [`Expansion`] per problem, each equal to what [`expand_on_device`] gives for it alone in
/// labels, energies, passes and per-move flows; only the moves' times and `warm` / `gpu_work`
/// may differ. `opts` holds for every problem (and `opts.initial`, if given, is every problem's
/// start). An error names the first problem that differs from the first in size or model kind.
///
/// ```no_run
/// use segcut::stereo::gpu::{expand_packed_on_device, DeviceTuning};
/// use segcut::stereo::{expand, CostVolume, ExpansionOptions, Pairwise, PairwiseModel};
/// let a = CostVolume::from_fn(8, 8, 4, |x, y, l| ((x + y) % 4 != l) as i32 * 5).unwrap();
/// let b = CostVolume::from_fn(8, 8, 4, |x, y, l| ((x * y) % 4 != l) as i32 * 3).unwrap();
/// let model = PairwiseModel::uniform(8, 8, Pairwise::Potts, 1);
/// let o = ExpansionOptions::default();
/// let runs = expand_packed_on_device(&[(&a, &model), (&b, &model)], &o, &DeviceTuning::default())
///     .unwrap(); // needs a GPU
/// assert_eq!(runs[1].labels, expand(&b, &model, &o).unwrap().labels);
/// ```
pub fn expand_packed_on_device(
    problems: &[(&CostVolume, &PairwiseModel)],
    opts: &ExpansionOptions,
    tuning: &DeviceTuning,
) -> Result<Vec<Expansion>> {
    Problem::from_volumes(problems, opts.solve.device)?
        .expand(opts, tuning)
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
    let mut r = run_problem(p, opts, tuning, t)?;
    Ok(r.remove(0))
}

/// [`stereo_on_device_tuned`] for several rectified pairs of one size (and channel count) with
/// the same options at once: the pairs run their α-expansions in lockstep as one stacked
/// problem, so each move's solve serves every pair for about the time of one (the module's
/// "Packed pairs"). One [`StereoResult`] per pair, in order, whose labels, filtered map,
/// energies, passes and per-move flows, energies and switched pixels equal
/// [`stereo_on_device`]'s for that pair alone; the times are the packed run's (`cost_time`,
/// `filter_time`, `total_time` of the whole pack, a move's `build` and `solve` of the shared
/// move), and a move's `warm` and `gpu_work` are the shared solve's (a move a single run would
/// skip is solved when another pair needs it). Like [`stereo_on_device`] it does no left–right
/// check. An error names the first pair whose size differs from the first pair's; with no pairs,
/// an error.
///
/// ```no_run
/// use segcut::io::Image;
/// use segcut::stereo::gpu::{stereo_on_device, stereo_packed_on_device, DeviceTuning};
/// use segcut::stereo::StereoOptions;
/// let l = Image::new([32, 8, 1], 1, (0..256).map(|v| (v * 7 % 31) as f32).collect());
/// let r = Image::new([32, 8, 1], 1, (0..256).map(|v| (v * 5 % 29) as f32).collect());
/// let o = StereoOptions { num_disparities: 4, ..Default::default() };
/// let both = stereo_packed_on_device(&[(&l, &r), (&r, &l)], &o, &DeviceTuning::default())
///     .unwrap(); // needs a GPU
/// assert_eq!(both[0].labels(), stereo_on_device(&l, &r, &o).unwrap().labels());
/// ```
pub fn stereo_packed_on_device(
    pairs: &[(&Image, &Image)],
    opts: &StereoOptions,
    tuning: &DeviceTuning,
) -> Result<Vec<StereoResult>> {
    let t = Instant::now();
    let p = Problem::from_pairs(pairs, opts)?;
    run_problem(p, opts, tuning, t)
}

/// Runs a problem made from pairs to the end: the expansion, the filter, one result per part.
fn run_problem(
    p: Problem,
    opts: &StereoOptions,
    tuning: &DeviceTuning,
    t: Instant,
) -> Result<Vec<StereoResult>> {
    cuda::sync(&p.stream)?;
    let cost_time = t.elapsed();
    let (expansions, labels) = p.expand(&opts.expansion, tuning)?;
    let tf = Instant::now();
    let filtered = p.filter(&labels, &opts.median)?;
    let filter_time = if filtered.is_some() {
        tf.elapsed()
    } else {
        Duration::ZERO
    };
    let part_n = p.shape.w as usize * p.rows;
    let total_time = t.elapsed();
    Ok(expansions
        .into_iter()
        .enumerate()
        .map(|(i, expansion)| StereoResult {
            width: p.shape.w as usize,
            height: p.rows,
            min_disparity: opts.min_disparity,
            expansion,
            cost_time,
            occlusions: None,
            filtered: filtered
                .as_ref()
                .map(|f| f[i * part_n..(i + 1) * part_n].to_vec()),
            filter_time,
            total_time,
        })
        .collect())
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
    filter_on_device(s, &k, [w, h, h, ch], count, &bytes, &dl, &weights)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Connectivity;
    use crate::rng::Rng;
    use crate::stereo::energy;

    /// Stacking joins nothing: with weights on every pair that leaves a part (which stacking must
    /// drop), the stacked energy of stacked labellings is the sum of the parts' energies, for
    /// random problems, both connectivities, Potts and truncated linear.
    #[test]
    fn stacked_energy_is_the_sum_of_the_parts() {
        let mut rng = Rng::new(11);
        for case in 0..24 {
            let (w, h, labels) = (1 + rng.below(9) as usize, 1 + rng.below(7) as usize, 4);
            let conn = [Connectivity::N4, Connectivity::N8][case % 2];
            let distance =
                [Pairwise::Potts, Pairwise::TruncatedLinear { truncation: 2 }][case / 2 % 2];
            let parts: Vec<_> = (0..1 + case % 4)
                .map(|_| {
                    let c =
                        CostVolume::from_fn(w, h, labels, |_, _, _| rng.below(50) as i32).unwrap();
                    let mut m = PairwiseModel::from_fn(w, h, conn, distance, |_, _| 0).unwrap();
                    for v in m.weights.iter_mut().flatten() {
                        *v = 1 + rng.below(30) as i32;
                    }
                    let l: Vec<u16> = (0..w * h)
                        .map(|_| rng.below(labels as u64) as u16)
                        .collect();
                    (c, m, l)
                })
                .collect();
            let refs: Vec<_> = parts.iter().map(|(c, m, _)| (c, m)).collect();
            let (cost, model) = stack_volumes(&refs, |_| Ok(())).unwrap();
            assert_eq!((cost.width, cost.height), (w, h * parts.len()));
            let all: Vec<u16> = parts.iter().flat_map(|(_, _, l)| l.clone()).collect();
            let sum: i64 = parts.iter().map(|(c, m, l)| energy(c, m, l).unwrap()).sum();
            assert_eq!(energy(&cost, &model, &all).unwrap(), sum, "case {case}");
        }
    }

    /// Problems of other sizes, label counts or model kinds are refused before anything is made.
    #[test]
    fn stacking_refuses_mixed_problems() {
        let c = CostVolume::from_fn(4, 3, 2, |_, _, _| 1).unwrap();
        let c3 = CostVolume::from_fn(4, 3, 3, |_, _, _| 1).unwrap();
        let m = PairwiseModel::uniform(4, 3, Pairwise::Potts, 1);
        let m8 = PairwiseModel::from_fn(4, 3, Connectivity::N8, Pairwise::Potts, |_, _| 1).unwrap();
        let never = |_| -> Result<()> { panic!("asked for room") };
        assert!(stack_volumes(&[], never).is_err());
        assert!(stack_volumes(&[(&c, &m), (&c3, &m)], never).is_err());
        assert!(stack_volumes(&[(&c, &m), (&c, &m8)], never).is_err());
    }
}
