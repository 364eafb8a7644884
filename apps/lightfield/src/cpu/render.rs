//! The render stage on the CPU (rayon over rows), the reference for [`crate::gpu::render`]:
//! each output pixel blends the views within the aperture with tent weights, each sampled
//! bilinearly at the refocused position ([`crate::render`] says how).

use rayon::prelude::*;

use crate::error::Result;
use crate::lightfield::{LightField, COLOURS};
use crate::render::{pack, PixelOrder, View};

/// Bilinear sample of view `view` (row-major index) at (sx, sy), clamped to the edge.
fn sample_view(lf: &LightField, view: usize, sx: f32, sy: f32) -> [f32; 3] {
    let sx = sx.clamp(0.0, (lf.w - 1) as f32);
    let sy = sy.clamp(0.0, (lf.h - 1) as f32);
    let (x0, y0) = (sx.floor() as usize, sy.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(lf.w - 1), (y0 + 1).min(lf.h - 1));
    let (fx, fy) = (sx - x0 as f32, sy - y0 as f32);
    let texel = |x: usize, y: usize| {
        let i = ((view * lf.h + y) * lf.w + x) * COLOURS;
        [lf.data[i], lf.data[i + 1], lf.data[i + 2]]
    };
    let (a, b, c, d) = (texel(x0, y0), texel(x1, y0), texel(x0, y1), texel(x1, y1));
    std::array::from_fn(|k| {
        let top = (1.0 - fx) * a[k] + fx * b[k];
        let bottom = (1.0 - fx) * c[k] + fx * d[k];
        (1.0 - fy) * top + fy * bottom
    })
}

/// The first and last view index within `aperture` of `p` along an axis of `n` views.
fn window(p: f32, aperture: f32, n: usize) -> (i64, i64) {
    ((p - aperture).ceil().max(0.0) as i64, ((p + aperture).floor() as i64).min(n as i64 - 1))
}

/// Renders `view` of `lf` on the CPU: `width * height` packed pixels, row 0 at the top.
pub fn render_cpu(lf: &LightField, view: &View, order: PixelOrder) -> Result<Vec<u32>> {
    render_cpu_with(lf, view, order, &|| {})
}

/// [`render_cpu`], calling `row_done` (from any thread) as each output row is finished, for
/// a progress bar: a large frame takes minutes on the CPU.
pub fn render_cpu_with(
    lf: &LightField,
    view: &View,
    order: PixelOrder,
    row_done: &(impl Fn() + Sync),
) -> Result<Vec<u32>> {
    let size = [lf.u, lf.v, lf.h, lf.w];
    view.check(size)?;
    let [scale_x, scale_y] = view.scale(size);
    let [pu, pv] = view.position;
    let r = view.aperture;
    let (i0, i1) = window(pu, r, lf.u);
    let (j0, j1) = window(pv, r, lf.v);
    let (w, h) = (view.width as usize, view.height as usize);
    let mut out = vec![0u32; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(oy, row)| {
        let y = (oy as f32 + 0.5) * scale_y - 0.5;
        for (ox, px) in row.iter_mut().enumerate() {
            let x = (ox as f32 + 0.5) * scale_x - 0.5;
            let mut acc = [0f32; 3];
            let mut wsum = 0f32;
            for i in i0..=i1 {
                let wi = 1.0 - (i as f32 - pu).abs() / r;
                if wi <= 0.0 {
                    continue;
                }
                let sy = y + view.focus * (i as f32 - pu);
                for j in j0..=j1 {
                    let wj = 1.0 - (j as f32 - pv).abs() / r;
                    if wj <= 0.0 {
                        continue;
                    }
                    let wt = wi * wj;
                    let sx = x + view.focus * (j as f32 - pv);
                    let c = sample_view(lf, i as usize * lf.v + j as usize, sx, sy);
                    (0..3).for_each(|k| acc[k] += wt * c[k]);
                    wsum += wt;
                }
            }
            *px = pack(acc.map(|a| a / wsum), order);
        }
        row_done();
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::unpack_rgb8;

    #[test]
    fn integer_viewpoints_are_the_views_themselves() {
        let lf = crate::synth::generate((3, 4), (13, 9), 2);
        for (u, v) in [(0, 0), (2, 3), (1, 2)] {
            for focus in [0.0, 2.5] {
                let view = View { position: [u as f32, v as f32], focus, ..View::centre([3, 4, 9, 13]) };
                let got = unpack_rgb8(&render_cpu(&lf, &view, PixelOrder::Rgba).unwrap(), PixelOrder::Rgba);
                let want: Vec<u8> = lf.view(u, v).iter().map(|&x| kit::image::to_u8(x)).collect();
                assert_eq!(got, want, "view ({u}, {v}) focus {focus}");
            }
        }
        let bad = View { position: [2.5, 0.0], ..View::centre([3, 4, 9, 13]) };
        assert!(render_cpu(&lf, &bad, PixelOrder::Rgba).is_err());
    }

    #[test]
    fn progress_counts_every_row_and_changes_nothing() {
        let lf = crate::synth::generate((3, 4), (13, 9), 2);
        let view = View { position: [1.25, 2.5], focus: 0.5, aperture: 2.0, width: 21, height: 17 };
        let rows = std::sync::atomic::AtomicUsize::new(0);
        let counted = render_cpu_with(&lf, &view, PixelOrder::Rgba, &|| {
            rows.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(rows.into_inner(), 17);
        assert_eq!(counted, render_cpu(&lf, &view, PixelOrder::Rgba).unwrap());
    }
}
