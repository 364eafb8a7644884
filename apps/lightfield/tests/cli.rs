//! End-to-end tests of the `lightfield` binary on small generated light fields (lavapipe).

use std::path::Path;
use std::process::{Command, Output};

fn lightfield(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lightfield")).args(args).output().expect("run lightfield")
}

fn ok(args: &[&str]) -> String {
    let out = lightfield(args);
    assert!(out.status.success(), "lightfield {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must fail cleanly: non-zero exit, an error message naming `needle`,
/// no panic.
fn fails(args: &[&str], needle: &str) {
    let out = lightfield(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "lightfield {args:?} should fail");
    assert!(stderr.contains(needle), "lightfield {args:?}: expected {needle:?} in {stderr}");
    assert!(!stderr.contains("panicked"), "lightfield {args:?} panicked: {stderr}");
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

#[test]
fn generate_train_encode_decode_info() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["generate", "--out", &p(d, "train.npy"), "--views", "4x4", "--size", "30x25", "--seed", "1"]);
    // 5 x 3 views of 22 x 17 pixels: padded along every axis by the 5x5x4x4 patch.
    ok(&["generate", "--out", &p(d, "lf.npy"), "--views", "5x3", "--size", "22x17", "--seed", "2"]);
    let train = ok(&[
        "train",
        "--input",
        &p(d, "train.npy"),
        "--dictionaries",
        "3",
        "--patch",
        "5x5x4x4",
        "--out",
        &p(d, "d.lfd"),
        "--iterations",
        "1",
        "--json",
    ]);
    assert!(train.lines().all(|l| json(l).is_object()));
    let enc = |backend: &str, out: &str| {
        json(&ok(&[
            "encode",
            "--input",
            &p(d, "lf.npy"),
            "--dict",
            &p(d, "d.lfd"),
            "--sparsity",
            "900",
            "--epsilon",
            "0.01",
            "--out",
            &p(d, out),
            "--backend",
            backend,
            "--json",
        ]))
    };
    let gpu = enc("gpu", "gpu.lfc");
    let cpu = enc("cpu", "cpu.lfc");
    // 2 x 1 view blocks x 4 x 5 pixel blocks.
    assert_eq!(gpu["patches"], 40);
    for key in ["mean_coefficients", "bits_per_sample", "psnr_db", "seconds"] {
        assert!(gpu[key].as_f64().unwrap() > 0.0, "{key} in {gpu}");
    }
    // Patches under T keep RMSE <= 0.01, so the whole light field is at least 40 dB.
    assert!(gpu["psnr_db"].as_f64().unwrap() >= 40.0, "{gpu}");
    assert!((gpu["psnr_db"].as_f64().unwrap() - cpu["psnr_db"].as_f64().unwrap()).abs() < 0.05);

    ok(&["decode", &p(d, "gpu.lfc"), "--out", &p(d, "back.npy")]);
    let back = engine::io::read_npy(&d.join("back.npy")).unwrap();
    assert_eq!(back.shape, vec![5, 3, 17, 22, 3]);
    assert_eq!(back.dtype, engine::io::NpyDtype::F32);
    ok(&["decode", &p(d, "gpu.lfc"), "--out", &p(d, "again.npy"), "--backend", "cpu"]);
    let again = engine::io::read_npy(&d.join("again.npy")).unwrap();
    let worst = back.data.iter().zip(&again.data).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(worst < 1e-5, "GPU and CPU decodes differ by {worst}");

    let info = json(&ok(&["info", &p(d, "gpu.lfc"), "--json"]));
    assert_eq!(info["patches"], 40);
    assert_eq!(info["dictionaries"], 3);
    assert_eq!(info["patch"], "5x5x3x4x4");
    assert!(ok(&["info", &p(d, "gpu.lfc")]).contains("bits_per_sample"));
}

#[test]
fn bad_inputs_fail_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["generate", "--out", &p(d, "lf.npy"), "--views", "4x4", "--size", "20x15", "--seed", "3"]);
    ok(&[
        "train",
        "--input",
        &p(d, "lf.npy"),
        "--dictionaries",
        "2",
        "--patch",
        "5x5x4x4",
        "--out",
        &p(d, "d.lfd"),
        "--iterations",
        "1",
        "--backend",
        "cpu",
    ]);
    let encode = |input: &str, dict: &str, out: &str| {
        vec![
            "encode".to_string(),
            "--input".into(),
            input.into(),
            "--dict".into(),
            dict.into(),
            "--sparsity".into(),
            "300".into(),
            "--epsilon".into(),
            "0.02".into(),
            "--out".into(),
            out.into(),
            "--backend".into(),
            "cpu".into(),
        ]
    };
    let run_fail =
        |args: Vec<String>, needle: &str| fails(&args.iter().map(String::as_str).collect::<Vec<_>>(), needle);
    ok(&encode(&p(d, "lf.npy"), &p(d, "d.lfd"), &p(d, "x.lfc")).iter().map(String::as_str).collect::<Vec<_>>());
    let lfc = std::fs::read(d.join("x.lfc")).unwrap();
    let lfd = std::fs::read(d.join("d.lfd")).unwrap();

    // Truncated and corrupted bitstreams.
    std::fs::write(d.join("cut.lfc"), &lfc[..lfc.len() - 9]).unwrap();
    fails(&["decode", &p(d, "cut.lfc"), "--out", &p(d, "o.npy")], "truncated");
    fails(&["info", &p(d, "cut.lfc")], "corrupt");
    let mut bad = lfc.clone();
    let mid = bad.len() - 20;
    bad[mid] ^= 0x5a;
    std::fs::write(d.join("bad.lfc"), &bad).unwrap();
    fails(&["decode", &p(d, "bad.lfc"), "--out", &p(d, "o.npy")], "corrupt");
    std::fs::write(d.join("empty.lfc"), b"").unwrap();
    fails(&["info", &p(d, "empty.lfc")], "not a .lfc file");
    assert!(!d.join("o.npy").exists(), "no output after a failure");

    // Truncated dictionary file.
    std::fs::write(d.join("cut.lfd"), &lfd[..lfd.len() / 2]).unwrap();
    run_fail(encode(&p(d, "lf.npy"), &p(d, "cut.lfd"), &p(d, "y.lfc")), "checksum");

    // NaN, wrong shape, wrong colour count, out-of-range floats.
    let mut data = engine::io::read_npy(&d.join("lf.npy")).unwrap().data;
    data[123] = f32::NAN;
    engine::io::write_npy_f32(&d.join("nan.npy"), &[4, 4, 15, 20, 3], &data).unwrap();
    run_fail(encode(&p(d, "nan.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "NaN");
    data[123] = 0.5;
    engine::io::write_npy_f32(&d.join("rank4.npy"), &[16, 15, 20, 3], &data).unwrap();
    run_fail(encode(&p(d, "rank4.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "not (U, V, H, W, 3)");
    engine::io::write_npy_f32(&d.join("rgba.npy"), &[4, 4, 15, 15, 4], &data[..14400]).unwrap();
    run_fail(encode(&p(d, "rgba.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "last axis must be 3");
    data[5] = 2.0;
    engine::io::write_npy_f32(&d.join("range.npy"), &[4, 4, 15, 20, 3], &data).unwrap();
    run_fail(encode(&p(d, "range.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "[0, 1]");
    assert!(!d.join("y.lfc").exists());

    // Parameters, folders without a grid, overwriting an input.
    let mut args = encode(&p(d, "lf.npy"), &p(d, "d.lfd"), &p(d, "y.lfc"));
    args[6] = "0".into();
    run_fail(args, "--sparsity");
    run_fail(encode(d.to_str().unwrap(), &p(d, "d.lfd"), &p(d, "y.lfc")), "--grid");
    run_fail(encode(&p(d, "lf.npy"), &p(d, "d.lfd"), &p(d, "lf.npy")), "refusing to overwrite");
    fails(
        &["train", "--input", &p(d, "lf.npy"), "--dictionaries", "2", "--patch", "5x5x9", "--out", &p(d, "e.lfd")],
        "patch",
    );
}

#[test]
fn folder_of_views_trains_and_encodes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let views = d.join("views");
    std::fs::create_dir(&views).unwrap();
    let lf = lightfield::synth::generate((2, 3), (16, 12), 5);
    for u in 0..2 {
        for v in 0..3 {
            let rgb: Vec<u8> = lf.view(u, v).iter().map(|&x| engine::io::to_u8(x)).collect();
            engine::io::save_png_rgb8(&views.join(format!("view_{u}_{v}.png")), 16, 12, &rgb).unwrap();
        }
    }
    let vdir = views.to_str().unwrap();
    ok(&[
        "train",
        "--input",
        vdir,
        "--grid",
        "2x3",
        "--dictionaries",
        "2",
        "--patch",
        "4x4x2x3",
        "--out",
        &p(d, "d.lfd"),
        "--iterations",
        "1",
        "--backend",
        "cpu",
    ]);
    let enc = json(&ok(&[
        "encode",
        "--input",
        vdir,
        "--grid",
        "2x3",
        "--dict",
        &p(d, "d.lfd"),
        "--sparsity",
        "144",
        "--epsilon",
        "0.01",
        "--out",
        &p(d, "x.lfc"),
        "--json",
    ]));
    assert_eq!(enc["patches"], 12);
    fails(
        &[
            "encode",
            "--input",
            vdir,
            "--grid",
            "3x3",
            "--dict",
            &p(d, "d.lfd"),
            "--sparsity",
            "144",
            "--epsilon",
            "0.01",
            "--out",
            &p(d, "y.lfc"),
        ],
        "--grid 3x3 needs 9",
    );
}

#[test]
fn bench_quick_prints_json_lines() {
    let out = ok(&["bench", "--quick"]);
    let lines: Vec<serde_json::Value> = out.lines().map(json).collect();
    let names: Vec<&str> = lines.iter().map(|l| l["bench"].as_str().unwrap()).collect();
    for want in ["train", "encode_table1", "decode_table1", "rate_distortion"] {
        assert!(names.contains(&want), "missing {want} in {names:?}");
    }
    let table1 = lines.iter().find(|l| l["bench"] == "encode_table1").unwrap();
    for key in ["gpu_ms", "cpu_ms", "paper_ms", "floor_ms", "bits_per_sample", "psnr_db"] {
        assert!(table1[key].as_f64().is_some(), "{key} in {table1}");
    }
}
