//! The memory budget every reader checks before it allocates: a declared size (an image's
//! width x height, an array's shape, a payload length) is turned into bytes in checked u64
//! arithmetic and compared with the budget, so a file of a hundred bytes cannot make the
//! process ask for terabytes. The default is half of the machine's physical memory;
//! `--max-memory` sets another (docs/cli.md).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{KitError, Result};

/// 0 means "not set": the default is computed on first use.
static BUDGET: AtomicU64 = AtomicU64::new(0);

/// When physical memory cannot be read (not Linux), the default budget.
const FALLBACK_BYTES: u64 = 4 << 30;

/// Sets the budget for this process (from `--max-memory`).
pub fn set(bytes: u64) {
    BUDGET.store(bytes.max(1), Ordering::Relaxed);
}

/// The budget in bytes.
pub fn get() -> u64 {
    match BUDGET.load(Ordering::Relaxed) {
        0 => default_bytes(),
        b => b,
    }
}

/// Half of physical memory (MemTotal in /proc/meminfo), else 4 GiB.
pub fn default_bytes() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    });
    total.map(|t| t / 2).unwrap_or(FALLBACK_BYTES)
}

/// Refuses `bytes` for `what` when it exceeds the budget.
pub fn check(bytes: u64, what: impl Into<String>) -> Result<()> {
    let budget = get();
    if bytes > budget {
        return Err(KitError::OverBudget { what: what.into(), bytes, budget });
    }
    Ok(())
}

/// The bytes of `count` elements of `elem` bytes each, for arrays whose shape came from a
/// file: the product of `dims` times `elem` in checked arithmetic, then checked against the
/// budget. Returns the element count.
pub fn elements(dims: &[u64], elem: u64, what: &str) -> Result<u64> {
    let count = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| KitError::Invalid(format!("{what}: the size {dims:?} overflows 64 bits")))?;
    let bytes = count
        .checked_mul(elem)
        .ok_or_else(|| KitError::Invalid(format!("{what}: the size {dims:?} overflows 64 bits")))?;
    check(bytes, what)?;
    Ok(count)
}

/// Parses a size such as `512M`, `2G`, `1.5GiB` or `1000000` (bytes) for `--max-memory`.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("{text:?} is not a size such as 512M or 2G"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("unknown unit {other:?} in {text:?}; use K, M, G or T")),
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("{text:?} is not a usable size"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_overflow_is_caught() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("5X").is_err());
        assert!(elements(&[u64::MAX, 2], 4, "x").is_err());
        let err = elements(&[1 << 20, 1 << 20], 4, "a test array").unwrap_err().to_string();
        assert!(err.contains("a test array needs 4.0 TiB"), "{err}");
        assert_eq!(elements(&[3, 5], 4, "x").unwrap(), 15);
    }
}
