//! Where a batch's jobs come from: a manifest (CSV with a header row, or JSON lines: one job per
//! row), a directory laid out by convention, or glob patterns. `docs/batch.md` describes the
//! formats; every error names the manifest file and line.
//!
//! ```
//! use segcut::batch::manifest::{parse_manifest, JobKind};
//! let csv = "image,seeds,lambda\nphotos/a.jpg,seeds/a.png,50\n# a comment\nphotos/b.jpg,seeds/b.png,\n";
//! let jobs = parse_manifest(csv, "jobs.csv", std::path::Path::new("/data")).unwrap();
//! assert_eq!(jobs.len(), 2);
//! assert_eq!(jobs[0].kind, JobKind::Segment);
//! assert_eq!(jobs[0].id, "a");
//! assert_eq!(jobs[0].overrides.get("lambda"), Some(&segcut::options::Value::Float(50.0)));
//! assert!(!jobs[1].overrides.is_given("lambda"));
//! let err = parse_manifest("image,colour\nx.jpg,red\n", "jobs.csv", std::path::Path::new(".")).unwrap_err();
//! assert!(err.to_string().starts_with("jobs.csv:1:"), "{err}");
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::io::Rect;
use crate::options::{Table, Values};
use crate::{Error, Result};

/// What a job computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// Image + seeds (or a rectangle) → mask.
    Segment,
    /// Left + right image → disparity map.
    Stereo,
    /// A `.max` file or archive → its minimum cut(s).
    MaxFlow,
}

impl JobKind {
    /// `segment`, `stereo` or `maxflow`.
    pub fn name(self) -> &'static str {
        match self {
            JobKind::Segment => "segment",
            JobKind::Stereo => "stereo",
            JobKind::MaxFlow => "maxflow",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        [JobKind::Segment, JobKind::Stereo, JobKind::MaxFlow]
            .into_iter()
            .find(|k| k.name() == s)
    }
}

/// The option columns a manifest may have besides the inputs: every segmentation and stereo
/// option ([`crate::options`]) by its snake_case name. A row's cell applies to its job's kind
/// (max-flow jobs take `solver`, `gpu_min_nodes` and `verify`).
pub fn option_columns() -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    for t in [Table::Segment, Table::Stereo] {
        for s in t.specs() {
            if !cols.contains(&s.snake()) {
                cols.push(s.snake());
            }
        }
    }
    cols
}

/// The options a max-flow job takes (from the segmentation table).
pub const MAXFLOW_OPTIONS: [&str; 3] = ["solver", "gpu-min-nodes", "verify"];

/// The input columns.
pub const INPUT_COLUMNS: [&str; 9] = [
    "kind", "id", "image", "seeds", "rect", "left", "right", "max", "output",
];

/// One job.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Unique within the batch: names the output and the summary row (default: the input's
    /// file stem).
    pub id: String,
    /// What it computes.
    pub kind: JobKind,
    /// Segmentation: the image.
    pub image: Option<PathBuf>,
    /// Segmentation: the seed file.
    pub seeds: Option<PathBuf>,
    /// Segmentation: a GrabCut rectangle (with or without seeds).
    pub rect: Option<Rect>,
    /// Stereo: the left image.
    pub left: Option<PathBuf>,
    /// Stereo: the right image.
    pub right: Option<PathBuf>,
    /// Max-flow: the `.max` file or archive.
    pub max: Option<PathBuf>,
    /// The output path as the manifest gives it (relative to the output folder); `None` uses
    /// the batch's name template.
    pub output: Option<PathBuf>,
    /// Options for this job only (of its kind's table; empty cells are not given).
    pub overrides: Values,
    /// Where the job was defined: `manifest.csv:12`, or the input's path.
    pub origin: String,
}

impl Job {
    fn new(kind: JobKind, id: String, origin: String) -> Self {
        Job {
            id,
            kind,
            image: None,
            seeds: None,
            rect: None,
            left: None,
            right: None,
            max: None,
            output: None,
            overrides: Values::new(match kind {
                JobKind::Stereo => Table::Stereo,
                _ => Table::Segment,
            }),
            origin,
        }
    }

    /// The job's input files (what must not be overwritten, and what a directory scan found).
    pub fn inputs(&self) -> Vec<&Path> {
        [&self.image, &self.seeds, &self.left, &self.right, &self.max]
            .into_iter()
            .flatten()
            .map(|p| p.as_path())
            .collect()
    }
}

/// The file stem used as a default job id: `a.max.gz` → `a`, `photo.jpg` → `photo`.
pub fn id_of(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = crate::io::dimacs::stem_of(&name);
    if stem.len() != name.len() {
        return stem.to_string();
    }
    let name = stem;
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && ext.len() <= 5 => {
            // `a.tar.bz2`, `a.tbz2`: one more extension may remain.
            let stem = stem.strip_suffix(".tar").unwrap_or(stem);
            stem.to_string()
        }
        _ => name.to_string(),
    }
}

/// Refuses text that would reach file names, the summary or a terminal raw: NUL and other
/// control characters (an ESC starts a terminal escape sequence).
fn check_text(what: &str, text: &str) -> std::result::Result<(), String> {
    match text.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "{what} '{}' holds the control character U+{:04X}: ids and paths may not",
            text.escape_debug(),
            c as u32
        )),
        None => Ok(()),
    }
}

/// Checks a job's id and paths: no control characters, an id that can name a file. Every way of
/// making jobs (manifest rows, folders, globs) ends here.
pub fn check_job(job: &Job) -> Result<()> {
    let bad = |msg: String| Error::Input {
        file: job.origin.clone(),
        msg,
    };
    check_text("id", &job.id).map_err(bad)?;
    let id = &job.id;
    if id.is_empty() || id.contains(['/', '\\']) || id == "." || id == ".." {
        return Err(bad(format!(
            "id '{id}' cannot name an output file (no slashes, not empty)"
        )));
    }
    for p in job.inputs().into_iter().chain(job.output.as_deref()) {
        check_text("path", &p.to_string_lossy()).map_err(bad)?;
    }
    Ok(())
}

/// One manifest row (its fields by column) as a job; `base` resolves relative input paths.
fn job_from_fields(
    fields: &BTreeMap<String, String>,
    file: &str,
    no: u64,
    base: &Path,
) -> Result<Job> {
    let bad = |msg: String| Error::Parse {
        file: file.into(),
        line: no,
        msg,
    };
    let options = option_columns();
    for (k, v) in fields {
        if !INPUT_COLUMNS.contains(&k.as_str()) && !options.contains(k) {
            return Err(bad(format!(
                "unknown column '{k}' (inputs: {}; options: {})",
                INPUT_COLUMNS.join(", "),
                options.join(", ")
            )));
        }
        check_text(k, v).map_err(bad)?;
    }
    let get = |k: &str| fields.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let path = |k: &str| get(k).map(|v| base.join(v));
    let kind =
        match get("kind") {
            Some(k) => JobKind::parse(k)
                .ok_or_else(|| bad(format!("kind '{k}' is not segment, stereo or maxflow")))?,
            None if get("image").is_some() => JobKind::Segment,
            None if get("left").is_some() => JobKind::Stereo,
            None if get("max").is_some() => JobKind::MaxFlow,
            None => return Err(bad(
                "no input: give image (segmentation), left and right (stereo) or max (max-flow)"
                    .into(),
            )),
        };
    let main = match kind {
        JobKind::Segment => "image",
        JobKind::Stereo => "left",
        JobKind::MaxFlow => "max",
    };
    let main_path = path(main).ok_or_else(|| bad(format!("a {} job needs {main}", kind.name())))?;
    let id = get("id")
        .map(str::to_string)
        .unwrap_or_else(|| id_of(&main_path));
    let mut job = Job::new(kind, id, format!("{file}:{no}"));
    job.image = path("image");
    job.seeds = path("seeds");
    job.left = path("left");
    job.right = path("right");
    job.max = path("max");
    job.output = get("output").map(PathBuf::from);
    check_job(&job).map_err(|e| match e {
        Error::Input { msg, .. } => bad(msg),
        e => e,
    })?;
    if let Some(r) = get("rect") {
        job.rect = Some(r.parse().map_err(|e| bad(format!("rect: {e}")))?);
    }
    match kind {
        JobKind::Segment if job.seeds.is_none() && job.rect.is_none() => {
            return Err(bad("a segment job needs seeds or rect".into()))
        }
        JobKind::Stereo if job.right.is_none() => {
            return Err(bad("a stereo job needs right".into()))
        }
        _ => {}
    }
    // The option cells, parsed and checked by the options model; an option of another kind's
    // table is refused, not ignored.
    for col in &options {
        let Some(v) = get(col) else { continue };
        let table = job.overrides.table();
        let applies = table.find(col).is_some()
            && (kind != JobKind::MaxFlow
                || MAXFLOW_OPTIONS.contains(&col.replace('_', "-").as_str()));
        if !applies {
            return Err(bad(format!(
                "{col} does not apply to a {} job (leave the cell empty)",
                kind.name()
            )));
        }
        job.overrides.set(col, v).map_err(|e| bad(e.to_string()))?;
    }
    Ok(job)
}

/// A JSON object whose keys are unique (serde_json keeps the last of a repeated key; a manifest
/// row that says `lambda` twice is refused instead).
struct UniqueObject(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for UniqueObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = UniqueObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("one object: {\"key\": value, ...}")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<UniqueObject, A::Error> {
                let mut out: Vec<(String, serde_json::Value)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
                    if out.iter().any(|(seen, _)| *seen == k) {
                        return Err(serde::de::Error::custom(format!("\"{k}\" appears twice")));
                    }
                    out.push((k, v));
                }
                Ok(UniqueObject(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Parses one JSON object whose values are strings, numbers, booleans or null (a JSON-lines
/// manifest row or summary row) into its fields as text; null fields are left out.
pub fn parse_json_object(line: &str, file: &str, no: u64) -> Result<BTreeMap<String, String>> {
    let bad = |msg: String| Error::Parse {
        file: file.into(),
        line: no,
        msg,
    };
    let obj: UniqueObject = serde_json::from_str(line)
        .map_err(|e| bad(format!("a JSON-lines row must be one object: {e}")))?;
    let mut fields = BTreeMap::new();
    for (k, v) in obj.0 {
        let text = match v {
            serde_json::Value::Null => continue,
            serde_json::Value::String(s) => s,
            serde_json::Value::Bool(b) => b.to_string(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => {
                return Err(bad(format!(
                    "\"{k}\": nested objects and arrays are not manifest values"
                )))
            }
        };
        fields.insert(k, text);
    }
    Ok(fields)
}

/// A CSV text's header (line, columns) and rows (line, fields by column).
pub type CsvRows = (
    Option<(u64, Vec<String>)>,
    Vec<(u64, BTreeMap<String, String>)>,
);

/// The line of a quote that is never closed (the csv crate reads such a cell to the end of the
/// file without complaint). Quotes pair up in valid CSV, escaped ones (`""`) included.
fn unclosed_quote(text: &str) -> Option<u64> {
    let (mut open, mut line, mut opened_at) = (false, 1u64, 0u64);
    let mut at_line_start = true;
    let mut comment = false;
    for c in text.chars() {
        if at_line_start && !open {
            comment = c == '#';
        }
        at_line_start = false;
        match c {
            '"' if !comment => {
                open = !open;
                if open {
                    opened_at = line;
                }
            }
            '\n' => {
                line += 1;
                at_line_start = true;
            }
            _ => {}
        }
    }
    open.then_some(opened_at)
}

/// The rows of a CSV text with a header row. Blank lines and lines starting with `#` are
/// skipped; a UTF-8 byte-order mark (Excel) is ignored.
pub fn parse_csv(text: &str, file: &str) -> Result<CsvRows> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(line) = unclosed_quote(text) {
        return Err(Error::Parse {
            file: file.into(),
            line,
            msg: "a quoted cell is not closed".into(),
        });
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut header: Option<(u64, Vec<String>)> = None;
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            Error::Parse {
                file: file.into(),
                line,
                msg: format!("not CSV: {e}"),
            }
        })?;
        let no = rec.position().map_or(0, |p| p.line());
        if rec.iter().all(|c| c.is_empty()) {
            continue;
        }
        let bad = |msg: String| Error::Parse {
            file: file.into(),
            line: no,
            msg,
        };
        match &header {
            None => {
                let h: Vec<String> = rec.iter().map(str::to_string).collect();
                for (i, c) in h.iter().enumerate() {
                    if h[..i].contains(c) {
                        return Err(bad(format!("column '{c}' appears twice in the header")));
                    }
                }
                header = Some((no, h));
            }
            Some((_, h)) => {
                if rec.len() > h.len() {
                    return Err(bad(format!(
                        "{} cells but the header has {} columns",
                        rec.len(),
                        h.len()
                    )));
                }
                rows.push((
                    no,
                    h.iter()
                        .cloned()
                        .zip(rec.iter().map(str::to_string))
                        .collect(),
                ));
            }
        }
    }
    Ok((header, rows))
}

/// Parses a manifest's text: JSON lines when the name ends in `.jsonl`/`.ndjson` or the first
/// row starts with `{`, else CSV with a header row. Blank lines and lines starting with `#` are
/// skipped. Relative paths are resolved against `base` (the manifest's folder). Ids must be
/// unique.
pub fn parse_manifest(text: &str, file: &str, base: &Path) -> Result<Vec<Job>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let jsonl =
        file.ends_with(".jsonl") || file.ends_with(".ndjson") || text.trim_start().starts_with('{');
    let rows: Vec<(u64, BTreeMap<String, String>)> = if jsonl {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l))
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(no, l)| Ok((no, parse_json_object(l, file, no)?)))
            .collect::<Result<_>>()?
    } else {
        let (header, rows) = parse_csv(text, file)?;
        // The header's columns are checked even when no row follows.
        if let Some((no, h)) = header {
            let options = option_columns();
            if let Some(c) = h
                .iter()
                .find(|c| !INPUT_COLUMNS.contains(&c.as_str()) && !options.contains(c))
            {
                return Err(Error::Parse {
                    file: file.into(),
                    line: no,
                    msg: format!(
                        "unknown column '{c}' in the header (inputs: {}; options: {})",
                        INPUT_COLUMNS.join(", "),
                        options.join(", ")
                    ),
                });
            }
        }
        rows
    };
    let mut jobs = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (no, fields) in rows {
        let job = job_from_fields(&fields, file, no, base)?;
        if let Some(first) = seen.insert(job.id.clone(), job.origin.clone()) {
            return Err(Error::Parse {
                file: file.into(),
                line: no,
                msg: format!(
                    "job id '{}' is also at {first}: ids name the outputs and must be unique \
                     (add an id column)",
                    job.id
                ),
            });
        }
        jobs.push(job);
    }
    Ok(jobs)
}

/// Reads a manifest file (see [`parse_manifest`]).
pub fn read_manifest(path: &Path) -> Result<Vec<Job>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let base = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    parse_manifest(&text, &path.display().to_string(), base)
}

/// Whether `name` matches the glob `pattern` (`*` any run, `?` one character).
///
/// ```
/// use segcut::batch::manifest::glob_match;
/// assert!(glob_match("*.max", "a.max"));
/// assert!(glob_match("crop_??x*.max", "crop_16x16.max"));
/// assert!(!glob_match("*.max", "a.max.gz"));
/// ```
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The files a pattern names: wildcards in the file name only (`data/*.max`), sorted; a pattern
/// without wildcards names itself.
pub fn glob(pattern: &Path) -> Result<Vec<PathBuf>> {
    let name = pattern
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        return Ok(vec![pattern.to_path_buf()]);
    }
    let dir = pattern
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut out: Vec<PathBuf> = list_files(dir)?
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| glob_match(&name, &n.to_string_lossy()))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// The regular files in `dir` (not hidden), sorted.
fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let p = e.path();
        let hidden = e.file_name().to_string_lossy().starts_with('.');
        if !hidden && p.is_file() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Whether a file name is a max-flow input: `.max` (plain, `.gz`, `.bz2`) or a tar archive.
pub fn is_max_file(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        ".max", ".max.gz", ".max.bz2", ".tbz2", ".tgz", ".tar", ".tar.gz", ".tar.bz2",
    ]
    .iter()
    .any(|e| n.ends_with(e))
}

/// The jobs a folder holds by convention:
/// - `DIR/images/NAME.*` with `DIR/<seeds>/NAME.*` or `NAME-SUFFIX.*` (`seeds` defaults to
///   `seeds`): segmentation;
///   an image without a seed file becomes a job that fails saying so;
/// - `DIR/left/NAME.*` with `DIR/right/NAME.*`: stereo;
/// - otherwise the `.max` files and archives in `DIR`: max-flow.
pub fn from_dir(dir: &Path, seeds: Option<&str>) -> Result<Vec<Job>> {
    let jobs = jobs_in_dir(dir, seeds)?;
    jobs.iter().try_for_each(check_job)?;
    Ok(jobs)
}

fn jobs_in_dir(dir: &Path, seeds: Option<&str>) -> Result<Vec<Job>> {
    let by_stem = |d: &Path| -> Result<BTreeMap<String, PathBuf>> {
        Ok(list_files(d)?.into_iter().map(|p| (id_of(&p), p)).collect())
    };
    let images = dir.join("images");
    if images.is_dir() {
        let seeds_dir = dir.join(seeds.unwrap_or("seeds"));
        if !seeds_dir.is_dir() {
            return Err(Error::Input {
                file: seeds_dir.display().to_string(),
                msg: "no seeds folder beside images/ (name the seeds folder)".into(),
            });
        }
        let seed_files = by_stem(&seeds_dir)?;
        return Ok(by_stem(&images)?
            .into_iter()
            .map(|(id, image)| {
                let mut job = Job::new(JobKind::Segment, id.clone(), image.display().to_string());
                job.seeds = Some(
                    seed_for(&seed_files, &id)
                        .unwrap_or_else(|| seeds_dir.join(format!("{id}.png"))),
                );
                job.image = Some(image);
                job
            })
            .collect());
    }
    let (left, right) = (dir.join("left"), dir.join("right"));
    if left.is_dir() && right.is_dir() {
        let rights = by_stem(&right)?;
        return Ok(by_stem(&left)?
            .into_iter()
            .map(|(id, l)| {
                let mut job = Job::new(JobKind::Stereo, id.clone(), l.display().to_string());
                job.right = Some(
                    rights
                        .get(&id)
                        .cloned()
                        .unwrap_or_else(|| right.join(l.file_name().unwrap_or_default())),
                );
                job.left = Some(l);
                job
            })
            .collect());
    }
    let files: Vec<PathBuf> = list_files(dir)?
        .into_iter()
        .filter(|p| is_max_file(&p.file_name().unwrap_or_default().to_string_lossy()))
        .collect();
    if files.is_empty() {
        return Err(Error::Input {
            file: dir.display().to_string(),
            msg: "no jobs here: expected images/ with seeds/, left/ with right/, or .max files"
                .into(),
        });
    }
    max_jobs(files)
}

/// The seed file of image `id`: the one with the same stem, else one whose stem is the id
/// followed by `-` or `_` and a suffix (`124084-anno.png`, as the GrabCut scribble sets name
/// them).
fn seed_for(seeds: &BTreeMap<String, PathBuf>, id: &str) -> Option<PathBuf> {
    seeds.get(id).cloned().or_else(|| {
        seeds
            .range(id.to_string()..)
            .take_while(|(k, _)| k.starts_with(id))
            .find(|(k, _)| matches!(k.as_bytes().get(id.len()), Some(b'-' | b'_')))
            .map(|(_, p)| p.clone())
    })
}

/// One max-flow job per file, named by stem; stems must be unique.
pub fn max_jobs(files: Vec<PathBuf>) -> Result<Vec<Job>> {
    let mut seen = BTreeMap::new();
    let jobs: Vec<Job> = files
        .into_iter()
        .map(|p| {
            let id = id_of(&p);
            if let Some(other) = seen.insert(id.clone(), p.clone()) {
                return Err(Error::Input {
                    file: p.display().to_string(),
                    msg: format!(
                        "has the same name as {} ({id}); outputs would collide: use a manifest \
                         with ids",
                        other.display()
                    ),
                });
            }
            let mut job = Job::new(JobKind::MaxFlow, id, p.display().to_string());
            job.max = Some(p);
            Ok(job)
        })
        .collect::<Result<_>>()?;
    jobs.iter().try_for_each(check_job)?;
    Ok(jobs)
}
