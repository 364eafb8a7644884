//! Summaries of repeated measurements: the median and percentiles of timings, and wall
//! milliseconds since an instant.

use std::time::Instant;

/// The median of `v`: the mean of the two middle values for an even count, 0 for none.
pub fn median(v: &[f64]) -> f64 {
    percentile(v, 50.0)
}

/// The `p`-th percentile of `v` (p clamped to [0, 100]), interpolated linearly between the
/// two closest ranks; 0 for none.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = p.clamp(0.0, 100.0) / 100.0 * (sorted.len() - 1) as f64;
    let (below, above) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[below] + (sorted[above] - sorted[below]) * (rank - below as f64)
}

/// Wall milliseconds since `t`.
pub fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles_of_odd_even_and_empty_sets() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[7.5]), 7.5);
        let v: Vec<f64> = (1..=11).rev().map(f64::from).collect();
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 100.0), 11.0);
        assert_eq!(percentile(&v, 90.0), 10.0);
        assert_eq!(percentile(&v, 95.0), 10.5);
        assert_eq!(percentile(&v, 250.0), 11.0);
    }

    #[test]
    fn ms_since_counts_wall_time() {
        let t = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(ms_since(t) >= 5.0);
    }
}
