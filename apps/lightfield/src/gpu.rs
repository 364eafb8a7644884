//! The GPU encoder and decoder (Vulkan, `shaders/lightfield/`): pipelines specialised to an
//! ensemble's patch shape, the ensemble resident on the device, and patches streamed through
//! in chunks of thousands (one submission each, two chunks in flight: the CPU gathers the
//! next chunk into host-visible staging while the GPU encodes the current one).

use std::ops::Range;
use std::time::Instant;

use engine::{Buffer, ComputePipeline, Context, Location, PipelineDesc};

use crate::dictionary::{mode_offsets, Ensemble};
use crate::encoder::{Codes, Limit, Params};
use crate::error::{LfError, Result};

/// One workgroup encodes one patch with this many subgroups, within WORKGROUP_RANGE
/// invocations: on the H100 (subgroup 32) 512 invocations measured 165 ms for the Table 1
/// encode against 253 ms at 256 and 219 ms at 1024 (fewer registers per invocation, more
/// patches resident per SM, without the longer reductions of 1024).
const WORKGROUP_SUBGROUPS: u32 = 16;
const WORKGROUP_RANGE: (u32, u32) = (256, 512);
/// Most patches per chunk: 4096 paper-size patches are 79 MiB of host-visible staging per
/// slot, small enough for a device's host-visible device-local (BAR) heap, and still
/// thousands of workgroups per submission.
const MAX_CHUNK: usize = 4096;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct EncodePush {
    n_patches: u32,
    n_dicts: u32,
    sparsity: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct DecodePush {
    n_patches: u32,
}

/// Push constants of `decode_views.comp`.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ViewsPush {
    pub n_patches: u32,
    pub first: u32,
    pub size: [u32; 4],
    pub count_v: u32,
    pub count_y: u32,
    pub count_x: u32,
}

/// GPU milliseconds of an encode or decode, from timestamps.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct GpuTime {
    /// The encode or decode kernel alone.
    pub kernel_ms: f64,
    /// Kernel plus the uploads and downloads around it.
    pub total_ms: f64,
    /// Host wall time gathering patches into staging (encode) or scattering decoded ones.
    pub host_prepare_ms: f64,
    /// Host wall time blocked on the GPU.
    pub host_wait_ms: f64,
    /// Host wall time turning read-back results into codes.
    pub host_collect_ms: f64,
    /// Host wall time writing decode inputs into staging.
    pub host_stage_ms: f64,
}

/// Pipelines and device-resident dictionaries for one ensemble.
pub struct GpuCodec {
    ctx: Context,
    ensemble: Ensemble,
    encode: ComputePipeline,
    decode: ComputePipeline,
    decode_views: ComputePipeline,
    dicts: Buffer<f32>,
    max_chunk: usize,
    workgroup: u32,
}

/// One chunk's buffers (two of these alternate).
struct Slot {
    staging_patches: Buffer<f32>,
    staging_limits: Buffer<Limit>,
    patches: Buffer<f32>,
    limits: Buffer<Limit>,
    info: Buffer<u32>,
    locations: Buffer<u32>,
    levels: Buffer<i32>,
    read_info: Buffer<u32>,
    read_locations: Buffer<u32>,
    read_levels: Buffer<i32>,
}

impl GpuCodec {
    pub fn new(ctx: &Context, ensemble: &Ensemble) -> Result<GpuCodec> {
        let workgroup = (WORKGROUP_SUBGROUPS * ctx.info().subgroup_size).clamp(WORKGROUP_RANGE.0, WORKGROUP_RANGE.1);
        GpuCodec::with_workgroup(ctx, ensemble, workgroup)
    }

    /// Like [`GpuCodec::new`] with at most `workgroup` invocations per patch (the benchmark
    /// sweeps this; the choices are the same up to float ties of the reductions' order).
    pub fn with_workgroup(ctx: &Context, ensemble: &Ensemble, workgroup: u32) -> Result<GpuCodec> {
        let info = ctx.info();
        let shape = ensemble.shape;
        let plen = shape.len();
        let (_, dlen) = mode_offsets(shape);
        let workgroup = workgroup.max(1).min(info.max_workgroup_invocations).min(info.max_workgroup_size[0]);
        if workgroup / info.subgroup_size.max(1) > 64 {
            return Err(LfError::Engine(engine::EngineError::Unsupported(format!(
                "subgroup size {} gives more than 64 subgroups per workgroup",
                info.subgroup_size
            ))));
        }
        // X, Mats, four reduction arrays of 2 x 64, two compaction count arrays of 64.
        let shared = 4 * (plen + dlen + 4 * 128 + 2 * 64);
        if shared > info.max_shared_memory_bytes as usize {
            return Err(LfError::Invalid(format!(
                "patch {shape} needs {shared} bytes of shared memory; the device has {}",
                info.max_shared_memory_bytes
            )));
        }
        let m = shape.modes();
        let spec = [
            workgroup,
            plen.div_ceil(workgroup as usize) as u32,
            plen as u32,
            dlen as u32,
            m[0] as u32,
            m[1] as u32,
            m[2] as u32,
            m[3] as u32,
            m[4] as u32,
        ];
        let encode = ctx.compute_pipeline(&PipelineDesc {
            name: "lightfield_encode",
            spirv: crate::shaders::ENCODE,
            bindings: 6,
            push_bytes: std::mem::size_of::<EncodePush>() as u32,
            spec: &spec,
        })?;
        let decode = ctx.compute_pipeline(&PipelineDesc {
            name: "lightfield_decode",
            spirv: crate::shaders::DECODE,
            bindings: 7,
            push_bytes: std::mem::size_of::<DecodePush>() as u32,
            spec: &spec,
        })?;
        let decode_views = ctx.compute_pipeline(&PipelineDesc {
            name: "lightfield_decode_views",
            spirv: crate::shaders::DECODE_VIEWS,
            bindings: 8,
            push_bytes: std::mem::size_of::<ViewsPush>() as u32,
            spec: &spec,
        })?;
        let dicts = ctx.upload(&ensemble.mats, "dictionary ensemble")?;
        Ok(GpuCodec {
            ctx: ctx.clone(),
            ensemble: ensemble.clone(),
            encode,
            decode,
            decode_views,
            dicts,
            max_chunk: MAX_CHUNK,
            workgroup,
        })
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The kernel that decodes into the light field, and the device-resident ensemble.
    pub(crate) fn views_kernel(&self) -> (&ComputePipeline, &Buffer<f32>) {
        (&self.decode_views, &self.dicts)
    }

    /// Invocations per workgroup (one workgroup per patch).
    pub fn workgroup(&self) -> u32 {
        self.workgroup
    }

    /// The ensemble these pipelines and device buffers were made for.
    pub fn ensemble(&self) -> &Ensemble {
        &self.ensemble
    }

    /// Caps the patches per submission (tests use tiny chunks to exercise the streaming).
    pub fn with_max_chunk(mut self, patches: usize) -> GpuCodec {
        self.max_chunk = patches.clamp(1, MAX_CHUNK);
        self
    }

    /// Patches per chunk: within the device's largest storage binding and the chunk cap.
    fn chunk_len(&self, per_patch_floats: usize) -> usize {
        let range = self.ctx.info().max_storage_buffer_range as usize;
        (range / (4 * per_patch_floats.max(1))).clamp(1, self.max_chunk)
    }

    fn slot(&self, n: usize, sparsity: usize) -> Result<Slot> {
        let plen = self.ensemble.shape.len();
        let ctx = &self.ctx;
        Ok(Slot {
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
        })
    }

    /// Encodes `n` patches. `prepare(range, patches, limits)` fills one chunk's patches
    /// (patch-major) and limits; it runs on the CPU while the previous chunk is on the GPU.
    pub fn encode_stream(
        &self,
        n: usize,
        params: Params,
        prepare: impl FnMut(Range<usize>, &mut [f32], &mut [Limit]),
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
        mut prepare: impl FnMut(Range<usize>, &mut [f32], &mut [Limit]),
        mut deliver: impl FnMut(Codes),
    ) -> Result<GpuTime> {
        let plen = self.ensemble.shape.len();
        params.check(plen)?;
        let chunk = self.chunk_len(plen.max(params.sparsity)).min(n.max(1));
        let mut slots = [self.slot(chunk, params.sparsity)?, self.slot(chunk, params.sparsity)?];
        let mut time = GpuTime::default();
        let mut pending: Option<(usize, Range<usize>, engine::Submission)> = None;
        let ranges: Vec<Range<usize>> = (0..n).step_by(chunk).map(|s| s..(s + chunk).min(n)).collect();
        for (i, range) in ranges.into_iter().enumerate() {
            let slot = &mut slots[i % 2];
            let len = range.len();
            {
                let t0 = Instant::now();
                let (patches, limits) = (&mut slot.staging_patches, &mut slot.staging_limits);
                prepare(range.clone(), &mut patches.mapped_mut()?[..len * plen], &mut limits.mapped_mut()?[..len]);
                time.host_prepare_ms += ms_since(t0);
            }
            let mut rec = self.ctx.recorder()?;
            rec.enable_profiling(4)?;
            rec.copy_region(&slot.staging_patches, 0, &slot.patches, 0, len * plen);
            rec.copy_region(&slot.staging_limits, 0, &slot.limits, 0, len);
            rec.barrier();
            rec.mark("upload");
            let push =
                EncodePush { n_patches: len as u32, n_dicts: self.ensemble.k as u32, sparsity: params.sparsity as u32 };
            let bindings = [
                slot.patches.binding(),
                self.dicts.binding(),
                slot.limits.binding(),
                slot.info.binding(),
                slot.locations.binding(),
                slot.levels.binding(),
            ];
            rec.dispatch_linear(&self.encode, &bindings, &push, len as u32);
            rec.barrier();
            rec.mark("encode");
            rec.copy_region(&slot.info, 0, &slot.read_info, 0, len * 4);
            rec.copy_region(&slot.locations, 0, &slot.read_locations, 0, len * params.sparsity);
            rec.copy_region(&slot.levels, 0, &slot.read_levels, 0, len * params.sparsity);
            rec.mark("download");
            let submission = rec.submit()?;
            if let Some((s, r, sub)) = pending.take() {
                deliver(collect(&slots[s], r, sub, params.sparsity, &mut time)?);
            }
            pending = Some((i % 2, range, submission));
        }
        if let Some((s, r, sub)) = pending.take() {
            deliver(collect(&slots[s], r, sub, params.sparsity, &mut time)?);
        }
        Ok(time)
    }

    /// Encodes patch-major `patches` with one limit each.
    pub fn encode_patches(&self, patches: &[f32], limits: &[Limit], params: Params) -> Result<(Codes, GpuTime)> {
        let plen = self.ensemble.shape.len();
        self.encode_stream(limits.len(), params, |range, p, l| {
            p.copy_from_slice(&patches[range.start * plen..range.end * plen]);
            l.copy_from_slice(&limits[range]);
        })
    }

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
    /// quantisation step, indexed over all patches), calling `consume(range, samples)`
    /// chunk by chunk.
    ///
    /// Two chunks are in flight: each chunk's inputs are written into its slot's one
    /// staging buffer and go up, through the kernel and back in one submission, and the
    /// host consumes chunk i while the GPU decodes chunk i + 1. The slots are allocated once.
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
        let mut slots = [self.decode_slot(chunk, most)?, self.decode_slot(chunk, most)?];
        let mut time = GpuTime::default();
        let mut pending: Option<(usize, Range<usize>, engine::Submission)> = None;
        for (i, range) in ranges.into_iter().enumerate() {
            let slot = &mut slots[i % 2];
            let t0 = Instant::now();
            let sections = slot.stage(codes, steps, range.clone())?;
            time.host_stage_ms += ms_since(t0);
            let mut rec = self.ctx.recorder()?;
            rec.enable_profiling(4)?;
            for (dst, (start, len)) in slot.inputs.iter().zip(sections) {
                rec.copy_region(&slot.staging, start, dst, 0, len);
            }
            rec.barrier();
            rec.mark("upload");
            let [membership, offsets, locations, levels, chunk_steps] = &slot.inputs;
            let bindings = [
                self.dicts.binding(),
                membership.binding(),
                offsets.binding(),
                locations.binding(),
                levels.binding(),
                chunk_steps.binding(),
                slot.out.binding(),
            ];
            let push = DecodePush { n_patches: range.len() as u32 };
            rec.dispatch_linear(&self.decode, &bindings, &push, range.len() as u32);
            rec.barrier();
            rec.mark("decode");
            rec.copy_region(&slot.out, 0, &slot.read, 0, range.len() * plen);
            rec.mark("download");
            let submission = rec.submit()?;
            if let Some((s, r, sub)) = pending.take() {
                finish_decode(&slots[s], r, sub, plen, &mut time, &mut consume)?;
            }
            pending = Some((i % 2, range, submission));
        }
        if let Some((s, r, sub)) = pending.take() {
            finish_decode(&slots[s], r, sub, plen, &mut time, &mut consume)?;
        }
        Ok(time)
    }

    /// Buffers for a decode chunk of up to `n` patches and `coefficients` coefficients.
    fn decode_slot(&self, n: usize, coefficients: usize) -> Result<DecodeSlot> {
        let ctx = &self.ctx;
        let plen = self.ensemble.shape.len();
        // Zero-length buffers are not allowed; a chunk may hold no coefficient at all.
        let coefficients = coefficients.max(1);
        let lens = [n, n + 1, coefficients, coefficients, n];
        let names = ["membership", "coefficient offsets", "coefficient locations", "coefficient levels", "steps"];
        let mut inputs = Vec::with_capacity(lens.len());
        for (len, name) in lens.iter().zip(names) {
            inputs.push(ctx.buffer::<u32>(*len, Location::Device, name)?);
        }
        Ok(DecodeSlot {
            staging: ctx.buffer(lens.iter().sum(), Location::Upload, "decode staging")?,
            inputs: inputs.try_into().unwrap_or_else(|_| unreachable!("five inputs")),
            out: ctx.buffer(n * plen, Location::Device, "decoded patches")?,
            read: ctx.buffer(n * plen, Location::Download, "decoded readback")?,
        })
    }
}

/// One decode chunk's buffers (two of these alternate). The kernel's inputs (membership,
/// offsets, locations, levels, steps) are 32-bit words, staged back to back in `staging`.
struct DecodeSlot {
    staging: Buffer<u32>,
    inputs: [Buffer<u32>; 5],
    out: Buffer<f32>,
    read: Buffer<f32>,
}

impl DecodeSlot {
    /// Writes patches `range`'s inputs into the staging buffer; returns each input's
    /// (start, length) there.
    fn stage(&mut self, codes: &Codes, steps: &[f32], range: Range<usize>) -> Result<[(usize, usize); 5]> {
        let (c0, c1) = (codes.offsets[range.start], codes.offsets[range.end]);
        let lens = [range.len(), range.len() + 1, c1 - c0, c1 - c0, range.len()];
        let mut sections = [(0, 0); 5];
        let mut at = 0;
        for (s, len) in sections.iter_mut().zip(lens) {
            *s = (at, len);
            at += len;
        }
        let words = &mut self.staging.mapped_mut()?[..at];
        let (membership, rest) = words.split_at_mut(lens[0]);
        let (offsets, rest) = rest.split_at_mut(lens[1]);
        let (locations, rest) = rest.split_at_mut(lens[2]);
        let (levels, chunk_steps) = rest.split_at_mut(lens[3]);
        membership.copy_from_slice(&codes.membership[range.clone()]);
        for (o, &c) in offsets.iter_mut().zip(&codes.offsets[range.start..=range.end]) {
            *o = (c - c0) as u32;
        }
        locations.copy_from_slice(&codes.locations[c0..c1]);
        levels.copy_from_slice(bytemuck::cast_slice(&codes.levels[c0..c1]));
        chunk_steps.copy_from_slice(bytemuck::cast_slice(&steps[range]));
        Ok(sections)
    }
}

/// Waits for one decode chunk and hands its samples to `consume`.
fn finish_decode(
    slot: &DecodeSlot,
    range: Range<usize>,
    submission: engine::Submission,
    plen: usize,
    time: &mut GpuTime,
    consume: &mut impl FnMut(Range<usize>, &[f32]),
) -> Result<()> {
    let t0 = Instant::now();
    add_times(time, &submission.wait_profiled()?, "decode");
    time.host_wait_ms += ms_since(t0);
    let t0 = Instant::now();
    let len = range.len() * plen;
    consume(range, &slot.read.mapped()?[..len]);
    time.host_prepare_ms += ms_since(t0);
    Ok(())
}

fn add_times(time: &mut GpuTime, passes: &[engine::PassTime], kernel: &str) {
    for p in passes {
        time.total_ms += p.ms;
        if p.name == kernel {
            time.kernel_ms += p.ms;
        }
    }
}

/// Waits for one chunk and returns its codes.
fn collect(
    slot: &Slot,
    range: Range<usize>,
    submission: engine::Submission,
    sparsity: usize,
    time: &mut GpuTime,
) -> Result<Codes> {
    let t0 = Instant::now();
    add_times(time, &submission.wait_profiled()?, "encode");
    time.host_wait_ms += ms_since(t0);
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
            return Err(LfError::Invalid(format!(
                "GPU encoder returned {count} coefficients for a patch (cap {sparsity})"
            )));
        }
        codes.membership.push(dict);
        codes.success.push(success != 0);
        codes.errors.push(f32::from_bits(err));
        codes.locations.extend_from_slice(&locations[p * sparsity..p * sparsity + count]);
        codes.levels.extend_from_slice(&levels[p * sparsity..p * sparsity + count]);
        codes.offsets.push(codes.locations.len());
    }
    time.host_collect_ms += ms_since(t0);
    Ok(codes)
}

fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_lightfield, encode_lightfield, CodecPath};
    use crate::encoder::encode_patches_cpu;
    use crate::patch::PatchShape;
    use engine::testing;
    use rand::{Rng, SeedableRng};

    const SHAPE: PatchShape = PatchShape { my: 5, mx: 5, mu: 4, mv: 4 };

    /// Patches whose GPU and CPU encodings are not identical. Each mismatch must be a float
    /// tie: both sides met the budget, or the errors agree to 1e-4 relative.
    fn mismatches(a: &Codes, b: &Codes) -> usize {
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

    #[test]
    fn gpu_encoder_matches_cpu_on_random_patches() {
        let ctx = testing::context();
        let ens = Ensemble::random(SHAPE, 3, 5);
        let gpu = GpuCodec::new(ctx, &ens).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let n = 37;
        // Random patches around a random smooth base, so some meet the budget and some fail.
        let mut patches = Vec::new();
        for _ in 0..n {
            let base: f32 = rng.gen_range(0.2..0.8);
            let noise: f32 = rng.gen_range(0.0..0.2);
            patches.extend((0..SHAPE.len()).map(|_| (base + noise * rng.gen_range(-1.0f32..1.0)).clamp(0.0, 1.0)));
        }
        // The second codec streams the patches in chunks of 5 (two in flight).
        let chunked = GpuCodec::new(ctx, &ens).unwrap().with_max_chunk(5);
        for params in [Params { sparsity: 200, epsilon: 0.05 }, Params { sparsity: SHAPE.len(), epsilon: 0.02 }] {
            let limits: Vec<Limit> = patches
                .chunks(SHAPE.len())
                .map(|p| {
                    Limit::new(
                        params,
                        SHAPE.len(),
                        SHAPE.len(),
                        p.iter().map(|&x| (x * x) as f64).sum::<f64>().sqrt(),
                        29,
                    )
                })
                .collect();
            let cpu = encode_patches_cpu(&patches, &limits, &ens, params);
            let (got, _) = gpu.encode_patches(&patches, &limits, params).unwrap();
            let bad = mismatches(&got, &cpu);
            assert!(bad <= 1, "{bad} of {n} patches differ ({params:?})");
            assert_eq!(chunked.encode_patches(&patches, &limits, params).unwrap().0, got);
            let successes = cpu.success.iter().filter(|&&s| s).count();
            assert!(successes > 0 || params.sparsity < SHAPE.len(), "test data should meet the budget sometimes");
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

    #[test]
    fn gpu_matches_cpu_on_a_synthetic_light_field_and_decodes_alike() {
        let ctx = testing::context();
        // 5 x 3 views of 22 x 17 pixels: padding along every axis.
        let lf = crate::synth::generate((5, 3), (22, 17), 3);
        let ens = Ensemble::random(SHAPE, 4, 8);
        let gpu = GpuCodec::new(ctx, &ens).unwrap();
        let mut got = None;
        for params in [Params { sparsity: 400, epsilon: 0.02 }, Params { sparsity: 1200, epsilon: 0.01 }] {
            let (cpu, _) = encode_lightfield(&lf, &ens, params, CodecPath::Cpu).unwrap();
            let (gpu_codes, time) = encode_lightfield(&lf, &ens, params, CodecPath::Gpu(&gpu)).unwrap();
            assert!(time.is_some());
            assert!(mismatches(&gpu_codes.codes, &cpu.codes) <= 1);
            got = Some(gpu_codes);
        }
        let got = got.unwrap();
        let (a, _) = decode_lightfield(&got, CodecPath::Gpu(&gpu)).unwrap();
        let chunked = GpuCodec::new(ctx, &ens).unwrap().with_max_chunk(4);
        assert_eq!(decode_lightfield(&got, CodecPath::Gpu(&chunked)).unwrap().0, a);
        let (b, _) = decode_lightfield(&got, CodecPath::Cpu).unwrap();
        let worst = a.data.iter().zip(&b.data).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
        assert!(worst < 1e-5, "GPU and CPU decoders differ by {worst}");
        testing::assert_no_validation_messages();
    }
}
