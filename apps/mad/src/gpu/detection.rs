//! The detection stage on the GPU (the twin of [`crate::cpu::detection`]): `csf_apply` on
//! the forward lightness spectra, the inverse FFT, `detect_blocks` (the block statistics),
//! `detect_map` (the local MSE times the visibility mask) and `sum_detection` (the map's
//! partial sums per cropped row).

use engine::prims::fft::Direction;
use engine::{Context, Kernel, Recorder};

use super::{Place, Push, Slot, MAP_TILE, TILE, WORKGROUP};
use crate::shaders::kernels;
use crate::MadError;

/// The detection stage's pipelines on one device.
pub(super) struct Detection {
    csf_apply: Kernel<Push>,
    detect_blocks: Kernel<Push>,
    detect_map: Kernel<Push>,
    sum_detection: Kernel<Push>,
}

impl Detection {
    pub(super) fn new(ctx: &Context) -> Result<Detection, MadError> {
        Ok(Detection {
            csf_apply: ctx.kernel(&kernels::CSF_APPLY, &[WORKGROUP])?,
            detect_blocks: ctx.kernel(&kernels::DETECT_BLOCKS, &[TILE * TILE, TILE])?,
            detect_map: ctx.kernel(&kernels::DETECT_MAP, &[])?,
            sum_detection: ctx.kernel(&kernels::SUM_DETECTION, &[WORKGROUP])?,
        })
    }

    /// The detection stage from the forward lightness spectra: CSF (one invocation per bin,
    /// over all images of the chunk), inverse FFT, block statistics (of the kept blocks and
    /// one more column and row, the minimum's neighbours), the map and its partial sums.
    pub(super) fn record(&self, rec: &mut Recorder, slot: &Slot, base: &Push, place: &Place) -> Result<(), MadError> {
        let g = slot.grid;
        let count = base.pairs;
        let bins = g.pixels() as u32;
        let span = |c0: u32, c1: u32, n: usize| ((c1 + 1).min(n as u32) - c0).div_ceil(TILE);
        let tiles =
            [span(base.cells_x0, base.cells_x1, g.blocks_x), span(base.cells_y0, base.cells_y1, g.blocks_y), count];
        rec.pass(&self.csf_apply).read_write(&slot.light).push(base).dispatch_linear(bins.div_ceil(WORKGROUP))?;
        slot.fft.record(rec, &slot.light, Direction::Inverse)?;
        rec.pass(&self.detect_blocks).read(&slot.light).write(&slot.blocks).push(base).dispatch(tiles)?;
        let map_tiles = [(g.width as u32).div_ceil(MAP_TILE), (g.height as u32).div_ceil(MAP_TILE), count];
        rec.pass(&self.detect_map)
            .read(&slot.sqdiff)
            .read(&slot.blocks)
            .write(&slot.detection_map)
            .push(base)
            .dispatch(map_tiles)?;
        rec.pass(&self.sum_detection)
            .read(&slot.detection_map)
            .write(&slot.detection_partials)
            .push(base)
            .dispatch([place.detection_rows() as u32, 1, count])?;
        rec.mark("detection");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use engine::prims::fft::Fft2dCpu;
    use kit::rng::Rng;

    use super::super::{combine_pair, GpuMad, Stages};
    use crate::grid::Grid;
    use crate::GrayImage;

    /// A pair of random 8-bit images, none of whose pixels is zero: a low-contrast reference
    /// (so that the distortion is visible and the mask not zero) and the distorted one within
    /// 40 levels of it.
    fn random_pair(width: usize, height: usize, seed: u64) -> (GrayImage, GrayImage) {
        let mut rng = Rng::new(seed);
        let r: Vec<u8> = (0..width * height).map(|_| 100 + (rng.next_u64() % 8) as u8).collect();
        let d: Vec<u8> =
            r.iter().map(|&v| (v as i64 + (rng.next_u64() % 81) as i64 - 40).clamp(1, 255) as u8).collect();
        (GrayImage::from_u8(width, height, &r), GrayImage::from_u8(width, height, &d))
    }

    /// The detection stage alone (CSF, inverse FFT, block statistics, map, partial sums)
    /// against [`crate::cpu::detection`] at awkward sizes: the map within 1e-4 of its largest
    /// value (the visibility mask's thresholds compare f32 logarithms; no block sits on one
    /// here), d_detect within 1e-5 relative.
    #[test]
    fn detection_stage_matches_the_cpu_reference() {
        let gpu = GpuMad::new(engine::testing::context()).unwrap();
        for (w, h, seed) in [(53, 38, 1), (97, 61, 2), (40, 75, 3)] {
            let (r, d) = random_pair(w, h, seed);
            let grid = Grid::new(w, h);
            let (slot, run) = gpu.submit_one(&[((), &r, &d)], true, Stages::DETECTION, 0).unwrap();
            run.wait().unwrap();
            let (got, maps) = combine_pair(&slot, 0, 0.0, Some(&vec![0.0; grid.blocks()])).unwrap();
            let fft = Fft2dCpu::new(w, h).unwrap();
            let (want, want_map) = crate::cpu::detection::detection(&r, &d, &grid, &fft).unwrap();
            let rel = (got.detection - want).abs() / want;
            assert!(rel < 1e-5, "{w}x{h}: d_detect {} against {want}, {rel:.1e} relative", got.detection);
            let map = maps.unwrap().detection;
            let largest = want_map.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(largest > 0.0, "{w}x{h}: random pairs have visible differences");
            let worst = map.iter().zip(&want_map).map(|(&g, w)| (g as f64 - w).abs()).fold(0.0, f64::max) / largest;
            assert!(worst < 1e-4, "{w}x{h}: map off by {worst:.1e} of its largest value");
            gpu.keep_slot(slot);
        }
        engine::testing::assert_no_validation_messages();
    }
}
