//! Benchmark support: the registry of every sweepable kernel of the engine and the five
//! apps, the measurement of one point (median GPU time, floor fraction, check, registers,
//! shared memory, theoretical occupancy), and CSV / JSON-lines / PNG output. The tuning
//! file `sweep --tune` writes is `kit::tuning`.

pub mod args;
pub mod measure;
pub mod occupancy;
pub mod output;
pub mod plot;
pub mod registry;
pub mod tuned;

use engine::Context;

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
        rec.mark_isolated("rep");
    }
    Ok(rec.submit()?.wait_profiled()?.iter().map(|p| p.ms).collect())
}
