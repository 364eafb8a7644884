//! The GPU encoder and decoder (Vulkan, `shaders/lightfield/`): pipelines specialised to an
//! ensemble's patch shape, the ensemble resident on the device, and patches streamed through
//! in chunks of thousands on the engine's ring ([`engine::stream::Stream`], two chunks in
//! flight): the CPU gathers chunk i+1 into host-visible staging and the transfer queue
//! uploads it while the GPU encodes chunk i.

pub mod train;

use std::ops::Range;
use std::time::Instant;

use engine::stream::{upload, Done, Stream};
use engine::{Buffer, ComputePipeline, Context, Location, PassTime, Submission};

use crate::dictionary::{mode_offsets, Ensemble};
use crate::codes::{Codes, Limit, Params};
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
/// Chunks in flight: one on the GPU while the host prepares the next.
const DEPTH: usize = 2;

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
    /// Kernel plus the downloads after it (the uploads run on the transfer queue beside
    /// earlier chunks' kernels, untimed).
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
    /// Buffers kept from one decode to device memory for the next ([`crate::device`]).
    pub(crate) scratch: std::sync::Mutex<DecodeScratch>,
    /// The encode's chunk slots, kept for the next encode: allocating and first touching
    /// two slots' staging and readback memory (about 150 MiB at the paper's size) was part
    /// of every encode's wall time.
    encode_slots: std::sync::Mutex<Vec<Slot>>,
}

/// What [`crate::device::decode_to_device`] keeps for its next call: allocating and first
/// touching tens of megabytes of mapped staging memory each call was most of its setup.
#[derive(Default)]
pub(crate) struct DecodeScratch {
    /// Host-visible staging buffers, one per section in flight.
    pub stagings: Vec<Buffer<u32>>,
    /// Every section's decode inputs on the device.
    pub inputs: Option<Buffer<u32>>,
    /// Whether any decoded sample was not finite, and its readback.
    pub flag: Option<Buffer<u32>>,
    pub flag_read: Option<Buffer<u32>>,
}

/// One chunk's buffers (two of these alternate), for up to `patches` patches of up to
/// `sparsity` coefficients.
struct Slot {
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
        let encode = ctx.compute_pipeline_for::<EncodePush>("lightfield_encode", crate::shaders::ENCODE, 6, &spec)?;
        let decode = ctx.compute_pipeline_for::<DecodePush>("lightfield_decode", crate::shaders::DECODE, 7, &spec)?;
        let decode_views =
            ctx.compute_pipeline_for::<ViewsPush>("lightfield_decode_views", crate::shaders::DECODE_VIEWS, 8, &spec)?;
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
            scratch: Default::default(),
            encode_slots: Default::default(),
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
        let chunk = self.chunk_len(plen.max(params.sparsity)).min(n.max(1));
        let mut time = GpuTime::default();
        let mut prepare_ms = 0.0;
        let mut kept = self.encode_slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut spare: Vec<Slot> =
            kept.drain(..).filter(|s| s.patches_cap >= chunk && s.sparsity == params.sparsity).collect();
        let (wait_ms, slots) = GpuCodec::ring(
            ramped_chunks(n, chunk).into_iter(),
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

    /// Streams chunks `ranges` through the engine's ring: each chunk takes a spare slot,
    /// a new one (`make`) while fewer than [`DEPTH`] exist, or else the oldest chunk's once
    /// `finish` has read it back; `submit` fills the slot and returns its submissions
    /// (uploads, then the compute that waits for them). So the host prepares chunk i+1
    /// while chunk i is on the GPU, and `finish` sees the chunks in order. Returns the
    /// host ms blocked on the GPU and the slots, for another call.
    fn ring<S>(
        ranges: impl Iterator<Item = Range<usize>>,
        mut make: impl FnMut() -> Result<S>,
        mut submit: impl FnMut(&mut S, Range<usize>) -> Result<Vec<Submission>>,
        mut finish: impl FnMut(&S, Range<usize>, &[PassTime]) -> Result<()>,
    ) -> Result<(f64, Vec<S>)> {
        let mut stream: Stream<S, Range<usize>> = Stream::new(DEPTH);
        let mut spare: Vec<S> = Vec::with_capacity(DEPTH);
        let (mut made, mut wait_ms) = (0, 0.0);
        let mut finished = |done: Done<S, Range<usize>>| -> Result<S> {
            finish(&done.slot, done.tag, &done.passes)?;
            Ok(done.slot)
        };
        let mut oldest = |stream: &mut Stream<S, Range<usize>>| -> Result<Option<Done<S, Range<usize>>>> {
            let t0 = Instant::now();
            let done = stream.wait()?;
            wait_ms += ms_since(t0);
            Ok(done)
        };
        for range in ranges {
            let mut slot = match spare.pop() {
                Some(slot) => slot,
                None if made < DEPTH => {
                    made += 1;
                    make()?
                }
                None => finished(oldest(&mut stream)?.expect("DEPTH chunks in flight"))?,
            };
            let work = submit(&mut slot, range.clone())?;
            // Never waits: a slot was free, so fewer than DEPTH chunks are in flight.
            if let Some(done) = stream.push(slot, range, work)? {
                spare.push(finished(done)?);
            }
        }
        while let Some(done) = oldest(&mut stream)? {
            spare.push(finished(done)?);
        }
        Ok((wait_ms, spare))
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
    /// chunk, in order. Chunks go through the ring ([`GpuCodec::ring`]): each chunk's
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
        let align = (self.ctx.info().min_storage_buffer_offset_alignment as usize / 4).max(1);
        let words = Layout::new(chunk, most, align).words;
        let mut time = GpuTime::default();
        let (mut stage_ms, mut scatter_ms) = (0.0, 0.0);
        (time.host_wait_ms, _) = GpuCodec::ring(
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
                let part = |i| layout.part(&slot.inputs, 0, i);
                let bindings = [self.dicts.binding(), part(0), part(1), part(2), part(3), part(4), slot.out.binding()];
                let push = DecodePush { n_patches: range.len() as u32 };
                rec.dispatch_linear(&self.decode, &bindings, &push, range.len() as u32);
                rec.barrier();
                rec.mark("decode");
                rec.copy_region(&slot.out, 0, &slot.read, 0, range.len() * plen);
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

/// The encode's chunks of patches `0..n`, at most `chunk` each: two short ones first so the
/// GPU starts after a quarter of a chunk's gather, and halving ones last so that the codes
/// of the last full sections come back while the GPU still works, leaving less of their
/// compression after it.
fn ramped_chunks(n: usize, chunk: usize) -> Vec<Range<usize>> {
    let quarter = (chunk / 4).max(1);
    let mut sizes = vec![quarter, 2 * quarter];
    let mut left = n.saturating_sub(3 * quarter);
    while left > 2 * chunk {
        sizes.push(chunk);
        left -= chunk;
    }
    while left > quarter {
        let half = (left / 2 / quarter).max(1) * quarter;
        sizes.push(half.min(chunk));
        left -= half.min(chunk);
    }
    sizes.push(left);
    let mut start = 0;
    sizes
        .into_iter()
        .filter_map(|len| {
            let range = start..(start + len).min(n);
            start = range.end;
            (!range.is_empty()).then_some(range)
        })
        .collect()
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
pub(crate) struct Layout {
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

    /// The input `i` (0..5) of a buffer laid out by `self` from word `base`.
    pub fn part(&self, buffer: &Buffer<u32>, base: usize, i: usize) -> engine::BufferBinding {
        buffer.slice(base + self.parts[i].0, self.parts[i].1.max(1))
    }
}

fn add_times(time: &mut GpuTime, passes: &[PassTime], kernel: &str) {
    for p in passes {
        time.total_ms += p.ms;
        if p.name == kernel {
            time.kernel_ms += p.ms;
        }
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
    use crate::codes::encode_patches_cpu;
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
    fn ramped_chunks_cover_every_patch_once_within_the_chunk_size() {
        for (n, chunk) in [(0, 4096), (1, 4096), (5, 5), (37, 5), (42_025, 4096), (9000, 4096), (4097, 4096)] {
            let ranges = ramped_chunks(n, chunk);
            let mut at = 0;
            for r in &ranges {
                assert_eq!(r.start, at, "{n} in {chunk}: {ranges:?}");
                assert!(!r.is_empty() && r.len() <= chunk, "{n} in {chunk}: {ranges:?}");
                at = r.end;
            }
            assert_eq!(at, n);
        }
        let table1: Vec<usize> = ramped_chunks(42_025, 4096).iter().map(|r| r.len()).collect();
        assert_eq!(table1[..3], [1024, 2048, 4096]);
        assert!(table1[table1.len() - 2] <= 1024, "{table1:?}");
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
