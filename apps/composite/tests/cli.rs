//! End-to-end tests of the `composite` binary: encode/decode/blend round trips on both
//! backends, clear errors on bad `.ap` files, render (points and OBJ), demo, bench --quick,
//! and distributed runs under `mpirun` compared byte for byte with the single-rank image.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use composite::ap::{ApImage, HEADER_BYTES};
use composite::frame::Frame;
use kit::testing::write_file;
use rand::{Rng, SeedableRng};

const BIN: kit::testing::Bin = kit::testing::Bin(env!("CARGO_BIN_EXE_composite"));

/// Runs a command that must fail cleanly with exit status `code`; returns its stderr.
fn fails_with(code: i32, args: &[&str]) -> String {
    let out = BIN.run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "composite {args:?} should exit {code}:\n{err}");
    assert!(!err.contains("panicked"), "composite {args:?} panicked:\n{err}");
    assert!(err.starts_with("composite: error: "), "composite {args:?}: not kit's error format:\n{err}");
    err
}

/// Runs a command that must fail (exit 1) cleanly; returns its stderr.
fn fails(args: &[&str]) -> String {
    fails_with(1, args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The arguments of `composite encode` from `color` and `depth` to `out`, then `extra`.
fn encode_args<'a>(color: &'a Path, depth: &'a Path, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    [&["encode", "--color", s(color), "--depth", s(depth), "--out", s(out)][..], extra].concat()
}

/// A random partial image with runs, as colour PNG + depth npy.
fn write_inputs(dir: &Path, name: &str, w: u32, h: u32, seed: u64) -> (PathBuf, PathBuf, Frame) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut f = Frame::empty(w, h);
    let mut on = false;
    let mut i = 0;
    while i < f.pixels() {
        let len = rng.gen_range(1..40);
        for p in i..(i + len).min(f.pixels()) {
            if on {
                f.color[p] = rng.gen();
                f.depth[p] = rng.gen_range(0.0..0.99);
            }
        }
        i += len;
        on = !on;
    }
    let color = dir.join(format!("{name}.png"));
    let depth = dir.join(format!("{name}.npy"));
    kit::image::save_rgba8(&color, w as usize, h as usize, &f.rgba_bytes([0; 4])).unwrap();
    kit::npy::write_f32(&depth, &[h as usize, w as usize], &f.depth).unwrap();
    // Inactive pixels read back with colour 0 (the PNG holds the background there).
    for p in 0..f.pixels() {
        if f.depth[p] == 1.0 {
            f.color[p] = 0;
        }
    }
    (color, depth, f)
}

#[test]
fn encode_decode_blend_round_trips_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (c, z, frame) = write_inputs(d, "a", 333, 211, 1);
    let (c2, z2, _) = write_inputs(d, "b", 333, 211, 2);
    let (gpu, cpu, b) = (d.join("gpu.ap"), d.join("cpu.ap"), d.join("b.ap"));
    BIN.ok(&encode_args(&c, &z, &gpu, &["--background", "1,2,3,4"]));
    BIN.ok(&encode_args(&c, &z, &cpu, &["--background", "1,2,3,4", "--backend", "cpu"]));
    let line: serde_json::Value = serde_json::from_str(&BIN.ok(&encode_args(&c2, &z2, &b, &["--json"]))).unwrap();
    assert_eq!(line["command"], "encode");
    assert_eq!(line["out"], serde_json::json!([s(&b)]), "{line}");
    assert!(line["active_pixels"].as_u64().unwrap() > 0, "{line}");
    assert_eq!(std::fs::read(&gpu).unwrap(), std::fs::read(&cpu).unwrap(), "GPU and CPU .ap files differ");

    let (png, npy) = (d.join("dec.png"), d.join("dec.npy"));
    BIN.ok(&["decode", s(&gpu), "--color", s(&png), "--depth", s(&npy)]);
    let back = Frame::load(&png, &npy).unwrap();
    assert_eq!(back.depth, frame.depth);
    let (_, _, rgba) = kit::image::load_rgba8(&png).unwrap();
    for p in 0..frame.pixels() {
        let want = if frame.depth[p] == 1.0 { [1, 2, 3, 4] } else { frame.color[p].to_le_bytes() };
        assert_eq!(rgba[4 * p..4 * p + 4], want, "pixel {p}");
    }

    for op in ["zbuffer", "over"] {
        let (g, c) = (d.join(format!("{op}_gpu.png")), d.join(format!("{op}_cpu.png")));
        BIN.ok(&["blend", s(&gpu), s(&b), "--out", s(&g), "--op", op]);
        BIN.ok(&[
            "blend",
            s(&gpu),
            s(&b),
            "--out",
            s(&c),
            "--op",
            op,
            "--backend",
            "cpu",
            "--depth-out",
            s(&d.join("z.npy")),
        ]);
        assert_eq!(std::fs::read(&g).unwrap(), std::fs::read(&c).unwrap(), "{op}: GPU and CPU blends differ");
    }
    fails(&["blend", s(&gpu), s(&b), "--out", s(&gpu)]);
}

/// numpy writes float64 by default: such a depth is rounded to float32 and encodes as the
/// float32 file does; integer depths are refused naming the types read. The blend summary
/// names the operator as `--op` spells it.
#[test]
fn float64_depth_is_read_and_blend_names_its_op() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (c, z, frame) = write_inputs(d, "a", 37, 23, 11);
    let z64 = d.join("a64.npy");
    let mut bytes = kit::npy::header_bytes("<f8", &[23, 37]);
    bytes.extend(frame.depth.iter().flat_map(|&v| (v as f64).to_le_bytes()));
    std::fs::write(&z64, bytes).unwrap();
    let (a32, a64) = (d.join("a32.ap"), d.join("a64.ap"));
    BIN.ok(&encode_args(&c, &z, &a32, &[]));
    BIN.ok(&encode_args(&c, &z64, &a64, &[]));
    assert_eq!(std::fs::read(&a32).unwrap(), std::fs::read(&a64).unwrap(), "float64 and float32 depths differ");
    let z8 = d.join("a8.npy");
    let mut bytes = kit::npy::header_bytes("|u1", &[23, 37]);
    bytes.extend(std::iter::repeat_n(0u8, 23 * 37));
    std::fs::write(&z8, bytes).unwrap();
    let err = fails(&encode_args(&c, &z8, &d.join("x.ap"), &[]));
    assert!(err.contains("depth must be float32 or float64, not uint8"), "{err}");
    for op in ["zbuffer", "over"] {
        let out = BIN.ok(&["blend", s(&a32), s(&a64), "--op", op, "--out", s(&d.join("b.png"))]);
        assert!(out.contains(&format!("(2 inputs, {op})")), "{out}");
    }
}

#[test]
fn bad_ap_files_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (c, z, _) = write_inputs(d, "a", 96, 64, 3);
    let (c2, z2, _) = write_inputs(d, "b", 7, 3, 4);
    let (a, small) = (d.join("a.ap"), d.join("small.ap"));
    BIN.ok(&encode_args(&c, &z, &a, &["--backend", "cpu"]));
    BIN.ok(&encode_args(&c2, &z2, &small, &["--backend", "cpu"]));
    let bytes = std::fs::read(&a).unwrap();
    let out = d.join("out.png");
    let write = |name: &str, b: &[u8]| write_file(d, name, b);
    let truncated = write("truncated.ap", &bytes[..bytes.len() - 8]);
    assert!(fails(&["decode", s(&truncated), "--color", s(&out)]).contains("payload"));
    let short = write("short.ap", &bytes[..10]);
    fails(&["decode", s(&short), "--color", s(&out)]);
    let mut magic = bytes.clone();
    magic[..4].copy_from_slice(b"NOPE");
    assert!(fails(&["decode", s(&write("magic.ap", &magic)), "--color", s(&out)]).contains("magic"));
    // Header and payload disagree: a different height.
    let mut size = bytes.clone();
    size[12..16].copy_from_slice(&65u32.to_le_bytes());
    assert!(fails(&["decode", s(&write("size.ap", &size)), "--color", s(&out)]).contains("pixels"));
    // A run header that claims more pixels than follow.
    let mut runs = bytes.clone();
    runs[HEADER_BYTES + 4..HEADER_BYTES + 8].copy_from_slice(&1_000_000u32.to_le_bytes());
    fails(&["decode", s(&write("runs.ap", &runs)), "--color", s(&out)]);
    assert!(fails(&["blend", s(&a), s(&small), "--out", s(&out)]).contains("sizes differ"));
    fails(&["decode", s(&d.join("missing.ap")), "--color", s(&out)]);
    assert!(!out.exists(), "a failed command wrote its output");
    // The good file still decodes.
    assert!(ApImage::read(&a).is_ok());
}

fn render(extra: &[&str], out: &Path) -> Vec<u8> {
    let mut args = vec!["render", "--size", "96x64", "--out", s(out)];
    args.extend_from_slice(extra);
    BIN.ok(&args);
    std::fs::read(out).unwrap()
}

#[test]
fn render_points_and_obj_single_rank() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = render(&["--scene", "points:3000:2", "--frames", "2", "--json"], &d.join("a.png"));
    let raw = render(&["--scene", "points:3000:2", "--frames", "2", "--no-compress"], &d.join("raw.png"));
    assert_eq!(a, raw, "raw and encoded exchange give different images");
    let cpu = render(&["--scene", "points:3000:2", "--frames", "2", "--backend", "cpu"], &d.join("cpu.png"));
    assert_eq!(a, cpu, "CPU and GPU encoding give different images");
    let objs = d.join("objs");
    std::fs::create_dir(&objs).unwrap();
    for (k, off) in [0.0f32, 0.7].iter().enumerate() {
        let cube: String = (0..8)
            .map(|i| format!("v {} {} {}\n", (i & 1) as f32 + off, ((i >> 1) & 1) as f32, ((i >> 2) & 1) as f32 - off))
            .chain(["f 1 2 4 3\nf 5 6 8 7\nf 1 2 6 5\nf 3 4 8 7\nf 1 3 7 5\nf 2 4 8 6\n".to_string()])
            .collect();
        std::fs::write(objs.join(format!("cube{k}.obj")), cube).unwrap();
    }
    let mesh = render(&["--scene", s(&objs)], &d.join("mesh.png"));
    let (_, _, rgba) = kit::image::load_rgba8(&d.join("mesh.png")).unwrap();
    assert!(rgba.chunks(4).filter(|p| p[3] == 255).count() > 500, "the cubes did not render");
    assert!(!mesh.is_empty());
    fails_with(2, &["render", "--scene", "points:0", "--size", "96x64", "--out", s(&d.join("x.png"))]);
    fails_with(2, &["render", "--scene", "points:10", "--size", "96by64", "--out", s(&d.join("x.png"))]);
    fails(&["render", "--scene", s(&d.join("nothing")), "--size", "9x6", "--out", s(&d.join("x.png"))]);
}

/// `mpirun -n N composite` as root on one machine over shared memory.
fn mpirun(n: usize) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_plm_rsh_agent", "")
        .args(["-n", &n.to_string(), "--oversubscribe", BIN.0]);
    cmd
}

#[test]
fn mpirun_matches_the_single_rank_image() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        println!("mpirun not found: skipping the distributed test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scene = ["--scene", "points:4000:9"];
    let single = render(&scene, &d.join("single.png"));
    let partials = d.join("partials");
    for (n, strategy, extra) in [
        (2, "binary-swap", vec!["--partials", s(&partials)]),
        (2, "binary-swap", vec!["--backend", "cpu"]),
        (3, "binary-swap", vec![]),
        (3, "radix-k", vec!["--no-compress"]),
        (4, "radix-k", vec![]),
        (4, "direct-send", vec![]),
    ] {
        let out = d.join(format!("mpi{n}{strategy}{}.png", extra.len()));
        let mut cmd = mpirun(n);
        cmd.args(["render", "--size", "96x64", "--json"])
            .args(scene)
            .args(["--strategy", strategy, "--out", s(&out)])
            .args(&extra);
        let result = cmd.output().expect("run mpirun");
        let err = String::from_utf8_lossy(&result.stderr);
        assert!(result.status.success(), "mpirun -n {n}: {err}");
        assert!(!err.contains("vulkan validation"), "mpirun -n {n}: validation messages:\n{err}");
        let stdout = String::from_utf8_lossy(&result.stdout);
        let line: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(line["ranks"], n);
        assert_eq!(line["out"][0], s(&out), "{line}");
        assert_eq!(stdout.lines().count(), 1, "one line per frame, from rank 0 only: {stdout}");
        assert!(line["bytes_sent"].as_u64().unwrap() > 0);
        assert_eq!(std::fs::read(&out).unwrap(), single, "mpirun -n {n} {strategy} {extra:?} differs from one rank");
    }
    // An unwritable output stops every rank at once: rank 0 checks it, every rank learns its
    // error, rank 0 alone prints it (once, whichever rank mpirun sees exit first) and every
    // rank exits with status 1.
    let file = write_file(d, "file", b"x");
    let t = std::time::Instant::now();
    let result = mpirun(3)
        .args(["render", "--size", "8x8", "--scene", "points:50", "--out", s(&file.join("x.png"))])
        .output()
        .expect("run mpirun");
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success());
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
    let want = format!("composite: error: rank 0: {}: is a file where a folder must be", file.display());
    assert_eq!(errors, [want.as_str()], "{err}");
    assert!(t.elapsed().as_secs() < 60, "the ranks took {:?} to stop", t.elapsed());
    // More ranks than pixels: empty spans travel as empty payloads.
    let tiny_single = d.join("tiny1.png");
    BIN.ok(&["render", "--size", "3x1", "--scene", "points:50:3", "--out", s(&tiny_single)]);
    let tiny = d.join("tiny4.png");
    let result = mpirun(4)
        .args(["render", "--size", "3x1", "--scene", "points:50:3"])
        .args(["--strategy", "radix-k", "--out", s(&tiny)])
        .output()
        .expect("run mpirun");
    assert!(result.status.success(), "4 ranks, 3 pixels: {}", String::from_utf8_lossy(&result.stderr));
    assert_eq!(std::fs::read(&tiny).unwrap(), std::fs::read(&tiny_single).unwrap(), "4 ranks, 3 pixels");
    // The partials of the 2-rank run, z-buffered here (ties to rank 0), give the same image.
    let read = |name: &str| std::fs::read(partials.join(name)).unwrap();
    let (c0, d0, c1, d1) = (read("rank0.rgba"), read("rank0.depth"), read("rank1.rgba"), read("rank1.depth"));
    assert_eq!((c0.len(), d0.len(), c1.len(), d1.len()), (96 * 64 * 4, 96 * 64 * 4, 96 * 64 * 4, 96 * 64 * 4));
    let depth = |d: &[u8], i: usize| f32::from_le_bytes(d[4 * i..4 * i + 4].try_into().unwrap());
    let mut composed = Vec::with_capacity(c0.len());
    for i in 0..96 * 64 {
        let pick = if depth(&d1, i) < depth(&d0, i) { &c1 } else { &c0 };
        composed.extend_from_slice(&pick[4 * i..4 * i + 4]);
    }
    let (_, _, want) = kit::image::load_rgba8(&d.join("single.png")).unwrap();
    assert_eq!(composed, want, "the written partials do not composite to the rendered image");
}

/// A 4096x4096 frame's worst-case payload (8 bytes a pixel and 16) is past lavapipe's
/// 128 MiB binding range: the GPU encoder takes it in bands, with no validation message,
/// and writes what the CPU encoder writes.
#[test]
fn frames_past_the_binding_range_encode_in_bands() {
    let dir = tempfile::tempdir().unwrap();
    let (gpu, cpu) = (dir.path().join("gpu.png"), dir.path().join("cpu.png"));
    let args = ["render", "--size", "4096x4096", "--scene", "points:3000"];
    BIN.ok(&[&args[..], &["--out", s(&gpu)]].concat());
    BIN.ok(&[&args[..], &["--out", s(&cpu), "--backend", "cpu"]].concat());
    assert_eq!(std::fs::read(&gpu).unwrap(), std::fs::read(&cpu).unwrap());
}

#[test]
fn demo_and_quick_bench_run() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = BIN.ok(&["demo", "--out", s(dir.path())]);
    assert!(stdout.contains("== single-pass render: true"), "{stdout}");
    assert!(dir.path().join("composite.png").exists() && dir.path().join("summary.json").exists());
    let bench = BIN.ok(&["bench", "--quick"]);
    let lines: Vec<serde_json::Value> = bench.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["bench"] == "ap_encode" && l["gpu_ms"].as_f64().unwrap() > 0.0));
    assert!(lines.iter().any(|l| l["bench"] == "ap_ratios"));
}

#[test]
fn version_and_help_follow_the_contract() {
    for args in [&["--version"][..], &["render", "--version"][..]] {
        assert!(BIN.ok(args).contains(env!("CARGO_PKG_VERSION")), "{args:?}");
    }
    for sub in ["encode", "decode", "blend", "render", "merge", "demo", "bench"] {
        let help = BIN.ok(&[sub, "--help"]);
        assert!(help.contains("Examples:\n  composite ") || help.contains("Examples:\n  mpirun"), "{sub}: {help}");
    }
    assert!(BIN.ok(&["render", "--help"]).contains("mpirun -n"));
}

#[test]
fn huge_ap_headers_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 65535x65535, all inactive: one run (65535^2, 0). A canonical 36-byte file that decodes
    // to 17 GB of colour.
    let pixels = 65535u32 * 65535;
    let mut bytes = b"TSAP".to_vec();
    for word in [1u32, 65535, 65535, 0] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    bytes.extend_from_slice(&8u64.to_le_bytes());
    bytes.extend_from_slice(&pixels.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(bytes.len(), 36);
    let huge = d.join("huge.ap");
    std::fs::write(&huge, &bytes).unwrap();
    let out = d.join("out.png");
    let t = std::time::Instant::now();
    let err = fails(&["decode", s(&huge), "--color", s(&out), "--max-memory", "1G"]);
    assert!(err.contains("memory budget"), "{err}");
    let err = fails(&["blend", s(&huge), s(&huge), "--out", s(&out), "--max-memory", "1G", "--backend", "cpu"]);
    assert!(err.contains("memory budget"), "{err}");
    assert!(t.elapsed().as_secs() < 10, "refusing took {:?}", t.elapsed());
    // A payload longer than any canonical payload of its size.
    let mut long = b"TSAP".to_vec();
    for word in [1u32, 1, 1, 0] {
        long.extend_from_slice(&word.to_le_bytes());
    }
    long.extend_from_slice(&24u64.to_le_bytes());
    long.extend_from_slice(&[0u8; 24]);
    assert!(fails(&["decode", s(&write_file(d, "long.ap", &long)), "--color", s(&out)]).contains("at most 16"));
    assert!(!out.exists());
}

/// A folder holding `cube.obj` (a unit cube) and `extra.obj` with `text`.
fn obj_scene(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let objs = dir.join(name);
    std::fs::create_dir(&objs).unwrap();
    let cube: String = (0..8)
        .map(|i| format!("v {} {} {}\n", i & 1, (i >> 1) & 1, (i >> 2) & 1))
        .chain(["f 1 2 4 3\nf 5 6 8 7\nf 1 2 6 5\nf 3 4 8 7\nf 1 3 7 5\nf 2 4 8 6\n".to_string()])
        .collect();
    std::fs::write(objs.join("cube.obj"), cube).unwrap();
    if !extra.is_empty() {
        std::fs::write(objs.join("extra.obj"), extra).unwrap();
    }
    objs
}

#[test]
fn scenes_are_checked_before_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("x.png");
    let render_scene =
        |scene: &Path| -> Output { BIN.run(&["render", "--scene", s(scene), "--size", "32x24", "--out", s(&out)]) };
    let nan = obj_scene(d, "nan", "v nan nan nan\nv 0 1 0\nv 1 0 0\nf 1 2 3\n");
    let err = String::from_utf8_lossy(&render_scene(&nan).stderr).into_owned();
    assert!(err.contains("not finite"), "{err}");
    let inf = obj_scene(d, "inf", "v 0 0 0\nv 0 inf 0\nv 1 0 0\nf 1 2 3\n");
    assert!(String::from_utf8_lossy(&render_scene(&inf).stderr).contains("not finite"));
    let wide = obj_scene(d, "wide", "v -3e38 0 0\nv 3e38 0 0\nv 0 3e38 0\nf 1 2 3\n");
    assert!(String::from_utf8_lossy(&render_scene(&wide).stderr).contains("too large for f32"));
    // A material library that never ends is not opened: materials are not used.
    let mtl = obj_scene(d, "mtl", "mtllib /dev/zero\nusemtl x\nv 0 0 0\nv 0 1 0\nv 1 0 0\nf 1 2 3\n");
    let t = std::time::Instant::now();
    assert!(render_scene(&mtl).status.success());
    assert!(t.elapsed().as_secs() < 60, "the scene took {:?}", t.elapsed());
    // A FIFO named f.obj is refused at once instead of waiting for a writer.
    let fifo_dir = obj_scene(d, "fifo", "");
    let fifo = fifo_dir.join("f.obj");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let t = std::time::Instant::now();
    let result = render_scene(&fifo_dir);
    let err = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert!(t.elapsed().as_secs() < 30, "the FIFO took {:?}", t.elapsed());
    // Point counts: an overflowing count is a usage error, a huge one is over the budget.
    let err = fails_with(2, &["render", "--scene", "points:18446744073709551616", "--size", "8x8", "--out", s(&out)]);
    assert!(err.contains("points:N"), "{err}");
    let err = fails(&["render", "--scene", "points:18446744073709551615", "--size", "8x8", "--out", s(&out)]);
    assert!(err.contains("memory budget") || err.contains("overflows"), "{err}");
}

#[test]
fn outputs_are_checked_before_work_and_inputs_read_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (c, z, _) = write_inputs(d, "a", 40, 30, 5);
    // A PNG named .img is read as the PNG it is.
    let img = d.join("a.img");
    std::fs::copy(&c, &img).unwrap();
    let ap = d.join("a.ap");
    BIN.ok(&encode_args(&img, &z, &ap, &["--backend", "cpu"]));
    // Image outputs take any image extension; the format follows it.
    let tif = d.join("a.tif");
    BIN.ok(&["decode", s(&ap), "--color", s(&tif)]);
    assert_eq!(kit::image::load_rgba8(&tif).unwrap().2, kit::image::load_rgba8(&c).unwrap().2);
    let err = fails(&["decode", s(&ap), "--color", s(&d.join("a.gif"))]);
    assert!(err.contains(".png"), "{err}");
    // An output under a file fails before the scene is built or rendered: the scene's 50M
    // points are over the 16 MB budget, so a check that came after building it would report
    // the budget instead.
    let file = write_file(d, "file", b"x");
    let late = ["--scene", "points:50000000", "--size", "64x64", "--max-memory", "16M"];
    let err = fails(&[&["render"][..], &late, &["--out", s(&file.join("x.png"))]].concat());
    assert!(err.contains("is a file where a folder must be"), "{err}");
    assert!(fails(&[&["render"][..], &late, &["--out", s(&d.join("x.png"))]].concat()).contains("memory budget"));
    // So does an image whose path is also the partials folder.
    let both = d.join("both.png");
    let err = fails(&[&["render"][..], &late, &["--out", s(&both), "--partials", s(&both)]].concat());
    assert!(err.contains("is a folder"), "{err}");
    // And an image larger than its format holds (WebP's sides end at 16383 pixels).
    let err = fails(&["render", "--scene", "points:1000", "--size", "16384x16", "--out", s(&d.join("wide.webp"))]);
    assert!(err.contains("a 16384x16 image does not fit .webp"), "{err}");
    fails(&encode_args(&c, &z, &d.join("x.png"), &[]));
    fails(&encode_args(&c, &z, &z, &[]));
    // NaN depths are refused.
    let mut depth = vec![0.5f32; 40 * 30];
    depth[7] = f32::NAN;
    let nan = d.join("nan.npy");
    kit::npy::write_f32(&nan, &[30, 40], &depth).unwrap();
    fails(&encode_args(&c, &nan, &d.join("n.ap"), &[]));
    let json = BIN.run(&["decode", s(&d.join("none.ap")), "--color", s(&tif), "--json"]);
    let line: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(line["command"], "decode");
    assert!(line["error"].as_str().unwrap().contains("none.ap"), "{line}");
}
