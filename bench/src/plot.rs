//! PNG plots of a sweep, drawn in memory and encoded into a writer so `sweep` can stage
//! them with its CSV: time and occupancy against each parameter, and the three panels of
//! the SMoE paper's Fig. 9 (the CUDA Occupancy Calculator's: occupancy against workgroup
//! size, registers per thread and shared memory per workgroup, the kernel's own shape
//! marked).

use std::io::Write;

use image::ImageEncoder;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::measure::{Point, Shape};
use crate::occupancy::{occupancy, Limits, Usage};

/// DejaVu Sans, built into the binary: GPU machines often have no fonts installed, and
/// plotters' ab_glyph backend has none of its own (tools/setup.sh installs fonts-dejavu-core
/// where this is built).
const FONT: &[u8] = include_bytes!("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf");

/// Registers [`FONT`] as plotters' sans-serif, once per process.
fn register_font() -> anyhow::Result<()> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    anyhow::ensure!(ok, "the built-in DejaVu Sans font did not load");
    Ok(())
}

const PANEL_WIDTH: u32 = 640;
const HEIGHT: u32 = 480;
/// Lines named in a legend; more would hide the plot.
const LEGEND_LINES: usize = 12;

/// A named line of (x, y) points.
pub type Series = (String, Vec<(f64, f64)>);

/// One panel: a line chart with an optional marked point.
pub struct Panel {
    pub title: String,
    pub x: String,
    pub y: String,
    pub series: Vec<Series>,
    pub mark: Option<(f64, f64)>,
}

/// Draws `panels` side by side and encodes them as one PNG into `out`.
pub fn write_panels(panels: &[Panel], out: &mut impl Write) -> anyhow::Result<()> {
    let width = PANEL_WIDTH * panels.len().max(1) as u32;
    let mut rgb = vec![0u8; width as usize * HEIGHT as usize * 3];
    {
        register_font()?;
        let root = BitMapBackend::with_buffer(&mut rgb, (width, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (panel, area) in panels.iter().zip(&areas) {
            draw(panel, area)?;
        }
        root.present()?;
    }
    image::codecs::png::PngEncoder::new(out).write_image(&rgb, width, HEIGHT, image::ExtendedColorType::Rgb8)?;
    Ok(())
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.filter(|v| v.is_finite()).fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        (0.0, 1.0)
    } else if hi - lo < 1e-12 {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

fn draw(panel: &Panel, area: &DrawingArea<BitMapBackend<'_>, Shift>) -> anyhow::Result<()> {
    let all = || panel.series.iter().flat_map(|(_, pts)| pts.iter()).chain(panel.mark.iter());
    let (x0, x1) = bounds(all().map(|p| p.0));
    let (_, y1) = bounds(all().map(|p| p.1));
    let mut builder = ChartBuilder::on(area);
    builder.margin(16).x_label_area_size(40).y_label_area_size(60).caption(&panel.title, ("sans-serif", 18));
    let mut chart = builder.build_cartesian_2d(x0..x1, 0.0..y1 * 1.1)?;
    chart.configure_mesh().x_desc(&panel.x).y_desc(&panel.y).draw()?;
    for (i, (name, pts)) in panel.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        // Dots only where they are few enough to read as measured points.
        if pts.len() <= 40 {
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        let line = chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        if i < LEGEND_LINES {
            line.label(name.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
    }
    if let Some(m) = panel.mark {
        chart.draw_series(std::iter::once(Circle::new(m, 7, RED.stroke_width(3))))?;
    }
    if !panel.series.is_empty() {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    Ok(())
}

/// Lines of `y` against parameter `key`: one line per size and values of the other
/// parameters.
fn against(points: &[Point], key: &str, y: impl Fn(&Point) -> Option<f64>) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for p in points {
        let Some(value) = y(p) else { continue };
        let others: Vec<String> =
            p.params.0.iter().filter(|(k, _)| *k != key).map(|(k, v)| format!("{k}={v}")).collect();
        let name = format!("{} {}{}", p.size, p.unit, others.iter().map(|o| format!(" {o}")).collect::<String>());
        let x = f64::from(p.params.get(key));
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push((x, value)),
            None => series.push((name, vec![(x, value)])),
        }
    }
    for (_, pts) in &mut series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// Time and occupancy against parameter `key` (two panels).
pub fn parameter_panels(points: &[Point], key: &str, title: &str) -> [Panel; 2] {
    [
        Panel {
            title: format!("{title}: time"),
            x: key.into(),
            y: "median GPU ms".into(),
            series: against(points, key, |p| Some(p.median_ms)),
            mark: None,
        },
        Panel {
            title: format!("{title}: occupancy"),
            x: key.into(),
            y: "theoretical occupancy".into(),
            series: against(points, key, |p| p.occupancy),
            mark: None,
        },
    ]
}

/// Time against problem size, for a kernel without parameters.
pub fn size_panel(points: &[Point], title: &str) -> Panel {
    let pts = points.iter().map(|p| (p.size as f64, p.median_ms)).collect();
    Panel {
        title: title.into(),
        x: points.first().map_or("size", |p| p.unit).into(),
        y: "median GPU ms".into(),
        series: vec![("time".into(), pts)],
        mark: None,
    }
}

/// The three Fig. 9 panels for `shape` on `limits`: occupancy as the workgroup size, the
/// registers per thread and the shared memory per workgroup vary, the others held. The
/// kernel's own point is marked. Unknown registers are drawn at 32 (and not limiting where
/// the preset has no register file).
pub fn fig9_panels(limits: &Limits, shape: &Shape, max_threads: u32, title: &str) -> [Panel; 3] {
    let usage = shape.usage();
    let regs = usage.registers.unwrap_or(32);
    let occ = |u: Usage| occupancy(limits, u).map(|o| o.occupancy).unwrap_or(0.0);
    let threads: Vec<(f64, f64)> = (1..=max_threads.min(limits.max_threads) / limits.warp)
        .map(|w| w * limits.warp)
        .map(|t| (f64::from(t), occ(Usage { threads: t, ..usage })))
        .collect();
    let max_regs = limits.max_registers_per_thread.min(255);
    let registers: Vec<(f64, f64)> =
        (1..=max_regs).map(|r| (f64::from(r), occ(Usage { registers: Some(r), ..usage }))).collect();
    let step = (limits.shared_per_workgroup / 96).max(1);
    let shared: Vec<(f64, f64)> = (0..=limits.shared_per_workgroup / step)
        .map(|i| i * step)
        .map(|s| (f64::from(s), occ(Usage { shared: s, ..usage })))
        .collect();
    let here = occ(usage);
    let regs_note = if usage.registers.is_some() { "" } else { " (registers unknown: 32 assumed)" };
    [
        Panel {
            title: format!("{title}: (a) workgroup size"),
            x: "threads per workgroup".into(),
            y: "occupancy".into(),
            series: vec![(format!("{} regs, {} B shared", regs, usage.shared), threads)],
            mark: Some((f64::from(usage.threads), here)),
        },
        Panel {
            title: format!("(b) registers per thread{regs_note}"),
            x: "registers per thread".into(),
            y: "occupancy".into(),
            series: vec![(format!("{} threads, {} B shared", usage.threads, usage.shared), registers)],
            mark: Some((f64::from(regs), occ(Usage { registers: Some(regs), ..usage }))),
        },
        Panel {
            title: "(c) shared memory per workgroup".into(),
            x: "bytes of shared memory".into(),
            y: "occupancy".into(),
            series: vec![(format!("{} threads, {} regs", usage.threads, regs), shared)],
            mark: Some((f64::from(usage.shared), here)),
        },
    ]
}
