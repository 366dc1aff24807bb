//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// Says that a test skipped, on the test run's own output: libtest captures `eprintln!` of a
/// passing test, so the line goes to the process's stderr directly.
pub fn skipped(why: &str) {
    use std::io::Write;
    let name = std::thread::current().name().unwrap_or("test").to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {name}: {why}");
}

/// `../shared/data` beside the checkout (or `$SEGCUT_SHARED_DATA`). Returns `None` (and says so)
/// when it is missing, unless `SEGCUT_REQUIRE_DATA` is set (CI sets it): then missing data fails.
pub fn shared_data() -> Option<PathBuf> {
    let dir = std::env::var_os("SEGCUT_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var_os("SEGCUT_REQUIRE_DATA").is_some() {
        panic!(
            "shared data not found at {} (SEGCUT_REQUIRE_DATA is set)",
            dir.display()
        );
    }
    skipped(&format!(
        "shared data not found at {} (set SEGCUT_REQUIRE_DATA=1 to require it)",
        dir.display()
    ));
    None
}

/// The Waterloo crops with their `.sol` values read from the files.
pub fn waterloo_crops() -> Vec<(PathBuf, i64)> {
    let Some(data) = shared_data() else {
        return Vec::new();
    };
    ["16x16", "32x32", "64x64"]
        .iter()
        .map(|s| {
            let max = data.join(format!("waterloo/tsukuba_crop_{s}.max"));
            let sol = std::fs::read_to_string(max.with_extension("sol")).unwrap();
            let flow = sol
                .lines()
                .find_map(|l| l.strip_prefix("s "))
                .expect("s line")
                .trim()
                .parse()
                .unwrap();
            (max, flow)
        })
        .collect()
}

/// An independent reading of a DIMACS file's arcs: `(source id, sink id, arcs (u, v, cap))`.
pub fn raw_arcs(text: &str) -> (u64, u64, Vec<(u64, u64, i64)>) {
    let (mut s, mut t, mut arcs) = (0, 0, Vec::new());
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"n") if f[2] == "s" => s = f[1].parse().unwrap(),
            Some(&"n") if f[2] == "t" => t = f[1].parse().unwrap(),
            Some(&"a") => arcs.push((
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )),
            _ => {}
        }
    }
    (s, t, arcs)
}

/// The `segcut` binary: `$SEGCUT_BIN`, else the one cargo built for this test, else `.gpu/bin/segcut`
/// (test executables packed by `../shared/gpu/pack` run on another machine, from the repo root).
pub fn segcut_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SEGCUT_BIN") {
        return PathBuf::from(p);
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_segcut"));
    if built.exists() {
        return built;
    }
    // Absolute, because tests run the binary from temporary working directories.
    let packed = PathBuf::from(".gpu/bin/segcut");
    std::fs::canonicalize(&packed).unwrap_or(packed)
}

/// The repository root: where cargo built the tests, or the working directory (packed tests).
pub fn repo_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if root.join("samples").is_dir() {
        root
    } else {
        std::env::current_dir().expect("working directory")
    }
}

/// Whether a GPU is usable; false (the test skips, saying why) only when none is and none is
/// required: under `SEGCUT_REQUIRE_GPU=1` (the GPU machine's `.gpu/run`) a missing GPU fails.
pub fn gpu_or_skip() -> bool {
    match segcut::cuda::gpu_unavailable_reason() {
        None => true,
        Some(why) if std::env::var_os("SEGCUT_REQUIRE_GPU").is_some_and(|v| v != "0") => {
            panic!("SEGCUT_REQUIRE_GPU is set but no GPU is usable: {why}")
        }
        Some(why) => {
            skipped(&format!(
                "no usable GPU ({why}); set SEGCUT_REQUIRE_GPU=1 to require one"
            ));
            false
        }
    }
}

/// Asserts that a GPU solver's cut equals BK's (flow and canonical cut; `node` describes a node
/// for the message) and carries a certificate on `g`. Returns the flow.
/// Solves `net` with `solver.solve_flows` and checks the flows (capacities, conservation,
/// value) and that the cut is exactly BK's. Returns the flow value.
pub fn assert_flows(
    solver: &mut dyn segcut::maxflow::Solver,
    net: &segcut::graph::Network,
    what: &str,
) -> i64 {
    use segcut::maxflow::Solver;
    let (cut, flows) = solver
        .solve_flows(net)
        .unwrap_or_else(|e| panic!("{what}: {} flows failed: {e}", solver.name()));
    let bk = segcut::maxflow::bk::Bk::default().solve(net).unwrap();
    assert_eq!(flows.value, cut.flow, "{what}: flow value of the flows");
    segcut::maxflow::verify_flows(net, &flows).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_same_cut(net, &cut, &bk, what, |v| v.to_string())
}

pub fn assert_same_cut<G: segcut::graph::FlowNetwork>(
    g: &G,
    gpu: &segcut::maxflow::Cut,
    bk: &segcut::maxflow::Cut,
    what: &str,
    node: impl Fn(usize) -> String,
) -> i64 {
    assert_eq!(gpu.flow, bk.flow, "{what}: flow value");
    if let Some(v) = (0..bk.sink_side.len()).find(|&v| gpu.sink_side[v] != bk.sink_side[v]) {
        panic!(
            "{what}: canonical cuts differ first at node {} (gpu {}, bk {})",
            node(v),
            gpu.sink_side[v],
            bk.sink_side[v]
        );
    }
    segcut::maxflow::verify(g, gpu).unwrap_or_else(|e| panic!("{what}: certificate: {e}"));
    gpu.flow
}

/// The dev photos (sorted by id) as `(id, image path, scribbles-1 seeds path)`; empty (and said)
/// without the shared data.
pub fn dev_photos() -> Vec<(String, PathBuf, PathBuf)> {
    dev_photos_with(1)
}

/// The dev photos (sorted by id) decoded, with the seeds of scribble set `set` (1 or 2); empty
/// (and said) without the shared data.
pub fn load_dev_photos(set: u32) -> Vec<(String, segcut::segment::Image, segcut::segment::Seeds)> {
    dev_photos_with(set)
        .into_iter()
        .map(|(id, image, seeds)| {
            let image = segcut::io::load_image(&image).unwrap();
            let seeds = segcut::io::load_seeds(&seeds, image.dims, &Default::default()).unwrap();
            (id, image, seeds)
        })
        .collect()
}

/// [`dev_photos`] with the seeds of scribble set `set`.
pub fn dev_photos_with(set: u32) -> Vec<(String, PathBuf, PathBuf)> {
    let Some(data) = shared_data() else {
        return Vec::new();
    };
    let dir = data.join("segmentation/grabcut-bsds-dev");
    let mut ids: Vec<String> = std::fs::read_dir(dir.join("images"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().replace(".jpg", ""))
        .collect();
    ids.sort();
    assert!(!ids.is_empty(), "no dev photos in {}", dir.display());
    ids.into_iter()
        .map(|id| {
            let image = dir.join(format!("images/{id}.jpg"));
            let seeds = dir.join(format!("scribbles-{set}/{id}-anno.png"));
            (id, image, seeds)
        })
        .collect()
}

/// An image of `channels` values per pixel, value `i` from `f(i)`, unit spacing.
pub fn image_from(
    dims: [usize; 3],
    channels: usize,
    f: impl FnMut(usize) -> f32,
) -> segcut::io::Image {
    let n: usize = dims.iter().product();
    segcut::io::Image {
        dims,
        channels,
        data: (0..n * channels).map(f).collect(),
        spacing: [1.0; 3],
        meta: Default::default(),
    }
}

/// A textured 48×32 pair whose right view is the left shifted by `d` pixels, written as
/// `dir/left/NAME.png` and `dir/right/NAME.png`.
pub fn stereo_pair(dir: &std::path::Path, name: &str, d: u32) -> (PathBuf, PathBuf) {
    let (w, h) = (48u32, 32u32);
    let mut rng = segcut::rng::Rng::new(d as u64 + 11);
    let tex: Vec<u8> = (0..(w + d) * h).map(|_| rng.below(256) as u8).collect();
    let view = |shift: u32| {
        image::GrayImage::from_fn(w, h, |x, y| {
            image::Luma([tex[(y * (w + d) + x + shift) as usize]])
        })
    };
    let (l, r) = (
        dir.join(format!("left/{name}.png")),
        dir.join(format!("right/{name}.png")),
    );
    std::fs::create_dir_all(l.parent().unwrap()).unwrap();
    std::fs::create_dir_all(r.parent().unwrap()).unwrap();
    view(0).save(&l).unwrap();
    view(d).save(&r).unwrap();
    (l, r)
}
