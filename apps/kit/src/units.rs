//! Quantities written for people.

/// A byte count for people: `1.5 GiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(super::human(1536), "1.5 KiB");
        assert_eq!(super::human(1000), "1000 bytes");
        assert_eq!(super::human(3 << 30), "3.0 GiB");
    }
}
