//! The decode stage on the GPU (`decode.comp`, one workgroup per patch), the twin of
//! [`crate::cpu::decode`]: each chunk's codes written by the host into a slot's staging as
//! the kernel reads them (`Layout`), uploaded on the transfer queue in one copy,
//! synthesised and read back, two chunks in flight on `GpuCodec::ring`.

pub mod device;

use std::ops::Range;
use std::time::Instant;

use engine::stream::upload;
use engine::{Buffer, Location};

use crate::codes::Codes;
use crate::error::Result;
use kit::stats::ms_since;

use crate::gpu::{add_times, GpuCodec, GpuTime};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct DecodePush {
    n_patches: u32,
}

impl GpuCodec {
    /// Decodes every patch of `codes` (quantisation step `steps[p]`) into patch-major
    /// samples, calling `consume(range, samples)` chunk by chunk.
    pub fn decode_stream(
        &self,
        codes: &Codes,
        steps: &[f32],
        consume: impl FnMut(Range<usize>, &[f32]),
    ) -> Result<GpuTime> {
        self.decode_range(codes, 0..codes.len(), steps, consume)
    }

    /// Decodes patches `patches` of `codes` only (random access; `steps[p]` is patch p's
    /// quantisation step, indexed like `codes`), calling `consume(range, samples)` chunk by
    /// chunk, in order. Chunks go through the ring (`GpuCodec::ring`): each chunk's
    /// inputs are written into its slot's staging buffer as the kernel reads them, go up
    /// on the transfer queue in one copy, then through the kernel and back.
    pub fn decode_range(
        &self,
        codes: &Codes,
        patches: Range<usize>,
        steps: &[f32],
        mut consume: impl FnMut(Range<usize>, &[f32]),
    ) -> Result<GpuTime> {
        let plen = self.ensemble.shape.len();
        let n = patches.end.min(codes.len());
        let chunk = self.chunk_len(plen).min(patches.len().max(1));
        let ranges: Vec<Range<usize>> = (patches.start..n).step_by(chunk).map(|s| s..(s + chunk).min(n)).collect();
        let most = ranges.iter().map(|r| codes.offsets[r.end] - codes.offsets[r.start]).max().unwrap_or(0);
        let align = self.ctx.info().offset_alignment_words();
        let words = Layout::new(chunk, most, align).words;
        let mut time = GpuTime::default();
        let (mut stage_ms, mut scatter_ms) = (0.0, 0.0);
        (time.host_wait_ms, _) = GpuCodec::ring(
            super::DEPTH,
            ranges.into_iter(),
            || self.decode_slot(chunk, words),
            |slot, range| {
                let t0 = Instant::now();
                let c = codes.offsets[range.end] - codes.offsets[range.start];
                let layout = Layout::new(range.len(), c, align);
                stage(&mut slot.staging.mapped_mut()?[..layout.words], layout, codes, steps, range.clone());
                stage_ms += ms_since(t0);
                let copy = upload(&self.ctx, &slot.staging, &slot.inputs, layout.words)?;
                let mut rec = self.ctx.recorder()?;
                rec.enable_profiling(3)?;
                rec.wait_for(&copy);
                layout
                    .read_parts(rec.pass(&self.decode).read(&self.dicts), &slot.inputs, 0)
                    .write(&slot.out)
                    .push(&DecodePush { n_patches: range.len() as u32 })
                    .dispatch_linear(range.len() as u32)?;
                rec.mark("decode");
                rec.copy_region(&slot.out, 0, &slot.read, 0, range.len() * plen);
                rec.host_read(&slot.read);
                rec.mark("download");
                Ok(vec![copy, rec.submit()?])
            },
            |slot, range, passes| {
                add_times(&mut time, passes, "decode");
                let t0 = Instant::now();
                let len = range.len() * plen;
                consume(range, &slot.read.mapped()?[..len]);
                scatter_ms += ms_since(t0);
                Ok(())
            },
        )?;
        time.host_stage_ms = stage_ms;
        time.host_prepare_ms = scatter_ms;
        Ok(time)
    }

    /// Buffers for a decode chunk of up to `n` patches whose inputs take `words`.
    fn decode_slot(&self, n: usize, words: usize) -> Result<DecodeSlot> {
        let ctx = &self.ctx;
        let plen = self.ensemble.shape.len();
        Ok(DecodeSlot {
            staging: ctx.buffer(words, Location::Upload, "decode staging")?,
            inputs: ctx.buffer(words, Location::Device, "decode inputs")?,
            out: ctx.buffer(n * plen, Location::Device, "decoded patches")?,
            read: ctx.buffer(n * plen, Location::Download, "decoded readback")?,
        })
    }
}

/// One decode chunk's buffers: the kernel's inputs (32-bit words laid out by [`Layout`])
/// staged, then on the device; the decoded patches, then read back.
struct DecodeSlot {
    staging: Buffer<u32>,
    inputs: Buffer<u32>,
    out: Buffer<f32>,
    read: Buffer<f32>,
}

/// Writes patches `range`'s decode inputs into `words` (laid out by `layout`).
fn stage(words: &mut [u32], layout: Layout, codes: &Codes, steps: &[f32], range: Range<usize>) {
    let (c0, c1) = (codes.offsets[range.start], codes.offsets[range.end]);
    let [membership, offsets, locations, levels, chunk_steps] = layout.parts.map(|(start, len)| start..start + len);
    words[membership].copy_from_slice(&codes.membership[range.clone()]);
    for (o, &c) in words[offsets].iter_mut().zip(&codes.offsets[range.start..=range.end]) {
        *o = (c - c0) as u32;
    }
    words[locations].copy_from_slice(&codes.locations[c0..c1]);
    words[levels].copy_from_slice(bytemuck::cast_slice(&codes.levels[c0..c1]));
    words[chunk_steps].copy_from_slice(bytemuck::cast_slice(&steps[range]));
}

/// Words of one chunk's or section's decode inputs, each starting at a storage-buffer
/// offset alignment: membership, offsets, locations, levels, steps.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub parts: [(usize, usize); 5],
    pub words: usize,
}

impl Layout {
    pub fn new(patches: usize, coefficients: usize, align: usize) -> Layout {
        let lens = [patches, patches + 1, coefficients, coefficients, patches];
        let mut parts = [(0, 0); 5];
        let mut at = 0;
        for (part, len) in parts.iter_mut().zip(lens) {
            *part = (at, len);
            // At least one word each, so that an empty part still binds inside the buffer.
            at += len.max(1).div_ceil(align) * align;
        }
        Layout { parts, words: at }
    }

    /// `pass` reading the five inputs of a buffer laid out by `self` from word `base`, in
    /// the order both decode kernels bind them.
    pub fn read_parts<'r, P: bytemuck::NoUninit>(
        &self,
        pass: engine::Pass<'r, P>,
        buffer: &Buffer<u32>,
        base: usize,
    ) -> engine::Pass<'r, P> {
        self.parts.iter().fold(pass, |pass, &(start, len)| pass.read(&buffer.range(base + start, len.max(1))))
    }
}

#[cfg(test)]
pub(in crate::gpu) mod tests {
    use super::*;
    use crate::cpu::decode::decode_patches_cpu;
    use crate::dictionary::Ensemble;
    use crate::patch::PatchShape;
    use engine::testing;
    use rand::{Rng, SeedableRng};

    /// Random codes of `n` patches of `shape` against `k` dictionaries: 1 to 40 coefficients
    /// each at distinct ascending locations, every level non-zero.
    pub(in crate::gpu) fn random_codes(shape: PatchShape, k: u32, n: usize, seed: u64) -> Codes {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut codes = Codes { offsets: vec![0], ..Default::default() };
        for _ in 0..n {
            let count = rng.gen_range(1..=40);
            let mut locations = rand::seq::index::sample(&mut rng, shape.len(), count).into_vec();
            locations.sort_unstable();
            codes.membership.push(rng.gen_range(0..k));
            codes.locations.extend(locations.iter().map(|&l| l as u32));
            codes.levels.extend((0..count).map(|_| rng.gen_range(1..200) * if rng.gen() { 1 } else { -1 }));
            codes.offsets.push(codes.locations.len());
            codes.success.push(true);
            codes.errors.push(0.0);
        }
        codes
    }

    /// Decodes random codes of 29 patches of `ens` (three dictionaries) with `whole` and
    /// `chunked` (the same ensemble in chunks of 4) over the whole set and over ranges
    /// (random access), and compares each with [`decode_patches_cpu`]: every sample within
    /// 1e-5 of its patch's largest magnitude (the f32 mode products summed in another order).
    pub(in crate::gpu) fn check_decode_against_cpu(whole: &GpuCodec, chunked: &GpuCodec) {
        let ens = whole.ensemble();
        let (shape, n) = (ens.shape, 29);
        let codes = random_codes(shape, ens.k as u32, n, 5);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let steps: Vec<f32> = (0..n).map(|_| rng.gen_range(0.003..0.05)).collect();
        let plen = shape.len();
        for (gpu, range) in [(whole, 0..n), (whole, 7..23), (chunked, 0..n), (chunked, 3..n)] {
            let mut got = vec![0f32; range.len() * plen];
            let mut next = range.start;
            gpu.decode_range(&codes, range.clone(), &steps, |r, samples| {
                assert_eq!(r.start, next, "chunks in order");
                next = r.end;
                let at = (r.start - range.start) * plen;
                got[at..at + samples.len()].copy_from_slice(samples);
            })
            .unwrap();
            assert_eq!(next, range.end);
            let want = decode_patches_cpu(&codes, ens, &steps[range.clone()], range.clone());
            for (p, (a, b)) in got.chunks(plen).zip(want.chunks(plen)).enumerate() {
                let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
                assert!(scale > 0.0, "patch {p} decodes to zeros");
                let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max) / scale;
                assert!(worst <= 1e-5, "patch {} of {range:?}: {worst:.1e} relative", range.start + p);
            }
        }
    }

    /// `decode.comp` against [`decode_patches_cpu`] on random codes at an awkward patch shape
    /// (3 x 2 views of 5 x 3 pixels); see [`check_decode_against_cpu`].
    #[test]
    fn the_decode_kernel_matches_its_cpu_twin_on_random_codes() {
        let ctx = testing::context();
        let ens = Ensemble::random(PatchShape { my: 5, mx: 3, mu: 3, mv: 2 }, 3, 11);
        let whole = GpuCodec::new(ctx, &ens).unwrap();
        let chunked = GpuCodec::new(ctx, &ens).unwrap().with_max_chunk(4);
        check_decode_against_cpu(&whole, &chunked);
        testing::assert_no_validation_messages();
    }
}
