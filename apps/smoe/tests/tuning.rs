//! `smoe render` takes its tile from the tuning file (`kit::tuning`) when `--tile` is not
//! given, and says so in its record; `--tile` wins over the file.

use std::process::Command;

fn render(tuning: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let dir = tuning.parent().unwrap();
    let model = dir.join("m.json");
    if !model.exists() {
        smoe::fit::grid_init(&smoe::data::sample_image(24, 20), 4).save(&model).unwrap();
    }
    let out = dir.join("out.png");
    let mut args = vec!["render", model.to_str().unwrap(), "--out", out.to_str().unwrap(), "--json"];
    args.extend(extra);
    let run = Command::new(env!("CARGO_BIN_EXE_smoe")).args(&args).env("TESSERA_TUNING", tuning).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() && !stderr.contains("validation"), "{stderr}");
    serde_json::from_slice(&run.stdout).unwrap()
}

#[test]
fn the_tuned_block_is_the_default_tile() {
    let info = engine::testing::context().info().clone();
    let dir = tempfile::tempdir().unwrap();
    let tuning = dir.path().join("tuning.json");
    let line = render(&tuning, &[]);
    assert_eq!((line["tile"].as_u64(), line["tile_from"].as_str()), (Some(16), Some("default")), "{line}");
    let file = serde_json::json!({"version": 1, "devices": [{
        "device": info.name, "driver_version": info.driver_version,
        "kernels": {"smoe.render": {"params": {"block": 8}, "sizes": [512], "tuned_ms": [1.0], "default_ms": [1.2]}},
    }]});
    std::fs::write(&tuning, file.to_string()).unwrap();
    let line = render(&tuning, &[]);
    assert_eq!((line["tile"].as_u64(), line["tile_from"].as_str()), (Some(8), Some("tuning")), "{line}");
    let line = render(&tuning, &["--tile", "32"]);
    assert_eq!((line["tile"].as_u64(), line["tile_from"].as_str()), (Some(32), Some("option")), "{line}");
}
