//! The encode stage on the GPU (`encode.comp`, one workgroup per patch), the twin of
//! [`crate::cpu::encode`]: chunks of patches gathered by the host into a slot's staging,
//! uploaded on the transfer queue, encoded against every dictionary, its kept coefficients
//! packed into host memory (`encode_pack.comp`) and read back as codes, [`ENCODE_DEPTH`]
//! chunks in flight on `GpuCodec::ring`. Patches too large for shared
//! memory run `encode_global.comp` instead ([`super::PatchMemory::Global`]), whose patch
//! tensors live in a slot's `tensors` buffer (one region per patch of the chunk, as large
//! as the chunk's patches): the same codes.

use std::ops::Range;
use std::time::Instant;

use engine::stream::upload;
use engine::{Buffer, Location};

use kit::stats::ms_since;

use super::{add_times, GpuCodec, GpuTime, PatchMemory, DEPTH, ENCODE_DEPTH};
use crate::codes::{Codes, Limit, Params};
use crate::error::{LfError, Result};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct EncodePush {
    n_patches: u32,
    n_dicts: u32,
    sparsity: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct PackPush {
    n_patches: u32,
    sparsity: u32,
}

/// One chunk's buffers (two of these alternate), for up to `patches` patches of up to
/// `sparsity` coefficients.
pub(super) struct Slot {
    patches_cap: usize,
    sparsity: usize,
    staging_patches: Buffer<f32>,
    staging_limits: Buffer<Limit>,
    patches: Buffer<f32>,
    limits: Buffer<Limit>,
    info: Buffer<u32>,
    locations: Buffer<u32>,
    levels: Buffer<i32>,
    read_info: Buffer<u32>,
    /// The chunk's kept locations and levels, patch after patch (written by the pack pass).
    read_locations: Buffer<u32>,
    read_levels: Buffer<i32>,
    /// The patch tensors of `encode_global.comp` (none with the tensor in shared memory).
    tensors: Option<Buffer<f32>>,
}

impl GpuCodec {
    fn slot(&self, n: usize, sparsity: usize) -> Result<Slot> {
        let plen = self.ensemble.shape.len();
        let ctx = &self.ctx;
        Ok(Slot {
            patches_cap: n,
            sparsity,
            staging_patches: ctx.buffer(n * plen, Location::Upload, "patch staging")?,
            staging_limits: ctx.buffer(n, Location::Upload, "limit staging")?,
            patches: ctx.buffer(n * plen, Location::Device, "patches")?,
            limits: ctx.buffer(n, Location::Device, "patch limits")?,
            info: ctx.buffer(n * 4, Location::Device, "patch results")?,
            locations: ctx.buffer(n * sparsity, Location::Device, "coefficient locations")?,
            levels: ctx.buffer(n * sparsity, Location::Device, "coefficient levels")?,
            read_info: ctx.buffer(n * 4, Location::Download, "patch results readback")?,
            read_locations: ctx.buffer(n * sparsity, Location::Download, "location readback")?,
            read_levels: ctx.buffer(n * sparsity, Location::Download, "level readback")?,
            tensors: match self.memory {
                PatchMemory::Shared => None,
                PatchMemory::Global => Some(ctx.buffer(n * plen, Location::Device, "patch tensors")?),
            },
        })
    }

    /// Encodes `n` patches. `prepare(range, patches, limits)` fills one chunk's patches
    /// (patch-major) and limits; it runs on the CPU while the previous chunk is on the GPU.
    pub fn encode_stream(
        &self,
        n: usize,
        params: Params,
        prepare: impl FnMut(Range<usize>, &mut [f32], &mut [Limit]) -> Result<()>,
    ) -> Result<(Codes, GpuTime)> {
        let mut codes = Codes::default();
        let time = self.encode_chunks(n, params, prepare, |chunk| codes.extend(chunk))?;
        Ok((codes, time))
    }

    /// [`GpuCodec::encode_stream`], handing each chunk's codes to `deliver` in patch order
    /// as soon as the chunk is back from the GPU (while the next one is on it).
    pub fn encode_chunks(
        &self,
        n: usize,
        params: Params,
        mut prepare: impl FnMut(Range<usize>, &mut [f32], &mut [Limit]) -> Result<()>,
        mut deliver: impl FnMut(Codes),
    ) -> Result<GpuTime> {
        let plen = self.ensemble.shape.len();
        params.check(plen)?;
        let chunk = (self.chunk_len(plen.max(params.sparsity)) * DEPTH / ENCODE_DEPTH).clamp(1, n.max(1));
        let mut time = GpuTime::default();
        let mut prepare_ms = 0.0;
        let mut kept = self.encode_slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut spare: Vec<Slot> =
            kept.drain(..).filter(|s| s.patches_cap >= chunk && s.sparsity == params.sparsity).collect();
        let (wait_ms, slots) = GpuCodec::ring(
            ENCODE_DEPTH,
            // Equal chunks: ramped sizes (short first, halving last) measured slower on the
            // H200 (the gather of many small chunks).
            (0..n).step_by(chunk).map(|s| s..(s + chunk).min(n)),
            || spare.pop().map_or_else(|| self.slot(chunk, params.sparsity), Ok),
            |slot, range| {
                let len = range.len();
                let t0 = Instant::now();
                let (patches, limits) = (&mut slot.staging_patches, &mut slot.staging_limits);
                prepare(range, &mut patches.mapped_mut()?[..len * plen], &mut limits.mapped_mut()?[..len])?;
                prepare_ms += ms_since(t0);
                let uploads = [
                    upload(&self.ctx, &slot.staging_patches, &slot.patches, len * plen)?,
                    upload(&self.ctx, &slot.staging_limits, &slot.limits, len)?,
                ];
                let mut rec = self.ctx.recorder()?;
                rec.enable_profiling(3)?;
                uploads.iter().for_each(|u| rec.wait_for(u));
                let push = EncodePush {
                    n_patches: len as u32,
                    n_dicts: self.ensemble.k as u32,
                    sparsity: params.sparsity as u32,
                };
                let pass = rec
                    .pass(&self.encode)
                    .read(&slot.patches)
                    .read(&self.dicts)
                    .read(&slot.limits)
                    .write(&slot.info)
                    .write(&slot.locations)
                    .write(&slot.levels);
                let pass = match &slot.tensors {
                    Some(tensors) => pass.write(tensors),
                    None => pass,
                };
                pass.push(&push).dispatch_linear(len as u32)?;
                rec.mark("encode");
                let pack = PackPush { n_patches: len as u32, sparsity: params.sparsity as u32 };
                rec.pass(&self.pack)
                    .read(&slot.info)
                    .read(&slot.locations)
                    .read(&slot.levels)
                    .write(&slot.read_locations)
                    .write(&slot.read_levels)
                    .push(&pack)
                    .dispatch_linear(len as u32)?;
                rec.mark("pack");
                rec.copy_region(&slot.info, 0, &slot.read_info, 0, len * 4);
                rec.host_read(&slot.read_info);
                rec.host_read(&slot.read_locations);
                rec.host_read(&slot.read_levels);
                rec.mark("download");
                Ok(uploads.into_iter().chain([rec.submit()?]).collect())
            },
            |slot, range, passes| {
                add_times(&mut time, passes, "encode");
                deliver(collect(slot, range, params.sparsity, &mut time)?);
                Ok(())
            },
        )?;
        *kept = slots;
        time.host_wait_ms = wait_ms;
        time.host_prepare_ms = prepare_ms;
        Ok(time)
    }

    /// Encodes patch-major `patches` with one limit each.
    pub fn encode_patches(&self, patches: &[f32], limits: &[Limit], params: Params) -> Result<(Codes, GpuTime)> {
        let plen = self.ensemble.shape.len();
        self.encode_stream(limits.len(), params, |range, p, l| {
            p.copy_from_slice(&patches[range.start * plen..range.end * plen]);
            l.copy_from_slice(&limits[range]);
            Ok(())
        })
    }
}

/// One finished chunk's codes.
fn collect(slot: &Slot, range: Range<usize>, sparsity: usize, time: &mut GpuTime) -> Result<Codes> {
    let t0 = Instant::now();
    let info = slot.read_info.mapped()?;
    let locations = slot.read_locations.mapped()?;
    let levels = slot.read_levels.mapped()?;
    let n = range.len();
    let total: usize = (0..n).map(|p| (info[4 * p + 1] as usize).min(sparsity)).sum();
    let mut codes = Codes {
        membership: Vec::with_capacity(n),
        success: Vec::with_capacity(n),
        errors: Vec::with_capacity(n),
        offsets: Vec::with_capacity(n + 1),
        locations: Vec::with_capacity(total),
        levels: Vec::with_capacity(total),
    };
    codes.offsets.push(0);
    for p in 0..n {
        let [dict, count, success, err] = [info[4 * p], info[4 * p + 1], info[4 * p + 2], info[4 * p + 3]];
        let count = count as usize;
        if count > sparsity {
            return Err(LfError::EncoderCount { count, sparsity });
        }
        codes.membership.push(dict);
        codes.success.push(success != 0);
        codes.errors.push(f32::from_bits(err));
        let at = codes.locations.len();
        codes.locations.extend_from_slice(&locations[at..at + count]);
        codes.levels.extend_from_slice(&levels[at..at + count]);
        codes.offsets.push(at + count);
    }
    time.host_collect_ms += ms_since(t0);
    Ok(codes)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cpu::encode::encode_patches_cpu;
    use crate::dictionary::Ensemble;
    use crate::patch::PatchShape;
    use engine::testing;
    use rand::{Rng, SeedableRng};

    pub(in crate::gpu) const SHAPE: PatchShape = PatchShape { my: 5, mx: 5, mu: 4, mv: 4 };

    /// Patches whose GPU and CPU encodings are not identical. Each mismatch must be a float
    /// tie: both sides met the budget, or the errors agree to 1e-4 relative.
    pub(in crate::gpu) fn mismatches(a: &Codes, b: &Codes) -> usize {
        assert_eq!(a.len(), b.len());
        let mut n = 0;
        for p in 0..a.len() {
            let same = a.membership[p] == b.membership[p]
                && a.locations[a.offsets[p]..a.offsets[p + 1]] == b.locations[b.offsets[p]..b.offsets[p + 1]]
                && a.levels[a.offsets[p]..a.offsets[p + 1]] == b.levels[b.offsets[p]..b.offsets[p + 1]];
            if !same {
                n += 1;
                let tie = a.success[p] == b.success[p]
                    && (a.count(p) == b.count(p) || (a.errors[p] - b.errors[p]).abs() <= 1e-4 * a.errors[p].abs());
                assert!(tie, "patch {p}: GPU and CPU disagree beyond a float tie");
            }
        }
        n
    }

    /// `n` random patches of `shape`, patch-major, each around a random smooth base, so that
    /// some meet the budget and some fail.
    pub(in crate::gpu) fn random_patches(rng: &mut impl Rng, shape: PatchShape, n: usize) -> Vec<f32> {
        let mut patches = Vec::with_capacity(n * shape.len());
        for _ in 0..n {
            let base: f32 = rng.gen_range(0.2..0.8);
            let noise: f32 = rng.gen_range(0.0..0.2);
            patches.extend((0..shape.len()).map(|_| (base + noise * rng.gen_range(-1.0f32..1.0)).clamp(0.0, 1.0)));
        }
        patches
    }

    /// Encodes `patches` with `gpu` and with `chunked` (the same ensemble, streamed in small
    /// chunks) at two settings (T = 200 at epsilon 0.05, T = every sample at 0.02) and
    /// returns both settings' GPU and CPU codes, after checking that the two codecs agree
    /// exactly and, with `expect_success`, that some patch meets its budget with every
    /// coefficient allowed (a dense random ensemble on large patches never does: keeping
    /// every coefficient leaves about step^2 / 12 each, over the quarter budget).
    pub(in crate::gpu) fn encode_both(
        gpu: &GpuCodec,
        chunked: &GpuCodec,
        patches: &[f32],
        expect_success: bool,
    ) -> Vec<(Codes, Codes)> {
        let ens = gpu.ensemble();
        let (plen, mode_sum) = (ens.shape.len(), ens.shape.modes().iter().sum());
        let mut out = Vec::new();
        for params in [Params { sparsity: 200.min(plen), epsilon: 0.05 }, Params { sparsity: plen, epsilon: 0.02 }] {
            let limits: Vec<Limit> = patches
                .chunks(plen)
                .map(|p| {
                    Limit::new(params, plen, plen, p.iter().map(|&x| (x * x) as f64).sum::<f64>().sqrt(), mode_sum)
                })
                .collect();
            let cpu = encode_patches_cpu(patches, &limits, ens, params);
            let (got, _) = gpu.encode_patches(patches, &limits, params).unwrap();
            assert_eq!(chunked.encode_patches(patches, &limits, params).unwrap().0, got);
            let successes = cpu.success.iter().filter(|&&s| s).count();
            assert!(
                successes > 0 || params.sparsity < plen || !expect_success,
                "test data should meet the budget sometimes"
            );
            out.push((got, cpu));
        }
        out
    }

    /// `encode.comp` against [`encode_patches_cpu`] on random non-zero patches, at the
    /// tests' shape and at an awkward one (3 x 2 views of 7 x 3 pixels: 378 samples, not a
    /// multiple of the workgroup), whole and in chunks of 5: the same codes for every patch
    /// but at most one, and that one a float tie (both met the budget, or their squared
    /// errors agree to 1e-4 relative; see [`mismatches`]).
    #[test]
    fn gpu_encoder_matches_cpu_on_random_patches() {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let n = 37;
        for shape in [SHAPE, PatchShape { my: 7, mx: 3, mu: 3, mv: 2 }] {
            // Twelve dictionaries, so that failed patches see the pruned searches (a
            // dictionary proved unable to beat the best so far) many times.
            let ens = Ensemble::random(shape, 12, 5);
            let gpu = GpuCodec::new(ctx, &ens).unwrap();
            assert_eq!(gpu.patch_memory(), PatchMemory::Shared);
            let patches = random_patches(&mut rng, shape, n);
            // The second codec streams the patches in chunks of 5 (two in flight).
            let chunked = GpuCodec::new(ctx, &ens).unwrap().with_max_chunk(5);
            for (got, cpu) in encode_both(&gpu, &chunked, &patches, true) {
                let bad = mismatches(&got, &cpu);
                assert!(bad <= 1, "{shape}: {bad} of {n} patches differ");
            }
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn exact_ties_are_broken_alike_on_gpu_and_cpu() {
        let ctx = testing::context();
        // Identity matrices make the coefficients the samples themselves, so repeated sample
        // values tie exactly.
        let mut ens = Ensemble::random(SHAPE, 1, 3);
        let (offsets, dlen) = crate::dictionary::mode_offsets(SHAPE);
        for (n, m) in SHAPE.modes().into_iter().enumerate() {
            let mats = &mut ens.mats[offsets[n]..offsets[n] + m * m];
            mats.iter_mut().enumerate().for_each(|(i, x)| *x = if i % (m + 1) == 0 { 1.0 } else { 0.0 });
        }
        assert_eq!(ens.mats.len(), dlen);
        let levels = [0.25f32, 0.5, 0.75, 0.3125];
        let mut patches: Vec<f32> =
            (0..3 * SHAPE.len()).map(|i| levels[(i * 7 / 5) % 4] * ((i / 1200) as f32 + 1.0) / 3.0).collect();
        // Ten larger samples at the end of each patch: kept above the tie group, and after it
        // in location order, so keeping one tie too many would push one of them out.
        for p in 0..3 {
            patches[(p + 1) * SHAPE.len() - 10..(p + 1) * SHAPE.len()].fill(0.95);
        }
        let params = Params { sparsity: 50, epsilon: 0.001 };
        let limits: Vec<Limit> = (0..3).map(|_| Limit::new(params, SHAPE.len(), SHAPE.len(), 1.0, 29)).collect();
        let gpu = GpuCodec::new(ctx, &ens).unwrap();
        let cpu = encode_patches_cpu(&patches, &limits, &ens, params);
        let (got, _) = gpu.encode_patches(&patches, &limits, params).unwrap();
        assert_eq!(got.membership, cpu.membership);
        assert_eq!(got.locations, cpu.locations);
        assert_eq!(got.levels, cpu.levels);
        for p in 0..3 {
            assert!(!cpu.success[p]);
            assert_eq!(cpu.count(p), params.sparsity, "a failed patch keeps exactly T coefficients");
        }
        testing::assert_no_validation_messages();
    }
}
