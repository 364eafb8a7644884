//! The seams' ramped lines on the GPU, the twin of [`Seams::lines_into`]: `P` (whole rows
//! of an image less its mean, transformed, multiplied by the ramp `s`, transformed back) and
//! `Q` (the same along whole columns with `t`), cut to a tile's window, straight into the
//! buffer the tile's seam spectra are taken from. The pair's gray images stay on the device
//! for all the tiles, so a tile costs its lines' transforms on the GPU instead of the host's
//! (which made the host's line transforms most of a tiled score's time).
//!
//! Lines go through in chunks of at most [`CHUNK_VALUES`] values: `seam_fill` (the chunk's
//! lines from the gray image), the engine's FFT along them, `seam_ramp`, the inverse FFT and
//! `seam_cut` (the window's columns of each row, or rows of each column).

use engine::prims::fft::{Direction, Fft2d};
use engine::{Buffer, Context, Kernel, Location, Recorder};

use crate::input::GrayImage;
use crate::seams::Seams;
use crate::shaders::kernels;
use crate::tiled::Window;
use crate::MadError;

/// Complex values of one chunk of lines (32 MiB in complex f32): few chunks per tile, and
/// a small fixed cost beside the budget's tiles.
const CHUNK_VALUES: usize = 1 << 22;
/// Invocations per workgroup of the three kernels.
const WORKGROUP: u32 = 256;

/// `seam_common.glsl`'s push constants.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct SeamPush {
    width: u32,
    height: u32,
    len: u32,
    lines: u32,
    first: u32,
    window_w: u32,
    window_h: u32,
    origin_x: u32,
    origin_y: u32,
    rows: u32,
    out_offset: u32,
    mean: f32,
}

/// Lines of length `len` per chunk, for `window_lines` lines a window.
fn per_chunk(len: usize, window_lines: usize) -> usize {
    (CHUNK_VALUES / len).clamp(1, window_lines.max(1))
}

/// One direction's lines: rows (`P`, ramp `s`) or columns (`Q`, ramp `t`).
struct Axis {
    ramp: Buffer<f32>,
    chunk: Buffer<[f32; 2]>,
    fft: Fft2d,
    /// Lines per chunk.
    per_chunk: usize,
}

impl Axis {
    fn new(ctx: &Context, ramp: &[f64], window_lines: usize) -> Result<Axis, MadError> {
        let len = ramp.len();
        let per_chunk = per_chunk(len, window_lines);
        let ramp: Vec<f32> = ramp.iter().map(|&v| v as f32).collect();
        Ok(Axis {
            ramp: ctx.upload(&ramp, "mad seam ramp")?,
            chunk: ctx.buffer(per_chunk * len, Location::Device, "mad seam lines chunk")?,
            fft: Fft2d::new(ctx, len, 1, per_chunk)?,
            per_chunk,
        })
    }
}

/// The pair's gray images on the device and the kernels that make a window's `P` and `Q`.
pub(super) struct SeamLines {
    fill: Kernel<SeamPush>,
    ramp: Kernel<SeamPush>,
    cut: Kernel<SeamPush>,
    gray: [Buffer<f32>; 2],
    means: [f64; 2],
    image: (usize, usize),
    window: (usize, usize),
    rows: Axis,
    columns: Axis,
}

impl SeamLines {
    /// Device bytes for the lines of `window`s over an `image`-sized pair: both gray images
    /// in f32 and the two chunks (with their FFTs' scratch, at most a chunk each).
    pub(super) fn device_bytes(image: (usize, usize), window: (usize, usize)) -> u64 {
        let chunk = |len: usize, lines: usize| (per_chunk(len, lines) * len) as u64 * 8;
        8 * image.0 as u64 * image.1 as u64 + 2 * (chunk(image.0, window.1) + chunk(image.1, window.0))
    }

    /// Whether a gray image of `image` binds in one piece on this device (else the host
    /// makes the lines).
    pub(super) fn binds(ctx: &Context, image: (usize, usize)) -> bool {
        4 * image.0 as u64 * image.1 as u64 <= ctx.info().max_storage_buffer_range
    }

    pub(super) fn new(
        ctx: &Context,
        pair: (&GrayImage, &GrayImage),
        means: (f64, f64),
        seams: &Seams,
        window: (usize, usize),
    ) -> Result<SeamLines, MadError> {
        let image = (pair.0.width, pair.0.height);
        let f32s = |img: &GrayImage| img.values.iter().map(|&v| v as f32).collect::<Vec<f32>>();
        let (s, t) = seams.whole_ramps();
        Ok(SeamLines {
            fill: ctx.kernel(&kernels::SEAM_FILL, &[WORKGROUP])?,
            ramp: ctx.kernel(&kernels::SEAM_RAMP, &[WORKGROUP])?,
            cut: ctx.kernel(&kernels::SEAM_CUT, &[WORKGROUP])?,
            gray: [
                ctx.upload(&f32s(pair.0), "mad seam gray (reference)")?,
                ctx.upload(&f32s(pair.1), "mad seam gray (distorted)")?,
            ],
            means: [means.0, means.1],
            image,
            window,
            rows: Axis::new(ctx, s, window.1)?,
            columns: Axis::new(ctx, t, window.0)?,
        })
    }

    /// Records `[P_ref, P_dst, Q_ref, Q_dst]` of the window at `area` into `out` (four
    /// window-sized images of complex f32), as [`Seams::lines_into`] makes them.
    pub(super) fn record(&self, rec: &mut Recorder, area: &Window, out: &Buffer<[f32; 2]>) -> Result<(), MadError> {
        let (w, h) = self.image;
        let (ww, wh) = self.window;
        let wrap = |o: isize, n: usize| o.rem_euclid(n as isize) as u32;
        let base = SeamPush {
            width: w as u32,
            height: h as u32,
            window_w: ww as u32,
            window_h: wh as u32,
            origin_x: wrap(area.origin.0, w),
            origin_y: wrap(area.origin.1, h),
            ..SeamPush::default()
        };
        for (image, (gray, &mean)) in self.gray.iter().zip(&self.means).enumerate() {
            for (rows, axis, len, count, kept) in [(1, &self.rows, w, wh, ww), (0, &self.columns, h, ww, wh)] {
                let offset = ((1 - rows) * 2 + image as u32) * (ww * wh) as u32;
                for first in (0..count).step_by(axis.per_chunk) {
                    let lines = axis.per_chunk.min(count - first);
                    let push = SeamPush {
                        len: len as u32,
                        lines: lines as u32,
                        first: first as u32,
                        rows,
                        out_offset: offset,
                        mean: mean as f32,
                        ..base
                    };
                    let values = (lines * len) as u32;
                    rec.pass(&self.fill)
                        .read(gray)
                        .write(&axis.chunk)
                        .push(&push)
                        .dispatch_linear(values.div_ceil(WORKGROUP))?;
                    axis.fft.record(rec, &axis.chunk, Direction::Forward)?;
                    rec.pass(&self.ramp)
                        .read(&axis.ramp)
                        .read_write(&axis.chunk)
                        .push(&push)
                        .dispatch_linear(values.div_ceil(WORKGROUP))?;
                    axis.fft.record(rec, &axis.chunk, Direction::Inverse)?;
                    let cut = (lines * kept) as u32;
                    rec.pass(&self.cut)
                        .read(&axis.chunk)
                        .write(out)
                        .push(&push)
                        .dispatch_linear(cut.div_ceil(WORKGROUP))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Cells;
    use kit::rng::Rng;

    fn random_image(width: usize, height: usize, seed: u64) -> GrayImage {
        let mut rng = Rng::new(seed);
        let values = (0..width * height).map(|_| 1.0 + (rng.next_u64() % 25400) as f64 / 100.0).collect();
        GrayImage { width, height, values, eight_bit: false }
    }

    /// The GPU's `P` and `Q` against the host's (f64) for windows that wrap around the image
    /// on every side, at awkward sizes (a prime width, a Bluestein-length height) and chunks
    /// of a few lines: within 2e-5 of the largest magnitude.
    #[test]
    fn gpu_lines_match_the_host_lines() {
        let ctx = engine::testing::context();
        for (image, window, halo, cells) in [
            ((97, 61), (40, 36), 12, Cells { x0: 0, y0: 0, x1: 4, y1: 3 }),
            ((131, 89), (60, 45), 16, Cells { x0: 25, y0: 15, x1: 32, y1: 18 }),
        ] {
            let (r, d) = (random_image(image.0, image.1, 3), random_image(image.0, image.1, 4));
            let mean = |img: &GrayImage| img.values.iter().sum::<f64>() / img.values.len() as f64;
            let means = (mean(&r), mean(&d));
            let seams = Seams::new(image, window, halo).unwrap();
            let area = Window::around(&cells, halo, window);
            let n = window.0 * window.1;
            let mut want = vec![[0f32; 2]; 4 * n];
            {
                let (p, q) = want.split_at_mut(2 * n);
                for (k, (img, m)) in [(&r, means.0), (&d, means.1)].into_iter().enumerate() {
                    let pq = (&mut p[k * n..(k + 1) * n], &mut q[k * n..(k + 1) * n]);
                    seams.lines_into(img, m, &area, pq, |c| [c.re as f32, c.im as f32]).unwrap();
                }
            }
            let mut lines = SeamLines::new(ctx, (&r, &d), means, &seams, window).unwrap();
            // Chunks of a few lines, so that several chunks and a short last one run.
            lines.rows = Axis { per_chunk: 7, ..Axis::new(ctx, seams.whole_ramps().0, 7).unwrap() };
            lines.columns = Axis { per_chunk: 5, ..Axis::new(ctx, seams.whole_ramps().1, 5).unwrap() };
            let out = ctx.buffer::<[f32; 2]>(4 * n, Location::Device, "lines").unwrap();
            let mut rec = ctx.recorder().unwrap();
            lines.record(&mut rec, &area, &out).unwrap();
            rec.submit().unwrap().wait().unwrap();
            let got = ctx.download(&out).unwrap();
            let top = want.iter().fold(0f32, |m, v| m.max(v[0].abs()).max(v[1].abs()));
            let worst =
                got.iter().zip(&want).fold(0f32, |m, (a, b)| m.max((a[0] - b[0]).abs()).max((a[1] - b[1]).abs()));
            assert!(top > 1.0 && worst <= 2e-5 * top, "{image:?} window {window:?}: {worst} of {top}");
        }
        engine::testing::assert_no_validation_messages();
    }
}
