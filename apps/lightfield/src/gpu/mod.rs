//! The GPU stages (Vulkan, `shaders/lightfield/`), one file each; [`crate::cpu`] holds each
//! one's CPU twin under the same name, and each stage's tests compare the two on random
//! inputs at awkward sizes, so a drift names its kernel.
//!
//! - [`encode`]: patches to codes (`encode.comp`).
//! - [`decode`]: codes to patches (`decode.comp`).
//! - [`render`]: a viewpoint of a light field in device memory (`render.comp`).
//! - [`train`]: the training sums per cluster (the engine's batched GEMM).
//!
//! [`GpuCodec`] holds what the encode and decode share: pipelines specialised to an
//! ensemble's patch shape ([`spec`]), the ensemble resident on the device, and chunks of
//! thousands of patches streamed through the engine's ring ([`engine::stream::Stream`], two
//! chunks in flight): the CPU prepares chunk i+1 into host-visible staging and the transfer
//! queue uploads it while the GPU works on chunk i.
//!
//! The encode and decode kernels hold each patch's tensor in workgroup shared memory when it
//! fits the device's `maxComputeSharedMemorySize` ([`PatchMemory::Shared`], the fused
//! kernels), else in a device buffer, one region per patch of a chunk
//! ([`PatchMemory::Global`]): the same products in the same order and the same selection,
//! so the same codes.

pub mod decode;
pub mod encode;
#[cfg(test)]
mod global_tests;
pub mod render;
pub mod train;

use std::ops::Range;
use std::time::Instant;

use engine::stream::{Done, Stream};
use engine::{Buffer, Context, Kernel, PassTime, Submission};

use kit::stats::ms_since;

use crate::dictionary::{mode_offsets, Ensemble};
use crate::error::{LfError, Result};
use crate::patch::PatchShape;
use decode::device::{DecodeScratch, ViewsPush};
use decode::DecodePush;
use encode::{EncodePush, Slot};

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
/// Chunks in flight while encoding: two queued on the GPU while the host gathers the next,
/// so a gather slowed by the sections' compression (which shares the CPU) does not leave
/// the GPU idle. Its chunks are smaller by DEPTH / ENCODE_DEPTH, so the staging memory
/// stays that of DEPTH full chunks.
const ENCODE_DEPTH: usize = 3;

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

/// Where each workgroup of the encode and decode kernels holds its patch tensor while it
/// applies the mode products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchMemory {
    /// Workgroup shared memory (`encode.comp`, `decode.comp`, `decode_views.comp`): the
    /// tensor never leaves the workgroup. Only for patches that fit the device's shared
    /// memory beside the kernels' other shared arrays.
    Shared,
    /// A device buffer, one region of the patch's samples per patch of a chunk
    /// (`encode_global.comp`, `decode_global.comp`; `decode_views_global.comp`, one per patch
    /// of the light field): any patch size.
    Global,
}

/// Pipelines and device-resident dictionaries for one ensemble.
pub struct GpuCodec {
    ctx: Context,
    ensemble: Ensemble,
    memory: PatchMemory,
    encode: Kernel<EncodePush>,
    /// Packs an encoded chunk's kept coefficients into the readback (`encode_pack.comp`).
    pack: Kernel<encode::PackPush>,
    decode: Kernel<DecodePush>,
    decode_views: Kernel<ViewsPush>,
    dicts: Buffer<f32>,
    max_chunk: usize,
    workgroup: u32,
    /// Buffers kept from one decode to device memory for the next ([`decode::device`]).
    scratch: std::sync::Mutex<DecodeScratch>,
    /// The encode's chunk slots, kept for the next encode: allocating and first touching
    /// two slots' staging and readback memory (about 150 MiB at the paper's size) was part
    /// of every encode's wall time.
    encode_slots: std::sync::Mutex<Vec<Slot>>,
}

impl GpuCodec {
    pub fn new(ctx: &Context, ensemble: &Ensemble) -> Result<GpuCodec> {
        GpuCodec::with_options(ctx, ensemble, None, None)
    }

    /// Like [`GpuCodec::new`] with at most `workgroup` invocations per patch (the benchmark
    /// sweeps this; the choices are the same up to float ties of the reductions' order).
    pub fn with_workgroup(ctx: &Context, ensemble: &Ensemble, workgroup: u32) -> Result<GpuCodec> {
        GpuCodec::with_options(ctx, ensemble, Some(workgroup), None)
    }

    /// Like [`GpuCodec::new`] with at most `workgroup` invocations per patch (default: the
    /// built-in choice) and the patch tensor in `memory` (default: shared memory when the
    /// patch fits the device's, else global; tests force global to run that path on small
    /// patches). Shared memory for a patch that does not fit is refused.
    pub fn with_options(
        ctx: &Context,
        ensemble: &Ensemble,
        workgroup: Option<u32>,
        memory: Option<PatchMemory>,
    ) -> Result<GpuCodec> {
        let info = ctx.info();
        let shape = ensemble.shape;
        let workgroup = workgroup
            .unwrap_or_else(|| (WORKGROUP_SUBGROUPS * info.subgroup_size).clamp(WORKGROUP_RANGE.0, WORKGROUP_RANGE.1));
        let workgroup = workgroup.max(1).min(info.max_workgroup_invocations).min(info.max_workgroup_size[0]);
        if workgroup / info.subgroup_size.max(1) > 64 {
            return Err(LfError::Engine(engine::EngineError::Unsupported(format!(
                "subgroup size {} gives more than 64 subgroups per workgroup",
                info.subgroup_size
            ))));
        }
        let shared = shared_bytes(shape);
        let fits = shared <= info.max_shared_memory_bytes as usize;
        let memory = memory.unwrap_or(if fits { PatchMemory::Shared } else { PatchMemory::Global });
        if memory == PatchMemory::Shared && !fits {
            return Err(LfError::Engine(engine::EngineError::Unsupported(format!(
                "patch {shape} needs {shared} bytes of shared memory; the device has {}",
                info.max_shared_memory_bytes
            ))));
        }
        let spec = spec(shape, workgroup);
        use crate::shaders::kernels;
        let (encode, decode, decode_views) = match memory {
            PatchMemory::Shared => (
                ctx.kernel(&kernels::ENCODE, &spec)?,
                ctx.kernel(&kernels::DECODE, &spec)?,
                ctx.kernel(&kernels::DECODE_VIEWS, &spec)?,
            ),
            PatchMemory::Global => (
                ctx.kernel(&kernels::ENCODE_GLOBAL, &spec)?,
                ctx.kernel(&kernels::DECODE_GLOBAL, &spec)?,
                ctx.kernel(&kernels::DECODE_VIEWS_GLOBAL, &spec)?,
            ),
        };
        let pack = ctx.kernel(&kernels::ENCODE_PACK, &[workgroup])?;
        let dicts = ctx.upload(&ensemble.mats, "dictionary ensemble")?;
        Ok(GpuCodec {
            ctx: ctx.clone(),
            ensemble: ensemble.clone(),
            memory,
            encode,
            pack,
            decode,
            decode_views,
            dicts,
            max_chunk: MAX_CHUNK,
            workgroup,
            scratch: Default::default(),
            encode_slots: Default::default(),
        })
    }

    /// The specialization constants of this codec's kernels ([`spec`]).
    pub fn spec(&self) -> [u32; 9] {
        spec(self.ensemble.shape, self.workgroup)
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Where the kernels hold the patch tensor.
    pub fn patch_memory(&self) -> PatchMemory {
        self.memory
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

    /// Streams chunks `ranges` through the engine's ring, `depth` in flight: each chunk takes
    /// a spare slot, a new one (`make`) while fewer than `depth` exist, or else the oldest chunk's once
    /// `finish` has read it back; `submit` fills the slot and returns its submissions
    /// (uploads, then the compute that waits for them). So the host prepares chunk i+1
    /// while chunk i is on the GPU, and `finish` sees the chunks in order. Returns the
    /// host ms blocked on the GPU and the slots, for another call.
    fn ring<S>(
        depth: usize,
        ranges: impl Iterator<Item = Range<usize>>,
        mut make: impl FnMut() -> Result<S>,
        mut submit: impl FnMut(&mut S, Range<usize>) -> Result<Vec<Submission>>,
        mut finish: impl FnMut(&S, Range<usize>, &[PassTime]) -> Result<()>,
    ) -> Result<(f64, Vec<S>)> {
        let mut stream: Stream<S, Range<usize>> = Stream::new(depth);
        let mut spare: Vec<S> = Vec::with_capacity(depth);
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
                None if made < depth => {
                    made += 1;
                    make()?
                }
                None => finished(oldest(&mut stream)?.expect("depth chunks in flight"))?,
            };
            let work = submit(&mut slot, range.clone())?;
            // Never waits: a slot was free, so fewer than depth chunks are in flight.
            if let Some(done) = stream.push(slot, range, work)? {
                spare.push(finished(done)?);
            }
        }
        while let Some(done) = oldest(&mut stream)? {
            spare.push(finished(done)?);
        }
        Ok((wait_ms, spare))
    }
}

/// Bytes of shared memory the encode kernel needs with the patch tensor in it (the decode
/// kernels need less): the tensor, the matrices (each mode's m rows padded to a multiple of
/// 4), the reduction's 2 x 64 vec4s and the compaction's two count arrays of 64.
fn shared_bytes(shape: PatchShape) -> usize {
    let mats: usize = shape.modes().iter().map(|&m| m * m.next_multiple_of(4)).sum();
    4 * (shape.len() + mats + 4 * 128 + 2 * 64)
}

/// The specialization constants shared by the encode and decode kernels (both placements
/// of the tensor, [`PatchMemory`]) for patches of `shape` and `workgroup` invocations per patch: the
/// workgroup, samples per invocation, patch and dictionary lengths, and the five modes.
pub fn spec(shape: PatchShape, workgroup: u32) -> [u32; 9] {
    let plen = shape.len();
    let (_, dlen) = mode_offsets(shape);
    let m = shape.modes().map(|m| m as u32);
    [workgroup, plen.div_ceil(workgroup as usize) as u32, plen as u32, dlen as u32, m[0], m[1], m[2], m[3], m[4]]
}

fn add_times(time: &mut GpuTime, passes: &[PassTime], kernel: &str) {
    for p in passes {
        time.total_ms += p.ms;
        if p.name == kernel {
            time.kernel_ms += p.ms;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_lightfield, encode_lightfield, CodecPath};
    use crate::codes::Params;
    use encode::tests::{mismatches, SHAPE};
    use engine::testing;

    /// The whole codec path on both sides: the stages' tests compare each kernel alone; this
    /// one their gathering, padding, cropping and chunking around them.
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
