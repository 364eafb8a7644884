//! Where and how a light field is looked at (`view`, `render`): the flags and the viewpoint
//! they name.

use lightfield::render::View;
use lightfield::Result;

/// Where and how a light field is looked at (`view`, `render`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ViewpointArgs {
    /// Viewpoint U,V: view row and column, fractional between the captured views (default: the centre)
    #[arg(long, value_name = "U,V", value_parser = parse_view)]
    view: Option<(f32, f32)>,
    /// Disparity in focus, pixels per view: view (i, j) is sampled at x + D (j - V), y + D (i - U)
    #[arg(long, value_name = "D", default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_focus)]
    focus: f32,
    /// Radius in views of the blend: 1 interpolates the four nearest views; wider refocuses (shift-and-add)
    #[arg(long, value_name = "R", default_value_t = 1.0, value_parser = parse_aperture)]
    aperture: f32,
    /// Output size WxH (default: the views' size; the window is scaled up to at least 512 pixels)
    #[arg(long, value_name = "WxH", value_parser = kit::cli::parse_size)]
    size: Option<(u32, u32)>,
}

fn parse_view(text: &str) -> Result<(f32, f32), String> {
    let (u, v) = kit::cli::parse_pair::<f64>(text, ',')?;
    if !u.is_finite() || !v.is_finite() || u < 0.0 || v < 0.0 || u > 1024.0 || v > 1024.0 {
        return Err(format!("{text:?}: both must be view positions in 0..=1024"));
    }
    Ok((u as f32, v as f32))
}

fn parse_focus(text: &str) -> Result<f32, String> {
    let max = lightfield::render::MAX_FOCUS as f64;
    let d = kit::cli::parse_finite(text)?;
    if d.abs() > max {
        return Err(format!("{d} is not within +-{max}"));
    }
    Ok(d as f32)
}

fn parse_aperture(text: &str) -> Result<f32, String> {
    let max = lightfield::render::MAX_APERTURE as f64;
    let r = kit::cli::parse_finite(text)?;
    if !(1.0..=max).contains(&r) {
        return Err(format!("{r} is not between 1 and {max}"));
    }
    Ok(r as f32)
}

/// The viewpoint `args` names for a light field of `size`, at `default_size` unless
/// `--size` says otherwise; checked against the captured views.
pub fn viewpoint(args: &ViewpointArgs, size: [usize; 4], default_size: (u32, u32)) -> Result<View> {
    let centre = View::centre(size);
    let (width, height) = args.size.unwrap_or(default_size);
    let position = args.view.map_or(centre.position, |(u, v)| [u, v]);
    let view = View { position, focus: args.focus, aperture: args.aperture, width, height };
    view.check(size)?;
    Ok(view)
}
