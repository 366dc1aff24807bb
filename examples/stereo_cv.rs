//! Leave-one-scene-out cross-validation of the stereo setting over the Middlebury dev scenes
//! (docs/stereo.md, "Defaults and how they were chosen"): every candidate (λ, census weight,
//! left–right check, weighted median filter) runs on both scenes; for each scene, the candidate
//! best on the *other* scene is scored on it (held out), beside the candidate best on the mean of
//! both (in sample). Further scenes (`DIR:GT_SCALE`, e.g. the synthetic ones of
//! `benches/stereo_synthetic.py`) are scored for every candidate but take no part in the choice:
//! they check that it hurts no other scene.
//!
//! ```text
//! cargo run --release --example stereo_cv -- ../shared/data/stereo [bk|cuda-grid] [DIR:SCALE ...]
//! ```
//!
//! The left–right and filter variants reuse the two maps of their (λ, weight) setting, so a
//! setting costs two expansions per scene whatever the number of post-processings tried.

use segcut::maxflow::{SolveOptions, SolverKind};
use segcut::stereo::eval::{load_scene, score, Scene};
use segcut::stereo::median::{weighted_median, WeightedMedian};
use segcut::stereo::occlusion::{left_right_fill, mirror, mirror_labels};
use segcut::stereo::{stereo, CostOptions, StereoOptions};
use std::path::{Path, PathBuf};

/// (λ, census weight) settings tried; the default first.
const SETTINGS: [(f32, f32); 4] = [(10.0, 0.5), (15.0, 0.75), (20.0, 1.0), (12.5, 0.5)];
/// Left–right checks tried: `None` none, else (tolerance, fill mismatches too).
const CHECKS: [Option<(u32, bool)>; 5] = [
    None,
    Some((0, false)),
    Some((1, false)),
    Some((1, true)),
    Some((2, false)),
];
/// Weighted median filters tried (radius, σ colour, σ space); radius 0: off. σ space equals the
/// radius (a neighbour at the window's edge weighs e⁻¹ of the centre, colour aside).
const MEDIANS: [(u32, f32, f32); 10] = [
    (0, 10.0, 9.0),
    (4, 5.0, 4.0),
    (4, 10.0, 4.0),
    (4, 20.0, 4.0),
    (9, 5.0, 9.0),
    (9, 10.0, 9.0),
    (9, 20.0, 9.0),
    (14, 5.0, 14.0),
    (14, 10.0, 14.0),
    (14, 20.0, 14.0),
];

/// A candidate's (nonocc, all, disc) bad-pixel rates on one scene.
type Rates = (f64, f64, f64);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).map_or("../shared/data/stereo", |s| s.as_str()));
    let solver = match args.get(2).map(|s| s.as_str()) {
        Some("cuda-grid") => SolverKind::CudaGrid,
        _ => SolverKind::Bk,
    };
    let mut scenes: Vec<Scene> = ["tsukuba", "venus"]
        .iter()
        .map(|n| load_scene(&dir.join(n), None))
        .collect::<Result<_, _>>()?;
    for extra in args.iter().skip(3) {
        let (path, scale) = extra
            .rsplit_once(':')
            .ok_or("extra scenes are DIR:GT_SCALE")?;
        scenes.push(load_scene(Path::new(path), Some(scale.parse()?))?);
    }
    // rates[candidate][scene] = (nonocc, all, disc)
    let mut names = Vec::new();
    let mut rates: Vec<Vec<Rates>> = Vec::new();
    for &(lambda, weight) in &SETTINGS {
        let n_post = CHECKS.len() * MEDIANS.len();
        let mut per_post = vec![Vec::new(); n_post];
        for s in &scenes {
            let mut o = StereoOptions {
                num_disparities: s.num_disparities,
                lambda,
                cost: CostOptions {
                    census_weight: weight,
                    ..Default::default()
                },
                left_right: None,
                median: WeightedMedian::OFF,
                ..Default::default()
            };
            o.expansion.solve = SolveOptions {
                verify: false,
                ..SolveOptions::with_solver(solver)
            };
            let w = s.left.dims[0];
            let left = stereo(&s.left, &s.right, &o)?.expansion.labels;
            let right = mirror_labels(
                &stereo(&mirror(&s.right), &mirror(&s.left), &o)?
                    .expansion
                    .labels,
                w,
            );
            for (c, check) in CHECKS.iter().enumerate() {
                let checked = match check {
                    None => left.clone(),
                    Some((t, m)) => left_right_fill(&left, &right, w, 0, *t, *m).labels,
                };
                for (m, &(radius, sigma_colour, sigma_space)) in MEDIANS.iter().enumerate() {
                    let f = WeightedMedian {
                        radius,
                        sigma_colour,
                        sigma_space,
                    };
                    let labels = weighted_median(&checked, &s.left, &f)?;
                    let disp: Vec<f32> = labels.iter().map(|&l| l as f32).collect();
                    let sc = score(&disp, &s.gt, &s.masks, 1.0)?;
                    per_post[c * MEDIANS.len() + m].push((sc.nonocc, sc.all, sc.disc));
                }
            }
        }
        for (c, check) in CHECKS.iter().enumerate() {
            for (m, &(radius, sc, ss)) in MEDIANS.iter().enumerate() {
                let lr = check.map_or("off".to_string(), |(t, m)| {
                    format!("tol {t}{}", if m { " +mismatch" } else { "" })
                });
                let med = if radius == 0 {
                    "off".to_string()
                } else {
                    format!("{radius}/{sc}/{ss}")
                };
                names.push(format!(
                    "λ {lambda:>4} census {weight:<4} lr {lr:<14} median {med:<9}"
                ));
                let r = per_post[c * MEDIANS.len() + m].clone();
                eprintln!(
                    "{} {}",
                    names.last().unwrap(),
                    r.iter()
                        .map(|x| format!("{:5.2}", x.0))
                        .collect::<Vec<_>>()
                        .join(" ")
                );
                rates.push(r);
            }
        }
    }
    let best = |key: &dyn Fn(&[Rates]) -> f64| {
        (0..rates.len())
            .min_by(|&a, &b| key(&rates[a]).total_cmp(&key(&rates[b])))
            .unwrap()
    };
    let head: Vec<String> = scenes
        .iter()
        .map(|s| format!("{} nonocc", s.name))
        .collect();
    println!("candidate | {} | mean of the first two", head.join(" | "));
    for (n, r) in names.iter().zip(&rates) {
        let cells: Vec<String> = r.iter().map(|x| format!("{:.2}", x.0)).collect();
        println!(
            "{n} | {} | {:.3}",
            cells.join(" | "),
            (r[0].0 + r[1].0) / 2.0
        );
    }
    for held in 0..2 {
        let other = 1 - held;
        let pick = best(&|r| r[other].0);
        println!(
            "held out {}: chosen on {} = [{}], held-out nonocc {:.2} % (all {:.2}, disc {:.2}); \
             in sample on {} {:.2} %",
            scenes[held].name,
            scenes[other].name,
            names[pick],
            rates[pick][held].0,
            rates[pick][held].1,
            rates[pick][held].2,
            scenes[other].name,
            rates[pick][other].0,
        );
    }
    let pick = best(&|r| (r[0].0 + r[1].0) / 2.0);
    let cells: Vec<String> = scenes
        .iter()
        .zip(&rates[pick])
        .map(|(s, r)| format!("{} {:.2} %", s.name, r.0))
        .collect();
    println!(
        "in sample (mean of both): [{}]: {}",
        names[pick],
        cells.join(", ")
    );
    Ok(())
}
