//! Writing the maps of `--maps DIR`: for each of detection, appearance and combined, a
//! float32 `.npy` (height x width, the raw values) and a PNG through a colour scale
//! (0 to the map's maximum, dark blue to yellow, with a colour bar along the bottom).

use std::path::{Path, PathBuf};

use kit::output::Staged;

use crate::{MadError, Maps};

/// The maps, in the order of their files.
const NAMES: [&str; 3] = ["detection", "appearance", "combined"];

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

/// The six files `--maps DIR` writes, in order: `NAME.png` and `NAME.npy` per map.
pub fn paths(dir: &Path) -> Vec<PathBuf> {
    NAMES.iter().flat_map(|name| [dir.join(format!("{name}.png")), dir.join(format!("{name}.npy"))]).collect()
}

/// Checks `dir` before any work: created if missing, writable, and none of the map files
/// one of `inputs`.
pub fn check(dir: &Path, inputs: &[&Path]) -> Result<(), MadError> {
    kit::output::check_folder(dir, inputs)?;
    for path in paths(dir) {
        kit::output::check_not_input(&path, inputs)?;
    }
    Ok(())
}

/// Writes `detection`, `appearance` and `combined` (`.png` and `.npy`) into `dir` (checked
/// by [`check`]), all six or none. Returns their paths.
pub fn write_maps(dir: &Path, maps: &Maps) -> Result<Vec<PathBuf>, MadError> {
    let paths = paths(dir);
    let mut staged = Staged::new();
    for (values, files) in [&maps.detection, &maps.appearance, &maps.combined].into_iter().zip(paths.chunks(2)) {
        let rgb = colourise(values, maps.width, maps.height);
        let (w, h) = (maps.width, maps.height + BAR_HEIGHT);
        kit::image::stage(&mut staged, &files[0], w, h, &rgb, kit::image::Layout::Rgb8, Default::default())?;
        kit::npy::stage_f32(&mut staged, &files[1], &[maps.height, maps.width], values)?;
    }
    staged.commit()?;
    Ok(paths)
}
