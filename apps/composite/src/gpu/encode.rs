//! Region-of-interest detection and Active Pixel encoding on the GPU, per the paper's
//! Algorithm 1 as reduce, scan and scatter over chunks of one subgroup each
//! (`ap_chunk.glsl`), in two kernels recorded into one submission:
//!
//! 1. `ap_count`: every chunk's monoid sum (run starts, active pixels, last run start), its
//!    prefix within the workgroup, each workgroup's sum and the ROI box, reading every depth
//!    once; the workgroup that finishes last scans the workgroup sums;
//! 2. `ap_scatter`: every chunk with active pixels writes its part of the payload from its
//!    prefix, waiting for no other chunk.
//!
//! The sequence is the image's pixels: chunks without active pixels are skipped, which
//! covers what the paper's ROI box saves (pixels outside the box are inactive) and also the
//! empty chunks inside the box. The result is the payload of the whole image, byte-identical
//! with its CPU twin [`crate::cpu::encode::encode_serial`], and only its bytes are copied to
//! the host.
//!
//! Colour is RGBA8 (one word a pixel) or RGBA32F (four: the channels' bits), the second
//! a variant of `ap_scatter` (specialization constant 3) built and checked against the CPU
//! encoder when first asked for ([`GpuEncoder::prepare_wide`]); `ap_count` reads only
//! depths, so it serves both. The payloads are those of [`crate::cpu::encode::encode_planes`].
//!
//! A frame whose payload or colour and depth would not bind within the device's
//! storage-buffer range (`maxStorageBufferRange`: 128 MiB on lavapipe, where a 4096x4096
//! frame's worst-case payload is 128 MiB and 16 bytes) is encoded in bands of rows, or a span
//! in pieces, one submission each, and the pieces' payloads are joined on the host
//! ([`crate::spans::concat`]); the result is the same bytes.
//!
//! Two kernels rather than one pass with decoupled look-back: no chunk waits for another
//! (only the last `ap_count` workgroup scans the workgroup sums), where look-back tiles wait
//! for their predecessors; at 8K dense on the H100 that is 0.071 ms against 0.117 ms
//! (BENCHMARKS.md, the encoder's table).

use std::time::Instant;

use engine::{Buffer, Context, DeviceInfo, Kernel, Location};

use crate::ap::{Encoded, PIXEL_WORDS, WIDE_WORDS};
use crate::cpu::encode::encode_planes;
use crate::error::{CompositeError, EncoderLimit, Result};
use crate::shaders::kernels;
use crate::spans::{concat_of, split_of};
use kit::stats::ms_since;

use crate::timing::gpu_ms;
use crate::types::Roi;

/// The tuning file's kernel name for the encoder's shape (`kit::tuning`; keys `workgroup`,
/// `per_lane` and `batch`): both kernels run one shape, so the sweep's registry times them
/// together under this name.
pub const TUNING_KERNEL: &str = "composite.encode";
/// Built-in encoder shapes, best first, from the sweep on the H100 (BENCHMARKS.md, the
/// encoder's table): 512 x 32 in batches of 4 had the smallest time of both kernels at 8K,
/// dense and sparse. A device's tuned shape goes before them; devices that cannot build a
/// shape, or whose result fails the encoder's self-check, take the next.
pub const ENCODE_SHAPES: [EncodeConfig; 3] = [
    EncodeConfig { workgroup: 512, per_lane: 32, batch: 4 },
    EncodeConfig { workgroup: 1024, per_lane: 32, batch: 4 },
    EncodeConfig { workgroup: 256, per_lane: 32, batch: 4 },
];
/// Size of the self-check frame: several workgroups of every shape, odd sizes.
const CHECK_SIZE: (u32, u32) = (1031, 517);
/// Most subgroups per workgroup (`AP_MAX_SUBGROUPS` in `ap_count.comp`).
const MAX_SUBGROUPS: u32 = 128;

/// Shape of the encoder's kernels (specialization constants). The sweep's registry measures
/// them (kernel [`TUNING_KERNEL`]), and `sweep --tune` writes a device's best into the tuning
/// file, which [`GpuEncoder::new`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EncodeConfig {
    /// Invocations per workgroup of both kernels; a workgroup holds one chunk per subgroup.
    pub workgroup: u32,
    /// Pixels per lane of a chunk (a multiple of 32): a chunk is subgroup size x this.
    pub per_lane: u32,
    /// Pixels per lane that `ap_scatter` loads at once (a divisor of `per_lane`).
    pub batch: u32,
}

impl EncodeConfig {
    /// The shape the tuning file gives `info`'s device, with the built-in default for a key
    /// it lacks; `None` where it has none.
    pub fn tuned(info: &DeviceInfo) -> Option<EncodeConfig> {
        let tuned = |key: &str| kit::tuning::param(info, TUNING_KERNEL, key);
        let (workgroup, per_lane, batch) = (tuned("workgroup"), tuned("per_lane"), tuned("batch"));
        if workgroup.is_none() && per_lane.is_none() && batch.is_none() {
            return None;
        }
        let default = ENCODE_SHAPES[0];
        Some(EncodeConfig {
            workgroup: workgroup.unwrap_or(default.workgroup),
            per_lane: per_lane.unwrap_or(default.per_lane),
            batch: batch.unwrap_or(default.batch),
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ChunkPush {
    /// Pixels of the sequence.
    n: u32,
    /// Index in the colour and depth buffers of its first pixel.
    origin: u32,
    /// Pixels of an image row (for the box).
    width: u32,
    /// `ap_count` workgroups.
    groups: u32,
    chunks: u32,
    /// Chunks per `ap_count` workgroup.
    group_chunks: u32,
}

/// The subgroup size the encoder's kernels run with for `workgroup`-invocation workgroups,
/// and whether their pipelines must require it. The chunk layout follows the subgroup size
/// the host plans for, and subgroup ballots are single words, and `ap_count` transposes
/// 8-lane groups of 16-byte loads: so 8, 16 or 32 lanes, required where the device may pick
/// among several sizes (32 where it can; Intel's SIMD8-32, AMD's wave32/64), as the device
/// reports it where it has one size (NVIDIA 32, lavapipe 8).
fn plan_subgroups(info: &engine::DeviceInfo, workgroup: u32) -> Result<(u32, bool)> {
    let sizes = info.required_subgroup_sizes;
    let (subgroup, required) = match sizes {
        Some((min, max)) if min != max => match [32, 16, 8].into_iter().find(|s| (min..=max).contains(s)) {
            Some(s) => (s, true),
            None => (info.subgroup_size, false),
        },
        _ => (info.subgroup_size, false),
    };
    let fits = if required { info.max_workgroup_subgroups } else { MAX_SUBGROUPS };
    if !matches!(subgroup, 8 | 16 | 32)
        || !workgroup.is_multiple_of(subgroup)
        || workgroup / subgroup > MAX_SUBGROUPS.min(fits)
    {
        return Err(
            EncoderLimit::Subgroups { subgroup, sizes, workgroup, max_subgroups: MAX_SUBGROUPS.min(fits) }.into()
        );
    }
    Ok((subgroup, required))
}

/// A copy of `src` made by all cores: a fresh multi-MB vector costs more in first-touch page
/// faults than in the copy, and those spread over threads (the hosts of GPU machines have
/// many cores but slow single-threaded memory paths).
fn copy_parallel(src: &[u32]) -> Vec<u32> {
    use rayon::prelude::*;
    let mut out = vec![0u32; src.len()];
    out.par_chunks_mut(1 << 16).zip(src.par_chunks(1 << 16)).for_each(|(d, s)| d.copy_from_slice(s));
    out
}

/// The most pixels one encoder submission covers: its payload (at most `stride` words a pixel
/// and 4 more) must bind within the device's storage-buffer range, and so must its colour and
/// depth slices, which start up to one offset alignment before its first pixel.
fn piece_pixels(info: &DeviceInfo, stride: usize) -> usize {
    let range = usize::try_from(info.max_storage_buffer_range).unwrap_or(usize::MAX);
    let align = info.offset_alignment_words();
    (range.saturating_sub(16) / (4 * stride)).saturating_sub(align).max(align)
}

/// Refuses `len` pixels from pixel `start` that run past the colour (of `stride - 1` words a
/// pixel) or depth buffer.
fn check_fits(color: &Buffer<u32>, depth: &Buffer<f32>, start: usize, len: usize, stride: usize) -> Result<()> {
    let past = |end: usize| color.len() / (stride - 1) < end || depth.len() < end;
    if start.checked_add(len).is_none_or(past) {
        return Err(EncoderLimit::Buffers { start, len, color: color.len(), depth: depth.len() }.into());
    }
    Ok(())
}

/// The smallest box holding both boxes (either may be empty).
fn union(a: Option<Roi>, b: Option<Roi>) -> Option<Roi> {
    match (a, b) {
        (Some(a), Some(b)) => {
            Some(Roi { x0: a.x0.min(b.x0), y0: a.y0.min(b.y0), x1: a.x1.max(b.x1), y1: a.y1.max(b.y1) })
        }
        (a, b) => a.or(b),
    }
}

/// Per-stage times of one GPU encoding, in milliseconds (GPU timestamps; wall-clock where
/// the device has none), summed over its submissions.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct EncodeTimes {
    /// `ap_count`: the ROI box and the chunks' sums and prefixes.
    pub roi_ms: f64,
    /// `ap_scatter`: the payload.
    pub encode_ms: f64,
    pub d2h_ms: f64,
}

impl std::ops::AddAssign for EncodeTimes {
    fn add_assign(&mut self, other: EncodeTimes) {
        self.roi_ms += other.roi_ms;
        self.encode_ms += other.encode_ms;
        self.d2h_ms += other.d2h_ms;
    }
}

/// The encoder's pipelines and buffers (kept from call to call).
pub struct GpuEncoder {
    ctx: Context,
    count: Kernel<ChunkPush>,
    scatter: Kernel<ChunkPush>,
    /// `ap_scatter` for RGBA32F colour, once asked for ([`GpuEncoder::prepare_wide`]).
    scatter_wide: Option<Kernel<ChunkPush>>,
    config: EncodeConfig,
    subgroup: u32,
    /// Whether the pipelines require `subgroup` ([`plan_subgroups`]).
    required: bool,
    /// The box on the device and its host copy.
    roi_box: Buffer<u32>,
    roi_host: Buffer<u32>,
    /// `ap_count` workgroups finished (for the last one's scan): zero between encodings.
    finished: Buffer<u32>,
    /// Per chunk: prefix within its workgroup and active pixels (4 words).
    chunk_info: Option<Buffer<u32>>,
    /// Per `ap_count` workgroup: its sum, then its exclusive prefix (4 words), and its box
    /// (4 words).
    group_data: Option<Buffer<u32>>,
    out: Option<Buffer<u32>>,
    host: Option<Buffer<u32>>,
    size: Buffer<u32>,
    /// The most pixels one submission covers ([`piece_pixels`]), RGBA8 and RGBA32F.
    piece: usize,
    wide_piece: usize,
}

impl GpuEncoder {
    /// The encoder of the first shape that the device builds and whose payloads equal the
    /// CPU encoder's on check frames: the device's tuned shape ([`EncodeConfig::tuned`]),
    /// then those of `ENCODE_SHAPES`.
    ///
    /// A kernel right on one driver can be wrong on another (BENCHMARKS.md records payloads
    /// right on lavapipe and wrong on the H100), so a shape is only trusted once it has
    /// encoded known frames correctly on this device. It costs a few ms, once per encoder.
    pub fn new(ctx: &Context) -> Result<GpuEncoder> {
        let tuned = EncodeConfig::tuned(ctx.info());
        let mut shapes: Vec<EncodeConfig> = tuned.into_iter().collect();
        shapes.extend(ENCODE_SHAPES.into_iter().filter(|s| Some(*s) != tuned));
        let mut failures = Vec::new();
        for config in shapes {
            match GpuEncoder::with_config(ctx, config).and_then(|mut e| e.self_check(PIXEL_WORDS).map(|()| e)) {
                Ok(encoder) => {
                    if !failures.is_empty() {
                        eprintln!("tessera: GPU encoder falls back to {config:?}: {}", failures.join("; "));
                    }
                    return Ok(encoder);
                }
                Err(e) => failures.push(format!("{config:?}: {e}")),
            }
        }
        Err(EncoderLimit::NoShape(failures.join("; ")).into())
    }

    /// Encodes check frames (random runs; a narrow band) and a span of one at an odd pixel,
    /// with colour of `stride - 1` words a pixel, and compares the payloads with the CPU
    /// encoder's.
    fn self_check(&mut self, stride: usize) -> Result<()> {
        let (w, h) = CHECK_SIZE;
        for (name, frame) in crate::patterns::all(w, h, 3) {
            if !matches!(name.as_str(), "random runs" | "band") {
                continue;
            }
            let colors = if stride == WIDE_WORDS { crate::patterns::widen(&frame, 3) } else { frame.color.clone() };
            let color = self.ctx.upload(&colors, "check colour")?;
            let depth = self.ctx.upload(&frame.depth, "check depth")?;
            let want = encode_planes(&colors, &frame.depth, 0, frame.pixels());
            if self.encode_of(&color, &depth, w, h, stride)?.0 != want {
                return Err(CompositeError::EncodingsDiffer {
                    what: format!("the GPU and CPU encodings of the {name} check frame"),
                });
            }
            let (start, len) = (w as usize + 3, (w * h / 2) as usize);
            let span = split_of(&want, &[start, start + len], stride).swap_remove(1);
            if self.encode_span_of(&color, &depth, start, len, stride)?.0 != span {
                return Err(CompositeError::EncodingsDiffer {
                    what: format!("the GPU and CPU encodings of a span of the {name} check frame"),
                });
            }
        }
        Ok(())
    }

    /// An encoder with `config`, unchecked (the sweep checks every result itself).
    pub fn with_config(ctx: &Context, config: EncodeConfig) -> Result<GpuEncoder> {
        let EncodeConfig { workgroup, per_lane, batch } = config;
        if per_lane == 0 || !per_lane.is_multiple_of(32) || batch == 0 || !per_lane.is_multiple_of(batch) {
            return Err(EncoderLimit::PerLane { per_lane, batch }.into());
        }
        if workgroup > ctx.info().max_workgroup_invocations {
            return Err(EncoderLimit::Workgroup(workgroup).into());
        }
        let (subgroup, required) = plan_subgroups(ctx.info(), workgroup)?;
        let pipe = |desc: &'static engine::KernelDesc, spec: &[u32]| {
            if !required {
                return ctx.kernel::<ChunkPush>(desc, spec);
            }
            ctx.kernel_for_subgroup::<ChunkPush>(desc, spec, subgroup)
        };
        let finished = ctx.buffer(1, Location::Device, "ap count workgroups finished")?;
        ctx.run(|rec| {
            rec.fill(&finished, 0);
            Ok(())
        })?;
        Ok(GpuEncoder {
            ctx: ctx.clone(),
            count: pipe(&kernels::AP_COUNT, &[workgroup, per_lane])?,
            scatter: pipe(&kernels::AP_SCATTER, &[workgroup, per_lane, batch, 1])?,
            scatter_wide: None,
            config,
            subgroup,
            required,
            roi_box: ctx.buffer(4, Location::Device, "roi box")?,
            roi_host: ctx.buffer(4, Location::Download, "roi box (host)")?,
            finished,
            chunk_info: None,
            group_data: None,
            out: None,
            host: None,
            size: ctx.buffer(1, Location::Download, "ap size")?,
            piece: piece_pixels(ctx.info(), PIXEL_WORDS),
            wide_piece: piece_pixels(ctx.info(), WIDE_WORDS),
        })
    }

    /// Builds the RGBA32F variant of `ap_scatter` (once) and checks its payloads against the
    /// CPU encoder's on check frames, as [`GpuEncoder::new`] checks the RGBA8 ones; an error
    /// leaves the encoder without it.
    pub fn prepare_wide(&mut self) -> Result<()> {
        if self.scatter_wide.is_some() {
            return Ok(());
        }
        let EncodeConfig { workgroup, per_lane, batch } = self.config;
        let spec = [workgroup, per_lane, batch, 4];
        self.scatter_wide = Some(if self.required {
            self.ctx.kernel_for_subgroup::<ChunkPush>(&kernels::AP_SCATTER, &spec, self.subgroup)?
        } else {
            self.ctx.kernel::<ChunkPush>(&kernels::AP_SCATTER, &spec)?
        });
        let checked = self.self_check(WIDE_WORDS);
        if checked.is_err() {
            self.scatter_wide = None;
        }
        checked
    }

    /// Covers at most `pixels` per submission, as a device with a smaller storage-buffer
    /// range would (tests of the bands and pieces on small frames).
    #[cfg(test)]
    pub(crate) fn limit_submissions(&mut self, pixels: usize) {
        self.piece = pixels;
        self.wide_piece = pixels;
    }

    /// The most pixels a submission covers for payloads of `stride` words a pixel, and that
    /// colour and depth format's scatter kernel is ready (RGBA32F: [`GpuEncoder::prepare_wide`]).
    fn piece_of(&mut self, stride: usize) -> Result<usize> {
        match stride {
            PIXEL_WORDS => Ok(self.piece),
            WIDE_WORDS => self.prepare_wide().map(|()| self.wide_piece),
            _ => Err(CompositeError::Invalid(format!("no GPU encoder for {stride} words a pixel"))),
        }
    }

    /// The configuration the encoder runs.
    pub fn config(&self) -> EncodeConfig {
        self.config
    }

    /// ROI detection, encoding and download of the payload of a rendered `width x height`
    /// RGBA8 frame: one submission, or one per band of rows where the frame is larger than
    /// one binds.
    pub fn encode(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        width: u32,
        height: u32,
    ) -> Result<(Encoded, Option<Roi>, EncodeTimes)> {
        self.encode_of(color, depth, width, height, PIXEL_WORDS)
    }

    /// [`GpuEncoder::encode`] for payloads of `stride` words per active pixel: RGBA8 colour
    /// ([`PIXEL_WORDS`]), or RGBA32F ([`WIDE_WORDS`]: `color` holds four words a pixel).
    pub fn encode_of(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        width: u32,
        height: u32,
        stride: usize,
    ) -> Result<(Encoded, Option<Roi>, EncodeTimes)> {
        let total = crate::ap::pixel_count(width, height)?;
        let piece = self.piece_of(stride)?;
        check_fits(color, depth, 0, total, stride)?;
        if width as usize > piece {
            return Err(EncoderLimit::RowTooWide { width, piece }.into());
        }
        let rows = (piece / width as usize).min(height as usize) as u32;
        let (mut pieces, mut roi, mut times) = (Vec::new(), None, EncodeTimes::default());
        for y0 in (0..height).step_by(rows as usize) {
            let band = rows.min(height - y0);
            let origin = y0 as usize * width as usize;
            let (words, band_roi, t) = self.encode_image(color, depth, width, band, origin, stride)?;
            let (words, d2h_ms) = self.download(words)?;
            times += EncodeTimes { d2h_ms, ..t };
            roi = union(roi, band_roi.map(|r| Roi { y0: r.y0 + y0, y1: r.y1 + y0, ..r }));
            pieces.push(Encoded { pixels: width as usize * band as usize, words });
        }
        Ok((concat_of(pieces, stride), roi, times))
    }

    /// Encodes and downloads the span of `len` pixels from pixel `start` of the RGBA8 colour
    /// and depth buffers (as an image of one row), in as many submissions as its size needs.
    pub fn encode_span(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        start: usize,
        len: usize,
    ) -> Result<(Encoded, EncodeTimes)> {
        self.encode_span_of(color, depth, start, len, PIXEL_WORDS)
    }

    /// [`GpuEncoder::encode_span`] for payloads of `stride` words per active pixel (as
    /// [`GpuEncoder::encode_of`]).
    pub fn encode_span_of(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        start: usize,
        len: usize,
        stride: usize,
    ) -> Result<(Encoded, EncodeTimes)> {
        let piece = self.piece_of(stride)?;
        check_fits(color, depth, start, len, stride)?;
        let (mut pieces, mut times) = (Vec::new(), EncodeTimes::default());
        let mut at = start;
        while at < start + len || pieces.is_empty() {
            let n = piece.min(start + len - at);
            let (words, _, t) = self.encode_image(color, depth, n as u32, 1, at, stride)?;
            let (words, d2h_ms) = self.download(words)?;
            times += EncodeTimes { d2h_ms, ..t };
            pieces.push(Encoded { pixels: n, words });
            at += n;
        }
        Ok((concat_of(pieces, stride), times))
    }

    /// Both kernels over the `width x height` image at pixel `origin` of the buffers, in one
    /// submission, with the scatter kernel of `stride` words a pixel (made ready by
    /// [`GpuEncoder::piece_of`]).
    fn encode_image(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        width: u32,
        height: u32,
        origin: usize,
        stride: usize,
    ) -> Result<(usize, Option<Roi>, EncodeTimes)> {
        let total = crate::ap::pixel_count(width, height)?;
        check_fits(color, depth, origin, total, stride)?;
        let most = stride * total + 4;
        self.ctx.check_binding(4 * most as u64, "the Active Pixel payload")?;
        // The slices start at the aligned pixel at or before `origin`; the kernels index
        // them from the rest.
        let base = origin - origin % self.ctx.info().offset_alignment_words();
        let cw = stride - 1;
        let color = color.range(cw * base, cw * (origin + total - base));
        let depth = depth.range(base, origin + total - base);
        let origin = origin - base;
        let chunk = (self.subgroup * self.config.per_lane) as usize;
        let group_chunks = (self.config.workgroup / self.subgroup) as usize;
        let chunks = total.div_ceil(chunk);
        let groups = chunks.div_ceil(group_chunks);
        // Bound to what this image uses: the buffers keep the size of the largest image yet.
        let out = self.ctx.reuse_buffer(&mut self.out, most, Location::Device, "ap payload")?;
        let out = out.range(0, most);
        let info = self.ctx.reuse_buffer(&mut self.chunk_info, 4 * chunks, Location::Device, "ap chunks")?;
        let info = info.range(0, 4 * chunks);
        let groups_data = self.ctx.reuse_buffer(&mut self.group_data, 8 * groups, Location::Device, "ap groups")?;
        let groups_data = groups_data.range(0, 8 * groups);
        let push = ChunkPush {
            n: total as u32,
            origin: origin as u32,
            width,
            groups: groups as u32,
            chunks: chunks as u32,
            group_chunks: group_chunks as u32,
        };
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(3)?;
        rec.pass(&self.count)
            .read(&depth)
            .write(&self.roi_box)
            .write(&info)
            .read_write(&groups_data)
            .read_write(&self.finished)
            .push(&push)
            .dispatch_linear(groups as u32)?;
        rec.mark("roi");
        let scatter = match stride {
            WIDE_WORDS => self.scatter_wide.as_ref().expect("made ready by piece_of"),
            _ => &self.scatter,
        };
        rec.pass(scatter)
            .read(&color)
            .read(&depth)
            .read(&info)
            .read(&groups_data)
            .write(&out)
            .write(&self.size)
            .push(&push)
            .dispatch_linear(groups as u32)?;
        rec.mark("encode");
        rec.copy(&self.roi_box, &self.roi_host);
        rec.host_read(&self.roi_host);
        rec.host_read(&self.size);
        let wall = Instant::now();
        let passes = rec.submit()?.wait_profiled()?;
        let wall = ms_since(wall);
        let words = self.size.mapped()?[0] as usize;
        if words > most {
            return Err(CompositeError::PayloadSize { words, pixels: total });
        }
        let b = self.roi_host.mapped()?;
        let roi = (b[0] != u32::MAX).then(|| Roi { x0: b[0], y0: b[1], x1: !b[2], y1: !b[3] });
        let pass = |name: &str| passes.iter().find(|p| p.name == name).map(|p| p.ms);
        let (roi_ms, encode_ms) = match (pass("roi"), pass("encode")) {
            (Some(r), Some(e)) => (r, e),
            _ => (0.0, wall),
        };
        Ok((words, roi, EncodeTimes { roi_ms, encode_ms, d2h_ms: 0.0 }))
    }

    /// Copies the first `words` of the device payload to the host; returns them and the copy
    /// time in ms.
    pub fn download(&mut self, words: usize) -> Result<(Vec<u32>, f64)> {
        self.ctx.reuse_buffer(&mut self.host, words.next_power_of_two(), Location::Download, "ap payload (host)")?;
        let (out, host) = (self.out.as_ref().unwrap(), self.host.as_ref().unwrap());
        let wall = Instant::now();
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(2)?;
        rec.copy_region(out, 0, host, 0, words);
        rec.host_read(host);
        rec.mark("d2h");
        let passes = rec.submit()?.wait_profiled()?;
        let ms = gpu_ms(&passes, ms_since(wall));
        Ok((copy_parallel(&host.mapped()?[..words]), ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::encode::{encode_planes_parallel, encode_serial, roi as roi_cpu};
    use crate::patterns;
    use crate::spans::split;
    use engine::testing;

    #[test]
    fn gpu_encoding_is_byte_identical_with_the_cpu_reference() {
        let ctx = testing::context();
        // Every shape the encoder may pick, and shapes with several batches per chunk and
        // several words per lane.
        let mut configs = ENCODE_SHAPES.to_vec();
        configs.push(EncodeConfig { workgroup: 64, per_lane: 96, batch: 12 });
        configs.push(EncodeConfig { workgroup: 128, per_lane: 64, batch: 64 });
        for config in configs {
            let mut enc = GpuEncoder::with_config(ctx, config).unwrap();
            for (name, frame) in patterns::at_every_size(11) {
                let (w, h) = (frame.width, frame.height);
                let color = ctx.upload(&frame.color, "color").unwrap();
                let depth = ctx.upload(&frame.depth, "depth").unwrap();
                let want = encode_serial(&frame);
                let (got, roi, _) = enc.encode(&color, &depth, w, h).unwrap();
                assert_eq!(roi, roi_cpu(&frame.depth, w), "ROI of {name} {w}x{h} {config:?}");
                assert_eq!(got, want, "{name} {w}x{h} {config:?}");
                // A span of the image on its own, as the distributed renderer sends them
                // (at a pixel that is not a multiple of 4 for most sizes).
                let n = frame.pixels();
                let (start, len) = (n / 3, (n / 2).max(1));
                let span = split(&want, &[start, start + len]).swap_remove(1);
                assert_eq!(
                    enc.encode_span(&color, &depth, start, len).unwrap().0,
                    span,
                    "span of {name} {w}x{h} {config:?}"
                );
            }
        }
        testing::assert_no_validation_messages();
    }

    /// RGBA32F colour (four random finite words a pixel, of every exponent and sign) through
    /// the wide variant of `ap_scatter`: payloads and boxes bit-identical with the CPU
    /// encoder's, for whole images and spans, at sizes no multiple of a workgroup, every
    /// pattern (all-background "empty" and all-active "full" among them), every shape the
    /// encoder may pick and one of several batches per chunk; then in bands and pieces.
    #[test]
    fn wide_gpu_encoding_is_bit_identical_with_the_cpu_reference() {
        let ctx = testing::context();
        let mut configs = ENCODE_SHAPES.to_vec();
        configs.push(EncodeConfig { workgroup: 64, per_lane: 96, batch: 12 });
        for config in configs {
            let mut enc = GpuEncoder::with_config(ctx, config).unwrap();
            enc.prepare_wide().unwrap();
            for (w, h) in [(1, 1), (7, 3), (37, 19), (257, 131)] {
                for (name, frame) in patterns::all(w, h, 21) {
                    let colors = patterns::widen(&frame, 22);
                    let color = ctx.upload(&colors, "color").unwrap();
                    let depth = ctx.upload(&frame.depth, "depth").unwrap();
                    let n = frame.pixels();
                    let want = encode_planes(&colors, &frame.depth, 0, n);
                    crate::ap::validate_of(&want.words, n, WIDE_WORDS).unwrap();
                    assert!(encode_planes_parallel(&colors, &frame.depth, w) == want, "parallel {name} {w}x{h}");
                    let (got, roi, _) = enc.encode_of(&color, &depth, w, h, WIDE_WORDS).unwrap();
                    assert_eq!(roi, roi_cpu(&frame.depth, w), "ROI of {name} {w}x{h} {config:?}");
                    assert!(got == want, "{name} {w}x{h} {config:?}");
                    for (start, len) in [(n / 3, (n / 2).max(1)), (n - 1, 1), (0, n), (1.min(n - 1), n - 1.min(n - 1))]
                    {
                        let span = split_of(&want, &[start, start + len], WIDE_WORDS).swap_remove(1);
                        let got = enc.encode_span_of(&color, &depth, start, len, WIDE_WORDS).unwrap().0;
                        assert!(got == span, "span {start}+{len} of {name} {w}x{h} {config:?}");
                    }
                }
            }
        }
        let mut enc = GpuEncoder::new(ctx).unwrap();
        enc.prepare_wide().unwrap();
        let (w, h) = (203u32, 97u32);
        for (name, frame) in patterns::all(w, h, 23) {
            let colors = patterns::widen(&frame, 24);
            let color = ctx.upload(&colors, "color").unwrap();
            let depth = ctx.upload(&frame.depth, "depth").unwrap();
            let n = frame.pixels();
            let want = encode_planes(&colors, &frame.depth, 0, n);
            let (start, len) = (n / 3 + 1, n / 2);
            let span = split_of(&want, &[start, start + len], WIDE_WORDS).swap_remove(1);
            for piece in [w as usize, 3 * w as usize + 7, 4099, n - 1] {
                enc.limit_submissions(piece);
                assert!(enc.encode_of(&color, &depth, w, h, WIDE_WORDS).unwrap().0 == want, "{name}, {piece} bands");
                let got = enc.encode_span_of(&color, &depth, start, len, WIDE_WORDS).unwrap().0;
                assert!(got == span, "{name}, {piece}-pixel pieces");
            }
        }
        // An RGBA8-sized colour buffer is too short for RGBA32F.
        let short = ctx.upload(&[0u32; 10], "short").unwrap();
        let depth = ctx.upload(&[0.5f32; 10], "depth").unwrap();
        assert!(enc.encode_of(&short, &depth, 5, 2, WIDE_WORDS).is_err());
        testing::assert_no_validation_messages();
    }

    /// Frames larger than one submission binds go in bands of rows, and spans in pieces
    /// (at pixels that are not multiples of the offset alignment): the payloads, joined,
    /// and the box are the whole frame's.
    #[test]
    fn bands_and_pieces_join_into_the_whole_payload() {
        let ctx = testing::context();
        let mut enc = GpuEncoder::new(ctx).unwrap();
        let (w, h) = (203u32, 97u32);
        for (name, frame) in patterns::all(w, h, 9) {
            let color = ctx.upload(&frame.color, "color").unwrap();
            let depth = ctx.upload(&frame.depth, "depth").unwrap();
            let want = encode_serial(&frame);
            let n = frame.pixels();
            let (start, len) = (n / 3 + 1, n / 2);
            let span = split(&want, &[start, start + len]).swap_remove(1);
            for piece in [w as usize, 3 * w as usize + 7, 4099, n - 1] {
                enc.limit_submissions(piece);
                let (got, roi, _) = enc.encode(&color, &depth, w, h).unwrap();
                assert_eq!(roi, roi_cpu(&frame.depth, w), "ROI of {name}, {piece}-pixel bands");
                assert_eq!(got, want, "{name}, {piece}-pixel bands");
                assert_eq!(
                    enc.encode_span(&color, &depth, start, len).unwrap().0,
                    span,
                    "{name}, {piece}-pixel pieces"
                );
            }
            // A row wider than a submission is refused, with the CPU encoder named.
            enc.limit_submissions(w as usize - 1);
            let refused = enc.encode(&color, &depth, w, h).unwrap_err();
            assert!(matches!(refused, CompositeError::GpuEncoder(EncoderLimit::RowTooWide { .. })), "{refused}");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn the_last_workgroup_scans_sums_of_many_workgroups() {
        // One subgroup per workgroup: the scan of the workgroup sums takes several rounds
        // (8 sums per invocation and round), and most chunks read 16-byte vectors.
        let ctx = testing::context();
        let sg = ctx.info().subgroup_size;
        let mut enc = GpuEncoder::with_config(ctx, EncodeConfig { workgroup: sg, per_lane: 32, batch: 4 }).unwrap();
        let (w, h) = (1031u32, 517u32);
        let groups = (w * h).div_ceil(32 * sg);
        assert!(groups > 8 * sg, "{groups} workgroup sums take one round");
        for (name, frame) in patterns::all(w, h, 5) {
            let color = ctx.upload(&frame.color, "color").unwrap();
            let depth = ctx.upload(&frame.depth, "depth").unwrap();
            let (got, roi, _) = enc.encode(&color, &depth, w, h).unwrap();
            assert_eq!(roi, roi_cpu(&frame.depth, w), "ROI of {name}");
            assert_eq!(got, encode_serial(&frame), "{name} {w}x{h}, {sg}-lane workgroups");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn subgroups_are_required_where_the_device_may_pick_among_sizes() {
        let mut info = testing::context().info().clone();
        // One size (NVIDIA, lavapipe): the device's, not required.
        info.subgroup_size = 32;
        info.required_subgroup_sizes = Some((32, 32));
        info.max_workgroup_subgroups = 32;
        assert_eq!(plan_subgroups(&info, 1024).unwrap(), (32, false));
        // Intel's SIMD8 to SIMD32 and AMD's wave32/64: 32, required, within the device's
        // limit of subgroups per workgroup.
        for (min, max, reported) in [(8, 32, 16), (32, 64, 64)] {
            info.subgroup_size = reported;
            info.required_subgroup_sizes = Some((min, max));
            assert_eq!(plan_subgroups(&info, 512).unwrap(), (32, true));
            assert!(plan_subgroups(&info, 2048).is_err());
        }
        // Wave64 only, or no subgroup size control with 64 lanes: no GPU encoder.
        info.subgroup_size = 64;
        for sizes in [Some((64, 64)), None] {
            info.required_subgroup_sizes = sizes;
            assert!(plan_subgroups(&info, 512).is_err());
        }
        // Without subgroup size control, the reported size (8 to 32).
        info.subgroup_size = 16;
        assert_eq!(plan_subgroups(&info, 256).unwrap(), (16, false));
    }

    #[test]
    fn bad_shapes_and_buffers_are_errors() {
        let ctx = testing::context();
        for (workgroup, per_lane, batch) in [(256, 48, 8), (256, 32, 0), (256, 32, 12), (3, 32, 8), (1 << 20, 32, 8)] {
            assert!(GpuEncoder::with_config(ctx, EncodeConfig { workgroup, per_lane, batch }).is_err());
        }
        let mut enc = GpuEncoder::new(ctx).unwrap();
        let small = ctx.upload(&[0u32; 10], "small").unwrap();
        let depth = ctx.upload(&[1.0f32; 10], "depth").unwrap();
        assert!(enc.encode(&small, &depth, 4, 3).is_err());
        assert!(enc.encode_span(&small, &depth, 8, 3).is_err());
        assert_eq!(enc.encode_span(&small, &depth, 7, 3).unwrap().0.words, [3, 0]);
    }
}
