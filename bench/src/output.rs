//! A sweep's points as CSV (one row per point, one column per parameter) and JSON lines.

use crate::measure::Point;

/// Field text of an optional number: "unknown" where the driver or model has none.
fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "unknown".into(), |v| v.to_string())
}

/// The CSV of `points` (one kernel: its parameter keys are the same on every row).
pub fn csv(points: &[Point]) -> String {
    let keys: Vec<&str> = points.first().map(|p| p.params.0.iter().map(|(k, _)| *k).collect()).unwrap_or_default();
    let mut s = String::from("kernel,");
    for k in &keys {
        s.push_str(k);
        s.push(',');
    }
    s.push_str(
        "size,unit,median_ms,min_ms,repeats,floor,floor_amount,floor_ms,floor_fraction,check_passed,max_error,\
         threads,registers,spills,shared_bytes,shared_source,workgroups_per_sm,occupancy,limited_by,limits\n",
    );
    for p in points {
        let shape = p.shape.as_ref();
        let mut row = vec![p.kernel.to_string()];
        row.extend(p.params.0.iter().map(|(_, v)| v.to_string()));
        row.extend([
            p.size.to_string(),
            p.unit.to_string(),
            format!("{:.6}", p.median_ms),
            format!("{:.6}", p.min_ms),
            p.repeats.to_string(),
            p.floor.to_string(),
            p.floor_amount.to_string(),
            format!("{:.6}", p.floor_ms),
            format!("{:.4}", p.floor_fraction),
            p.check_passed.to_string(),
            format!("{:e}", p.max_error),
            opt(shape.map(|s| s.threads)),
            opt(shape.and_then(|s| s.registers)),
            opt(shape.and_then(|s| s.spills)),
            opt(shape.map(|s| s.shared_bytes)),
            shape.map_or("unknown", |s| s.shared_source).to_string(),
            opt(p.workgroups_per_sm),
            opt(p.occupancy.map(|o| format!("{o:.4}"))),
            format!("\"{}\"", p.limited_by.replace('"', "'")),
            format!("\"{}\"", p.limits),
        ]);
        s.push_str(&row.join(","));
        s.push('\n');
    }
    s
}

/// One JSON object per point, per line.
pub fn json_lines(points: &[Point]) -> String {
    points.iter().filter_map(|p| serde_json::to_string(p).ok()).map(|l| l + "\n").collect()
}
