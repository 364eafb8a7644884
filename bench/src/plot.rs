//! PNG plot of a sweep: GB/s against problem size, one line per workgroup size. The plot
//! is drawn in memory and encoded into a writer, so `sweep` can stage it with its CSV.

use std::io::Write;

use image::ImageEncoder;
use plotters::prelude::*;

use crate::Point;

/// Registers a system sans-serif font for labels (plotters' ab_glyph backend has none
/// built in). Returns false when no font is installed; the plot is then drawn unlabelled.
fn register_font() -> bool {
    const CANDIDATES: [&str; 2] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    ];
    for path in CANDIDATES {
        if let Ok(bytes) = std::fs::read(path) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return true;
            }
        }
    }
    false
}

/// The plot's size in pixels.
const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;

/// Draws `points` (one kernel) and encodes the plot as a PNG into `out`.
pub fn write_png(points: &[Point], title: &str, out: &mut impl Write) -> anyhow::Result<()> {
    let mut rgb = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
    draw(points, title, &mut rgb)?;
    image::codecs::png::PngEncoder::new(out).write_image(&rgb, WIDTH, HEIGHT, image::ExtendedColorType::Rgb8)?;
    Ok(())
}

/// Draws `points` into `rgb`, WIDTH x HEIGHT pixels of 3 bytes.
fn draw(points: &[Point], title: &str, rgb: &mut [u8]) -> anyhow::Result<()> {
    let labelled = register_font();
    let root = BitMapBackend::with_buffer(rgb, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let xs: Vec<f64> = points.iter().map(|p| (p.size as f64).log2()).collect();
    let (x0, x1) = xs.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let y1 = points.iter().map(|p| p.gb_per_s).fold(0.0, f64::max) * 1.1 + 1e-9;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(20).x_label_area_size(40).y_label_area_size(60);
    if labelled {
        builder.caption(title, ("sans-serif", 22));
    }
    let mut chart = builder.build_cartesian_2d(x0..x1.max(x0 + 1.0), 0.0..y1)?;
    if labelled {
        chart.configure_mesh().x_desc("log2(elements)").y_desc("GB/s (read + write)").draw()?;
    } else {
        chart.configure_mesh().disable_x_mesh().disable_y_mesh().x_labels(0).y_labels(0).draw()?;
    }
    let mut workgroups: Vec<u32> = points.iter().map(|p| p.workgroup).collect();
    workgroups.sort();
    workgroups.dedup();
    for (i, wg) in workgroups.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let series: Vec<(f64, f64)> =
            points.iter().filter(|p| p.workgroup == *wg).map(|p| ((p.size as f64).log2(), p.gb_per_s)).collect();
        let line = chart.draw_series(LineSeries::new(series, color.stroke_width(2)))?;
        if labelled {
            line.label(format!("wg {wg}")).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
    }
    if labelled {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
