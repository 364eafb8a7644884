//! Benchmark support: the kernels `sweep` can vary, and CSV/PNG output of a sweep.
//!
//! A [`SweepKernel`] runs one GPU kernel at a given workgroup size and problem size and
//! reports GPU milliseconds (timestamps) and the bytes it must move, so every point is also
//! shown as a fraction of the measured copy bandwidth.

pub mod args;
pub mod kernels;
pub mod plot;

use engine::Context;

/// One measured point of a sweep.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Point {
    pub kernel: String,
    pub workgroup: u32,
    pub size: u64,
    pub gpu_ms: f64,
    /// Bytes read plus written per run, divided by the time.
    pub gb_per_s: f64,
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} wg {:>4} {:>11} elements: {:.4} ms, {:.1} GB/s",
            self.kernel, self.workgroup, self.size, self.gpu_ms, self.gb_per_s
        )
    }
}

/// A kernel that `sweep` can run over a grid of workgroup and problem sizes.
pub trait SweepKernel {
    fn name(&self) -> &'static str;
    /// Workgroup sizes the kernel accepts (specialization constant 0).
    fn workgroups(&self) -> Vec<u32>;
    /// Runs at `size` elements with workgroup size `workgroup`; returns (best GPU ms over a
    /// few repeats, bytes moved per run).
    fn run(&self, ctx: &Context, workgroup: u32, size: u64) -> engine::Result<(f64, u64)>;
    /// Bytes a run at `size` elements allocates at most, host and device together (for the
    /// memory budget); sizes are at most [`args::MAX_ELEMENTS`], so this cannot overflow.
    fn footprint(&self, size: u64) -> u64;
}

/// Records `body` once (warm-up: first use of pipelines and buffers), keeps the GPU busy for
/// `warm_up` so the timed work runs at full clocks, then records `body` `repeats` times in one
/// submission with a timestamp after each; returns the GPU ms of every repetition.
pub fn time_repetitions(
    ctx: &Context,
    repeats: u32,
    warm_up: std::time::Duration,
    mut body: impl FnMut(&mut engine::Recorder) -> engine::Result<()>,
) -> engine::Result<Vec<f64>> {
    let mut warm = ctx.recorder()?;
    body(&mut warm)?;
    warm.submit()?.wait()?;
    engine::ceilings::warm_up(ctx, warm_up)?;
    let mut rec = ctx.recorder()?;
    rec.enable_profiling(repeats + 1)?;
    for _ in 0..repeats {
        body(&mut rec)?;
        rec.barrier();
        rec.mark("rep");
    }
    Ok(rec.submit()?.wait_profiled()?.iter().map(|p| p.ms).collect())
}

/// Writes points as CSV (header included).
pub fn to_csv(points: &[Point]) -> String {
    let mut s = String::from("kernel,workgroup,size,gpu_ms,gb_per_s\n");
    for p in points {
        s.push_str(&format!("{},{},{},{:.6},{:.3}\n", p.kernel, p.workgroup, p.size, p.gpu_ms, p.gb_per_s));
    }
    s
}
