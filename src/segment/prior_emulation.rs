//! A sequential emulation of `prior_strips` (`kernels/seg_prior.cu`) and of the pass loop around
//! it (`gpu_prior.rs`), for machines without a GPU: the same strips, segments
//! ([`segment_steps`]), lanes, chunks, tiles, halos and shuffles, run one warp after another and
//! one lane after another. Other warps' lines (a strip's outer lines, the step before a
//! segment, a volume's neighbouring strips) are read either as they are when read (the warps
//! before it have finished) or as they were when the sweep began (the stalest a warp could see).
//! It checks the schedule and its indexing, not the CUDA code: keep it in step with the kernel.
//! (The kernel's 2D variant that reads precomputed step lengths takes the same minimum over
//! the same neighbours; the emulation computes them as the 3D variant does.)
//!
//! Also `prior_enclosure` and `prior_scale`, the enclosure scaling of a prior kept on the device.

use super::gpu_prior::segment_steps;
use super::prior::{
    enclosure_gain, enclosure_of_counts, geodesic_distance, step_length, SpatialPrior, StepLengths,
};
use crate::io::{Image, Seed, Seeds};

const STRIP: usize = crate::cuda::launch::seg_prior::STRIP as usize;
const INF: f32 = f32::INFINITY;

/// The two classes' distances.
#[derive(Clone, Debug, PartialEq)]
struct Dist {
    f: Vec<f32>,
    b: Vec<f32>,
}

/// How a warp sees the lines of other strips.
#[derive(Clone, Copy, Debug)]
enum Outer {
    /// As they are now.
    Current,
    /// As they were when the sweep began.
    Stale,
}

/// One `prior_strips` launch, its axis cut into segments of `seg` steps: returns whether a warp
/// lowered a distance.
#[allow(clippy::too_many_arguments)]
fn strip_sweep(
    image: &Image,
    len: &StepLengths,
    axis: usize,
    sign: i64,
    shift: usize,
    seg: usize,
    d: &mut Dist,
    outer: Outer,
) -> bool {
    let snapshot = matches!(outer, Outer::Stale).then(|| d.clone());
    let read_outer = |d: &Dist, v: usize| match &snapshot {
        Some(s) => (s.f[v], s.b[v]),
        None => (d.f[v], d.b[v]),
    };
    let dims = image.dims;
    let stride = [1, dims[0], dims[0] * dims[1]];
    let (a, b) = (usize::from(axis == 0), if axis == 2 { 1 } else { 2 });
    let (n_axis, na, nb) = (dims[axis], dims[a], dims[b]);
    let strips_a = (na + shift).div_ceil(STRIP);
    let offsets = len.conn.offsets();
    let (data, ch) = (&image.data, image.channels);
    let behind = -sign;
    let index =
        |ci: usize, la: usize, cb: usize| ci * stride[axis] + la * stride[a] + cb * stride[b];
    let coord = |i: usize| if sign > 0 { i } else { n_axis - 1 - i };
    // The squared lengths of the directions one step behind, by their offsets along b and a.
    let mut len2 = [[None; 3]; 3];
    for (k, o) in offsets.iter().enumerate() {
        if o[axis] as i64 == behind {
            len2[(o[b] + 1) as usize][(o[a] + 1) as usize] = Some(len.dist2[k]);
        }
    }
    let mut lowered = false;
    // A warp per strip and segment, in the order of their warp index.
    let nseg = n_axis.div_ceil(seg);
    for warp in 0..strips_a * nb * nseg {
        let (strip, part) = (warp / nseg, warp % nseg);
        let (i_begin, i_end) = (part * seg, n_axis.min(part * seg + seg));
        let a0 = (strip % strips_a) as i64 * STRIP as i64 - shift as i64;
        let cb = strip / strips_a;
        let line_ok = |la: i64| la >= 0 && la < na as i64;
        let mut prev_f = [INF; STRIP];
        let mut prev_b = [INF; STRIP];
        // A later segment starts from the values stored one step before it (another warp's).
        if i_begin > 0 {
            for lane in 0..STRIP {
                let ca = a0 + lane as i64;
                if line_ok(ca) {
                    let v = index(coord(i_begin - 1), ca as usize, cb);
                    (prev_f[lane], prev_b[lane]) = read_outer(d, v);
                }
            }
        }
        for i0 in (i_begin..i_end).step_by(STRIP) {
            let mut tf = [[INF; STRIP]; STRIP];
            let mut tb = [[INF; STRIP]; STRIP];
            for r in 0..STRIP {
                for lane in 0..STRIP {
                    let (line, step) = if axis == 0 { (r, lane) } else { (lane, r) };
                    let la = a0 + line as i64;
                    let i = i0 + step;
                    if line_ok(la) && i < i_end {
                        let v = index(coord(i), la as usize, cb);
                        tf[line][step] = d.f[v];
                        tb[line][step] = d.b[v];
                    }
                }
            }
            let mut hf = [[INF; STRIP]; 2];
            let mut hb = [[INF; STRIP]; 2];
            for side in 0..2 {
                let la = if side == 0 { a0 - 1 } else { a0 + STRIP as i64 };
                for lane in 0..STRIP {
                    if line_ok(la) && i0 + lane >= 1 && i0 + lane - 1 < n_axis {
                        let v = index(coord(i0 + lane - 1), la as usize, cb);
                        (hf[side][lane], hb[side][lane]) = read_outer(d, v);
                    }
                }
            }
            let mut dirty = false;
            for j in 0..STRIP.min(i_end - i0) {
                let i = i0 + j;
                // __shfl_up_sync / __shfl_down_sync by 1: the edge lanes get their own value.
                let up = |p: &[f32; STRIP], l: usize| if l > 0 { p[l - 1] } else { p[l] };
                let dn = |p: &[f32; STRIP], l: usize| if l + 1 < STRIP { p[l + 1] } else { p[l] };
                let mut next_f = [INF; STRIP];
                let mut next_b = [INF; STRIP];
                for lane in 0..STRIP {
                    let (up_f, up_b) = (up(&prev_f, lane), up(&prev_b, lane));
                    let (dn_f, dn_b) = (dn(&prev_f, lane), dn(&prev_b, lane));
                    let ca = a0 + lane as i64;
                    let live = line_ok(ca);
                    let (mut best_f, mut best_b) = (tf[lane][j], tb[lane][j]);
                    if live && i > 0 {
                        let v = index(coord(i), ca as usize, cb);
                        let (old_f, old_b) = (best_f, best_b);
                        for ob in -1..=1i64 {
                            for oa in -1..=1i64 {
                                let Some(l2) = len2[(ob + 1) as usize][(oa + 1) as usize] else {
                                    continue;
                                };
                                let (qa, qb) = (ca + oa, cb as i64 + ob);
                                if qa < 0 || qa >= na as i64 || qb < 0 || qb >= nb as i64 {
                                    continue;
                                }
                                let q = (v as i64 - sign * stride[axis] as i64
                                    + oa * stride[a] as i64
                                    + ob * stride[b] as i64)
                                    as usize;
                                let (from_f, from_b) = if ob != 0 {
                                    read_outer(d, q)
                                } else if oa == 0 {
                                    (prev_f[lane], prev_b[lane])
                                } else if oa < 0 {
                                    if lane > 0 {
                                        (up_f, up_b)
                                    } else {
                                        (hf[0][j], hb[0][j])
                                    }
                                } else if lane < STRIP - 1 {
                                    (dn_f, dn_b)
                                } else {
                                    (hf[1][j], hb[1][j])
                                };
                                if !(from_f < best_f || from_b < best_b) {
                                    continue;
                                }
                                let step = step_length(data, ch, v, q, l2, len.colour);
                                if from_f < best_f {
                                    best_f = best_f.min(from_f + step);
                                }
                                if from_b < best_b {
                                    best_b = best_b.min(from_b + step);
                                }
                            }
                        }
                        if best_f < old_f || best_b < old_b {
                            tf[lane][j] = best_f;
                            tb[lane][j] = best_b;
                            dirty = true;
                        }
                    }
                    next_f[lane] = if live { best_f } else { INF };
                    next_b[lane] = if live { best_b } else { INF };
                }
                (prev_f, prev_b) = (next_f, next_b);
            }
            if dirty {
                lowered = true;
                for r in 0..STRIP {
                    for lane in 0..STRIP {
                        let (line, step) = if axis == 0 { (r, lane) } else { (lane, r) };
                        let la = a0 + line as i64;
                        let i = i0 + step;
                        if line_ok(la) && i < i_end {
                            let v = index(coord(i), la as usize, cb);
                            d.f[v] = tf[line][step];
                            d.b[v] = tb[line][step];
                        }
                    }
                }
            }
        }
    }
    lowered
}

/// The device's pass loop (`device_prior`): passes of every axis in both directions, the strip
/// partition shifted by half a strip in odd passes, until a pass lowers nothing. Returns the
/// distances and the passes run, `None` past `limit` passes.
fn emulate(
    image: &Image,
    seeds: &Seeds,
    len: &StepLengths,
    outer: Outer,
    limit: usize,
) -> Option<(Dist, usize)> {
    let init = |class: Seed| -> Vec<f32> {
        seeds
            .labels
            .iter()
            .map(|&s| if s == class { 0.0 } else { INF })
            .collect()
    };
    let mut d = Dist {
        f: init(Seed::Foreground),
        b: init(Seed::Background),
    };
    let axes: &[usize] = if image.is_volume() {
        &[1, 0, 2]
    } else {
        &[1, 0]
    };
    for pass in 0..limit {
        let shift = if pass % 2 == 1 { STRIP / 2 } else { 0 };
        let mut lowered = false;
        for &axis in axes {
            let seg = segment_steps(image.dims, axis as u32) as usize;
            for sign in [1, -1] {
                lowered |= strip_sweep(image, len, axis, sign, shift, seg, &mut d, outer);
            }
        }
        if !lowered {
            return Some((d, pass + 1));
        }
    }
    None
}

/// `prior_enclosure`: a thread per pixel (grid-stride order; the sums are integers, so the
/// order of the warps' atomics does not matter), each pixel tested for the border by its own
/// coordinates rather than by rows as the host does. Returns `[halves, border]`.
fn enclosure_kernel(delta: &[f32], dims: [usize; 3]) -> [u64; 2] {
    let [w, h, d] = dims;
    let (mut halves, mut border) = (0u64, 0u64);
    for (v, &p) in delta.iter().enumerate() {
        let (x, y, z) = (v % w, (v / w) % h, v / (w * h));
        let edge =
            x == 0 || x + 1 == w || y == 0 || y + 1 == h || (d > 1 && (z == 0 || z + 1 == d));
        if !edge {
            continue;
        }
        halves += if p > 0.0 {
            2
        } else if p == 0.0 {
            1
        } else {
            0
        };
        border += 1;
    }
    [halves, border]
}

/// The device's enclosure scaling (`GpuEnergy::scale_prior_by_enclosure`): the kernel's
/// counts, the host's factor, then `prior_scale`'s product per pixel. Returns `E`.
fn scale_on_device(
    delta: &mut [f32],
    dims: [usize; 3],
    prior: &SpatialPrior,
    coverage: f64,
) -> Option<f64> {
    if !prior.scales() {
        return None;
    }
    let [halves, border] = enclosure_kernel(delta, dims);
    let e = enclosure_of_counts(halves, border)?;
    let gain = enclosure_gain(e, coverage, prior);
    delta.iter_mut().for_each(|p| *p *= gain);
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::super::prior::tests::maze;
    use super::*;
    use crate::rng::Rng;

    /// The CPU's distances (sweeps, then a queue).
    fn host(image: &Image, seeds: &Seeds, len: &StepLengths) -> Dist {
        Dist {
            f: geodesic_distance(image, seeds, Seed::Foreground, len),
            b: geodesic_distance(image, seeds, Seed::Background, len),
        }
    }

    /// Checks both ways of seeing other strips against the host, bit for bit; returns the
    /// passes of each.
    fn check(what: &str, image: &Image, seeds: &Seeds, contrast: f64) -> [usize; 2] {
        let len = StepLengths::new(image, contrast);
        let want = host(image, seeds, &len);
        [Outer::Current, Outer::Stale].map(|outer| {
            let (got, passes) = emulate(image, seeds, &len, outer, 10_000)
                .unwrap_or_else(|| panic!("{what} {outer:?}: no convergence"));
            for p in 0..want.f.len() {
                assert_eq!(
                    (got.f[p].to_bits(), got.b[p].to_bits()),
                    (want.f[p].to_bits(), want.b[p].to_bits()),
                    "{what} {outer:?}: pixel {p}: device {} {}, host {} {}",
                    got.f[p],
                    got.b[p],
                    want.f[p],
                    want.b[p]
                );
            }
            passes
        })
    }

    fn random_image(dims: [usize; 3], ch: usize, rng: &mut Rng, levels: Option<f32>) -> Image {
        let n = dims.iter().product::<usize>() * ch;
        let data = (0..n)
            .map(|_| {
                let u = rng.unit_f64() as f32;
                match levels {
                    Some(l) => (u * l).round(),
                    None => u * 3.7,
                }
            })
            .collect();
        Image::new(dims, ch, data)
    }

    fn random_seeds(dims: [usize; 3], rng: &mut Rng, count: usize) -> Seeds {
        let mut s = Seeds::unknown(dims);
        let n = s.labels.len();
        for i in 0..count {
            let p = rng.below(n as u64) as usize;
            s.labels[p] = if i % 2 == 0 {
                Seed::Foreground
            } else {
                Seed::Background
            };
        }
        s.labels[0] = Seed::Foreground;
        s.labels[n - 1] = Seed::Background;
        s
    }

    #[test]
    fn random_images_reach_the_hosts_bits() {
        let mut rng = Rng::new(22);
        for (dims, ch, levels) in [
            ([37, 23, 1], 1, Some(255.0)),
            ([64, 64, 1], 3, Some(255.0)),
            ([65, 33, 1], 3, None),
            ([1, 70, 1], 1, Some(255.0)),
            ([70, 1, 1], 3, None),
            ([1, 1, 1], 1, Some(9.0)),
            ([2, 2, 1], 1, Some(9.0)),
            ([13, 11, 7], 1, Some(255.0)),
            ([33, 9, 5], 3, None),
            ([1, 40, 3], 1, Some(255.0)),
            ([5, 1, 40], 1, None),
        ] {
            let img = random_image(dims, ch, &mut rng, levels);
            let seeds = random_seeds(dims, &mut rng, 3 + dims[0] % 5);
            for contrast in [0.0, 3.0, 40.0] {
                check(
                    &format!("{dims:?}x{ch} κ {contrast}"),
                    &img,
                    &seeds,
                    contrast,
                );
            }
        }
    }

    /// Mazes (the paths turning at every cell): many passes, all of them needed; the long ones
    /// have axes the device cuts into segments (a path crosses a segment's start from the
    /// value another warp stored there, or failed to yet).
    #[test]
    fn mazes_reach_the_hosts_bits() {
        let mut notes = crate::test_notes::Notes::new("prior_maze_passes");
        for (cells, seed, segmented) in [
            ([20, 17], 7, false),
            ([150, 12], 8, true),
            ([9, 110], 9, true),
        ] {
            let (img, seeds) = maze(cells, seed);
            let [w, h, _] = img.dims;
            let cut =
                (0..2).any(|axis| img.dims[axis] > segment_steps(img.dims, axis as u32) as usize);
            assert_eq!(cut, segmented, "maze {w}x{h}: segments");
            let passes = check(&format!("maze {w}x{h}"), &img, &seeds, 500.0);
            notes.line(format!("maze {w}x{h}: passes (current, stale) {passes:?}"));
        }
        notes.save();
    }

    /// Random images whose axes the device cuts into segments (2D and a volume's z).
    #[test]
    fn segmented_sweeps_reach_the_hosts_bits() {
        let mut rng = Rng::new(26);
        for (dims, ch, levels) in [
            ([300, 40, 1], 3, Some(255.0)),
            ([20, 420, 1], 1, None),
            ([5, 3, 300], 1, Some(255.0)),
        ] {
            let cut = (0..3).any(|axis| dims[axis] > segment_steps(dims, axis as u32) as usize);
            assert!(cut, "{dims:?}: no axis cut into segments");
            let img = random_image(dims, ch, &mut rng, levels);
            let seeds = random_seeds(dims, &mut rng, 4);
            for contrast in [0.0, 40.0] {
                check(
                    &format!("{dims:?}x{ch} κ {contrast}"),
                    &img,
                    &seeds,
                    contrast,
                );
            }
        }
    }

    /// The device's enclosure counts and scaled prior against the host's, on shapes whose
    /// border is odd (one row, one column, two of either, volumes of one and two slices) and
    /// values that test the rule's edges (ties, −0, NaN, infinities).
    #[test]
    fn enclosure_matches_the_host() {
        use super::super::prior::{enclosure, enclosure_counts, scale_by_enclosure};
        let mut rng = Rng::new(25);
        let special = [0.0f32, -0.0, f32::NAN, INF, -INF, 1e-40, -1e-40, 3.5, -2.25];
        for dims in [
            [1, 1, 1],
            [1, 7, 1],
            [7, 1, 1],
            [2, 5, 1],
            [5, 2, 1],
            [3, 3, 1],
            [40, 33, 1],
            [4, 5, 2],
            [3, 3, 3],
            [6, 7, 5],
            [1, 1, 5],
            [6, 1, 4],
            [1, 6, 4],
        ] {
            let n: usize = dims.iter().product();
            for trial in 0..20 {
                let delta: Vec<f32> = (0..n)
                    .map(|_| match rng.below(3) {
                        0 => special[rng.below(special.len() as u64) as usize],
                        // Mostly one sign in some trials, so that E spans [0, 1].
                        _ => (rng.unit_f64() as f32 - 0.5 + (trial % 3) as f32 * 0.4 - 0.4) * 9.0,
                    })
                    .collect();
                let counts = enclosure_kernel(&delta, dims);
                assert_eq!(counts, enclosure_counts(&delta, dims), "{dims:?} {trial}");
                assert_eq!(
                    enclosure_of_counts(counts[0], counts[1]).map(f64::to_bits),
                    enclosure(&delta, dims).map(f64::to_bits),
                    "{dims:?} {trial}"
                );
                // The coverage factor with it (c₀ 0: off; 0.03 below and above c).
                for (k, c0) in [(0.0, 0.0), (0.5, 0.0), (2.5, 0.03), (8.0, 0.0), (0.0, 0.03)] {
                    let prior = SpatialPrior {
                        weight: 10.0,
                        contrast: 3.0,
                        softness: 0.15,
                        explained: 1.0,
                        enclosure: k,
                        coverage: c0,
                    };
                    let c = [0.01, 0.07][trial % 2];
                    let (mut host, mut device) = (delta.clone(), delta.clone());
                    let e_host = scale_by_enclosure(&mut host, dims, &prior, c);
                    let e_device = scale_on_device(&mut device, dims, &prior, c);
                    assert_eq!(e_host.map(f64::to_bits), e_device.map(f64::to_bits));
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&host), bits(&device), "{dims:?} {trial} k {k} c0 {c0}");
                }
            }
        }
    }

    /// Pass counts on a smooth photo-like image at a larger size (for the docs and
    /// `MAX_DEVICE_PASSES`): `cargo test --release --lib prior_emulation -- --ignored`, figures in
    /// `target/release/test-notes/prior_smooth_passes.txt`.
    #[test]
    #[ignore]
    fn passes_on_a_smooth_large_image() {
        let mut rng = Rng::new(3);
        let (w, h) = (1200, 800);
        let data = (0..w * h * 3)
            .map(|i| {
                let p = i / 3;
                let (x, y) = ((p % w) as f32, (p / w) as f32);
                (128.0 + 60.0 * (x / 97.0).sin() * (y / 61.0).cos() + 20.0 * rng.unit_f64() as f32)
                    .round()
            })
            .collect();
        let img = Image::new([w, h, 1], 3, data);
        let seeds = random_seeds(img.dims, &mut rng, 12);
        let passes = check("smooth", &img, &seeds, 3.0);
        let mut notes = crate::test_notes::Notes::new("prior_smooth_passes");
        notes.line(format!(
            "smooth {w}x{h}: passes (current, stale) {passes:?}"
        ));
        notes.save();
    }
}

/// Pass counts of whole-grid sweep schedules (each sweep exact, in wavefront order), to choose
/// the device's: `cargo test --release --lib schedule_passes -- --ignored`, figures in
/// `target/release/test-notes/schedule_passes.txt`.
#[cfg(test)]
mod schedules {
    use super::*;

    /// One sweep over a 2D grid whose cone is `from` (offsets of the neighbours a pixel is
    /// relaxed from), in the order of `key` (every `from` neighbour has a smaller key).
    fn cone_sweep(
        image: &Image,
        len: &StepLengths,
        d: &mut [f32],
        from: &[[i32; 2]],
        hop: bool,
    ) -> bool {
        let [w, h, _] = image.dims;
        let key = |x: i64, y: i64| -> i64 {
            // A direction all `from` offsets point against.
            let sx: i64 = from.iter().map(|o| -o[0] as i64).sum();
            let sy: i64 = from.iter().map(|o| -o[1] as i64).sum();
            sx.signum() * x + sy.signum() * y
        };
        let mut order: Vec<(i64, usize)> = (0..w * h)
            .map(|p| (key((p % w) as i64, (p / w) as i64), p))
            .collect();
        order.sort_unstable();
        let offsets = len.conn.offsets();
        let mut changed = false;
        // With `hop`, after each wavefront (a row or column of an axis cone) every pixel is
        // relaxed once more from its two neighbours in the wavefront, as they were before.
        let across: [[i32; 2]; 2] = if from.iter().all(|o| o[1] == from[0][1]) {
            [[-1, 0], [1, 0]]
        } else {
            [[0, -1], [0, 1]]
        };
        let mut wave: Vec<usize> = Vec::new();
        let flush = |d: &mut [f32], wave: &mut Vec<usize>, changed: &mut bool| {
            if !hop {
                wave.clear();
                return;
            }
            let before: Vec<f32> = wave.iter().map(|&v| d[v]).collect();
            let at: std::collections::HashMap<usize, f32> =
                wave.iter().copied().zip(before).collect();
            for &v in wave.iter() {
                let (x, y) = ((v % w) as i64, (v / w) as i64);
                let mut best = d[v];
                for o in &across {
                    let (qx, qy) = (x + o[0] as i64, y + o[1] as i64);
                    if qx < 0 || qy < 0 || qx >= w as i64 || qy >= h as i64 {
                        continue;
                    }
                    let q = (qx + qy * w as i64) as usize;
                    let k = offsets
                        .iter()
                        .position(|t| t[0] == o[0] && t[1] == o[1])
                        .unwrap();
                    let from = at[&q];
                    if from < best {
                        let s = step_length(
                            &image.data,
                            image.channels,
                            v,
                            q,
                            len.dist2[k],
                            len.colour,
                        );
                        best = best.min(from + s);
                    }
                }
                if best < d[v] {
                    d[v] = best;
                    *changed = true;
                }
            }
            wave.clear();
        };
        let mut last_key = None;
        for &(key, v) in &order {
            if last_key != Some(key) {
                flush(d, &mut wave, &mut changed);
                last_key = Some(key);
            }
            wave.push(v);
            let (x, y) = ((v % w) as i64, (v / w) as i64);
            let mut best = d[v];
            for o in from {
                let (qx, qy) = (x + o[0] as i64, y + o[1] as i64);
                if qx < 0 || qy < 0 || qx >= w as i64 || qy >= h as i64 {
                    continue;
                }
                let k = offsets
                    .iter()
                    .position(|t| t[0] == o[0] && t[1] == o[1])
                    .unwrap();
                let q = (qx + qy * w as i64) as usize;
                if d[q] < best {
                    let s =
                        step_length(&image.data, image.channels, v, q, len.dist2[k], len.colour);
                    best = best.min(d[q] + s);
                }
            }
            if best < d[v] {
                d[v] = best;
                changed = true;
            }
        }
        flush(d, &mut wave, &mut changed);
        changed
    }

    fn passes(
        image: &Image,
        seeds: &Seeds,
        len: &StepLengths,
        cones: &[Vec<[i32; 2]>],
        hop: bool,
    ) -> usize {
        let mut d: Vec<f32> = seeds
            .labels
            .iter()
            .map(|&s| if s == Seed::Foreground { 0.0 } else { INF })
            .collect();
        for pass in 1..2000 {
            let mut changed = false;
            for c in cones {
                changed |= cone_sweep(image, len, &mut d, c, hop && c.len() == 3 && is_axis(c));
            }
            if !changed {
                let want = geodesic_distance(image, seeds, Seed::Foreground, len);
                assert!(d.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
                return pass;
            }
        }
        usize::MAX
    }

    /// Whether a cone is an axis sweep's (its three neighbours one step behind along an axis).
    fn is_axis(c: &[[i32; 2]]) -> bool {
        c.iter().all(|o| o[1] == c[0][1]) || c.iter().all(|o| o[0] == c[0][0])
    }

    fn upscale(image: &Image, seeds: &Seeds, k: usize) -> (Image, Seeds) {
        let [w, h, _] = image.dims;
        let ch = image.channels;
        let (nw, nh) = (w * k, h * k);
        let mut data = Vec::with_capacity(nw * nh * ch);
        let mut s = Seeds::unknown([nw, nh, 1]);
        for y in 0..nh {
            for x in 0..nw {
                // Bilinear, rounded to integers as a decoder would.
                let fx = ((x as f32 + 0.5) / k as f32 - 0.5).clamp(0.0, (w - 1) as f32);
                let fy = ((y as f32 + 0.5) / k as f32 - 0.5).clamp(0.0, (h - 1) as f32);
                let (x0, y0) = (fx as usize, fy as usize);
                let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
                let (ax, ay) = (fx - x0 as f32, fy - y0 as f32);
                for c in 0..ch {
                    let p = |x: usize, y: usize| image.data[(x + y * w) * ch + c];
                    let top = p(x0, y0) * (1.0 - ax) + p(x1, y0) * ax;
                    let bot = p(x0, y1) * (1.0 - ax) + p(x1, y1) * ax;
                    data.push((top * (1.0 - ay) + bot * ay).round());
                }
                s.labels[x + y * nw] = seeds.labels[x / k + (y / k) * w];
            }
        }
        (Image::new([nw, nh, 1], ch, data), s)
    }

    #[test]
    #[ignore]
    fn schedule_passes() {
        // The shared data beside the checkout, or where SEGCUT_SHARED_DATA says (as the tests').
        let data = std::env::var_os("SEGCUT_SHARED_DATA")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
            });
        let dir = data.join("segmentation/grabcut-bsds-dev");
        let axis: Vec<Vec<[i32; 2]>> = vec![
            vec![[-1, -1], [0, -1], [1, -1]],
            vec![[-1, 1], [0, 1], [1, 1]],
            vec![[-1, -1], [-1, 0], [-1, 1]],
            vec![[1, -1], [1, 0], [1, 1]],
        ];
        let diag: Vec<Vec<[i32; 2]>> = vec![
            vec![[-1, 0], [0, -1], [-1, -1]],
            vec![[1, 0], [0, 1], [1, 1]],
            vec![[1, 0], [0, -1], [1, -1]],
            vec![[-1, 0], [0, 1], [-1, 1]],
        ];
        let both: Vec<Vec<[i32; 2]>> = axis.iter().chain(&diag).cloned().collect();
        let mut notes = crate::test_notes::Notes::new("schedule_passes");
        for id in ["124084", "153077", "181079"] {
            let img = crate::io::load_image(&dir.join(format!("images/{id}.jpg"))).unwrap();
            let seeds = crate::io::load_seeds(
                &dir.join(format!("scribbles-1/{id}-anno.png")),
                img.dims,
                &Default::default(),
            )
            .unwrap();
            // Upscaled 3× too with SCHEDULE_X3 set (minutes).
            let scales: &[usize] = match std::env::var_os("SCHEDULE_X3") {
                Some(_) => &[1, 3],
                None => &[1],
            };
            for &k in scales {
                let (img, seeds) = upscale(&img, &seeds, k);
                let len = StepLengths::new(&img, 3.0);
                let r = [&axis, &diag, &both].map(|c| passes(&img, &seeds, &len, c, false));
                let hop = passes(&img, &seeds, &len, &axis, true);
                notes.line(format!(
                    "{id} x{k}: passes axis {} diagonal {} both {} axis with a hop {hop}",
                    r[0], r[1], r[2]
                ));
            }
        }
        notes.save();
    }
}
