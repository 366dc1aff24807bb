//! The batch summary: one row per job (CSV and JSON lines side by side), appended and flushed as
//! each job finishes, so a killed batch leaves the rows of every job it finished; and the merge of
//! several shards' summaries into one.
//!
//! ```
//! use segcut::batch::summary::{Row, Status};
//! let row = Row { job: "a,b".into(), status: Status::Failed, error: "bad \"seeds\"".into(), ..Row::default() };
//! assert!(row.csv_line().starts_with("\"a,b\",,failed,\"bad \"\"seeds\"\"\""));
//! assert!(row.json_line().contains(r#""error":"bad \"seeds\"""#));
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How a job ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its output existed already (a resumed batch): not run again.
    #[default]
    Skipped,
    /// Failed: the row's `error` says why.
    Failed,
    /// Ran and wrote its output.
    Ok,
}

impl Status {
    /// `ok`, `failed` or `skipped`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
        }
    }
}

/// Milliseconds to 3 decimals (microseconds), as the summary writes them.
fn ms3<S: serde::Serializer>(x: &f64, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64((x * 1000.0).round() / 1000.0)
}

/// One job's line of the summary; the CSV columns and JSON keys are the field names, in this
/// order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Row {
    /// The job's id.
    pub job: String,
    /// `segment`, `stereo` or `maxflow`.
    pub kind: String,
    /// How it ended.
    pub status: Status,
    /// Why it failed (empty otherwise).
    pub error: String,
    /// The solver that ran (`bk`, `cuda-grid`, ...; with `+packed` when solved packed).
    pub solver: String,
    /// Where it ran: `cpu`, `cuda:0`, ...
    pub device: String,
    /// The maximum flow (segmentation: of the last cut; archives: the sum over instances).
    pub flow: Option<i64>,
    /// Whether every cut's certificate was checked.
    pub verified: bool,
    /// Reading and decoding the inputs, ms.
    #[serde(serialize_with = "ms3")]
    pub read_ms: f64,
    /// Model fitting, graph building and solving, ms.
    #[serde(serialize_with = "ms3")]
    pub solve_ms: f64,
    /// Encoding and writing the output, ms.
    #[serde(serialize_with = "ms3")]
    pub write_ms: f64,
    /// The output file.
    pub output: String,
}

/// The CSV header, in the order of [`Row::csv_line`].
pub const CSV_HEADER: &str =
    "job,kind,status,error,solver,device,flow,verified,read_ms,solve_ms,write_ms,output";

impl Row {
    /// The row as a CSV line (no newline).
    pub fn csv_line(&self) -> String {
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        // Writing plain fields to memory cannot fail.
        let _ = w.serialize(self);
        let bytes = w.into_inner().unwrap_or_default();
        String::from_utf8_lossy(&bytes)
            .trim_end_matches('\n')
            .to_string()
    }

    /// The row as one JSON object (no newline).
    pub fn json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Appends rows to `STEM.csv` and `STEM.jsonl` as jobs finish, flushing each, so the files hold
/// every finished job however the batch ends. An existing summary is appended to (a resumed
/// batch adds its rows; [`merge`] keeps each job's last outcome).
pub struct SummaryWriter {
    csv: File,
    jsonl: File,
    paths: [PathBuf; 2],
}

impl SummaryWriter {
    /// Opens (or creates) `STEM.csv` and `STEM.jsonl`; `stem` is a path without extension.
    pub fn open(stem: &Path) -> Result<Self> {
        let csv_path = with_ext(stem, "csv");
        let jsonl_path = with_ext(stem, "jsonl");
        let open = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| Error::io(p, e))
        };
        let mut csv = open(&csv_path)?;
        let empty = csv.metadata().map(|m| m.len() == 0).unwrap_or(true);
        if empty {
            writeln!(csv, "{CSV_HEADER}").map_err(|e| Error::io(&csv_path, e))?;
        }
        Ok(SummaryWriter {
            csv,
            jsonl: open(&jsonl_path)?,
            paths: [csv_path, jsonl_path],
        })
    }

    /// Opens the summary of a run that may be a rerun: the rows earlier runs left are rewritten
    /// (atomically) as one row per job, as [`merge`] keeps them, without those of the jobs
    /// `redo` names (the run writes their new rows), and then appended to. Returns the writer
    /// and the jobs that kept a row, so that a rerun adds no second row for a job it skips.
    pub fn resume(stem: &Path, redo: impl Fn(&str) -> bool) -> Result<(Self, HashSet<String>)> {
        let [csv, jsonl] = summary_paths(stem);
        // The CSV half, or the JSON-lines half where only that one is left.
        let earlier = match [&csv, &jsonl].into_iter().find(|p| p.is_file()) {
            Some(p) => read_summary(p)?,
            None => return Ok((Self::open(stem)?, HashSet::new())),
        };
        let kept: Vec<Row> = merge(vec![earlier])
            .into_iter()
            .filter(|r| !redo(&r.job))
            .collect();
        write_summary(stem, &kept)?;
        let jobs = kept.into_iter().map(|r| r.job).collect();
        Ok((Self::open(stem)?, jobs))
    }

    /// The CSV and JSON-lines paths.
    pub fn paths(&self) -> &[PathBuf; 2] {
        &self.paths
    }

    /// Appends one row to both files; each line goes out in one write, so a killed process
    /// leaves whole lines.
    pub fn append(&mut self, row: &Row) -> Result<()> {
        let c = format!("{}\n", row.csv_line());
        self.csv
            .write_all(c.as_bytes())
            .map_err(|e| Error::io(&self.paths[0], e))?;
        let j = format!("{}\n", row.json_line());
        self.jsonl
            .write_all(j.as_bytes())
            .map_err(|e| Error::io(&self.paths[1], e))
    }
}

/// The CSV and JSON-lines paths of the summary `stem` (a path without extension).
pub fn summary_paths(stem: &Path) -> [PathBuf; 2] {
    [with_ext(stem, "csv"), with_ext(stem, "jsonl")]
}

fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Reads a summary written by [`SummaryWriter`]: `.csv` or `.jsonl` by extension. A last line
/// cut short (a killed writer) is ignored; any other bad line is an error naming file and line.
pub fn read_summary(path: &Path) -> Result<Vec<Row>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let bad = |line: u64, msg: String| Error::Parse {
        file: name.clone(),
        line,
        msg,
    };
    let jsonl = name.ends_with(".jsonl") || name.ends_with(".json");
    let rows: Vec<Result<Row>> = if jsonl {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str::<Row>(l).map_err(|e| bad(i as u64 + 1, e.to_string()))
            })
            .collect()
    } else {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(false)
            .from_reader(text.as_bytes());
        reader
            .deserialize::<Row>()
            .map(|r| {
                r.map_err(|e| {
                    let line = e.position().map_or(0, |p| p.line());
                    bad(line, e.to_string())
                })
            })
            .collect()
    };
    let last = rows.len();
    let mut out = Vec::with_capacity(last);
    for (i, r) in rows.into_iter().enumerate() {
        match r {
            Ok(r) => out.push(r),
            // The writer appends whole lines, but a line being written when the process was
            // killed may be cut short: only the last one.
            Err(_) if i + 1 == last => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Merges summaries (per shard, or one resumed several times): one row per job, the job's last
/// `ok` or `failed` row, else its last `skipped` one, sorted by job id.
///
/// ```
/// use segcut::batch::summary::{merge, Row, Status};
/// let ok = Row { job: "a".into(), status: Status::Ok, ..Row::default() };
/// let skipped = Row { job: "a".into(), status: Status::Skipped, ..Row::default() };
/// let merged = merge(vec![vec![ok.clone()], vec![skipped]]);
/// assert_eq!(merged, vec![ok]);
/// ```
pub fn merge(summaries: Vec<Vec<Row>>) -> Vec<Row> {
    let mut by_job: BTreeMap<String, Row> = BTreeMap::new();
    for row in summaries.into_iter().flatten() {
        match by_job.get(&row.job) {
            Some(old) if old.status != Status::Skipped && row.status == Status::Skipped => {}
            _ => {
                by_job.insert(row.job.clone(), row);
            }
        }
    }
    by_job.into_values().collect()
}

/// Reads `inputs`, merges them and writes `STEM.csv` and `STEM.jsonl` atomically; neither may
/// be one of the inputs (checked first, as [`OutputPlan`](crate::io::OutputPlan) does). Returns
/// the merged rows.
pub fn merge_files(inputs: &[PathBuf], stem: &Path) -> Result<Vec<Row>> {
    let mut plan = crate::io::OutputPlan::default();
    for p in inputs {
        plan.input(p, "summary")?;
    }
    for p in summary_paths(stem) {
        plan.output_as(&p, "merged summary", &crate::io::output_format::SUMMARY)?;
    }
    let all = inputs
        .iter()
        .map(|p| read_summary(p))
        .collect::<Result<Vec<_>>>()?;
    let rows = merge(all);
    write_summary(stem, &rows)?;
    Ok(rows)
}

/// Writes `rows` as `STEM.csv` and `STEM.jsonl`, atomically, both or neither.
fn write_summary(stem: &Path, rows: &[Row]) -> Result<()> {
    let mut csv = format!("{CSV_HEADER}\n");
    let mut jsonl = String::new();
    for r in rows {
        csv.push_str(&r.csv_line());
        csv.push('\n');
        jsonl.push_str(&r.json_line());
        jsonl.push('\n');
    }
    let [c, j] = summary_paths(stem);
    crate::io::write_all_atomic(vec![(c, csv.into_bytes()), (j, jsonl.into_bytes())])
}
