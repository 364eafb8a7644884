//! `lightfield encode` and `decode` on the GPU backend with 8 x 8 pixel patches of the whole
//! 9 x 9 view grid (62 KB a patch: more than a workgroup's shared memory on lavapipe and on
//! NVIDIA's Vulkan, so the kernels keep the patch tensor in a device buffer), against the CPU
//! backend.

use std::path::Path;

const BIN: kit::testing::Bin = kit::testing::Bin(env!("CARGO_BIN_EXE_lightfield"));

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

#[test]
fn wide_dct_patches_encode_and_decode_on_the_gpu_like_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 9 x 9 views of 21 x 10 pixels: 2 x 3 patches, padded along both pixel axes.
    BIN.ok(&["generate", "--out", &p(d, "lf.npy"), "--views", "9x9", "--size", "21x10", "--seed", "3"]);
    BIN.ok(&["train", "--dct", "--patch", "8x8x9x9", "--out", &p(d, "dct.lfd"), "--backend", "cpu"]);
    let encode = |backend: &str| {
        let out = p(d, &format!("{backend}.lfc"));
        let args = ["encode", "--input", &p(d, "lf.npy"), "--dict", &p(d, "dct.lfd"), "--sparsity", "11664"];
        json(&BIN.ok(&[&args[..], &["--epsilon", "0.02", "--out", &out, "--backend", backend, "--json"]].concat()))
    };
    let (gpu, cpu) = (encode("gpu"), encode("cpu"));
    assert_eq!(gpu["patches"], 6);
    assert!(gpu["kernel_ms"].as_f64().is_some(), "{gpu}");
    // The same codes up to float ties: the same quality and about the same coefficients.
    let coefficients = |r: &serde_json::Value| r["mean_coefficients"].as_f64().unwrap();
    assert!((coefficients(&gpu) - coefficients(&cpu)).abs() <= 0.01 * coefficients(&cpu), "{gpu}\n{cpu}");
    assert!((gpu["psnr_db"].as_f64().unwrap() - cpu["psnr_db"].as_f64().unwrap()).abs() < 0.05, "{gpu}\n{cpu}");
    for backend in ["gpu", "cpu"] {
        BIN.ok(&["decode", &p(d, "gpu.lfc"), "--out", &p(d, &format!("{backend}.npy")), "--backend", backend]);
    }
    let (a, b) = (kit::npy::read(&d.join("gpu.npy")).unwrap(), kit::npy::read(&d.join("cpu.npy")).unwrap());
    assert_eq!(a.shape, vec![9, 9, 10, 21, 3]);
    let worst = a.data.iter().zip(&b.data).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    assert!(worst < 1e-5, "GPU and CPU decodes differ by {worst}");
}
