//! One view of a `.lfc` without the rest: a view's patches are one contiguous view block
//! of the patch grid, so only the sections holding that block are decompressed and parsed
//! (the section table gives every frame's place and size), then decoded on either path.

use std::ops::Range;

use crate::bitstream::{self, Compressed};
use crate::codec::{patch_steps, CodecPath};
use crate::codes::Codes;
use crate::cpu::decode::decode_view_cpu;
use crate::dictionary::Ensemble;
use crate::error::{LfError, Result};
use crate::lightfield::COLOURS;
use crate::patch::PatchGrid;
use crate::sections::{Bounds, Header};

/// A `.lfc` file opened for random access: its header, section table and ensemble read
/// and checked, no section decompressed yet.
pub struct ViewSource<'a> {
    bytes: &'a [u8],
    header: Header,
    bounds: Bounds,
    ensemble: Ensemble,
}

/// How much of the file one view's decode read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SectionsRead {
    /// Sections decompressed and parsed.
    pub read: usize,
    /// Sections in the file.
    pub total: usize,
}

impl<'a> ViewSource<'a> {
    pub fn open(bytes: &'a [u8]) -> Result<ViewSource<'a>> {
        let (header, bounds, ensemble) = bitstream::open(bytes)?;
        Ok(ViewSource { bytes, header, bounds, ensemble })
    }

    pub fn ensemble(&self) -> &Ensemble {
        &self.ensemble
    }

    /// (U, V, H, W).
    pub fn size(&self) -> [usize; 4] {
        self.header.size
    }

    /// Decodes view (u, v) from the sections holding its patches alone.
    pub fn decode_view(&self, path: CodecPath<'_>, view: (usize, usize)) -> Result<(Vec<f32>, SectionsRead)> {
        let grid = &self.bounds.grid;
        let range = view_patches(grid, self.header.size, view)?;
        let per = self.header.section_patches;
        let sections = range.start / per..(range.end - 1) / per + 1;
        let read = SectionsRead { read: sections.len(), total: self.header.sections() };
        let first = sections.start * per;
        let codes = bitstream::read_sections(&self.header, self.bytes, &self.bounds, sections)?;
        let samples = decode_view_codes(grid, &self.ensemble, self.header.step, &codes, first, path, view)?;
        Ok((samples, read))
    }
}

/// Decodes view (u, v) of a whole compressed light field in memory.
pub fn decode_view(c: &Compressed, path: CodecPath<'_>, view: (usize, usize)) -> Result<Vec<f32>> {
    decode_view_codes(&c.grid(), &c.ensemble, c.step, &c.codes, 0, path, view)
}

/// Refuses a view (u, v) outside the U x V views of a light field of `size` (U, V, H, W).
pub fn check_view([nu, nv, _, _]: [usize; 4], (u, v): (usize, usize)) -> Result<()> {
    if u >= nu || v >= nv {
        return Err(LfError::NoSuchView { view: (u, v), views: (nu, nv) });
    }
    Ok(())
}

/// The patches covering view (u, v): patches are ordered view block, then pixel rows,
/// then columns, so one view block's patches are contiguous (`1 / (U/mu * V/mv)` of them).
fn view_patches(grid: &PatchGrid, size: [usize; 4], (u, v): (usize, usize)) -> Result<Range<usize>> {
    check_view(size, (u, v))?;
    let s = grid.shape;
    let [_, cv, cy, cx] = grid.count;
    let block = cy * cx;
    let start = ((u / s.mu) * cv + v / s.mv) * block;
    Ok(start..start + block)
}

/// Decodes view (u, v) from `codes`, which hold patches `first..first + codes.len()`.
/// Returns its H x W x 3 samples clamped into [0, 1] as the whole decode clamps them, so
/// they equal that view of the whole decode on the same path.
fn decode_view_codes(
    grid: &PatchGrid,
    ensemble: &Ensemble,
    step: f32,
    codes: &Codes,
    first: usize,
    path: CodecPath<'_>,
    (u, v): (usize, usize),
) -> Result<Vec<f32>> {
    let [_, _, h, w] = grid.size;
    let range = view_patches(grid, grid.size, (u, v))?;
    let local = range.start - first..range.end - first;
    let s = grid.shape;
    if let CodecPath::Gpu(gpu) = path {
        if gpu.ensemble() != ensemble {
            return Err(LfError::OtherEnsemble);
        }
    }
    // One view of every patch is a hundredth of the patches' synthesis at 8 x 8 views, less
    // work than a GPU round trip of the whole patches (which is what the GPU path did: 805 MB
    // read back at the paper's size for a 12 MB view), so both paths decode the slice here.
    let steps = patch_steps(grid, step, range.clone());
    let slices = decode_view_cpu(codes, ensemble, &steps, local.clone(), (u % s.mu, v % s.mv));
    let plane = s.my * s.mx * COLOURS;
    let mut out = vec![0f32; h * w * COLOURS];
    for (src, p) in slices.chunks(plane).zip(range) {
        let o = grid.origin(p);
        let e = grid.valid_extent(p);
        for dy in 0..e[2] {
            let row = dy * s.mx * COLOURS;
            let dst = ((o[2] + dy) * w + o[3]) * COLOURS;
            let n = e[3] * COLOURS;
            out[dst..dst + n].copy_from_slice(&src[row..row + n]);
        }
    }
    if let Some(i) = out.iter().position(|x| !x.is_finite()) {
        return Err(LfError::NotFinite { what: format!("decoded view {u},{v}"), index: i, value: out[i] });
    }
    out.iter_mut().for_each(|x| *x = x.clamp(0.0, 1.0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_lightfield, encode_lightfield};
    use crate::codes::Params;
    use crate::patch::PatchShape;

    const SHAPE: PatchShape = PatchShape { my: 5, mx: 5, mu: 4, mv: 4 };

    /// The view decoded alone against that view of the whole decode: equal up to the f32
    /// rounding of the products' other order.
    fn assert_close(got: &[f32], want: &[f32], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst <= 1e-5, "{what}: differs by {worst}");
    }

    #[test]
    fn one_view_decodes_alone_as_in_the_whole_decode() {
        let lf = crate::synth::generate((5, 3), (23, 16), 7);
        let ens = Ensemble::random(SHAPE, 2, 3);
        let (c, _) = encode_lightfield(&lf, &ens, Params { sparsity: 900, epsilon: 0.01 }, CodecPath::Cpu).unwrap();
        let (all, _) = decode_lightfield(&c, CodecPath::Cpu).unwrap();
        let ctx = engine::testing::context();
        let gpu = crate::gpu::GpuCodec::new(ctx, &ens).unwrap().with_max_chunk(3);
        let (all_gpu, _) = decode_lightfield(&c, CodecPath::Gpu(&gpu)).unwrap();
        for (u, v) in [(0, 0), (4, 2), (2, 1)] {
            assert_close(&decode_view(&c, CodecPath::Cpu, (u, v)).unwrap(), all.view(u, v), "view");
            assert_close(&decode_view(&c, CodecPath::Gpu(&gpu), (u, v)).unwrap(), all_gpu.view(u, v), "GPU view");
        }
        assert!(decode_view(&c, CodecPath::Cpu, (5, 0)).is_err());
        engine::testing::assert_no_validation_messages();
    }

    /// From the file's bytes a view decodes from the sections holding its view block
    /// alone: the count says so, a damaged section elsewhere does not stop it (while the
    /// whole decode refuses the file), and the view equals the whole decode's on both paths.
    #[test]
    fn a_view_from_the_file_reads_only_its_sections() {
        // 3 x 1 views of 70 x 64 pixels in patches of 1 x 1 views: 1120 patches per view,
        // four sections of 1024, every view across two of them.
        let c = {
            let mut c = crate::bitstream::tests::random_compressed(70, 64, 5);
            let one_view = c.codes.clone();
            c.size = [3, 1, 70, 64];
            (1..3).for_each(|_| c.codes.extend(one_view.clone()));
            c
        };
        let bytes = c.to_bytes().unwrap();
        let ctx = engine::testing::context();
        let gpu = crate::gpu::GpuCodec::new(ctx, &c.ensemble).unwrap().with_max_chunk(300);
        let source = ViewSource::open(&bytes).unwrap();
        for path in [CodecPath::Cpu, CodecPath::Gpu(&gpu)] {
            let (all, _) = decode_lightfield(&c, path).unwrap();
            for u in 0..3 {
                let (view, read) = source.decode_view(path, (u, 0)).unwrap();
                assert_eq!(read, SectionsRead { read: 2, total: 4 });
                assert_close(&view, all.view(u, 0), "view");
            }
        }
        // Damage the last section's frame: views 0 and 1 still decode, the file does not.
        let header = Header::parse(&bytes).unwrap();
        let mut bad = bytes.clone();
        bad[header.starts[4] + 9] ^= 0x40;
        assert!(Compressed::from_bytes(&bad).is_err());
        let (all, _) = decode_lightfield(&c, CodecPath::Cpu).unwrap();
        let source = ViewSource::open(&bad).unwrap();
        assert_close(&source.decode_view(CodecPath::Cpu, (1, 0)).unwrap().0, all.view(1, 0), "view 1");
        assert!(source.decode_view(CodecPath::Cpu, (2, 0)).is_err());
        engine::testing::assert_no_validation_messages();
    }
}
