//! Leave-one-scene-out cross-validation of the stereo setting over the Middlebury dev scenes
//! (docs/stereo.md, "Defaults and how they were chosen"): every candidate (λ, census weight,
//! left–right check) runs on both scenes; for each scene, the candidate best on the *other* scene
//! is scored on it (held out), beside the candidate best on the mean of both (in sample).
//!
//! ```text
//! cargo run --release --example stereo_cv -- ../shared/data/stereo [bk|cuda-grid]
//! ```
//!
//! The left–right variants reuse the two maps of their (λ, weight) setting, so a setting costs
//! two expansions per scene whatever the number of tolerances tried.

use segcut::maxflow::{SolveOptions, SolverKind};
use segcut::stereo::eval::{load_scene, score, Scene};
use segcut::stereo::occlusion::{left_right_fill, mirror, mirror_labels};
use segcut::stereo::{stereo, CostOptions, StereoOptions};
use std::path::PathBuf;

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

/// A candidate's (nonocc, all, disc) bad-pixel rates on one scene.
type Rates = (f64, f64, f64);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).map_or("../shared/data/stereo", |s| s.as_str()));
    let solver = match args.get(2).map(|s| s.as_str()) {
        Some("cuda-grid") => SolverKind::CudaGrid,
        _ => SolverKind::Bk,
    };
    let scenes: Vec<Scene> = ["tsukuba", "venus"]
        .iter()
        .map(|n| load_scene(&dir.join(n), None))
        .collect::<Result<_, _>>()?;
    // rates[candidate][scene] = (nonocc, all, disc)
    let mut names = Vec::new();
    let mut rates: Vec<Vec<Rates>> = Vec::new();
    for &(lambda, weight) in &SETTINGS {
        let mut per_check = vec![Vec::new(); CHECKS.len()];
        for s in &scenes {
            let mut o = StereoOptions {
                num_disparities: s.num_disparities,
                lambda,
                cost: CostOptions {
                    census_weight: weight,
                    ..Default::default()
                },
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
                let labels = match check {
                    None => left.clone(),
                    Some((t, m)) => left_right_fill(&left, &right, w, 0, *t, *m).labels,
                };
                let disp: Vec<f32> = labels.iter().map(|&l| l as f32).collect();
                let sc = score(&disp, &s.gt, &s.masks, 1.0)?;
                per_check[c].push((sc.nonocc, sc.all, sc.disc));
            }
        }
        for (c, check) in CHECKS.iter().enumerate() {
            let lr = check.map_or("off".to_string(), |(t, m)| {
                format!("tol {t}{}", if m { " +mismatch" } else { "" })
            });
            names.push(format!("λ {lambda:>4} census {weight:<4} lr {lr:<14}"));
            rates.push(per_check[c].clone());
            let r = &per_check[c];
            eprintln!(
                "{:<36} tsukuba {:5.2} / {:5.2}   venus {:5.2} / {:5.2}   (nonocc / all)",
                names.last().unwrap(),
                r[0].0,
                r[0].1,
                r[1].0,
                r[1].1
            );
        }
    }
    let best = |key: &dyn Fn(&[Rates]) -> f64| {
        (0..rates.len())
            .min_by(|&a, &b| key(&rates[a]).total_cmp(&key(&rates[b])))
            .unwrap()
    };
    println!("candidate | tsukuba nonocc | venus nonocc | mean");
    for (n, r) in names.iter().zip(&rates) {
        println!(
            "{n} | {:.2} | {:.2} | {:.3}",
            r[0].0,
            r[1].0,
            (r[0].0 + r[1].0) / 2.0
        );
    }
    for (held, s) in scenes.iter().enumerate() {
        let other = 1 - held;
        let pick = best(&|r| r[other].0);
        println!(
            "held out {}: chosen on {} = [{}], held-out nonocc {:.2} % (all {:.2}, disc {:.2})",
            s.name,
            scenes[other].name,
            names[pick],
            rates[pick][held].0,
            rates[pick][held].1,
            rates[pick][held].2
        );
    }
    let pick = best(&|r| (r[0].0 + r[1].0) / 2.0);
    println!(
        "in sample (mean of both): [{}], tsukuba {:.2} %, venus {:.2} %",
        names[pick], rates[pick][0].0, rates[pick][1].0
    );
    Ok(())
}
