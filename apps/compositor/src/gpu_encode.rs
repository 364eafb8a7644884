//! Region-of-interest detection and Active Pixel encoding on the GPU, per the paper's
//! Algorithm 1, recorded into one submission:
//!
//! 1. `roi`: the bounding box of the active pixels, left in a device buffer;
//! 2. `ap_reduce`: the pixel properties (activity bits) of the box's pixels, tile by tile,
//!    and each workgroup's total of the fused scans (run starts, active pixels, last run
//!    start) over its partition of tiles;
//! 3. `ap_scan_partitions`: the exclusive scan of the workgroups' totals;
//! 4. `ap_scatter`: per tile, the scans' prefixes (run ids, run lengths, active indices) and
//!    the scatter of pixels and run headers to the Equation 1 offsets.
//!
//! The encoding passes read the box from the ROI kernel's buffer, so the host never waits
//! between them. This reduce-then-scan split replaced a single pass with decoupled look-back
//! whose tiles waited on each other with one tile an SM (registers), which left each tile's
//! latency chain exposed; here no workgroup waits for another, and reading the depth twice
//! (every depth in pass 2, active ones again in pass 4) costs less than that waiting did
//! (BENCHMARKS.md). Workgroups take contiguous partitions of tiles rather than subgroups
//! taking strips: with thousands of subgroups each streaming its own strip, DRAM pages were
//! no longer read in long runs and both passes ran 2-5x slower on the H100.
//!
//! Only the pixels of the ROI box are encoded (everything outside it is inactive by
//! definition), as in the paper's IceT integration: the encoder walks the box row by row,
//! with one gap element after each box row that stands for the inactive pixels outside the
//! box (`ap_elements.glsl`); run lengths are measured in image pixels, so the result is the
//! payload of the whole image, byte-identical with [`crate::codec::encode_serial`]. Only
//! the payload's bytes are copied to the host.

use std::time::Instant;

use engine::{Buffer, ComputePipeline, Context, Location, PipelineDesc, Recorder};

use crate::ap::Encoded;
use crate::error::{CompositorError, Result};
use crate::shaders;
use crate::timing::{gpu_ms, ms_since};

const WORKGROUP: u32 = 256;
/// Pixels each ROI workgroup reduces before its one atomic per bound (`roi.comp`: 8 vectors
/// of 4 per invocation).
const ROI_PER_GROUP: usize = WORKGROUP as usize * 32;
/// Configurations of the encoding passes, best first; devices that cannot build the first
/// take the next.
const ENCODE_CONFIGS: [EncodeConfig; 2] = [
    EncodeConfig { workgroup: 256, per_invocation: 8, max_groups: 1024 },
    EncodeConfig { workgroup: 128, per_invocation: 8, max_groups: 1024 },
];
/// Profiled pass names of the encoding passes, in order.
const PASS_NAMES: [&str; 3] = ["ap_reduce", "ap_scan_partitions", "ap_scatter"];
/// Workgroup size of `ap_scan_partitions` (one workgroup).
const SCAN_WORKGROUP: u32 = 256;

/// The shape of the tile passes `ap_reduce` and `ap_scatter` (their specialization
/// constants 0 and 1, and their dispatch). `composite sweep` measures them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EncodeConfig {
    /// Invocations per workgroup.
    pub workgroup: u32,
    /// Consecutive elements each invocation takes of a tile (a power of two up to 32).
    pub per_invocation: u32,
    /// Most workgroups (partitions of the tiles) the tile passes are dispatched with.
    pub max_groups: u32,
}

impl EncodeConfig {
    fn tile(&self) -> usize {
        (self.workgroup * self.per_invocation) as usize
    }

    /// Workgroups (partitions) for a sequence of at most `elements` elements.
    fn groups(&self, elements: usize) -> u32 {
        elements.div_ceil(self.tile()).clamp(1, self.max_groups as usize) as u32
    }

    /// Shared memory of `ap_scatter`, the larger tile pass: a uvec3 an invocation for the
    /// workgroup scan, and a staged pixel (8 bytes) and its offset (4) an element.
    fn shared_bytes(&self) -> u32 {
        self.workgroup * 16 + self.tile() as u32 * 12 + 64
    }

    /// Whether the device can run this configuration.
    fn fits(&self, info: &engine::DeviceInfo) -> bool {
        self.workgroup <= info.max_workgroup_invocations
            && self.per_invocation.is_power_of_two()
            && self.per_invocation <= 32
            && self.max_groups >= 1
            && self.shared_bytes() <= info.max_shared_memory_bytes
    }
}

/// The encoding passes of one configuration.
struct EncodePasses {
    reduce: ComputePipeline,
    scan: ComputePipeline,
    scatter: ComputePipeline,
    config: EncodeConfig,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ImagePush {
    width: u32,
    height: u32,
    /// Index in the colour and depth buffers of the image's first pixel.
    origin: u32,
    /// 1: the encoding passes read the box the ROI kernel left in its buffer; 0: `box_xy`.
    box_source: u32,
    /// The box (x0, y0, x1, y1), inclusive, when the host knows it.
    box_xy: [u32; 4],
}

impl ImagePush {
    /// A `width x height` image at pixel `origin` whose box the ROI kernel finds.
    fn found_box(width: u32, height: u32, origin: u32) -> ImagePush {
        ImagePush { width, height, origin, box_source: 1, box_xy: [0; 4] }
    }

    /// A `width x height` image at pixel `origin` with a known box.
    fn with_box(width: u32, height: u32, origin: u32, roi: &Roi) -> ImagePush {
        ImagePush { width, height, origin, box_source: 0, box_xy: [roi.x0, roi.y0, roi.x1, roi.y1] }
    }
}

/// Bounding box of the active pixels, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Roi {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl Roi {
    pub fn pixels(&self) -> usize {
        (self.x1 - self.x0 + 1) as usize * (self.y1 - self.y0 + 1) as usize
    }

    /// The whole of a `width x height` image.
    pub fn full(width: u32, height: u32) -> Roi {
        Roi { x0: 0, y0: 0, x1: width - 1, y1: height - 1 }
    }

    /// Elements Algorithm 1 runs over for this box: its pixels plus one gap per box row
    /// boundary when the box is narrower than the image.
    pub fn elements(&self, width: u32) -> usize {
        let box_w = (self.x1 - self.x0 + 1) as usize;
        let rows = (self.y1 - self.y0 + 1) as usize;
        if box_w < width as usize {
            rows * (box_w + 1) - 1
        } else {
            rows * box_w
        }
    }
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

/// CPU reference of the ROI: the bounding box of pixels whose depth is not 1.0.
pub fn roi_cpu(depth: &[f32], width: u32) -> Option<Roi> {
    let mut roi: Option<Roi> = None;
    for (i, &d) in depth.iter().enumerate() {
        if d != crate::ap::BACKGROUND_DEPTH {
            let (x, y) = ((i % width as usize) as u32, (i / width as usize) as u32);
            roi = Some(match roi {
                None => Roi { x0: x, y0: y, x1: x, y1: y },
                Some(r) => Roi { x0: r.x0.min(x), y0: r.y0.min(y), x1: r.x1.max(x), y1: r.y1.max(y) },
            });
        }
    }
    roi
}

/// Per-stage times of one GPU encoding, in milliseconds (GPU timestamps; wall-clock where
/// the device has none).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct EncodeTimes {
    pub roi_ms: f64,
    /// The three encoding passes together.
    pub encode_ms: f64,
    /// Each encoding pass: reduce, tile scan, scatter (zeros without GPU timestamps).
    pub pass_ms: [f64; 3],
    pub d2h_ms: f64,
}

/// ROI and Active Pixel encoding pipelines with their buffers.
pub struct GpuEncoder {
    ctx: Context,
    roi: ComputePipeline,
    passes: EncodePasses,
    /// The box on the device (what the encoding passes read) and its host copy.
    roi_box: Buffer<u32>,
    roi_host: Buffer<u32>,
    /// Activity bits of the elements, one uint a chunk (pass 1 to pass 3).
    masks: Option<Buffer<u32>>,
    /// Scan totals of the workgroups, then their exclusive prefixes (4 words a workgroup).
    totals: Option<Buffer<u32>>,
    out: Option<Buffer<u32>>,
    host: Option<Buffer<u32>>,
    size: Buffer<u32>,
}

impl GpuEncoder {
    pub fn new(ctx: &Context) -> Result<GpuEncoder> {
        GpuEncoder::with_configs(ctx, &ENCODE_CONFIGS)
    }

    /// An encoder with the first of `configs` that the device builds.
    pub fn with_configs(ctx: &Context, configs: &[EncodeConfig]) -> Result<GpuEncoder> {
        let pipe = |name: &str, spirv: &[u8], bindings: u32, spec: &[u32]| {
            ctx.compute_pipeline(&PipelineDesc {
                name,
                spirv,
                bindings,
                push_bytes: std::mem::size_of::<ImagePush>() as u32,
                spec,
            })
        };
        let build = |c: &EncodeConfig| -> engine::Result<EncodePasses> {
            let scan_wg = SCAN_WORKGROUP.min(ctx.info().max_workgroup_invocations);
            Ok(EncodePasses {
                reduce: pipe("ap_reduce", shaders::AP_REDUCE, 4, &[c.workgroup, c.per_invocation])?,
                scan: ctx.compute_pipeline_for::<u32>(
                    "ap_scan_partitions",
                    shaders::AP_SCAN_PARTITIONS,
                    1,
                    &[scan_wg],
                )?,
                scatter: pipe("ap_scatter", shaders::AP_SCATTER, 7, &[c.workgroup, c.per_invocation])?,
                config: *c,
            })
        };
        let passes = configs
            .iter()
            .filter(|c| c.fits(ctx.info()))
            .find_map(|c| build(c).ok())
            .ok_or_else(|| CompositorError::Invalid("no encoder configuration builds on this device".into()))?;
        Ok(GpuEncoder {
            ctx: ctx.clone(),
            roi: pipe("roi", shaders::ROI, 2, &[WORKGROUP])?,
            passes,
            roi_box: ctx.buffer(4, Location::Device, "roi box")?,
            roi_host: ctx.buffer(4, Location::Download, "roi box (host)")?,
            masks: None,
            totals: None,
            out: None,
            host: None,
            size: ctx.buffer(1, Location::Download, "ap size")?,
        })
    }

    /// The configuration the encoder runs.
    pub fn config(&self) -> EncodeConfig {
        self.passes.config
    }

    /// The driver's compiler statistics of the two tile passes (registers, where the device
    /// reports them), by pass name.
    pub fn kernel_statistics(&self) -> Result<Vec<(&str, engine::PipelineStatistics)>> {
        let p = &self.passes;
        Ok(vec![("ap_reduce", p.reduce.statistics()?), ("ap_scatter", p.scatter.statistics()?)])
    }

    /// Checks the frame and sizes the payload and scratch buffers for it.
    fn prepare(&mut self, color: &Buffer<u32>, depth: &Buffer<f32>, image: &ImagePush) -> Result<()> {
        let (width, height) = (image.width, image.height);
        let total = crate::ap::pixel_count(width, height)?;
        let end = image.origin as usize + total;
        if color.len() < end || depth.len() < end {
            return Err(CompositorError::Invalid(format!(
                "colour/depth buffers smaller than a {width}x{height} image at pixel {}",
                image.origin
            )));
        }
        let config = self.passes.config;
        let (tile, groups) = (config.tile(), config.groups(total) as usize);
        self.ctx.reuse_buffer(&mut self.out, 2 * total + 4, Location::Device, "ap payload")?;
        self.ctx.reuse_buffer(
            &mut self.masks,
            total.div_ceil(tile) * config.workgroup as usize,
            Location::Device,
            "ap activity bits",
        )?;
        self.ctx.reuse_buffer(&mut self.totals, 4 * groups, Location::Device, "ap workgroup totals")?;
        Ok(())
    }

    /// Records the encoding passes over the box in `roi_box` (filled by the recording
    /// before them) or in `image`; the sequence has at most `elements` elements.
    fn record_encode(
        &self,
        rec: &mut Recorder,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        image: &ImagePush,
        elements: usize,
    ) {
        let (masks, totals, out) =
            (self.masks.as_ref().unwrap(), self.totals.as_ref().unwrap(), self.out.as_ref().unwrap());
        let groups = self.passes.config.groups(elements);
        let p = &self.passes;
        rec.dispatch_linear(
            &p.reduce,
            &[depth.binding(), self.roi_box.binding(), masks.binding(), totals.binding()],
            image,
            groups,
        );
        rec.mark(PASS_NAMES[0]);
        rec.barrier();
        rec.dispatch_linear(&p.scan, &[totals.binding()], &groups, 1);
        rec.mark(PASS_NAMES[1]);
        rec.barrier();
        rec.dispatch_linear(
            &p.scatter,
            &[
                color.binding(),
                depth.binding(),
                self.roi_box.binding(),
                out.binding(),
                self.size.binding(),
                masks.binding(),
                totals.binding(),
            ],
            image,
            groups,
        );
        rec.mark(PASS_NAMES[2]);
    }

    /// The encoding passes' GPU times in `passes`, and their sum (`wall` without timestamps).
    fn pass_times(passes: &[engine::PassTime], wall: f64) -> (f64, [f64; 3]) {
        let ms = PASS_NAMES.map(|name| passes.iter().find(|p| p.name == name).map_or(0.0, |p| p.ms));
        let sum: f64 = ms.iter().sum();
        (if passes.is_empty() { wall } else { sum }, ms)
    }

    /// Submits a recording that ends with an encoding and returns the payload length in
    /// words and the profiled passes.
    fn finish(&self, rec: Recorder, total: usize) -> Result<(usize, Vec<engine::PassTime>, f64)> {
        let wall = Instant::now();
        let passes = rec.submit()?.wait_profiled()?;
        let words = self.size.mapped()?[0] as usize;
        if words > 2 * total + 4 {
            return Err(CompositorError::Corrupt(format!("GPU encoder reported {words} words for {total} pixels")));
        }
        Ok((words, passes, ms_since(wall)))
    }

    /// Encodes the `roi` box of a `width x height` image whose pixels outside the box are
    /// all inactive, into the device payload buffer. Returns the payload length in words and
    /// the GPU time in ms.
    pub fn encode_roi(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        width: u32,
        height: u32,
        roi: &Roi,
    ) -> Result<(usize, f64)> {
        self.encode_box(color, depth, &ImagePush::with_box(width, height, 0, roi), roi)
    }

    /// Finds the active pixels' bounds in the span of `len` pixels from pixel `start` of the
    /// colour and depth buffers and encodes the span (as an image of one row) into the device
    /// payload buffer. Returns the payload length in words and the GPU times (no d2h).
    pub fn encode_span(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        start: usize,
        len: usize,
    ) -> Result<(usize, EncodeTimes)> {
        let (origin, width) = (u32::try_from(start), u32::try_from(len));
        let (Ok(origin), Ok(width)) = (origin, width) else {
            return Err(CompositorError::Invalid(format!("span of {len} pixels at {start} is too large")));
        };
        let (words, _, times) = self.encode_found(color, depth, &ImagePush::found_box(width, 1, origin))?;
        Ok((words, times))
    }

    fn encode_box(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        image: &ImagePush,
        roi: &Roi,
    ) -> Result<(usize, f64)> {
        let (width, height) = (image.width, image.height);
        if roi.x0 > roi.x1 || roi.y0 > roi.y1 || roi.x1 >= width || roi.y1 >= height {
            return Err(CompositorError::Invalid(format!("ROI {roi:?} outside a {width}x{height} image")));
        }
        self.prepare(color, depth, image)?;
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(PASS_NAMES.len() as u32)?;
        // The box is known: the partitions divide exactly its elements.
        self.record_encode(&mut rec, color, depth, image, roi.elements(width));
        let (words, passes, wall) = self.finish(rec, width as usize * height as usize)?;
        Ok((words, GpuEncoder::pass_times(&passes, wall).0))
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
        rec.mark("d2h");
        let passes = rec.submit()?.wait_profiled()?;
        let ms = gpu_ms(&passes, ms_since(wall));
        Ok((copy_parallel(&host.mapped()?[..words]), ms))
    }

    /// ROI detection, encoding of the ROI box and download of the payload of a rendered
    /// `width x height` frame.
    pub fn encode(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        width: u32,
        height: u32,
    ) -> Result<(Encoded, Option<Roi>, EncodeTimes)> {
        let (words, roi, times) = self.encode_found(color, depth, &ImagePush::found_box(width, height, 0))?;
        let (words, d2h_ms) = self.download(words)?;
        let pixels = width as usize * height as usize;
        Ok((Encoded { pixels, words }, roi, EncodeTimes { d2h_ms, ..times }))
    }

    /// ROI detection and encoding of the ROI box of `image`, in one submission, into the
    /// device payload buffer: the payload length in words, the box and the GPU times.
    fn encode_found(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        image: &ImagePush,
    ) -> Result<(usize, Option<Roi>, EncodeTimes)> {
        self.prepare(color, depth, image)?;
        let total = image.width as usize * image.height as usize;
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(3 + PASS_NAMES.len() as u32)?;
        rec.fill(&self.roi_box, u32::MAX);
        rec.barrier();
        rec.dispatch_linear(
            &self.roi,
            &[depth.binding(), self.roi_box.binding()],
            image,
            total.div_ceil(ROI_PER_GROUP) as u32,
        );
        rec.mark("roi");
        rec.barrier();
        // Only the GPU knows the box: the partitions are sized for the whole image.
        self.record_encode(&mut rec, color, depth, image, total);
        rec.copy(&self.roi_box, &self.roi_host);
        rec.mark("roi readback");
        let (words, passes, wall) = self.finish(rec, total)?;
        let b = self.roi_host.mapped()?;
        let roi = (b[0] != u32::MAX).then(|| Roi { x0: b[0], y0: b[1], x1: !b[2], y1: !b[3] });
        let roi_ms = passes.iter().find(|p| p.name == "roi").map_or(0.0, |p| p.ms);
        let (encode_ms, pass_ms) = GpuEncoder::pass_times(&passes, wall);
        Ok((words, roi, EncodeTimes { roi_ms, encode_ms, pass_ms, d2h_ms: 0.0 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode_serial;
    use crate::patterns;
    use engine::testing;

    #[test]
    fn gpu_encoding_is_byte_identical_with_the_cpu_reference() {
        let ctx = testing::context();
        // Every shape the encoder may pick, each on its own.
        for config in ENCODE_CONFIGS {
            check_encoder(GpuEncoder::with_configs(ctx, &[config]).unwrap());
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn many_partitions_of_few_tiles() {
        // 64 x 2 elements a tile: a 1531 x 1409 frame has 16,854 tiles in 4099 partitions of
        // four or five tiles, more than one chunk of ap_scan_partitions (256 x 8): every
        // boundary the passes hand values across.
        let ctx = testing::context();
        let (w, h) = (1531, 1409);
        let config = EncodeConfig { workgroup: 64, per_invocation: 2, max_groups: 4099 };
        let mut enc = GpuEncoder::with_configs(ctx, &[config]).unwrap();
        for (name, frame) in patterns::all(w, h, 5) {
            if !matches!(name.as_str(), "random runs" | "band" | "full" | "checkerboard") {
                continue;
            }
            let color = ctx.upload(&frame.color, "color").unwrap();
            let depth = ctx.upload(&frame.depth, "depth").unwrap();
            let (got, _, _) = enc.encode(&color, &depth, w, h).unwrap();
            assert_eq!(got, encode_serial(&frame), "{name} {w}x{h}");
        }
        testing::assert_no_validation_messages();
    }

    fn check_encoder(mut enc: GpuEncoder) {
        let ctx = testing::context();
        for (w, h) in patterns::SIZES {
            for (name, frame) in patterns::all(w, h, 11) {
                let color = ctx.upload(&frame.color, "color").unwrap();
                let depth = ctx.upload(&frame.depth, "depth").unwrap();
                let want = encode_serial(&frame);
                let (got, roi, _) = enc.encode(&color, &depth, w, h).unwrap();
                assert_eq!(roi, roi_cpu(&frame.depth, w), "ROI of {name} {w}x{h}");
                assert_eq!(got, want, "ROI encoding of {name} {w}x{h}");
                // Algorithm 1 over the whole image, without the ROI box.
                let (words, _) = enc.encode_roi(&color, &depth, w, h, &Roi::full(w, h)).unwrap();
                assert_eq!(enc.download(words).unwrap().0, want.words, "full encoding of {name} {w}x{h}");
                // A span of the image on its own, as the distributed renderer sends them.
                let n = frame.pixels();
                let (start, len) = (n / 3, (n / 2).max(1));
                let span = crate::ops::split(&want, &[start, start + len]).swap_remove(1);
                let (words, _) = enc.encode_span(&color, &depth, start, len).unwrap();
                assert_eq!(enc.download(words).unwrap().0, span.words, "span of {name} {w}x{h}");
            }
        }
    }
}
