//! `segment::interactive`: the rasteriser against its definition, warm cuts against cuts from
//! scratch, and refine against the pipeline.

mod common;

use segcut::segment::interactive::{rasterize_stroke, Session, Stroke, StrokeLabel};
use segcut::segment::{segment, Seed, Seeds, SegmentOptions};

/// The rule written directly: every pixel against every segment, no bounding boxes.
fn painted(dims: [usize; 3], s: &Stroke) -> Vec<bool> {
    let [w, h, _] = dims;
    let mut out = vec![false; w * h];
    let pts = if s.points.len() == 1 {
        vec![s.points[0], s.points[0]]
    } else {
        s.points.clone()
    };
    for y in 0..h {
        for x in 0..w {
            let (px, py) = (x as f64 + 0.5, y as f64 + 0.5);
            out[x + w * y] = pts.windows(2).any(|ab| {
                let (a, b) = (ab[0], ab[1]);
                let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
                let len2 = dx * dx + dy * dy;
                let t = if len2 > 0.0 {
                    (((px - a[0]) * dx + (py - a[1]) * dy) / len2).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let (qx, qy) = (a[0] + t * dx, a[1] + t * dy);
                (px - qx) * (px - qx) + (py - qy) * (py - qy) <= s.radius * s.radius
            });
        }
    }
    out
}

#[test]
fn the_rasteriser_paints_what_its_rule_says() {
    let dims = [37, 23, 1];
    let mut rng = segcut::rng::Rng::new(7);
    for k in 0..300 {
        let n = 1 + (rng.next_u64() % 5) as usize;
        let coord = |r: &mut segcut::rng::Rng, m: f64| {
            (r.next_u64() % 1000) as f64 / 1000.0 * (m + 20.0) - 10.0
        };
        let points = (0..n)
            .map(|_| [coord(&mut rng, 37.0), coord(&mut rng, 23.0)])
            .collect();
        let radius = 0.3 + (rng.next_u64() % 100) as f64 / 10.0;
        let label = if k % 2 == 0 {
            StrokeLabel::Foreground
        } else {
            StrokeLabel::Background
        };
        let s = Stroke {
            label,
            radius,
            points,
        };
        let mut seeds = Seeds::unknown(dims);
        let covered = rasterize_stroke(&mut seeds, &s).unwrap();
        let want = painted(dims, &s);
        let got: Vec<bool> = seeds.labels.iter().map(|&l| l != Seed::Unknown).collect();
        assert_eq!(got, want, "stroke {s:?}");
        assert_eq!(covered, want.iter().filter(|&&p| p).count());
    }
}

#[test]
fn warm_cuts_equal_cuts_from_scratch_and_refine_equals_segment() {
    let root = common::repo_root();
    let image = segcut::io::load_image(&root.join("samples/balloon.png")).unwrap();
    let opts = SegmentOptions {
        solver: segcut::maxflow::SolverKind::Bk,
        ..Default::default()
    };
    let strokes = [
        Stroke {
            label: StrokeLabel::Foreground,
            radius: 5.0,
            points: vec![[140.0, 70.0], [160.0, 120.0]],
        },
        Stroke {
            label: StrokeLabel::Background,
            radius: 4.0,
            points: vec![[10.0, 10.0], [310.0, 10.0], [310.0, 230.0]],
        },
        Stroke {
            label: StrokeLabel::Background,
            radius: 3.0,
            points: vec![[10.0, 230.0], [10.0, 10.0]],
        },
        Stroke {
            label: StrokeLabel::Foreground,
            radius: 2.0,
            points: vec![[120.0, 100.0]],
        },
        Stroke {
            label: StrokeLabel::Background,
            radius: 6.0,
            points: vec![[40.0, 200.0], [260.0, 205.0]],
        },
    ];
    let mut warm = Session::new(image.clone(), opts.clone()).unwrap();
    let mut warm_cuts = 0;
    for k in 0..strokes.len() {
        let r = warm.add_strokes(&strokes[k..k + 1]).unwrap();
        let mut cold = Session::new(image.clone(), opts.clone()).unwrap();
        let c = cold.add_strokes(&strokes[..k + 1]).unwrap();
        assert_eq!(warm.seeds(), cold.seeds());
        assert_eq!(
            warm.mask(),
            cold.mask(),
            "stroke {k}: warm and cold masks differ"
        );
        if let (Some(a), Some(b)) = (&r.cut, &c.cut) {
            assert_eq!(a.flow, b.flow);
            assert!(!b.warm);
            warm_cuts += a.warm as usize;
        }
    }
    assert_eq!(
        warm_cuts,
        strokes.len() - 2,
        "every cut after the first was warm"
    );
    // Undo is the state without the last stroke.
    warm.undo(1).unwrap();
    let mut cold = Session::new(image.clone(), opts.clone()).unwrap();
    cold.add_strokes(&strokes[..strokes.len() - 1]).unwrap();
    assert_eq!(warm.mask(), cold.mask());

    let report = warm.refine().unwrap();
    let seg = segment(&image, warm.seeds(), &opts).unwrap();
    assert_eq!(warm.mask(), &seg.mask[..]);
    assert_eq!(report.flow, seg.flow);
    // The seed PNG reads back as the same seeds.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.png");
    std::fs::write(&p, warm.seeds_png().unwrap()).unwrap();
    let back = segcut::io::load_seeds(&p, image.dims, &Default::default()).unwrap();
    assert_eq!(&back, warm.seeds());
}

#[test]
fn bad_strokes_change_nothing() {
    let image = segcut::io::Image::new([8, 8, 1], 1, (0..64).map(|i| i as f32).collect());
    let mut s = Session::new(image, SegmentOptions::default()).unwrap();
    let good = Stroke {
        label: StrokeLabel::Foreground,
        radius: 1.0,
        points: vec![[2.0, 2.0]],
    };
    let bad = Stroke {
        label: StrokeLabel::Background,
        radius: f64::NAN,
        points: vec![[2.0, 2.0]],
    };
    assert!(s.add_strokes(&[good, bad]).is_err());
    assert_eq!(s.strokes().len(), 0);
    assert_eq!(s.seeds().counts()[0], 64);
    let inf = Stroke {
        label: StrokeLabel::Background,
        radius: 1.0,
        points: vec![[f64::INFINITY, 2.0]],
    };
    assert!(s.add_strokes(&[inf]).is_err());
}
