//! The benchmark binaries run end to end at tiny sizes, so the GPU run cannot find them broken.

use std::process::Command;

#[test]
fn prims_bench_quick_reports_correct_results() {
    let out = Command::new(env!("CARGO_BIN_EXE_prims-bench")).args(["--quick", "--repeats", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 5, "{stdout}");
    for l in &lines {
        assert_ne!(l["correct"], serde_json::Value::Bool(false), "{l}");
    }
    assert!(!String::from_utf8_lossy(&out.stderr).contains("validation"));
}

#[test]
fn sweep_writes_csv_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sweep"))
        .args(["--kernel", "scan", "--sizes", "1000,4K", "--workgroups", "64,128", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("scan.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(std::fs::metadata(dir.path().join("scan.png")).unwrap().len() > 1000);
    let bad = Command::new(env!("CARGO_BIN_EXE_sweep")).args(["--kernel", "nope"]).output().unwrap();
    assert!(!bad.status.success());
}
