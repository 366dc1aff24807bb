//! The job kinds, each in three steps that the pipeline ([`super::exec`]) runs on different
//! threads: [`decode`] (read the inputs), [`solve`] (fit, build and cut: the only step that
//! touches a GPU), and [`encode`] (the output's bytes). Each step's error is the job's error.
//!
//! Adding a kind means a [`Decoded`] and [`Done`] variant and one arm in each step; the pipeline,
//! resume, sharding and summary need nothing new.

use std::path::Path;

use super::manifest::{Job, JobKind};
use super::pack::solve_packed;
use crate::graph::{GridGraph, Network};
use crate::io::dimacs::{read_instances, MaxInstance, ReadOptions};
use crate::io::{self, Image, LoadOptions, MaskFormat, SeedOptions, Seeds};
use crate::maxflow::{MaxFlow, SolveOptions, Solved};
use crate::options::Values;
use crate::segment::report::Report;
use crate::segment::session::Segmenter;
use crate::segment::SegmentOptions;
use crate::stereo::{stereo, StereoOptions, StereoResult};
use crate::{Error, Result};

/// The batch's defaults (the command line's options, resolved), which a manifest row's options
/// ([`Job::overrides`]: only what the row gives) change per job.
#[derive(Clone, Debug, Default)]
pub struct Defaults {
    /// Segmentation options.
    pub segment: SegmentOptions,
    /// Max-flow options (solver, verification).
    pub solve: SolveOptions,
    /// The values segmentation masks are written with.
    pub mask_format: MaskFormat,
    /// Seed file options (scribble colours, format).
    pub seeds: SeedOptions,
    /// Stereo options.
    pub stereo: StereoOptions,
}

impl Defaults {
    /// The segmentation options for one job: the row's options on top of the batch's.
    pub fn segment_for(&self, o: &Values) -> Result<SegmentOptions> {
        Ok(o.segment_options(self.segment.clone())?)
    }

    /// The seed file options for one job.
    pub fn seeds_for(&self, o: &Values) -> SeedOptions {
        o.seed_options_on(self.seeds.clone())
    }

    /// The stereo options for one job.
    pub fn stereo_for(&self, o: &Values) -> Result<StereoOptions> {
        Ok(o.stereo_options(self.stereo.clone())?)
    }

    /// The max-flow options for one job (`solver`, `gpu_min_nodes`, `verify`).
    pub fn solve_for(&self, o: &Values) -> Result<SolveOptions> {
        let base = SegmentOptions {
            solver: self.solve.solver,
            auto: self.solve.auto,
            verify: self.solve.verify,
            ..SegmentOptions::default()
        };
        let s = o.segment_options(base)?;
        Ok(SolveOptions {
            solver: s.solver,
            auto: s.auto,
            verify: s.verify,
            ..self.solve.clone()
        })
    }
}

/// A job's inputs, read.
pub enum Decoded {
    /// The image and its seeds (rectangle applied).
    Segment {
        /// The image (boxed: the value moves through the pipeline's queues).
        image: Box<Image>,
        /// The seeds.
        seeds: Box<Seeds>,
    },
    /// Every instance of the file (one, or an archive's members).
    MaxFlow(Vec<MaxInstance>),
    /// The stereo pair.
    Stereo {
        /// The left view.
        left: Box<Image>,
        /// The right view.
        right: Box<Image>,
    },
}

/// A job's result, before encoding.
pub enum Done {
    /// The mask, with what encoding it needs.
    Segment {
        /// One per pixel, true = foreground.
        mask: Vec<bool>,
        /// The seeds (the OpenCV mask format writes them).
        seeds: Box<Seeds>,
        /// The image (file formats that copy its geometry).
        image: Box<Image>,
    },
    /// Each instance with its result.
    MaxFlow(Vec<(MaxInstance, Solved)>),
    /// A disparity map.
    Stereo {
        /// Row-major disparities.
        disparity: Vec<f32>,
        /// Width and height.
        size: [usize; 2],
        /// The largest disparity searched (chooses the PNG depth and scale).
        max_disparity: f32,
    },
}

/// What a solve reports for the summary.
#[derive(Clone, Debug, Default)]
pub struct SolveReport {
    /// The solver that ran (`+packed` when it ran on a packed grid).
    pub solver: String,
    /// The flow (summed over an archive's instances).
    pub flow: Option<i64>,
    /// Whether every cut was verified.
    pub verified: bool,
}

fn need<'a>(p: &'a Option<std::path::PathBuf>, what: &str, job: &Job) -> Result<&'a Path> {
    p.as_deref().ok_or_else(|| Error::Input {
        file: job.origin.clone(),
        msg: format!("job '{}' has no {what}", job.id),
    })
}

/// Reads a job's inputs.
pub fn decode(job: &Job, defaults: &Defaults) -> Result<Decoded> {
    match job.kind {
        JobKind::Segment => {
            let path = need(&job.image, "image", job)?;
            let image = io::load_image_with(path, &LoadOptions::default())?;
            let from_file = match &job.seeds {
                Some(s) => Some(io::load_seeds(
                    s,
                    image.dims,
                    &SeedOptions {
                        image_file: Some(path.to_path_buf()),
                        ..defaults.seeds_for(&job.overrides)
                    },
                )?),
                None => None,
            };
            let seeds = match (&job.rect, from_file) {
                (Some(r), Some(s)) => io::rect_with_seeds(r, &s)?,
                (Some(r), None) => io::rect_seeds(image.dims, r)?,
                (None, Some(s)) => s,
                (None, None) => {
                    return Err(Error::Input {
                        file: job.origin.clone(),
                        msg: "a segment job needs seeds or a rect".into(),
                    })
                }
            };
            Ok(Decoded::Segment {
                image: Box::new(image),
                seeds: Box::new(seeds),
            })
        }
        JobKind::MaxFlow => {
            let path = need(&job.max, "max file", job)?;
            let mut all = Vec::new();
            read_instances(path, &ReadOptions::default(), |inst| {
                all.push(inst);
                Ok(())
            })?;
            Ok(Decoded::MaxFlow(all))
        }
        JobKind::Stereo => {
            let left = io::load_image(need(&job.left, "left image", job)?)?;
            let right = io::load_image(need(&job.right, "right image", job)?)?;
            Ok(Decoded::Stereo {
                left: Box::new(left),
                right: Box::new(right),
            })
        }
    }
}

/// Solves one decoded job with solvers held by the worker: `mf` for max-flow jobs, `segmenter`
/// for segmentations (its GPU sessions and buffers stay from job to job).
pub fn solve(
    job: &Job,
    input: Decoded,
    defaults: &Defaults,
    mf: &mut MaxFlow,
    segmenter: &mut Segmenter,
) -> Result<(Done, SolveReport)> {
    match input {
        Decoded::Segment { image, seeds } => {
            let opts = defaults.segment_for(&job.overrides)?;
            segmenter.set_options(opts.clone());
            let seg = segmenter.segment(&image, &seeds)?;
            Ok(segment_done(seg, &opts, image, seeds, ""))
        }
        Decoded::Stereo { left, right } => {
            let opts = defaults.stereo_for(&job.overrides)?;
            let res = stereo(&left, &right, &opts)?;
            Ok(stereo_done(&res, &opts, ""))
        }
        Decoded::MaxFlow(instances) => {
            let opts = defaults.solve_for(&job.overrides)?;
            if *mf.options() != opts {
                *mf = MaxFlow::new(opts);
            }
            let mut out = Vec::with_capacity(instances.len());
            let mut report = SolveReport {
                verified: mf.options().verify,
                flow: Some(0),
                ..Default::default()
            };
            for inst in instances {
                let solved = mf.solve(&inst.network)?;
                check_expected(&inst, &solved)?;
                add(&mut report, &solved, false);
                out.push((inst, solved));
            }
            Ok((Done::MaxFlow(out), report))
        }
    }
}

fn add(report: &mut SolveReport, solved: &Solved, packed: bool) {
    report.flow = Some(report.flow.unwrap_or(0) + solved.cut.flow);
    report.verified &= solved.certificate.is_some();
    let name = format!(
        "{}{}",
        solved.ran.solver.name(),
        if packed { "+packed" } else { "" }
    );
    if report.solver.is_empty() {
        report.solver = name;
    } else if !report.solver.split('/').any(|s| s == name) {
        report.solver = format!("{}/{name}", report.solver);
    }
}

/// A result that disagrees with the instance's `.sol` value is the job's failure.
fn check_expected(inst: &MaxInstance, solved: &Solved) -> Result<()> {
    match inst.expected_flow {
        Some(want) if want != solved.cut.flow => Err(Error::Input {
            file: inst.name.clone(),
            msg: format!(
                "flow {} differs from the .sol value {want}",
                solved.cut.flow
            ),
        }),
        _ => Ok(()),
    }
}

/// A stereo result as the summary and the writer take it; `suffix` is added to the solver's name
/// (`+packed`).
fn stereo_done(res: &StereoResult, opts: &StereoOptions, suffix: &str) -> (Done, SolveReport) {
    let mut report = SolveReport {
        verified: opts.expansion.solve.verify,
        ..Default::default()
    };
    for m in &res.expansion.moves {
        let name = m.solver.name();
        if !report.solver.split('/').any(|s| s == name) {
            if !report.solver.is_empty() {
                report.solver.push('/');
            }
            report.solver.push_str(name);
        }
    }
    report.solver.push_str(suffix);
    let max_disparity = (opts.min_disparity + opts.num_disparities as i32 - 1).max(1) as f32;
    (
        Done::Stereo {
            disparity: res.disparity(),
            size: [res.width, res.height],
            max_disparity,
        },
        report,
    )
}

/// A segmentation job's output and summary columns (`suffix` on the solver's name: `+packed`
/// for a packed run).
fn segment_done(
    seg: crate::segment::Segmentation,
    opts: &SegmentOptions,
    image: Box<Image>,
    seeds: Box<Seeds>,
    suffix: &str,
) -> (Done, SolveReport) {
    // The summary's columns come from the segmentation's report (as --stats-json).
    let r = Report::new(&seg, opts);
    let report = SolveReport {
        solver: format!("{}{suffix}", r.solver),
        flow: Some(r.flow),
        verified: r.verified,
    };
    (
        Done::Segment {
            mask: seg.mask,
            seeds,
            image,
        },
        report,
    )
}

/// The options a segmentation job runs with when it may be packed with others (see
/// [`solve_segment_packed`]): its effective options, if its photo's graph would be built and
/// cut on the GPU ([`crate::segment::pipeline::builds_on_gpu`]). Jobs whose keys are equal (and
/// whose photos have one width) can be packed.
pub fn segment_pack_options(
    job: &Job,
    input: &Decoded,
    defaults: &Defaults,
) -> Option<SegmentOptions> {
    let Decoded::Segment { image, .. } = input else {
        return None;
    };
    let opts = defaults.segment_for(&job.overrides).ok()?;
    crate::segment::pipeline::builds_on_gpu(image, &opts).then_some(opts)
}

/// Segments photos with the same options (`opts`) in one pack
/// ([`Segmenter::segment_packed`]: each round's cuts one stacked solve); each job's mask is the
/// one it gets alone, and a job refused on its own input fails alone. When the pack's solve
/// fails (no room on the device for the stacked grid, say), each job is segmented alone, so an
/// error is only its own job's. Returns each job's result in order.
pub fn solve_segment_packed(
    photos: Vec<Decoded>,
    opts: &SegmentOptions,
    segmenter: &mut Segmenter,
) -> Vec<Result<(Done, SolveReport)>> {
    let jobs: Vec<(Box<Image>, Box<Seeds>)> = photos
        .into_iter()
        .filter_map(|d| match d {
            Decoded::Segment { image, seeds } => Some((image, seeds)),
            _ => None,
        })
        .collect();
    segmenter.set_options(opts.clone());
    let refs: Vec<(&Image, &Seeds)> = jobs.iter().map(|(i, s)| (&**i, &**s)).collect();
    let packed = segmenter.segment_packed(&refs);
    let results: Vec<(Result<crate::segment::Segmentation>, &str)> = match packed {
        Ok(segs) => segs.into_iter().map(|s| (s, "+packed")).collect(),
        Err(_) => refs
            .iter()
            .map(|&(image, seeds)| (segmenter.segment(image, seeds), ""))
            .collect(),
    };
    results
        .into_iter()
        .zip(jobs)
        .map(|((seg, suffix), (image, seeds))| Ok(segment_done(seg?, opts, image, seeds, suffix)))
        .collect()
}

/// The options a stereo job runs with when it may be packed with others (see
/// [`solve_stereo_packed`]): its effective options, if its pair would run on the device engine
/// without the left–right check. Jobs whose keys are equal (and whose pairs have one size) can
/// be packed.
pub fn stereo_pack_options(
    job: &Job,
    pair: &Decoded,
    defaults: &Defaults,
) -> Option<StereoOptions> {
    let Decoded::Stereo { left, .. } = pair else {
        return None;
    };
    let opts = defaults.stereo_for(&job.overrides).ok()?;
    (opts.left_right.is_none() && crate::stereo::on_device(left, &opts)).then_some(opts)
}

/// Solves stereo jobs with the same options (`opts`) and pairs of one size packed into one run
/// of the device engine ([`crate::stereo::gpu::stereo_packed_on_device`]); each job's output is
/// the one it has alone. When the packed run fails (a pair the engine refuses, no room on the
/// device), each job is solved alone, so an error is only its own job's. Returns each job's
/// result in order.
pub fn solve_stereo_packed(
    pairs: Vec<Decoded>,
    opts: &StereoOptions,
) -> Vec<Result<(Done, SolveReport)>> {
    let views: Vec<(Box<Image>, Box<Image>)> = pairs
        .into_iter()
        .filter_map(|d| match d {
            Decoded::Stereo { left, right } => Some((left, right)),
            _ => None,
        })
        .collect();
    let refs: Vec<(&Image, &Image)> = views.iter().map(|(l, r)| (&**l, &**r)).collect();
    let packed = refs
        .iter()
        .try_for_each(|(l, _)| crate::stereo::budget_check(l, opts))
        .and_then(|()| {
            crate::stereo::gpu::stereo_packed_on_device(&refs, opts, &Default::default())
        });
    match packed {
        Ok(results) => results
            .into_iter()
            .zip(&refs)
            .map(|(mut res, (l, _))| {
                // The device filter declines more labels than it takes: the host filters, as
                // stereo() does.
                if opts.median.is_on() && res.filtered.is_none() {
                    res.filtered = Some(crate::stereo::median::weighted_median(
                        res.labels(),
                        l,
                        &opts.median,
                    )?);
                }
                Ok(stereo_done(&res, opts, "+packed"))
            })
            .collect(),
        Err(_) => refs
            .iter()
            .map(|(l, r)| stereo(l, r, opts).map(|res| stereo_done(&res, opts, "")))
            .collect(),
    }
}

/// Solves several max-flow jobs' grid instances as one packed grid per connectivity
/// ([`super::pack`]); general graphs are solved one by one. Returns each job's result in order.
pub fn solve_maxflow_packed(
    jobs: Vec<(Vec<MaxInstance>, Option<SolveOptions>)>,
    mf: &mut MaxFlow,
) -> Vec<Result<(Done, SolveReport)>> {
    // Which (job, instance) pairs can be packed: grids of the same connectivity.
    let mut results: Vec<Vec<Option<Result<Solved>>>> = jobs
        .iter()
        .map(|(insts, _)| insts.iter().map(|_| None).collect())
        .collect();
    let mut groups: Vec<(crate::graph::Connectivity, Vec<(usize, usize)>)> = Vec::new();
    for (j, (insts, _)) in jobs.iter().enumerate() {
        for (i, inst) in insts.iter().enumerate() {
            if let Network::Grid(g) = &inst.network {
                match groups.iter_mut().find(|(c, _)| *c == g.connectivity()) {
                    Some((_, m)) => m.push((j, i)),
                    None => groups.push((g.connectivity(), vec![(j, i)])),
                }
            }
        }
    }
    let mut packed_solved: Vec<Vec<bool>> = jobs
        .iter()
        .map(|(insts, _)| vec![false; insts.len()])
        .collect();
    for (_, members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
        let grids: Vec<&GridGraph> = members
            .iter()
            .map(|&(j, i)| match &jobs[j].0[i].network {
                Network::Grid(g) => g,
                Network::Csr(_) => unreachable!("grouped as grids"),
            })
            .collect();
        // A packed solve that fails (too big for the device) leaves its members to be solved
        // one at a time below, where each job gets its own error if it has one.
        if let Ok(parts) = solve_packed(&grids, mf) {
            for (&(j, i), s) in members.iter().zip(parts) {
                results[j][i] = Some(Ok(s));
                packed_solved[j][i] = true;
            }
        }
    }
    jobs.into_iter()
        .enumerate()
        .map(|(j, (insts, _))| {
            let mut out = Vec::with_capacity(insts.len());
            let mut report = SolveReport {
                verified: mf.options().verify,
                flow: Some(0),
                ..Default::default()
            };
            for (i, inst) in insts.into_iter().enumerate() {
                let solved = match results[j][i].take() {
                    Some(r) => r?,
                    None => mf.solve(&inst.network)?,
                };
                check_expected(&inst, &solved)?;
                add(&mut report, &solved, packed_solved[j][i]);
                out.push((inst, solved));
            }
            Ok((Done::MaxFlow(out), report))
        })
        .collect()
}

/// The output's bytes: a mask in the format `path`'s extension names, or for max-flow a text
/// file with, per instance, `c instance NAME`, `s FLOW` and the source side's DIMACS node ids
/// one per line (the source included, as `segcut maxflow --cut` writes them).
pub fn encode(done: &Done, path: &Path, defaults: &Defaults) -> Result<Vec<u8>> {
    match done {
        Done::Segment { mask, seeds, image } => {
            io::encode_mask_as(path, mask, seeds, defaults.mask_format, Some(&**image))
        }
        Done::Stereo {
            disparity,
            size: [w, h],
            max_disparity,
        } => {
            // As `segcut stereo` writes it: the largest whole scale (at most 16) that keeps the
            // largest disparity within 8 bits; 16 bits beyond.
            let scale = (255.0 / max_disparity).floor().clamp(1.0, 16.0);
            let fmt = io::DisparityFormat::for_path(path, scale, *max_disparity);
            io::encode_disparity(disparity, *w, *h, fmt)
        }
        Done::MaxFlow(results) => {
            use std::fmt::Write;
            let mut s = String::new();
            for (inst, solved) in results {
                let _ = writeln!(s, "c instance {}", inst.name);
                let _ = writeln!(s, "s {}", solved.cut.flow);
                let mut ids: Vec<u64> = solved
                    .cut
                    .source_side()
                    .map(|v| inst.dimacs_id(v))
                    .collect();
                ids.push(inst.source_id);
                ids.sort_unstable();
                for id in ids {
                    let _ = writeln!(s, "{id}");
                }
            }
            Ok(s.into_bytes())
        }
    }
}

/// The default output name template of a kind: `{id}.png` for masks and disparities,
/// `{id}.cut` for max-flow.
pub fn default_template(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Segment | JobKind::Stereo => "{id}.png",
        JobKind::MaxFlow => "{id}.cut",
    }
}

/// Fills a name template: `{id}` (the job id), `{kind}` (`segment`, `stereo`, `maxflow`).
///
/// ```
/// use segcut::batch::jobs::fill_template;
/// use segcut::batch::manifest::JobKind;
/// assert_eq!(fill_template("{kind}/{id}_mask.png", "cat", JobKind::Segment), "segment/cat_mask.png");
/// ```
pub fn fill_template(template: &str, id: &str, kind: JobKind) -> String {
    template.replace("{id}", id).replace("{kind}", kind.name())
}
