//! `gpu-info` at its edges (docs/cli.md): one envelope per device, an unknown device an
//! error listing the devices, numbers checked when parsed.

use std::process::{Command, Output};

fn gpu_info(args: &[&str]) -> Output {
    gpu_info_tuned(args, None)
}

/// `gpu-info` with `TESSERA_TUNING` at `tuning` (or at a file that does not exist).
fn gpu_info_tuned(args: &[&str], tuning: Option<&std::path::Path>) -> Output {
    let missing = std::env::temp_dir().join("tessera-gpu-info-test-no-tuning.json");
    let tuning = tuning.unwrap_or(&missing);
    Command::new(env!("CARGO_BIN_EXE_gpu-info")).args(args).env("TESSERA_TUNING", tuning).output().unwrap()
}

fn lines(out: &Output) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn describes_every_device_and_measures_the_one_asked() {
    let out = gpu_info(&["--no-measure", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let devices = lines(&out);
    assert!(!devices.is_empty());
    for (i, d) in devices.iter().enumerate() {
        assert_eq!(d["command"], "gpu-info");
        assert_eq!(d["index"], i);
        assert_eq!(d["device"], d["name"], "{d}");
        assert!(d.get("ceilings").is_none(), "{d}");
    }
    let out = gpu_info(&["--device", "0", "--copy-mib", "1", "--fma-iterations", "16", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("validation"), "{stderr}");
    let measured = lines(&out);
    assert_eq!(measured.len(), 1);
    assert_eq!(measured[0]["ceilings"]["copy_bytes"], 1 << 20);
    assert!(measured[0]["ceilings"]["copy_gb_per_s"].as_f64().unwrap() > 0.0);
    assert!(measured[0]["ceilings"]["fma_tflop_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn an_unknown_device_is_an_error_that_lists_the_devices() {
    for device in ["no-such-device", "99"] {
        let out = gpu_info(&["--device", device, "--no-measure"]);
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("gpu-info: error: ") && stderr.contains("devices: 0: "), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing measured, nothing printed");
    }
}

#[test]
fn numbers_are_checked_when_parsed_and_version_prints() {
    for args in [["--copy-mib", "0"], ["--copy-mib", "99999"], ["--fma-iterations", "0"]] {
        assert_eq!(gpu_info(&args).status.code(), Some(2), "{args:?}");
    }
    // A probe larger than the device's largest storage buffer (a 32-bit limit, so always
    // under the parser's 16 GiB) fails before it allocates.
    let device = &lines(&gpu_info(&["--device", "0", "--no-measure", "--json"]))[0];
    let over = (device["max_storage_buffer_range"].as_u64().unwrap() >> 20) + 1;
    let out = gpu_info(&["--device", "0", "--copy-mib", &over.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("largest storage buffer"));
    let version = gpu_info(&["--version"]);
    assert!(version.status.success());
    assert_eq!(String::from_utf8(version.stdout).unwrap(), format!("gpu-info {}\n", env!("CARGO_PKG_VERSION")));
    let help = String::from_utf8(gpu_info(&["--help"]).stdout).unwrap();
    assert!(help.contains("Examples:"), "{help}");
}

#[test]
fn shows_the_tuning_in_effect() {
    let device = &lines(&gpu_info(&["--device", "0", "--no-measure", "--json"]))[0];
    assert_eq!(device["tuning"]["kernels"], serde_json::json!({}), "{device}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuning.json");
    let entry = |key: &str, value: u32| serde_json::json!({"params": {key: value}, "sizes": [512], "tuned_ms": [1.0], "default_ms": [2.0]});
    let file = serde_json::json!({"version": 1, "devices": [
        {"device": device["name"], "driver_version": device["driver_version"], "kernels": {"smoe.render": entry("block", 8)}},
        {"device": "another GPU", "driver_version": 1, "kernels": {"lightfield.encode": entry("workgroup", 128)}},
    ]});
    std::fs::write(&path, file.to_string()).unwrap();
    let out = gpu_info_tuned(&["--device", "0", "--no-measure", "--json"], Some(&path));
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let tuning = &lines(&out)[0]["tuning"];
    assert_eq!(tuning["file"], path.display().to_string());
    assert_eq!(tuning["kernels"], serde_json::json!({"smoe.render": {"block": 8}}));
    let text = String::from_utf8(gpu_info_tuned(&["--device", "0", "--no-measure"], Some(&path)).stdout).unwrap();
    assert!(text.contains(&format!("tuning: smoe.render block=8 ({})", path.display())), "{text}");

    // A value the kernel does not take spoils the file: a warning, and the defaults apply.
    std::fs::write(&path, file.to_string().replace("\"block\":8", "\"block\":12")).unwrap();
    let out = gpu_info_tuned(&["--device", "0", "--no-measure"], Some(&path));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.starts_with("gpu-info: warning: ") && stderr.contains("block=12"), "{stderr}");
    assert!(String::from_utf8(out.stdout).unwrap().contains("tuning: built-in defaults"));
}
