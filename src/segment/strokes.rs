//! Strokes that contradict the others: a short hard-seed stroke whose colours the opposite
//! class's strokes explain and the other strokes of its own class do not (a hand that slipped
//! across the object's edge) is dropped before anything else sees the seeds.
//!
//! ```text
//! C             a stroke: a face-connected component of hard foreground (or background) seeds
//! judged        C with |C| < ½·|C'| for some other stroke C' of its class (a slip is short),
//!               when each class has at most 16 strokes
//! M_own(C)      C's class's model fitted on the class's seeds outside C (hard and soft)
//! M_opp         the opposite class's model fitted on all its seeds (hard and soft)
//! τ_M           the cost up to which M explains a colour: the 95 % quantile of its costs over
//!               its own samples (prior::explained_threshold, as the prior's explained colours)
//! s(C)          = share of C's pixels with D_opp ≤ τ_opp − share with D_own(C) ≤ τ_own(C)
//! round         score every judged stroke still labelled; drop the one of highest s(C) if
//!               s(C) > ρ and the class's dropped pixels stay below half of its hard seeds;
//!               repeat until none is dropped, at most 4 per image (each round refits the
//!               models without the strokes dropped so far)
//! ```
//!
//! `ρ` is [`SegmentOptions::stroke_check`](super::SegmentOptions::stroke_check) (1: off, as
//! `s(C) ≤ 1`). Samples: every `⌈count / 12 000⌉`-th pixel in pixel order, as every fit takes
//! them. The dropped strokes become unlabelled pixels: no constraint, no model samples, no part
//! in the prior's distances or the mask's clean-up. The models are fitted in the models' colour
//! space on the stroke pixels only, with the variance floor and histogram range taken from all
//! the stroke pixels (the rule of [`ModelParams::from_image`] applied to them), so the judgement
//! is a function of the image, the seeds and the options alone, computed on the host for every
//! device: the GPU build is handed the same seeds as the CPU build.

use rayon::prelude::*;

use super::color::ColorSpace;
use super::color::WorkSpace;
use super::model::{ColorModel, Model, ModelKind, ModelParams};
use super::prior::explained_threshold;
use crate::error::Result;
use crate::io::{Image, Seed, Seeds};

/// Most samples a stroke's score and a model's fit take (every k-th pixel in raster order).
const MAX_SAMPLES: usize = 12_000;
/// Most strokes of a class an image's seeds may have to be judged: each round fits a model per
/// stroke, so a seed mask of many specks (not strokes) is left as it is.
pub const MAX_STROKES: usize = 16;
/// Most strokes dropped per image: the check is for a few slips, and each drop costs a round.
pub const MAX_DROPS: usize = 4;
/// A stroke is judged only if it has fewer pixels than this share of another stroke of its
/// class.
pub const SLIP: f64 = 0.5;

/// One judged stroke.
#[derive(Clone, Debug, PartialEq)]
pub struct StrokeScore {
    /// Hard foreground (true) or background stroke.
    pub foreground: bool,
    /// Its pixels.
    pub pixels: usize,
    /// Its first pixel in pixel order.
    pub first: usize,
    /// Share of its pixels the own model (of the other strokes) explains: cost at most the
    /// [`explained_threshold`] of that model over its own samples.
    pub own_explained: f64,
    /// Share of its pixels the opposite class's model explains.
    pub opposite_explained: f64,
    /// `s(C)` = `opposite_explained − own_explained`.
    pub score: f64,
    /// Whether the rule drops it at the given threshold.
    pub dropped: bool,
}

/// Labels the face-connected components of the pixels where `is_in` holds; returns the label
/// per pixel (`u32::MAX` outside) and the number of components.
fn components(dims: [usize; 3], is_in: impl Fn(usize) -> bool) -> (Vec<u32>, usize) {
    let [w, h, d] = dims;
    let n = w * h * d;
    let mut label = vec![u32::MAX; n];
    let mut count = 0u32;
    let mut stack = Vec::new();
    for start in 0..n {
        if label[start] != u32::MAX || !is_in(start) {
            continue;
        }
        label[start] = count;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
            let mut visit = |j: usize| {
                if label[j] == u32::MAX && is_in(j) {
                    label[j] = count;
                    stack.push(j);
                }
            };
            if x > 0 {
                visit(i - 1);
            }
            if x + 1 < w {
                visit(i + 1);
            }
            if y > 0 {
                visit(i - w);
            }
            if y + 1 < h {
                visit(i + w);
            }
            if z > 0 {
                visit(i - w * h);
            }
            if z + 1 < d {
                visit(i + w * h);
            }
        }
        count += 1;
    }
    (label, count as usize)
}

/// Every `⌈count / MAX_SAMPLES⌉`-th of `pixels` (in their order), in the working space.
fn samples(image: &Image, space: WorkSpace, pixels: &[usize]) -> Vec<f32> {
    let step = pixels.len().div_ceil(MAX_SAMPLES).max(1);
    let mut out = Vec::with_capacity(pixels.len().div_ceil(step) * image.channels);
    for &i in pixels.iter().step_by(step) {
        space.push_pixel(image, i, &mut out);
    }
    out
}

fn is_class(l: Seed, foreground: bool) -> bool {
    match foreground {
        true => matches!(l, Seed::Foreground | Seed::ProbablyForeground),
        false => matches!(l, Seed::Background | Seed::ProbablyBackground),
    }
}

/// One round's scores of the strokes still labelled in `l` (components `comps`).
fn score_round(
    image: &Image,
    work: WorkSpace,
    params: &ModelParams,
    kind: ModelKind,
    l: &[Seed],
    comps: &[Stroke],
) -> Result<Vec<Option<StrokeScore>>> {
    let mut out = vec![None; comps.len()];
    for foreground in [true, false] {
        let class: Vec<usize> = (0..comps.len())
            .filter(|&c| comps[c].foreground == foreground)
            .collect();
        // Only a stroke shorter than half of another of its class is judged: a slip across the
        // edge is short, and a long stroke is what the user meant.
        let live: Vec<usize> = class
            .iter()
            .copied()
            .filter(|&c| {
                let n = comps[c].pixels.len();
                l[comps[c].pixels[0]] != Seed::Unknown
                    && class
                        .iter()
                        .any(|&o| o != c && (n as f64) < SLIP * comps[o].pixels.len() as f64)
            })
            .collect();
        if live.is_empty() {
            continue;
        }
        let opposite: Vec<usize> = (0..l.len())
            .filter(|&i| is_class(l[i], !foreground))
            .collect();
        let own_class: Vec<usize> = (0..l.len())
            .filter(|&i| is_class(l[i], foreground))
            .collect();
        let opp_x = samples(image, work, &opposite);
        let opp = Model::fit(kind, &opp_x, params, "stroke check")?;
        let tau_opp = explained_threshold(&opp, &opp_x, image.channels).unwrap_or(f64::INFINITY);
        let scored: Vec<Result<StrokeScore>> = live
            .par_iter()
            .map(|&c| {
                let mine = &comps[c].pixels;
                let (mut rest, mut j) = (Vec::with_capacity(own_class.len()), 0);
                // The class's seeds outside this stroke, in pixel order (both lists are sorted).
                for &i in &own_class {
                    while j < mine.len() && mine[j] < i {
                        j += 1;
                    }
                    if mine.get(j) != Some(&i) {
                        rest.push(i);
                    }
                }
                let own_x = samples(image, work, &rest);
                let own = Model::fit(kind, &own_x, params, "stroke check")?;
                let tau_own =
                    explained_threshold(&own, &own_x, image.channels).unwrap_or(f64::INFINITY);
                let x = samples(image, work, mine);
                let (mut own_ex, mut opp_ex, mut k) = (0usize, 0usize, 0usize);
                for px in x.chunks_exact(image.channels) {
                    own_ex += (own.neg_log_likelihood(px) <= tau_own) as usize;
                    opp_ex += (opp.neg_log_likelihood(px) <= tau_opp) as usize;
                    k += 1;
                }
                let k = k.max(1) as f64;
                Ok(StrokeScore {
                    foreground,
                    pixels: mine.len(),
                    first: mine[0],
                    own_explained: own_ex as f64 / k,
                    opposite_explained: opp_ex as f64 / k,
                    score: (opp_ex as f64 - own_ex as f64) / k,
                    dropped: false,
                })
            })
            .collect();
        for (&c, r) in live.iter().zip(scored) {
            out[c] = Some(r?);
        }
    }
    Ok(out)
}

/// A hard stroke: its class and its pixels in pixel order.
#[derive(Clone, Debug)]
struct Stroke {
    foreground: bool,
    pixels: Vec<usize>,
}

/// Judges the hard strokes ([module docs](self)) at threshold `rho` (1: none dropped): the
/// scores of the round that dropped each dropped stroke and the last round's for the others
/// (classes of one live stroke are not scored), in the order of the strokes' first pixels per
/// class, foreground first. Images with more than [`MAX_STROKES`] strokes of a class are not
/// judged (empty).
pub fn judge_strokes(
    image: &Image,
    seeds: &Seeds,
    space: ColorSpace,
    kind: ModelKind,
    rho: f64,
) -> Result<Vec<StrokeScore>> {
    let (lo, hi) = image
        .data
        .par_chunks(1 << 16)
        .map(|c| {
            c.iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                })
        })
        .reduce(
            || (f32::INFINITY, f32::NEG_INFINITY),
            |a, b| (a.0.min(b.0), a.1.max(b.1)),
        );
    let work = WorkSpace::of(image.channels, lo, hi, space);
    let mut comps = Vec::new();
    let mut hard_total = [0usize; 2];
    for foreground in [true, false] {
        let hard = if foreground {
            Seed::Foreground
        } else {
            Seed::Background
        };
        let (label, count) = components(seeds.dims, |i| seeds.labels[i] == hard);
        if count > MAX_STROKES {
            return Ok(Vec::new());
        }
        let mut members = vec![Vec::new(); count];
        for (i, &c) in label.iter().enumerate() {
            if c != u32::MAX {
                members[c as usize].push(i);
            }
        }
        hard_total[foreground as usize] = members.iter().map(Vec::len).sum();
        comps.extend(
            members
                .into_iter()
                .map(|pixels| Stroke { foreground, pixels }),
        );
    }
    // The stroke pixels' values, for the models' parameters (variance floor, histogram range).
    let l0 = &seeds.labels;
    let stroke_pixels: Vec<usize> = (0..l0.len()).filter(|&i| l0[i] != Seed::Unknown).collect();
    let all = samples(image, work, &stroke_pixels);
    let params = ModelParams::from_image(&all, image.channels);
    let mut l = seeds.labels.clone();
    let mut dropped_px = [0usize; 2];
    let mut kept: Vec<Option<StrokeScore>> = vec![None; comps.len()];
    for drops in 0..=MAX_DROPS {
        let round = score_round(image, work, &params, kind, &l, &comps)?;
        // The stroke the others contradict most, if above `rho` and the class keeps a majority.
        let worst = round
            .iter()
            .enumerate()
            .filter_map(|(c, s)| s.as_ref().map(|s| (c, s)))
            .filter(|(c, s)| {
                let f = comps[*c].foreground as usize;
                s.score > rho && 2 * (dropped_px[f] + s.pixels) < hard_total[f]
            })
            .max_by(|a, b| a.1.score.total_cmp(&b.1.score).then(b.0.cmp(&a.0)))
            .filter(|_| drops < MAX_DROPS);
        let Some((c, _)) = worst else {
            for (k, s) in kept.iter_mut().zip(round) {
                if k.as_ref().is_none_or(|k| !k.dropped) {
                    *k = s;
                }
            }
            break;
        };
        let mut s = round[c].clone().expect("scored");
        s.dropped = true;
        dropped_px[s.foreground as usize] += s.pixels;
        for &i in &comps[c].pixels {
            l[i] = Seed::Unknown;
        }
        kept[c] = Some(s);
    }
    Ok(kept.into_iter().flatten().collect())
}

/// The seeds without the strokes [`judge_strokes`] drops at `rho`, or `None` when it drops none
/// (or `rho` ≥ 1: off).
pub fn check_strokes(
    image: &Image,
    seeds: &Seeds,
    space: ColorSpace,
    kind: ModelKind,
    rho: f64,
) -> Result<Option<Seeds>> {
    if rho.is_nan() || rho >= 1.0 {
        return Ok(None);
    }
    let scores = judge_strokes(image, seeds, space, kind, rho)?;
    let drop: Vec<(bool, usize)> = scores
        .iter()
        .filter(|s| s.dropped)
        .map(|s| (s.foreground, s.first))
        .collect();
    if drop.is_empty() {
        return Ok(None);
    }
    let mut out = seeds.clone();
    for (foreground, first) in drop {
        let hard = if foreground {
            Seed::Foreground
        } else {
            Seed::Background
        };
        // The component through `first`, again (face-connected), unlabelled.
        let mut stack = vec![first];
        out.labels[first] = Seed::Unknown;
        let [w, h, d] = seeds.dims;
        while let Some(i) = stack.pop() {
            let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
            let near = [
                (x > 0).then(|| i - 1),
                (x + 1 < w).then(|| i + 1),
                (y > 0).then(|| i - w),
                (y + 1 < h).then(|| i + w),
                (z > 0).then(|| i - w * h),
                (z + 1 < d).then(|| i + w * h),
            ];
            for j in near.into_iter().flatten() {
                if out.labels[j] == hard {
                    out.labels[j] = Seed::Unknown;
                    stack.push(j);
                }
            }
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: usize = 60;
    const H: usize = 40;

    /// Left half reddish (the object), right half bluish, with a little deterministic texture.
    fn two_halves() -> Image {
        let mut data = Vec::with_capacity(W * H * 3);
        for y in 0..H {
            for x in 0..W {
                let t = ((x * 7 + y * 13) % 11) as f32;
                if x < W / 2 {
                    data.extend_from_slice(&[200.0 + t, 40.0 + t, 30.0]);
                } else {
                    data.extend_from_slice(&[30.0, 50.0 + t, 190.0 + t]);
                }
            }
        }
        Image::new([W, H, 1], 3, data)
    }

    /// A horizontal stroke of `label` on row `y`, columns `x0..x1`.
    fn stroke(seeds: &mut Seeds, label: Seed, y: usize, x0: usize, x1: usize) {
        for x in x0..x1 {
            seeds.labels[y * W + x] = label;
        }
    }

    /// Two long strokes per class where they belong, and a short foreground one on the
    /// background (the slip).
    fn with_slip() -> Seeds {
        let mut s = Seeds::unknown([W, H, 1]);
        stroke(&mut s, Seed::Foreground, 5, 2, 26);
        stroke(&mut s, Seed::Foreground, 30, 2, 26);
        stroke(&mut s, Seed::Background, 5, 34, 58);
        stroke(&mut s, Seed::Background, 30, 34, 58);
        stroke(&mut s, Seed::Foreground, 18, 40, 46);
        s
    }

    fn check(seeds: &Seeds, rho: f64) -> Option<Seeds> {
        let gmm = ModelKind::Gmm { components: 5 };
        check_strokes(&two_halves(), seeds, ColorSpace::Lab, gmm, rho).unwrap()
    }

    #[test]
    fn a_short_stroke_of_the_other_class_colours_is_dropped() {
        let seeds = with_slip();
        let out = check(&seeds, 0.5).expect("the slip is dropped");
        for (i, (&a, &b)) in seeds.labels.iter().zip(&out.labels).enumerate() {
            let slip = i / W == 18 && (40..46).contains(&(i % W));
            assert_eq!(b, if slip { Seed::Unknown } else { a }, "pixel {i}");
        }
        let scores = judge_strokes(
            &two_halves(),
            &seeds,
            ColorSpace::Lab,
            ModelKind::Gmm { components: 5 },
            0.5,
        )
        .unwrap();
        let slip: Vec<_> = scores.iter().filter(|s| s.dropped).collect();
        assert_eq!(slip.len(), 1);
        assert_eq!((slip[0].first, slip[0].pixels), (18 * W + 40, 6));
        assert!(slip[0].score > 0.5, "{:?}", slip[0]);
    }

    #[test]
    fn off_long_and_consistent_strokes_are_kept() {
        // Off.
        assert_eq!(check(&with_slip(), 1.0), None);
        // The same slip drawn as long as the others is what the user meant: not judged.
        let mut long = with_slip();
        stroke(&mut long, Seed::Foreground, 18, 34, 58);
        assert_eq!(check(&long, 0.0), None);
        // Strokes that agree: nothing dropped at any threshold.
        let mut fine = with_slip();
        stroke(&mut fine, Seed::Unknown, 18, 40, 46);
        stroke(&mut fine, Seed::Foreground, 18, 10, 16);
        assert_eq!(check(&fine, 0.0), None);
    }

    #[test]
    fn a_class_keeps_its_majority_and_specks_are_not_judged() {
        // One long foreground stroke (12 pixels) and three short ones (5) on the background:
        // dropping all three would leave the class's 12 of 27 pixels, so the drops stop at two.
        let mut s = Seeds::unknown([W, H, 1]);
        stroke(&mut s, Seed::Foreground, 5, 2, 14);
        stroke(&mut s, Seed::Background, 5, 34, 58);
        stroke(&mut s, Seed::Background, 30, 34, 58);
        for y in [12, 20, 28] {
            stroke(&mut s, Seed::Foreground, y, 40, 45);
        }
        let out = check(&s, 0.0).expect("two dropped");
        let fg = |s: &Seeds, x0: usize, x1: usize| {
            (0..W * H)
                .filter(|&i| (x0..x1).contains(&(i % W)) && s.labels[i] == Seed::Foreground)
                .count()
        };
        assert_eq!((fg(&out, 0, 30), fg(&out, 30, W)), (12, 5));
        // Six slips, together a minority: the check stops at MAX_DROPS.
        let mut six = with_slip();
        stroke(&mut six, Seed::Unknown, 18, 40, 46);
        for y in [10, 14, 18, 22, 26, 34] {
            stroke(&mut six, Seed::Foreground, y, 40, 43);
        }
        let out = check(&six, 0.0).expect("some dropped");
        assert_eq!(fg(&out, 30, W), 3 * (6 - MAX_DROPS));
        assert_eq!(fg(&out, 0, 30), 48);
        // More strokes than MAX_STROKES: not judged.
        let mut specks = with_slip();
        for k in 0..=MAX_STROKES {
            specks.labels[(10 + 2 * (k / 20)) * W + 2 * (k % 20) + 1] = Seed::Foreground;
        }
        assert_eq!(check(&specks, 0.0), None);
    }
}
