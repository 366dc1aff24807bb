//! Times the joint weighted median filter (`segcut::stereo::median`) on the BK labelling of each
//! dev scene, beside the f32 filter it replaced (2026-11-28; kept here verbatim as the reference),
//! and counts the pixels where the two differ and each one's bad-pixel rates (docs/stereo.md,
//! "Post-processing").
//!
//! ```text
//! nice cargo run --release --example median_bench -- ../shared/data/stereo [RUNS]
//! ```

use segcut::io::Image;
use segcut::maxflow::{SolveOptions, SolverKind};
use segcut::stereo::eval::{load_scene, score};
use segcut::stereo::median::{weighted_median, WeightedMedian};
use segcut::stereo::{stereo, StereoOptions, DEFAULT_MEDIAN};
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).map_or("../shared/data/stereo", |s| s.as_str()));
    let runs: usize = args.get(2).map_or(Ok(9), |s| s.parse())?;
    let f = DEFAULT_MEDIAN;
    println!(
        "filter radius {} σ colour {} σ space {}; {runs} runs each, median; {} rayon threads",
        f.radius,
        f.sigma_colour,
        f.sigma_space,
        rayon::current_num_threads()
    );
    // The weight tables alone: the filter of one RGB pixel, first building them, then reusing
    // them.
    let one = Image::new([1, 1, 1], 3, vec![9.0, 99.0, 199.0]);
    let mut t: Vec<f64> = (0..runs + 1)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(weighted_median(&[0], &one, &f).unwrap());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let first = t.remove(0);
    t.sort_by(f64::total_cmp);
    println!(
        "one RGB pixel filtered: {first:.3} ms building the weight tables, {:.3} ms reusing them",
        t[t.len() / 2]
    );
    for name in ["tsukuba", "venus"] {
        let s = load_scene(&dir.join(name), None)?;
        let o = StereoOptions {
            num_disparities: s.num_disparities,
            median: WeightedMedian::OFF,
            expansion: segcut::stereo::ExpansionOptions {
                solve: SolveOptions::with_solver(SolverKind::Bk),
                ..Default::default()
            },
            ..Default::default()
        };
        let labels = stereo(&s.left, &s.right, &o)?.expansion.labels;
        // The two filters alternate, so that a change of the machine's load hits both.
        let (mut t_new, mut t_old) = (Vec::new(), Vec::new());
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
        for _ in 0..runs {
            let t = Instant::now();
            std::hint::black_box(weighted_median(&labels, &s.left, &f)?);
            t_new.push(ms(t));
            let t = Instant::now();
            std::hint::black_box(old_weighted_median(&labels, &s.left, &f));
            t_old.push(ms(t));
        }
        let median = |mut t: Vec<f64>| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        };
        let (t_new, t_old) = (median(t_new), median(t_old));
        let new = weighted_median(&labels, &s.left, &f)?;
        let old = old_weighted_median(&labels, &s.left, &f);
        let changed = new.iter().zip(&old).filter(|(a, b)| a != b).count();
        let rates = |l: &[u16]| {
            let d: Vec<f32> = l.iter().map(|&v| v as f32).collect();
            let sc = score(&d, &s.gt, &s.masks, 1.0).unwrap();
            format!("{:.2} / {:.2} / {:.2} %", sc.nonocc, sc.all, sc.disc)
        };
        println!(
            "{name} {}x{} ({} labels): f32 filter {t_old:.2} ms, integer filter {t_new:.2} ms; \
             {changed} of {} pixels differ; nonocc/all/disc: unfiltered {}, f32 {}, integer {}",
            s.left.dims[0],
            s.left.dims[1],
            s.num_disparities,
            labels.len(),
            rates(&labels),
            rates(&old),
            rates(&new),
        );
    }
    Ok(())
}

/// The filter as it was up to 2026-11-27 (f32 weights, f64 sums, a per-pixel list of labels),
/// for 8-bit views only.
fn old_weighted_median(labels: &[u16], guide: &Image, f: &WeightedMedian) -> Vec<u16> {
    use rayon::prelude::*;
    let [w, h, _] = guide.dims;
    let c = guide.channels.max(1);
    assert!(guide.data.iter().all(|&v| v <= 255.0), "8-bit views only");
    let colours = &guide.data;
    let r = f.radius as i64;
    let offsets: Vec<(i64, i64, f32)> = (-r..=r)
        .flat_map(|dy| (-r..=r).map(move |dx| (dx, dy)))
        .map(|(dx, dy)| {
            let d = ((dx * dx + dy * dy) as f32).sqrt();
            (dx, dy, (-d / f.sigma_space).exp())
        })
        .collect();
    let inv_sigma = 1.0 / f.sigma_colour;
    let table: Vec<f32> = (0..=c * 255 * 255)
        .map(|d2| (-((d2 as f32).sqrt() * inv_sigma)).exp())
        .collect();
    let mut out = vec![0u16; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let mut seen: Vec<(u16, f64)> = Vec::new();
        for (x, o) in row.iter_mut().enumerate() {
            let p = x + w * y;
            let cp = &colours[p * c..p * c + c];
            seen.clear();
            let mut total = 0f64;
            for &(dx, dy, ws) in &offsets {
                let (qx, qy) = (x as i64 + dx, y as i64 + dy);
                if qx < 0 || qy < 0 || qx >= w as i64 || qy >= h as i64 {
                    continue;
                }
                let q = qx as usize + w * qy as usize;
                let cq = &colours[q * c..q * c + c];
                let d2: f32 = cp.iter().zip(cq).map(|(a, b)| (a - b) * (a - b)).sum();
                let wt = (table[d2 as usize] * ws) as f64;
                total += wt;
                let l = labels[q];
                match seen.iter_mut().find(|e| e.0 == l) {
                    Some(e) => e.1 += wt,
                    None => seen.push((l, wt)),
                }
            }
            seen.sort_unstable_by_key(|e| e.0);
            let half = total / 2.0;
            let mut acc = 0f64;
            *o = seen.last().map_or(labels[p], |e| e.0);
            for &(l, wt) in &seen {
                acc += wt;
                if acc >= half {
                    *o = l;
                    break;
                }
            }
        }
    });
    out
}
