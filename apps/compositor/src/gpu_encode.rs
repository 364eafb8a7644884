//! Region-of-interest detection and Active Pixel encoding on the GPU, per the paper's
//! Algorithm 1, in two kernels recorded into one submission:
//!
//! 1. `roi`: the bounding box of the active pixels, left in a device buffer, and the
//!    workgroup count of the encoding for that box;
//! 2. `ap_encode`: the five steps of Algorithm 1 (pixel properties, run ids, run lengths,
//!    active indices, scatter) fused into one single-pass scan with decoupled look-back
//!    over the box's pixels (see the shader), reading the box from that buffer and
//!    dispatched indirectly with that count, so the host never waits between the two.
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
/// `ap_encode` tile shapes (workgroup size, elements per invocation), best first, from
/// `composite sweep` on the H100 (BENCHMARKS.md): since the run headers are written per
/// mask word, 1024 x 16 is the fastest at 8K (117-119 against 124-125 us for 512 x 16, runs
/// Z1-Z2) and within 2 us at 4K, and both were right in every run of this session. Devices
/// that cannot build a shape, or whose result fails the encoder's self-check, take the next.
const ENCODE_SHAPES: [(u32, u32); 3] = [(1024, 16), (512, 16), (1024, 8)];
/// Largest `ap_encode` tile and workgroup: the kernel's shared arrays have fixed sizes for
/// these (the shader says why).
const MAX_TILE: usize = 16384;
const MAX_WORKGROUP: u32 = 1024;
/// Size of the self-check frame: several tiles of every shape, odd sizes.
const CHECK_SIZE: (u32, u32) = (1031, 517);

/// Whether `ap_encode` reads tile descriptors with relaxed atomic loads on this device: on
/// GPUs, not on CPU devices (`lookback.glsl` says why).
fn relaxed_loads_on(ctx: &Context) -> bool {
    ctx.info().device_type != "CPU"
}

/// The `ap_encode` kernel's specialization constants: its tile shape and two code-path
/// choices (see the shader). `composite sweep` measures them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EncodeConfig {
    /// Invocations per workgroup (one workgroup encodes one tile).
    pub workgroup: u32,
    /// Elements each invocation encodes.
    pub per_invocation: u32,
    /// The look-back reads tile descriptors with relaxed atomic loads, not read-modify-writes.
    pub relaxed_loads: bool,
    /// Active colours are loaded in the scatter instead of before the scans.
    pub late_colour: bool,
}

impl EncodeConfig {
    fn spec(&self) -> [u32; 4] {
        [self.workgroup, self.per_invocation, self.relaxed_loads as u32, self.late_colour as u32]
    }

    /// Elements per tile.
    pub fn tile(&self) -> usize {
        (self.workgroup * self.per_invocation) as usize
    }
}

/// Scratch words per `ap_encode` tile descriptor: three values in two halves each
/// (`lookback.glsl`).
const DESCRIPTOR_WORDS: usize = 6;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ImagePush {
    width: u32,
    height: u32,
    /// Index in the colour and depth buffers of the image's first pixel.
    origin: u32,
    /// 1: `ap_encode` reads the box the ROI kernel left in its buffer; 0: `box_xy`.
    box_source: u32,
    /// The box (x0, y0, x1, y1), inclusive, when the host knows it.
    box_xy: [u32; 4],
    /// Elements per `ap_encode` tile (for `roi.comp`'s workgroup counts).
    tile: u32,
}

impl ImagePush {
    /// A `width x height` image at pixel `origin` whose box the ROI kernel finds.
    fn found_box(width: u32, height: u32, origin: u32, tile: usize) -> ImagePush {
        ImagePush { width, height, origin, box_source: 1, box_xy: [0; 4], tile: tile as u32 }
    }

    /// A `width x height` image at pixel `origin` with a known box.
    fn with_box(width: u32, height: u32, origin: u32, roi: &Roi, tile: usize) -> ImagePush {
        ImagePush { width, height, origin, box_source: 0, box_xy: [roi.x0, roi.y0, roi.x1, roi.y1], tile: tile as u32 }
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

/// One tile's timeline from the traced kernel.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct TileTrace {
    /// Device clock at the tile's start and end (ns, low 32 bits).
    pub start_ns: u32,
    pub end_ns: u32,
    /// The SM it ran on.
    pub sm: u32,
    /// Look-back windows it read.
    pub windows: u32,
    /// SM clock cycles from its start to: its ticket, its depth loads' ballots, its
    /// aggregate's publication, its look-back's end, its scatter's end.
    pub cycles: [u32; 5],
}

/// Per-stage times of one GPU encoding, in milliseconds (GPU timestamps; wall-clock where
/// the device has none).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct EncodeTimes {
    pub roi_ms: f64,
    pub encode_ms: f64,
    pub d2h_ms: f64,
}

/// ROI and Active Pixel encoding pipelines with their buffers.
pub struct GpuEncoder {
    ctx: Context,
    roi: ComputePipeline,
    encode: ComputePipeline,
    config: EncodeConfig,
    /// The box on the device (what `ap_encode` reads) and its host copy.
    roi_box: Buffer<u32>,
    roi_host: Buffer<u32>,
    /// `roi.comp`'s finished-workgroup count and the encoding's workgroup counts.
    grid: Buffer<u32>,
    scratch: Option<Buffer<u32>>,
    out: Option<Buffer<u32>>,
    host: Option<Buffer<u32>>,
    size: Buffer<u32>,
    /// The kernel is the traced one (`ap_encode.glsl`), whose per-tile records go to `trace`
    /// (sized in `prepare`).
    traced: bool,
    trace: Option<Buffer<u32>>,
}

/// Words of one tile's trace record (`ap_encode.glsl`).
const TRACE_WORDS: usize = 10;

impl GpuEncoder {
    /// The encoder of the first shape in [`ENCODE_SHAPES`] that the device builds and whose
    /// payloads equal the CPU encoder's on a check frame.
    ///
    /// The check is there because shapes have given wrong payloads on the H100 while right
    /// on lavapipe (1024 x 16 in one build, 512 x 8 in another), until the kernel's shared
    /// arrays got fixed sizes (`ap_encode.comp`); a shape is only trusted once it has
    /// encoded a known frame correctly on this device.
    /// The check costs two encodings of a 0.5-megapixel frame on the GPU and the CPU (a few
    /// ms), once per encoder.
    pub fn new(ctx: &Context) -> Result<GpuEncoder> {
        let relaxed_loads = relaxed_loads_on(ctx);
        let mut failures = Vec::new();
        for (workgroup, per_invocation) in ENCODE_SHAPES {
            let config = EncodeConfig { workgroup, per_invocation, relaxed_loads, late_colour: false };
            match GpuEncoder::with_config(ctx, config).and_then(|mut e| e.self_check().map(|()| e)) {
                Ok(encoder) => {
                    if !failures.is_empty() {
                        eprintln!("tessera: GPU encoder falls back to {config:?}: {}", failures.join("; "));
                    }
                    return Ok(encoder);
                }
                Err(e) => failures.push(format!("{workgroup}x{per_invocation}: {e}")),
            }
        }
        Err(CompositorError::Invalid(format!("no GPU encoder configuration works here: {}", failures.join("; "))))
    }

    /// Encodes check frames (random runs; a narrow band, whose box rows end in gaps) and
    /// compares the payloads with the CPU encoder's.
    fn self_check(&mut self) -> Result<()> {
        let (w, h) = CHECK_SIZE;
        for (name, frame) in crate::patterns::all(w, h, 3) {
            if !matches!(name.as_str(), "random runs" | "band") {
                continue;
            }
            let color = self.ctx.upload(&frame.color, "check colour")?;
            let depth = self.ctx.upload(&frame.depth, "check depth")?;
            if self.encode(&color, &depth, w, h)?.0 != crate::codec::encode_serial(&frame) {
                return Err(CompositorError::Corrupt(format!("wrong payload on the {name} check frame")));
            }
        }
        Ok(())
    }

    /// An encoder with `config`, unchecked (`composite sweep` checks every result itself).
    pub fn with_config(ctx: &Context, config: EncodeConfig) -> Result<GpuEncoder> {
        GpuEncoder::build(ctx, config, false)
    }

    /// An encoder with `config` whose kernel records each tile's timeline ([`Self::trace`]),
    /// on devices with kernel clocks.
    pub fn traced(ctx: &Context, config: EncodeConfig) -> Result<GpuEncoder> {
        if !ctx.has_kernel_clocks() {
            return Err(CompositorError::Invalid(
                "tracing needs VK_KHR_shader_clock and VK_NV_shader_sm_builtins".into(),
            ));
        }
        GpuEncoder::build(ctx, config, true)
    }

    fn build(ctx: &Context, config: EncodeConfig, traced: bool) -> Result<GpuEncoder> {
        let pipe = |name: &str, spirv: &[u8], bindings: u32, spec: &[u32]| {
            ctx.compute_pipeline(&PipelineDesc {
                name,
                spirv,
                bindings,
                push_bytes: std::mem::size_of::<ImagePush>() as u32,
                spec,
            })
        };
        if config.workgroup > ctx.info().max_workgroup_invocations.min(MAX_WORKGROUP) || config.tile() > MAX_TILE {
            return Err(CompositorError::Invalid(format!(
                "{} x {} tiles: at most {MAX_WORKGROUP} invocations and {MAX_TILE} elements",
                config.workgroup, config.per_invocation
            )));
        }
        let encode = if traced {
            pipe("ap_encode_trace", shaders::AP_ENCODE_TRACE, 7, &config.spec())?
        } else {
            pipe("ap_encode", shaders::AP_ENCODE, 6, &config.spec())?
        };
        Ok(GpuEncoder {
            ctx: ctx.clone(),
            roi: pipe("roi", shaders::ROI, 3, &[WORKGROUP])?,
            encode,
            config,
            roi_box: ctx.buffer(4, Location::Device, "roi box")?,
            roi_host: ctx.buffer(4, Location::Download, "roi box (host)")?,
            grid: ctx.buffer(4, Location::Device, "ap encode grid")?,
            scratch: None,
            out: None,
            host: None,
            size: ctx.buffer(1, Location::Download, "ap size")?,
            traced,
            trace: None,
        })
    }

    /// The configuration the encoder runs.
    pub fn config(&self) -> EncodeConfig {
        self.config
    }

    /// The driver's compiler statistics of the encoding kernel (registers, where the
    /// device reports them).
    pub fn kernel_statistics(&self) -> Result<engine::PipelineStatistics> {
        Ok(self.encode.statistics()?)
    }

    /// Checks the frame and sizes the payload and scratch buffers for it (for as many tiles
    /// as cover the whole image).
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
        self.ctx.reuse_buffer(&mut self.out, 2 * total + 4, Location::Device, "ap payload")?;
        let tiles = total.div_ceil(self.config.tile());
        self.ctx.reuse_buffer(&mut self.scratch, 2 + DESCRIPTOR_WORDS * tiles, Location::Device, "ap scan scratch")?;
        if self.traced {
            self.ctx.reuse_buffer(&mut self.trace, TRACE_WORDS * tiles, Location::Device, "ap tile trace")?;
        }
        Ok(())
    }

    /// Records the encoding of the box in `roi_box` (filled by the recording before it) in
    /// `tiles` workgroups, or when `None`, in as many as the ROI kernel before it counted.
    fn record_encode(
        &self,
        rec: &mut Recorder,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        image: &ImagePush,
        tiles: Option<usize>,
    ) {
        let (scratch, out) = (self.scratch.as_ref().unwrap(), self.out.as_ref().unwrap());
        let mut bindings = vec![
            color.binding(),
            depth.binding(),
            self.roi_box.binding(),
            out.binding(),
            self.size.binding(),
            scratch.binding(),
        ];
        if let Some(trace) = &self.trace {
            bindings.push(trace.binding());
        }
        match tiles {
            Some(tiles) => rec.dispatch_linear(&self.encode, &bindings, image, tiles as u32),
            None => rec.dispatch_indirect(&self.encode, &bindings, image, &self.grid, 1),
        }
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
        self.encode_box(color, depth, &ImagePush::with_box(width, height, 0, roi, self.config.tile()), roi)
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
        let (words, _, times) =
            self.encode_found(color, depth, &ImagePush::found_box(width, 1, origin, self.config.tile()))?;
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
        // The box is known: exactly the tiles that cover its elements.
        let tiles = roi.elements(width).div_ceil(self.config.tile());
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(2)?;
        rec.fill(self.scratch.as_ref().unwrap(), 0);
        rec.barrier();
        self.record_encode(&mut rec, color, depth, image, Some(tiles));
        rec.mark("encode");
        let (words, passes, wall) = self.finish(rec, width as usize * height as usize)?;
        Ok((words, gpu_ms(&passes, wall)))
    }

    /// The traced kernel's record of each tile of the last encoding, in ticket order: device
    /// clock (ns) at its start and end, SM id, look-back windows, and SM clock cycles from its
    /// start to each step (`ap_encode.glsl`). `tiles` is the number of tiles that encoding
    /// had (the ROI box's elements over the tile size).
    pub fn trace(&self, tiles: usize) -> Result<Vec<TileTrace>> {
        let Some(buffer) = &self.trace else {
            return Err(CompositorError::Invalid("this encoder is not traced, or has not encoded".into()));
        };
        let words = self.ctx.download_range(buffer, 0, (TRACE_WORDS * tiles).min(buffer.len()))?;
        Ok(words
            .chunks_exact(TRACE_WORDS)
            .map(|w| TileTrace {
                start_ns: w[0],
                end_ns: w[1],
                sm: w[2],
                windows: w[3],
                cycles: [5, 6, 7, 8, 9].map(|i| w[i].wrapping_sub(w[4])),
            })
            .collect())
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
        let (words, roi, times) =
            self.encode_found(color, depth, &ImagePush::found_box(width, height, 0, self.config.tile()))?;
        let (words, d2h_ms) = self.download(words)?;
        let pixels = width as usize * height as usize;
        Ok((Encoded { pixels, words }, roi, EncodeTimes { d2h_ms, ..times }))
    }

    /// ROI detection and encoding of a `width x height` frame into the device payload
    /// buffer, without the download.
    pub fn encode_on_device(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        width: u32,
        height: u32,
    ) -> Result<(usize, Option<Roi>, EncodeTimes)> {
        self.encode_found(color, depth, &ImagePush::found_box(width, height, 0, self.config.tile()))
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
        rec.enable_profiling(4)?;
        rec.fill(&self.roi_box, u32::MAX);
        rec.fill(&self.grid, 0);
        rec.fill(self.scratch.as_ref().unwrap(), 0);
        rec.barrier();
        rec.dispatch_linear(
            &self.roi,
            &[depth.binding(), self.roi_box.binding(), self.grid.binding()],
            image,
            total.div_ceil(ROI_PER_GROUP) as u32,
        );
        rec.mark("roi");
        rec.barrier();
        self.record_encode(&mut rec, color, depth, image, None);
        rec.mark("encode");
        rec.copy(&self.roi_box, &self.roi_host);
        rec.mark("roi readback");
        let (words, passes, wall) = self.finish(rec, total)?;
        let b = self.roi_host.mapped()?;
        let roi = (b[0] != u32::MAX).then(|| Roi { x0: b[0], y0: b[1], x1: !b[2], y1: !b[3] });
        let pass = |name: &str| passes.iter().find(|p| p.name == name).map(|p| p.ms);
        let (roi_ms, encode_ms) = match (pass("roi"), pass("encode")) {
            (Some(r), Some(e)) => (r, e),
            _ => (0.0, wall),
        };
        Ok((words, roi, EncodeTimes { roi_ms, encode_ms, d2h_ms: 0.0 }))
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
        // Every shape the encoder may pick, each on its own, with the descriptor loads it
        // takes on this device (read-modify-writes on lavapipe).
        let relaxed_loads = relaxed_loads_on(ctx);
        for (workgroup, per_invocation) in ENCODE_SHAPES {
            let config = EncodeConfig { workgroup, per_invocation, relaxed_loads, late_colour: false };
            check_encoder(GpuEncoder::with_config(ctx, config).unwrap());
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
                // The ROI kernel counted all its workgroups and sized the encoding for the
                // box's tiles (one at least).
                let tiles = roi.map_or(0, |r| r.elements(w)).div_ceil(enc.config.tile()).max(1) as u32;
                let grid = ctx.download_range(&enc.grid, 0, 4).unwrap();
                let roi_groups = (w as usize * h as usize).div_ceil(ROI_PER_GROUP) as u32;
                assert_eq!(grid, [roi_groups, tiles, 1, 1], "encode grid of {name} {w}x{h}");
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
