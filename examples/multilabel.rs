//! Multi-label segmentation with the α-expansion engine: a synthetic image of four colour
//! regions, one short scribble per region, and the label map printed as characters.
//!
//! `cargo run --release --example multilabel`

use segcut::io::Image;
use segcut::stereo::multilabel::{multilabel, MultilabelOptions};

fn main() -> segcut::Result<()> {
    let (w, h) = (48, 24);
    // Four quadrant-ish regions with a wavy vertical boundary, colours with a little noise.
    let region = |x: usize, y: usize| -> usize {
        let wave = (3.0 * (y as f64 / 4.0).sin()) as i64;
        let left = (x as i64) < w as i64 / 2 + wave;
        match (left, y < h / 2) {
            (true, true) => 0,
            (false, true) => 1,
            (true, false) => 2,
            (false, false) => 3,
        }
    };
    let colours = [
        [200.0, 60.0, 60.0],
        [60.0, 180.0, 60.0],
        [60.0, 60.0, 200.0],
        [200.0, 200.0, 80.0],
    ];
    let mut rng = segcut::rng::Rng::new(1);
    let mut data = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            for c in colours[region(x, y)] {
                data.push((c + rng.below(41) as f32 - 20.0).clamp(0.0, 255.0));
            }
        }
    }
    let image = Image::new([w, h, 1], 3, data);
    // Seeds: 0 = unlabelled, k = label k − 1; one short horizontal stroke per region.
    let mut seeds = vec![0u16; w * h];
    for (label, (x0, y)) in [(4, 4), (36, 4), (4, 20), (36, 20)].into_iter().enumerate() {
        for x in x0..x0 + 6 {
            seeds[x + w * y] = label as u16 + 1;
        }
    }
    let result = multilabel(&image, &seeds, 4, &MultilabelOptions::default())?;
    let wrong = (0..w * h)
        .filter(|&p| result.labels[p] as usize != region(p % w, p / w))
        .count();
    for y in 0..h {
        let row: String = (0..w)
            .map(|x| ['R', 'G', 'B', 'Y'][result.labels[x + w * y] as usize])
            .collect();
        println!("{row}");
    }
    println!(
        "energy {} → {} in {} passes; {wrong} of {} pixels differ from the drawn regions",
        result.expansion.initial_energy,
        result.expansion.energy,
        result.expansion.passes.len(),
        w * h
    );
    Ok(())
}
