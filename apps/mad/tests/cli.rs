//! End-to-end tests of the `mad` binary: the interface of the issue (score, batch, --maps,
//! --json, --backend), the command-line contract (docs/cli.md: the JSON envelope, devices,
//! outputs checked before work, the memory budget), bad inputs, 16-bit, RGB and EXIF-rotated
//! inputs, bench --quick and demo.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mad::synth::{distort, scene, to_u8, Distortion};
use serde_json::Value;

fn mad(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mad")).args(args).output().expect("run mad")
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Writes a 61x45 scene and a noisy version as 8-bit gray PNGs.
fn write_pair(dir: &Path, sigma: f64) -> (PathBuf, PathBuf) {
    let r = scene(61, 45, 5);
    let d = distort(&r, Distortion::Noise(sigma), 1);
    let (rp, dp) = (dir.join("ref.png"), dir.join(format!("noise{sigma}.png")));
    kit::image::save_gray8(&rp, 61, 45, &to_u8(&r)).unwrap();
    kit::image::save_gray8(&dp, 61, 45, &to_u8(&d)).unwrap();
    (rp, dp)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn score_json_on_both_backends_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let (r, d) = write_pair(dir.path(), 10.0);
    let gpu = mad(&["score", p(&r), p(&d), "--json"]);
    let cpu = mad(&["score", p(&r), p(&d), "--json", "--backend", "cpu"]);
    assert!(gpu.status.success() && cpu.status.success(), "{}{}", stderr(&gpu), stderr(&cpu));
    let (g, c) = (&json_lines(&gpu)[0], &json_lines(&cpu)[0]);
    for key in ["mad", "detection", "appearance", "alpha"] {
        let (a, b) = (g[key].as_f64().unwrap(), c[key].as_f64().unwrap());
        assert!((a - b).abs() <= 1e-3 * b.abs(), "{key}: gpu {a} cpu {b}");
    }
    assert_eq!((g["width"].as_u64(), g["height"].as_u64()), (Some(61), Some(45)));
    assert!(c["mad"].as_f64().unwrap() > 0.0);
    // The envelope (docs/cli.md).
    for (v, backend) in [(g, "gpu"), (c, "cpu")] {
        assert_eq!(v["command"], "score");
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(v["backend"], backend);
        assert!(v["wall_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(v["out"], serde_json::json!([]));
    }
    assert!(g["device"].as_str().is_some_and(|d| !d.is_empty()), "{g}");
    assert!(c["device"].is_null());
}

#[test]
fn identical_images_score_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = write_pair(dir.path(), 1.0);
    let out = mad(&["score", p(&r), p(&r), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = &json_lines(&out)[0];
    // The release gives HI = LO = 0, alpha = 1 and MAD = 0^1 * 0^0 = 0.
    assert_eq!(v["mad"].as_f64(), Some(0.0));
    assert_eq!(v["detection"].as_f64(), Some(0.0));
    assert_eq!(v["alpha"].as_f64(), Some(1.0));
}

#[test]
fn maps_are_written_as_png_and_npy() {
    let dir = tempfile::tempdir().unwrap();
    let (r, d) = write_pair(dir.path(), 10.0);
    let maps = dir.path().join("maps");
    let out = mad(&["score", p(&r), p(&d), "--maps", p(&maps), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_lines(&out)[0]["out"], serde_json::json!([p(&maps)]));
    for name in ["detection", "appearance", "combined"] {
        let npy = kit::npy::read(&maps.join(format!("{name}.npy"))).unwrap();
        assert_eq!(npy.shape, vec![45, 61]);
        assert!(npy.data.iter().all(|v| v.is_finite()));
        assert!(npy.data.iter().any(|&v| v > 0.0), "{name} map is all zero");
        let png = kit::image::load(&maps.join(format!("{name}.png"))).unwrap();
        assert_eq!((png.width, png.channels), (61, 3));
    }
}

#[test]
fn bad_inputs_fail_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = write_pair(dir.path(), 10.0);
    let other = dir.path().join("other.png");
    kit::image::save_gray8(&other, 60, 45, &vec![100; 60 * 45]).unwrap();
    let tiny = dir.path().join("tiny.png");
    kit::image::save_gray8(&tiny, 20, 20, &vec![100; 400]).unwrap();
    let garbage = dir.path().join("garbage.png");
    std::fs::write(&garbage, b"not an image at all").unwrap();
    let missing = dir.path().join("missing.png");
    let cases: [(&[&str], &str); 4] = [
        (&["score", p(&r), p(&other)], "size mismatch"),
        (&["score", p(&r), p(&missing)], "missing.png"),
        (&["score", p(&r), p(&garbage)], "garbage.png"),
        (&["score", p(&tiny), p(&tiny)], "at least 34x34"),
    ];
    for (args, needle) in cases {
        let out = mad(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?} panicked");
    }
}

#[test]
fn sixteen_bit_and_rgb_inputs_match_their_8_bit_gray_versions() {
    let dir = tempfile::tempdir().unwrap();
    // No pixel at 255, where the release's uint8 LUT lookup saturates (8-bit only).
    let s = scene(50, 40, 8);
    let r: Vec<u8> = to_u8(&s).into_iter().map(|v| v.min(250)).collect();
    let d: Vec<u8> = to_u8(&distort(&s, Distortion::Blur(2.0), 0)).into_iter().map(|v| v.min(250)).collect();
    let gray = |name: &str, px: &[u8]| {
        let path = dir.path().join(name);
        kit::image::save_gray8(&path, 50, 40, px).unwrap();
        path
    };
    let wide = |name: &str, px: &[u8]| {
        let path = dir.path().join(name);
        let v: Vec<u8> = px.iter().flat_map(|&v| (v as u16 * 257).to_ne_bytes()).collect();
        kit::image::save(&path, 50, 40, &v, kit::image::Layout::Gray16).unwrap();
        path
    };
    let rgb = |name: &str, px: &[u8]| {
        let path = dir.path().join(name);
        kit::image::save_rgb8(&path, 50, 40, &px.iter().flat_map(|&v| [v, v, v]).collect::<Vec<u8>>()).unwrap();
        path
    };
    let score = |a: &Path, b: &Path, backend: &str| {
        let out = mad(&["score", p(a), p(b), "--json", "--backend", backend]);
        assert!(out.status.success(), "{}", stderr(&out));
        json_lines(&out)[0]["mad"].as_f64().unwrap()
    };
    let base = score(&gray("r8.png", &r), &gray("d8.png", &d), "cpu");
    assert!(base > 0.0);
    let sixteen = score(&wide("r16.png", &r), &wide("d16.png", &d), "cpu");
    assert!((sixteen - base).abs() <= 1e-9 * base, "16-bit {sixteen} vs 8-bit {base}");
    let colour = score(&rgb("rgb_r.png", &r), &rgb("rgb_d.png", &d), "cpu");
    assert_eq!(colour, base, "RGB with equal channels is its gray image");
    let sixteen_gpu = score(&dir.path().join("r16.png"), &dir.path().join("d16.png"), "gpu");
    assert!((sixteen_gpu - base).abs() <= 1e-3 * base, "16-bit on the GPU {sixteen_gpu} vs {base}");
}

#[test]
fn batch_reports_failures_in_order_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _) = write_pair(dir.path(), 5.0);
    let (_, _) = write_pair(dir.path(), 15.0);
    kit::image::save_gray8(&dir.path().join("small.png"), 40, 40, &vec![7; 1600]).unwrap();
    let csv = dir.path().join("pairs.csv");
    std::fs::write(&csv, "ref,dist\nref.png,noise5.png\nref.png,missing.png\nref.png,small.png\nref.png,noise15.png\n")
        .unwrap();
    for backend in ["gpu", "cpu"] {
        let out = mad(&["batch", "--pairs", p(&csv), "--json", "--backend", backend]);
        assert_eq!(out.status.code(), Some(1), "a failed pair must make the exit status 1");
        assert!(stderr(&out).contains("2 of 4 pairs failed"), "{}", stderr(&out));
        let all = json_lines(&out);
        // One envelope per pair, then the failure's object.
        let (lines, last) = all.split_at(4);
        assert_eq!(last.len(), 1, "{backend}: {all:?}");
        assert_eq!(last[0]["error"], "2 of 4 pairs failed");
        let dists: Vec<&str> = lines.iter().map(|l| l["dist"].as_str().unwrap()).collect();
        assert_eq!(dists, ["noise5.png", "missing.png", "small.png", "noise15.png"]);
        assert!(lines[1]["error"].as_str().unwrap().contains("missing.png"));
        assert!(lines[2]["error"].as_str().unwrap().contains("size mismatch"));
        let (mild, strong) = (lines[0]["mad"].as_f64().unwrap(), lines[3]["mad"].as_f64().unwrap());
        assert!(mild < strong, "{backend}: more noise must score higher ({mild} vs {strong})");
        assert_eq!(lines[0]["width"].as_u64(), Some(61));
        assert!(lines.iter().all(|l| l["command"] == "batch" && l["backend"] == backend && l["out"].is_array()));
    }
}

#[test]
fn batch_reads_a_csv_with_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    write_pair(dir.path(), 5.0);
    let csv = dir.path().join("pairs.csv");
    std::fs::write(&csv, "\u{feff}Ref,Dist\r\nref.png,noise5.png\r\n").unwrap();
    let out = mad(&["batch", "--pairs", p(&csv), "--json", "--backend", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "the header is no pair: {lines:?}");
    assert_eq!(lines[0]["ref"], "ref.png");
    assert!(lines[0]["mad"].as_f64().unwrap() > 0.0);
}

#[test]
fn an_unknown_device_fails_and_lists_the_devices() {
    let dir = tempfile::tempdir().unwrap();
    let (r, d) = write_pair(dir.path(), 5.0);
    let csv = dir.path().join("pairs.csv");
    std::fs::write(&csv, "ref.png,noise5.png\n").unwrap();
    let cases: [&[&str]; 3] = [
        &["score", p(&r), p(&d), "--device", "no-such-gpu"],
        &["batch", "--pairs", p(&csv), "--device", "0,no-such-gpu"],
        &["score", p(&r), p(&d), "--device", "99"],
    ];
    for args in cases {
        let out = mad(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with("mad: error: no device matches"), "{args:?}: {err}");
        assert!(err.contains("devices: 0: "), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: no line for a pair");
    }
}

#[test]
fn exif_rotated_photos_are_scored_upright() {
    let dir = tempfile::tempdir().unwrap();
    // 64x40 as stored; orientation 6 (rotate 90 degrees clockwise) makes them 40x64.
    let r = scene(64, 40, 3);
    let d = distort(&r, Distortion::Noise(10.0), 2);
    let jpeg = |name: &str, img: &mad::GrayImage, exif: bool| {
        let path = dir.path().join(name);
        kit::image::save_gray8(&path, 64, 40, &to_u8(img)).unwrap();
        if exif {
            std::fs::write(&path, kit::fuzz::with_exif_orientation(&std::fs::read(&path).unwrap(), 6)).unwrap();
        }
        path
    };
    let (rr, dr, du) = (jpeg("r.jpg", &r, true), jpeg("d.jpg", &d, true), jpeg("u.jpg", &d, false));
    for backend in ["gpu", "cpu"] {
        let out = mad(&["score", p(&rr), p(&dr), "--json", "--backend", backend]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v = &json_lines(&out)[0];
        assert_eq!((v["width"].as_u64(), v["height"].as_u64()), (Some(40), Some(64)), "{backend}");
    }
    let out = mad(&["score", p(&rr), p(&du), "--backend", "cpu"]);
    assert!(stderr(&out).contains("reference is 40x64, distorted is 64x40"), "{}", stderr(&out));
}

#[test]
fn maps_under_a_regular_file_fail_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = write_pair(dir.path(), 5.0);
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    // The distorted image does not exist: only a check made before loading names the folder.
    let missing = dir.path().join("missing.png");
    let out = mad(&["score", p(&r), p(&missing), "--maps", p(&file.join("maps"))]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("file/maps: cannot create the folder") && !err.contains("missing.png"), "{err}");
    // So is a map file that would overwrite an input.
    let input = dir.path().join("combined.npy");
    std::fs::write(&input, b"x").unwrap();
    let out = mad(&["score", p(&input), p(&missing), "--maps", p(dir.path())]);
    assert!(stderr(&out).contains("is one of the command's inputs"), "{}", stderr(&out));
}

#[test]
fn a_pair_over_the_memory_budget_is_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.png");
    kit::image::save_gray8(&big, 400, 400, &vec![90; 400 * 400]).unwrap();
    let csv = dir.path().join("pairs.csv");
    std::fs::write(&csv, "big.png,big.png\n").unwrap();
    for backend in ["cpu", "gpu"] {
        let out = mad(&["score", p(&big), p(&big), "--backend", backend, "--max-memory", "4M"]);
        assert_eq!(out.status.code(), Some(1), "{backend}");
        let err = stderr(&out);
        assert!(err.contains("scoring a 400x400 pair") && err.contains("memory budget is 4.0 MiB"), "{err}");
        let out = mad(&["batch", "--pairs", p(&csv), "--backend", backend, "--max-memory", "4M", "--json"]);
        assert_eq!(out.status.code(), Some(1), "{backend}");
        assert!(json_lines(&out)[0]["error"].as_str().unwrap().contains("--max-memory"), "{}", stderr(&out));
        let out = mad(&["score", p(&big), p(&big), "--backend", backend, "--max-memory", "1G"]);
        assert!(out.status.success(), "{backend}: {}", stderr(&out));
    }
}

#[test]
fn versions_and_help() {
    for args in [&["--version"][..], &["score", "--version"], &["batch", "--version"]] {
        let out = mad(args);
        assert!(out.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")), "{args:?}");
    }
    for sub in ["score", "batch", "bench", "demo"] {
        let help = String::from_utf8_lossy(&mad(&[sub, "--help"]).stdout).into_owned();
        assert!(help.contains("Examples:\n  mad "), "{sub}: {help}");
    }
    assert_eq!(mad(&["batch", "--pairs", "x.csv", "--chunk", "0"]).status.code(), Some(2));
}

#[test]
fn batch_split_across_two_contexts_gives_the_same_lines() {
    let dir = tempfile::tempdir().unwrap();
    for sigma in [3.0, 6.0, 9.0, 12.0, 15.0] {
        write_pair(dir.path(), sigma);
    }
    let csv = dir.path().join("pairs.csv");
    let lines: String = [3, 6, 9, 12, 15].iter().map(|s| format!("ref.png,noise{s}.png\n")).collect();
    std::fs::write(&csv, lines).unwrap();
    // Two contexts on device 0 stand in for two GPUs: each claims groups of pairs.
    let split = mad(&["batch", "--pairs", p(&csv), "--json", "--device", "0,0", "--chunk", "2"]);
    let single = mad(&["batch", "--pairs", p(&csv), "--json"]);
    assert!(split.status.success() && single.status.success(), "{}{}", stderr(&split), stderr(&single));
    let fields = |out: &Output| -> Vec<(String, f64)> {
        json_lines(out).iter().map(|l| (l["dist"].as_str().unwrap().to_string(), l["mad"].as_f64().unwrap())).collect()
    };
    assert_eq!(fields(&split), fields(&single));
    let device = json_lines(&split)[0]["device"].as_str().unwrap().to_string();
    assert!(device.contains(", "), "both devices named: {device}");
    let scores: Vec<f64> = fields(&single).iter().map(|l| l.1).collect();
    assert!(scores.windows(2).all(|w| w[0] < w[1]), "more noise, higher MAD: {scores:?}");
}

#[test]
fn score_split_stages_over_two_contexts_matches_one() {
    let dir = tempfile::tempdir().unwrap();
    let (r, d) = write_pair(dir.path(), 10.0);
    let single = mad(&["score", p(&r), p(&d), "--json", "--device", "0"]);
    assert!(single.status.success(), "{}", stderr(&single));
    let o = &json_lines(&single)[0];
    assert!(o.get("detection_ms").is_none() && o.get("appearance_ms").is_none(), "{o}");
    // Contexts on device 0 stand in for GPUs: detection on the first, appearance on the
    // second, or its bands shared by the second and third.
    for (devices, appearance_devices) in [("0,0", 0), ("0,0,0", 2)] {
        let split = mad(&["score", p(&r), p(&d), "--json", "--split-stages", "--device", devices]);
        assert!(split.status.success(), "{}", stderr(&split));
        let s = &json_lines(&split)[0];
        for key in ["mad", "detection", "appearance", "alpha"] {
            let (a, b) = (s[key].as_f64().unwrap(), o[key].as_f64().unwrap());
            assert!((a - b).abs() <= 1e-6 * b.abs(), "{devices} {key}: split {a} single {b}");
        }
        assert!(s["device"].as_str().is_some_and(|d| d.contains(", ")), "every device named: {s}");
        // Each stage's GPU time, where the device has timestamps; never on the one-device path.
        assert_eq!(s["detection_ms"].is_f64(), s["appearance_ms"].is_f64(), "{s}");
        if s["appearance_ms"].is_f64() {
            let per_device = s.get("appearance_device_ms").and_then(|v| v.as_array()).map_or(0, |v| v.len());
            assert_eq!(per_device, appearance_devices, "{s}");
        }
    }
    for (args, want) in
        [(vec!["--device", "0"], "needs two devices"), (vec!["--backend", "cpu"], "does not apply to --backend cpu")]
    {
        let out = mad(&[&["score", p(&r), p(&d), "--split-stages"], args.as_slice()].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn bench_quick_prints_measurements() {
    let out = mad(&["bench", "--quick", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert!(lines.iter().all(|l| l["command"] == "bench" && l["device"].is_string()), "{lines:?}");
    let names: Vec<&str> = lines.iter().map(|l| l["bench"].as_str().unwrap()).collect();
    assert_eq!(names, ["setup", "latency_64", "batch_64", "latency_97x61", "tiled_301x157"]);
    assert!(lines[4]["tiles"].as_u64().unwrap() > 1 && lines[4]["gpu_ms"].as_f64().unwrap() > 0.0, "{:?}", lines[4]);
    for l in &lines[1..4] {
        assert!(l["gpu_ms"].as_f64().unwrap() > 0.0 && l["cpu_ms"].as_f64().unwrap() > 0.0);
        assert!(l["floor_ms"].as_f64().unwrap() > 0.0);
    }
    assert!(lines[1]["rel_diff"].as_f64().unwrap() < 1e-3);
}

/// The demo on both backends: on the GPU its batch of 320x240 pairs is chunked so that a
/// chunk's band stack fits one storage-buffer binding (lavapipe's 128 MiB).
#[test]
fn demo_writes_images_maps_and_summary() {
    for backend in ["cpu", "gpu"] {
        let dir = tempfile::tempdir().unwrap();
        let out = mad(&["demo", "--out", p(dir.path()), "--backend", backend, "--json"]);
        assert!(out.status.success(), "{backend}: {}", stderr(&out));
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 1, "one summary line");
        assert_eq!((&lines[0]["command"], &lines[0]["out"]), (&"demo".into(), &serde_json::json!([p(dir.path())])));
        assert_eq!(lines[0]["pairs"].as_array().unwrap().len(), 8);
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("mad_summary.json")).unwrap()).unwrap();
        let pairs = summary["pairs"].as_array().unwrap();
        assert_eq!(pairs.len(), 8);
        // Mild then strong of each kind: the strong one scores higher.
        for k in 0..4 {
            assert!(pairs[2 * k]["mad"].as_f64() < pairs[2 * k + 1]["mad"].as_f64(), "{backend}: {}", pairs[2 * k]);
        }
        assert!(dir.path().join("maps/jpeg10/combined.png").exists());
        assert!(dir.path().join("images/reference.png").exists());
    }
}

/// A CSIQ-like data set: two references, three distortions each, in a nested folder.
fn write_dataset(dir: &Path) -> (PathBuf, PathBuf) {
    let (refs, dists) = (dir.join("src_imgs"), dir.join("dst_imgs"));
    std::fs::create_dir_all(dists.join("awgn")).unwrap();
    std::fs::create_dir_all(&refs).unwrap();
    for (id, seed) in [("1600", 5u64), ("cactus", 9)] {
        let r = scene(61, 45, seed);
        kit::image::save_gray8(&refs.join(format!("{id}.png")), 61, 45, &to_u8(&r)).unwrap();
        for level in 1..=3 {
            let d = distort(&r, Distortion::Noise(4.0 * level as f64), level);
            let name = dists.join("awgn").join(format!("{id}.AWGN.{level}.png"));
            kit::image::save_gray8(&name, 61, 45, &to_u8(&d)).unwrap();
        }
    }
    (refs, dists)
}

#[test]
fn a_data_set_is_scored_from_its_folders_resumed_and_correlated() {
    let dir = tempfile::tempdir().unwrap();
    let (refs, dists) = write_dataset(dir.path());
    let results = dir.path().join("out/scores.csv");
    let args = ["batch", "--ref-dir", p(&refs), "--dist-dir", p(&dists), "--out", p(&results), "--backend", "cpu"];
    let first = mad(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = std::fs::read_to_string(&results).unwrap();
    assert_eq!(text.lines().count(), 7, "a header and six rows: {text}");
    assert!(text.starts_with("ref,dist,mad,"), "{text}");
    assert!(text.contains("1600.png,awgn/1600.AWGN.2.png,"), "{text}");
    // An interrupted run: two rows and a torn third line are left; the rerun scores the rest.
    let kept: Vec<&str> = text.lines().take(3).collect();
    std::fs::write(&results, format!("{}\ncactus.png,awgn/cac", kept.join("\n"))).unwrap();
    let again = mad(&args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stderr(&again).contains("2 pair(s) already scored"), "{}", stderr(&again));
    assert_eq!(String::from_utf8_lossy(&again.stdout).lines().count(), 4, "only the four missing pairs");
    let resumed = std::fs::read_to_string(&results).unwrap();
    assert_eq!(resumed.lines().count(), 7, "{resumed}");
    // Subjective scores rising with the noise level: MAD must rank them alike.
    let dmos = dir.path().join("dmos.csv");
    let mut rows = String::from("image,dmos\n");
    for id in ["1600", "cactus"] {
        for level in 1..=3 {
            rows.push_str(&format!(
                "{id}.AWGN.{level}.png,{}\n",
                level as f64 * 0.1 + if id == "cactus" { 0.05 } else { 0.0 }
            ));
        }
    }
    std::fs::write(&dmos, rows).unwrap();
    let c = mad(&["correlate", "--scores", p(&results), "--subjective", p(&dmos), "--json"]);
    assert!(c.status.success(), "{}", stderr(&c));
    let v = &json_lines(&c)[0];
    assert_eq!(v["command"], "correlate");
    assert_eq!(v["pairs"], 6);
    for key in ["srocc", "krocc", "plcc"] {
        let r = v[key].as_f64().unwrap();
        assert!((-1.0..=1.0).contains(&r), "{key} {r}");
    }
    assert!(v["srocc"].as_f64().unwrap() > 0.5, "MAD grows with the noise level: {v}");
    // A results file with another extension is refused before any work.
    let bad = mad(&["batch", "--ref-dir", p(&refs), "--dist-dir", p(&dists), "--out", p(&dir.path().join("s.txt"))]);
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    assert!(stderr(&bad).contains(".csv, .jsonl"), "{}", stderr(&bad));
}

/// A data set of PGM (and PPM) files, as IQA data sets ship, is collected and every pair
/// scored, with the same scores as the same images in PNG.
#[test]
fn a_data_set_of_pgm_and_ppm_files_is_scored() {
    let dir = tempfile::tempdir().unwrap();
    let (refs, dists) = (dir.path().join("refs"), dir.path().join("dists"));
    std::fs::create_dir_all(&refs).unwrap();
    std::fs::create_dir_all(&dists).unwrap();
    let netpbm = |path: &Path, magic: &str, px: &[u8]| {
        let mut bytes = format!("{magic}\n61 45\n255\n").into_bytes();
        bytes.extend_from_slice(px);
        std::fs::write(path, bytes).unwrap();
    };
    let r = to_u8(&scene(61, 45, 5));
    let d = to_u8(&distort(&scene(61, 45, 5), Distortion::Noise(8.0), 1));
    netpbm(&refs.join("a.pgm"), "P5", &r);
    netpbm(&dists.join("a_noise.pgm"), "P5", &d);
    let rgb = |px: &[u8]| px.iter().flat_map(|&v| [v, v, v]).collect::<Vec<u8>>();
    netpbm(&dists.join("a_colour.ppm"), "P6", &rgb(&d));
    let out = mad(&["batch", "--ref-dir", p(&refs), "--dist-dir", p(&dists), "--backend", "cpu", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let (rp, dp) = (dir.path().join("r.png"), dir.path().join("d.png"));
    kit::image::save_gray8(&rp, 61, 45, &r).unwrap();
    kit::image::save_gray8(&dp, 61, 45, &d).unwrap();
    let png = json_lines(&mad(&["score", p(&rp), p(&dp), "--backend", "cpu", "--json"]))[0]["mad"].as_f64().unwrap();
    for line in &lines {
        assert_eq!(line["mad"].as_f64(), Some(png), "{line}");
    }
}

/// A usage error under `--json` names the missing arguments (the error line and `causes`).
#[test]
fn missing_arguments_are_named_in_json() {
    let out = mad(&["score", "only.png", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let line = &json_lines(&out)[0];
    assert_eq!(line["usage"], true, "{line}");
    assert!(line["error"].as_str().unwrap().contains("<DISTORTED>"), "{line}");
    assert_eq!(line["causes"], serde_json::json!(["<DISTORTED>"]), "{line}");
}

/// A float32 TIFF of an 8-bit image scores as the 8-bit file, on a subtle distortion where
/// the rounding of the gray image matters.
#[test]
fn a_float_tiff_of_an_8_bit_image_scores_as_the_8_bit_file() {
    use image::ImageEncoder;
    let dir = tempfile::tempdir().unwrap();
    let s = scene(61, 45, 3);
    let (r, d) = (to_u8(&s), to_u8(&distort(&s, Distortion::Noise(1.0), 2)));
    // Colour, so that rgb2gray's rounding is at stake: channels k, k/2 and 255 - k.
    let rgb = |px: &[u8]| px.iter().flat_map(|&v| [v, v / 2, 255 - v]).collect::<Vec<u8>>();
    let float_tiff = |path: &Path, px: &[u8]| {
        let bytes: Vec<u8> = rgb(px).iter().flat_map(|&v| (v as f32 / 255.0).to_ne_bytes()).collect();
        let file = std::fs::File::create(path).unwrap();
        image::codecs::tiff::TiffEncoder::new(file)
            .write_image(&bytes, 61, 45, image::ExtendedColorType::Rgb32F)
            .unwrap();
    };
    let score = |a: &Path, b: &Path| {
        let out = mad(&["score", p(a), p(b), "--backend", "cpu", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        json_lines(&out)[0]["mad"].as_f64().unwrap()
    };
    let path = |name: &str| dir.path().join(name);
    kit::image::save_rgb8(&path("r.png"), 61, 45, &rgb(&r)).unwrap();
    kit::image::save_rgb8(&path("d.png"), 61, 45, &rgb(&d)).unwrap();
    float_tiff(&path("r.tif"), &r);
    float_tiff(&path("d.tif"), &d);
    assert_eq!(score(&path("r.tif"), &path("d.tif")), score(&path("r.png"), &path("d.png")));
}
