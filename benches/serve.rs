//! Interactive latency of `segcut serve` (issue 26):
//!
//! - per-stroke latency of a warm session at 1280×800 (a dev photo scaled up), in the library
//!   (`Session::add_strokes`) and over HTTP (`POST /api/sessions/{id}/strokes`, mask PNG back);
//! - `POST /api/segment` of a dev photo and its scribbles on a warm server.
//!
//! ```text
//! cargo build --release && cargo bench --bench serve            # SOLVER=bk to force the CPU
//! ```
//!
//! Environment: `SEGCUT` (binary, default target/release/segcut), `DATA` (default
//! ../shared/data), `STROKES` (timed strokes, default 20), `SOLVER` (default auto).

use segcut::segment::interactive::{Session, Stroke, StrokeLabel};
use segcut::segment::SegmentOptions;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    format!(
        "median {:.1} ms, p90 {:.1} ms, min {:.1} ms (n={})",
        q(0.5),
        q(0.9),
        v[0],
        v.len()
    )
}

/// The i-th timed stroke: short strokes alternating between the two classes, inside the image.
fn stroke(i: usize, w: f64, h: f64) -> Stroke {
    let t = i as f64 / 7.0;
    let (x, y) = (
        w * (0.3 + 0.4 * (t.sin() * 0.5 + 0.5)),
        h * (0.3 + 0.4 * (t.cos() * 0.5 + 0.5)),
    );
    let fg = i.is_multiple_of(2);
    let (x, y) = if fg {
        (x, y)
    } else {
        (w * 0.03 + (i as f64 * 37.0) % (w * 0.9), h * 0.04)
    };
    Stroke {
        label: if fg {
            StrokeLabel::Foreground
        } else {
            StrokeLabel::Background
        },
        radius: 6.0,
        points: vec![[x, y], [x + 25.0, y + 10.0], [x + 40.0, y + 30.0]],
    }
}

fn main() {
    let data = PathBuf::from(std::env::var("DATA").unwrap_or_else(|_| "../shared/data".into()));
    let dev = data.join("segmentation/grabcut-bsds-dev");
    let photo = dev.join("images/124084.jpg");
    let scribbles = dev.join("scribbles-1/124084-anno.png");
    if !photo.exists() {
        eprintln!("serve bench: no {} (set DATA)", photo.display());
        return;
    }
    let n: usize = std::env::var("STROKES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let solver = std::env::var("SOLVER").unwrap_or_else(|_| "auto".into());
    let (w, h) = (1280u32, 800u32);
    let big = image::open(&photo)
        .expect("dev photo")
        .resize_exact(w, h, image::imageops::FilterType::Triangle)
        .to_rgb8();
    let mut png = Vec::new();
    big.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let data_f32: Vec<f32> = big.as_raw().iter().map(|&v| v as f32).collect();
    let img = segcut::segment::Image::new([w as usize, h as usize, 1], 3, data_f32);

    // The library: a warm session's strokes.
    let mut values = segcut::options::Values::segment();
    values.set("solver", &solver).expect("solver name");
    let opts = values.segment_options(SegmentOptions::default()).unwrap();
    let mut s = Session::new(img, opts).expect("session");
    let (wf, hf) = (w as f64, h as f64);
    s.add_strokes(&[stroke(0, wf, hf), stroke(1, wf, hf)])
        .unwrap();
    let mut times = Vec::new();
    let mut stages = (Vec::new(), Vec::new(), Vec::new());
    let mut solver_ran = String::new();
    for i in 2..2 + n {
        let t = Instant::now();
        let r = s.add_strokes(&[stroke(i, wf, hf)]).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        let cut = r.cut.expect("both classes");
        assert!(cut.warm, "stroke {i} was not warm");
        stages.0.push(cut.models_ms);
        stages.1.push(cut.graph_ms);
        stages.2.push(cut.solve_ms);
        solver_ran = cut.solver;
    }
    println!(
        "library stroke 1280x800 ({solver_ran}, warm): {}",
        stats(times)
    );
    println!("  models: {}", stats(stages.0));
    println!("  t-links: {}", stats(stages.1));
    println!("  solve + certificate: {}", stats(stages.2));

    // Over HTTP.
    let bin = std::env::var("SEGCUT").unwrap_or_else(|_| "target/release/segcut".into());
    let mut child = Command::new(&bin)
        .args(["serve", "--addr", "127.0.0.1:0", "--solver", &solver])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin}: {e} (cargo build --release first)"));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let l = lines.next().expect("server exited").unwrap();
        if let Some(a) = l.split("listening on ").nth(1) {
            break a.trim_end_matches('/').to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
    let form = |fields: &[(&str, &[u8])]| {
        let b = "bench-boundary-19af";
        let mut body = Vec::new();
        for (name, bytes) in fields {
            body.extend_from_slice(
                format!("--{b}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"f\"\r\n\r\n").as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{b}--\r\n").as_bytes());
        (format!("multipart/form-data; boundary={b}"), body)
    };
    let post = |path: &str, ct: &str, body: &[u8]| -> Vec<u8> {
        agent
            .post(format!("{base}{path}"))
            .header("Content-Type", ct)
            .send(body)
            .expect("request")
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_vec()
            .unwrap()
    };
    let (ct, body) = form(&[("image", &png)]);
    let r: serde_json::Value = serde_json::from_slice(&post("/api/sessions", &ct, &body)).unwrap();
    let id = r["id"].as_str().unwrap().to_string();
    let path = format!("/api/sessions/{id}/strokes");
    let send = |i: usize| {
        let b = serde_json::to_vec(&serde_json::json!({ "strokes": [stroke(i, wf, hf)] })).unwrap();
        post(&path, "application/json", &b)
    };
    send(0);
    send(1);
    let mut times = Vec::new();
    for i in 2..2 + n {
        let t = Instant::now();
        send(i);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("HTTP stroke 1280x800 (mask PNG back): {}", stats(times));

    let (ct, body) = form(&[
        ("image", &std::fs::read(&photo).unwrap()),
        ("seeds", &std::fs::read(&scribbles).unwrap()),
    ]);
    post("/api/segment", &ct, &body);
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        post("/api/segment", &ct, &body);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "HTTP /api/segment 124084.jpg 481x321 (warm server): {}",
        stats(times)
    );
    let _ = child.kill();
    let _ = child.wait();
}
