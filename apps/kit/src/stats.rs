//! The few statistics the benchmarks and records report: elapsed milliseconds, the median
//! and percentiles of repeated timings.

use std::time::Instant;

/// Milliseconds since `start`.
pub fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// The `q`-quantile of `v` (`q` in [0, 1]), linear between the two nearest ranks; NaN for
/// no values. NaNs in `v` sort last.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n => {
            let at = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
            s[lo] + (s[hi] - s[lo]) * (at - lo as f64)
        }
    }
}

/// The median of `v` (the mean of the middle two for an even count); NaN for no values.
pub fn median(v: &[f64]) -> f64 {
    percentile(v, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(percentile(&[5.0, 1.0, 3.0], 0.0), 1.0);
        assert_eq!(percentile(&[5.0, 1.0, 3.0], 1.0), 5.0);
        assert_eq!(percentile(&[0.0, 10.0], 0.25), 2.5);
    }
}
