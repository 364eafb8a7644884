//! `mosaic bench --costs DIR`: the exact solvers on the kinds of cost matrix the issue's
//! comparisons use, written to DIR as float32 `.npy` so other solvers (scipy, HyLAC; see
//! `apps/mosaic/scripts/exact_costs.py`) solve the very same matrices.
//!
//! Every matrix holds whole numbers below 2^24, exact in float32 and in the integer costs a
//! GPU Hungarian takes:
//! - photo: the cells of a photo (the astronaut, cut into a grid of m cells) against n
//!   random square crops of the other sample photos, 4x4 features compared as `mosaic`
//!   compares them by default (CIELAB), scaled to 0..2^23 and rounded;
//! - uniform: floor(u 2^20), u uniform in [0, 1): a high range, few ties;
//! - integer: floor(u n): a low range, many ties (the case a Hungarian handles best).

use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::Context;
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::colour::Metric;
use crate::cpu::distance::distance_cpu;
use crate::error::Result;
use crate::features::{region_features, Features};
use crate::image_ops::to_rgb;
use crate::matrix::DistanceMatrix;

/// A kind of cost matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Photo,
    Uniform,
    Integer,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Photo, Kind::Uniform, Kind::Integer];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Photo => "photo",
            Kind::Uniform => "uniform",
            Kind::Integer => "integer",
        }
    }
}

/// The largest entry of a photo matrix.
const PHOTO_SCALE: f64 = (1 << 23) as f64;
/// The levels of a uniform matrix.
const UNIFORM_LEVELS: f64 = (1 << 20) as f64;
/// The side the photos are read at.
const PHOTO_PX: usize = 512;

/// The m x n matrix of `kind` (seeded).
pub fn matrix(kind: Kind, m: usize, n: usize, seed: u64) -> Result<DistanceMatrix> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let data = match kind {
        Kind::Photo => {
            let (patches, tiles) = photo_features(m, n, &mut rng)?;
            let d = distance_cpu(&Metric::Lab.features(&patches), &Metric::Lab.features(&tiles));
            let max = d.iter().copied().fold(0.0, f64::max).max(f64::MIN_POSITIVE);
            d.into_iter().map(|x| (x * PHOTO_SCALE / max).round()).collect()
        }
        Kind::Uniform => (0..m * n).map(|_| (rng.gen::<f64>() * UNIFORM_LEVELS).floor()).collect(),
        Kind::Integer => (0..m * n).map(|_| (rng.gen::<f64>() * n as f64).floor()).collect(),
    };
    DistanceMatrix::new(m, n, data)
}

/// The features of a photo's m cells and of n crops of the other photos (4x4 mean sRGB).
fn photo_features(m: usize, n: usize, rng: &mut ChaCha8Rng) -> Result<(Features, Features)> {
    let cells = (4, 4);
    let mut cols = (m as f64).sqrt().round().max(1.0) as usize;
    while !m.is_multiple_of(cols) {
        cols -= 1;
    }
    let rows = m / cols;
    // At least 4 pixels per cell each way.
    let (w, h) = ((4 * cols).max(PHOTO_PX), (4 * rows).max(PHOTO_PX));
    let target = to_rgb(&kit::photos::ASTRONAUT.resized(w, h, 3)?);
    let mut patches = Features::new(cells);
    for r in 0..rows {
        for c in 0..cols {
            let rect =
                (c * w / cols, r * h / rows, (c + 1) * w / cols - c * w / cols, (r + 1) * h / rows - r * h / rows);
            region_features(target.as_slice(), w, rect, cells, &mut patches.data);
        }
    }
    let library: Vec<Vec<f32>> = kit::photos::ALL[1..]
        .iter()
        .map(|p| p.resized(PHOTO_PX, PHOTO_PX, 3).map(|img| to_rgb(&img)))
        .collect::<std::result::Result<_, _>>()?;
    let mut tiles = Features::new(cells);
    for k in 0..n {
        let photo = &library[k % library.len()];
        let side = rng.gen_range(16..PHOTO_PX / 3);
        let (x, y) = (rng.gen_range(0..PHOTO_PX - side), rng.gen_range(0..PHOTO_PX - side));
        region_features(photo.as_slice(), PHOTO_PX, (x, y, side, side), cells, &mut tiles.data);
    }
    Ok((patches, tiles))
}

/// The most levels per column of the matrices the Hungarian method is also timed on alone
/// (to show where [`crate::hungarian::LEVELS_PER_COLUMN`] should lie).
pub const HUNGARIAN_LEVELS: f64 = 512.0;

/// One run of the GPU Hungarian method: its times (ms), its steps and the cost it reached.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HungarianRun {
    pub total_ms: f64,
    pub upload_ms: f64,
    pub device_ms: f64,
    pub certify_ms: f64,
    pub passes: u64,
    pub dual_updates: u64,
    pub cost: f64,
}

/// One matrix solved exactly on the GPU ([`crate::solve::exact_on_gpu`], certified) and the
/// CPU.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CostRecord {
    pub matrix: Kind,
    pub size: String,
    /// The largest entry plus one: the number of cost levels.
    pub levels: f64,
    /// The matrix as float32 `.npy`.
    pub file: PathBuf,
    pub gpu_ms: f64,
    pub gpu_cost: f64,
    /// The GPU solution's f64 duality gap.
    pub gpu_gap: f64,
    /// The GPU exact's upload, GPU solve and host certificate (ms).
    pub gpu_split: (f64, f64, f64),
    /// The GPU Hungarian method alone, whichever solver the GPU exact chose, on matrices of
    /// at most [`HUNGARIAN_LEVELS`] x n levels (where it finished).
    pub hungarian: Option<HungarianRun>,
    /// The CPU exact solver (None with `--skip-cpu`).
    pub cpu_ms: Option<f64>,
    pub cpu_cost: Option<f64>,
    /// Whether the two costs agree (to 1e-9 relative), or true with no CPU run.
    pub equal: bool,
}

impl std::fmt::Display for CostRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hungarian =
            self.hungarian.as_ref().map_or(String::new(), |h| format!(" (Hungarian alone {:.1} ms)", h.total_ms));
        let cpu = self.cpu_ms.map_or(String::new(), |ms| format!("{hungarian}, CPU exact {ms:.1} ms"));
        write!(
            f,
            "exact {} {} ({} levels): GPU {:.1} ms{cpu}, cost {:.0}{}; {}",
            self.matrix.name(),
            self.size,
            self.levels,
            self.gpu_ms,
            self.gpu_cost,
            if self.equal { "" } else { " (CPU and GPU costs differ)" },
            self.file.display()
        )
    }
}

/// Writes each kind of matrix at each size into `dir` and solves it exactly on `ctx` and
/// (unless `skip_cpu`) on the CPU; one record per matrix.
pub fn run(
    ctx: &Context,
    dir: &Path,
    sizes: &[(usize, usize)],
    skip_cpu: bool,
    mut emit: impl FnMut(&CostRecord),
) -> Result<()> {
    for &(m, n) in sizes {
        for kind in Kind::ALL {
            let d = matrix(kind, m, n, (m * 31 + n) as u64)?;
            let file = dir.join(format!("{}-{m}x{n}.npy", kind.name()));
            kit::npy::write_f32(&file, &[m, n], &d.to_f32())?;
            // One untimed solve first, so the pipelines exist and the clocks are up.
            crate::solve::exact_on_gpu(ctx, &d, &ProgressBar::hidden())?;
            let start = Instant::now();
            let gpu = crate::solve::exact_on_gpu(ctx, &d, &ProgressBar::hidden())?;
            let gpu_ms = start.elapsed().as_secs_f64() * 1e3;
            let gpu_cost = d.cost(&gpu.assignment);
            let hungarian = {
                let start = Instant::now();
                let solution = crate::gpu::hungarian::solve(ctx, &d, HUNGARIAN_LEVELS * n as f64)?;
                let total_ms = start.elapsed().as_secs_f64() * 1e3;
                solution.map(|s| HungarianRun {
                    total_ms,
                    upload_ms: s.upload_ms,
                    device_ms: s.auction_ms,
                    certify_ms: s.repair_ms,
                    passes: s.rounds,
                    dual_updates: s.reverse_rounds,
                    cost: d.cost(&s.assignment),
                })
            };
            let cpu = (!skip_cpu).then(|| {
                let start = Instant::now();
                let solution = crate::exact::solve(&d, &ProgressBar::hidden());
                (start.elapsed().as_secs_f64() * 1e3, d.cost(&solution))
            });
            let levels = d.data.iter().copied().fold(0.0, f64::max) + 1.0;
            emit(&CostRecord {
                matrix: kind,
                size: format!("{m}x{n}"),
                levels,
                file,
                gpu_ms,
                gpu_cost,
                gpu_gap: gpu.gap,
                gpu_split: (gpu.upload_ms, gpu.auction_ms, gpu.repair_ms),
                cpu_ms: cpu.map(|c| c.0),
                cpu_cost: cpu.map(|c| c.1),
                equal: cpu.is_none_or(|c| (c.1 - gpu_cost).abs() <= 1e-9 * gpu_cost.max(1.0))
                    && hungarian.as_ref().is_none_or(|h| h.cost == gpu_cost),
                hungarian,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_are_whole_numbers_in_their_ranges_and_solved_alike() {
        let ctx = engine::testing::context();
        let dir = tempfile::tempdir().unwrap();
        let mut records = Vec::new();
        run(ctx, dir.path(), &[(30, 77)], false, |r| records.push(r.clone())).unwrap();
        assert_eq!(records.len(), 3);
        for r in &records {
            assert!(r.equal, "{r}");
            let (shape, data) = kit::npy::read_f64(&r.file).unwrap();
            assert_eq!(shape, vec![30, 77]);
            assert!(data.iter().all(|&x| x.fract() == 0.0 && x >= 0.0 && x < (1 << 24) as f64), "{r}");
            let max = data.iter().copied().fold(0.0, f64::max);
            let want = match r.matrix {
                Kind::Photo => PHOTO_SCALE,
                Kind::Uniform => UNIFORM_LEVELS,
                Kind::Integer => 77.0,
            };
            assert!(max < want + 1.0 && max > want * 0.5, "{r}: largest entry {max}");
        }
        engine::testing::assert_no_validation_messages();
    }
}
