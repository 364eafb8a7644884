//! Proves the validation check can fail: a deliberately invalid descriptor must be reported.
//! (Its own test binary, because the message counter is per process.)

use engine::{testing, BufferBinding, Location};

#[test]
fn an_invalid_binding_is_reported_by_the_validation_layer() {
    if !cfg!(debug_assertions) {
        return;
    }
    let ctx = testing::context();
    let pipe = testing::sum_pipeline(ctx);
    let a = ctx.buffer::<u32>(16, Location::Device, "a").unwrap();
    let past_the_end = BufferBinding { raw: a.raw(), offset: 0, range: 1 << 20 };
    let mut rec = ctx.recorder().unwrap();
    rec.dispatch(&pipe, &[&a, &past_the_end], &[16u32, 64u32], [1, 1, 1]);
    drop(rec);
    assert!(
        engine::validation_message_count() > 0,
        "validation layer did not report a binding past the end of a buffer"
    );
}
