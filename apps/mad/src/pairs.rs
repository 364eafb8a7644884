//! The batch input: a CSV of `ref,dist` lines, paths relative to the CSV's folder, UTF-8
//! with or without a byte-order mark, at most [`MAX_BYTES`]. A first line that reads
//! `ref,dist` (any case, any spacing) is a header; blank lines and lines starting with `#`
//! are skipped.

use std::path::{Path, PathBuf};

use crate::MadError;

/// The largest pairs file read: a million pairs of paths of 30 characters each, 64 times over.
pub const MAX_BYTES: u64 = 64 << 20;

/// One line of the CSV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The paths as written in the CSV (reported back in the output).
    pub ref_name: String,
    pub dist_name: String,
    /// The paths resolved against the CSV's folder.
    pub reference: PathBuf,
    pub distorted: PathBuf,
}

/// Parses the CSV text of `path`.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Pair>, MadError> {
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut pairs = Vec::new();
    let mut at_start = true;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 2 || fields.iter().any(|f| f.is_empty()) {
            return Err(MadError::Pairs {
                path: path.display().to_string(),
                message: format!("line {}: expected `ref,dist`, got {line:?}", n + 1),
            });
        }
        let first = std::mem::replace(&mut at_start, false);
        if first && fields[0].eq_ignore_ascii_case("ref") && fields[1].eq_ignore_ascii_case("dist") {
            continue;
        }
        pairs.push(Pair {
            ref_name: fields[0].to_string(),
            dist_name: fields[1].to_string(),
            reference: base.join(fields[0]),
            distorted: base.join(fields[1]),
        });
    }
    if pairs.is_empty() {
        return Err(MadError::Pairs {
            path: path.display().to_string(),
            message: "holds no pairs (lines `ref,dist`)".into(),
        });
    }
    Ok(pairs)
}

/// Reads and parses a pairs CSV (a regular file of at most [`MAX_BYTES`], its byte-order
/// mark dropped).
pub fn read(path: &Path) -> Result<Vec<Pair>, MadError> {
    let text = kit::input::read_text(path, MAX_BYTES)?;
    parse(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_comments_and_relative_paths() {
        let pairs = parse("ref,dist\n# c\n\na.png, b.png\nsub/c.png,d.png\n", Path::new("/data/pairs.csv")).unwrap();
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[0].reference, Path::new("/data/a.png"));
        assert_eq!(pairs[1].distorted, Path::new("/data/d.png"));
        assert_eq!(pairs[1].ref_name, "sub/c.png");
        assert!(parse("a.png\n", Path::new("p.csv")).is_err());
        assert!(parse("a.png,b.png,c.png\n", Path::new("p.csv")).is_err());
        // Only the first line can be a header.
        assert_eq!(parse("a.png,b.png\nREF , Dist\n", Path::new("p.csv")).unwrap().len(), 2);
        assert_eq!(parse("# c\nREF , Dist\nref,dist\n", Path::new("p.csv")).unwrap().len(), 1);
        // No pairs at all is an error, not a silent success.
        for empty in ["", "ref,dist\n", "# c\n\n"] {
            let e = parse(empty, Path::new("p.csv")).unwrap_err().to_string();
            assert!(e.contains("p.csv: holds no pairs"), "{empty:?}: {e}");
        }
    }
}
