//! Tests of the instance generators: determinism, exact structure, capacity ranges, spec strings,
//! parameter errors and the non-triviality of vision grids. No solver is used.

use segcut::gen::*;
use segcut::graph::{Cap, Connectivity, CsrGraph, FlowNetwork, GridGraph};
use segcut::{Error, Network};

// ---------------------------------------------------------------------------------------------
// Helpers

fn grid_no_seeds(spec: &GridSpec) -> GridGraph {
    let opts = VisionOptions {
        hard_seeds: 0,
        ..VisionOptions::default()
    };
    vision_grid_with(spec, &opts).unwrap()
}

fn err_text<T: std::fmt::Debug>(r: segcut::Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

/// Total capacity of the n-links leaving / entering node `v`.
fn nlink_sums(g: &GridGraph, v: usize) -> (i64, i64) {
    let mut out = 0;
    let mut inc = 0;
    for d in 0..g.connectivity().degree() {
        if let Some(w) = g.neighbor(v, d) {
            out += g.caps(d)[v] as i64;
            inc += g.caps(d ^ 1)[w] as i64;
        }
    }
    (out, inc)
}

// ---------------------------------------------------------------------------------------------
// Determinism

#[test]
fn vision_grid_is_deterministic_and_seed_dependent() {
    for text in [
        "2d:40x30:n4:c10:s5",
        "2d:33x17:n8:c100:s5",
        "3d:12x10x8:n6:c10:s5",
        "3d:9x11x7:n26:c100:s5",
    ] {
        let spec: GridSpec = text.parse().unwrap();
        let a = vision_grid(&spec).unwrap();
        let b = vision_grid(&spec).unwrap();
        assert_eq!(a, b, "{text}: two runs differ");
        let other = vision_grid(&spec.clone().with_seed(6)).unwrap();
        assert_ne!(a, other, "{text}: seeds 5 and 6 give the same graph");
        assert_eq!(vision_scene(&spec).unwrap(), vision_scene(&spec).unwrap());
    }
}

#[test]
fn genrmf_is_deterministic_and_seed_dependent() {
    let spec = GenrmfSpec {
        a: 5,
        b: 6,
        c1: 1,
        c2: 1000,
        seed: 11,
    };
    assert_eq!(genrmf(&spec).unwrap(), genrmf(&spec).unwrap());
    let other = GenrmfSpec { seed: 12, ..spec };
    assert_ne!(genrmf(&spec).unwrap(), genrmf(&other).unwrap());
}

#[test]
fn washington_is_deterministic_and_seed_dependent() {
    let spec = WashingtonSpec {
        levels: 7,
        width: 20,
        ..WashingtonSpec::default()
    };
    assert_eq!(
        washington_rlg(&spec).unwrap(),
        washington_rlg(&spec).unwrap()
    );
    let other = WashingtonSpec {
        seed: 2,
        ..spec.clone()
    };
    assert_ne!(
        washington_rlg(&spec).unwrap(),
        washington_rlg(&other).unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// Vision grids: structure and capacities

#[test]
fn vision_grid_structure() {
    for text in [
        "2d:31x23:n4:c10:s1",
        "2d:31x23:n8:c100:s2",
        "3d:11x9x7:n6:c10:s3",
        "3d:11x9x7:n26:c100:s4",
        "2d:1x1:n4:c10:s1",
        "2d:1x50:n8:c10:s1",
        "3d:1x1x20:n26:c10:s1",
    ] {
        let spec: GridSpec = text.parse().unwrap();
        let g = grid_no_seeds(&spec);
        let [w, h, d] = spec.dims;
        assert_eq!(g.dims(), spec.dims, "{text}");
        assert_eq!(g.num_nodes(), w * h * d, "{text}");
        assert_eq!(g.connectivity(), spec.conn, "{text}");
        g.validate().unwrap();
        let deg = spec.conn.degree();
        for v in 0..g.num_nodes() {
            for dir in 0..deg {
                let c = g.caps(dir)[v];
                match g.neighbor(v, dir) {
                    None => assert_eq!(c, 0, "{text}: boundary slot {v}/{dir} is {c}"),
                    Some(u) => {
                        // Symmetric, non-negative, at most scale / dist.
                        assert_eq!(c, g.caps(dir ^ 1)[u], "{text}: asymmetric n-link {v}-{u}");
                        let steps: i32 = spec.conn.offsets()[dir].iter().map(|o| o.abs()).sum();
                        let bound = (spec.scale as f64 / (steps as f64).sqrt()).round() as Cap;
                        assert!((0..=bound).contains(&c), "{text}: n-link {c} > {bound}");
                    }
                }
            }
            // Net form: at most one terminal arc per node.
            let (s, t) = (g.source_caps()[v], g.sink_caps()[v]);
            assert!(
                s >= 0 && t >= 0 && (s == 0 || t == 0),
                "{text}: node {v} has {s}, {t}"
            );
        }
        // The CSR form keeps every non-zero pair.
        let csr = g.to_csr().unwrap();
        assert_eq!(csr.num_nodes(), g.num_nodes());
    }
}

#[test]
fn vision_grid_nlinks_are_strong_inside_and_weak_across_edges() {
    let spec: GridSpec = "2d:160x120:n4:c100:s9:noise0.1".parse().unwrap();
    let scene = vision_scene(&spec).unwrap();
    let g = grid_no_seeds(&spec);
    let (mut inside, mut n_inside, mut across, mut n_across) = (0i64, 0i64, 0i64, 0i64);
    for v in 0..g.num_nodes() {
        for dir in [0, 2] {
            if let Some(u) = g.neighbor(v, dir) {
                let c = g.caps(dir)[v] as i64;
                if scene.foreground[v] == scene.foreground[u] {
                    inside += c;
                    n_inside += 1;
                } else {
                    across += c;
                    n_across += 1;
                }
            }
        }
    }
    assert!(n_across > 0, "the scene has no object edge");
    let (mean_in, mean_across) = (
        inside as f64 / n_inside as f64,
        across as f64 / n_across as f64,
    );
    assert!(
        mean_across < 0.6 * mean_in,
        "edge links {mean_across:.1} are not clearly weaker than smooth ones {mean_in:.1}"
    );
}

#[test]
fn vision_grid_scale_multiplies_nlinks_not_tlinks() {
    let s10: GridSpec = "2d:50x40:n8:c10:s3".parse().unwrap();
    let s100 = s10.clone().with_scale(100);
    let (g10, g100) = (grid_no_seeds(&s10), grid_no_seeds(&s100));
    assert_eq!(g10.source_caps(), g100.source_caps());
    assert_eq!(g10.sink_caps(), g100.sink_caps());
    let total = |g: &GridGraph| -> i64 {
        (0..8)
            .map(|d| g.caps(d).iter().map(|&c| c as i64).sum::<i64>())
            .sum()
    };
    let ratio = total(&g100) as f64 / total(&g10) as f64;
    // Rounding makes it inexact; it must still be about tenfold.
    assert!(
        (8.0..12.5).contains(&ratio),
        "c100 / c10 n-link ratio {ratio}"
    );
}

#[test]
fn vision_grid_is_not_trivial() {
    for text in [
        "2d:128x96:n4:c10:s1",
        "2d:128x96:n8:c10:s2",
        "3d:32x32x24:n6:c10:s3",
        "3d:24x24x24:n26:c10:s4",
    ] {
        let spec: GridSpec = text.parse().unwrap();
        let scene = vision_scene(&spec).unwrap();
        let g = grid_no_seeds(&spec);
        let n = g.num_nodes();
        let fg = scene.foreground.iter().filter(|&&f| f).count();
        assert!(
            fg > n / 50 && fg < n * 9 / 10,
            "{text}: {fg} of {n} nodes in objects"
        );
        let (src, snk) = (g.source_caps(), g.sink_caps());
        let source_dominant = (0..n).filter(|&v| src[v] > 0).count();
        let sink_dominant = (0..n).filter(|&v| snk[v] > 0).count();
        assert!(
            source_dominant > n / 50,
            "{text}: {source_dominant} source t-links"
        );
        assert!(
            sink_dominant > n / 50,
            "{text}: {sink_dominant} sink t-links"
        );
        // The t-links carry the objects: their sign mostly agrees with the truth, inside the
        // objects and outside...
        for label in [true, false] {
            let nodes = (0..n).filter(|&v| scene.foreground[v] == label);
            let (total, agree) = nodes.fold((0, 0), |(t, a), v| {
                (t + 1, a + usize::from((src[v] > 0) == label))
            });
            assert!(
                agree > total * 7 / 10,
                "{text}: t-link signs agree on {agree} of {total} nodes with truth {label}"
            );
        }
        let agree = (0..n)
            .filter(|&v| (src[v] > 0) == scene.foreground[v])
            .count();
        // ...but the noise makes many disagree, and many nodes are not settled by their t-link
        // alone (a node is forced to a side only if its t-link outweighs all its n-links).
        assert!(
            agree < n * 97 / 100,
            "{text}: almost no noise in the t-links"
        );
        let undecided = (0..n)
            .filter(|&v| {
                let (out, inc) = nlink_sums(&g, v);
                (src[v] as i64) < out && (snk[v] as i64) < inc
            })
            .count();
        assert!(
            undecided > n / 5,
            "{text}: only {undecided} of {n} nodes need the n-links"
        );
        // Both t-link signs appear among the nodes on either side of an object boundary.
        let mut signs = [0usize; 2];
        for v in 0..n {
            let at_boundary = (0..spec.conn.degree())
                .filter_map(|d| g.neighbor(v, d))
                .any(|u| scene.foreground[u] != scene.foreground[v]);
            if at_boundary {
                if src[v] > 0 {
                    signs[0] += 1;
                }
                if snk[v] > 0 {
                    signs[1] += 1;
                }
            }
        }
        assert!(
            signs[0] > 0 && signs[1] > 0,
            "{text}: boundary t-links {signs:?}"
        );
    }
}

#[test]
fn vision_grid_hard_seeds_sit_in_the_truth_and_outweigh_nlinks() {
    let spec: GridSpec = "2d:96x96:n8:c100:s4".parse().unwrap();
    let scene = vision_scene(&spec).unwrap();
    let opts = VisionOptions {
        hard_seeds: 3,
        ..VisionOptions::default()
    };
    let g = vision_grid_with(&spec, &opts).unwrap();
    let plain = grid_no_seeds(&spec);
    let (mut fg_seeds, mut bg_seeds) = (0, 0);
    for v in 0..g.num_nodes() {
        let (s, t) = (g.source_caps()[v], g.sink_caps()[v]);
        if (s, t) == (plain.source_caps()[v], plain.sink_caps()[v]) {
            continue;
        }
        let (out, inc) = nlink_sums(&g, v);
        if s > 0 {
            assert!(scene.foreground[v], "source seed {v} outside the objects");
            assert!(
                s as i64 > out + inc,
                "seed {v}: {s} does not outweigh {out} + {inc}"
            );
            fg_seeds += 1;
        } else {
            assert!(!scene.foreground[v], "sink seed {v} inside an object");
            assert!(
                t as i64 > out + inc,
                "seed {v}: {t} does not outweigh {out} + {inc}"
            );
            bg_seeds += 1;
        }
    }
    assert!(
        fg_seeds > 0 && bg_seeds > 0,
        "seeds: {fg_seeds} fg, {bg_seeds} bg"
    );
    // The default options place seeds too; zero seeds changes nothing but the seeds.
    assert_eq!(vision_grid(&spec).unwrap().caps(0), plain.caps(0));
    assert_ne!(vision_grid(&spec).unwrap(), plain);
}

#[test]
fn vision_grid_from_scene_matches_and_checks_the_scene() {
    let spec: GridSpec = "2d:20x10:n4:c10:s2".parse().unwrap();
    let scene = vision_scene(&spec).unwrap();
    let opts = VisionOptions::default();
    assert_eq!(
        grid_from_scene(&spec, &scene, &opts).unwrap(),
        vision_grid(&spec).unwrap()
    );
    let wrong = GridSpec::new_2d(10, 20, Connectivity::N4);
    let msg = err_text(grid_from_scene(&wrong, &scene, &opts));
    assert!(msg.contains("scene"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// GENRMF

/// Checks a GENRMF graph against the construction, from the graph alone; returns the
/// inter-frame arcs `(tail, head, cap)` in global numbering (source 0, sink a²b − 1).
fn check_genrmf(spec: &GenrmfSpec) -> Vec<(usize, usize, Cap)> {
    let g = genrmf(spec).unwrap();
    let GenrmfSpec { a, b, c1, c2, .. } = *spec;
    let frame = a * a;
    let total = frame * b;
    let (src, snk) = (0usize, total - 1);
    let big = c2 * (a * a) as Cap;
    let tag = format!("{spec}");
    assert_eq!(g.num_nodes(), total - 2, "{tag}");
    let frame_of = |x: usize| x / frame;
    let in_frame_neighbours = |x: usize| {
        let (i, j) = ((x % frame) / a, x % a);
        let mut out = Vec::new();
        if j > 0 {
            out.push(x - 1);
        }
        if j + 1 < a {
            out.push(x + 1);
        }
        if i > 0 {
            out.push(x - a);
        }
        if i + 1 < a {
            out.push(x + a);
        }
        out
    };
    // Inter-frame arcs as (tail, head, cap), in global numbering with terminals.
    let mut inter: Vec<(usize, usize, Cap)> = Vec::new();
    let mut in_frame_arcs = 0;
    for v in 0..g.num_nodes() {
        let x = v + 1;
        let mut same_frame_heads = Vec::new();
        for arc in g.arcs_of(v) {
            let y = g.heads()[arc] as usize + 1;
            let c = g.caps()[arc];
            let back = g.caps()[g.sisters()[arc] as usize];
            if frame_of(y) == frame_of(x) {
                assert_eq!((c, back), (big, big), "{tag}: in-frame pair {x}-{y}");
                same_frame_heads.push(y);
                in_frame_arcs += 1;
            } else if frame_of(y) == frame_of(x) + 1 {
                assert!((c1..=c2).contains(&c), "{tag}: inter-frame cap {c}");
                assert_eq!(back, 0, "{tag}: inter-frame reverse");
                inter.push((x, y, c));
            } else {
                assert_eq!(
                    frame_of(x),
                    frame_of(y) + 1,
                    "{tag}: arc {x}->{y} skips a frame"
                );
                assert_eq!(c, 0, "{tag}: backward arc {x}->{y} has capacity");
            }
        }
        let mut expected: Vec<usize> = in_frame_neighbours(x)
            .into_iter()
            .filter(|&y| y != src && y != snk)
            .collect();
        expected.sort();
        same_frame_heads.sort();
        assert_eq!(
            same_frame_heads, expected,
            "{tag}: in-frame neighbours of {x}"
        );
        // Terminal arcs: in-frame ones carry `big`, inter-frame ones [c1, c2].
        for (cap, term, is_source) in [
            (g.source_caps()[v], src, true),
            (g.sink_caps()[v], snk, false),
        ] {
            if in_frame_neighbours(x).contains(&term) {
                assert_eq!(cap, big, "{tag}: terminal arc of {x}");
            } else if cap != 0 {
                assert!((c1..=c2).contains(&cap), "{tag}: terminal arc {cap} of {x}");
                inter.push(if is_source {
                    (src, x, cap)
                } else {
                    (x, snk, cap)
                });
            }
        }
    }
    if g.constant_flow() != 0 {
        assert!((c1 as i64..=c2 as i64).contains(&g.constant_flow()));
        inter.push((src, snk, g.constant_flow() as Cap));
    }
    let in_frame_pairs = if a >= 2 { 2 * a * (a - 1) * b - 4 } else { 0 };
    assert_eq!(in_frame_arcs, 2 * in_frame_pairs, "{tag}: in-frame arcs");
    // Inter-frame: exactly a permutation between each pair of consecutive frames.
    assert_eq!(inter.len(), frame * (b - 1), "{tag}: inter-frame arcs");
    let mut out_seen = vec![0u32; total];
    let mut in_seen = vec![0u32; total];
    for &(x, y, _) in &inter {
        assert_eq!(frame_of(y), frame_of(x) + 1);
        out_seen[x] += 1;
        in_seen[y] += 1;
    }
    for x in 0..total {
        assert_eq!(
            out_seen[x],
            u32::from(frame_of(x) + 1 < b),
            "{tag}: out of {x}"
        );
        assert_eq!(in_seen[x], u32::from(frame_of(x) > 0), "{tag}: into {x}");
    }
    let csr_inter = inter
        .iter()
        .filter(|&&(x, y, _)| x != src && y != snk)
        .count();
    assert_eq!(
        g.num_arcs(),
        2 * (in_frame_pairs + csr_inter),
        "{tag}: arc count"
    );
    inter
}

#[test]
fn genrmf_structure() {
    for (a, b, seed) in [
        (2, 3, 1),
        (2, 1, 8),
        (5, 4, 2),
        (4, 1, 3),
        (1, 6, 4),
        (1, 2, 5),
        (3, 2, 6),
        (7, 9, 7),
    ] {
        check_genrmf(&GenrmfSpec {
            a,
            b,
            c1: 3,
            c2: 40,
            seed,
        });
    }
}

#[test]
fn genrmf_draws_a_new_permutation_per_frame_pair() {
    let (a, b) = (6, 5);
    let frame = a * a;
    let inter = check_genrmf(&GenrmfSpec {
        a,
        b,
        c1: 1,
        c2: 9,
        seed: 4,
    });
    // perm[k][p] = position in frame k + 1 reached from position p of frame k.
    let mut perm = vec![vec![usize::MAX; frame]; b - 1];
    for (x, y, _) in inter {
        perm[x / frame][x % frame] = y % frame;
    }
    for k in 1..b - 1 {
        assert_ne!(
            perm[k], perm[0],
            "frame pairs 0 and {k} use the same permutation"
        );
    }
    assert!(perm
        .iter()
        .any(|p| p.iter().enumerate().any(|(i, &j)| i != j)));
}

#[test]
fn genrmf_capacities_cover_their_range() {
    let spec = GenrmfSpec {
        a: 6,
        b: 8,
        c1: 10,
        c2: 13,
        seed: 1,
    };
    let g = genrmf(&spec).unwrap();
    let mut seen = [false; 4];
    for &c in g.caps() {
        if (10..=13).contains(&c) {
            seen[(c - 10) as usize] = true;
        }
    }
    assert_eq!(seen, [true; 4], "some inter-frame capacity never drawn");
}

#[test]
fn genrmf_presets() {
    for x in 6..=21 {
        for spec in [
            GenrmfSpec::long(x, 1).unwrap(),
            GenrmfSpec::wide(x, 1).unwrap(),
        ] {
            spec.check().unwrap();
            let n = spec.num_nodes().unwrap() as f64;
            let target = (1u64 << x) as f64;
            assert!(
                n > target / 2.0 && n < target * 2.0,
                "{spec}: {n} nodes for 2^{x}"
            );
            assert!(
                spec.c1 == 1 && spec.c2 > 5000 && spec.c2 <= 10_000,
                "{spec}"
            );
        }
        let (long, wide) = (
            GenrmfSpec::long(x, 1).unwrap(),
            GenrmfSpec::wide(x, 1).unwrap(),
        );
        assert!(long.b > long.a && wide.a > wide.b, "{long} / {wide}");
    }
    assert!(GenrmfSpec::long(22, 1).is_err() && GenrmfSpec::wide(5, 1).is_err());
    // The largest wide preset sits at the capacity limit and must still build.
    let g = genrmf(&GenrmfSpec::wide(21, 3).unwrap()).unwrap();
    assert!(g.num_nodes() > 2_000_000);
}

// ---------------------------------------------------------------------------------------------
// Washington RLG

fn check_rlg(spec: &WashingtonSpec) -> CsrGraph {
    let g = washington_rlg(spec).unwrap();
    let WashingtonSpec {
        levels,
        width,
        degree,
        max_cap,
        ..
    } = *spec;
    let tag = format!("{spec}");
    assert_eq!(g.num_nodes(), levels * width, "{tag}");
    assert_eq!(g.num_arcs(), 2 * (levels - 1) * width * degree, "{tag}");
    assert_eq!(g.constant_flow(), 0);
    let mut in_sum = vec![0i64; g.num_nodes()];
    for v in 0..g.num_nodes() {
        let level = v / width;
        let mut heads = Vec::new();
        let mut out_sum = 0i64;
        for arc in g.arcs_of(v) {
            let u = g.heads()[arc] as usize;
            let c = g.caps()[arc];
            if u / width == level + 1 {
                assert!((1..=max_cap).contains(&c), "{tag}: cap {c}");
                assert_eq!(g.caps()[g.sisters()[arc] as usize], 0);
                heads.push(u);
                out_sum += c as i64;
                in_sum[u] += c as i64;
            } else {
                assert_eq!(u / width + 1, level, "{tag}: arc {v}->{u} skips a level");
                assert_eq!(c, 0, "{tag}: backward arc with capacity");
            }
        }
        let expected_out = if level + 1 < levels { degree } else { 0 };
        assert_eq!(heads.len(), expected_out, "{tag}: out-degree of {v}");
        heads.sort();
        heads.dedup();
        assert_eq!(heads.len(), expected_out, "{tag}: repeated head at {v}");
        let s = g.source_caps()[v] as i64;
        assert_eq!(
            s,
            if level == 0 { out_sum } else { 0 },
            "{tag}: source arc of {v}"
        );
    }
    for (v, &sum) in in_sum.iter().enumerate() {
        let expected = if v / width == levels - 1 { sum } else { 0 };
        assert_eq!(g.sink_caps()[v] as i64, expected, "{tag}: sink arc of {v}");
    }
    g
}

#[test]
fn washington_structure() {
    for (levels, width, degree) in [
        (2, 1, 1),
        (5, 10, 3),
        (9, 4, 4),
        (3, 7, 5),
        (20, 50, 3),
        (4, 30, 1),
    ] {
        check_rlg(&WashingtonSpec {
            levels,
            width,
            degree,
            max_cap: 100,
            seed: 3,
        });
    }
}

#[test]
fn washington_capacities_cover_their_range() {
    let g = check_rlg(&WashingtonSpec {
        levels: 10,
        width: 10,
        degree: 3,
        max_cap: 5,
        seed: 8,
    });
    let mut seen = [false; 5];
    for &c in g.caps().iter().filter(|&&c| c > 0) {
        seen[(c - 1) as usize] = true;
    }
    assert_eq!(seen, [true; 5]);
}

#[test]
fn washington_presets() {
    for x in 6..=21 {
        let (long, wide) = (
            WashingtonSpec::long(x, 1).unwrap(),
            WashingtonSpec::wide(x, 1).unwrap(),
        );
        for spec in [&long, &wide] {
            spec.check().unwrap();
            assert_eq!(spec.num_nodes(), Some(1 << x), "{spec}");
        }
        assert!(long.levels > long.width && wide.width > wide.levels);
    }
    assert!(WashingtonSpec::long(5, 1).is_err() && WashingtonSpec::wide(22, 1).is_err());
    check_rlg(&WashingtonSpec::long(12, 5).unwrap());
    check_rlg(&WashingtonSpec::wide(12, 5).unwrap());
}

// ---------------------------------------------------------------------------------------------
// Spec strings

#[test]
fn grid_spec_parsing() {
    let s: GridSpec = "2d:1024x1024:n4:c10:s1".parse().unwrap();
    assert_eq!(
        s,
        GridSpec::new_2d(1024, 1024, Connectivity::N4).with_seed(1)
    );
    let s: GridSpec = "3d:128x128x128:n6:c100:s7".parse().unwrap();
    assert_eq!(
        s,
        GridSpec::new_3d(128, 128, 128, Connectivity::N6)
            .with_scale(100)
            .with_seed(7)
    );
    // Defaults, option order, noise.
    let s: GridSpec = "3d:4x5x6".parse().unwrap();
    assert_eq!(
        (s.conn, s.scale, s.seed, s.noise),
        (Connectivity::N6, 10, 1, 0.2)
    );
    assert_eq!(s.dims, [4, 5, 6]);
    let s: GridSpec = "2d:8x9:noise0.05:s3:n8".parse().unwrap();
    assert_eq!((s.conn, s.seed, s.noise), (Connectivity::N8, 3, 0.05));
    assert_eq!(GridSpec::default().to_string(), "2d:256x256:n4:c10:s1");
    // Round trips through the canonical text.
    for text in [
        "2d:1024x1024:n4:c10:s1",
        "3d:128x128x128:n26:c100:s18446744073709551615",
        "2d:3x7:n8:c1:s0:noise0.125",
    ] {
        let s: GridSpec = text.parse().unwrap();
        assert_eq!(s.to_string(), text);
        assert_eq!(s.to_string().parse::<GridSpec>().unwrap(), s);
    }
}

#[test]
fn grid_spec_parse_errors() {
    for (text, needle) in [
        ("", "expected '2d' or '3d'"),
        ("4d:3x3", "starts with '4d'"),
        ("2d", "missing size"),
        ("2d:10", "should be WxH"),
        ("2d:10x10x10", "should be WxH"),
        ("3d:10x10", "should be WxHxD"),
        ("2d:10xq", "'q' is not a whole number"),
        ("2d:-1x5", "'-1' is not a whole number"),
        ("2d:10x10:n6", "not one of n4, n8"),
        ("3d:4x4x4:n8", "not one of n6, n26"),
        ("2d:10x10:n", "unknown option 'n'"),
        ("2d:10x10:x3", "unknown option 'x3'"),
        ("2d:10x10:c1:c2", "option 'c' given twice"),
        ("2d:10x10:cx", "scale 'cx'"),
        ("2d:10x10:s-3", "seed 's-3'"),
        ("2d:10x10:noiseabc", "noise 'noiseabc'"),
        ("2d:10x10:noiseinf", "noise 'noiseinf'"),
    ] {
        let err = text.parse::<GridSpec>().expect_err(text);
        let msg = err.to_string();
        assert!(matches!(err, Error::Input { .. }), "{text}: {err:?}");
        assert!(msg.contains(needle), "{text}: '{msg}' lacks '{needle}'");
        assert!(msg.starts_with(&format!("grid spec '{text}'")), "{msg}");
    }
}

#[test]
fn family_spec_parsing() {
    let g: GenrmfSpec = "genrmf:a16:b64:c1-10000:s3".parse().unwrap();
    assert_eq!(
        g,
        GenrmfSpec {
            a: 16,
            b: 64,
            c1: 1,
            c2: 10000,
            seed: 3
        }
    );
    assert_eq!(g.to_string(), "genrmf:a16:b64:c1-10000:s3");
    let g: GenrmfSpec = "genrmf:b2:a3".parse().unwrap();
    assert_eq!((g.a, g.b, g.c1, g.c2, g.seed), (3, 2, 1, 10000, 1));
    let w: WashingtonSpec = "rlg:64x1024:d3:m10000:s2".parse().unwrap();
    assert_eq!(
        w,
        WashingtonSpec {
            levels: 64,
            width: 1024,
            degree: 3,
            max_cap: 10000,
            seed: 2
        }
    );
    assert_eq!(w.to_string(), "rlg:64x1024:d3:m10000:s2");
    let w: WashingtonSpec = "rlg:5x6:s9".parse().unwrap();
    assert_eq!((w.levels, w.width, w.degree, w.seed), (5, 6, 3, 9));

    for (text, needle) in [
        ("genrmf:a3", "missing the frame count"),
        ("genrmf:b3", "missing the frame side"),
        ("genrmf:a3:b3:c5", "should be cC1-C2"),
        ("genrmf:a3:b3:c5-x", "'x' is not a capacity"),
        ("genrmf:a3:b3:c1-3000000000", "is not a capacity"),
        ("genrmf:a3:a4:b3", "given twice"),
        ("genrmf:a3:b3:z1", "unknown option 'z1'"),
        ("gen:a3:b3", "start with 'genrmf:'"),
    ] {
        let msg = err_text(text.parse::<GenrmfSpec>());
        assert!(msg.contains(needle), "{text}: '{msg}' lacks '{needle}'");
    }
    for (text, needle) in [
        ("rlg", "missing the size"),
        ("rlg:10", "should be LEVELSxWIDTH"),
        ("rlg:ax3", "level count 'a'"),
        ("rlg:3x3:d", "unknown option 'd'"),
        ("rlg:3x3:d2:d3", "given twice"),
        ("rlg:3x3:m-", "max_cap '-'"),
        ("wash:3x3", "start with 'rlg:'"),
    ] {
        let msg = err_text(text.parse::<WashingtonSpec>());
        assert!(msg.contains(needle), "{text}: '{msg}' lacks '{needle}'");
    }
}

#[test]
fn instance_spec_parsing_and_generation() {
    let cases: [(&str, usize); 7] = [
        ("2d:12x10:n8:c100:s2", 120),
        ("3d:4x5x6:n26", 120),
        ("genrmf:a3:b4:c2-9:s1", 34),
        ("genrmf-long:8:s2", 4 * 4 * 16 - 2),
        ("genrmf-wide:10", 16 * 16 * 4 - 2),
        ("rlg-long:9:s4", 512),
        ("rlg:3x40", 120),
    ];
    for (text, nodes) in cases {
        let spec: InstanceSpec = text.parse().unwrap();
        let net = generate(&spec).unwrap();
        assert_eq!(net.num_nodes(), nodes, "{text}");
        assert_eq!(
            matches!(net, Network::Grid(_)),
            text.starts_with(['2', '3']),
            "{text}"
        );
        // The written-out form names the same instance.
        let again: InstanceSpec = spec.to_string().parse().unwrap();
        assert_eq!(again, spec, "{text}");
    }
    let spec: InstanceSpec = "rlg-wide:12:s3".parse().unwrap();
    assert_eq!(
        spec,
        InstanceSpec::Washington(WashingtonSpec::wide(12, 3).unwrap())
    );
    for (text, needle) in [
        ("mesh:3", "unknown family 'mesh'"),
        ("genrmf-long", "missing the size"),
        ("genrmf-long:x", "size 'x'"),
        ("rlg-wide:12:q", "'q' is not a seed"),
        ("rlg-wide:12:s1:s2", "unexpected field 's2'"),
        ("rlg-long:30", "must be in 6..=21"),
        ("2d:4", "grid spec '2d:4'"),
    ] {
        let msg = err_text(text.parse::<InstanceSpec>());
        assert!(msg.contains(needle), "{text}: '{msg}' lacks '{needle}'");
    }
}

// ---------------------------------------------------------------------------------------------
// Parameter errors

#[test]
fn vision_parameter_errors() {
    let base = GridSpec::new_2d(8, 8, Connectivity::N4);
    let cases: Vec<(GridSpec, &str)> = vec![
        (
            GridSpec::new_2d(0, 8, Connectivity::N4),
            "dimensions must be positive",
        ),
        (
            GridSpec::new_3d(4, 4, 0, Connectivity::N6),
            "dimensions must be positive",
        ),
        (
            GridSpec::new_3d(4, 4, 3, Connectivity::N8),
            "2D connectivity but the depth is 3",
        ),
        (base.clone().with_scale(0), "scale must be in 1..="),
        (
            base.clone().with_scale(MAX_SCALE + 1),
            "scale must be in 1..=",
        ),
        (base.clone().with_noise(-0.1), "noise must be in"),
        (base.clone().with_noise(f64::NAN), "noise must be in"),
        (base.clone().with_noise(5.0), "noise must be in"),
        (
            GridSpec::new_3d(usize::MAX / 2, 4, 4, Connectivity::N6),
            "more than",
        ),
        (
            GridSpec::new_3d(1 << 20, 1 << 20, 1 << 20, Connectivity::N26),
            "more than",
        ),
    ];
    for (spec, needle) in cases {
        let err = vision_grid(&spec).expect_err(needle);
        assert!(matches!(err, Error::Graph(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "'{err}' lacks '{needle}'");
        assert!(vision_scene(&spec).is_err());
    }
    // The memory limit: 512³ N26 fits the default, 1024³ does not; a lower limit is honoured and
    // the message names the bytes needed.
    let big = GridSpec::new_3d(512, 512, 512, Connectivity::N26);
    big.check(DEFAULT_MEMORY_LIMIT).unwrap();
    let bytes = big.memory_bytes().unwrap();
    assert_eq!(bytes, 512u64.pow(3) * (28 * 4 + 2));
    let huge = GridSpec::new_3d(1024, 1024, 1024, Connectivity::N6);
    let msg = err_text(vision_grid(&huge));
    let need = huge.memory_bytes().unwrap();
    assert!(msg.contains(&format!("needs about {need} bytes")), "{msg}");
    assert!(
        msg.contains(&format!("limit of {DEFAULT_MEMORY_LIMIT} bytes")),
        "{msg}"
    );
    let opts = VisionOptions {
        memory_limit: 1000,
        ..VisionOptions::default()
    };
    let small = GridSpec::new_2d(16, 16, Connectivity::N8);
    let msg = err_text(vision_grid_with(&small, &opts));
    assert!(
        msg.contains(&format!("{} bytes", small.memory_bytes().unwrap())),
        "{msg}"
    );
    assert!(vision_grid_with(&GridSpec::new_2d(4, 4, Connectivity::N8), &opts).is_ok());
}

#[test]
fn genrmf_parameter_errors() {
    let ok = GenrmfSpec {
        a: 4,
        b: 4,
        c1: 1,
        c2: 100,
        seed: 1,
    };
    let cases: Vec<(GenrmfSpec, &str)> = vec![
        (GenrmfSpec { a: 0, ..ok.clone() }, "must be positive"),
        (GenrmfSpec { b: 0, ..ok.clone() }, "must be positive"),
        (
            GenrmfSpec {
                a: 1,
                b: 1,
                ..ok.clone()
            },
            "single node",
        ),
        (
            GenrmfSpec {
                c1: 0,
                ..ok.clone()
            },
            "c1 must be at least 1",
        ),
        (
            GenrmfSpec {
                c1: -5,
                ..ok.clone()
            },
            "c1 must be at least 1",
        ),
        (
            GenrmfSpec {
                c1: 101,
                ..ok.clone()
            },
            "c1=101 is greater than c2=100",
        ),
        (
            GenrmfSpec {
                a: 1 << 20,
                b: 1 << 20,
                ..ok.clone()
            },
            "more than",
        ),
        (
            GenrmfSpec {
                a: 30_000,
                b: 2,
                c1: 1,
                c2: 1,
                seed: 1,
            },
            "arcs",
        ),
    ];
    for (spec, needle) in cases {
        let err = genrmf(&spec).expect_err(needle);
        assert!(matches!(err, Error::Graph(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "'{err}' lacks '{needle}'");
    }
    // c2·a² (twice that per pair) must fit i32.
    let over = GenrmfSpec {
        a: 100,
        c2: 200_000,
        ..ok.clone()
    };
    let err = genrmf(&over).unwrap_err();
    assert!(matches!(err, Error::Overflow(_)), "{err:?}");
    assert!(
        err.to_string().contains("c2·a² = 200000·100² = 2000000000"),
        "{err}"
    );
    // Just inside the limit builds.
    let edge = GenrmfSpec {
        a: 2,
        b: 3,
        c1: 1,
        c2: Cap::MAX / 8,
        seed: 1,
    };
    check_genrmf(&edge);
}

#[test]
fn washington_parameter_errors() {
    let ok = WashingtonSpec {
        levels: 4,
        width: 5,
        ..WashingtonSpec::default()
    };
    let cases: Vec<(WashingtonSpec, &str)> = vec![
        (
            WashingtonSpec {
                levels: 1,
                ..ok.clone()
            },
            "at least 2 levels",
        ),
        (
            WashingtonSpec {
                levels: 0,
                ..ok.clone()
            },
            "at least 2 levels",
        ),
        (
            WashingtonSpec {
                width: 0,
                ..ok.clone()
            },
            "at least 2 levels and 1 node",
        ),
        (
            WashingtonSpec {
                degree: 0,
                ..ok.clone()
            },
            "degree must be in 1..=5",
        ),
        (
            WashingtonSpec {
                degree: 6,
                ..ok.clone()
            },
            "degree must be in 1..=5",
        ),
        (
            WashingtonSpec {
                max_cap: 0,
                ..ok.clone()
            },
            "max_cap must be at least 1",
        ),
        (
            WashingtonSpec {
                levels: 1 << 20,
                width: 1 << 20,
                ..ok.clone()
            },
            "more than",
        ),
        (
            WashingtonSpec {
                levels: 1 << 16,
                width: 1 << 14,
                degree: 3,
                ..ok.clone()
            },
            "arcs",
        ),
    ];
    for (spec, needle) in cases {
        let err = washington_rlg(&spec).expect_err(needle);
        assert!(matches!(err, Error::Graph(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "'{err}' lacks '{needle}'");
    }
    let over = WashingtonSpec {
        max_cap: Cap::MAX / 2,
        ..ok
    };
    let err = washington_rlg(&over).unwrap_err();
    assert!(matches!(err, Error::Overflow(_)), "{err:?}");
}

#[test]
fn grids_report_connectivity_in_network_kind() {
    let net = generate(&"3d:5x4x3:n26:c10:s1".parse().unwrap()).unwrap();
    assert_eq!(net.kind(), "grid 5x4x3 N26");
}
