//! Region-of-interest detection and Active Pixel encoding on the GPU, exactly as the paper's
//! Algorithm 1, with the engine's decoupled look-back scan:
//!
//! 1. `ap_properties`: `new_run` and `is_active` per element (see below);
//! 2. inclusive scan of `new_run` -> `run_id` (1-based);
//! 3. reduce-by-key of `run_id` with constant 1 -> run lengths (`ap_run_ends`: runs are
//!    contiguous, so it writes each run's end and lengths are differences of ends);
//! 4. exclusive scan of `is_active` -> `active_idx`;
//! 5. `ap_compress`: scatter pixels and run headers to their Equation 1 offsets, the final
//!    header and the payload size.
//!
//! Only the pixels of the ROI bounding box are encoded (everything outside it is inactive
//! by definition), as in the paper's IceT integration: the passes run over the box's pixels
//! row by row, with one gap element after each box row that stands for the inactive pixels
//! outside the box (`ap_elements.glsl`); run lengths are measured in image pixels, so the
//! result is the payload of the whole image, byte-identical with
//! [`crate::codec::encode_serial`]. Only the payload's bytes are copied to the host.

use std::time::Instant;

use engine::prims::scan::Scanner;
use engine::{Buffer, ComputePipeline, Context, Location, PipelineDesc};

use crate::ap::Encoded;
use crate::error::{CompositorError, Result};
use crate::shaders;
use crate::timing::{gpu_ms, ms_since};

const WORKGROUP: u32 = 256;
/// Pixels each ROI workgroup reduces before its one atomic per bound.
const ROI_PER_GROUP: u32 = WORKGROUP * 32;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ElementsPush {
    width: u32,
    x0: u32,
    y0: u32,
    box_w: u32,
    n: u32,
    stride: u32,
    total: u32,
    end: u32,
}

impl ElementsPush {
    /// The element sequence over `roi` of a `width`-wide image of `total` pixels.
    fn new(roi: &Roi, width: u32, total: usize) -> ElementsPush {
        let box_w = roi.x1 - roi.x0 + 1;
        let box_h = roi.y1 - roi.y0 + 1;
        let stride = if box_w < width { box_w + 1 } else { box_w };
        ElementsPush {
            width,
            x0: roi.x0,
            y0: roi.y0,
            box_w,
            n: box_h * stride - (stride - box_w),
            stride,
            total: total as u32,
            end: roi.y1 * width + roi.x1 + 1,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RoiPush {
    width: u32,
    height: u32,
    per_group: u32,
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
        ElementsPush::new(self, width, 0).n as usize
    }
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
    pub encode_ms: f64,
    pub d2h_ms: f64,
}

/// Intermediate buffers of Algorithm 1 for `n` elements (the scan takes its length from the
/// buffer, so they are sized exactly and kept while `n` repeats).
struct ElementBuffers {
    n: usize,
    new_run: Buffer<u32>,
    is_active: Buffer<u32>,
    run_id: Buffer<u32>,
    run_end: Buffer<u32>,
    active_idx: Buffer<u32>,
    scratch_inclusive: Buffer<u32>,
    scratch_exclusive: Buffer<u32>,
}

/// ROI and Active Pixel encoding pipelines with their buffers.
pub struct GpuEncoder {
    ctx: Context,
    scanner: Scanner,
    roi: ComputePipeline,
    properties: ComputePipeline,
    run_ends: ComputePipeline,
    compress: ComputePipeline,
    elements: Option<ElementBuffers>,
    out: Option<Buffer<u32>>,
    host: Option<Buffer<u32>>,
    roi_box: Buffer<u32>,
    size: Buffer<u32>,
    last_steps: Vec<engine::PassTime>,
}

impl GpuEncoder {
    pub fn new(ctx: &Context) -> Result<GpuEncoder> {
        let pipe = |name: &str, spirv: &[u8], bindings: u32, push_bytes: usize| {
            ctx.compute_pipeline(&PipelineDesc {
                name,
                spirv,
                bindings,
                push_bytes: push_bytes as u32,
                spec: &[WORKGROUP],
            })
        };
        let push_bytes = std::mem::size_of::<ElementsPush>();
        Ok(GpuEncoder {
            ctx: ctx.clone(),
            scanner: Scanner::new(ctx)?,
            roi: pipe("roi", shaders::ROI, 2, std::mem::size_of::<RoiPush>())?,
            properties: pipe("ap_properties", shaders::AP_PROPERTIES, 3, push_bytes)?,
            run_ends: pipe("ap_run_ends", shaders::AP_RUN_ENDS, 3, push_bytes)?,
            compress: pipe("ap_compress", shaders::AP_COMPRESS, 9, push_bytes)?,
            elements: None,
            out: None,
            host: None,
            roi_box: ctx.buffer(4, Location::Download, "roi box")?,
            size: ctx.buffer(1, Location::Download, "ap size")?,
            last_steps: Vec::new(),
        })
    }

    /// The bounding box of the active pixels of a `width x height` depth plane, and its GPU
    /// time in ms.
    pub fn roi(&mut self, depth: &Buffer<f32>, width: u32, height: u32) -> Result<(Option<Roi>, f64)> {
        let n = width as usize * height as usize;
        if depth.len() < n {
            return Err(CompositorError::Invalid(format!("depth buffer of {} for {width}x{height}", depth.len())));
        }
        let wall = Instant::now();
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(2)?;
        rec.fill(&self.roi_box, u32::MAX);
        rec.barrier();
        let push = RoiPush { width, height, per_group: ROI_PER_GROUP };
        rec.dispatch_linear(
            &self.roi,
            &[depth.binding(), self.roi_box.binding()],
            &push,
            n.div_ceil(ROI_PER_GROUP as usize) as u32,
        );
        rec.mark("roi");
        let passes = rec.submit()?.wait_profiled()?;
        let ms = gpu_ms(&passes, ms_since(wall));
        let b = self.roi_box.mapped()?;
        let roi = (b[0] != u32::MAX).then(|| Roi { x0: b[0], y0: b[1], x1: !b[2], y1: !b[3] });
        Ok((roi, ms))
    }

    fn element_buffers(&mut self, n: usize) -> Result<&ElementBuffers> {
        if self.elements.as_ref().map(|s| s.n) != Some(n) {
            self.elements = None;
            let b = |what| self.ctx.buffer::<u32>(n, Location::Device, what);
            self.elements = Some(ElementBuffers {
                n,
                new_run: b("ap new_run")?,
                is_active: b("ap is_active")?,
                run_id: b("ap run_id")?,
                run_end: b("ap run_end")?,
                active_idx: b("ap active_idx")?,
                scratch_inclusive: self.scanner.scratch(n)?,
                scratch_exclusive: self.scanner.scratch(n)?,
            });
        }
        Ok(self.elements.as_ref().unwrap())
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
        let total = crate::ap::pixel_count(width, height)?;
        if roi.x0 > roi.x1 || roi.y0 > roi.y1 || roi.x1 >= width || roi.y1 >= height {
            return Err(CompositorError::Invalid(format!("ROI {roi:?} outside a {width}x{height} image")));
        }
        if color.len() < total || depth.len() < total {
            return Err(CompositorError::Invalid(format!("colour/depth buffers smaller than {width}x{height}")));
        }
        let capacity = 2 * total + 4;
        if self.out.as_ref().is_none_or(|o| o.len() < capacity) {
            self.out = None;
            self.out = Some(self.ctx.buffer(capacity, Location::Device, "ap payload")?);
        }
        let push = ElementsPush::new(roi, width, total);
        let n = push.n as usize;
        self.element_buffers(n)?;
        let (s, out) = (self.elements.as_ref().unwrap(), self.out.as_ref().unwrap());
        let groups = n.div_ceil(WORKGROUP as usize) as u32;
        let wall = Instant::now();
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(8)?;
        rec.dispatch_linear(
            &self.properties,
            &[depth.binding(), s.new_run.binding(), s.is_active.binding()],
            &push,
            groups,
        );
        rec.mark("properties");
        rec.barrier();
        self.scanner.record_inclusive(&mut rec, &s.new_run, &s.run_id, &s.scratch_inclusive)?;
        self.scanner.record_exclusive(&mut rec, &s.is_active, &s.active_idx, &s.scratch_exclusive)?;
        rec.mark("scans");
        rec.barrier();
        rec.dispatch_linear(
            &self.run_ends,
            &[s.new_run.binding(), s.run_id.binding(), s.run_end.binding()],
            &push,
            groups,
        );
        rec.mark("run_ends");
        rec.barrier();
        rec.dispatch_linear(
            &self.compress,
            &[
                color.binding(),
                depth.binding(),
                s.new_run.binding(),
                s.is_active.binding(),
                s.run_id.binding(),
                s.run_end.binding(),
                s.active_idx.binding(),
                out.binding(),
                self.size.binding(),
            ],
            &push,
            groups,
        );
        rec.mark("compress");
        let passes = rec.submit()?.wait_profiled()?;
        let ms = gpu_ms(&passes, ms_since(wall));
        self.last_steps = passes;
        let words = self.size.mapped()?[0] as usize;
        if words > capacity {
            return Err(CompositorError::Corrupt(format!("GPU encoder reported {words} words, capacity {capacity}")));
        }
        Ok((words, ms))
    }

    /// GPU time of each step of the last [`GpuEncoder::encode_roi`] (empty without
    /// timestamps).
    pub fn last_steps(&self) -> &[engine::PassTime] {
        &self.last_steps
    }

    /// Copies the first `words` of the device payload to the host; returns them and the copy
    /// time in ms.
    pub fn download(&mut self, words: usize) -> Result<(Vec<u32>, f64)> {
        if self.host.as_ref().is_none_or(|h| h.len() < words) {
            self.host = None;
            self.host = Some(self.ctx.buffer(words.next_power_of_two(), Location::Download, "ap payload (host)")?);
        }
        let (out, host) = (self.out.as_ref().unwrap(), self.host.as_ref().unwrap());
        let wall = Instant::now();
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(2)?;
        rec.copy_region(out, 0, host, 0, words);
        rec.mark("d2h");
        let passes = rec.submit()?.wait_profiled()?;
        let ms = gpu_ms(&passes, ms_since(wall));
        Ok((host.mapped()?[..words].to_vec(), ms))
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
        let total = crate::ap::pixel_count(width, height)?;
        let (roi, roi_ms) = self.roi(depth, width, height)?;
        let Some(r) = roi else {
            let times = EncodeTimes { roi_ms, ..Default::default() };
            return Ok((Encoded { pixels: total, words: vec![total as u32, 0] }, None, times));
        };
        let (words, encode_ms) = self.encode_roi(color, depth, width, height, &r)?;
        let (words, d2h_ms) = self.download(words)?;
        Ok((Encoded { pixels: total, words }, roi, EncodeTimes { roi_ms, encode_ms, d2h_ms }))
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
        let mut enc = GpuEncoder::new(ctx).unwrap();
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
            }
        }
        testing::assert_no_validation_messages();
    }
}
