//! How well a metric agrees with people, as IQA papers report it: Spearman's rank-order
//! correlation (SROCC), Kendall's rank-order correlation (KROCC, tau-b), and Pearson's
//! linear correlation (PLCC) and RMSE after the usual monotonic 4-parameter logistic
//! mapping of the metric onto the subjective scale (VQEG FR-TV Phase II):
//!
//! `q(x) = (b1 - b2) / (1 + exp(-(x - b3) / |b4|)) + b2`,
//!
//! fitted by Levenberg-Marquardt on least squares. Rank correlations need no fit. Signs are
//! kept: MAD grows with distortion, so against MOS (higher is better) SROCC is negative and
//! against DMOS positive; the logistic fit absorbs either direction (b1 < b2 or b1 > b2).

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::MadError;

/// Columns a subjective file may name its images by, in order of preference.
const NAME_COLUMNS: [&str; 6] = ["dist", "dist_img", "image", "name", "file", "filename"];
/// Columns a subjective file may hold its scores in, when `--column` is not given.
const SCORE_COLUMNS: [&str; 3] = ["mos", "dmos", "score"];
/// Subjective files are small tables; this bounds the read.
const MAX_SUBJECTIVE_BYTES: u64 = 256 << 20;

/// The agreement of `n` metric scores with their subjective scores.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Agreement {
    pub pairs: usize,
    pub srocc: f64,
    pub krocc: f64,
    pub plcc: f64,
    pub rmse: f64,
    /// The fitted logistic's parameters b1..b4.
    pub logistic: [f64; 4],
}

/// Ranks from 1, ties sharing the mean of their ranks.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut out = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = mean;
        }
        i = j + 1;
    }
    out
}

/// Pearson's correlation; 0 where either side is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        0.0
    } else {
        sxy / (sxx * syy).sqrt()
    }
}

/// Spearman's rank-order correlation (Pearson's on tie-averaged ranks).
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    pearson(&ranks(x), &ranks(y))
}

/// Kendall's tau-b, which corrects for ties; O(n^2), fine for the 10^4 pairs of the largest
/// IQA databases.
pub fn kendall(x: &[f64], y: &[f64]) -> f64 {
    let (mut concordant, mut discordant, mut ties_x, mut ties_y) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let (dx, dy) = (x[i] - x[j], y[i] - y[j]);
            match (dx == 0.0, dy == 0.0) {
                (true, true) => {}
                (true, false) => ties_x += 1,
                (false, true) => ties_y += 1,
                (false, false) if (dx > 0.0) == (dy > 0.0) => concordant += 1,
                _ => discordant += 1,
            }
        }
    }
    let n1 = (concordant + discordant + ties_x) as f64;
    let n2 = (concordant + discordant + ties_y) as f64;
    if n1 == 0.0 || n2 == 0.0 {
        0.0
    } else {
        (concordant - discordant) as f64 / (n1 * n2).sqrt()
    }
}

/// The 4-parameter logistic at `x`, and its gradient in b.
fn logistic(b: &[f64; 4], x: f64) -> (f64, [f64; 4]) {
    let s = b[3].abs().max(1e-12);
    let e = (-(x - b[2]) / s).exp();
    let g = 1.0 / (1.0 + e);
    // dg/db3 = -g(1-g)/s; dg/ds = -g(1-g)(x-b3)/s^2; ds/db4 = sign(b4).
    let dg = g * (1.0 - g);
    let q = (b[0] - b[1]) * g + b[1];
    let sign = if b[3] < 0.0 { -1.0 } else { 1.0 };
    (q, [g, 1.0 - g, -(b[0] - b[1]) * dg / s, -(b[0] - b[1]) * dg * (x - b[2]) / (s * s) * sign])
}

/// Solves the 4x4 system `a x = r` by Gaussian elimination with partial pivoting.
fn solve4(mut a: [[f64; 4]; 4], mut r: [f64; 4]) -> Option<[f64; 4]> {
    for c in 0..4 {
        let p = (c..4).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, p);
        r.swap(c, p);
        let (pivot_row, pivot_r) = (a[c], r[c]);
        for (row, ri) in a.iter_mut().zip(r.iter_mut()).skip(c + 1) {
            let f = row[c] / pivot_row[c];
            for (x, p) in row.iter_mut().zip(pivot_row.iter()).skip(c) {
                *x -= f * p;
            }
            *ri -= f * pivot_r;
        }
    }
    let mut x = [0.0; 4];
    for c in (0..4).rev() {
        x[c] = (r[c] - (c + 1..4).map(|k| a[c][k] * x[k]).sum::<f64>()) / a[c][c];
    }
    Some(x)
}

fn sse(b: &[f64; 4], x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(&xi, &yi)| (logistic(b, xi).0 - yi).powi(2)).sum()
}

/// Fits the logistic to (x, y) by Levenberg-Marquardt from VQEG's usual start.
pub fn fit_logistic(x: &[f64], y: &[f64]) -> [f64; 4] {
    let n = x.len() as f64;
    let (ymax, ymin) = y.iter().fold((f64::MIN, f64::MAX), |(hi, lo), &v| (hi.max(v), lo.min(v)));
    let mx = x.iter().sum::<f64>() / n;
    let sx = (x.iter().map(|v| (v - mx).powi(2)).sum::<f64>() / n).sqrt().max(1e-9);
    // Start increasing or decreasing as the data go.
    let mut b = if pearson(x, y) >= 0.0 { [ymax, ymin, mx, sx] } else { [ymin, ymax, mx, sx] };
    let mut lambda = 1e-3;
    let mut current = sse(&b, x, y);
    for _ in 0..500 {
        let mut jtj = [[0.0; 4]; 4];
        let mut jtr = [0.0; 4];
        for (&xi, &yi) in x.iter().zip(y) {
            let (q, g) = logistic(&b, xi);
            for i in 0..4 {
                jtr[i] += g[i] * (yi - q);
                for k in 0..4 {
                    jtj[i][k] += g[i] * g[k];
                }
            }
        }
        let mut damped = jtj;
        for (i, row) in damped.iter_mut().enumerate() {
            row[i] += lambda * jtj[i][i].max(1e-12);
        }
        let Some(step) = solve4(damped, jtr) else { break };
        let trial = [b[0] + step[0], b[1] + step[1], b[2] + step[2], b[3] + step[3]];
        let next = sse(&trial, x, y);
        if next.is_finite() && next < current {
            let gain = current - next;
            b = trial;
            current = next;
            lambda = (lambda / 3.0).max(1e-12);
            if gain <= 1e-12 * current.max(1e-300) {
                break;
            }
        } else {
            lambda *= 4.0;
            if lambda > 1e12 {
                break;
            }
        }
    }
    b
}

/// SROCC, KROCC, and PLCC/RMSE after the logistic fit. Needs at least 4 pairs and finite
/// values.
pub fn agreement(metric: &[f64], subjective: &[f64]) -> Result<Agreement, String> {
    if metric.len() != subjective.len() {
        return Err(format!("{} metric scores against {} subjective scores", metric.len(), subjective.len()));
    }
    if metric.len() < 4 {
        return Err(format!("{} pairs: at least 4 are needed to fit the 4-parameter logistic", metric.len()));
    }
    if metric.iter().chain(subjective).any(|v| !v.is_finite()) {
        return Err("every score must be finite".into());
    }
    // A constant side ranks nothing: every correlation is undefined (not 0).
    for (values, what) in [(metric, "metric"), (subjective, "subjective")] {
        if values.iter().all(|&v| v == values[0]) {
            return Err(format!(
                "all {} {what} scores are equal ({}): they rank no pair, so the correlations are undefined",
                values.len(),
                values[0]
            ));
        }
    }
    let b = fit_logistic(metric, subjective);
    let mapped: Vec<f64> = metric.iter().map(|&v| logistic(&b, v).0).collect();
    let rmse = (sse(&b, metric, subjective) / metric.len() as f64).sqrt();
    Ok(Agreement {
        pairs: metric.len(),
        srocc: spearman(metric, subjective),
        krocc: kendall(metric, subjective),
        plcc: pearson(&mapped, subjective),
        rmse,
        logistic: b,
    })
}

fn bad(path: &Path, message: impl std::fmt::Display) -> MadError {
    MadError::Pairs { path: path.display().to_string(), message: message.to_string() }
}

/// Subjective scores by image name from a CSV with a header (see [`NAME_COLUMNS`] and
/// [`SCORE_COLUMNS`]); every score must be finite.
pub fn read_subjective(path: &Path, column: Option<&str>) -> Result<HashMap<String, f64>, MadError> {
    let text = kit::input::read_text(path, MAX_SUBJECTIVE_BYTES)?;
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(text.as_bytes());
    let headers: Vec<String> =
        reader.headers().map_err(|e| bad(path, e))?.iter().map(|h| h.to_ascii_lowercase()).collect();
    let find = |names: &[&str]| names.iter().find_map(|n| headers.iter().position(|h| h == n));
    let name_at = find(&NAME_COLUMNS)
        .ok_or_else(|| bad(path, format!("no name column; the header needs one of {}", NAME_COLUMNS.join(", "))))?;
    let score_at = match column {
        Some(c) => headers
            .iter()
            .position(|h| h.eq_ignore_ascii_case(c))
            .ok_or_else(|| bad(path, format!("no column {c:?}; the header has {}", headers.join(", "))))?,
        None => find(&SCORE_COLUMNS).ok_or_else(|| {
            bad(path, format!("no score column; give --column or name one {}", SCORE_COLUMNS.join(", ")))
        })?,
    };
    let mut scores = HashMap::new();
    for (n, record) in reader.records().enumerate() {
        let record = record.map_err(|e| bad(path, e))?;
        let name = record.get(name_at).unwrap_or_default().to_string();
        let value: f64 = record
            .get(score_at)
            .and_then(|v| v.parse().ok())
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad(path, format!("row {}: the score is not a finite number", n + 2)))?;
        scores.insert(name, value);
    }
    Ok(scores)
}

/// What `mad correlate` prints.
#[derive(Clone, Debug, Serialize)]
pub struct CorrelateReport {
    #[serde(flatten)]
    pub agreement: Agreement,
    /// Scored images with no subjective score, and the reverse.
    pub unmatched_scores: usize,
    pub unmatched_subjective: usize,
}

impl std::fmt::Display for CorrelateReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.agreement;
        write!(
            f,
            "{} pairs: SROCC {:.4}, KROCC {:.4}, PLCC {:.4}, RMSE {:.4} (after the 4-parameter logistic)",
            a.pairs, a.srocc, a.krocc, a.plcc, a.rmse
        )?;
        if self.unmatched_scores + self.unmatched_subjective > 0 {
            write!(f, "; unmatched: {} scores, {} subjective", self.unmatched_scores, self.unmatched_subjective)?;
        }
        Ok(())
    }
}

/// The file name of a path as written (`awgn/1600.AWGN.1.png` -> `1600.AWGN.1.png`).
fn file_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// Joins metric scores and subjective scores by image name (as written, else by file name)
/// and measures their agreement.
pub fn join_and_agree(
    metric: &HashMap<String, f64>,
    subjective: &HashMap<String, f64>,
) -> Result<CorrelateReport, MadError> {
    let by_file: HashMap<&str, f64> = subjective.iter().map(|(k, &v)| (file_name(k), v)).collect();
    let mut names: Vec<&String> = metric.keys().collect();
    names.sort();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    let mut used = 0usize;
    for name in names {
        let found = subjective.get(name).copied().or_else(|| by_file.get(file_name(name)).copied());
        if let Some(s) = found {
            x.push(metric[name]);
            y.push(s);
            used += 1;
        }
    }
    if used < 4 {
        return Err(MadError::Correlate(format!(
            "{used} of the {} scored images have a subjective score ({} subjective scores): at least 4 pairs are \
             needed to fit the 4-parameter logistic",
            metric.len(),
            subjective.len()
        )));
    }
    let agreement = agreement(&x, &y).map_err(MadError::Correlate)?;
    Ok(CorrelateReport {
        agreement,
        unmatched_scores: metric.len() - used,
        unmatched_subjective: subjective.len().saturating_sub(used),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_correlations_match_hand_computed_values() {
        // scipy.stats.spearmanr([1,2,3,4,5],[5,6,7,8,7]) = 0.8207826816681233
        let (x, y) = ([1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 6.0, 7.0, 8.0, 7.0]);
        assert!((spearman(&x, &y) - 0.8207826816681233).abs() < 1e-12);
        // scipy.stats.kendalltau (tau-b) of the same = 0.7378647873726218
        assert!((kendall(&x, &y) - 0.7378647873726218).abs() < 1e-12);
        assert_eq!(ranks(&[3.0, 1.0, 3.0]), vec![2.5, 1.0, 2.5]);
        assert!((spearman(&x, &[9.0, 8.0, 7.0, 6.0, 5.0]) + 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_logistic_fit_recovers_a_logistic() {
        let truth = [80.0, 10.0, 0.5, 0.12];
        let x: Vec<f64> = (0..60).map(|i| i as f64 / 59.0).collect();
        let y: Vec<f64> = x.iter().map(|&v| logistic(&truth, v).0 + 0.3 * (v * 37.0).sin()).collect();
        let a = agreement(&x, &y).unwrap();
        assert!(a.plcc > 0.999, "{a:?}");
        assert!(a.rmse < 0.5, "{a:?}");
        // Decreasing data (MAD against MOS) fit too.
        let down: Vec<f64> = y.iter().map(|v| 100.0 - v).collect();
        let d = agreement(&x, &down).unwrap();
        assert!(d.plcc > 0.999 && d.srocc < -0.99, "{d:?}");
        assert!(agreement(&x[..3], &y[..3]).is_err());
    }

    #[test]
    fn constant_scores_are_refused_not_reported_as_no_correlation() {
        let (same, varied) = ([2.0; 5], [1.0, 3.0, 2.0, 5.0, 4.0]);
        let e = agreement(&same, &varied).unwrap_err();
        assert!(e.contains("all 5 metric scores are equal") && e.contains("undefined"), "{e}");
        let e = agreement(&varied, &same).unwrap_err();
        assert!(e.contains("subjective scores are equal"), "{e}");
        assert!(agreement(&varied, &[5.0, 1.0, 2.0, 3.0, 4.0]).is_ok());
    }

    #[test]
    fn too_few_matches_say_how_many_matched() {
        let metric: HashMap<String, f64> = (0..5).map(|k| (format!("d{k}.png"), k as f64)).collect();
        let people: HashMap<String, f64> = (0..3).map(|k| (format!("x/d{k}.png"), k as f64)).collect();
        let e = join_and_agree(&metric, &people).unwrap_err().to_string();
        assert!(e.starts_with("3 of the 5 scored images have a subjective score"), "{e}");
        assert!(!e.contains("correlate:"), "{e}");
    }
}
