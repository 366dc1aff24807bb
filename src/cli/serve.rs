//! `segcut serve`: one resident process answering segmentations over HTTP, with interactive
//! sessions (`segcut::segment::interactive`) and a scribble page at `/` (docs/serve.md).
//!
//! The library does the work; this module only moves bytes: uploads are written to the server's
//! own temporary folder under names it chooses and read by the same loaders the command line
//! uses, so `POST /api/segment` returns the bytes `segcut IMAGE --seeds SEEDS -o MASK` writes.
//! Solver work runs on tokio's blocking pool, at most one job per core at a time.

use anyhow::{bail, Context, Result};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Multipart, Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use segcut::io::{self, LoadOptions, MaskFormat, SeedOptions};
use segcut::options::Values;
use segcut::segment::interactive::{Session, Stroke, StrokeReport};
use segcut::segment::pipeline::SegmentOptions;
use segcut::segment::report::Report;
use segcut::segment::{segment, Image, Seeds};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

use super::segment::EnergyArgs;

/// The largest JSON strokes request: a long stroke's points are some tens of bytes each.
const STROKES_BODY_LIMIT: usize = 16 << 20;

/// The page: plain HTML, CSS and JavaScript, no network.
const PAGE: &str = include_str!("serve/page.html");

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on. Anything but a loopback address needs --token.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "IP:PORT")]
    addr: SocketAddr,
    /// Require `Authorization: Bearer TOKEN` on every /api request (the page reads it from its
    /// address: http://HOST/#token=TOKEN).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Most sessions held at once; the least recently used one is evicted for a new one.
    #[arg(long, default_value_t = 32, value_name = "N")]
    max_sessions: usize,
    /// Seconds a session may stay unused before it is evicted.
    #[arg(long, default_value_t = 600, value_name = "S")]
    session_idle: u64,
    /// Memory all sessions together may hold, in MB (default: half the memory budget at start).
    #[arg(long, value_name = "MB")]
    session_memory: Option<u64>,
    #[command(flatten)]
    energy: EnergyArgs,
}

/// An error answer: a status and a message, sent as `{"error": message}`.
#[derive(Debug)]
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

type ApiResult<T> = std::result::Result<T, ApiError>;

/// A library error as an answer: the request's fault (4xx) or the server's (5xx). Temporary
/// paths are replaced by the upload's field name: a client never sees the server's folders.
fn lib_error(e: segcut::Error, uploads: &[(&Path, &str)]) -> ApiError {
    use segcut::Error as E;
    let status = match &e {
        E::Memory(_) => StatusCode::PAYLOAD_TOO_LARGE,
        E::Input { .. } | E::Parse { .. } | E::Unsupported(_) | E::Io { .. } => {
            StatusCode::BAD_REQUEST
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let mut msg = e.to_string();
    for (p, name) in uploads {
        msg = msg.replace(&p.display().to_string(), name);
    }
    ApiError(status, msg)
}

/// One held session and its bookkeeping.
struct Held {
    session: Arc<Mutex<Session>>,
    last_used: Instant,
    bytes: u64,
    /// Requests using it now (running or waiting for a worker): a busy session is not idle.
    busy: usize,
}

/// A request's use of a session: marks it busy until dropped, then used now.
struct InUse {
    app: Shared,
    id: String,
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Ok(mut s) = self.app.sessions.lock() {
            if let Some(h) = s.get_mut(&self.id) {
                h.busy = h.busy.saturating_sub(1);
                h.last_used = Instant::now();
            }
        }
    }
}

/// The server's state.
struct App {
    token: Option<String>,
    /// Server-wide options (the flags); a request's `options` go on top.
    values: Values,
    sessions: Mutex<HashMap<String, Held>>,
    max_sessions: usize,
    idle: Duration,
    session_memory: u64,
    /// The largest image a request may decode and segment, by the memory budget.
    load: LoadOptions,
    /// One solver job per core at a time.
    workers: Semaphore,
    uploads: tempfile::TempDir,
}

type Shared = Arc<App>;

pub fn run(args: Args) -> Result<ExitCode> {
    if !args.addr.ip().is_loopback() && args.token.is_none() {
        bail!(
            "--addr {} is not a loopback address: give --token so that only those who have it \
             can use the server",
            args.addr
        );
    }
    if args.token.as_deref() == Some("") {
        bail!("--token: an empty token");
    }
    if args.max_sessions == 0 {
        bail!("--max-sessions must be at least 1");
    }
    // Checked once here: a bad flag is an error at start, not on every request.
    args.energy.options()?;
    let budget = io::memory_budget().map(|b| b.bytes);
    let session_memory = match args.session_memory {
        Some(mb) => mb.saturating_mul(1 << 20),
        None => budget.map(|b| b / 2).unwrap_or(4 << 30),
    };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let app = Arc::new(App {
        token: args.token.clone(),
        values: args.energy.0.clone(),
        sessions: Mutex::new(HashMap::new()),
        max_sessions: args.max_sessions,
        idle: Duration::from_secs(args.session_idle),
        session_memory,
        load: LoadOptions {
            memory_limit: budget,
            connectivity: None,
        },
        workers: Semaphore::new(cores),
        uploads: tempfile::Builder::new()
            .prefix("segcut-serve-")
            .tempdir()
            .context("cannot create the server's temporary folder")?,
    });
    // An encoded upload is smaller than its pixels: the body may hold at most what the budget
    // lets one image decode to (and not more than 1 GiB).
    let body_limit = budget.unwrap_or(1 << 30).min(1 << 30) as usize;
    let router = Router::new()
        .route("/", get(page))
        .route("/api/health", get(health))
        .route("/api/segment", post(segment_once))
        .route("/api/sessions", post(new_session))
        .route(
            "/api/sessions/{id}",
            axum::routing::delete(end_session).get(session_info),
        )
        .route("/api/sessions/{id}/strokes", post(strokes))
        .route("/api/sessions/{id}/refine", post(refine))
        .route("/api/sessions/{id}/seeds", get(session_seeds))
        .route("/api/sessions/{id}/mask", get(session_mask))
        .layer(middleware::from_fn_with_state(app.clone(), authorize))
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(app.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let local = listener.local_addr()?;
        eprintln!("segcut serve: listening on http://{local}/");
        // Idle sessions are evicted even when no request comes.
        let sweeper = app.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if sweeper.evict(0, 0) > 0 {
                    give_back_freed_memory();
                }
            }
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("the server stopped")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Hands the pages freed by evicted sessions back to the system: glibc keeps freed memory in
/// its arenas otherwise, and a server's resident size would stay at its busiest.
fn give_back_freed_memory() {
    segcut::io::release_freed_memory();
}

/// Checks the bearer token on /api requests when the server has one (the page itself is
/// public: it holds nothing).
async fn authorize(State(app): State<Shared>, req: Request, next: Next) -> Response {
    if let Some(token) = &app.token {
        if req.uri().path().starts_with("/api/") {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
                return ApiError(
                    StatusCode::UNAUTHORIZED,
                    "this server needs Authorization: Bearer TOKEN (the --token it was started \
                     with)"
                        .into(),
                )
                .into_response();
            }
        }
    }
    next.run(req).await
}

/// Compares without stopping at the first difference (the time says nothing of the token).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' blob: data:; style-src 'unsafe-inline'; \
                 script-src 'unsafe-inline'",
            ),
        ],
        PAGE,
    )
}

async fn health(State(app): State<Shared>) -> ApiResult<Json<serde_json::Value>> {
    let opts = app.options(&Values::segment())?;
    let device = opts.device;
    let (sessions, bytes) = {
        let s = app.sessions.lock().expect("sessions lock");
        (s.len(), s.values().map(|h| h.bytes).sum::<u64>())
    };
    Ok(Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "solver": opts.solver.to_string(),
        "interactive_solver": if device.is_available() && opts.solver != segcut::maxflow::SolverKind::Bk { "cuda-grid or bk (by size)" } else { "bk" },
        "device": {
            "ordinal": device.ordinal(),
            "available": device.is_available(),
            "unavailable_reason": device.unavailable_reason(),
        },
        "sessions": sessions,
        "session_bytes": bytes,
        "max_sessions": app.max_sessions,
        "session_memory": app.session_memory,
    })))
}

impl App {
    /// The server's options with `over` on top.
    fn options(&self, over: &Values) -> ApiResult<SegmentOptions> {
        self.values
            .with(over)
            .segment_options(SegmentOptions::default())
            .map_err(|e| bad(format!("options.{}: {}", e.option.replace('-', "_"), e.msg)))
    }

    fn seed_options(&self, over: &Values) -> SeedOptions {
        self.values.with(over).seed_options()
    }

    /// Writes an upload to a new file of the server's folder (a name it chose).
    fn stash(&self, bytes: &[u8]) -> ApiResult<tempfile::NamedTempFile> {
        let mut f = tempfile::NamedTempFile::new_in(self.uploads.path())
            .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        std::io::Write::write_all(&mut f, bytes)
            .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        Ok(f)
    }

    fn load_image(&self, bytes: &[u8]) -> ApiResult<Image> {
        let f = self.stash(bytes)?;
        io::load_image_with(f.path(), &self.load).map_err(|e| lib_error(e, &[(f.path(), "image")]))
    }

    fn load_seeds(&self, bytes: &[u8], image: &Image, opts: &SeedOptions) -> ApiResult<Seeds> {
        let f = self.stash(bytes)?;
        io::load_seeds(f.path(), image.dims, opts).map_err(|e| lib_error(e, &[(f.path(), "seeds")]))
    }

    /// Evicts idle sessions, then the least recently used until `count` more sessions and
    /// `bytes` more bytes fit.
    /// Returns how many sessions were evicted.
    fn evict(&self, count: usize, bytes: u64) -> usize {
        let mut s = self.sessions.lock().expect("sessions lock");
        let had = s.len();
        let now = Instant::now();
        s.retain(|_, h| h.busy > 0 || now.duration_since(h.last_used) < self.idle);
        loop {
            let held: u64 = s.values().map(|h| h.bytes).sum();
            let over = s.len() + count > self.max_sessions
                || held.saturating_add(bytes) > self.session_memory;
            if !over || s.is_empty() {
                break;
            }
            // A busy session may still be evicted for room: its running request keeps its own
            // reference and finishes.
            let oldest = s
                .iter()
                .min_by_key(|(_, h)| h.last_used)
                .map(|(k, _)| k.clone())
                .expect("not empty");
            s.remove(&oldest);
        }
        had - s.len()
    }
}

/// The session `id`, marked busy while the returned guard lives.
fn session(app: &Shared, id: &str) -> ApiResult<(Arc<Mutex<Session>>, InUse)> {
    {
        let mut s = app.sessions.lock().expect("sessions lock");
        match s.get_mut(id) {
            Some(h) => {
                h.last_used = Instant::now();
                h.busy += 1;
                Ok((
                    h.session.clone(),
                    InUse {
                        app: app.clone(),
                        id: id.to_string(),
                    },
                ))
            }
            None => Err(ApiError(
                StatusCode::NOT_FOUND,
                format!("no session {id:?} (ended, evicted after being idle, or never made)"),
            )),
        }
    }
}

/// Runs `f` on the blocking pool once a worker is free; a panic is a 500, not a dead server.
async fn work<T: Send + 'static>(
    app: &Shared,
    f: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    let _permit = app
        .workers
        .acquire()
        .await
        .map_err(|e| ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the job failed: {e}"),
        ))
    })
}

/// The fields of a multipart upload by name (a repeated field is an error).
async fn fields(mut mp: Multipart) -> ApiResult<HashMap<String, Bytes>> {
    let mut out = HashMap::new();
    while let Some(field) = mp
        .next_field()
        .await
        .map_err(|e| bad(format!("multipart body: {e}")))?
    {
        let name = field.name().unwrap_or_default().to_string();
        if !["image", "seeds", "options"].contains(&name.as_str()) {
            return Err(bad(format!(
                "unknown field {name:?} (fields: image, seeds, options)"
            )));
        }
        let bytes = field
            .bytes()
            .await
            .map_err(|e| bad(format!("field {name}: {e}")))?;
        if out.insert(name.clone(), bytes).is_some() {
            return Err(bad(format!("field {name} given twice")));
        }
    }
    Ok(out)
}

/// The `options` field: a JSON object of option names (as on the command line or in a
/// manifest, kebab- or snake-case) to values.
fn parse_options(text: Option<&[u8]>) -> ApiResult<Values> {
    let mut v = Values::segment();
    let Some(text) = text else { return Ok(v) };
    let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(text)
        .map_err(|e| bad(format!("options: not a JSON object: {e}")))?;
    for (k, val) in obj {
        let t = match val {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            other => return Err(bad(format!("options.{k}: {other} is not a value"))),
        };
        v.set(&k, &t)
            .map_err(|e| bad(format!("options.{}: {}", e.option, e.msg)))?;
    }
    Ok(v)
}

fn wants_json(h: &HeaderMap) -> bool {
    h.get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

/// The mask as the command line writes `-o mask.png`.
fn mask_png(mask: &[bool], seeds: &Seeds, image: &Image) -> ApiResult<Vec<u8>> {
    io::encode_mask_as(
        Path::new("mask.png"),
        mask,
        seeds,
        MaskFormat::Mask,
        Some(image),
    )
    .map_err(|e| lib_error(e, &[]))
}

fn png(bytes: Vec<u8>, report: Option<String>) -> Response {
    let mut r = ([(header::CONTENT_TYPE, "image/png")], bytes).into_response();
    if let Some(v) = report.and_then(|t| HeaderValue::from_str(&t).ok()) {
        r.headers_mut().insert("x-segcut-report", v);
    }
    r
}

async fn segment_once(
    State(app): State<Shared>,
    headers: HeaderMap,
    mp: Multipart,
) -> ApiResult<Response> {
    let f = fields(mp).await?;
    let image = f.get("image").ok_or_else(|| bad("no image field"))?.clone();
    let seeds = f.get("seeds").ok_or_else(|| bad("no seeds field"))?.clone();
    let over = parse_options(f.get("options").map(|b| &b[..]))?;
    let opts = app.options(&over)?;
    let seed_opts = app.seed_options(&over);
    let json = wants_json(&headers);
    let a = app.clone();
    work(&app, move || {
        let image = a.load_image(&image)?;
        let seeds = a.load_seeds(&seeds, &image, &seed_opts)?;
        let seg = segment(&image, &seeds, &opts).map_err(|e| lib_error(e, &[]))?;
        if json {
            let report = Report::new(&seg, &opts);
            return Ok(Json(report).into_response());
        }
        Ok(png(mask_png(&seg.mask, &seeds, &image)?, None))
    })
    .await
}

/// A new random session id (128 bits from the OS).
fn new_id() -> ApiResult<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

async fn new_session(State(app): State<Shared>, mp: Multipart) -> ApiResult<Response> {
    let f = fields(mp).await?;
    let image = f.get("image").ok_or_else(|| bad("no image field"))?.clone();
    let over = parse_options(f.get("options").map(|b| &b[..]))?;
    let opts = app.options(&over)?;
    let a = app.clone();
    let (session, bytes) = work(&app, move || {
        let image = a.load_image(&image)?;
        let bytes = Session::memory_needed(image.dims, image.channels, &opts);
        if bytes > a.session_memory {
            return Err(ApiError(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "a session on this {}x{} image needs {} MB; sessions may hold {} MB",
                    image.dims[0],
                    image.dims[1],
                    bytes >> 20,
                    a.session_memory >> 20
                ),
            ));
        }
        a.evict(1, bytes);
        let s = Session::new(image, opts).map_err(|e| lib_error(e, &[]))?;
        Ok((s, bytes))
    })
    .await?;
    let [w, h, _] = session.image().dims;
    let id = new_id()?;
    app.evict(1, bytes);
    app.sessions.lock().expect("sessions lock").insert(
        id.clone(),
        Held {
            session: Arc::new(Mutex::new(session)),
            last_used: Instant::now(),
            bytes,
            busy: 0,
        },
    );
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "width": w, "height": h, "bytes": bytes })),
    )
        .into_response())
}

async fn end_session(
    State(app): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<StatusCode> {
    match app.sessions.lock().expect("sessions lock").remove(&id) {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("no session {id:?}"),
        )),
    }
}

async fn session_info(
    State(app): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let (s, _used) = session(&app, &id)?;
    let s = s.lock().map_err(|_| poisoned())?;
    let [w, h, _] = s.image().dims;
    Ok(Json(
        json!({ "id": id, "width": w, "height": h, "strokes": s.strokes() }),
    ))
}

fn poisoned() -> ApiError {
    ApiError(
        StatusCode::INTERNAL_SERVER_ERROR,
        "this session failed in an earlier request; start a new one".into(),
    )
}

/// A strokes request: strokes to paint, after taking back `undo` earlier ones.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrokesBody {
    #[serde(default)]
    strokes: Vec<Stroke>,
    #[serde(default)]
    undo: usize,
}

async fn strokes(
    State(app): State<Shared>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    req: Request,
) -> ApiResult<Response> {
    let (session, used) = session(&app, &id)?;
    let json = wants_json(&headers);
    let is_multipart = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    enum Change {
        Strokes(StrokesBody),
        Seeds(Bytes, SeedOptions),
    }
    let change = if is_multipart {
        let mp = <Multipart as axum::extract::FromRequest<Shared>>::from_request(req, &app)
            .await
            .map_err(|e| bad(e.body_text()))?;
        let f = fields(mp).await?;
        let seeds = f.get("seeds").ok_or_else(|| bad("no seeds field"))?.clone();
        let over = parse_options(f.get("options").map(|b| &b[..]))?;
        Change::Seeds(seeds, app.seed_options(&over))
    } else {
        // A raw body is not held to `DefaultBodyLimit`: strokes get their own limit.
        let body = axum::body::to_bytes(req.into_body(), STROKES_BODY_LIMIT)
            .await
            .map_err(|e| {
                ApiError(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("strokes: a body of at most {STROKES_BODY_LIMIT} bytes ({e})"),
                )
            })?;
        let parsed: StrokesBody = serde_json::from_slice(&body).map_err(|e| {
            bad(format!(
                "strokes: {e} (expected {{\"strokes\": [{{\"label\": \"fg\", \"radius\": 4, \
                 \"points\": [[x, y], ...]}}], \"undo\": 0}})"
            ))
        })?;
        Change::Strokes(parsed)
    };
    let a = app.clone();
    let out = work(&app, move || {
        let mut s = session.lock().map_err(|_| poisoned())?;
        let report: StrokeReport = match change {
            Change::Strokes(b) => {
                if b.undo > 0 {
                    s.undo(b.undo).map_err(|e| lib_error(e, &[]))?;
                }
                s.add_strokes(&b.strokes).map_err(|e| lib_error(e, &[]))?
            }
            Change::Seeds(bytes, opts) => {
                let seeds = a.load_seeds(&bytes, s.image(), &opts)?;
                s.set_seeds(seeds).map_err(|e| lib_error(e, &[]))?
            }
        };
        if json {
            return Ok(Json(report).into_response());
        }
        let text = serde_json::to_string(&report).ok();
        Ok(png(mask_png(s.mask(), s.seeds(), s.image())?, text))
    })
    .await;
    drop(used);
    out
}

async fn refine(
    State(app): State<Shared>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (session, used) = session(&app, &id)?;
    let json = wants_json(&headers);
    let out = work(&app, move || {
        let mut s = session.lock().map_err(|_| poisoned())?;
        let report = s.refine().map_err(|e| lib_error(e, &[]))?;
        if json {
            return Ok(Json(report).into_response());
        }
        let text = serde_json::to_string(&json!({
            "foreground_pixels": report.foreground_pixels,
            "flow": report.flow,
            "solver": report.solver,
            "iterations": report.iterations.len(),
        }))
        .ok();
        Ok(png(mask_png(s.mask(), s.seeds(), s.image())?, text))
    })
    .await;
    drop(used);
    out
}

async fn session_seeds(
    State(app): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<Response> {
    let (session, _used) = session(&app, &id)?;
    work(&app, move || {
        let s = session.lock().map_err(|_| poisoned())?;
        Ok(png(s.seeds_png().map_err(|e| lib_error(e, &[]))?, None))
    })
    .await
}

async fn session_mask(
    State(app): State<Shared>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<Response> {
    let (session, _used) = session(&app, &id)?;
    work(&app, move || {
        let s = session.lock().map_err(|_| poisoned())?;
        Ok(png(mask_png(s.mask(), s.seeds(), s.image())?, None))
    })
    .await
}
