//! Writing the maps of `--maps DIR`: for each of detection, appearance and combined, a
//! float32 `.npy` (height x width, the raw values) and a PNG through a colour scale
//! (0 to the map's maximum, dark blue to yellow, with a colour bar along the bottom).

use std::path::Path;

use engine::io::{save_png_rgb8, write_npy_f32};

use crate::{MadError, Maps};

/// Height in pixels of the colour bar under each PNG.
const BAR_HEIGHT: usize = 12;

/// A perceptually ordered dark-blue -> teal -> yellow scale (piecewise linear through
/// five stops of the viridis palette).
fn colour(t: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 5] =
        [[68.0, 1.0, 84.0], [59.0, 82.0, 139.0], [33.0, 145.0, 140.0], [94.0, 201.0, 98.0], [253.0, 231.0, 37.0]];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f32;
    let i = (x as usize).min(STOPS.len() - 2);
    let f = x - i as f32;
    let mut out = [0u8; 3];
    for c in 0..3 {
        out[c] = (STOPS[i][c] * (1.0 - f) + STOPS[i + 1][c] * f).round() as u8;
    }
    out
}

/// The map as RGB through the colour scale, with a colour bar appended below.
pub fn colourise(values: &[f32], width: usize, height: usize) -> Vec<u8> {
    let max = values.iter().copied().filter(|v| v.is_finite()).fold(0.0f32, f32::max);
    let scale = if max > 0.0 { 1.0 / max } else { 0.0 };
    let mut rgb = Vec::with_capacity(width * (height + BAR_HEIGHT) * 3);
    for &v in values {
        rgb.extend_from_slice(&colour(v * scale));
    }
    for _ in 0..BAR_HEIGHT {
        for x in 0..width {
            rgb.extend_from_slice(&colour(x as f32 / (width - 1).max(1) as f32));
        }
    }
    rgb
}

/// Writes `detection`, `appearance` and `combined` (`.png` and `.npy`) into `dir`, refusing
/// to overwrite any of `inputs`.
pub fn write_maps(dir: &Path, maps: &Maps, inputs: &[&Path]) -> Result<Vec<std::path::PathBuf>, MadError> {
    std::fs::create_dir_all(dir).map_err(|e| engine::EngineError::File { path: dir.into(), message: e.to_string() })?;
    let mut written = Vec::new();
    for (name, values) in
        [("detection", &maps.detection), ("appearance", &maps.appearance), ("combined", &maps.combined)]
    {
        let png = dir.join(format!("{name}.png"));
        let npy = dir.join(format!("{name}.npy"));
        engine::io::check_not_input(&png, inputs)?;
        engine::io::check_not_input(&npy, inputs)?;
        save_png_rgb8(&png, maps.width, maps.height + BAR_HEIGHT, &colourise(values, maps.width, maps.height))?;
        write_npy_f32(&npy, &[maps.height, maps.width], values)?;
        written.extend([png, npy]);
    }
    Ok(written)
}
