//! Times one mixture fit (`segment::model::Gmm::fit`, 5 components, Lab) on the samples a
//! refit round of the dev photos 124084, 65019 and 153077 gives (each class of the ground truth,
//! every `⌈count / 12 000⌉`-th pixel, as the pipeline's gather picks them), in a rayon pool of 1
//! thread and of every core, and checks that both give the same parameters. Beside each fit from
//! scratch, a warm refit as the later GrabCut rounds make them with `--refit-steps 2`
//! (`Gmm::refit`, 2 EM iterations) from the mixture fitted on every other of the samples.
//!
//! `cargo bench --bench gmm_fit` prints per photo and class the median and minimum wall time of
//! `SEGCUT_BENCH_REPS` (default 9) fits of each kind. `SEGCUT_DEV_DATA` points at another copy of
//! grabcut-bsds-dev.

use segcut::io::load_image;
use segcut::segment::color::{to_color_space, ColorSpace};
use segcut::segment::model::{Gmm, MAX_FIT_SAMPLES};
use std::path::PathBuf;
use std::time::Instant;

fn dev_data() -> PathBuf {
    std::env::var("SEGCUT_DEV_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/data/segmentation/grabcut-bsds-dev")
        })
}

/// The Lab samples of the ground truth's foreground (`fg`) or background of photo `id`.
fn samples(id: &str, fg: bool) -> Vec<f32> {
    let d = dev_data();
    let image = load_image(&d.join(format!("images/{id}.jpg"))).expect("dev photo");
    let gt = load_image(&d.join(format!("gt/{id}.png"))).expect("ground truth");
    let work = to_color_space(&image, ColorSpace::Lab);
    let ch = gt.channels;
    let class: Vec<usize> = (0..image.num_pixels())
        .filter(|&i| (gt.data[i * ch] > 128.0) == fg)
        .collect();
    let step = class.len().div_ceil(MAX_FIT_SAMPLES).max(1);
    class
        .iter()
        .step_by(step)
        .flat_map(|&i| work.pixel(i).to_vec())
        .collect()
}

fn main() {
    let reps: usize = std::env::var("SEGCUT_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(9);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("photo    class  samples  threads  scratch median / min ms  warm-2 median / min ms");
    for id in ["124084", "65019", "153077"] {
        for fg in [true, false] {
            let s = samples(id, fg);
            let half: Vec<f32> = s.chunks_exact(3).step_by(2).flatten().copied().collect();
            let start = Gmm::fit(&half, 3, 5, 1.0).expect("fit");
            let mut params = Vec::new();
            for threads in [1, cores] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("thread pool");
                let mut times = Vec::new();
                let mut warm_times = Vec::new();
                let mut fitted = None;
                for _ in 0..reps.max(1) {
                    let t = Instant::now();
                    let g = pool.install(|| Gmm::fit(&s, 3, 5, 1.0).expect("fit"));
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                    fitted = Some(g);
                    let t = Instant::now();
                    let w = pool.install(|| start.refit(&s, 3, 5, 1.0, 2).expect("refit"));
                    warm_times.push(t.elapsed().as_secs_f64() * 1e3);
                    assert_eq!(w.dim(), 3);
                }
                times.sort_by(f64::total_cmp);
                warm_times.sort_by(f64::total_cmp);
                let g = fitted.expect("at least one fit");
                params.push(
                    g.components()
                        .flat_map(|(c, m, l)| {
                            std::iter::once(c)
                                .chain(m.iter().copied())
                                .chain(l.iter().copied())
                        })
                        .collect::<Vec<f64>>(),
                );
                println!(
                    "{id:<8} {:<6} {:>7}  {threads:>7}  {:>14.2} / {:>6.2}  {:>13.2} / {:>6.2}",
                    if fg { "fg" } else { "bg" },
                    s.len() / 3,
                    times[times.len() / 2],
                    times[0],
                    warm_times[warm_times.len() / 2],
                    warm_times[0]
                );
            }
            assert!(
                params.windows(2).all(|w| w[0] == w[1]),
                "{id}: the thread count changed the parameters"
            );
        }
    }
}
