//! `sweep` and `prims-bench` at their edges (docs/cli.md): usage mistakes are exit 2 before
//! any work, a device that is not there or a workgroup it cannot run is exit 1 with a
//! message that says why.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn sweep(args: &[&str], out: &std::path::Path) -> (Output, Duration) {
    let start = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_sweep")).args(args).arg("--out").arg(out).output().unwrap();
    (output, start.elapsed())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn zero_and_oversized_numbers_are_usage_errors_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--workgroups", "0"][..],
        &["--workgroups", "64,96"],
        &["--sizes", "0"],
        &["--sizes", "1K,0"],
        &["--sizes", "3G"],
        &["--sizes", "99999999999999999999"],
        &["--kernel", "nope"],
        &["--param", "workgroup=64,x"],
        &["--repeats", "0"],
    ] {
        let (out, took) = sweep(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("sweep: error: "), "{args:?}: {}", stderr(&out));
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
    let (out, _) = sweep(&["--sizes", "0", "--json"], dir.path());
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["usage"], true, "{line}");
}

#[test]
fn a_device_or_workgroup_that_is_not_there_fails_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = sweep(&["--device", "no-such-device"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("devices: 0: "), "the devices there are: {}", stderr(&out));
    let (out, _) = sweep(&["--device", "99"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (out, _) = sweep(&["--workgroups", "65536", "--sizes", "1K"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("accepted values [64, 128, 256, 512, 1024]"), "{}", stderr(&out));
    let (out, _) = sweep(&["--kernel", "engine.scan", "--param", "tile=4", "--sizes", "1K"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no parameter \"tile\" (it has: workgroup, items)"), "{}", stderr(&out));
    let (out, _) = sweep(&["--param", "workgroup", "--sizes", "1K"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let (out, _) = sweep(&["--sizes", "2G"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("largest storage buffer") || stderr(&out).contains("memory budget"));
    let (out, _) = sweep(&["--sizes", "1M", "--max-memory", "1M"], dir.path());
    assert!(stderr(&out).contains("memory budget"), "{}", stderr(&out));
}

#[test]
fn an_output_folder_that_is_a_file_fails_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("taken");
    std::fs::write(&file, b"x").unwrap();
    let (out, took) = sweep(&["--sizes", "1K"], &file);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("is a file where a folder must be"), "{}", stderr(&out));
    assert!(took < Duration::from_secs(10));
}

#[test]
fn version_and_help_name_the_binary_and_show_examples() {
    for bin in [env!("CARGO_BIN_EXE_sweep"), env!("CARGO_BIN_EXE_prims-bench")] {
        let out = Command::new(bin).arg("--version").output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.ends_with(&format!(" {}\n", env!("CARGO_PKG_VERSION"))), "{text}");
        let help = String::from_utf8(Command::new(bin).arg("--help").output().unwrap().stdout).unwrap();
        assert!(help.contains("Examples:"), "{help}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_prims-bench")).args(["--repeats", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `sweep --tune` tunes over the sizes the device can run: one past its storage-buffer range
/// (lavapipe binds 128 MiB) is skipped and named, the others are tuned and the tuning file is
/// written with them.
#[test]
fn tune_skips_sizes_past_the_binding_range_and_writes_the_tuning_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tuning.json");
    let range = engine::testing::context().info().max_storage_buffer_range;
    // Elements of 4 bytes, one past the range; only where that is small enough to be cheap.
    let past = range / 4 + 1;
    let sizes = if range <= 256 << 20 { format!("1000,{past}") } else { "1000".to_string() };
    let file_arg = file.to_str().unwrap();
    let args = ["--tune", "--kernel", "engine.scan", "--param", "workgroup=128,256", "--param", "items=4,16"];
    let more = ["--sizes", &sizes, "--repeats", "1", "--warm-up-ms", "0", "--tuning-file", file_arg, "--json"];
    let (out, _) = sweep(&[&args[..], &more[..]].concat(), dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // One line per measured point, then the summary.
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let line: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(line["sizes"], serde_json::json!([1000]), "{line}");
    if range <= 256 << 20 {
        let skipped = &line["skipped_sizes"][0];
        assert_eq!(skipped["size"], past, "{line}");
        assert!(skipped["reason"].as_str().unwrap().contains("binds at most"), "{line}");
    }
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(written.to_string().contains("engine.scan"), "{written}");
}
