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
//! assert_eq!(jobs[0].overrides.lambda, Some(50.0));
//! assert_eq!(jobs[1].overrides.lambda, None);
//! let err = parse_manifest("image,colour\nx.jpg,red\n", "jobs.csv", std::path::Path::new(".")).unwrap_err();
//! assert!(err.to_string().starts_with("jobs.csv:1:"), "{err}");
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::graph::Connectivity;
use crate::io::Rect;
use crate::maxflow::SolverKind;
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

/// Per-job options that override the batch's defaults (empty cells keep the default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// `solver`.
    pub solver: Option<SolverKind>,
    /// `lambda` (segmentation).
    pub lambda: Option<f64>,
    /// `sigma` (segmentation).
    pub sigma: Option<f64>,
    /// `iterations` (segmentation).
    pub iterations: Option<usize>,
    /// `seed_weight` (segmentation).
    pub seed_weight: Option<f64>,
    /// `connectivity`: 4, 8, 6 or 26 (segmentation).
    pub connectivity: Option<Connectivity>,
    /// `disparities`: how many disparities to search (stereo).
    pub disparities: Option<usize>,
}

/// The option columns a manifest may have besides the inputs.
pub const OPTION_COLUMNS: [&str; 7] = [
    "solver",
    "lambda",
    "sigma",
    "iterations",
    "seed_weight",
    "connectivity",
    "disparities",
];

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
    /// Options for this job only.
    pub overrides: Overrides,
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
            overrides: Overrides::default(),
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

/// Splits one CSV line into cells (RFC 4180 quoting: `"a,b"`, `""` for a quote).
pub fn parse_csv_line(line: &str, file: &str, no: u64) -> Result<Vec<String>> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = line.trim_end_matches(['\r', '\n']).chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') if cell.trim().is_empty() && !was_quoted => {
                cell.clear();
                quoted = true;
                was_quoted = true;
            }
            (false, ',') => {
                cells.push(if was_quoted {
                    cell
                } else {
                    cell.trim().to_string()
                });
                cell = String::new();
                was_quoted = false;
            }
            (false, c) => cell.push(c),
        }
    }
    if quoted {
        return Err(Error::Parse {
            file: file.into(),
            line: no,
            msg: "a quoted cell is not closed".into(),
        });
    }
    cells.push(if was_quoted {
        cell
    } else {
        cell.trim().to_string()
    });
    Ok(cells)
}

/// Parses one JSON object whose values are strings, numbers, booleans or null (a JSON-lines
/// manifest row or summary row) into its fields as text; null fields are left out.
pub fn parse_json_object(line: &str, file: &str, no: u64) -> Result<BTreeMap<String, String>> {
    let bad = |msg: String| Error::Parse {
        file: file.into(),
        line: no,
        msg,
    };
    let s: Vec<char> = line.trim().chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < s.len() && s[*i].is_whitespace() {
            *i += 1;
        }
    };
    let string = |i: &mut usize| -> Result<String> {
        // s[*i] is the opening quote.
        *i += 1;
        let mut out = String::new();
        while *i < s.len() {
            match s[*i] {
                '"' => {
                    *i += 1;
                    return Ok(out);
                }
                '\\' => {
                    let e = *s
                        .get(*i + 1)
                        .ok_or_else(|| bad("a string ends in a backslash".into()))?;
                    *i += 2;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'u' => {
                            let hex: String = s.get(*i..*i + 4).unwrap_or(&[]).iter().collect();
                            let code = u32::from_str_radix(&hex, 16)
                                .map_err(|_| bad(format!("bad escape \\u{hex}")))?;
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                            *i += 4;
                        }
                        c => out.push(c),
                    }
                }
                c => {
                    out.push(c);
                    *i += 1;
                }
            }
        }
        Err(bad("a string is not closed".into()))
    };
    let mut fields = BTreeMap::new();
    skip_ws(&mut i);
    if s.get(i) != Some(&'{') {
        return Err(bad(
            "a JSON-lines row must be one object: {\"key\": value, ...}".into(),
        ));
    }
    i += 1;
    skip_ws(&mut i);
    if s.get(i) == Some(&'}') {
        i += 1;
    } else {
        loop {
            skip_ws(&mut i);
            if s.get(i) != Some(&'"') {
                return Err(bad(format!("expected a quoted key at column {}", i + 1)));
            }
            let key = string(&mut i)?;
            skip_ws(&mut i);
            if s.get(i) != Some(&':') {
                return Err(bad(format!("expected ':' after \"{key}\"")));
            }
            i += 1;
            skip_ws(&mut i);
            let value = match s.get(i) {
                Some('"') => Some(string(&mut i)?),
                Some('{') | Some('[') => {
                    return Err(bad(format!(
                        "\"{key}\": nested objects and arrays are not manifest values"
                    )))
                }
                Some(_) => {
                    let start = i;
                    while i < s.len() && !matches!(s[i], ',' | '}') && !s[i].is_whitespace() {
                        i += 1;
                    }
                    let word: String = s[start..i].iter().collect();
                    match word.as_str() {
                        "null" => None,
                        "true" | "false" => Some(word),
                        w if w.parse::<f64>().is_ok() => Some(word),
                        w => return Err(bad(format!("\"{key}\": '{w}' is not a JSON value"))),
                    }
                }
                None => return Err(bad(format!("\"{key}\" has no value"))),
            };
            if let Some(v) = value {
                if fields.insert(key.clone(), v).is_some() {
                    return Err(bad(format!("\"{key}\" appears twice")));
                }
            }
            skip_ws(&mut i);
            match s.get(i) {
                Some(',') => i += 1,
                Some('}') => {
                    i += 1;
                    break;
                }
                _ => return Err(bad(format!("expected ',' or '}}' after \"{key}\""))),
            }
        }
    }
    skip_ws(&mut i);
    if i != s.len() {
        return Err(bad("text after the object".into()));
    }
    Ok(fields)
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
    for k in fields.keys() {
        if !INPUT_COLUMNS.contains(&k.as_str()) && !OPTION_COLUMNS.contains(&k.as_str()) {
            return Err(bad(format!(
                "unknown column '{k}' (inputs: {}; options: {})",
                INPUT_COLUMNS.join(", "),
                OPTION_COLUMNS.join(", ")
            )));
        }
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
    if id.is_empty() || id.contains(['/', '\\']) || id == "." || id == ".." {
        return Err(bad(format!(
            "id '{id}' cannot name an output file (no slashes, not empty)"
        )));
    }
    let mut job = Job::new(kind, id, format!("{file}:{no}"));
    job.image = path("image");
    job.seeds = path("seeds");
    job.left = path("left");
    job.right = path("right");
    job.max = path("max");
    job.output = get("output").map(PathBuf::from);
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
    let num = |k: &str| -> Result<Option<f64>> {
        get(k)
            .map(|v| {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| bad(format!("{k} '{v}' is not a number")))
            })
            .transpose()
    };
    let o = &mut job.overrides;
    o.solver = get("solver")
        .map(|v| v.parse().map_err(|e| bad(format!("solver: {e}"))))
        .transpose()?;
    o.lambda = num("lambda")?;
    o.sigma = num("sigma")?;
    o.seed_weight = num("seed_weight")?;
    o.iterations = get("iterations")
        .map(|v| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(format!("iterations '{v}' is not a whole number above 0")))
        })
        .transpose()?;
    o.disparities = get("disparities")
        .map(|v| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(format!("disparities '{v}' is not a whole number above 0")))
        })
        .transpose()?;
    o.connectivity = get("connectivity")
        .map(|v| {
            v.parse::<u32>()
                .ok()
                .and_then(Connectivity::from_number)
                .ok_or_else(|| bad(format!("connectivity '{v}' is not 4, 8, 6 or 26")))
        })
        .transpose()?;
    Ok(job)
}

/// Parses a manifest's text: JSON lines when the name ends in `.jsonl`/`.ndjson` or the first
/// row starts with `{`, else CSV with a header row. Blank lines and lines starting with `#` are
/// skipped. Relative paths are resolved against `base` (the manifest's folder). Ids must be
/// unique.
pub fn parse_manifest(text: &str, file: &str, base: &Path) -> Result<Vec<Job>> {
    let rows = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let jsonl =
        file.ends_with(".jsonl") || file.ends_with(".ndjson") || text.trim_start().starts_with('{');
    let mut jobs = Vec::new();
    let mut header: Option<Vec<String>> = None;
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (no, line) in rows {
        let fields = if jsonl {
            parse_json_object(line, file, no)?
        } else if let Some(h) = &header {
            let cells = parse_csv_line(line, file, no)?;
            if cells.len() > h.len() {
                return Err(Error::Parse {
                    file: file.into(),
                    line: no,
                    msg: format!(
                        "{} cells but the header has {} columns",
                        cells.len(),
                        h.len()
                    ),
                });
            }
            h.iter().cloned().zip(cells).collect()
        } else {
            let h = parse_csv_line(line, file, no)?;
            for c in &h {
                if !INPUT_COLUMNS.contains(&c.as_str()) && !OPTION_COLUMNS.contains(&c.as_str()) {
                    return Err(Error::Parse {
                        file: file.into(),
                        line: no,
                        msg: format!(
                            "unknown column '{c}' in the header (inputs: {}; options: {})",
                            INPUT_COLUMNS.join(", "),
                            OPTION_COLUMNS.join(", ")
                        ),
                    });
                }
            }
            header = Some(h);
            continue;
        };
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
    files
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
        .collect()
}
