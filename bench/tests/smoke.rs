//! The benchmark binaries run end to end at tiny sizes, so the GPU run cannot find them broken.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(stdout);
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn prims_bench_quick_reports_correct_results() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_prims-bench")).args(["--quick", "--repeats", "2", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = json_lines(&out.stdout);
    // Ceilings, scan, sort, row and column sums, the FFT on a power of two and on a mixed
    // radix size, GEMM.
    assert_eq!(lines.len(), 8, "{lines:?}");
    for l in &lines {
        assert_eq!(l["command"], "prims-bench", "{l}");
        assert!(l["device"].is_string(), "{l}");
        assert_ne!(l["correct"], serde_json::Value::Bool(false), "{l}");
    }
    assert!(lines[0]["copy_gb_per_s"].as_f64().unwrap() > 0.0);
    assert!(lines[1..].iter().all(|l| l["gpu_ms"].as_f64().unwrap() > 0.0));
    assert!(!stderr.contains("validation"), "{stderr}");
}

#[test]
fn sweep_writes_csv_and_png_all_with_the_umask_mode() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("new/sweep");
    // The umask is the shell's, so the test does not depend on the one it runs under.
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 022; exec "$0" --kernel scan --sizes 1000,4K --workgroups 128 --param items=8,16 --repeats 2 --warm-up-ms 0 --json --out "$1""#)
        .arg(env!("CARGO_BIN_EXE_sweep"))
        .arg(&folder)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 5, "four points and the summary: {lines:?}");
    assert!(lines[..4].iter().all(|p| p["kernel"] == "engine.scan" && p["median_ms"].as_f64().unwrap() > 0.0));
    assert!(lines[..4].iter().all(|p| p["check_passed"] == true && p["occupancy"].as_f64().unwrap() > 0.0));
    let summary = &lines[4];
    assert_eq!(summary["points"], 4);
    assert_eq!(summary["out"].as_array().unwrap().len(), 5, "{summary}");
    let csv = folder.join("engine.scan.csv");
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 5);
    assert_eq!(std::fs::read_to_string(folder.join("engine.scan.jsonl")).unwrap().lines().count(), 4);
    for png in ["engine.scan.workgroup.png", "engine.scan.items.png", "engine.scan.fig9.png"] {
        assert!(std::fs::read(folder.join(png)).unwrap().starts_with(b"\x89PNG"));
    }
    for file in std::fs::read_dir(&folder).unwrap() {
        let file = file.unwrap().path();
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o644, "{}", file.display());
    }
    let names: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 5, "no temporary files left: {names:?}");
}
