//! Times the Boykov–Kolmogorov solver on synthetic vision-like grids.
//!
//! `cargo bench --bench bk [FILTER]` prints, per grid, the median (and minimum) of three solves
//! (`SEGCUT_BENCH_REPS` to change) through `solve_csr` on the CSR form (conversion excluded) and
//! through `solve_grid` on the grid itself, the one-off `to_csr` time, the flow value and BK's
//! counters. The grids are made here from a piecewise-constant noisy image: n-links
//! `100·exp(−Δ²/2σ²)` (divided by the offset's length off the axes), t-links the intensity's
//! distance to the two class means. This generator only serves the solver's tuning; the crate's
//! real generators live in `segcut::gen`.
//!
//! With `SEGCUT_BENCH_DUMP=DIR`, each grid is also written to `DIR/NAME.grid` (little-endian:
//! width, height, depth, connectivity as `u32`; then source, sink and each even direction's
//! capacities as `i32` per node) so that another solver can be timed on the very same graph.

use segcut::graph::{Cap, Connectivity, GridGraph};
use segcut::maxflow::{bk::Bk, verify, Solver};
use segcut::rng::Rng;
use std::time::{Duration, Instant};

/// Intensity of background and foreground; noise standard deviation.
const MEANS: [f64; 2] = [85.0, 170.0];
const NOISE: f64 = 40.0;
/// Contrast scale σ of the n-link weights.
const SIGMA: f64 = 30.0;

/// A noisy image of random disks (spheres in 3D) on a background, then its graph.
fn vision_grid(w: usize, h: usize, d: usize, conn: Connectivity, seed: u64) -> GridGraph {
    let mut rng = Rng::new(seed);
    let n = w * h * d;
    let blobs: Vec<([f64; 3], f64)> = (0..12)
        .map(|_| {
            let c = [
                rng.unit_f64() * w as f64,
                rng.unit_f64() * h as f64,
                rng.unit_f64() * d as f64,
            ];
            (c, (0.05 + 0.15 * rng.unit_f64()) * w.min(h) as f64)
        })
        .collect();
    let mut g = GridGraph::new(w, h, d, conn).expect("valid dimensions");
    let mut image = vec![0.0f64; n];
    for (v, pixel) in image.iter_mut().enumerate() {
        let [x, y, z] = g.coords(v);
        let inside = blobs.iter().any(|&(c, r)| {
            let (dx, dy, dz) = (x as f64 - c[0], y as f64 - c[1], z as f64 - c[2]);
            dx * dx + dy * dy + dz * dz < r * r
        });
        *pixel = MEANS[inside as usize] + NOISE * rng.normal();
    }
    for (v, &i) in image.iter().enumerate() {
        let to_bg = (i - MEANS[0]).abs();
        let to_fg = (i - MEANS[1]).abs();
        // Bright pixels are cheap to leave on the source side (foreground).
        g.set_terminals(v, to_bg.round() as Cap, to_fg.round() as Cap);
    }
    for dir in 0..conn.degree() {
        let [dx, dy, dz] = conn.offsets()[dir];
        let len = ((dx * dx + dy * dy + dz * dz) as f64).sqrt();
        for v in 0..n {
            if let Some(u) = g.neighbor(v, dir) {
                let delta = image[v] - image[u];
                let weight = 100.0 * (-delta * delta / (2.0 * SIGMA * SIGMA)).exp() / len;
                g.caps_mut(dir)[v] = weight.round() as Cap;
            }
        }
    }
    g
}

fn dump(dir: &str, name: &str, g: &GridGraph) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    let [w, h, d] = g.dims();
    for x in [w, h, d, g.connectivity().degree()] {
        bytes.extend_from_slice(&(x as u32).to_le_bytes());
    }
    let mut put = |caps: &[Cap]| caps.iter().for_each(|c| bytes.extend(c.to_le_bytes()));
    put(g.source_caps());
    put(g.sink_caps());
    for dir in (0..g.connectivity().degree()).step_by(2) {
        put(g.caps(dir));
    }
    std::fs::write(format!("{dir}/{name}.grid"), bytes)
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let cases: [(&str, [usize; 3], Connectivity); 5] = [
        ("2d-n4-1mpx", [1024, 1024, 1], Connectivity::N4),
        ("2d-n4-4mpx", [2048, 2048, 1], Connectivity::N4),
        ("2d-n8-1mpx", [1024, 1024, 1], Connectivity::N8),
        ("2d-n8-4mpx", [2048, 2048, 1], Connectivity::N8),
        ("3d-n6-128", [128, 128, 128], Connectivity::N6),
    ];
    // More repetitions steady the median on a busy machine.
    let reps: usize = std::env::var("SEGCUT_BENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(3);
    println!("BK on synthetic vision grids (median of {reps} solves)");
    let mut bk = Bk::default();
    for (name, [w, h, d], conn) in cases {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let g = vision_grid(w, h, d, conn, 2004);
        if let Ok(dir) = std::env::var("SEGCUT_BENCH_DUMP") {
            if let Err(e) = dump(&dir, name, &g) {
                eprintln!("{dir}/{name}.grid: {e}");
            }
        }
        let start = Instant::now();
        let csr = g.to_csr().expect("a valid grid");
        let to_csr = start.elapsed();
        // Interleaved: solve_csr (conversion excluded), then solve_grid (the whole grid path).
        let mut csr_times: Vec<Duration> = Vec::new();
        let mut grid_times: Vec<Duration> = Vec::new();
        let mut flow = 0;
        for _ in 0..reps {
            let start = Instant::now();
            let cut = bk.solve_csr(&csr).expect("BK solves a valid graph");
            csr_times.push(start.elapsed());
            if csr_times.len() == 1 {
                verify(&g, &cut).expect("BK's cut is a minimum cut");
            }
            flow = cut.flow;
            let start = Instant::now();
            let via_grid = bk.solve_grid(&g).expect("BK solves a valid grid");
            grid_times.push(start.elapsed());
            assert_eq!(via_grid, cut, "solve_grid and solve_csr agree");
        }
        csr_times.sort();
        grid_times.sort();
        let ms = |t: Duration| t.as_secs_f64() * 1e3;
        let s = bk.stats();
        println!(
            "{name:12} {:>8} nodes {:>9} arcs  solve_csr {:7.1} ms (min {:7.1})  solve_grid {:7.1} ms (min {:7.1})  to_csr {:7.1} ms  flow {flow:>10}  augmentations {:>8}  orphans {:>8}  grown {:>8}",
            csr.num_nodes(),
            csr.num_arcs(),
            ms(csr_times[reps / 2]),
            ms(csr_times[0]),
            ms(grid_times[reps / 2]),
            ms(grid_times[0]),
            ms(to_csr),
            s.augmentations,
            s.orphans,
            s.growth_steps,
        );
    }
}
