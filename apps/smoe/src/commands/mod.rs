//! The subcommands of `smoe`, one file each: their flags, then parse -> library call ->
//! typed record (`kit::emit` prints it as its text line or, under `--json`, inside the
//! envelope). Every output is checked before any work starts; times are in `*_ms` fields.
//! What several of them share lives here: the size of a render, the pixels a render
//! writes, and the `--bpp` value parser.

use std::path::Path;

use anyhow::{bail, Result};
use kit::output::Staged;
use smoe::model::Model;

pub mod bench;
pub mod convert;
pub mod demo;
pub mod fit;
pub mod render;
pub mod view;

/// The size of a render: the model's extent, an exact size, or the extent scaled.
#[derive(Clone, Copy, Debug)]
pub enum OutputSize {
    Extent,
    Exact(u32, u32),
    Scale(f64),
}

/// The largest side a render may have.
const MAX_SIDE: u32 = smoe::model::MAX_EXTENT as u32;

/// The pixel size `size` gives for `model` (validated: its extent is within 1..=16384), or
/// why not; an exact size of another aspect ratio than the model's is rendered stretched,
/// with a warning.
fn output_size(model: &Model, size: OutputSize) -> Result<(u32, u32)> {
    let (ew, eh) = (model.extent[0] as u32, model.extent[1] as u32);
    match size {
        OutputSize::Extent => Ok((ew, eh)),
        OutputSize::Exact(w, h) => {
            let (got, want) = (w as f64 / h as f64, ew as f64 / eh as f64);
            if (got / want - 1.0).abs() > 0.01 {
                kit::report::warn(&format!(
                    "--size {w}x{h} has aspect ratio {got:.3}, the model's {ew}x{eh} {want:.3}: the render is stretched (--scale keeps the ratio)"
                ));
            }
            Ok((w, h))
        }
        OutputSize::Scale(f) => {
            let side = |e: u32| (e as f64 * f).round();
            let (w, h) = (side(ew), side(eh));
            if !(1.0..=MAX_SIDE as f64).contains(&w) || !(1.0..=MAX_SIDE as f64).contains(&h) {
                bail!("--scale {f} of the model's {ew}x{eh} gives {w}x{h}; each side must be 1 to {MAX_SIDE}");
            }
            Ok((w as u32, h as u32))
        }
    }
}

/// Refuses a rendering that holds a non-finite value instead of writing it.
fn check_finite(rgb: &[f32], width: u32) -> Result<()> {
    if let Some(i) = rgb.iter().position(|v| !v.is_finite()) {
        let (px, w) = (i / 3, width as usize);
        bail!("the model renders a non-finite value at pixel ({}, {}); nothing was written", px % w, px / w);
    }
    Ok(())
}

/// Stages RGB f32 pixels as `.npy` (H, W, 3), or as an 8-bit image (clamped, rounded) in
/// the format of the extension.
fn stage_rgb(staged: &mut Staged, path: &Path, format: &str, w: usize, h: usize, rgb: &[f32]) -> Result<()> {
    if format == "npy" {
        kit::npy::stage_f32(staged, path, &[h, w, 3], rgb)?;
    } else {
        let bytes: Vec<u8> = rgb.iter().map(|&v| kit::image::to_u8(v)).collect();
        kit::image::stage(staged, path, w, h, &bytes, kit::image::Layout::Rgb8, kit::image::SaveOptions::default())?;
    }
    Ok(())
}

/// A finite number (a clap value parser's work) that `within` accepts, else the message
/// `refused` gives for it.
fn parse_within(text: &str, within: impl Fn(f64) -> bool, refused: impl Fn(f64) -> String) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if within(v) {
        Ok(v)
    } else {
        Err(refused(v))
    }
}

/// `--bpp`: bits per pixel (of every view), in (0, 64].
fn parse_bpp(text: &str) -> Result<f64, String> {
    parse_within(text, |v| v > 0.0 && v <= 64.0, |v| format!("{v} bits per pixel is not in (0, 64]"))
}
