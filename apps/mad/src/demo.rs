//! `mad demo --out DIR`: the metric's part of the main demo. Generates a deterministic
//! sample scene and eight distortions of it (two strengths each of JPEG, blur, noise and
//! contrast), scores them, and writes into DIR: the images (`images/`), each pair's maps
//! (`maps/<distortion>/`), and `mad_summary.json`.

use std::path::{Path, PathBuf};

use engine::io::{save_png_gray8, write_atomic};
use serde_json::json;

use crate::gpu::GpuMad;
use crate::synth::{distort, scene, to_u8, Distortion};
use crate::{maps, GrayImage, MadError, Maps, Scores};

/// The demo's distortions, mild then strong for each kind.
pub const DISTORTIONS: [Distortion; 8] = [
    Distortion::Jpeg(50),
    Distortion::Jpeg(10),
    Distortion::Blur(1.0),
    Distortion::Blur(3.0),
    Distortion::Noise(5.0),
    Distortion::Noise(20.0),
    Distortion::Contrast(0.7),
    Distortion::Contrast(0.4),
];

/// Size of the demo scene (deliberately not a power of two).
pub const WIDTH: usize = 320;
pub const HEIGHT: usize = 240;

/// What the demo produced.
pub struct Summary {
    pub line: String,
    pub json: serde_json::Value,
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> MadError {
    engine::EngineError::File { path: path.into(), message: e.to_string() }.into()
}

/// Runs the demo into `out` with the GPU (`gpu`) or the CPU reference (`None`).
pub fn run(out: &Path, gpu: Option<&GpuMad>) -> Result<Summary, MadError> {
    let images = out.join("images");
    std::fs::create_dir_all(&images).map_err(|e| file_error(&images, e))?;
    let reference = scene(WIDTH, HEIGHT, 2026);
    save_png_gray8(&images.join("reference.png"), WIDTH, HEIGHT, &to_u8(&reference))?;
    let distorted: Vec<(Distortion, GrayImage)> =
        DISTORTIONS.iter().enumerate().map(|(i, &d)| (d, distort(&reference, d, i as u64))).collect();
    for (d, img) in &distorted {
        save_png_gray8(&images.join(format!("{}.png", d.label())), WIDTH, HEIGHT, &to_u8(img))?;
    }
    let mut results: Vec<(Distortion, Scores, Maps)> = Vec::new();
    match gpu {
        Some(gpu) => {
            let stream = distorted.iter().map(|(d, img)| (*d, &reference, img));
            gpu.score_stream(stream, None, true, |s| {
                results.push((s.tag, s.scores, s.maps.expect("maps were asked for")));
            })?;
        }
        None => {
            for (d, img) in &distorted {
                let (scores, maps) = crate::cpu::score(&reference, img)?;
                results.push((*d, scores, maps));
            }
        }
    }
    let mut entries = Vec::new();
    for (d, scores, m) in &results {
        let dir: PathBuf = out.join("maps").join(d.label());
        std::fs::create_dir_all(&dir).map_err(|e| file_error(&dir, e))?;
        maps::write_maps(&dir, m, &[])?;
        entries.push(json!({
            "distortion": d,
            "image": format!("images/{}.png", d.label()),
            "maps": format!("maps/{}/", d.label()),
            "mad": scores.mad,
            "detection": scores.detection,
            "appearance": scores.appearance,
            "alpha": scores.alpha,
        }));
    }
    let json = json!({
        "reference": "images/reference.png",
        "width": WIDTH,
        "height": HEIGHT,
        "backend": if gpu.is_some() { "gpu" } else { "cpu" },
        "pairs": entries,
    });
    let summary_path = out.join("mad_summary.json");
    let text = serde_json::to_string_pretty(&json).map_err(|e| file_error(&summary_path, e))?;
    write_atomic(&summary_path, |w| {
        use std::io::Write;
        w.write_all(text.as_bytes())
            .map_err(|e| engine::EngineError::File { path: summary_path.clone(), message: e.to_string() })
    })?;
    let (lo, hi) = results.iter().fold((&results[0], &results[0]), |(lo, hi), r| {
        (if r.1.mad < lo.1.mad { r } else { lo }, if r.1.mad > hi.1.mad { r } else { hi })
    });
    let line = format!(
        "mad: scored {} distortions of a {WIDTH}x{HEIGHT} scene: MAD from {:.1} ({}) to {:.1} ({}); images, maps and mad_summary.json in {}",
        results.len(),
        lo.1.mad,
        lo.0.label(),
        hi.1.mad,
        hi.0.label(),
        out.display()
    );
    Ok(Summary { line, json })
}
