//! Times the Boykov–Kolmogorov solver on the generated vision grids of `segcut::gen`.
//!
//! `cargo bench --bench bk [SPEC ...]` prints, per grid, the median of `SEGCUT_BENCH_REPS` (default
//! 3) solves through `solve_csr` on the CSR form (conversion excluded) and through the grid path
//! (`Solver::run`, its arc construction reported separately), the flow value and BK's counters.
//! Without arguments it runs a default list of 2D and 3D grids (see `DEFAULT`).
//!
//! With `SEGCUT_BENCH_DUMP=DIR`, each grid is also written to `DIR/SPEC.grid` (little-endian:
//! width, height, depth, connectivity as `u32`; then source, sink and each direction's capacities
//! as `i32` per node) so that another solver times the very same graph:
//! `python3 benches/bk_cpp.py DIR/*.grid` times the C++ BK (maxflow v3.0x via PyMaxflow).

use segcut::gen::{vision_grid, GridSpec};
use segcut::graph::GridGraph;
use segcut::maxflow::{bk::Bk, verify, Solver};
use std::time::{Duration, Instant};

const DEFAULT: &[&str] = &[
    "2d:1024x1024:n4:c10:s1",
    "2d:2048x2048:n4:c10:s1",
    "2d:1024x1024:n8:c10:s1",
    "2d:2048x2048:n8:c10:s1",
    "3d:128x128x128:n6:c10:s1",
    "3d:128x128x128:n6:c100:s1",
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn dump(dir: &str, name: &str, g: &GridGraph) -> std::io::Result<()> {
    let [w, h, d] = g.dims();
    let mut bytes = Vec::new();
    for x in [w, h, d, g.connectivity().degree()] {
        bytes.extend_from_slice(&(x as u32).to_le_bytes());
    }
    let arrays = [g.source_caps(), g.sink_caps()]
        .into_iter()
        .chain((0..g.connectivity().degree()).map(|k| g.caps(k)));
    for a in arrays {
        for &c in a {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
    }
    std::fs::write(format!("{dir}/{}.grid", name.replace(':', "_")), bytes)
}

fn main() {
    // `cargo bench` passes `--bench`; everything else is a spec.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let specs: Vec<String> = if args.is_empty() {
        DEFAULT.iter().map(|s| s.to_string()).collect()
    } else {
        args
    };
    let reps: usize = std::env::var("SEGCUT_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    println!(
        "{:<28} {:>11} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9}",
        "grid", "csr ms", "grid ms", "build ms", "flow", "augment", "orphans", "verified"
    );
    let mut bk = Bk::default();
    for spec in &specs {
        let parsed: GridSpec = match spec.parse() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{spec}: {e}");
                std::process::exit(2);
            }
        };
        let g = vision_grid(&parsed).expect("generate");
        if let Ok(dir) = std::env::var("SEGCUT_BENCH_DUMP") {
            dump(&dir, spec, &g).expect("dump");
        }
        let csr = g.to_csr().expect("csr");
        let (mut csr_t, mut grid_t, mut build_t) = (vec![], vec![], vec![]);
        let mut flow = 0;
        let mut ok = true;
        for _ in 0..reps {
            let t = Instant::now();
            let cut = bk.solve_csr(&csr).expect("solve");
            csr_t.push(t.elapsed());
            let t = Instant::now();
            let solved = bk.run((&g).into(), false).expect("solve");
            let (cut2, build) = (solved.cut, solved.stats.build);
            grid_t.push(t.elapsed() - build);
            build_t.push(build);
            ok &= cut == cut2 && verify(&g, &cut).is_ok();
            flow = cut.flow;
        }
        let stats = bk.stats();
        println!(
            "{:<28} {:>11.1} {:>10.1} {:>10.1} {:>10} {:>12} {:>9} {:>9}",
            spec,
            median(csr_t).as_secs_f64() * 1e3,
            median(grid_t).as_secs_f64() * 1e3,
            median(build_t).as_secs_f64() * 1e3,
            flow,
            stats.augmentations,
            stats.orphans,
            if ok { "yes" } else { "FAILED" }
        );
    }
}
