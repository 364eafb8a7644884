//! Helpers for tests: one shared context per test binary (validation on in debug builds),
//! the validation-message check, random inputs and relative-error comparison.

use std::sync::OnceLock;

use crate::context::{validation_message_count, Context};

/// The device tests run on (lavapipe on CI), opened once per test binary. Honours
/// `TESSERA_DEVICE` (index or name substring).
pub fn context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        let selector = crate::DeviceSelector::from_env().expect("TESSERA_DEVICE names a device");
        Context::open(&selector).expect("open a Vulkan device for tests")
    })
}

/// Panics if any validation message was printed so far in this process.
pub fn assert_no_validation_messages() {
    let n = validation_message_count();
    assert_eq!(n, 0, "{n} Vulkan validation message(s); see stderr");
}

/// Largest relative error of `got` against `want`, relative to `max(|want|, floor)` so that
/// values near zero are compared against the scale `floor` instead of blowing up.
pub fn max_rel_error(got: &[f32], want: &[f64], floor: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "length mismatch");
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs() / w.abs().max(floor)).fold(0.0, f64::max)
}

/// Sizes the primitives are tested at: 1, one below a workgroup, a non-multiple, and one
/// past a power of two.
pub const AWKWARD_SIZES: [usize; 4] = [1, 31, 1000, (1 << 20) + 7];

/// A small real compute pipeline for tests of the pipeline machinery itself: the 64-wide
/// u32 sum reduction (two buffers, 8 bytes of push constants).
pub(crate) fn sum_pipeline(ctx: &Context) -> crate::ComputePipeline {
    ctx.compute_pipeline_for::<crate::prims::reduce::SumPush>(
        "reduce_sum_u32",
        crate::shaders::REDUCE_SUM_U32,
        2,
        &[64],
    )
    .expect("build the test pipeline")
}

/// Records (and drops unsubmitted) a dispatch whose second binding reaches past the end of
/// its buffer, bypassing the declared passes' checks: the validation layer must report it.
/// For the test that proves the validation check can fail, in a process of its own.
pub fn record_binding_past_the_end(ctx: &Context) {
    let pipe = sum_pipeline(ctx);
    let a = ctx.buffer::<u32>(16, crate::Location::Device, "a").expect("a test buffer");
    let past_the_end = crate::BufferBinding { raw: a.raw(), offset: 0, range: 1 << 20 };
    let mut rec = ctx.recorder().expect("a recorder");
    rec.dispatch(&pipe, &[&a, &past_the_end], &[16u32, 64u32], [1, 1, 1]);
}
