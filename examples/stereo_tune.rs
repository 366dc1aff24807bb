//! Times the device stereo engine on one scene with several grid-solver tunings (which change the
//! time, never the result): which suits α-expansion's move graphs.
//!
//! ```text
//! cargo run --release --example stereo_tune -- SCENE_DIR RUNS THREADS "check=4" "blocks=64" ...
//! ```
//!
//! A tuning that starts with `scratch` (`scratch`, `scratch:check=4`) solves every move from
//! scratch instead of from the last preflow of its label (the engine's dynamic moves); one that
//! starts with `first` (`first`, `first:check=4`) also starts each label's first move from the
//! preflow of the move before it (`DeviceTuning::warm_first`).
//!
//! A tuning that starts with `packK:` (`pack4:`, `pack8:scratch`, `pack2:check=4`) runs the rest
//! as above and then K pairs packed into one run (`stereo_packed_on_device`): K copies of the
//! scene, and K different pairs (the scene with both views moved left by 0, 1, …, K−1 columns);
//! it prints the median time of a packed run and the pairs per second, beside the single pair's,
//! and checks that each packed part has its single run's energy.
//!
//! Prints, per tuning, the median total time of RUNS runs one at a time, the summed solve time, the
//! moves solved and the energy (the same for every tuning); then, with THREADS > 1, the pairs per
//! second of THREADS threads each running RUNS pairs at once on the GPU, each solver sized to its
//! share of the GPU (what `segcut batch` does with THREADS workers, less the decoding).

use segcut::io::Image;
use segcut::maxflow::cuda::GridTuning;
use segcut::stereo::eval::load_scene;
use segcut::stereo::gpu::{stereo_on_device_tuned, stereo_packed_on_device, DeviceTuning};
use segcut::stereo::StereoOptions;
use std::path::PathBuf;

/// The image moved left by `dx` columns, its last column repeated.
fn shifted(img: &Image, dx: usize) -> Image {
    let [w, h, _] = img.dims;
    let c = img.channels;
    let mut v = Vec::with_capacity(img.data.len());
    for y in 0..h {
        for x in 0..w {
            let sx = (x + dx).min(w - 1);
            v.extend_from_slice(&img.data[(sx + w * y) * c..(sx + w * y + 1) * c]);
        }
    }
    Image::new(img.dims, c, v)
}

/// Runs `f` on `threads` threads at once; the seconds until all have finished.
fn in_threads(threads: usize, f: impl Fn() + Sync) -> f64 {
    let t0 = std::time::Instant::now();
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads).map(|_| sc.spawn(&f)).collect();
        hs.into_iter().for_each(|h| h.join().expect("a thread"));
    });
    t0.elapsed().as_secs_f64()
}

/// The median of `runs` timed calls of `f` in milliseconds, and the last call's value.
fn median_ms<T>(
    runs: usize,
    mut f: impl FnMut() -> Result<T, Box<dyn std::error::Error>>,
) -> Result<(f64, T), Box<dyn std::error::Error>> {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs.max(1) {
        let t = std::time::Instant::now();
        last = Some(f()?);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], last.expect("one run")))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(
        args.get(1)
            .ok_or("usage: stereo_tune SCENE RUNS TUNING...")?,
    );
    let runs: usize = args.get(2).map_or(Ok(3), |s| s.parse())?;
    let threads: usize = args.get(3).map_or(Ok(1), |s| s.parse())?;
    let scene = load_scene(
        &dir,
        if dir.ends_with("synth450") {
            Some(4.0)
        } else {
            None
        },
    )?;
    let opts = StereoOptions {
        num_disparities: scene.num_disparities,
        left_right: None,
        ..Default::default()
    };
    for t in args.iter().skip(4) {
        let (pack, t) = match t.strip_prefix("pack") {
            Some(rest) => {
                let (k, rest) = rest.split_once(':').unwrap_or((rest, ""));
                (k.parse::<usize>()?, rest.to_string())
            }
            None => (0, t.clone()),
        };
        let t = &t;
        let (warm_moves, warm_first, grid) = if let Some(rest) = t.strip_prefix("scratch") {
            (false, false, rest.trim_start_matches(':'))
        } else if let Some(rest) = t.strip_prefix("first") {
            (true, true, rest.trim_start_matches(':'))
        } else {
            (true, false, t.as_str())
        };
        let grid: GridTuning = grid.parse()?;
        let tuning = DeviceTuning {
            grid,
            warm_moves,
            warm_first,
        };
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..runs.max(1) {
            let r = stereo_on_device_tuned(&scene.left, &scene.right, &opts, &tuning)?;
            times.push(r.total_time.as_secs_f64() * 1e3);
            last = Some(r);
        }
        times.sort_by(f64::total_cmp);
        let r = last.expect("one run");
        let solve: f64 = r
            .expansion
            .moves
            .iter()
            .map(|m| m.solve.as_secs_f64() * 1e3)
            .sum();
        let solved = r
            .expansion
            .moves
            .iter()
            .filter(|m| !m.solve.is_zero())
            .count();
        println!(
            "{} {t}: median {:.1} ms, solves {:.1} ms over {solved} moves, energy {}",
            scene.name,
            times[times.len() / 2],
            solve,
            r.expansion.energy
        );
        // Per pass: where the solve time goes (the grid solver's counters summed over the moves).
        for pass in 0..r.expansion.passes.len() {
            let ms: Vec<_> = r
                .expansion
                .moves
                .iter()
                .filter(|m| m.pass == pass)
                .collect();
            let sum = |f: fn(&segcut::stereo::GpuWork) -> u64| -> u64 {
                ms.iter().filter_map(|m| m.gpu_work.as_ref()).map(f).sum()
            };
            println!(
                "  pass {pass}: {} moves ({} warm), solves {:.1} ms, rounds {}, relabels {}, relabel passes {}",
                ms.len(),
                ms.iter().filter(|m| m.warm).count(),
                ms.iter().map(|m| m.solve.as_secs_f64() * 1e3).sum::<f64>(),
                sum(|w| w.rounds),
                sum(|w| w.relabels),
                sum(|w| w.relabel_passes)
            );
        }
        if pack > 0 {
            let single = times[times.len() / 2];
            println!(
                "{} {t}: single pair {single:.1} ms, {:.1} pairs/s",
                scene.name,
                1e3 / single
            );
            let copies: Vec<(Image, Image)> = (0..pack)
                .map(|_| (scene.left.clone(), scene.right.clone()))
                .collect();
            let moved: Vec<(Image, Image)> = (0..pack)
                .map(|i| (shifted(&scene.left, i), shifted(&scene.right, i)))
                .collect();
            for (what, pairs) in [("copies", &copies), ("moved pairs", &moved)] {
                let refs: Vec<(&Image, &Image)> = pairs.iter().map(|(l, r)| (l, r)).collect();
                let (ms, res) =
                    median_ms(runs, || Ok(stereo_packed_on_device(&refs, &opts, &tuning)?))?;
                // Each part is its own run: the single run's energy.
                for (i, ((l, r), p)) in refs.iter().zip(&res).enumerate() {
                    if what == "copies" && i > 0 {
                        break;
                    }
                    let one = stereo_on_device_tuned(l, r, &opts, &tuning)?;
                    if one.expansion.energy != p.expansion.energy || one.labels() != p.labels() {
                        return Err(format!("{what}: part {i} differs from its single run").into());
                    }
                }
                let passes: Vec<usize> = res.iter().map(|r| r.expansion.passes.len()).collect();
                println!(
                    "{} {t}: pack of {pack} {what}: {ms:.1} ms a packed run, {:.1} pairs/s \
                     ({:.2}× the single pair's rate; passes {passes:?})",
                    scene.name,
                    pack as f64 * 1e3 / ms,
                    pack as f64 * single / ms
                );
            }
            if threads > 1 {
                let mut shared = opts.clone();
                shared.expansion.solve.device =
                    shared.expansion.solve.device.shared_by(threads as u32);
                let opts = &shared;
                let refs: Vec<(&Image, &Image)> = moved.iter().map(|(l, r)| (l, r)).collect();
                let secs = in_threads(threads, || {
                    for _ in 0..runs {
                        stereo_packed_on_device(&refs, opts, &tuning).expect("a packed run");
                    }
                });
                println!(
                    "{} {t}: {threads} threads × {runs} packs of {pack} moved pairs: {:.1} pairs/s",
                    scene.name,
                    (threads * runs * pack) as f64 / secs
                );
            }
        }
        if threads > 1 {
            // As `segcut batch` does: each worker's solves take 1/THREADS of the GPU's blocks,
            // so that their cooperative launches run side by side.
            let mut shared = opts.clone();
            shared.expansion.solve.device = shared.expansion.solve.device.shared_by(threads as u32);
            let opts = &shared;
            let secs = in_threads(threads, || {
                for _ in 0..runs {
                    stereo_on_device_tuned(&scene.left, &scene.right, opts, &tuning)
                        .expect("a run");
                }
            });
            println!(
                "{} {t}: {threads} threads × {runs} pairs: {:.1} pairs/s",
                scene.name,
                (threads * runs) as f64 / secs
            );
        }
    }
    Ok(())
}
