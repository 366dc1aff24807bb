//! `segcut bench --warm`: GrabCut rounds solved from scratch against warm-started rounds
//! ([`SegmentOptions::warm_start`]) on photos, round by round, with the time of every phase of
//! the segmentation, so that the phases add up to the segmentation's wall time.

use super::{load_photo, PhotoSpec};
use crate::maxflow::SolverKind;
use crate::segment::{segment, SegmentOptions, Segmentation};
use crate::{Error, Result};
use serde::Serialize;
use std::time::Instant;

/// One GrabCut round, from scratch and warm-started (medians over the runs).
#[derive(Clone, Debug, Serialize)]
pub struct WarmRound {
    /// 1-based.
    pub round: usize,
    /// The round's flow value (the same both ways, or the record says `agrees: false`).
    pub flow: i64,
    /// Pixels whose label changed in this round.
    pub changed: usize,
    /// The solve from scratch, milliseconds.
    pub scratch_ms: f64,
    /// The warm-started solve, milliseconds (for round 1 also a solve from scratch).
    pub warm_ms: f64,
    /// Whether the warm run's round continued from the last flow (false where the solver keeps
    /// no state, e.g. on the GPU).
    pub warm: bool,
}

/// Where a segmentation's time went, milliseconds (medians over the runs). `other` is the wall
/// time less every phase named, so the phases add up to `total`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Phases {
    /// Colour conversion (and, with the GPU build, upload and n-links) before the first round.
    pub prepare: f64,
    /// Colour-model fits, all rounds.
    pub models: f64,
    /// Graph building (n-links in the first round, t-links in every round).
    pub graph: f64,
    /// The solves, all rounds.
    pub solve: f64,
    /// Certificates, all rounds.
    pub verify: f64,
    /// Everything else inside `segment` (seed checks, post-processing, the final mask).
    pub other: f64,
    /// `segment`'s wall time.
    pub total: f64,
}

/// One photo and solver: the rounds and the phases, cold and warm.
#[derive(Clone, Debug, Serialize)]
pub struct WarmRecord {
    /// The photo's name (its file stem).
    pub photo: String,
    /// Width, height, depth.
    pub dims: [usize; 3],
    /// The solver asked for.
    pub solver: SolverKind,
    /// The solver that ran the last round.
    pub ran: SolverKind,
    /// The rounds run.
    pub rounds: Vec<WarmRound>,
    /// Phases with every round from scratch.
    pub scratch: Phases,
    /// Phases with warm-started rounds.
    pub warm: Phases,
    /// Masks and every round's flow equal both ways, in every run.
    pub agrees: bool,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The phases of one run.
fn phases(s: &Segmentation, total: f64) -> Phases {
    let it = &s.stats.iterations;
    let sum = |f: &dyn Fn(&crate::segment::pipeline::IterationStats) -> f64| it.iter().map(f).sum();
    let mut p = Phases {
        prepare: ms(s.stats.prepare),
        models: sum(&|i| ms(i.models)),
        graph: sum(&|i| ms(i.graph)),
        solve: sum(&|i| ms(i.solve)),
        verify: sum(&|i| ms(i.verify)),
        other: 0.0,
        total,
    };
    p.other = total - (p.prepare + p.models + p.graph + p.solve + p.verify);
    p
}

/// Medians of each phase over runs.
fn median_phases(runs: &[Phases]) -> Phases {
    let m = |f: fn(&Phases) -> f64| median(runs.iter().map(f).collect());
    Phases {
        prepare: m(|p| p.prepare),
        models: m(|p| p.models),
        graph: m(|p| p.graph),
        solve: m(|p| p.solve),
        verify: m(|p| p.verify),
        other: m(|p| p.other),
        total: m(|p| p.total),
    }
}

/// Segments `photo` with the default options and `solver`, `runs` times with every round from
/// scratch and `runs` times warm-started, and compares the two round by round.
///
/// ```no_run
/// use segcut::bench::{photo_instances, warm::warm_start, Source};
/// use segcut::maxflow::SolverKind;
/// let data = std::path::Path::new("../shared/data/segmentation/grabcut-bsds-dev");
/// for inst in photo_instances(data, &[None]).unwrap() {
///     if let Source::Photo(p) = inst.source {
///         let r = warm_start(&p, SolverKind::Bk, 3).unwrap();
///         assert!(r.agrees);
///         let _line = format!("{}: {:.1} ms warm vs {:.1} ms from scratch", r.photo, r.warm.solve, r.scratch.solve);
///     }
/// }
/// ```
pub fn warm_start(photo: &PhotoSpec, solver: SolverKind, runs: usize) -> Result<WarmRecord> {
    let (image, seeds) = load_photo(photo)?;
    let opts = |warm_start| SegmentOptions {
        solver,
        warm_start,
        ..SegmentOptions::default()
    };
    let runs = runs.max(1);
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (warm_start, out) in [(false, &mut cold), (true, &mut warm)] {
            let t = Instant::now();
            let s = segment(&image, &seeds, &opts(warm_start))?;
            let total = ms(t.elapsed());
            out.push((phases(&s, total), s));
        }
    }
    let (first_cold, first_warm) = (&cold[0].1, &warm[0].1);
    let n_rounds = first_cold.stats.iterations.len();
    let same = |a: &Segmentation, b: &Segmentation| {
        a.mask == b.mask
            && a.stats.iterations.len() == b.stats.iterations.len()
            && a.stats
                .iterations
                .iter()
                .zip(&b.stats.iterations)
                .all(|(x, y)| x.flow == y.flow)
    };
    let agrees = cold.iter().chain(&warm).all(|(_, s)| same(s, first_cold));
    let per_round = |runs: &[(Phases, Segmentation)], r: usize| {
        median(
            runs.iter()
                .filter_map(|(_, s)| s.stats.iterations.get(r).map(|i| ms(i.solve)))
                .collect(),
        )
    };
    let rounds = (0..n_rounds)
        .map(|r| {
            let it = &first_cold.stats.iterations[r];
            WarmRound {
                round: r + 1,
                flow: it.flow,
                changed: it.changed,
                scratch_ms: per_round(&cold, r),
                warm_ms: per_round(&warm, r),
                warm: first_warm.stats.iterations.get(r).is_some_and(|i| i.warm),
            }
        })
        .collect();
    if n_rounds == 0 {
        return Err(Error::Unsupported(format!("{}: no round ran", photo.name)));
    }
    let cold_phases: Vec<Phases> = cold.iter().map(|(p, _)| p.clone()).collect();
    let warm_phases: Vec<Phases> = warm.iter().map(|(p, _)| p.clone()).collect();
    Ok(WarmRecord {
        photo: photo.name.clone(),
        dims: image.dims,
        solver,
        ran: first_warm.stats.solver.solver,
        rounds,
        scratch: median_phases(&cold_phases),
        warm: median_phases(&warm_phases),
        agrees,
    })
}

/// One GrabCut round's graph solved by `cuda-grid` from scratch and warm-started, with the
/// solver's own statistics ([`GridStats::profile`](crate::maxflow::cuda::GridStats::profile))
/// both ways.
#[derive(Clone, Debug, Serialize)]
pub struct GpuRound {
    /// 1-based.
    pub round: usize,
    /// The tuning (`GridTuning`'s text form).
    pub tuning: String,
    /// Solve milliseconds from scratch (upload excluded).
    pub scratch_ms: f64,
    /// Solve milliseconds warm-started from the last round's preflow (round 1: from scratch).
    pub warm_ms: f64,
    /// Whether the warm solve continued from the kept preflow.
    pub warm: bool,
    /// The scratch solve's profile.
    pub scratch_profile: String,
    /// The warm solve's profile.
    pub warm_profile: String,
    /// Same flow and canonical cut both ways.
    pub agrees: bool,
}

/// The graphs of a photo's GrabCut rounds 1..=`rounds` (default options, the rounds' own
/// models; fewer when the segmentation settles sooner), each solved by `cuda-grid` on `device`
/// from scratch and warm-started ([`WarmGrid`](crate::maxflow::cuda::WarmGrid)), once per tuning: what the device does with
/// the rounds, relabels and discharge separately, without the rest of the segmentation.
pub fn gpu_rounds(
    photo: &PhotoSpec,
    device: crate::cuda::Device,
    rounds: usize,
    tunings: &[crate::maxflow::cuda::GridTuning],
) -> Result<Vec<GpuRound>> {
    use crate::maxflow::cuda::{CudaGrid, WarmGrid};
    use crate::maxflow::{GpuStats, Solver};
    let (image, seeds) = load_photo(photo)?;
    let mut graphs = Vec::new();
    for r in 1..=rounds.max(1) {
        let s = segment(
            &image,
            &seeds,
            &SegmentOptions {
                solver: SolverKind::CudaGrid,
                iterations: r,
                keep_graph: true,
                device,
                ..SegmentOptions::default()
            },
        )?;
        if s.stats.iterations.len() < r {
            break;
        }
        graphs.push(
            s.graph
                .ok_or_else(|| Error::Unsupported("no graph kept".into()))?,
        );
    }
    let profile = |s: &crate::maxflow::Solved| match &s.stats.gpu {
        Some(GpuStats::Grid(g)) => g.profile(),
        _ => String::new(),
    };
    let mut out = Vec::new();
    for t in tunings {
        let mut scratch = CudaGrid::new(device, t.clone());
        let mut warm = WarmGrid::new(device, t.clone());
        // A first solve outside the timing: module load, session, captured graphs.
        scratch.run((&graphs[0]).into(), false)?;
        for (i, g) in graphs.iter().enumerate() {
            let a = scratch.run(g.into(), false)?;
            let (b, was_warm) = match i {
                0 => (warm.solve_grid(g)?, false),
                _ => match warm.resolve_grid(g)? {
                    Some(s) => (s, true),
                    None => (warm.solve_grid(g)?, false),
                },
            };
            out.push(GpuRound {
                round: i + 1,
                tuning: t.to_string(),
                scratch_ms: ms(a.stats.solve),
                warm_ms: ms(b.stats.solve),
                warm: was_warm,
                scratch_profile: profile(&a),
                warm_profile: profile(&b),
                agrees: a.cut == b.cut,
            });
        }
    }
    Ok(out)
}
