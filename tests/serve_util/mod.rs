//! A `segcut serve` child process on a free loopback port, and a small HTTP client for it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running server; killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub token: Option<String>,
}

impl Server {
    /// Starts `segcut serve --addr 127.0.0.1:0 ARGS` and waits for its address.
    pub fn start(args: &[&str]) -> Server {
        let mut child = Command::new(crate::common::segcut_bin())
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            // The leak test compares resident memory across rounds of 100 concurrent sessions;
            // glibc opens up to 8 malloc arenas per core as threads contend, so on a 16-core host
            // every round could claim new ones and look like a leak. Two arenas leave only the
            // server's own growth to measure.
            .env("MALLOC_ARENA_MAX", "2")
            .stderr(Stdio::piped())
            .spawn()
            .expect("start segcut serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("the server exited before listening")
                .expect("stderr line");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.trim_end_matches('/').to_string();
            }
        };
        // Keep draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let token = args
            .iter()
            .position(|a| *a == "--token")
            .map(|i| args[i + 1].to_string());
        Server { child, base, token }
    }

    fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into()
    }

    fn auth(
        &self,
        mut req: ureq::RequestBuilder<ureq::typestate::WithBody>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        req
    }

    /// POSTs `body` with a content type; returns the status, the content type and the body.
    pub fn post(&self, path: &str, content_type: &str, accept: &str, body: &[u8]) -> Reply {
        self.try_post(path, content_type, accept, body)
            .expect("request")
    }

    /// [`Self::post`], with the transport error when there is one: a server that refuses a
    /// body by its declared size answers and closes before the client has sent it all, and
    /// the client may then see its write fail (a broken pipe) instead of the answer.
    pub fn try_post(
        &self,
        path: &str,
        content_type: &str,
        accept: &str,
        body: &[u8],
    ) -> Result<Reply, ureq::Error> {
        let req = Self::agent()
            .post(format!("{}{path}", self.base))
            .header("Content-Type", content_type)
            .header("Accept", accept);
        self.auth(req).send(body).map(Reply::from)
    }

    /// POSTs a multipart form of `(name, bytes)` fields.
    pub fn post_form(&self, path: &str, accept: &str, fields: &[(&str, &[u8])]) -> Reply {
        let boundary = "segcut-test-boundary-7d1f";
        let mut body = Vec::new();
        for (name, bytes) in fields {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\n\
                     Content-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        self.post(
            path,
            &format!("multipart/form-data; boundary={boundary}"),
            accept,
            &body,
        )
    }

    pub fn get(&self, path: &str) -> Reply {
        let mut req = Self::agent().get(format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        Reply::from(req.call().expect("request"))
    }

    pub fn delete(&self, path: &str) -> Reply {
        let mut req = Self::agent().delete(format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        Reply::from(req.call().expect("request"))
    }

    pub fn health(&self) -> serde_json::Value {
        self.get("/api/health").json()
    }

    /// Resident memory of the server process, in kB.
    pub fn rss_kb(&self) -> u64 {
        let s =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        s.lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Reply {
    fn from(mut resp: ureq::http::Response<ureq::Body>) -> Reply {
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_vec()
            .expect("body");
        Reply {
            status,
            content_type,
            body,
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The reply's error message, checking that it is a JSON error.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .expect("an error message")
            .to_string()
    }
}

/// `segcut IMAGE --seeds SEEDS -o MASK` (extra flags after), returning the mask's bytes.
pub fn cli_mask(image: &Path, seeds: &Path, extra: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("mask.png");
    let st = Command::new(crate::common::segcut_bin())
        .arg(image)
        .arg("--seeds")
        .arg(seeds)
        .arg("-o")
        .arg(&out)
        .args(extra)
        .stderr(Stdio::null())
        .status()
        .expect("run segcut");
    assert!(st.success(), "segcut failed: {st}");
    std::fs::read(out).expect("mask")
}
