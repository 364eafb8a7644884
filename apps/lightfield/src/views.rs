//! Views as images: one PNG per view, named by its position in the view grid, written all
//! or none (`decode --views DIR`, the demo). The names sort row-major, so a folder written
//! here reads back without `--grid` (row/column names, [`crate::layout`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use image::ImageEncoder;
use kit::output::Staged;

use crate::error::Result;
use crate::lightfield::LightField;

/// Bits per sample of a written view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Depth {
    /// 8 bits per sample.
    #[default]
    #[value(name = "8")]
    Bits8,
    /// 16 bits per sample (the decoded precision survives).
    #[value(name = "16")]
    Bits16,
}

impl Depth {
    pub fn bits(self) -> u32 {
        match self {
            Depth::Bits8 => 8,
            Depth::Bits16 => 16,
        }
    }
}

/// The file name of view (u, v) of a `grid.0 x grid.1` grid: `view_03_07.png`, both
/// indices zero-padded to the same width so that names sort row-major.
pub fn view_name(u: usize, v: usize, grid: (usize, usize)) -> String {
    let digits = (grid.0.max(grid.1).saturating_sub(1)).to_string().len();
    format!("view_{u:0digits$}_{v:0digits$}.png")
}

/// Encodes RGB samples in [0, 1] (interleaved, row 0 at the top) as a PNG into `out`.
pub fn encode_png(
    out: &mut impl Write,
    width: usize,
    height: usize,
    rgb: &[f32],
    depth: Depth,
) -> image::ImageResult<()> {
    let (w, h) = (width as u32, height as u32);
    let encoder = image::codecs::png::PngEncoder::new(out);
    match depth {
        Depth::Bits8 => {
            let bytes: Vec<u8> = rgb.iter().map(|&x| kit::image::to_u8(x)).collect();
            encoder.write_image(&bytes, w, h, image::ExtendedColorType::Rgb8)
        }
        Depth::Bits16 => {
            // The encoder takes 16-bit samples in native byte order.
            let bytes: Vec<u8> = rgb.iter().flat_map(|&x| kit::image::to_u16(x).to_ne_bytes()).collect();
            encoder.write_image(&bytes, w, h, image::ExtendedColorType::Rgb16)
        }
    }
}

/// Stages view (u, v) of `lf` as a PNG at `path` (written when `staged` is committed).
pub fn stage_view(staged: &mut Staged, path: &Path, lf: &LightField, u: usize, v: usize, depth: Depth) -> Result<()> {
    Ok(staged.write(path, |w| encode_png(w, lf.w, lf.h, lf.view(u, v), depth))?)
}

/// Stages every view of `lf` into `dir` (which must exist); nothing is in place until the
/// returned [`Staged`] is committed, and dropping it leaves nothing behind, so the views
/// are written all or none. `progress` sees the count of views encoded. Returns the paths,
/// row-major.
pub fn stage_views(
    lf: &LightField,
    dir: &Path,
    depth: Depth,
    mut progress: impl FnMut(usize),
) -> Result<(Staged, Vec<PathBuf>)> {
    let mut staged = Staged::new();
    let mut paths = Vec::with_capacity(lf.u * lf.v);
    for u in 0..lf.u {
        for v in 0..lf.v {
            let path = dir.join(view_name(u, v, (lf.u, lf.v)));
            stage_view(&mut staged, &path, lf, u, v, depth)?;
            paths.push(path);
            progress(paths.len());
        }
    }
    Ok((staged, paths))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_row_major_and_views_read_back() {
        assert_eq!(view_name(3, 7, (8, 8)), "view_3_7.png");
        assert_eq!(view_name(2, 10, (3, 12)), "view_02_10.png");
        let lf = crate::synth::generate((2, 3), (9, 7), 4);
        let dir = tempfile::tempdir().unwrap();
        let (staged, paths) = stage_views(&lf, dir.path(), Depth::Bits16, |_| {}).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count(),
            0
        );
        staged.commit().unwrap();
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(sorted, paths);
        let back = LightField::read_folder(dir.path(), None).unwrap();
        let worst = back.data.iter().zip(&lf.data).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst <= 0.5 / 65535.0 + 1e-6, "16-bit views differ by {worst}");
    }
}
