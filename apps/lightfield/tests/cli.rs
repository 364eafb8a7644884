//! End-to-end tests of the `lightfield` binary on small generated light fields (lavapipe).

use std::path::Path;
use std::process::Command;

const BIN: kit::testing::Bin = kit::testing::Bin(env!("CARGO_BIN_EXE_lightfield"));

/// Runs a command that must fail cleanly with an error message naming `needle`.
fn fails(args: &[impl AsRef<std::ffi::OsStr> + std::fmt::Debug], needle: &str) {
    let stderr = BIN.fails(args);
    assert!(stderr.contains(needle), "lightfield {args:?}: expected {needle:?} in {stderr}");
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// Generates the light field `d/lf.npy` (`views`, `size`, `seed`) and trains two dictionaries
/// of `patch` on it into `d/d.lfd` on the CPU, with the flags `extra`.
fn light_field_and_dictionaries(d: &Path, (views, size, seed): (&str, &str, &str), patch: &str, extra: &[&str]) {
    BIN.ok(&["generate", "--out", &p(d, "lf.npy"), "--views", views, "--size", size, "--seed", seed]);
    train(&p(d, "lf.npy"), "2", patch, &p(d, "d.lfd"), &[extra, &["--backend", "cpu"]].concat());
}

/// Trains `dictionaries` dictionaries of `patch` on `input` into `out`, with the flags `extra`.
fn train(input: &str, dictionaries: &str, patch: &str, out: &str, extra: &[&str]) -> String {
    BIN.ok(
        &[&["train", "--input", input, "--dictionaries", dictionaries, "--patch", patch, "--out", out], extra].concat()
    )
}

/// The arguments that encode `input` with the dictionaries `dict` into `out` at `sparsity`
/// and `epsilon`, with the flags `extra`.
fn encode(input: &str, dict: &str, sparsity: &str, epsilon: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let args = ["encode", "--input", input, "--dict", dict, "--sparsity", sparsity, "--epsilon", epsilon, "--out", out];
    args.iter().chain(extra).map(|a| a.to_string()).collect()
}

#[test]
fn generate_train_encode_decode_info() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    BIN.ok(&["generate", "--out", &p(d, "train.npy"), "--views", "4x4", "--size", "30x25", "--seed", "1"]);
    // 5 x 3 views of 22 x 17 pixels: padded along every axis by the 5x5x4x4 patch.
    BIN.ok(&["generate", "--out", &p(d, "lf.npy"), "--views", "5x3", "--size", "22x17", "--seed", "2"]);
    let trained = train(&p(d, "train.npy"), "3", "5x5x4x4", &p(d, "d.lfd"), &["--iterations", "1", "--json"]);
    assert!(trained.lines().all(|l| json(l).is_object()));
    let enc = |backend: &str, out: &str| {
        let (lf, dict) = (p(d, "lf.npy"), p(d, "d.lfd"));
        json(&BIN.ok(&encode(&lf, &dict, "900", "0.01", &p(d, out), &["--backend", backend, "--json"])))
    };
    let gpu = enc("gpu", "gpu.lfc");
    let cpu = enc("cpu", "cpu.lfc");
    // 2 x 1 view blocks x 4 x 5 pixel blocks.
    assert_eq!(gpu["patches"], 40);
    assert_eq!(gpu["command"], "encode");
    assert_eq!(gpu["backend"], "gpu");
    assert!(gpu["device"].is_string(), "{gpu}");
    assert_eq!(gpu["out"], serde_json::json!([p(d, "gpu.lfc")]));
    assert!(gpu["kernel_ms"].as_f64().is_some() && cpu["kernel_ms"].is_null());
    for key in ["mean_coefficients", "bits_per_sample", "psnr_db", "encode_ms", "wall_ms"] {
        assert!(gpu[key].as_f64().unwrap() > 0.0, "{key} in {gpu}");
    }
    // Patches under T keep RMSE <= 0.01, so the whole light field is at least 40 dB.
    assert!(gpu["psnr_db"].as_f64().unwrap() >= 40.0, "{gpu}");
    assert!((gpu["psnr_db"].as_f64().unwrap() - cpu["psnr_db"].as_f64().unwrap()).abs() < 0.05);

    BIN.ok(&["decode", &p(d, "gpu.lfc"), "--out", &p(d, "back.npy")]);
    let back = kit::npy::read(&d.join("back.npy")).unwrap();
    assert_eq!(back.shape, vec![5, 3, 17, 22, 3]);
    assert_eq!(back.dtype, kit::npy::NpyDtype::F32);
    BIN.ok(&["decode", &p(d, "gpu.lfc"), "--out", &p(d, "again.npy"), "--backend", "cpu"]);
    let again = kit::npy::read(&d.join("again.npy")).unwrap();
    let worst = back.data.iter().zip(&again.data).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(worst < 1e-5, "GPU and CPU decodes differ by {worst}");

    let info = json(&BIN.ok(&["info", &p(d, "gpu.lfc"), "--json"]));
    assert_eq!(info["out"], serde_json::json!([]));
    assert_eq!(info["patches"], 40);
    assert_eq!(info["dictionaries"], 3);
    assert_eq!(info["patch"], "5x5x3x4x4");
    assert!(BIN.ok(&["info", &p(d, "gpu.lfc")]).contains("bits_per_sample"));
}

#[test]
fn bad_inputs_fail_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    light_field_and_dictionaries(d, ("4x4", "20x15", "3"), "5x5x4x4", &["--iterations", "1"]);
    let encode_at = |sparsity: &str, input: &str, dict: &str, out: &str| {
        encode(input, dict, sparsity, "0.02", out, &["--backend", "cpu"])
    };
    let enc = |input: &str, dict: &str, out: &str| encode_at("300", input, dict, out);
    BIN.ok(&enc(&p(d, "lf.npy"), &p(d, "d.lfd"), &p(d, "x.lfc")));
    let lfc = std::fs::read(d.join("x.lfc")).unwrap();
    let lfd = std::fs::read(d.join("d.lfd")).unwrap();

    // Truncated and corrupted bitstreams.
    std::fs::write(d.join("cut.lfc"), &lfc[..lfc.len() - 9]).unwrap();
    fails(&["decode", &p(d, "cut.lfc"), "--out", &p(d, "o.npy"), "--backend", "cpu"], "truncated");
    fails(&["info", &p(d, "cut.lfc")], "corrupt");
    let mut bad = lfc.clone();
    let mid = bad.len() - 20;
    bad[mid] ^= 0x5a;
    std::fs::write(d.join("bad.lfc"), &bad).unwrap();
    fails(&["decode", &p(d, "bad.lfc"), "--out", &p(d, "o.npy"), "--backend", "cpu"], "corrupt");
    std::fs::write(d.join("empty.lfc"), b"").unwrap();
    fails(&["info", &p(d, "empty.lfc")], "not a .lfc file");
    assert!(!d.join("o.npy").exists(), "no output after a failure");

    // Truncated dictionary file.
    std::fs::write(d.join("cut.lfd"), &lfd[..lfd.len() / 2]).unwrap();
    fails(&enc(&p(d, "lf.npy"), &p(d, "cut.lfd"), &p(d, "y.lfc")), "checksum");

    // NaN, wrong shape, wrong colour count, out-of-range floats.
    let mut data = kit::npy::read(&d.join("lf.npy")).unwrap().data;
    data[123] = f32::NAN;
    kit::npy::write_f32(&d.join("nan.npy"), &[4, 4, 15, 20, 3], &data).unwrap();
    fails(&enc(&p(d, "nan.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "NaN");
    data[123] = 0.5;
    kit::npy::write_f32(&d.join("rank4.npy"), &[16, 15, 20, 3], &data).unwrap();
    fails(&enc(&p(d, "rank4.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "not (U, V, H, W, 3)");
    kit::npy::write_f32(&d.join("rgba.npy"), &[4, 4, 15, 15, 4], &data[..14400]).unwrap();
    fails(&enc(&p(d, "rgba.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "last axis must be 3");
    data[5] = 2.0;
    kit::npy::write_f32(&d.join("range.npy"), &[4, 4, 15, 20, 3], &data).unwrap();
    fails(&enc(&p(d, "range.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "[0, 1]");
    assert!(!d.join("y.lfc").exists());

    // Parameters, folders without a grid, overwriting an input.
    fails(&encode_at("0", &p(d, "lf.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "must be at least 1");
    fails(&encode_at("100000", &p(d, "lf.npy"), &p(d, "d.lfd"), &p(d, "y.lfc")), "--sparsity");
    // A folder of no images (only .npy and .lfd files) says so; one of unknown names asks for --grid.
    fails(&enc(d.to_str().unwrap(), &p(d, "d.lfd"), &p(d, "y.lfc")), "holds no view images");
    std::fs::create_dir(d.join("shots")).unwrap();
    for name in ["left.png", "right.png"] {
        kit::image::save_rgb8(&d.join("shots").join(name), 1, 1, &[0, 0, 0]).unwrap();
    }
    fails(&enc(&p(d, "shots"), &p(d, "d.lfd"), &p(d, "y.lfc")), "give --grid UxV");
    // Inputs are read by content, so an .npy named .lfc is an input the output must not be.
    std::fs::copy(d.join("lf.npy"), d.join("npy.lfc")).unwrap();
    fails(&enc(&p(d, "npy.lfc"), &p(d, "d.lfd"), &p(d, "npy.lfc")), "refusing to overwrite");
    fails(&enc(&p(d, "lf.npy"), &p(d, "d.lfd"), &p(d, "lf.npy")), "must be one of .lfc");
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
            let rgb: Vec<u8> = lf.view(u, v).iter().map(|&x| kit::image::to_u8(x)).collect();
            kit::image::save_rgb8(&views.join(format!("view_{u}_{v}.png")), 16, 12, &rgb).unwrap();
        }
    }
    let vdir = views.to_str().unwrap();
    let dict = p(d, "d.lfd");
    train(vdir, "2", "4x4x2x3", &dict, &["--grid", "2x3", "--iterations", "1", "--backend", "cpu"]);
    let enc = json(&BIN.ok(&encode(vdir, &dict, "144", "0.01", &p(d, "x.lfc"), &["--grid", "2x3", "--json"])));
    assert_eq!(enc["patches"], 12);
    fails(&encode(vdir, &dict, "144", "0.01", &p(d, "y.lfc"), &["--grid", "3x3"]), "--grid says 3x3");
}

#[test]
fn bench_quick_prints_json_lines() {
    let out = BIN.ok(&["bench", "--quick"]);
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

#[test]
fn version_help_and_outputs_checked_before_work() {
    assert!(BIN.ok(&["--version"]).starts_with("lightfield "));
    assert!(BIN.ok(&["encode", "--version"]).contains(env!("CARGO_PKG_VERSION")));
    for sub in ["train", "encode", "decode", "info", "generate", "bench", "demo", "view", "render"] {
        let help = BIN.ok(&[sub, "--help"]);
        assert!(help.contains("Examples:\n  lightfield "), "{sub} --help has no example");
    }
    assert!(BIN.ok(&["encode", "--help"]).contains("Light field to encode"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("file"), b"x").unwrap();
    // The output fails before the (missing) input is read or anything is trained.
    let under_file = p(d, "file/d.lfd");
    fails(&["train", "--input", &p(d, "missing.npy"), "--dictionaries", "2", "--out", &under_file], "folder");
    fails(&["generate", "--out", &p(d, "file/x.npy")], "folder");
    // `generate --views` is the view grid: an image output gets no pointer to decode's `--views DIR`.
    let stderr = BIN.fails(&["generate", "--out", &p(d, "x.png")]);
    assert!(stderr.contains("one of .npy") && !stderr.contains("--views DIR"), "{stderr}");
    fails(&["demo", "--out", &p(d, "file")], "folder");
    // A folder where one of the demo's files goes fails before the work (nothing written).
    std::fs::create_dir_all(d.join("demo/summary.json")).unwrap();
    let stderr = BIN.fails(&["demo", "--out", &p(d, "demo"), "--device", "no-such-device"]);
    assert!(stderr.contains("summary.json: is a folder"), "{stderr}");
    assert_eq!(std::fs::read_dir(d.join("demo")).unwrap().count(), 1);
    fails(
        &["encode", "--input", "a.npy", "--dict", "b.lfd", "--sparsity", "9", "--epsilon", "0.01", "--out", "x.bin"],
        ".lfc",
    );
    fails(&["decode", &p(d, "missing.lfc"), "--out", &p(d, "views.png")], "--views DIR");
    fails(&["decode", &p(d, "missing.lfc"), "--out", &p(d, "views.txt")], ".npy");
    let out = BIN.run(&["generate", "--out", &p(d, "x.npy"), "--size", "0x5"]);
    assert_eq!(out.status.code(), Some(2), "a zero size is a usage error");
    let out =
        BIN.run(&["encode", "--input", "a", "--dict", "b", "--sparsity", "9", "--epsilon", "nan", "--out", "x.lfc"]);
    assert_eq!(out.status.code(), Some(2), "NaN epsilon is a usage error");
}

/// Encodes a tiny light field on the CPU into `d/x.lfc` (with `d/lf.npy`, `d/d.lfd`).
fn tiny_lfc(d: &Path) -> Vec<u8> {
    light_field_and_dictionaries(d, ("2x2", "10x9", "4"), "3x3x2x2", &[]);
    BIN.ok(&encode(&p(d, "lf.npy"), &p(d, "d.lfd"), "60", "0.01", &p(d, "x.lfc"), &["--backend", "cpu"]));
    std::fs::read(d.join("x.lfc")).unwrap()
}

#[test]
fn decode_then_encode_round_trips_through_npy_and_views() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tiny_lfc(d);
    // A view that cannot be renamed into place (a folder holds its name) fails the decode
    // before the array lands: all or none.
    std::fs::create_dir_all(d.join("blocked/view_0_0.png")).unwrap();
    let (lfc, blocked) = (p(d, "x.lfc"), p(d, "blocked.npy"));
    fails(&["decode", &lfc, "--out", &blocked, "--views", &p(d, "blocked"), "--backend", "cpu"], "view_0_0.png");
    assert!(!d.join("blocked.npy").exists(), "a failed decode leaves no array behind");
    let dec = json(&BIN.ok(&[
        "decode",
        &p(d, "x.lfc"),
        "--out",
        &p(d, "back.npy"),
        "--views",
        &p(d, "views"),
        "--depth",
        "16",
        "--backend",
        "cpu",
        "--json",
    ]));
    assert_eq!(dec["out"], serde_json::json!([p(d, "back.npy"), p(d, "views")]));
    assert_eq!(dec["views_written"], 4);
    let back = kit::npy::read(&d.join("back.npy")).unwrap();
    assert!(back.data.iter().all(|x| (0.0..=1.0).contains(x)), "decoded samples are clamped to [0, 1]");
    let names: Vec<String> = std::fs::read_dir(d.join("views"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.contains(&"view_1_0.png".to_string()));
    let img = kit::image::load(&d.join("views/view_1_0.png")).unwrap();
    assert_eq!((img.width, img.height, img.source_bits), (10, 9, 16));
    let args = ["--dict", &p(d, "d.lfd"), "--sparsity", "60", "--epsilon", "0.01", "--backend", "cpu"];
    BIN.ok(&[&["encode", "--input", &p(d, "back.npy"), "--out", &p(d, "again.lfc")], &args[..]].concat());
    let views = p(d, "views");
    BIN.ok(&[&["encode", "--input", &views, "--out", &p(d, "views.lfc")], &args[..]].concat());
}

/// Rewrites the header hash of a `.lfc` after a header field was changed.
fn rehash(mut lfc: Vec<u8>) -> Vec<u8> {
    let n = lightfield::bitstream::HEADER_LEN;
    let sum = lightfield::bytes::fnv1a64(&lfc[..n - 8]);
    lfc[n - 8..n].copy_from_slice(&sum.to_le_bytes());
    lfc
}

/// Where the tiny file's one section's table entry starts (after the ensemble's).
const SECTION_ENTRY: usize = lightfield::bitstream::HEADER_LEN + lightfield::sections::ENTRY_LEN;
/// Where the table's hash starts (two entries: the ensemble and one section).
const TABLE_HASH: usize = lightfield::bitstream::HEADER_LEN + 2 * lightfield::sections::ENTRY_LEN;

/// Rewrites the section-table hash of a `.lfc` with one section.
fn rehash_table(mut lfc: Vec<u8>) -> Vec<u8> {
    let sum = lightfield::bytes::fnv1a64(&lfc[lightfield::bitstream::HEADER_LEN..TABLE_HASH]);
    lfc[TABLE_HASH..TABLE_HASH + 8].copy_from_slice(&sum.to_le_bytes());
    lfc
}

/// `lfc` with its one section's frame replaced by `frame` (its table entry and the table
/// hash fixed).
fn with_frame(lfc: &[u8], frame: &[u8]) -> Vec<u8> {
    let start = lightfield::bitstream::Header::parse(lfc).unwrap().starts[1];
    let mut out = lfc[..start].to_vec();
    out[SECTION_ENTRY + 16..SECTION_ENTRY + 24].copy_from_slice(&(frame.len() as u64).to_le_bytes());
    out[SECTION_ENTRY + 24..SECTION_ENTRY + 32].copy_from_slice(&lightfield::sections::hash64(frame).to_le_bytes());
    out.extend_from_slice(frame);
    rehash_table(out)
}

#[test]
fn hostile_lfc_headers_and_frames_are_refused_by_info_and_decode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lfc = tiny_lfc(d);
    // The section's payload as zstd holds it (the file's frame may be range coded instead).
    let codes = lightfield::bitstream::Compressed::read(&d.join("x.lfc")).unwrap().codes;
    let mut streams = lightfield::sections::Streams::default();
    streams.push(&codes, 0..codes.len());
    let payload = streams.concat();
    let zstd_frame = lightfield::sections::compress(&payload, codes.locations.len() as u64).unwrap().bytes;
    let set = |offset: usize, bytes: &[u8]| {
        let mut m = lfc.clone();
        m[offset..offset + bytes.len()].copy_from_slice(bytes);
        rehash(m)
    };
    let mut no_checksum = zstd::bulk::Compressor::new(3).unwrap();
    no_checksum.include_checksum(false).unwrap();
    let mut trailing = zstd_frame;
    trailing.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 2, 0, 0, 0, 7, 7]); // a skippable frame
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("payload.lfc", rehash_table(set(SECTION_ENTRY + 8, &(1u64 << 36).to_le_bytes())), "cannot come from"),
        ("huge.lfc", set(8, &[0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0]), "memory budget"),
        ("step.lfc", set(32, &3.4e38f32.to_le_bytes()), "quantisation step"),
        ("nochecksum.lfc", with_frame(&lfc, &no_checksum.compress(&payload).unwrap()), "checksum"),
        ("trailing.lfc", with_frame(&lfc, &trailing), "follow the zstd frame"),
    ];
    for (name, bytes, needle) in cases {
        std::fs::write(d.join(name), bytes).unwrap();
        fails(&["info", &p(d, name)], needle);
        fails(&["decode", &p(d, name), "--out", &p(d, "o.npy"), "--backend", "cpu"], needle);
    }
    assert!(!d.join("o.npy").exists());
    // The untouched file still reads.
    BIN.ok(&["info", &p(d, "x.lfc")]);
}

#[test]
fn capped_patches_are_reported_and_strict_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tiny_lfc(d);
    let encode_at = |sparsity: &str, extra: &[&str]| {
        let (input, dict, out) = (p(d, "lf.npy"), p(d, "d.lfd"), p(d, "s.lfc"));
        BIN.run(&encode(&input, &dict, sparsity, "0.002", &out, &[&["--backend", "cpu"], extra].concat()))
    };
    // One coefficient per patch cannot reach RMSE 0.002.
    let out = encode_at("1", &["--json"]);
    assert!(out.status.success());
    let rec = json(&String::from_utf8_lossy(&out.stdout));
    let capped = rec["capped_patches"].as_u64().unwrap();
    let over = rec["over_epsilon_patches"].as_u64().unwrap();
    assert!(over > 0 && over <= capped && capped <= rec["patches"].as_u64().unwrap(), "{rec}");
    // The bound follows the encoder's test: every patch over epsilon is over it.
    assert!(rec["worst_rmse_bound"].as_f64().unwrap() > 0.002, "{rec}");
    // `info` counts the same capped patches from the file, under the same name.
    let info = json(&BIN.ok(&["info", &p(d, "s.lfc"), "--json"]));
    assert_eq!(info["capped_patches"], rec["capped_patches"], "{info}");
    assert!(info.get("patches_at_sparsity").is_none(), "{info}");
    let text = String::from_utf8_lossy(&encode_at("1", &[]).stdout).into_owned();
    assert!(
        text.contains(&format!("{over} of "))
            && text.contains("did not reach RMSE 0.002 within the cap of 1 coefficients"),
        "{text}"
    );
    std::fs::remove_file(d.join("s.lfc")).unwrap();
    let strict = encode_at("1", &["--strict"]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("did not reach --epsilon"));
    assert!(!d.join("s.lfc").exists(), "--strict wrote the output");
    // Every coefficient allowed: nothing is over epsilon, and --strict passes.
    let all = json(&String::from_utf8_lossy(&encode_at("108", &["--strict", "--json"]).stdout));
    assert_eq!(all["over_epsilon_patches"], 0, "{all}");
    assert!(all["worst_rmse_bound"].is_null());
}

#[test]
fn encode_at_a_rate_writes_at_most_that_many_bits_per_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    light_field_and_dictionaries(d, ("3x3", "17x14", "6"), "3x3x3x3", &["--iterations", "1"]);
    let (lf, dict, out) = (p(d, "lf.npy"), p(d, "d.lfd"), p(d, "r.lfc"));
    let pixels = (3 * 3 * 17 * 14) as f64;
    let at = |rate: &[&str]| {
        let args: Vec<String> = ["encode", "--input", &lf, "--dict", &dict, "--sparsity", "81", "--out", &out]
            .iter()
            .chain(rate)
            .chain(&["--backend", "cpu", "--json"])
            .map(|a| a.to_string())
            .collect();
        json(&BIN.ok(&args))
    };
    let fine = at(&["--epsilon", "0.005"])["bits_per_pixel"].as_f64().unwrap();
    for target in [fine * 0.7, fine * 0.4] {
        let rec = at(&["--bpp", &target.to_string()]);
        let bits = std::fs::metadata(&out).unwrap().len() as f64 * 8.0;
        assert!(bits <= target * pixels, "{bits} bits for --bpp {target}: {rec}");
        assert_eq!(rec["bits_per_pixel"].as_f64().unwrap(), bits / pixels, "{rec}");
        assert_eq!(rec["bpp_target"].as_f64().unwrap(), target, "{rec}");
        assert!(rec["rate_trials"].as_u64().unwrap() > 2, "{rec}");
        // The epsilon found codes well below the 0.005 encode's rate only by being coarser.
        assert!(rec["epsilon"].as_f64().unwrap() > 0.005, "{rec}");
    }
    // A rate below what the dictionaries alone take is refused, naming both.
    std::fs::remove_file(&out).unwrap();
    let args = ["encode", "--input", &lf, "--dict", &dict, "--sparsity", "81", "--out", &out, "--bpp", "0.001"];
    fails(&[&args[..], &["--backend", "cpu"]].concat(), "the dictionaries alone take");
    assert!(!Path::new(&out).exists());
    // --bpp and --epsilon are one choice; one of them is required.
    let both = [&args[..], &["--epsilon", "0.01"]].concat();
    assert_eq!(BIN.run(&both).status.code(), Some(2));
    assert_eq!(BIN.run(&args[..args.len() - 2]).status.code(), Some(2));
}

/// Encodes the folder `views` (no --grid) with a dictionary trained on it, decodes it, and
/// returns the decoded array.
fn encode_folder_and_decode(d: &Path, views: &Path, backend: &str) -> kit::npy::NpyArray {
    let v = views.to_str().unwrap();
    let dict = p(d, "folder.lfd");
    train(v, "2", "4x4x3x3", &dict, &["--iterations", "1", "--backend", "cpu"]);
    let (lfc, npy) = (p(d, "folder.lfc"), p(d, "folder.npy"));
    let rec = json(&BIN.ok(&encode(v, &dict, "432", "0.005", &lfc, &["--backend", backend, "--json"])));
    assert_eq!(rec["views"], serde_json::json!([3, 3]), "{rec}");
    assert_eq!(rec["over_epsilon_patches"], 0, "{rec}");
    BIN.ok(&["decode", &lfc, "--out", &npy, "--backend", backend]);
    kit::npy::read(Path::new(&npy)).unwrap()
}

fn max_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn hci_and_stanford_folders_need_no_grid() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lf = lightfield::synth::generate((3, 3), (16, 16), 9);
    // HCI: input_CamNNN.png, 8-bit RGB, row-major; a depth-map image of another size is ignored.
    let hci = d.join("hci");
    std::fs::create_dir(&hci).unwrap();
    let mut want = Vec::new();
    for i in 0..9 {
        let rgb: Vec<u8> = lf.view(i / 3, i % 3).iter().map(|&x| kit::image::to_u8(x)).collect();
        want.extend(rgb.iter().map(|&b| b as f32 / 255.0));
        kit::image::save_rgb8(&hci.join(format!("input_Cam{i:03}.png")), 16, 16, &rgb).unwrap();
    }
    kit::image::save_gray8(&hci.join("gt_disp_lowres.png"), 5, 5, &[0; 25]).unwrap();
    let back = encode_folder_and_decode(d, &hci, "gpu");
    assert_eq!(back.shape, [3, 3, 16, 16, 3]);
    // RMSE 0.005 per patch bounds every sample by 0.005 * sqrt(samples per patch).
    let worst = max_difference(&back.data, &want);
    assert!(worst < 0.1, "HCI views decode {worst} away");
    // Stanford: out_YY_XX_<x>_<y>.png, 16-bit gray (repeated into RGB), written out of order.
    let stanford = d.join("stanford");
    std::fs::create_dir(&stanford).unwrap();
    let mut want = vec![0f32; 9 * 16 * 16 * 3];
    for i in (0..9).rev() {
        let (u, v) = (i / 3, i % 3);
        let gray: Vec<u16> = lf.view(u, v).chunks(3).map(|c| kit::image::to_u16((c[0] + c[1] + c[2]) / 3.0)).collect();
        for (j, &g) in gray.iter().enumerate() {
            want[(i * 256 + j) * 3..(i * 256 + j) * 3 + 3].fill(g as f32 / 65535.0);
        }
        let bytes: Vec<u8> = gray.iter().flat_map(|g| g.to_ne_bytes()).collect();
        let name = format!("out_{u:02}_{v:02}_{:.6}_{:.6}.png", -1.5 * v as f64, 2.25 * u as f64);
        kit::image::save(&stanford.join(name), 16, 16, &bytes, kit::image::Layout::Gray16).unwrap();
    }
    let back = encode_folder_and_decode(d, &stanford, "cpu");
    assert_eq!(back.shape, [3, 3, 16, 16, 3]);
    let worst = max_difference(&back.data, &want);
    assert!(worst < 0.1, "Stanford views decode {worst} away");
}

fn image(path: &Path) -> kit::image::ImageF32 {
    kit::image::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Largest sample difference of two images of the same size, in 1/255 steps.
fn steps_apart(a: &kit::image::ImageF32, b: &kit::image::ImageF32) -> f32 {
    assert_eq!((a.width, a.height, a.channels), (b.width, b.height, b.channels));
    max_difference(&a.data, &b.data) * 255.0
}

#[test]
fn render_and_the_viewer_show_the_decoded_views() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    light_field_and_dictionaries(d, ("3x3", "24x20", "3"), "4x4x3x3", &["--iterations", "1"]);
    let lfc = p(d, "x.lfc");
    BIN.ok(&encode(&p(d, "lf.npy"), &p(d, "d.lfd"), "432", "0.005", &lfc, &[]));
    BIN.ok(&["decode", &lfc, "--views", &p(d, "views")]);
    // At an integer viewpoint, a still is the decoded view, whatever the focus, on both backends.
    for (backend, focus) in [("gpu", "0"), ("cpu", "-2.5")] {
        let still = p(d, &format!("still_{backend}.png"));
        let rec = json(&BIN.ok(&[
            "render",
            &lfc,
            "--view",
            "1,2",
            "--focus",
            focus,
            "--out",
            &still,
            "--backend",
            backend,
            "--json",
        ]));
        assert_eq!((rec["width"].as_u64(), rec["height"].as_u64()), (Some(24), Some(20)), "{rec}");
        let apart = steps_apart(&image(Path::new(&still)), &image(&d.join("views/view_1_2.png")));
        assert!(apart <= 1.0, "{backend}: the still at view 1,2 is {apart}/255 from the decoded view");
    }
    // Between views, refocused, scaled: the GPU and CPU stills agree.
    let between = ["--view", "0.5,1.25", "--focus", "0.7", "--aperture", "1.5", "--size", "37x29"];
    BIN.ok(&[&["render", &lfc, "--out", &p(d, "gpu.png")], &between[..]].concat());
    BIN.ok(&[&["render", &lfc, "--out", &p(d, "cpu.png"), "--backend", "cpu"], &between[..]].concat());
    let apart = steps_apart(&image(&d.join("gpu.png")), &image(&d.join("cpu.png")));
    assert!(apart <= 1.0, "GPU and CPU stills are {apart}/255 apart");
    fails(&["render", &lfc, "--view", "2.5,0", "--out", &p(d, "no.png")], "outside the captured views");
    // A frame over the memory budget is refused before the decode, on both backends.
    for backend in ["gpu", "cpu"] {
        let big = ["--size", "16384x16384", "--max-memory", "64M", "--backend", backend];
        fails(&[&["render", &lfc, "--out", &p(d, "big.png")], &big[..]].concat(), "the rendered image");
    }
    assert!(!d.join("big.png").exists());
    // One view decoded alone is that view of the whole decode, on both backends.
    for backend in ["gpu", "cpu"] {
        let one = p(d, &format!("one_{backend}.png"));
        let rec = json(&BIN.ok(&["decode", &lfc, "--view", "1,2", "--out", &one, "--backend", backend, "--json"]));
        assert_eq!(rec["view"], serde_json::json!([1, 2]), "{rec}");
        let apart = steps_apart(&image(Path::new(&one)), &image(&d.join("views/view_1_2.png")));
        assert!(apart <= 1.0, "{backend}: view 1,2 decoded alone is {apart}/255 from the whole decode's");
    }
    fails(&["decode", &lfc, "--view", "3,0", "--out", &p(d, "no.png")], "not one of the 3x3 views");
    if Command::new("xvfb-run").arg("--help").output().is_err() {
        println!("NOTICE: xvfb-run is not installed; the viewer test is skipped");
        return;
    }
    // The viewer's screenshot is the still of the same viewpoint, and the decoded view at an
    // integer one.
    for (viewpoint, want) in
        [(&["--view", "1,2", "--size", "24x20"][..], "views/view_1_2.png"), (&between[..], "gpu.png")]
    {
        let shot = p(d, "shot.png");
        let args = [&["-a", env!("CARGO_BIN_EXE_lightfield"), "view", &lfc], viewpoint, &["--frames", "3"]].concat();
        let run = Command::new("xvfb-run")
            .args([&args[..], &["--screenshot", &shot, "--json"]].concat())
            .env("TESSERA_VALIDATION", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "viewer failed: {stderr}");
        assert!(!stderr.to_lowercase().contains("validation"), "{stderr}");
        let rec = json(&String::from_utf8_lossy(&run.stdout));
        assert_eq!(rec["frames"], 3, "{rec}");
        let apart = steps_apart(&image(Path::new(&shot)), &image(&d.join(want)));
        assert!(apart <= 1.0, "screenshot at {viewpoint:?} is {apart}/255 from {want}");
    }
}

#[test]
fn messages_name_the_flag_or_file_once_and_info_keeps_the_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tiny_lfc(d);
    let lfc = p(d, "x.lfc");
    // A viewpoint outside the views names the flag, with no "invalid input:" prefix.
    let stderr = BIN.fails(&["render", &lfc, "--view", "5,0", "--out", &p(d, "no.png"), "--backend", "cpu"]);
    assert!(stderr.starts_with("lightfield: error: --view 5,0 is outside the captured views"), "{stderr}");
    // NaN in a .npy: the file and the sample, said once.
    let mut data = kit::npy::read(&d.join("lf.npy")).unwrap().data;
    data[7] = f32::NAN;
    kit::npy::write_f32(&d.join("nan.npy"), &[2, 2, 9, 10, 3], &data).unwrap();
    let args = encode(&p(d, "nan.npy"), &p(d, "d.lfd"), "60", "0.01", &p(d, "y.lfc"), &["--backend", "cpu"]);
    let stderr = BIN.fails(&args);
    assert!(stderr.contains("nan.npy: sample 7 is NaN; every sample must be finite"), "{stderr}");
    // --sparsity over the patch and a bad --patch: the flag leads, no "invalid input:".
    let stderr = BIN.fails(&encode(&p(d, "lf.npy"), &p(d, "d.lfd"), "5000", "0.01", &p(d, "y.lfc"), &[]));
    assert!(stderr.starts_with("lightfield: error: --sparsity 5000: expected 1..=108"), "{stderr}");
    let stderr =
        BIN.fails(&["train", "--input", "lf.npy", "--dictionaries", "2", "--patch", "4x4x4", "--out", "x.lfd"]);
    assert!(stderr.contains("'--patch <PATCH>': patch \"4x4x4\": expected"), "{stderr}");
    // An empty folder of views says that it holds none, with or without --grid.
    std::fs::create_dir(d.join("empty")).unwrap();
    for grid in [&[][..], &["--grid", "2x2"][..]] {
        let args = encode(&p(d, "empty"), &p(d, "d.lfd"), "60", "0.01", &p(d, "y.lfc"), grid);
        let stderr = BIN.fails(&args);
        assert!(stderr.contains("empty: holds no view images"), "{stderr}");
    }
    // `info --json`: the envelope's `version` is the binary's; the file's is `format_version`.
    let info = json(&BIN.ok(&["info", &lfc, "--json"]));
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"), "{info}");
    assert_eq!(info["format_version"], lightfield::bitstream::LFC_VERSION, "{info}");
    // A file over --max-memory is refused by the budget, which the message names.
    let stderr = BIN.fails(&["info", &lfc, "--max-memory", "1K"]);
    assert!(stderr.contains("the memory budget is 1.0 KiB (raise it with --max-memory)"), "{stderr}");
    // f32 values read as they were given (0.01, not 0.009999999776482582).
    assert_eq!(info["epsilon"], 0.01, "{info}");
    let still = p(d, "still.png");
    let rec = json(&BIN.ok(&["render", &lfc, "--view", "0.3,1", "--focus", "1.1", "--out", &still, "--json"]));
    assert_eq!((&rec["view"], &rec["focus"]), (&serde_json::json!([0.3, 1.0]), &serde_json::json!(1.1)), "{rec}");
    assert!(BIN.ok(&["info", &lfc]).contains("format_version: "));
}

/// `train --dct` needs no inputs and writes one DCT dictionary; a file coded with it has its
/// bytes broken down by `info`, which also counts the padding that `encode` warns about.
#[test]
fn dct_dictionary_and_info_breakdown_and_the_padding_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    BIN.ok(&["generate", "--out", &p(d, "lf.npy"), "--views", "3x3", "--size", "16x12", "--seed", "3"]);
    let rec = json(&BIN.ok(&["train", "--dct", "--patch", "4x4x3x3", "--out", &p(d, "dct.lfd"), "--json"]));
    assert_eq!((rec["dictionaries"].as_u64(), rec["patch"].as_str()), (Some(1), Some("4x4x3x3x3")), "{rec}");
    assert!(BIN
        .fails(&["train", "--dct", "--dictionaries", "2", "--patch", "4x4x3x3", "--out", "x.lfd"])
        .contains("cannot be used with"));
    // Views that tile the grid: no warning on stderr.
    let out = BIN.run(&encode(&p(d, "lf.npy"), &p(d, "dct.lfd"), "100", "0.02", &p(d, "a.lfc"), &["--backend", "cpu"]));
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let info = json(&BIN.ok(&["info", &p(d, "a.lfc"), "--json"]));
    let b = &info["breakdown"];
    let part = |k: &str| b[k].as_u64().unwrap();
    assert_eq!(
        part("header") + part("table") + part("dictionaries") + part("sections"),
        info["bytes"].as_u64().unwrap()
    );
    assert_eq!((part("padded_patches"), b["coded_over_real_samples"].as_f64()), (0, Some(1.0)), "{info}");
    // 2 x 2-view patches on 3 x 3 views code 4 x 4: warned, and counted by info.
    BIN.ok(&["train", "--dct", "--patch", "4x4x2x2", "--out", &p(d, "dct2.lfd")]);
    let out =
        BIN.run(&encode(&p(d, "lf.npy"), &p(d, "dct2.lfd"), "100", "0.02", &p(d, "b.lfc"), &["--backend", "cpu"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("warning: 2x2-view patches do not tile the 3x3 views"), "{stderr}");
    assert!(stderr.contains("--patch 4x4x3x3"), "{stderr}");
    let info = json(&BIN.ok(&["info", &p(d, "b.lfc"), "--json"]));
    let ratio = info["breakdown"]["coded_over_real_samples"].as_f64().unwrap();
    assert!((ratio - 16.0 / 9.0).abs() < 1e-9, "{info}");
}
