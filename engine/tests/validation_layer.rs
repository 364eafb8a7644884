//! Proves the validation check can fail: a deliberately invalid descriptor must be reported.
//! (Its own test binary, because the message counter is per process.)

use engine::testing;

#[test]
fn an_invalid_binding_is_reported_by_the_validation_layer() {
    if !cfg!(debug_assertions) {
        return;
    }
    testing::record_binding_past_the_end(testing::context());
    assert!(
        engine::validation_message_count() > 0,
        "validation layer did not report a binding past the end of a buffer"
    );
}
