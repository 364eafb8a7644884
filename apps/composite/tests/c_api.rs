//! The C ABI end to end: the example renderer of examples/c (built by tools/test.sh with
//! `sh examples/c/build.sh debug` against the cdylib, through the pkg-config file) runs
//! under `mpirun -n 3` with one empty rank; the root's image is checked against an
//! independent z-buffer and an independent premultiplied "over" of the partial images the
//! ranks wrote, on the GPU and the CPU path, in RGBA8 and RGBA32F; bad arguments are refused
//! with negative codes and messages (`--check-errors`). `composite merge` of the same
//! partials gives the same image.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_composite");

/// The tests' mpirun jobs run one at a time: two Open MPI launchers starting at once in one
/// process tree collide on their session folder ("File exists").
static MPIRUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn render_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples-c/render");
    assert!(
        bin.is_file(),
        "{} is missing: `cargo build -p tessera-composite-capi && sh examples/c/build.sh debug`",
        bin.display()
    );
    bin
}

fn mpirun(n: usize, program: &Path) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_plm_rsh_agent", "")
        .args(["-n", &n.to_string(), "--oversubscribe"])
        .arg(program);
    cmd
}

fn run(mut cmd: Command) -> String {
    let out = cmd.output().expect("run mpirun");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{stdout}\n{stderr}");
    assert!(!stderr.contains("vulkan validation"), "validation messages:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stdout.into_owned()
}

/// Each rank's partial image as the renderer wrote it: RGBA8 bytes and f32 depths.
fn partials(dir: &Path, ranks: usize) -> Vec<(Vec<u8>, Vec<f32>)> {
    (0..ranks)
        .map(|r| {
            let color = std::fs::read(dir.join(format!("rank{r}.rgba"))).unwrap();
            let depth = std::fs::read(dir.join(format!("rank{r}.depth"))).unwrap();
            (color, depth.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect())
        })
        .collect()
}

/// The z-buffer of `parts` in `order` (ties to the earlier), background (0, 0, 0, 0).
fn zbuffer(parts: &[(Vec<u8>, Vec<f32>)], order: &[usize]) -> Vec<u8> {
    let n = parts[0].1.len();
    let mut out = vec![0u8; 4 * n];
    for i in 0..n {
        let mut best: Option<(f32, usize)> = None;
        for &r in order {
            let d = parts[r].1[i];
            if d < 1.0 && best.is_none_or(|(b, _)| d < b) {
                best = Some((d, r));
            }
        }
        if let Some((_, r)) = best {
            out[4 * i..4 * i + 4].copy_from_slice(&parts[r].0[4 * i..4 * i + 4]);
        }
    }
    out
}

/// Premultiplied "over" of `parts` front to back in `order`, in f64.
fn over(parts: &[(Vec<u8>, Vec<f32>)], order: &[usize]) -> Vec<f64> {
    let n = parts[0].1.len();
    let mut out = vec![0f64; 4 * n];
    for i in 0..n {
        let acc = &mut out[4 * i..4 * i + 4];
        for &r in order.iter().filter(|&&r| parts[r].1[i] < 1.0) {
            let t = 1.0 - acc[3];
            for (k, a) in acc.iter_mut().enumerate() {
                *a += parts[r].0[4 * i + k] as f64 / 255.0 * t;
            }
        }
    }
    out
}

fn png(path: &Path) -> Vec<u8> {
    kit::image::load_rgba8(path).unwrap().2
}

#[test]
fn c_example_matches_independent_composites() {
    let _one = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    let bin = render_bin();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let size = ["--size", "97x61"];

    // The z-buffer, rank 1 empty, after every bad-argument check; GPU path (lavapipe here).
    let zdir = d.join("z");
    std::fs::create_dir(&zdir).unwrap();
    let mut cmd = mpirun(3, &bin);
    cmd.args(size).args([
        "--empty-rank",
        "1",
        "--check-errors",
        "--out",
        &s(&d.join("z.png")),
        "--partials",
        &s(&zdir),
    ]);
    let stdout = run(cmd);
    assert_eq!(stdout.matches("refused as expected").count(), 14, "{stdout}");
    let line: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(line["bytes_sent"].as_u64().unwrap() > 0 && line["total_ms"].as_f64().unwrap() > 0.0, "{line}");
    let parts = partials(&zdir, 3);
    assert!(parts[1].1.iter().all(|&d| d == 1.0), "rank 1 drew");
    let want = zbuffer(&parts, &[0, 1, 2]);
    assert!(want.chunks(4).filter(|p| p[3] > 0).count() > 1000, "the scene is nearly empty");
    assert_eq!(png(&d.join("z.png")), want, "z-buffer: GPU path");

    // The CPU path, RGBA32F colour, root 2: the same image.
    for (name, extra, env) in
        [("cpu", vec!["--root", "2"], "cpu"), ("float", vec!["--float"], "auto"), ("cpu-float", vec!["--float"], "cpu")]
    {
        let out = d.join(format!("{name}.png"));
        let mut cmd = mpirun(3, &bin);
        cmd.env("TESSERA_COMPOSITE_BACKEND", env)
            .args(size)
            .args(["--empty-rank", "1", "--out", &s(&out)])
            .args(&extra);
        run(cmd);
        assert_eq!(png(&out), want, "z-buffer: {name}");
    }

    // Blending back to front (order 2, 1, 0), rank 2 empty, in RGBA8 and RGBA32F.
    let odir = d.join("o");
    std::fs::create_dir(&odir).unwrap();
    for (name, extra) in [("over", vec![]), ("over-float", vec!["--float"])] {
        let out = d.join(format!("{name}.png"));
        let mut cmd = mpirun(3, &bin);
        cmd.args(size).args(["--mode", "over", "--order", "reverse", "--empty-rank", "2", "--out", &s(&out)]);
        cmd.args(["--partials", &s(&odir)]).args(&extra);
        run(cmd);
        let want = over(&partials(&odir, 3), &[2, 1, 0]);
        let got = png(&out);
        let worst = got.iter().zip(&want).map(|(&g, &w)| (g as f64 / 255.0 - w).abs()).fold(0.0, f64::max);
        assert!(worst <= 1.0 / 255.0 + 1e-9, "{name}: off by {worst} from an independent over");
        assert!(got.chunks(4).filter(|p| p[3] > 0 && p[3] < 255).count() > 1000, "{name}: nothing blended");
    }

    // `composite merge` of the z-buffer's partials (the --partials layout) under mpirun.
    let merged = d.join("merged.png");
    let mut cmd = mpirun(3, Path::new(BIN));
    cmd.args(["merge", "--inputs", &s(&zdir), "--size", "97x61", "--out", &s(&merged)]);
    run(cmd);
    assert_eq!(png(&merged), want, "composite merge");
}

/// IceT (tools/icet: its driver on Debian's IceT 2.2 build, made by tools/test.sh into
/// .gpu-icet/) on the very partial images the C example composited with the library, at
/// 2, 3 and 4 ranks: the z-buffer identical except exact depth ties (the scene has none
/// across ranks), blending within 2/255 of each other (each within 1/255 of the exact).
#[test]
fn c_example_matches_icet() {
    let _one = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    let icet = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.gpu-icet/run-icet.sh");
    if !icet.is_file() {
        println!("no IceT bundle at {} (tools/icet/build.sh): skipping the IceT comparison", icet.display());
        return;
    }
    let bin = render_bin();
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    for (n, mode) in [(2, "zbuffer"), (3, "zbuffer"), (4, "zbuffer"), (3, "over"), (4, "over")] {
        let d = dir.path().join(format!("{n}{mode}"));
        std::fs::create_dir(&d).unwrap();
        let ours = d.join("ours.png");
        let mut cmd = mpirun(n, &bin);
        cmd.args(["--size", "97x61", "--mode", mode, "--empty-rank", "1", "--out", &s(&ours), "--partials", &s(&d)]);
        if mode == "over" {
            cmd.args(["--order", "reverse"]);
        }
        run(cmd);
        let theirs = d.join("icet.rgba");
        let mut cmd = mpirun(n, &icet);
        cmd.args(["--partials", &s(&d), "--size", "97x61", "--frames", "1", "--out", &s(&theirs)]);
        if mode == "over" {
            cmd.args(["--blend", "--reverse"]);
        }
        run(cmd);
        let (ours, theirs) = (png(&ours), std::fs::read(&theirs).unwrap());
        assert_eq!(ours.len(), theirs.len());
        let worst = ours.iter().zip(&theirs).map(|(&a, &b)| a.abs_diff(b)).max().unwrap();
        // Each rounds its integer "over" within 1/255 of the exact blend (the other test
        // holds ours to that), so the two may differ by 2/255.
        let limit = if mode == "over" { 2 } else { 0 };
        assert!(worst <= limit, "{n} ranks {mode}: IceT differs by {worst}/255");
    }
}

/// `composite merge` under mpirun equals `composite blend` of the same files encoded in rank
/// order, in both modes, on random partial images (PNG + .npy, one rank empty, depth ties
/// across ranks, translucent colours) at an awkward size.
#[test]
fn merge_equals_blend_of_the_same_files() {
    let _one = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (w, h, ranks) = (53usize, 29usize, 3usize);
    let mut rng = kit::rng::Rng::new(0x6d65_7267);
    let mut aps = Vec::new();
    for r in 0..ranks {
        let mut rgba = vec![0u8; 4 * w * h];
        let mut depth = vec![1.0f32; w * h];
        if r != 1 {
            for i in 0..w * h {
                if rng.uniform() < 0.6 {
                    // Quantised depths, so that ranks tie; premultiplied colour (c <= alpha).
                    depth[i] = (rng.uniform() * 8.0).floor() as f32 / 8.0;
                    let a = 1 + (rng.uniform() * 254.0) as u8;
                    rgba[4 * i + 3] = a;
                    for k in 0..3 {
                        rgba[4 * i + k] = (rng.uniform() * a as f64) as u8;
                    }
                }
            }
        }
        let (color, npy) = (dir.path().join(format!("rank{r}.png")), dir.path().join(format!("rank{r}.npy")));
        kit::image::save_rgba8(&color, w, h, &rgba).unwrap();
        kit::npy::write_f32(&npy, &[h, w], &depth).unwrap();
        let ap = dir.path().join(format!("rank{r}.ap"));
        let mut cmd = Command::new(BIN);
        cmd.args(["encode", "--color", &s(&color), "--depth", &s(&npy), "--out", &s(&ap)]);
        run(cmd);
        aps.push(s(&ap));
    }
    for op in ["zbuffer", "over"] {
        let (blended, merged) =
            (dir.path().join(format!("blend-{op}.png")), dir.path().join(format!("merge-{op}.png")));
        let mut cmd = Command::new(BIN);
        cmd.arg("blend").args(&aps).args(["--op", op, "--out", &s(&blended)]);
        run(cmd);
        let mut cmd = mpirun(ranks, Path::new(BIN));
        cmd.args(["merge", "--inputs", &s(dir.path()), "--op", op, "--out", &s(&merged)]);
        run(cmd);
        let (want, got) = (png(&blended), png(&merged));
        assert!(want.chunks(4).filter(|p| p[3] > 0).count() > w * h / 2, "{op}: nearly empty");
        assert_eq!(got, want, "{op}: merge differs from blend");
    }
}
