//! Reading what the user gave: regular files only (a FIFO or a device would hang or never
//! end), reads bounded by a stated limit, text with its byte-order mark dropped.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::{KitError, Result};

/// Opens `path` for reading if it is a regular file; returns it with its length.
pub fn open_regular(path: &Path) -> Result<(File, u64)> {
    let meta = std::fs::metadata(path).map_err(|e| KitError::file(path, e))?;
    if meta.is_dir() {
        return Err(KitError::file(path, "is a folder, not a file"));
    }
    if !meta.is_file() {
        return Err(KitError::file(path, "is not a regular file (a FIFO, socket or device); refusing to read it"));
    }
    let file = File::open(path).map_err(|e| KitError::file(path, e))?;
    Ok((file, meta.len()))
}

/// Reads the whole of a regular file of at most `limit` bytes (and within the budget). A
/// file over both is refused by the tighter one, so that a caller whose limit is the budget
/// itself gets the budget's message, which names `--max-memory`.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    if len > limit && limit < crate::budget::get() {
        return Err(KitError::file(
            path,
            format!("is {} long; at most {} is read", crate::units::human(len), crate::units::human(limit)),
        ));
    }
    crate::budget::check(len, format!("reading {}", path.display()))?;
    let mut bytes = Vec::with_capacity(len as usize);
    // take(): a file that grows while it is read still stops at the limit.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| KitError::file(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(KitError::file(path, "grew past its limit while being read"));
    }
    Ok(bytes)
}

/// Reads a UTF-8 text file of at most `limit` bytes, without a leading byte-order mark.
pub fn read_text(path: &Path, limit: u64) -> Result<String> {
    let bytes = read_bounded(path, limit)?;
    let text = String::from_utf8(bytes).map_err(|_| KitError::file(path, "is not UTF-8 text"))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_limits() {
        let (dir, p) = crate::testing::temp_path("a.csv");
        std::fs::write(&p, "\u{feff}ref,dist\n").unwrap();
        assert_eq!(read_text(&p, 100).unwrap(), "ref,dist\n");
        assert!(read_text(&p, 4).is_err());
        assert!(read_bounded(dir.path(), 100).unwrap_err().to_string().contains("folder"));
        assert!(read_bounded(Path::new("/dev/zero"), 100).unwrap_err().to_string().contains("not a regular file"));
    }
}
