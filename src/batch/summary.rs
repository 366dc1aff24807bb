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
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::manifest::{parse_csv_line, parse_json_object};
use crate::{Error, Result};

/// How a job ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
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

    fn parse(s: &str) -> Option<Self> {
        [Status::Ok, Status::Failed, Status::Skipped]
            .into_iter()
            .find(|k| k.name() == s)
    }
}

/// One job's line of the summary.
#[derive(Clone, Debug, Default, PartialEq)]
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
    pub read_ms: f64,
    /// Model fitting, graph building and solving, ms.
    pub solve_ms: f64,
    /// Encoding and writing the output, ms.
    pub write_ms: f64,
    /// The output file.
    pub output: String,
}

/// The CSV header, in the order of [`Row::csv_line`].
pub const CSV_HEADER: &str =
    "job,kind,status,error,solver,device,flow,verified,read_ms,solve_ms,write_ms,output";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"").replace(['\n', '\r'], " "))
    } else {
        s.to_string()
    }
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Row {
    /// The row as a CSV line (no newline).
    pub fn csv_line(&self) -> String {
        [
            csv_field(&self.job),
            csv_field(&self.kind),
            self.status.name().into(),
            csv_field(&self.error),
            csv_field(&self.solver),
            csv_field(&self.device),
            self.flow.map(|f| f.to_string()).unwrap_or_default(),
            self.verified.to_string(),
            format!("{:.3}", self.read_ms),
            format!("{:.3}", self.solve_ms),
            format!("{:.3}", self.write_ms),
            csv_field(&self.output),
        ]
        .join(",")
    }

    /// The row as one JSON object (no newline).
    pub fn json_line(&self) -> String {
        format!(
            "{{\"job\":{},\"kind\":{},\"status\":\"{}\",\"error\":{},\"solver\":{},\"device\":{},\
             \"flow\":{},\"verified\":{},\"read_ms\":{:.3},\"solve_ms\":{:.3},\"write_ms\":{:.3},\
             \"output\":{}}}",
            json_string(&self.job),
            json_string(&self.kind),
            self.status.name(),
            json_string(&self.error),
            json_string(&self.solver),
            json_string(&self.device),
            self.flow.map(|f| f.to_string()).unwrap_or("null".into()),
            self.verified,
            self.read_ms,
            self.solve_ms,
            self.write_ms,
            json_string(&self.output),
        )
    }

    /// A row from the fields of one summary line (CSV cells or JSON values by column name).
    fn from_fields(get: impl Fn(&str) -> Option<String>, file: &str, line: u64) -> Result<Self> {
        let bad = |msg: String| Error::Parse {
            file: file.into(),
            line,
            msg,
        };
        let text = |k: &str| get(k).unwrap_or_default();
        let ms = |k: &str| -> Result<f64> {
            let v = text(k);
            if v.is_empty() {
                return Ok(0.0);
            }
            v.parse()
                .map_err(|_| bad(format!("{k} '{v}' is not a number")))
        };
        let status = text("status");
        let flow = text("flow");
        Ok(Row {
            job: get("job").ok_or_else(|| bad("no job column".into()))?,
            kind: text("kind"),
            status: Status::parse(&status)
                .ok_or_else(|| bad(format!("status '{status}' is not ok, failed or skipped")))?,
            error: text("error"),
            solver: text("solver"),
            device: text("device"),
            flow: match flow.as_str() {
                "" | "null" => None,
                f => Some(
                    f.parse()
                        .map_err(|_| bad(format!("flow '{f}' is not an integer")))?,
                ),
            },
            verified: text("verified") == "true",
            read_ms: ms("read_ms")?,
            solve_ms: ms("solve_ms")?,
            write_ms: ms("write_ms")?,
            output: text("output"),
        })
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
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(path, e))?;
    let jsonl = name.ends_with(".jsonl") || name.ends_with(".json");
    let mut rows = Vec::new();
    let mut header: Vec<String> = Vec::new();
    let last = lines.len();
    for (i, line) in lines.iter().enumerate() {
        let no = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Result<BTreeMap<String, String>> = if jsonl {
            parse_json_object(line, &name, no)
        } else if header.is_empty() {
            header = parse_csv_line(line, &name, no)?;
            continue;
        } else {
            parse_csv_line(line, &name, no).and_then(|cells| {
                if cells.len() != header.len() {
                    return Err(Error::Parse {
                        file: name.clone(),
                        line: no,
                        msg: format!("{} cells, the header has {}", cells.len(), header.len()),
                    });
                }
                Ok(header.iter().cloned().zip(cells).collect())
            })
        };
        match fields.and_then(|f| Row::from_fields(|k| f.get(k).cloned(), &name, no)) {
            Ok(r) => rows.push(r),
            // The writer appends whole lines, but a line being written when the process was
            // killed may be cut short: only the last one.
            Err(_) if i + 1 == last => {}
            Err(e) => return Err(e),
        }
    }
    Ok(rows)
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
