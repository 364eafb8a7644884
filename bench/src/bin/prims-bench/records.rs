//! `prims-bench`'s lines: one typed record per measurement, printed as a text line or, under
//! `--json`, as the envelope's fields. Field names are those earlier runs recorded
//! (BENCHMARKS.md); every time is in milliseconds, named `*_ms`.

use std::fmt;

use serde::Serialize;

/// What every measurement line reports: GPU, CPU and floor times, and what the floor is.
/// Its fields stand among the line's own (flattened).
#[derive(Serialize)]
pub struct Timing {
    pub gpu_ms: f64,
    pub cpu_ms: f64,
    pub floor_ms: f64,
    pub floor: &'static str,
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gpu {:.3} ms, cpu {:.1} ms, floor {:.3} ms", self.gpu_ms, self.cpu_ms, self.floor_ms)
    }
}

fn verdict(correct: bool) -> &'static str {
    if correct {
        "correct"
    } else {
        "WRONG"
    }
}

/// The two ceilings every floor is computed from (the device is in the envelope).
#[derive(Serialize)]
pub struct CeilingsLine {
    pub bench: &'static str,
    pub copy_gb_per_s: f64,
    pub fma_tflop_per_s: f64,
}

impl From<&engine::ceilings::Ceilings> for CeilingsLine {
    fn from(c: &engine::ceilings::Ceilings) -> Self {
        CeilingsLine { bench: "ceilings", copy_gb_per_s: c.copy_gb_per_s, fma_tflop_per_s: c.fma_tflop_per_s }
    }
}

impl fmt::Display for CeilingsLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ceilings: copy {:.1} GB/s, FMA {:.2} TFLOP/s", self.copy_gb_per_s, self.fma_tflop_per_s)
    }
}

#[derive(Serialize)]
pub struct ScanLine {
    pub bench: &'static str,
    pub size: usize,
    /// The kernel's shape (tuned for this device, or the built-in default).
    pub workgroup: u32,
    pub items_per_invocation: u32,
    #[serde(flatten)]
    pub timing: Timing,
    pub fraction_of_copy_bw: f64,
    pub gb_per_s: f64,
    pub correct: bool,
}

impl fmt::Display for ScanLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} n={} (workgroup {} x {} items): {}",
            self.bench, self.size, self.workgroup, self.items_per_invocation, self.timing
        )?;
        write!(
            f,
            " ({:.0}% of copy bandwidth), {:.1} GB/s, {}",
            100.0 * self.fraction_of_copy_bw,
            self.gb_per_s,
            verdict(self.correct)
        )
    }
}

#[derive(Serialize)]
pub struct SortLine {
    pub bench: &'static str,
    pub size: usize,
    #[serde(flatten)]
    pub timing: Timing,
    pub cpu: &'static str,
    pub passes_floor_ms: f64,
    pub mkeys_per_s: f64,
    pub correct: bool,
}

impl fmt::Display for SortLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} n={}: {}", self.bench, self.size, self.timing)?;
        write!(
            f,
            " (passes {:.3} ms), {:.0} Mkeys/s, {}",
            self.passes_floor_ms,
            self.mkeys_per_s,
            verdict(self.correct)
        )
    }
}

/// Row or column sums of an m x n matrix.
#[derive(Serialize)]
pub struct ReduceLine {
    pub bench: &'static str,
    pub size: [usize; 2],
    #[serde(flatten)]
    pub timing: Timing,
    pub fraction_of_copy_bw: f64,
}

impl fmt::Display for ReduceLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}x{}: {}", self.bench, self.size[0], self.size[1], self.timing)?;
        write!(f, " ({:.0}% of copy bandwidth)", 100.0 * self.fraction_of_copy_bw)
    }
}

#[derive(Serialize)]
pub struct FftLine {
    pub bench: &'static str,
    pub size: [usize; 2],
    pub batch: usize,
    #[serde(flatten)]
    pub timing: Timing,
    pub cpu: &'static str,
    pub passes_per_transform: usize,
    /// The engine kernel of each pass (`fft_lines`, `fft_mixed`, `fft_long`), `+`-joined.
    pub kernels: String,
    pub fraction_of_copy_bw: f64,
    pub round_trip_max_abs_error: f32,
    pub correct: bool,
}

impl fmt::Display for FftLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (size, batch) = (self.size, self.batch);
        write!(f, "{} {}x{} x{batch} ({}): {}", self.bench, size[0], size[1], self.kernels, self.timing)?;
        write!(
            f,
            " ({:.0}% of copy bandwidth), round trip error {:.1e}, {}",
            100.0 * self.fraction_of_copy_bw,
            self.round_trip_max_abs_error,
            verdict(self.correct)
        )
    }
}

#[derive(Serialize)]
pub struct GemmLine {
    pub bench: &'static str,
    pub batch: usize,
    pub size: usize,
    #[serde(flatten)]
    pub timing: Timing,
    pub cpu: &'static str,
    pub tflop_per_s: f64,
}

impl fmt::Display for GemmLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} x {}^3: {}", self.bench, self.batch, self.size, self.timing)?;
        write!(f, ", {:.3} TFLOP/s", self.tflop_per_s)
    }
}
