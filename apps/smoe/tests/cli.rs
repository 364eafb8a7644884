//! End-to-end tests of the `smoe` binary: fit, render (PNG and .npy, resized, light-field
//! views, both backends), convert, bad input, bench --quick, demo and the viewer under Xvfb.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_smoe");

fn smoe(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run smoe")
}

fn ok(args: &[&str]) -> String {
    let out = smoe(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "smoe {args:?} failed: {stderr}");
    assert!(!stderr.contains("vulkan validation"), "validation messages: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fails(args: &[&str]) -> String {
    let out = smoe(args);
    assert!(!out.status.success(), "smoe {args:?} should fail");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    stderr
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A fitted image model (the sample image, written as PNG and fitted by the binary).
fn image_model(dir: &Path) -> PathBuf {
    let grid = smoe::data::sample_image(29, 21);
    let bytes: Vec<u8> = grid.rgb.iter().map(|&v| engine::io::to_u8(v)).collect();
    let png = dir.join("in.png");
    engine::io::save_png_rgb8(&png, 29, 21, &bytes).unwrap();
    let model = dir.join("m.json");
    let out = ok(&["fit", s(&png), "--kernels", "24", "--out", s(&model), "--iterations", "8", "--json"]);
    let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(line["psnr_db"].as_f64().unwrap() > 15.0, "{line}");
    model
}

fn read_npy(path: &Path) -> (Vec<usize>, Vec<f32>) {
    let a = engine::io::read_npy(path).unwrap();
    (a.shape, a.data)
}

#[test]
fn fit_then_render_png_and_npy_on_both_backends() {
    let dir = tmp();
    let model = image_model(dir.path());
    let png = dir.path().join("r.png");
    ok(&["render", s(&model), "--out", s(&png)]);
    let img = engine::io::load_image(&png).unwrap();
    assert_eq!((img.width, img.height), (29, 21));

    // Up-sampled, odd size; GPU (fast and robust, culling on and off) against the CPU backend.
    let cpu = dir.path().join("cpu.npy");
    ok(&["render", s(&model), "--out", s(&cpu), "--size", "45x37", "--backend", "cpu"]);
    let (shape, want) = read_npy(&cpu);
    assert_eq!(shape, vec![37, 45, 3]);
    for args in [
        vec!["--mode", "robust"],
        vec!["--mode", "fast"],
        vec!["--cull", "off"],
        vec!["--cull", "window", "--tile", "8"],
    ] {
        let gpu = dir.path().join("gpu.npy");
        let mut a = vec!["render", s(&model), "--out", s(&gpu), "--size", "45x37", "--json"];
        a.extend(args.iter().copied());
        let line: serde_json::Value = serde_json::from_str(ok(&a).trim()).unwrap();
        assert_eq!(line["width"], 45);
        let (_, got) = read_npy(&gpu);
        let max = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0f32, f32::max);
        assert!(max <= 1.0 / 4096.0, "{args:?}: {max}");
    }
}

#[test]
fn light_field_fit_and_fractional_view() {
    let dir = tmp();
    let grid = smoe::data::sample_lightfield(13, 11, 3, 2, 1.0);
    // (V, U, H, W, 3) in memory -> (U, V, H, W, 3) on disk.
    let view = 13 * 11 * 3;
    let mut data = Vec::new();
    for u in 0..3 {
        for v in 0..2 {
            data.extend_from_slice(&grid.rgb[(v * 3 + u) * view..(v * 3 + u + 1) * view]);
        }
    }
    let npy = dir.path().join("lf.npy");
    engine::io::write_npy_f32(&npy, &[3, 2, 11, 13, 3], &data).unwrap();
    let model = dir.path().join("lf.smoe");
    ok(&["fit", s(&npy), "--kernels", "12", "--out", s(&model), "--iterations", "5"]);
    let out = dir.path().join("v.npy");
    ok(&["render", s(&model), "--out", s(&out), "--view", "0.5,0.25"]);
    let cpu = dir.path().join("c.npy");
    ok(&["render", s(&model), "--out", s(&cpu), "--view", "0.5,0.25", "--backend", "cpu"]);
    let ((shape, got), (_, want)) = (read_npy(&out), read_npy(&cpu));
    assert_eq!(shape, vec![11, 13, 3]);
    let max = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0f32, f32::max);
    assert!(max <= 1.0 / 4096.0, "{max}");
    assert!(fails(&["render", s(&model), "--out", s(&out), "--view", "x"]).contains("--view"));
}

#[test]
fn fit_improves_psnr_over_its_initialisation() {
    let dir = tmp();
    let grid = smoe::data::sample_image(31, 23);
    let bytes: Vec<u8> = grid.rgb.iter().map(|&v| engine::io::to_u8(v)).collect();
    let png = dir.path().join("in.png");
    engine::io::save_png_rgb8(&png, 31, 23, &bytes).unwrap();
    let ctx = engine::testing::context();
    let init = smoe::fit::render_psnr(ctx, &smoe::fit::grid_init(&grid, 30), &grid).unwrap();
    let m = dir.path().join("m.json");
    let out = ok(&["fit", s(&png), "--kernels", "30", "--out", s(&m), "--iterations", "12", "--json"]);
    let fitted = serde_json::from_str::<serde_json::Value>(out.trim()).unwrap()["psnr_db"].as_f64().unwrap();
    assert!(fitted > init + 2.0, "PSNR of the grid initialisation {init}, after 12 iterations {fitted}");
}

#[test]
fn convert_round_trip_and_bad_models() {
    let dir = tmp();
    let model = image_model(dir.path());
    let bin = dir.path().join("m.smoe");
    let back = dir.path().join("back.json");
    ok(&["convert", s(&model), s(&bin)]);
    ok(&["convert", s(&bin), s(&back)]);
    let (a, b) = (smoe::model::Model::load(&model).unwrap(), smoe::model::Model::load(&back).unwrap());
    assert_eq!(a.len(), b.len());
    assert!(fails(&["convert", s(&model), s(&model)]).contains("refusing"));

    let text = std::fs::read_to_string(&model).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let out = dir.path().join("o.png");
    type Mutation = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (Box::new(|v| v["kernels"][3]["pi"] = serde_json::json!(0.0)), "kernel 3"),
        (Box::new(|v| v["kernels"][5]["cov"][0][0] = serde_json::json!(-1.0)), "kernel 5"),
        (Box::new(|v| v["kernels"][2]["mu"] = serde_json::json!([0.5, 0.5])), "kernel 2"),
        (Box::new(|v| v["kernels"][7]["cov"] = serde_json::json!([[1.0]])), "kernel 7"),
        (Box::new(|v| v["coord_dims"] = serde_json::json!(3)), "coord_dims"),
    ];
    for (i, (mutate, want)) in cases.iter().enumerate() {
        let original = v.clone();
        mutate(&mut v);
        let bad = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&bad, v.to_string()).unwrap();
        let err = fails(&["render", s(&bad), "--out", s(&out)]);
        assert!(err.contains(want), "case {i}: {err}");
        v = original;
    }
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"format\": ").unwrap();
    assert!(fails(&["render", s(&junk), "--out", s(&out)]).contains("not a valid SMoE JSON"));
    assert!(!out.exists(), "no output after a failure");
}

#[test]
fn bench_quick_prints_json_lines() {
    let out = ok(&["bench", "--quick"]);
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["bench"] == "render_4K" && l["gpu_ms"].as_f64().unwrap() > 0.0));
    assert!(lines.iter().any(|l| l["bench"] == "fit" && l["psnr_db"].as_f64().unwrap() > 10.0));
}

#[test]
fn demo_writes_outputs_and_viewer_runs_under_xvfb() {
    let dir = tmp();
    let out = ok(&["demo", "--out", s(dir.path())]);
    assert_eq!(out.lines().count(), 1, "{out}");
    for f in ["smoe_input.png", "smoe_model.json", "smoe_render_1x.png", "smoe_render_2x.png", "smoe_summary.json"] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }
    if Command::new("xvfb-run").arg("--help").output().is_err() {
        println!("NOTICE: xvfb-run is not installed; the viewer test is skipped");
        return;
    }
    let shot = dir.path().join("shot.png");
    let model = dir.path().join("smoe_model.json");
    let run = Command::new("xvfb-run")
        .args(["-a", BIN, "view", s(&model), "--frames", "5", "--screenshot", s(&shot)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "viewer failed: {stderr}");
    assert!(!stderr.contains("vulkan validation"), "{stderr}");
    assert!(String::from_utf8_lossy(&run.stdout).contains("showed 5 of 5 frames"));
    // The screenshot is the model rendered at the window size: compare with the renderer.
    let img = engine::io::load_image(&shot).unwrap();
    let want = dir.path().join("want.png");
    ok(&["render", s(&model), "--out", s(&want), "--size", &format!("{}x{}", img.width, img.height)]);
    let want = engine::io::load_image(&want).unwrap();
    let max = img.data.iter().zip(&want.data).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(max <= 1.5 / 255.0, "screenshot differs from render by {max}");
}
