//! End-to-end tests of the `mosaic` binary on small inputs.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary with its default cache folder under the system's temporary folder, so
/// tests never write into the user's ~/.cache (caches are keyed by tile folder, and each
/// test has its own).
fn mosaic(args: &[&str]) -> Output {
    let caches = std::env::temp_dir().join("tessera-mosaic-tests");
    Command::new(env!("CARGO_BIN_EXE_mosaic")).args(args).env("XDG_CACHE_HOME", caches).output().expect("run mosaic")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A float64 `.npy` (kit::npy writes float32 only).
fn write_npy_f64(path: &Path, rows: usize, cols: usize, data: &[f64]) {
    let mut bytes = kit::npy::header_bytes("<f8", &[rows, cols]);
    for v in data {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// Runs `mosaic build` of `target` from the folder `tiles` at `grid` with `method` into `out`,
/// with the flags `extra`.
fn build(target: &str, tiles: &str, grid: &str, method: &str, out: &str, extra: &[&str]) -> Output {
    let args = ["build", "--target", target, "--tiles", tiles, "--grid", grid, "--method", method, "--out", out];
    mosaic(&[&args[..], extra].concat())
}

/// Runs `mosaic distance` of `target` from the folder `tiles` at `grid` into `out`, with the
/// flags `extra`.
fn distance(target: &str, tiles: &str, grid: &str, out: &str, extra: &[&str]) -> Output {
    mosaic(&[&["distance", "--target", target, "--tiles", tiles, "--grid", grid, "--out", out], extra].concat())
}

fn solve_json(path: &Path, method: &str, extra: &[&str]) -> serde_json::Value {
    let p = path.to_str().unwrap();
    let mut args = vec!["solve", "--distance", p, "--method", method, "--json"];
    args.extend_from_slice(extra);
    let out = mosaic(&args);
    assert!(out.status.success(), "{method}: {}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).expect("one JSON line")
}

#[test]
fn solve_reads_float32_and_float64_and_prints_one_json_line() {
    let dir = tempfile::tempdir().unwrap();
    // 3 patches x 4 tiles; optimum is 1 + 1 + 2 = 4 via (0->1, 1->0, 2->3).
    let data = [5.0, 1.0, 9.0, 9.0, 1.0, 3.0, 9.0, 9.0, 9.0, 2.0, 9.0, 2.0];
    let f64_path = dir.path().join("d64.npy");
    write_npy_f64(&f64_path, 3, 4, &data);
    let f32_path = dir.path().join("d32.npy");
    let data32: Vec<f32> = data.iter().map(|&v| v as f32).collect();
    kit::npy::write_f32(&f32_path, &[3, 4], &data32).unwrap();
    for path in [&f64_path, &f32_path] {
        for (method, extra) in [
            ("exact", vec![]),
            ("greedy", vec![]),
            ("anneal", vec!["--seed", "3", "--anneal-levels", "10"]),
            ("softassign", vec!["--backend", "cpu"]),
            ("softassign", vec!["--iterations", "20"]),
        ] {
            let v = solve_json(path, method, &extra);
            assert_eq!(v["method"], method);
            let a: Vec<usize> = serde_json::from_value(v["assignment"].clone()).unwrap();
            assert_eq!(a.len(), 3);
            let mut sorted = a.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), 3, "{method}: tile used twice: {a:?}");
            let cost: f64 = a.iter().enumerate().map(|(i, &j)| data[i * 4 + j]).sum();
            assert!((v["cost"].as_f64().unwrap() - cost).abs() < 1e-12);
            assert!(v["solve_ms"].as_f64().unwrap() >= 0.0);
            assert_eq!(v["out"], serde_json::json!([]));
            let on_gpu = matches!(method, "softassign" | "exact") && !extra.contains(&"cpu");
            let backend = if on_gpu { "gpu" } else { "cpu" };
            assert_eq!(v["backend"], backend, "{method} {extra:?}: the backend it ran on");
            if method == "exact" {
                assert_eq!(cost, 4.0);
            }
        }
    }
}

#[test]
fn bad_matrices_fail_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, usize, usize, Vec<f64>, &str); 4] = [
        ("tall", 3, 2, vec![1.0; 6], "no mosaic without repeated tiles"),
        // Every value error names the entry (row, col).
        ("nan", 2, 2, vec![1.0, 1.0, 1.0, f64::NAN], "entry (1, 1) is NaN"),
        ("negative", 2, 3, vec![1.0, 1.0, -0.5, 1.0, 1.0, 1.0], "entry (0, 2) is negative"),
        ("inf", 1, 2, vec![f64::INFINITY, 1.0], "entry (0, 0) is inf"),
    ];
    for (name, m, n, data, message) in cases {
        let path = dir.path().join(format!("{name}.npy"));
        write_npy_f64(&path, m, n, &data);
        for method in ["exact", "softassign"] {
            let out = mosaic(&["solve", "--distance", path.to_str().unwrap(), "--method", method]);
            assert!(!out.status.success(), "{name}/{method} succeeded");
            assert!(stderr(&out).contains(message), "{name}/{method}: {}", stderr(&out));
            assert!(!stderr(&out).contains("panicked"), "{name}: {}", stderr(&out));
        }
    }
    let missing = mosaic(&["solve", "--distance", "/nonexistent/D.npy", "--method", "greedy"]);
    assert!(!missing.status.success() && !stderr(&missing).contains("panicked"));
    let not_npy = dir.path().join("text.npy");
    std::fs::write(&not_npy, "hello").unwrap();
    let out = mosaic(&["solve", "--distance", not_npy.to_str().unwrap(), "--method", "greedy"]);
    assert!(!out.status.success() && !stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn small_end_to_end_build_distance_and_index() {
    use rand::SeedableRng;
    let dir = tempfile::tempdir().unwrap();
    let tiles = dir.path().join("tiles");
    std::fs::create_dir_all(tiles.join("more")).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for k in 0..24 {
        let sub = if k % 3 == 0 { tiles.join("more") } else { tiles.clone() };
        let rgb = mosaic::synth::SmoothField::random(&mut rng, 1).render(12, 10, 0.05, &mut rng);
        kit::image::save_rgb8(&sub.join(format!("t{k}.png")), 12, 10, &rgb).unwrap();
    }
    std::fs::write(tiles.join("corrupt.png"), b"\x89PNG broken").unwrap();
    let target = dir.path().join("target.png");
    let rgb = mosaic::synth::SmoothField::random(&mut rng, 4).render(40, 30, 0.02, &mut rng);
    kit::image::save_rgb8(&target, 40, 30, &rgb).unwrap();
    let (t, d) = (target.to_str().unwrap(), tiles.to_str().unwrap());

    let out_png = dir.path().join("mosaic.png");
    let png = out_png.to_str().unwrap();
    let out =
        build(t, d, "5x4", "softassign", png, &["--tile-px", "8", "--iterations", "20", "--compare-exact", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("corrupt.png"), "no warning for the corrupt tile: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!((v["patches"].as_u64(), v["tiles"].as_u64(), v["tiles_used"].as_u64()), (Some(20), Some(24), Some(20)));
    assert!(v["ratio_to_exact"].as_f64().unwrap() >= 1.0 - 1e-12);
    assert_eq!(v["out"], serde_json::json!([out_png.to_str().unwrap()]));
    let img = kit::image::load(&out_png).unwrap();
    // Patches are 8 x 7.5 target pixels: 8 px wide cells are 8 px tall.
    assert_eq!((img.width, img.height), (40, 32));

    // The second run reads every tile from the cache.
    let index = mosaic(&["index", d, "--aspect", "1.0", "--json"]);
    assert!(index.status.success(), "{}", stderr(&index));
    let index_json = |o: &Output| -> serde_json::Value { serde_json::from_str(stdout(o).trim()).unwrap() };
    let again = mosaic(&["index", d, "--aspect", "1.0", "--json"]);
    let s = index_json(&again);
    assert_eq!((s["tiles"].as_u64(), s["stats"]["decoded"].as_u64()), (Some(24), Some(0)));

    // A NaN feature written into the cache is not trusted: that tile is decoded again
    // with a warning, and the rewritten cache is valid again.
    let cache = std::path::PathBuf::from(s["cache"].as_str().unwrap());
    assert!(cache.starts_with(std::env::temp_dir().join("tessera-mosaic-tests/tessera")), "{}", cache.display());
    let in_tiles = std::fs::read_dir(&tiles)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'));
    assert_eq!(in_tiles.count(), 0, "no cache in the photo folder");
    let mut bytes = std::fs::read(&cache).unwrap();
    let at = first_tile_features(&bytes);
    bytes[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&cache, &bytes).unwrap();
    let fixed = mosaic(&["index", d, "--aspect", "1.0", "--json"]);
    assert!(fixed.status.success(), "{}", stderr(&fixed));
    assert!(stderr(&fixed).contains("is invalid") && stderr(&fixed).contains("NaN"), "{}", stderr(&fixed));
    let s = index_json(&fixed);
    assert_eq!((s["tiles"].as_u64(), s["stats"]["decoded"].as_u64()), (Some(24), Some(1)));
    let s = index_json(&mosaic(&["index", d, "--aspect", "1.0", "--json"]));
    assert_eq!(s["stats"]["decoded"].as_u64(), Some(0));
    let s = index_json(&mosaic(&["index", d, "--aspect", "1.0", "--json", "--no-cache"]));
    assert_eq!((s["stats"]["decoded"].as_u64(), &s["cache"]), (Some(25), &serde_json::Value::Null));

    // distance writes the matrix solve reads; GPU and CPU agree.
    let npy = dir.path().join("D.npy");
    let npy_cpu = dir.path().join("D_cpu.npy");
    for (path, backend) in [(&npy, "gpu"), (&npy_cpu, "cpu")] {
        let out = distance(t, d, "5x4", path.to_str().unwrap(), &["--cells", "2x3", "--backend", backend]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let (a, b) = (kit::npy::read(&npy).unwrap(), kit::npy::read(&npy_cpu).unwrap());
    assert_eq!(a.shape, vec![20, 24]);
    assert!(a.data.iter().zip(&b.data).all(|(x, y)| (x - y).abs() <= 1e-4 * y.max(1.0)));
    let v = solve_json(&npy, "exact", &[]);
    assert_eq!(v["assignment"].as_array().unwrap().len(), 20);

    // Refuses to overwrite its input or a tile, and bad grids fail cleanly.
    let out = build(t, d, "5x4", "greedy", t, &[]);
    assert!(!out.status.success() && stderr(&out).contains("inputs"), "{}", stderr(&out));
    let tile = tiles.join("t1.png");
    let out = build(t, d, "5x4", "greedy", tile.to_str().unwrap(), &[]);
    assert!(!out.status.success() && stderr(&out).contains("one of the tiles"), "{}", stderr(&out));
    // A new file inside the tile folder is fine, in any image format.
    let beside = tiles.join("mosaic.jpg");
    let out = build(t, d, "5x4", "greedy", beside.to_str().unwrap(), &["--backend", "cpu", "--quality", "80"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(kit::image::load(&beside).unwrap().width, 160);
    let out = build(t, d, "50x4", "greedy", png, &[]);
    assert!(!out.status.success() && stderr(&out).contains("too small"), "{}", stderr(&out));
    let out = build(t, d, "6x5", "greedy", png, &[]);
    assert!(!out.status.success() && stderr(&out).contains("m <= n"), "{}", stderr(&out));
}

/// The offset of the features of the first tile entry (status 1) of a tile index cache.
fn first_tile_features(cache: &[u8]) -> usize {
    let u32_at = |at: usize| u32::from_le_bytes(cache[at..at + 4].try_into().unwrap()) as usize;
    let mut at = 28;
    loop {
        at += 4 + u32_at(at) + 16;
        let status = cache[at];
        at += 1;
        if status == 1 {
            return at;
        }
        at += 4 + u32_at(at);
    }
}

#[test]
fn hostile_npy_files_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let npy = |name: &str, descr: &str, shape: &[usize], data: &[u8]| {
        let mut bytes = kit::npy::header_bytes(descr, shape);
        bytes.extend_from_slice(data);
        kit::testing::write_file(dir.path(), name, bytes)
    };
    let cases = [
        // 128 bytes declaring 2^38 floats (1 TiB): refused before anything is allocated.
        (npy("huge.npy", "<f4", &[524288, 524288], &[0; 64]), "memory budget"),
        (npy("bytes.npy", "|u1", &[2, 3], &[1; 6]), "float32 or float64"),
        (npy("short.npy", "<f4", &[2, 3], &[0; 20]), "declares"),
        (npy("flat.npy", "<f4", &[6], &[0; 24]), "not 2-D"),
        (npy("big.npy", "<f8", &[1, 2], &[1e300f64.to_le_bytes(), 1f64.to_le_bytes()].concat()), "float32"),
    ];
    for (path, message) in &cases {
        for backend in ["cpu", "gpu"] {
            let out = mosaic(&[
                "solve",
                "--distance",
                path.to_str().unwrap(),
                "--method",
                "softassign",
                "--backend",
                backend,
            ]);
            assert_eq!(out.status.code(), Some(1), "{}: {}", path.display(), stderr(&out));
            assert!(stderr(&out).contains(message), "{}: {}", path.display(), stderr(&out));
            assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
        }
    }
    let huge = cases[0].0.to_str().unwrap();
    let out = mosaic(&["solve", "--distance", huge, "--method", "greedy", "--backend", "cpu", "--max-memory", "1G"]);
    assert!(stderr(&out).contains("budget is 1.0 GiB"), "{}", stderr(&out));
}

#[test]
fn outputs_are_checked_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let tiles = dir.path().join("tiles");
    std::fs::create_dir_all(&tiles).unwrap();
    let gif = dir.path().join("mosaic.gif");
    // The target does not exist: the error must be about the output, found first.
    let d = tiles.to_str().unwrap();
    let out = build("missing.png", d, "2x2", "greedy", gif.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown output format .gif") && stderr(&out).contains(".webp"), "{}", stderr(&out));
    let txt = dir.path().join("D.txt");
    let out = distance("missing.png", d, "2x2", txt.to_str().unwrap(), &["--json"]);
    assert!(stderr(&out).contains(".npy"), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["command"], "distance");
    assert_eq!(std::fs::read_dir(&tiles).unwrap().count(), 0, "no cache written before the output check");
    // Bad numbers are usage errors.
    for bad in [["--tile-px", "0"], ["--iterations", "0"], ["--cooling", "1.5"], ["--grid", "0x3"]] {
        assert_eq!(build("t.png", "x", "2x2", "greedy", "o.png", &bad).status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn version_and_examples() {
    for args in [&["--version"][..], &["build", "--version"]] {
        let out = mosaic(args);
        assert!(out.status.success() && stdout(&out).contains(env!("CARGO_PKG_VERSION")), "{args:?}");
    }
    for sub in ["solve", "distance", "build", "index", "bench", "demo"] {
        let out = mosaic(&[sub, "--help"]);
        assert!(stdout(&out).contains("Examples:\n  mosaic "), "{sub}");
    }
}

#[test]
fn bench_quick_prints_json_lines() {
    let out = mosaic(&["bench", "--quick", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|v| v["bench"] == "softassign_cooling_iteration" && v["gpu_ms"].as_f64().unwrap() > 0.0));
    let full = lines.iter().find(|v| v["bench"] == "full_solve").unwrap();
    assert!(full["softassign_ratio"].as_f64().unwrap() < 1.03);
}

/// `--size` narrows the run to one size, `--skip-cpu` leaves the CPU references out (the
/// optimum comes from the GPU's exact solver), and a size with more patches than tiles is
/// refused by the parser.
#[test]
fn bench_one_size_without_cpu() {
    let out = mosaic(&["bench", "--size", "20x30", "--skip-cpu", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().all(|v| v["size"] == "20x30"), "{lines:?}");
    let cooling = lines.iter().find(|v| v["bench"] == "softassign_cooling_iteration").unwrap();
    assert!(cooling["cpu_ms"].is_null());
    let full = lines.iter().find(|v| v["bench"] == "full_solve").unwrap();
    assert_eq!(full["exact_backend"], "gpu");
    assert!(full["greedy"].is_null() && full["softassign_ratio"].as_f64().unwrap() < 1.03);
    let out = mosaic(&["bench", "--size", "30x20"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("at least M tiles"), "{}", stderr(&out));
}

/// Per-cell mean colours (0..255) of an image cut into a `cols x rows` grid.
fn cell_means(img: &kit::image::ImageF32, cols: usize, rows: usize) -> Vec<[f64; 3]> {
    let mut out = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            let (x0, x1) = (c * img.width / cols, (c + 1) * img.width / cols);
            let (y0, y1) = (r * img.height / rows, (r + 1) * img.height / rows);
            let mut sum = [0.0; 3];
            for y in y0..y1 {
                for x in x0..x1 {
                    (0..3).for_each(|k| sum[k] += img.at(x, y, k) as f64 * 255.0);
                }
            }
            out.push(sum.map(|s| s / ((x1 - x0) * (y1 - y0)) as f64));
        }
    }
    out
}

/// Every file under `dir`, recursively (hidden ones too), as relative paths.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                found.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// `count` smooth 16x16 tiles in `dir/tiles` and a `size` target beside them (a smooth
/// field of `blobs` blobs), from `seed`; returns the target's and the folder's paths.
fn tiles_and_target(
    dir: &Path,
    seed: u64,
    count: usize,
    blobs: usize,
    size: (usize, usize),
) -> (std::path::PathBuf, std::path::PathBuf) {
    use rand::SeedableRng;
    let tiles = dir.join("tiles");
    std::fs::create_dir_all(&tiles).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for k in 0..count {
        let rgb = mosaic::synth::SmoothField::random(&mut rng, 1).render(16, 16, 0.05, &mut rng);
        kit::image::save_rgb8(&tiles.join(format!("t{k:03}.png")), 16, 16, &rgb).unwrap();
    }
    let target = dir.join("target.png");
    let rgb = mosaic::synth::SmoothField::random(&mut rng, blobs).render(size.0, size.1, 0.02, &mut rng);
    kit::image::save_rgb8(&target, size.0, size.1, &rgb).unwrap();
    (target, tiles)
}

/// The issue's acceptance run: 300 tiles, a 40x30 grid, --repeat 4 and --tint 0.3 with every
/// method; nothing is written into the tile folder; the CSV and the JSON name each cell's
/// tile, and no tile fills more than 4 cells.
#[test]
fn repeat_and_tint_with_every_method() {
    let dir = tempfile::tempdir().unwrap();
    let (target, tiles) = tiles_and_target(dir.path(), 7, 300, 6, (320, 240));
    let before = tree(&tiles);
    let (t, d) = (target.to_str().unwrap(), tiles.to_str().unwrap());
    let build_40x30 = |method: &str, out: &Path, extra: &[&str]| {
        build(t, d, "40x30", method, out.to_str().unwrap(), &[&["--tile-px", "8"], extra].concat())
    };
    let soft = ["--iterations", "10", "--stabilisations", "2", "--sinkhorn", "5"];
    let methods: [(&str, &str, &[&str]); 7] = [
        ("greedy", "cpu", &[]),
        ("anneal", "cpu", &["--anneal-levels", "10", "--anneal-moves", "5"]),
        ("softassign", "cpu", &soft),
        ("softassign", "gpu", &soft),
        ("exact", "cpu", &[]),
        ("greedy", "gpu", &[]),
        // The GPU auction has no repeats: the CPU solver runs, and the record says so.
        ("exact", "gpu", &[]),
    ];
    let mut costs = Vec::new();
    for (k, (method, backend, extra)) in methods.iter().enumerate() {
        let out = dir.path().join(format!("m{k}.jpg"));
        let csv = dir.path().join(format!("m{k}.csv"));
        let mut args = vec!["--backend", backend, "--repeat", "4", "--tint", "0.3", "--json"];
        args.extend_from_slice(&["--assignment", csv.to_str().unwrap(), "--quality", "85"]);
        args.extend_from_slice(extra);
        let o = build_40x30(method, &out, &args);
        assert!(o.status.success(), "{method}/{backend}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(
            (v["patches"].as_u64(), v["tiles"].as_u64(), v["repeat"].as_u64()),
            (Some(1200), Some(300), Some(4))
        );
        assert_eq!(v["out"], serde_json::json!([out.to_str().unwrap(), csv.to_str().unwrap()]));
        let solved_on = if *method == "softassign" { backend } else { &"cpu" };
        assert_eq!(v["solve_backend"], *solved_on, "{method}/{backend}");
        assert_eq!((&v["distance_backend"], &v["render_backend"]), (&v["backend"], &v["backend"]));
        // The summary only: the cells are in --assignment.
        assert!(v.get("cells").is_none() && v.get("assignment").is_none(), "{method}/{backend}");
        let img = kit::image::load(&out).unwrap();
        assert_eq!((img.width, img.height), (320, 240));
        let text = std::fs::read_to_string(&csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!((lines[0], lines.len()), ("col,row,x,y,w,h,tile", 1201));
        let mut uses = std::collections::HashMap::new();
        for (cell, line) in lines[1..].iter().enumerate() {
            let (col, row) = (cell % 40, cell / 40);
            // 320x240 in 40x30 cells: 8 pixels each way.
            let want = format!("{col},{row},{},{},8,8,", 8 * col, 8 * row);
            assert!(line.starts_with(&want), "{line}");
            let tile = &line[want.len()..];
            assert!(Path::new(tile).is_file() && tile.starts_with(d), "{tile}");
            *uses.entry(tile.to_string()).or_insert(0) += 1;
        }
        assert!(uses.values().all(|&n| n <= 4), "{method}: a tile fills more than 4 cells");
        costs.push((method.to_string(), v["cost"].as_f64().unwrap()));
    }
    // Distances from the GPU (f32) and the CPU (f64) differ in the last bits: 1e-6.
    let exact = costs.iter().find(|(m, _)| m == "exact").unwrap().1;
    assert!(costs.iter().all(|(_, c)| *c >= exact - 1e-6 * exact), "{costs:?}");
    assert_eq!(tree(&tiles), before, "files written into the tile folder");

    // The tint moves each cell's mean colour towards the target's.
    let target_means = cell_means(&kit::image::load(&target).unwrap(), 40, 30);
    let error = |tint: &str| {
        let out = dir.path().join(format!("tint{tint}.png"));
        let o = build_40x30("greedy", &out, &["--repeat", "4", "--tint", tint, "--backend", "cpu"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let means = cell_means(&kit::image::load(&out).unwrap(), 40, 30);
        means.iter().zip(&target_means).map(|(a, b)| (0..3).map(|k| (a[k] - b[k]).abs()).sum::<f64>()).sum::<f64>()
    };
    let (plain, tinted, full) = (error("0"), error("0.3"), error("1"));
    assert!(tinted < 0.8 * plain && full < 0.2 * plain, "mean colour error {plain} -> {tinted} -> {full}");

    // Too few uses: the error names the smallest repeat that works; nothing is written.
    let out = dir.path().join("none.png");
    let csv = dir.path().join("none.csv");
    let o = build_40x30("greedy", &out, &["--repeat", "3", "--assignment", csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--repeat 4 is the smallest"), "{}", stderr(&o));
    assert!(!out.exists() && !csv.exists());
    let o = build_40x30("greedy", &out, &["--assignment", dir.path().join("a.txt").to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains(".csv"), "{}", stderr(&o));
}

#[test]
fn solve_honours_repeat() {
    let dir = tempfile::tempdir().unwrap();
    // 4 patches, 2 tiles: every patch prefers tile 0; with 2 uses the optimum is
    // 1 + 1 + 5 + 5 = 12 (patches 0, 1 on tile 0; 2, 3 on tile 1).
    let data = [1.0, 9.0, 1.0, 9.0, 2.0, 5.0, 2.0, 5.0];
    let path = dir.path().join("d.npy");
    write_npy_f64(&path, 4, 2, &data);
    for method in ["exact", "greedy", "anneal"] {
        let v = solve_json(&path, method, &["--repeat", "2"]);
        let a: Vec<usize> = serde_json::from_value(v["assignment"].clone()).unwrap();
        assert!(a.iter().filter(|&&j| j == 0).count() <= 2, "{method}: {a:?}");
        if method == "exact" {
            assert_eq!(v["cost"].as_f64(), Some(12.0));
        }
    }
    let v = solve_json(&path, "softassign", &["--repeat", "3", "--backend", "cpu"]);
    let a: Vec<usize> = serde_json::from_value(v["assignment"].clone()).unwrap();
    assert!(a.iter().filter(|&&j| j == 0).count() <= 3, "{a:?}");
    let o = mosaic(&["solve", "--distance", path.to_str().unwrap(), "--method", "exact"]);
    assert!(stderr(&o).contains("--repeat 2 is the smallest"), "{}", stderr(&o));
    assert_eq!(
        mosaic(&["solve", "--distance", path.to_str().unwrap(), "--method", "exact", "--repeat", "0"]).status.code(),
        Some(2)
    );
}

/// `count` small tiles in `dir` and a 40x30 target beside it; returns the target's path.
fn small_problem(dir: &Path, count: usize) -> std::path::PathBuf {
    use rand::SeedableRng;
    let tiles = dir.join("tiles");
    std::fs::create_dir_all(&tiles).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for k in 0..count {
        let rgb = mosaic::synth::SmoothField::random(&mut rng, 1).render(12, 10, 0.05, &mut rng);
        kit::image::save_rgb8(&tiles.join(format!("t{k}.png")), 12, 10, &rgb).unwrap();
    }
    let target = dir.join("target.png");
    let rgb = mosaic::synth::SmoothField::random(&mut rng, 4).render(40, 30, 0.02, &mut rng);
    kit::image::save_rgb8(&target, 40, 30, &rgb).unwrap();
    target
}

#[test]
fn index_reports_only_a_cache_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    small_problem(dir.path(), 3);
    let tiles = dir.path().join("tiles");
    // A file where the cache folder must be: the cache cannot be written.
    let not_a_folder = dir.path().join("cache-file");
    std::fs::write(&not_a_folder, b"x").unwrap();
    let out = mosaic(&["index", tiles.to_str().unwrap(), "--cache", not_a_folder.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let want = format!(
        "mosaic: warning: the tile index cache folder {0} cannot be used: {0} is a file, not a folder; going on \
         without a cache",
        not_a_folder.display()
    );
    assert!(stderr(&out).contains(&want) && !stderr(&out).contains("os error"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&not_a_folder).unwrap(), b"x");
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!((&v["cache"], &v["out"]), (&serde_json::Value::Null, &serde_json::json!([])), "{v}");

    // A cache folder that works: the cache is written and reported.
    let caches = dir.path().join("caches");
    let out = mosaic(&["index", tiles.to_str().unwrap(), "--cache", caches.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let cache = v["cache"].as_str().expect("the cache written");
    assert!(Path::new(cache).is_file() && v["out"] == serde_json::json!([cache]), "{v}");
}

#[test]
fn mosaic_size_is_checked_before_the_distances() {
    let dir = tempfile::tempdir().unwrap();
    let target = small_problem(dir.path(), 24);
    let (t, d) = (target.to_str().unwrap(), dir.path().join("tiles"));
    let png = dir.path().join("m.png");
    // 1200 patches x 24 tiles: the distance matrix (345 KB) and the 320x240 mosaic (460 KB)
    // are both over the budget; the mosaic's size is known first and fails before any
    // distance is computed or any assignment solved.
    let extra = ["--cells", "1x1", "--repeat", "50", "--tile-px", "8", "--max-memory", "200K", "--no-cache"];
    let out = build(t, d.to_str().unwrap(), "40x30", "greedy", png.to_str().unwrap(), &extra);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("the 320x240 mosaic needs"), "{}", stderr(&out));
    assert!(!png.exists());
    // A 20000x15000 mosaic fits the memory but not WebP's 16383-pixel sides: refused at once.
    let webp = dir.path().join("m.webp");
    let extra = ["--cells", "1x1", "--repeat", "50", "--tile-px", "500", "--no-cache"];
    let out = build(t, d.to_str().unwrap(), "40x30", "greedy", webp.to_str().unwrap(), &extra);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("a 20000x15000 image does not fit .webp"), "{}", stderr(&out));
    assert!(!webp.exists());
}

#[test]
fn a_failed_exact_comparison_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = small_problem(dir.path(), 100);
    let (t, d) = (target.to_str().unwrap(), dir.path().join("tiles"));
    let (png, csv) = (dir.path().join("m.png"), dir.path().join("m.csv"));
    // Greedy fits the budget; the exact solve of --compare-exact (2000 tile uses, 125 KiB)
    // does not, and the command fails: without writing the image or the CSV.
    let extra = ["--repeat", "20", "--tile-px", "1", "--max-memory", "64K", "--no-cache", "--compare-exact"];
    let out = build(
        t,
        d.to_str().unwrap(),
        "5x4",
        "greedy",
        png.to_str().unwrap(),
        &[&extra[..], &["--assignment", csv.to_str().unwrap()]].concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("exact over 2000 tile uses"), "{}", stderr(&out));
    assert!(!png.exists() && !csv.exists(), "a failed command left its outputs");
}

/// Tiles named by paths that are not UTF-8 never reach the outputs lossily: such a tile is
/// skipped with a warning, and a tile folder whose own path is not UTF-8 is refused before
/// any work when `--assignment` or `--json` would name the tiles by it.
#[cfg(unix)]
#[test]
fn tile_names_that_are_not_utf8_are_never_written_lossily() {
    use std::ffi::{OsStr, OsString};
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().unwrap();
    let target = small_problem(dir.path(), 5);
    let tiles = dir.path().join("tiles");
    std::fs::copy(tiles.join("t0.png"), tiles.join(OsStr::from_bytes(b"caf\xe9.png"))).unwrap();
    let (out, csv) = (dir.path().join("m.png"), dir.path().join("m.csv"));
    let run = |tiles: &Path, extra: &[&str]| {
        let mut args: Vec<OsString> = ["build", "--method", "greedy", "--grid", "2x2", "--no-cache", "--target"]
            .iter()
            .map(OsString::from)
            .collect();
        args.extend([target.as_os_str(), OsStr::new("--tiles"), tiles.as_os_str()].map(OsString::from));
        args.extend(
            [OsStr::new("--out"), out.as_os_str(), OsStr::new("--assignment"), csv.as_os_str()].map(OsString::from),
        );
        args.extend(extra.iter().map(OsString::from));
        Command::new(env!("CARGO_BIN_EXE_mosaic")).args(args).output().unwrap()
    };
    let o = run(&tiles, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("not valid UTF-8") && stderr(&o).contains(r"caf\xE9.png"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(!text.contains('\u{fffd}') && !stdout(&o).contains('\u{fffd}'), "{text}");
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!((v["tiles"].as_u64(), v["index"]["skipped"].as_u64()), (Some(5), Some(1)), "{v}");

    // The folder itself: refused before any work, nothing written.
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(&csv).unwrap();
    let latin1 = dir.path().join(OsStr::from_bytes(b"tuiles-\xe9t\xe9"));
    std::fs::rename(&tiles, &latin1).unwrap();
    let o = run(&latin1, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("not valid UTF-8") && stderr(&o).contains("--assignment"), "{}", stderr(&o));
    assert!(!out.exists() && !csv.exists());
}

/// Tiles equal to the target's cells make a mosaic of cost 0: its ratio to the optimum is 1,
/// not 0 / 0.
#[test]
fn a_mosaic_of_cost_zero_is_reported_as_the_optimum() {
    let dir = tempfile::tempdir().unwrap();
    let tiles = dir.path().join("tiles");
    std::fs::create_dir_all(&tiles).unwrap();
    let colours = [[200u8, 30, 30], [30, 200, 30], [30, 30, 200], [220, 220, 40]];
    let mut target = vec![0u8; 16 * 16 * 3];
    for (k, c) in colours.iter().enumerate() {
        kit::image::save_rgb8(&tiles.join(format!("t{k}.png")), 8, 8, &c.repeat(64)).unwrap();
        for y in 0..8 {
            for x in 0..8 {
                let p = ((k / 2 * 8 + y) * 16 + k % 2 * 8 + x) * 3;
                target[p..p + 3].copy_from_slice(c);
            }
        }
    }
    let path = dir.path().join("target.png");
    kit::image::save_rgb8(&path, 16, 16, &target).unwrap();
    let (t, d) = (path.to_str().unwrap(), tiles.to_str().unwrap());
    for method in ["exact", "greedy"] {
        let out = dir.path().join(format!("{method}.png"));
        let extra = ["--backend", "cpu", "--compare-exact", "--no-cache", "--tile-px", "8"];
        let o = build(t, d, "2x2", method, out.to_str().unwrap(), &extra);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains("cost 0.0") && !text.contains("NaN"), "{text}");
        let o = build(t, d, "2x2", method, out.to_str().unwrap(), &[&extra[..], &["--json"]].concat());
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!((v["cost"].as_f64(), v["ratio_to_exact"].as_f64()), (Some(0.0), Some(1.0)), "{v}");
    }
}

/// A target too small for the grid and a folder with no usable tile are named in their
/// errors, with what would work.
#[test]
fn a_small_target_and_an_empty_tile_folder_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let target = small_problem(dir.path(), 3);
    let (t, tiles) = (target.to_str().unwrap(), dir.path().join("tiles"));
    let out = dir.path().join("m.png");
    let o = build(t, tiles.to_str().unwrap(), "20x10", "greedy", out.to_str().unwrap(), &["--no-cache"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.starts_with(&format!("mosaic: error: {t}: 40x30 is too small for a 20x10 grid")), "{err}");
    assert!(err.contains("the largest grid is 10x7") && !err.contains("invalid input"), "{err}");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("broken.png"), b"not a png").unwrap();
    let o = build(t, empty.to_str().unwrap(), "2x2", "greedy", out.to_str().unwrap(), &["--no-cache"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let want =
        format!("mosaic: error: {}: holds no readable tile images (1 image file(s) found, 1 skipped", empty.display());
    assert!(err.contains(&want), "{err}");
    assert!(!out.exists());
}

/// Patches too elongated: the error names the target and a grid that makes them square.
#[test]
fn an_elongated_grid_names_a_square_one() {
    let dir = tempfile::tempdir().unwrap();
    small_problem(dir.path(), 3);
    let wide = dir.path().join("wide.png");
    kit::image::save_rgb8(&wide, 400, 10, &vec![128; 400 * 10 * 3]).unwrap();
    let (t, tiles, out) = (wide.to_str().unwrap(), dir.path().join("tiles"), dir.path().join("m.png"));
    for (grid, want) in [("1x1", "--grid 40x1 makes them about square"), ("2x2", "--grid 80x2")] {
        let o = build(t, tiles.to_str().unwrap(), grid, "greedy", out.to_str().unwrap(), &["--no-cache"]);
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert!(err.starts_with(&format!("mosaic: error: {t}: 400x10 cut into a {grid} grid")), "{err}");
        assert!(err.contains(want), "{grid}: {err}");
    }
}

/// `mosaic index` of a folder without a readable tile is an error naming the folder, and
/// writes no cache; symbolic links, which are not followed, are counted in that error and
/// in a warning when there are tiles.
#[cfg(unix)]
#[test]
fn index_of_a_folder_without_tiles_fails_and_names_the_links() {
    let dir = tempfile::tempdir().unwrap();
    small_problem(dir.path(), 2);
    let caches = dir.path().join("caches");
    let index =
        |folder: &Path| mosaic(&["index", folder.to_str().unwrap(), "--cache", caches.to_str().unwrap(), "--json"]);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = index(&empty);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let want =
        format!("mosaic: error: {}: holds no readable tile images (0 image file(s) found, 0 skipped;", empty.display());
    assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(v["error"].as_str().unwrap().contains("holds no readable tile images"), "{v}");
    assert!(!caches.exists(), "a cache was written for an empty folder");

    // A folder of links to photos: the error says they were not followed.
    let linked = dir.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    for k in 0..2 {
        let tile = dir.path().join(format!("tiles/t{k}.png"));
        std::os::unix::fs::symlink(&tile, linked.join(format!("l{k}.png"))).unwrap();
    }
    std::os::unix::fs::symlink(dir.path().join("tiles"), linked.join("folder")).unwrap();
    let o = index(&linked);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("3 symbolic links were not followed (tiles must be regular files"), "{}", stderr(&o));
    assert!(!caches.exists());

    // With a tile beside them: indexed, with a warning counting the links.
    std::fs::copy(dir.path().join("tiles/t0.png"), linked.join("real.png")).unwrap();
    let o = index(&linked);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = format!("mosaic: warning: 3 symbolic links were not followed under {}", linked.display());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!((v["tiles"].as_u64(), v["stats"]["links"].as_u64()), (Some(1), Some(3)), "{v}");
}

/// `--device` naming several devices for a command that runs on one is a usage error (exit
/// 2) leading with the flag; a problem's errors lead with what breaks, not "invalid input".
#[test]
fn a_device_list_is_a_usage_error_and_errors_lead_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d.npy");
    write_npy_f64(&d, 2, 2, &[1.0, 2.0, 3.0, 4.0]);
    let d = d.to_str().unwrap();
    let o = mosaic(&["solve", "--distance", d, "--method", "softassign", "--device", "0,0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("mosaic: error: --device 0,0 names 2 devices; this command runs on one"),
        "{}",
        stderr(&o)
    );
    let o = mosaic(&["solve", "--distance", d, "--method", "softassign", "--device", "0,0", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!((&v["usage"], &v["command"]), (&serde_json::json!(true), &serde_json::json!("solve")), "{v}");
    // The same in the commands that build, before any work.
    let target = small_problem(dir.path(), 2);
    let (tiles, out) = (dir.path().join("tiles"), dir.path().join("m.png"));
    let extra = ["--device", "0,llvmpipe", "--no-cache"];
    let o = build(target.to_str().unwrap(), tiles.to_str().unwrap(), "1x1", "greedy", out.to_str().unwrap(), &extra);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("mosaic: error: --device 0,llvmpipe names 2 devices"), "{}", stderr(&o));
    assert!(!out.exists());

    let tall = dir.path().join("tall.npy");
    write_npy_f64(&tall, 3, 2, &[1.0; 6]);
    let o = mosaic(&["solve", "--distance", tall.to_str().unwrap(), "--method", "greedy"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let want = format!("mosaic: error: {}: 3 patches but only 2 tiles", tall.display());
    assert!(stderr(&o).starts_with(&want) && !stderr(&o).contains("invalid input"), "{}", stderr(&o));
}

/// Every method that honours `--min-distance`, its backend and its quick settings.
const SPACING_METHODS: [(&str, &str, &[&str]); 5] = [
    ("greedy", "cpu", &[]),
    ("anneal", "cpu", &["--anneal-levels", "10", "--anneal-moves", "5"]),
    ("softassign", "gpu", &["--iterations", "10", "--stabilisations", "2", "--sinkhorn", "5"]),
    ("exact", "cpu", &[]),
    ("exact", "gpu", &[]),
];

/// `--min-distance 2` on a 24x18 grid from 60 tiles (repeats unlimited): every method's CSV,
/// checked on every pair of cells, never shows a tile twice within 2 cells; exact says
/// whether it proved the optimum and never claims a cost below its bound; `solve` needs
/// `--grid` for the cells' places.
#[test]
fn min_distance_holds_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let (target, tiles) = tiles_and_target(dir.path(), 8, 60, 3, (192, 144));
    let (t, d) = (target.to_str().unwrap(), tiles.to_str().unwrap());
    let methods = SPACING_METHODS;
    for (method, backend, extra) in methods {
        let out = dir.path().join(format!("{method}-{backend}.png"));
        let csv = dir.path().join(format!("{method}-{backend}.csv"));
        let mut args = vec!["--backend", backend, "--min-distance", "2", "--json", "--tile-px", "4"];
        args.extend_from_slice(&["--assignment", csv.to_str().unwrap(), "--no-cache"]);
        args.extend_from_slice(extra);
        let o = build(t, d, "24x18", method, out.to_str().unwrap(), &args);
        assert!(o.status.success(), "{method}/{backend}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!((v["min_distance"].as_u64(), v["repeat"].as_u64()), (Some(2), Some(24 * 18)));
        if method == "exact" {
            let (cost, bound) = (v["cost"].as_f64().unwrap(), v["lower_bound"].as_f64().unwrap());
            assert!(bound <= cost * (1.0 + 1e-9), "{method}/{backend}: bound {bound} above {cost}");
            assert_eq!(v["optimal"].as_bool(), Some(cost - bound <= 1e-9 * cost), "{method}/{backend}");
        }
        let text = std::fs::read_to_string(&csv).unwrap();
        let cells: Vec<(i64, i64, String)> = text
            .lines()
            .skip(1)
            .map(|line| {
                let mut f = line.splitn(7, ',');
                let (c, r) = (f.next().unwrap().parse().unwrap(), f.next().unwrap().parse().unwrap());
                (c, r, f.nth(4).unwrap().to_string())
            })
            .collect();
        assert_eq!(cells.len(), 24 * 18);
        for (a, (ca, ra, ta)) in cells.iter().enumerate() {
            for (cb, rb, tb) in &cells[a + 1..] {
                let near = (ca - cb).abs().max((ra - rb).abs()) <= 2;
                assert!(!(near && ta == tb), "{method}/{backend}: {ta} at ({ca}, {ra}) and ({cb}, {rb})");
            }
        }
    }
    let npy = dir.path().join("d.npy");
    write_npy_f64(&npy, 4, 3, &[1.0; 12]);
    let o = mosaic(&["solve", "--distance", npy.to_str().unwrap(), "--method", "exact", "--min-distance", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--grid"), "{}", stderr(&o));
    let o = mosaic(&[
        "solve",
        "--distance",
        npy.to_str().unwrap(),
        "--method",
        "exact",
        "--min-distance",
        "1",
        "--grid",
        "2x2",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("needs at least 4 tiles"), "{}", stderr(&o));
    write_npy_f64(&npy, 4, 5, &(0..20).map(|k| (k * 7 % 11) as f64).collect::<Vec<_>>());
    let v = solve_json(&npy, "greedy", &["--min-distance", "1", "--grid", "2x2"]);
    let a: Vec<u64> = v["assignment"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    let distinct: std::collections::HashSet<_> = a.iter().collect();
    assert_eq!(distinct.len(), 4, "a 2x2 grid at distance 1: four tiles, {a:?}");
}

/// The astronaut photo at `size` and `count` 16x16 tiles cut from the other sample photos
/// (each photo decoded once, at 96x96; each tile a random 16x16 window of one, or a 32x32
/// window averaged down), in `dir`.
fn photo_and_tiles(dir: &Path, seed: u64, count: usize, size: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    use rand::{Rng, SeedableRng};
    let tiles = dir.join("tiles");
    std::fs::create_dir_all(&tiles).unwrap();
    let sources: Vec<kit::image::ImageF32> = kit::photos::ALL
        .into_iter()
        .filter(|p| p.name != kit::photos::ASTRONAUT.name)
        .map(|p| p.resized(96, 96, 3).unwrap())
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for k in 0..count {
        let src = &sources[k % sources.len()];
        let scale = rng.gen_range(1..=2);
        let (x0, y0) = (rng.gen_range(0..=96 - 16 * scale), rng.gen_range(0..=96 - 16 * scale));
        let mut rgb = Vec::with_capacity(16 * 16 * 3);
        for y in 0..16 {
            for x in 0..16 {
                for c in 0..3 {
                    let mut sum = 0.0;
                    for dy in 0..scale {
                        for dx in 0..scale {
                            sum += src.data[((y0 + y * scale + dy) * 96 + x0 + x * scale + dx) * 3 + c];
                        }
                    }
                    rgb.push(kit::image::to_u8(sum / (scale * scale) as f32));
                }
            }
        }
        kit::image::save_rgb8(&tiles.join(format!("t{k:03}.png")), 16, 16, &rgb).unwrap();
    }
    let target = dir.join("astronaut.png");
    let photo = kit::photos::ASTRONAUT.resized(size, size, 3).unwrap();
    let rgb: Vec<u8> = photo.data.iter().map(|&v| kit::image::to_u8(v)).collect();
    kit::image::save_rgb8(&target, size, size, &rgb).unwrap();
    (target, tiles)
}

/// `--min-distance` 1 and 2 on adaptive cells (8 to 32 pixels) over the astronaut photo
/// from 150 tiles cut from the other sample photos: for every method, every pair of cells
/// of the CSV at a distance of D or less, counted in --min-cell squares between their
/// closest squares from the rectangles alone, shows two tiles; exact reports its bound and
/// gap, and claims the optimum only where they meet.
#[test]
fn min_distance_holds_on_adaptive_cells_of_a_photo() {
    let dir = tempfile::tempdir().unwrap();
    let (target, tiles) = photo_and_tiles(dir.path(), 31, 150, 192);
    let (t, d) = (target.to_str().unwrap(), tiles.to_str().unwrap());
    let methods = SPACING_METHODS;
    let mut sizes = std::collections::BTreeSet::new();
    for distance in [1i64, 2] {
        for (method, backend, extra) in methods {
            let label = format!("{method}/{backend} D{distance}");
            let out = dir.path().join(format!("{method}-{backend}-{distance}.png"));
            let csv = dir.path().join(format!("{method}-{backend}-{distance}.csv"));
            let mut args =
                vec!["build", "--target", t, "--tiles", d, "--method", method, "--out", out.to_str().unwrap()];
            args.extend_from_slice(&["--layout", "adaptive", "--min-cell", "8", "--max-cell", "32", "--tile-px", "4"]);
            let dist = distance.to_string();
            args.extend_from_slice(&["--backend", backend, "--min-distance", &dist, "--json", "--no-cache"]);
            args.extend_from_slice(&["--assignment", csv.to_str().unwrap()]);
            args.extend_from_slice(extra);
            let o = mosaic(&args);
            assert!(o.status.success(), "{label}: {}", stderr(&o));
            let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
            assert_eq!(v["min_distance"].as_i64(), Some(distance), "{label}");
            if method == "exact" {
                let (cost, bound) = (v["cost"].as_f64().unwrap(), v["lower_bound"].as_f64().unwrap());
                let gap = v["gap"].as_f64().unwrap();
                assert!(bound <= cost * (1.0 + 1e-9) && gap >= 0.0, "{label}: bound {bound} above {cost}");
                assert!((gap - (cost - bound) / bound).abs() <= 1e-9, "{label}: gap {gap}");
                assert_eq!(v["optimal"].as_bool(), Some(cost - bound <= 1e-9 * cost), "{label}");
            } else {
                assert!(v["gap"].is_null(), "{label}");
            }
            let text = std::fs::read_to_string(&csv).unwrap();
            // Each cell's squares: columns x0..x1 and rows y0..y1 (inclusive), and its tile.
            let cells: Vec<([i64; 4], String)> = text
                .lines()
                .skip(1)
                .map(|line| {
                    let f: Vec<&str> = line.splitn(7, ',').collect();
                    let n: Vec<i64> = f[2..6].iter().map(|v| v.parse().unwrap()).collect();
                    sizes.insert(n[2]);
                    ([n[0] / 8, (n[0] + n[2]) / 8 - 1, n[1] / 8, (n[1] + n[3]) / 8 - 1], f[6].to_string())
                })
                .collect();
            // Across one axis: 0 where the spans overlap, else the squares from one span's
            // last to the other's first.
            let apart = |a0: i64, a1: i64, b0: i64, b1: i64| (b0 - a1).max(a0 - b1).max(0);
            for (k, (a, ta)) in cells.iter().enumerate() {
                for (b, tb) in &cells[k + 1..] {
                    let between = apart(a[0], a[1], b[0], b[1]).max(apart(a[2], a[3], b[2], b[3]));
                    assert!(!(between <= distance && ta == tb), "{label}: {ta} at {a:?} and {b:?}");
                }
            }
        }
    }
    assert!(sizes.len() >= 2, "the photo gave cells of one size only: {sizes:?}");
}

/// `--layout adaptive`: square cells from 32 down to 8 pixels over a target that is flat on
/// one side and detailed on the other; the CSV's rectangles cover the target's 8-pixel
/// blocks exactly once, the flat side gets larger cells, and no tile fills more than
/// `--repeat` cells of any sizes together; the flags that do not go together are usage errors.
#[test]
fn adaptive_cells_cover_the_target_once_without_extra_repeats() {
    use rand::SeedableRng;
    let dir = tempfile::tempdir().unwrap();
    let tiles = dir.path().join("tiles");
    std::fs::create_dir_all(&tiles).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    for k in 0..80 {
        let rgb = mosaic::synth::SmoothField::random(&mut rng, 2).render(16, 16, 0.05, &mut rng);
        kit::image::save_rgb8(&tiles.join(format!("t{k:03}.png")), 16, 16, &rgb).unwrap();
    }
    // 100x70: flat gray on the left half, noise on the right; 12x8 blocks of 8 pixels.
    let (w, h) = (100, 70);
    let rgb: Vec<u8> = (0..w * h)
        .flat_map(|k| if k % w < w / 2 { [128u8; 3] } else { [(k * 97 % 251) as u8, (k * 31 % 241) as u8, 60] })
        .collect();
    let target = dir.path().join("target.png");
    kit::image::save_rgb8(&target, w, h, &rgb).unwrap();
    let (t, d) = (target.to_str().unwrap(), tiles.to_str().unwrap());
    let (out, csv) = (dir.path().join("a.png"), dir.path().join("a.csv"));
    let adaptive = ["--layout", "adaptive", "--min-cell", "8", "--max-cell", "32"];
    let mosaic_args = |method: &str, extra: &[&str]| {
        let mut args = vec!["build", "--target", t, "--tiles", d, "--method", method, "--out", out.to_str().unwrap()];
        args.extend_from_slice(&["--assignment", csv.to_str().unwrap(), "--no-cache", "--backend", "cpu"]);
        args.extend_from_slice(extra);
        mosaic(&args)
    };
    for method in ["exact", "greedy"] {
        let o = mosaic_args(method, &[&adaptive[..], &["--repeat", "2", "--json", "--tile-px", "4"]].concat());
        assert!(o.status.success(), "{method}: {}", stderr(&o));
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut cover = vec![0; 12 * 8];
        let mut uses = std::collections::HashMap::new();
        let mut sizes = std::collections::BTreeSet::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.splitn(7, ',').collect();
            let n: Vec<usize> = f[..6].iter().map(|v| v.parse().unwrap()).collect();
            let (col, row, x, y, cw, ch) = (n[0], n[1], n[2], n[3], n[4], n[5]);
            assert_eq!((x, y, cw), (8 * col, 8 * row, ch), "{line}");
            assert!([8, 16, 32].contains(&cw) && x + cw <= w && y + ch <= h, "{line}");
            for r in row..row + ch / 8 {
                for c in col..col + cw / 8 {
                    cover[r * 12 + c] += 1;
                }
            }
            sizes.insert((cw, x + cw <= w / 2));
            *uses.entry(f[6].to_string()).or_insert(0) += 1;
        }
        assert!(cover.iter().all(|&n| n == 1), "{method}: {cover:?}");
        assert!(uses.values().all(|&n| n <= 2), "{method}: a tile fills more than 2 cells");
        assert!(
            sizes.contains(&(32, true)) && sizes.contains(&(8, false)) && !sizes.contains(&(32, false)),
            "{sizes:?}"
        );
        let img = kit::image::load(&out).unwrap();
        assert_eq!((img.width, img.height), (12 * 4, 8 * 4));
    }
    for (extra, want) in [
        (&["--layout", "adaptive", "--min-cell", "8"][..], "--max-cell"),
        (&["--layout", "adaptive", "--min-cell", "8", "--max-cell", "24"][..], "power of two"),
        (&["--grid", "4x4", "--min-cell", "8", "--max-cell", "16"][..], "--layout adaptive"),
    ] {
        let o = mosaic_args("greedy", extra);
        assert!(!o.status.success() && stderr(&o).contains(want), "{extra:?}: {}", stderr(&o));
    }
}
