//! What the integration tests that compare scores share.

/// The relative difference of `a` from `b` (0 where they are equal, infinities included).
pub fn rel(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        (a - b).abs() / b.abs().max(1e-12)
    }
}
