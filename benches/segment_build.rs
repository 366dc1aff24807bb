//! Times image → graph: colour-model fits, n-links and t-links of the segmentation energy.
//!
//! `cargo bench --bench segment_build [FILTER]` prints, per case, the median and minimum of
//! `SEGCUT_BENCH_REPS` (default 3) runs of each stage:
//!
//! - `4k-rgb`: a dev photo (`SEGCUT_DEV_DATA`, default the shared grabcut-bsds-dev folder) upscaled
//!   to 3840×2160, or a synthetic RGB image when the photo is missing; Lab, N8, 5-component GMMs;
//! - `vol-500x500x100`, `vol-512x512x256`: synthetic integer grey volumes (noisy spheres, like a
//!   scan's 8/16-bit voxels), N6 (and N26 for
//!   the smaller one), 5-component GMMs.
//!
//! Stages: `prepare` (colour-space conversion), `models` (both fits on the seeds), `nlinks`
//! (contrast β, n-link capacities, K), `tlinks` (both models on every pixel, net and clamped),
//! and `total` = all of them, which is what `segcut segment` spends before the solver starts.

use segcut::graph::Connectivity;
use segcut::rng::Rng;
use segcut::segment::color::{to_color_space, ColorSpace};
use segcut::segment::energy::{build_nlinks, set_tlinks, EnergyOptions};
use segcut::segment::model::{Model, ModelKind, ModelParams};
use segcut::segment::pipeline::build_graph;
use segcut::segment::{Image, Seed, Seeds, SegmentOptions};
use std::time::{Duration, Instant};

fn reps() -> usize {
    std::env::var("SEGCUT_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

/// A 3840×2160 RGB image: the dev photo 65019 upscaled (bilinear), or synthetic stripes.
fn photo_4k() -> Image {
    let (w, h) = (3840u32, 2160u32);
    let dir = std::env::var("SEGCUT_DEV_DATA").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/data/segmentation/grabcut-bsds-dev"
        )
        .into()
    });
    let path = std::path::Path::new(&dir).join("images/65019.jpg");
    let data: Vec<f32> = match image::open(&path) {
        Ok(img) => {
            image::imageops::resize(&img.to_rgb8(), w, h, image::imageops::FilterType::Triangle)
                .into_raw()
                .into_iter()
                .map(f32::from)
                .collect()
        }
        Err(_) => {
            eprintln!("{} not found: using a synthetic image", path.display());
            let mut rng = Rng::new(1);
            (0..(w * h) as usize * 3)
                .map(|i| {
                    ((i / 3 % w as usize / 97) as f64 * 40.0 % 255.0 + 10.0 * rng.normal()) as f32
                })
                .collect()
        }
    };
    Image {
        dims: [w as usize, h as usize, 1],
        channels: 3,
        data,
        spacing: [1.0; 3],
        meta: Default::default(),
    }
}

/// A grey volume with a few bright spheres and Gaussian noise.
fn volume(w: usize, h: usize, d: usize) -> Image {
    let mut rng = Rng::new(2);
    let spheres: Vec<([f64; 3], f64)> = (0..6)
        .map(|_| {
            let c = [
                rng.unit_f64() * w as f64,
                rng.unit_f64() * h as f64,
                rng.unit_f64() * d as f64,
            ];
            (c, (0.1 + 0.2 * rng.unit_f64()) * d as f64)
        })
        .collect();
    let mut data = Vec::with_capacity(w * h * d);
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let inside = spheres.iter().any(|&(c, r)| {
                    let (dx, dy, dz) = (x as f64 - c[0], y as f64 - c[1], z as f64 - c[2]);
                    dx * dx + dy * dy + dz * dz < r * r
                });
                let base = if inside { 180.0 } else { 90.0 };
                data.push((base + 25.0 * rng.normal()).round().max(0.0) as f32);
            }
        }
    }
    Image {
        dims: [w, h, d],
        channels: 1,
        data,
        spacing: [1.0; 3],
        meta: Default::default(),
    }
}

/// Foreground: bright pixels in a central box; background: the border of the first slice / rows.
fn seeds_for(image: &Image) -> Seeds {
    let [w, h, d] = image.dims;
    let mut s = Seeds::unknown(image.dims);
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let i = x + w * (y + h * z);
                let central = (2 * w / 5..3 * w / 5).contains(&x)
                    && (2 * h / 5..3 * h / 5).contains(&y)
                    && (2 * d / 5..=3 * d / 5).contains(&z);
                if central && (x + y) % 7 == 0 {
                    s.labels[i] = Seed::Foreground;
                } else if y < 4 || x < 4 {
                    s.labels[i] = Seed::Background;
                }
            }
        }
    }
    s
}

struct Timer {
    name: &'static str,
    runs: Vec<Duration>,
}

impl Timer {
    fn report(&self) {
        let mut r = self.runs.clone();
        r.sort();
        println!(
            "  {:8} median {:8.1} ms   min {:8.1} ms",
            self.name,
            r[r.len() / 2].as_secs_f64() * 1e3,
            r[0].as_secs_f64() * 1e3
        );
    }
}

fn bench(name: &str, image: &Image, conn: Connectivity, space: ColorSpace) {
    let seeds = seeds_for(image);
    let opts = SegmentOptions {
        connectivity: Some(conn),
        color_space: space,
        ..Default::default()
    };
    let [w, h, d] = image.dims;
    println!("{name}: {w}x{h}x{d}, {} channel(s), {conn}", image.channels);
    let mut stages: Vec<Timer> = ["prepare", "models", "nlinks", "tlinks", "total"]
        .into_iter()
        .map(|name| Timer {
            name,
            runs: Vec::new(),
        })
        .collect();
    for _ in 0..reps() {
        let t0 = Instant::now();
        let work = to_color_space(image, space);
        let t1 = Instant::now();
        let params = ModelParams::from_image(&work.data, work.channels);
        let gather = |want: Seed| -> Vec<f32> {
            (0..work.num_pixels())
                .filter(|&i| seeds.labels[i] == want)
                .flat_map(|i| work.pixel(i).to_vec())
                .collect()
        };
        let kind = ModelKind::Gmm { components: 5 };
        let fg = Model::fit(kind, &gather(Seed::Foreground), &params, "foreground").unwrap();
        let bg = Model::fit(kind, &gather(Seed::Background), &params, "background").unwrap();
        let t2 = Instant::now();
        let eopts = EnergyOptions {
            connectivity: conn,
            lambda: opts.lambda,
            ..Default::default()
        };
        let mut e = build_nlinks(&work, &eopts).unwrap();
        let t3 = Instant::now();
        set_tlinks(&mut e, &work, &seeds, &fg, &bg).unwrap();
        let t4 = Instant::now();
        for (timer, dt) in stages
            .iter_mut()
            .zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0])
        {
            timer.runs.push(dt);
        }
        drop(e);
    }
    for s in &stages {
        s.report();
    }
    // The pipeline's own entry point, once, as a cross-check of the total.
    let t = Instant::now();
    let e = build_graph(image, &seeds, &opts).unwrap();
    println!(
        "  pipeline::build_graph {:8.1} ms (K = {}, scale = {})",
        t.elapsed().as_secs_f64() * 1e3,
        e.hard,
        e.scale
    );
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let want = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    println!("threads: {}", rayon::current_num_threads());
    if want("4k-rgb") {
        bench("4k-rgb", &photo_4k(), Connectivity::N8, ColorSpace::Lab);
    }
    if want("vol-500x500x100") {
        let v = volume(500, 500, 100);
        bench("vol-500x500x100", &v, Connectivity::N6, ColorSpace::AsIs);
        bench("vol-500x500x100", &v, Connectivity::N26, ColorSpace::AsIs);
    }
    if want("vol-512x512x256") {
        bench(
            "vol-512x512x256",
            &volume(512, 512, 256),
            Connectivity::N6,
            ColorSpace::AsIs,
        );
    }
}
