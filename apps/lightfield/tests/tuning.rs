//! `lightfield encode` and `decode` open their GPU codec with the workgroups the tuning file
//! (`kit::tuning`) gives the device; a file that fails its checks is a warning and the
//! built-in workgroup applies.

use std::path::Path;
use std::process::{Command, Output};

fn lightfield(args: &[&str], tuning: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_lightfield")).args(args).env("TESSERA_TUNING", tuning).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("validation"), "lightfield {args:?}: {stderr}");
    out
}

#[test]
fn the_codec_takes_the_tuned_workgroups() {
    let info = engine::testing::context().info().clone();
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let tuning = dir.path().join("tuning.json");
    lightfield(&["generate", "--out", &p("lf.npy"), "--views", "5x3", "--size", "22x17", "--seed", "2"], &tuning);
    // Patches whose views tile the 5 x 3 grid: padding would add its own warning.
    let train = ["train", "--input", &p("lf.npy"), "--dictionaries", "2", "--patch", "5x5x5x3"];
    lightfield(&[&train[..], &["--out", &p("d.lfd"), "--iterations", "1", "--backend", "cpu"]].concat(), &tuning);
    let round_trip = |tag: &str| -> Output {
        let (lfc, npy) = (p(&format!("{tag}.lfc")), p(&format!("{tag}.npy")));
        let enc = [
            "encode",
            "--input",
            &p("lf.npy"),
            "--dict",
            &p("d.lfd"),
            "--sparsity",
            "300",
            "--epsilon",
            "0.01",
            "--out",
            &lfc,
        ];
        let out = lightfield(&enc, &tuning);
        lightfield(&["decode", &lfc, "--out", &npy], &tuning);
        out
    };
    let entry = |wg: u32| serde_json::json!({"params": {"workgroup": wg}, "sizes": [4096], "tuned_ms": [1.0], "default_ms": []});
    let file = serde_json::json!({"version": 1, "devices": [{
        "device": info.name, "driver_version": info.driver_version,
        "kernels": {"lightfield.encode": entry(64), "lightfield.decode": entry(128)},
    }]});
    std::fs::write(&tuning, file.to_string()).unwrap();
    assert!(round_trip("tuned").stderr.is_empty());
    let decoded = |tag: &str| kit::npy::read(&dir.path().join(format!("{tag}.npy"))).unwrap().data;
    std::fs::write(&tuning, file.to_string().replace("\"workgroup\":64", "\"workgroup\":65")).unwrap();
    let stderr = String::from_utf8(round_trip("spoilt").stderr).unwrap();
    assert!(stderr.starts_with("lightfield: warning: ") && stderr.contains("workgroup=65"), "{stderr}");
    // The workgroup changes only the order of float reductions.
    let (tuned, built_in) = (decoded("tuned"), decoded("spoilt"));
    let max = tuned.iter().zip(&built_in).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(tuned.len() == built_in.len() && max < 1e-3, "{max}");
}
