//! The GPU encoder takes the shape the tuning file (`kit::tuning`, kernel
//! `composite.encode`) gives the device, where it builds and passes its self-check; keys
//! the file lacks keep their built-in values. (One test: the file is read once per process.)

use composite::gpu::encode::{EncodeConfig, GpuEncoder, ENCODE_SHAPES, TUNING_KERNEL};

#[test]
fn the_encoder_runs_the_tuned_shape() {
    let ctx = engine::testing::context();
    let info = ctx.info();
    let dir = tempfile::tempdir().unwrap();
    let tuning = dir.path().join("tuning.json");
    let default = ENCODE_SHAPES[0];
    // Not one of the built-in shapes, and no batch: the default's.
    let file = serde_json::json!({"version": 1, "devices": [{
        "device": info.name, "driver_version": info.driver_version,
        "kernels": {TUNING_KERNEL: {"params": {"workgroup": 128, "per_lane": 64}, "sizes": [2160],
            "tuned_ms": [1.0], "default_ms": [1.2]}},
    }]});
    std::fs::write(&tuning, file.to_string()).unwrap();
    // SAFETY: set before anything in this process reads the environment's tuning path, and
    // no other test runs in this binary.
    std::env::set_var("TESSERA_TUNING", &tuning);
    let want = EncodeConfig { workgroup: 128, per_lane: 64, batch: default.batch };
    assert_eq!(EncodeConfig::tuned(info), Some(want));
    assert_eq!(GpuEncoder::new(ctx).unwrap().config(), want);
    engine::testing::assert_no_validation_messages();
}
