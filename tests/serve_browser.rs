//! The scribble page in a real browser: headless Chromium, driven over WebDriver (chromedriver,
//! plain JSON over HTTP), loads the sample, paints strokes with the mouse, refines, and the mask
//! it offers for download must equal the command line's on the seed image the server holds,
//! whose seeds must equal the ones the page painted (one rasteriser rule on both sides).
//! Screenshots go to `target/serve-browser/`.
//!
//! Skips when Chromium or chromedriver is missing, unless `SEGCUT_REQUIRE_BROWSER=1` (set by
//! `.ci/run`): then a missing browser fails.

mod common;
mod serve_util;

use serde_json::{json, Value};
use serve_util::{cli_mask, Server};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

struct Driver {
    child: Child,
    base: String,
    session: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = agent()
            .delete(format!("{}/session/{}", self.base, self.session))
            .call();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn read_json(mut r: ureq::http::Response<ureq::Body>) -> Value {
    let body = r
        .body_mut()
        .with_config()
        .limit(1 << 28)
        .read_to_vec()
        .expect("body");
    serde_json::from_slice(&body).expect("WebDriver JSON")
}

impl Driver {
    fn start(chromium: &Path, chromedriver: &Path) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let t = Instant::now();
        while agent().get(format!("{base}/status")).call().is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({ "capabilities": { "alwaysMatch": { "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=900,700", "--force-device-scale-factor=1"]
        }}}});
        let r = read_json(
            agent()
                .post(format!("{base}/session"))
                .send(serde_json::to_vec(&caps).unwrap().as_slice())
                .expect("new session"),
        );
        let session = r["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {r}"))
            .to_string();
        Driver {
            child,
            base,
            session,
        }
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let r = read_json(
            agent()
                .post(format!("{}/session/{}{path}", self.base, self.session))
                .send(serde_json::to_vec(&body).unwrap().as_slice())
                .expect("WebDriver request"),
        );
        if r["value"].get("error").is_some() {
            panic!("WebDriver {path}: {r}");
        }
        r["value"].clone()
    }

    fn element(&self, css: &str) -> Value {
        let v = self.post("/element", json!({ "using": "css selector", "value": css }));
        let mut m = serde_json::Map::new();
        assert!(v.get(ELEMENT).is_some(), "element {css}: {v}");
        m.insert(ELEMENT.to_string(), v[ELEMENT].clone());
        Value::Object(m)
    }

    fn click(&self, css: &str) {
        let id = self.element(css)[ELEMENT].as_str().unwrap().to_string();
        self.post(&format!("/element/{id}/click"), json!({}));
    }

    fn script(&self, src: &str) -> Value {
        self.post("/execute/sync", json!({ "script": src, "args": [] }))
    }

    fn wait_idle(&self) {
        let t = Instant::now();
        loop {
            let v = self.script(
                "return [window.segcut.inFlight, document.getElementById('status').dataset.state, \
                 document.getElementById('status').textContent];",
            );
            assert_ne!(v[1], "error", "the page reports an error: {v}");
            if v[0] == 0 && v[1] == "idle" {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the page stays busy: {v}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Drags the mouse through `points` (image pixels; the canvas shows the image at 1:1).
    fn stroke(&self, canvas: &Value, size: (i64, i64), points: &[(i64, i64)]) {
        let at = |(x, y): (i64, i64)| {
            json!({ "type": "pointerMove", "duration": 0, "origin": canvas,
                    "x": x - size.0 / 2, "y": y - size.1 / 2 })
        };
        let mut actions = vec![at(points[0]), json!({ "type": "pointerDown", "button": 0 })];
        for &p in &points[1..] {
            actions.push(at(p));
        }
        actions.push(json!({ "type": "pointerUp", "button": 0 }));
        self.post(
            "/actions",
            json!({ "actions": [{ "type": "pointer", "id": "mouse",
                "parameters": { "pointerType": "mouse" }, "actions": actions }] }),
        );
        self.wait_idle();
    }

    fn screenshot(&self, to: &Path) {
        let r = read_json(
            agent()
                .get(format!("{}/session/{}/screenshot", self.base, self.session))
                .call()
                .expect("screenshot"),
        );
        let png = base64(r["value"].as_str().expect("base64 PNG"));
        std::fs::write(to, png).expect("write screenshot");
    }
}

/// Standard base64 (the screenshot's encoding).
fn base64(text: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= (val(c) as u32) << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

#[test]
fn the_page_paints_refines_and_matches_the_command_line() {
    let chromium = find_program(&["chromium", "chromium-browser", "google-chrome"]);
    let driver = find_program(&["chromedriver"]);
    let (Some(chromium), Some(chromedriver)) = (chromium, driver) else {
        assert!(
            std::env::var_os("SEGCUT_REQUIRE_BROWSER").is_none(),
            "SEGCUT_REQUIRE_BROWSER is set but chromium / chromedriver are missing \
             (apt-get install chromium chromium-driver)"
        );
        common::skipped("no chromium and chromedriver");
        return;
    };
    let shots = common::repo_root().join("target/serve-browser");
    std::fs::create_dir_all(&shots).unwrap();
    let server = Server::start(&["--solver", "bk"]);
    let d = Driver::start(&chromium, &chromedriver);
    d.post("/url", json!({ "url": format!("{}/", server.base) }));
    let image = common::repo_root().join("samples/balloon.png");
    let file = d.element("#file");
    let id = file[ELEMENT]
        .as_str()
        .unwrap_or_else(|| panic!("no element: {file}"))
        .to_string();
    d.post(
        &format!("/element/{id}/value"),
        json!({ "text": image.canonicalize().unwrap().to_str().unwrap() }),
    );
    d.wait_idle();
    let canvas = d.element("#seeds");
    let size = (320, 240);

    // Foreground through the balloon, background around the border and under it.
    d.click("#fg");
    d.stroke(
        &canvas,
        size,
        &[(135, 60), (150, 90), (165, 120), (160, 150)],
    );
    d.script("document.getElementById('radius').value = 8; document.getElementById('radius').dispatchEvent(new Event('input'));");
    d.click("#bg");
    d.stroke(
        &canvas,
        size,
        &[(12, 12), (308, 12), (308, 228), (12, 228), (12, 14)],
    );
    d.screenshot(&shots.join("1-strokes.png"));
    d.stroke(&canvas, size, &[(40, 200), (120, 215), (250, 200)]);
    // An extra stroke taken back with undo.
    d.stroke(&canvas, size, &[(150, 100), (151, 101)]);
    d.click("#undo");
    d.wait_idle();
    d.click("#refine");
    d.wait_idle();
    d.screenshot(&shots.join("2-refined.png"));

    let state = d.script(
        "return { id: window.segcut.id, strokes: window.segcut.strokes.length, \
                  seeds: Array.from(window.segcut.seeds) };",
    );
    assert_eq!(state["strokes"], 3);
    let session = state["id"].as_str().expect("a session id").to_string();
    let mask = d.post(
        "/execute/async",
        json!({ "script": "const done = arguments[arguments.length - 1]; \
            window.segcut.lastMask.arrayBuffer().then(b => done(Array.from(new Uint8Array(b))));",
                "args": [] }),
    );
    let mask: Vec<u8> = mask
        .as_array()
        .expect("mask bytes")
        .iter()
        .map(|v| v.as_u64().unwrap() as u8)
        .collect();
    // The download link offers the same bytes.
    let href = d.script("return document.getElementById('download').href;");
    assert!(href.as_str().unwrap().starts_with("blob:"), "{href}");

    // The page's seeds are the server's (the same rasteriser rule).
    let seeds_png = server.get(&format!("/api/sessions/{session}/seeds")).body;
    let dir = tempfile::tempdir().unwrap();
    let seeds_path = dir.path().join("seeds.png");
    std::fs::write(&seeds_path, &seeds_png).unwrap();
    let seeds = segcut::io::load_seeds(&seeds_path, [320, 240, 1], &Default::default()).unwrap();
    let page_seeds: Vec<u8> = state["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u8)
        .collect();
    let server_seeds: Vec<u8> = seeds.labels.iter().map(|&l| l as u8).collect();
    assert_eq!(page_seeds.len(), server_seeds.len());
    let differ = page_seeds
        .iter()
        .zip(&server_seeds)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(differ, 0, "page and server painted different seeds");
    let c = seeds.counts();
    assert!(
        c[1] > 100 && c[2] > 1000,
        "the strokes painted seeds: {c:?}"
    );

    // The page's mask is the command line's on that seed image.
    assert_eq!(mask, cli_mask(&image, &seeds_path, &["--solver", "bk"]));
}
