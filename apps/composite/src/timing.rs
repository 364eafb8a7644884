//! Timing helpers: GPU time of recorded passes (timestamps, or wall-clock on devices
//! without them) and wall-clock time of host work.

use std::time::Instant;

use engine::{Context, PassTime, Recorder};

use kit::stats::ms_since;

use crate::error::Result;

/// Runs `f` and returns its result and wall-clock milliseconds.
pub fn time_ms<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let out = f();
    (out, ms_since(t))
}

/// Total GPU milliseconds of profiled passes, or `wall` when there were no timestamps.
pub fn gpu_ms(passes: &[PassTime], wall: f64) -> f64 {
    if passes.is_empty() {
        wall
    } else {
        passes.iter().map(|p| p.ms).sum()
    }
}

/// Records `f` as one profiled pass, submits, waits, and returns its GPU milliseconds.
pub fn timed_pass(ctx: &Context, f: impl FnOnce(&mut Recorder)) -> Result<f64> {
    let wall = Instant::now();
    let mut rec = ctx.recorder()?;
    rec.enable_profiling(2)?;
    f(&mut rec);
    rec.mark("pass");
    let passes = rec.submit()?.wait_profiled()?;
    Ok(gpu_ms(&passes, ms_since(wall)))
}
