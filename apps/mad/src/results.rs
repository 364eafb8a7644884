//! The results file of `mad batch --out`: one row per pair, CSV (`.csv`) or JSON lines
//! (`.jsonl`), written as pairs complete so that an interrupted batch resumes from it.
//!
//! This file is the one output that is not written atomically, on purpose: it is a log that
//! grows. On resume a torn last line (no newline: the run was killed mid-write) is cut off,
//! the pairs already scored are skipped, and failed pairs are tried again; the row read last
//! for a pair is the one that counts ([`read_scores`]).

use std::collections::{HashMap, HashSet};
use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::{BatchLine, Outcome};
use crate::MadError;

/// The formats of a results file, by extension.
pub const EXTENSIONS: &[&str] = &["csv", "jsonl"];

/// The header of a CSV results file: [`Row`]'s fields.
const CSV_HEADER: [&str; 9] = ["ref", "dist", "mad", "detection", "appearance", "alpha", "width", "height", "error"];

/// Results files are read whole on resume and by `mad correlate`.
const MAX_BYTES: u64 = 1 << 30;

/// One row: the pair as named in the input, and its scores or its error.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(rename = "dist")]
    pub distorted: String,
    pub mad: Option<f64>,
    pub detection: Option<f64>,
    pub appearance: Option<f64>,
    pub alpha: Option<f64>,
    pub width: Option<usize>,
    pub height: Option<usize>,
    pub error: Option<String>,
}

impl From<&BatchLine> for Row {
    fn from(line: &BatchLine) -> Row {
        let mut row = Row { reference: line.reference.clone(), distorted: line.distorted.clone(), ..Row::default() };
        match &line.outcome {
            Outcome::Scored(r) => {
                row.mad = Some(r.scores.mad);
                row.detection = Some(r.scores.detection);
                row.appearance = Some(r.scores.appearance);
                row.alpha = Some(r.scores.alpha);
                row.width = Some(r.width);
                row.height = Some(r.height);
            }
            Outcome::Failed { error } => row.error = Some(error.clone()),
        }
        row
    }
}

fn bad(path: &Path, message: impl std::fmt::Display) -> MadError {
    MadError::Pairs { path: path.display().to_string(), message: message.to_string() }
}

fn is_jsonl(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
}

/// The rows of a results file, in file order. A last line without its newline is dropped
/// when `tolerate_torn_end` (a resumed log), an error otherwise.
fn read_rows(path: &Path, tolerate_torn_end: bool) -> Result<(Vec<Row>, usize), MadError> {
    let text = kit::input::read_text(path, MAX_BYTES)?;
    let complete = match text.rfind('\n') {
        Some(end) => end + 1,
        None => 0,
    };
    if complete < text.len() && !tolerate_torn_end {
        return Err(bad(path, "the last line is cut short"));
    }
    let body = &text[..if tolerate_torn_end { complete } else { text.len() }];
    let rows = if is_jsonl(path) {
        body.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| serde_json::from_str::<Row>(l).map_err(|e| bad(path, format!("line {}: {e}", n + 1))))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        let mut reader = csv::Reader::from_reader(body.as_bytes());
        // A CSV that is not a results file (a pairs CSV, say) is never appended to.
        let header: Vec<String> = reader.headers().map_err(|e| bad(path, e))?.iter().map(str::to_string).collect();
        if !body.is_empty() && header != CSV_HEADER {
            return Err(bad(
                path,
                format!(
                    "not a results file of mad batch: its header is {:?}, not {:?}{}",
                    header.join(","),
                    CSV_HEADER.join(","),
                    if tolerate_torn_end { "; it is left as it is: give another --out" } else { "" }
                ),
            ));
        }
        reader
            .deserialize::<Row>()
            .enumerate()
            .map(|(n, r)| r.map_err(|e| bad(path, format!("row {}: {e}", n + 1))))
            .collect::<Result<Vec<_>, _>>()?
    };
    if let Some(row) = rows.iter().find(|r| r.mad.is_some_and(|m| !m.is_finite())) {
        return Err(bad(path, format!("the score of {} is not finite", row.distorted)));
    }
    Ok((rows, complete))
}

/// Writes one row to the open file (CSV or JSON lines) and flushes it.
type RowWriter = Box<dyn FnMut(&Row) -> std::io::Result<()>>;

/// The results file of a running batch.
pub struct Results {
    path: PathBuf,
    writer: RowWriter,
    /// Pairs scored by an earlier run of the batch, as (ref, dist).
    done: HashSet<(String, String)>,
}

impl Results {
    /// Opens `path` for the batch: a new file gets its header; an existing one is resumed
    /// (its torn last line cut off, its scored pairs remembered).
    pub fn open(path: &Path) -> Result<Results, MadError> {
        let io = |e: std::io::Error| bad(path, e);
        let mut done = HashSet::new();
        let exists = path.exists();
        if exists {
            let (rows, complete) = read_rows(path, true)?;
            for row in rows {
                let key = (row.reference.clone(), row.distorted.clone());
                if row.error.is_none() && row.mad.is_some() {
                    done.insert(key);
                } else {
                    done.remove(&key);
                }
            }
            OpenOptions::new().write(true).open(path).and_then(|f| f.set_len(complete as u64)).map_err(io)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(io)?;
        let empty = file.metadata().map_err(io)?.len() == 0;
        let writer: RowWriter = if is_jsonl(path) {
            let mut out = BufWriter::new(file);
            Box::new(move |row: &Row| {
                serde_json::to_writer(&mut out, row)?;
                out.write_all(b"\n")?;
                out.flush()
            })
        } else {
            let mut out = csv::WriterBuilder::new().has_headers(empty).from_writer(file);
            Box::new(move |row: &Row| {
                out.serialize(row).map_err(std::io::Error::other)?;
                out.flush()
            })
        };
        Ok(Results { path: path.to_path_buf(), writer, done })
    }

    /// Whether an earlier run already scored this pair.
    pub fn has(&self, reference: &str, distorted: &str) -> bool {
        self.done.contains(&(reference.to_string(), distorted.to_string()))
    }

    /// How many pairs an earlier run scored.
    pub fn resumed(&self) -> usize {
        self.done.len()
    }

    /// Appends one pair's row (flushed, so a killed batch loses at most the line in flight).
    pub fn append(&mut self, line: &BatchLine) -> Result<(), MadError> {
        (self.writer)(&Row::from(line)).map_err(|e| bad(&self.path, e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The scores of a results file (CSV or JSON lines) by distorted image, the last row of each
/// pair counting; pairs that failed are left out.
pub fn read_scores(path: &Path) -> Result<HashMap<String, f64>, MadError> {
    let (rows, _) = read_rows(path, false)?;
    let mut scores = HashMap::new();
    for row in rows {
        match row.mad {
            Some(m) if row.error.is_none() => scores.insert(row.distorted, m),
            _ => scores.remove(&row.distorted),
        };
    }
    Ok(scores)
}

/// Fails before any work if `path` cannot hold a results file (extension, folder, one of
/// the inputs). An existing file is fine: the batch resumes from it.
pub fn check(path: &Path, inputs: &[&Path]) -> Result<(), MadError> {
    kit::output::check_file(path, EXTENSIONS, inputs)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_header_is_the_rows_fields() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(Row::default()).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next().unwrap(), CSV_HEADER.join(","));
    }

    /// A CSV that is not a results file is refused, not appended to; an empty one and a
    /// results file are resumed.
    #[test]
    fn only_a_results_file_is_resumed() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in
            [("pairs.csv", "ref,dist\na.png,b.png\n"), ("other.csv", "x,y\n1,2\n"), ("one.csv", "ref\n")]
        {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let e = Results::open(&path).err().expect("refused").to_string();
            assert!(e.contains("not a results file of mad batch"), "{name}: {e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{name} left as it was");
            assert!(read_scores(&path).is_err());
        }
        let path = dir.path().join("empty.csv");
        std::fs::write(&path, "").unwrap();
        assert_eq!(Results::open(&path).unwrap().resumed(), 0);
        let results = dir.path().join("results.csv");
        std::fs::write(&results, format!("{}\na.png,b.png,1.5,2,3,0.5,40,40,\n", CSV_HEADER.join(","))).unwrap();
        assert_eq!(Results::open(&results).unwrap().resumed(), 1);
        assert_eq!(read_scores(&results).unwrap()["b.png"], 1.5);
    }
}
