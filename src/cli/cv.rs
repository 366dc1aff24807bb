//! `segcut eval --cv DIR... --grid KEY=V1,V2 --folds K`: a parameter grid cross-validated over
//! the photos of one or more datasets (see `segcut::segment::cv`), printed as tables.

use super::segment::EnergyArgs;
use anyhow::{bail, Context, Result};
use segcut::io;
use segcut::segment::cv::{self, Case};
use segcut::segment::eval::{score, Score};
use segcut::segment::pipeline::InitialModels;
use segcut::segment::post::{post_process, PostProcess};
use segcut::segment::SegmentOptions;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A row group of the tables: its name and which cases it holds.
type Group = (String, Box<dyn Fn(&Case) -> bool>);

/// A case's mask and segmentation time.
type Cut = (Vec<bool>, std::time::Duration);

/// One grid axis: a key and its values, as typed.
struct Axis {
    key: String,
    values: Vec<String>,
}

fn parse_axis(spec: &str) -> Result<Axis> {
    let Some((key, values)) = spec.split_once('=') else {
        bail!("--grid expects KEY=V1,V2,..., got '{spec}'");
    };
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(|v| v.is_empty()) {
        bail!("--grid {spec}: empty value");
    }
    let axis = Axis {
        key: key.trim().to_string(),
        values,
    };
    // Check every value once, up front.
    let mut o = SegmentOptions::default();
    for v in &axis.values {
        set(&mut o, &axis.key, v)?;
    }
    Ok(axis)
}

/// Sets one grid key on `o`.
fn set(o: &mut SegmentOptions, key: &str, value: &str) -> Result<()> {
    let num = || -> Result<f64> {
        let x: f64 = value
            .parse()
            .with_context(|| format!("--grid {key}: '{value}' is not a number"))?;
        if !(x.is_finite() && x >= 0.0) {
            bail!("--grid {key}: {value} must be finite and >= 0");
        }
        Ok(x)
    };
    match key {
        "lambda" => o.lambda = num()?,
        "iterations" => {
            let n = num()? as usize;
            if n == 0 {
                bail!("--grid iterations: at least 1");
            }
            o.iterations = n;
        }
        "seed-weight" => {
            o.seed_weight = num()?;
            if o.seed_weight > 1.0 {
                bail!("--grid seed-weight: {value} is above 1");
            }
        }
        "prior" => o.prior.weight = num()?,
        "prior-contrast" => o.prior.contrast = num()?,
        "prior-softness" => o.prior.softness = num()?,
        "prior-explained" => {
            o.prior.explained = num()?;
            if o.prior.explained > 1.0 {
                bail!("--grid prior-explained: {value} is above 1");
            }
        }
        "initial" => {
            o.initial = match value {
                "seeds" => InitialModels::Seeds,
                "nearest" => InitialModels::NearestStroke,
                "background" => InitialModels::UnlabelledBackground,
                _ => bail!("--grid initial: seeds, nearest or background, got '{value}'"),
            }
        }
        "drop-unseeded" => o.post.drop_unseeded = num()? != 0.0,
        "fill-holes" => o.post.max_hole = num()? as usize,
        "outlier" => {
            o.outlier = num()?;
            if o.outlier >= 1.0 {
                bail!("--grid outlier: {value} must be below 1");
            }
        }
        other => bail!(
            "--grid: unknown key '{other}' (lambda, iterations, seed-weight, prior, prior-contrast, prior-softness, prior-explained, outlier, initial, drop-unseeded, fill-holes)"
        ),
    }
    Ok(())
}

/// Every combination of the axes' values on top of `base`, with a label each.
fn candidates(base: &SegmentOptions, axes: &[Axis]) -> Result<Vec<(String, SegmentOptions)>> {
    let mut out = vec![(String::new(), base.clone())];
    for axis in axes {
        let mut next = Vec::new();
        for (label, opts) in &out {
            for v in &axis.values {
                let mut o = opts.clone();
                set(&mut o, &axis.key, v)?;
                let sep = if label.is_empty() { "" } else { " " };
                next.push((format!("{label}{sep}{}={v}", axis.key), o));
            }
        }
        out = next;
    }
    if out.len() == 1 && out[0].0.is_empty() {
        out[0].0 = "defaults".into();
    }
    Ok(out)
}

/// The candidates of an earlier `--json` output, their scores in the order of `cases` (every case
/// must be there: the same photos and scribble sets, so the same folds).
fn merged(file: &Path, cases: &[Case]) -> Result<Vec<(String, f64, Vec<Score>)>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    let mut out = Vec::new();
    for c in doc["candidates"].as_array().into_iter().flatten() {
        let label = c["candidate"].as_str().unwrap_or("?").to_string();
        let mut by_case = std::collections::HashMap::new();
        for s in c["scores"].as_array().into_iter().flatten() {
            let key = (
                s["dataset"].as_str(),
                s["scribbles"].as_str(),
                s["photo"].as_str(),
            );
            by_case.insert(key, (s["error_rate"].as_f64(), s["iou"].as_f64()));
        }
        let mut scores = Vec::with_capacity(cases.len());
        for case in cases {
            let key = (
                Some(case.dataset.as_str()),
                Some(case.scribbles.as_str()),
                Some(case.photo.as_str()),
            );
            let Some(&(Some(error_rate), Some(iou))) = by_case.get(&key) else {
                bail!(
                    "{}: candidate '{label}' has no score for {} {}",
                    file.display(),
                    case.photo_key(),
                    case.scribbles
                );
            };
            scores.push(Score {
                error_rate,
                iou,
                scored: case.truth.values.iter().filter(|&&v| v != 128).count(),
            });
        }
        out.push((label, c["ms_per_case"].as_f64().unwrap_or(0.0), scores));
    }
    Ok(out)
}

/// The groups the tables report: each dataset × scribble set, then each scribble set over all.
fn groups(cases: &[Case]) -> Vec<Group> {
    let mut sets: Vec<String> = cases.iter().map(|c| c.scribbles.clone()).collect();
    sets.sort();
    sets.dedup();
    let mut datasets: Vec<String> = cases.iter().map(|c| c.dataset.clone()).collect();
    datasets.dedup();
    let mut g: Vec<Group> = Vec::new();
    for d in &datasets {
        for s in &sets {
            let (d2, s2) = (d.clone(), s.clone());
            g.push((
                format!("{d} {s}"),
                Box::new(move |c: &Case| c.dataset == d2 && c.scribbles == s2),
            ));
        }
    }
    if datasets.len() > 1 {
        for s in &sets {
            let s2 = s.clone();
            g.push((
                format!("all {s}"),
                Box::new(move |c: &Case| c.scribbles == s2),
            ));
        }
    }
    g
}

fn cells(cases: &[Case], scores: &[Score], groups: &[Group]) -> String {
    groups
        .iter()
        .map(|(_, keep)| {
            let (e, u, _) = cv::mean_score(scores, |i| keep(&cases[i]));
            format!("{e:5.2} / {u:5.1}")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

pub fn run(
    dirs: &[PathBuf],
    scribbles: &[String],
    folds: usize,
    grid: &[String],
    merge: &[PathBuf],
    energy: &EnergyArgs,
    json_out: Option<&Path>,
) -> Result<ExitCode> {
    if folds < 2 {
        bail!("--folds must be at least 2");
    }
    let axes = grid
        .iter()
        .map(|g| parse_axis(g))
        .collect::<Result<Vec<_>>>()?;
    let mut cands = candidates(&energy.options()?, &axes)?;
    if grid.is_empty() && !merge.is_empty() {
        cands.clear(); // only the merged candidates
    }
    let mut cases = Vec::new();
    for d in dirs {
        cases.extend(
            cv::load_dataset(d, scribbles).with_context(|| format!("loading {}", d.display()))?,
        );
    }
    let keys: Vec<String> = cases.iter().map(Case::photo_key).collect();
    let fold_of = cv::folds(&keys, folds);
    let groups = groups(&cases);
    let mut out = std::io::stdout().lock();
    let header: Vec<&str> = groups.iter().map(|g| g.0.as_str()).collect();
    writeln!(
        out,
        "{} cases ({} photos), {} candidates, {folds} folds",
        cases.len(),
        {
            let mut k = keys.clone();
            k.sort();
            k.dedup();
            k.len()
        },
        cands.len() + merge.len()
    )?;
    writeln!(out, "| # | candidate | {} | ms/case |", header.join(" | "))?;
    // scores[case][candidate]
    let mut scores: Vec<Vec<Score>> = vec![Vec::new(); cases.len()];
    let mut records = Vec::new();
    // Candidates that differ only in post-processing share one segmentation of every case.
    let mut cut: Option<(SegmentOptions, Vec<Cut>)> = None;
    for (i, (label, opts)) in cands.iter().enumerate() {
        let base = SegmentOptions {
            post: PostProcess::default(),
            ..opts.clone()
        };
        if cut.as_ref().is_none_or(|(o, _)| *o != base) {
            let masks =
                cv::segment_all(&cases, &base).with_context(|| format!("candidate {label}"))?;
            cut = Some((base, masks));
        }
        let masks = &cut.as_ref().expect("just set").1;
        let mut s = Vec::with_capacity(cases.len());
        for (c, (m, _)) in cases.iter().zip(masks) {
            let (m, _) = post_process(m, &c.seeds, &opts.post)?;
            s.push(score(&m, &c.truth)?);
        }
        let ms = masks.iter().map(|r| r.1.as_secs_f64() * 1e3).sum::<f64>() / masks.len() as f64;
        writeln!(
            out,
            "| {i} | {label} | {} | {ms:.0} |",
            cells(&cases, &s, &groups)
        )?;
        out.flush()?;
        for (row, sc) in scores.iter_mut().zip(&s) {
            row.push(*sc);
        }
        records.push(json!({ "candidate": label, "ms_per_case": ms,
            "scores": cases.iter().zip(&s).map(|(c, sc)| json!({"dataset": c.dataset, "scribbles": c.scribbles,
                "photo": c.photo, "error_rate": sc.error_rate, "iou": sc.iou})).collect::<Vec<_>>() }));
    }
    let mut labels: Vec<String> = cands.iter().map(|c| c.0.clone()).collect();
    for file in merge {
        for (label, ms, s) in merged(file, &cases)? {
            let i = labels.len();
            writeln!(
                out,
                "| {i} | {label} | {} | {ms:.0} |",
                cells(&cases, &s, &groups)
            )?;
            for (row, sc) in scores.iter_mut().zip(&s) {
                row.push(*sc);
            }
            labels.push(label);
        }
    }
    if labels.is_empty() {
        bail!("no candidates: give --grid axes or --merge files");
    }
    let result = cv::cross_validate(&scores, &fold_of, folds);
    writeln!(
        out,
        "\nchosen per fold (lowest mean error on the other folds):"
    )?;
    for (f, &c) in result.chosen_per_fold.iter().enumerate() {
        let n = fold_of.iter().filter(|&&x| x == f).count();
        writeln!(out, "  fold {f} ({n} cases): #{c} {}", labels[c])?;
    }
    let chosen = result.chosen_all;
    let fitted: Vec<Score> = scores.iter().map(|r| r[chosen]).collect();
    writeln!(out, "\n| numbers | {} |", header.join(" | "))?;
    writeln!(
        out,
        "| held-out ({folds}-fold) | {} |",
        cells(&cases, &result.held_out, &groups)
    )?;
    writeln!(
        out,
        "| fitted: #{chosen} {} | {} |",
        labels[chosen],
        cells(&cases, &fitted, &groups)
    )?;
    if let Some(p) = json_out {
        let doc = json!({ "folds": folds, "fold_of": keys.iter().zip(&fold_of).map(|(k, f)| json!([k, f])).collect::<Vec<_>>(),
            "candidates": records, "chosen_per_fold": result.chosen_per_fold, "chosen_all": chosen });
        let text = serde_json::to_string_pretty(&doc)?;
        io::write_atomic(p, |w| w.write_all(text.as_bytes()))
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
