//! Compositing of encoded images on the GPU (`ap_blend.comp`): the encoded payloads go to
//! the device as they are, with a table of their active segments; the kernel composites
//! every pixel straight from the payloads into a raw frame, which the GPU encoder encodes.
//! Buffers are kept from call to call (the distributed renderer composites every frame).

use engine::{Buffer, ComputePipeline, Context, Location, PipelineDesc, Recorder};

use crate::ap::{runs, Encoded};
use crate::error::{CompositorError, Result};
use crate::gpu_encode::{GpuEncoder, Roi};
use crate::ops::Op;
use crate::shaders;

const WORKGROUP: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    n: u32,
    k: u32,
    op: u32,
}

/// A host-written array and its device copy, both kept between calls (fresh allocations
/// of several MB per frame cost more in page faults than the copies themselves).
#[derive(Default)]
struct Staged {
    host: Option<Buffer<u32>>,
    device: Option<Buffer<u32>>,
}

impl Staged {
    /// The host buffer, at least `len` long (never empty: a binding needs a buffer even when
    /// there is nothing in it).
    fn host(&mut self, ctx: &Context, len: usize, what: &str) -> Result<&mut [u32]> {
        let len = len.max(1).next_power_of_two();
        Ok(ctx.reuse_buffer(&mut self.host, len, Location::Upload, what)?.mapped_mut()?)
    }

    /// Records the copy of the first `len` host words to the device buffer.
    fn record_copy(&mut self, ctx: &Context, rec: &mut Recorder, len: usize, what: &str) -> Result<()> {
        let host = self.host.as_ref().expect("host buffer written before its copy");
        let device = ctx.reuse_buffer(&mut self.device, host.len(), Location::Device, what)?;
        rec.copy_region(host, 0, device, 0, len);
        Ok(())
    }

    /// Writes `data` to the host buffer and records its copy to the device buffer.
    fn stage(&mut self, ctx: &Context, rec: &mut Recorder, data: &[u32], what: &str) -> Result<()> {
        self.host(ctx, data.len(), what)?[..data.len()].copy_from_slice(data);
        self.record_copy(ctx, rec, data.len(), what)
    }

    fn device(&self) -> &Buffer<u32> {
        self.device.as_ref().unwrap()
    }
}

/// The GPU compositing pipeline, the encoder for its result and their buffers.
pub struct GpuBlender {
    ctx: Context,
    pipe: ComputePipeline,
    encoder: GpuEncoder,
    payload: Staged,
    segments: Staged,
    table: Staged,
    color: Option<Buffer<u32>>,
    depth: Option<Buffer<f32>>,
    /// Host lists of segments and of each input's (first segment, count), kept for reuse.
    segment_list: Vec<u32>,
    table_list: Vec<u32>,
}

impl GpuBlender {
    pub fn new(ctx: &Context) -> Result<GpuBlender> {
        let pipe = ctx.compute_pipeline(&PipelineDesc {
            name: "ap_blend",
            spirv: shaders::AP_BLEND,
            bindings: 5,
            push_bytes: std::mem::size_of::<Push>() as u32,
            spec: &[WORKGROUP],
        })?;
        Ok(GpuBlender {
            ctx: ctx.clone(),
            pipe,
            encoder: GpuEncoder::new(ctx)?,
            payload: Staged::default(),
            segments: Staged::default(),
            table: Staged::default(),
            color: None,
            depth: None,
            segment_list: Vec::new(),
            table_list: Vec::new(),
        })
    }

    /// Composites validated encoded inputs of equal pixel count with `op` (same result,
    /// byte for byte, as [`crate::ops::composite`]).
    pub fn composite(&mut self, inputs: &[&Encoded], op: Op) -> Result<Encoded> {
        let first = inputs.first().ok_or_else(|| CompositorError::Invalid("nothing to composite".into()))?;
        if let Some(other) = inputs.iter().find(|e| e.pixels != first.pixels) {
            return Err(CompositorError::SizeMismatch(format!(
                "inputs have {} and {} pixels",
                first.pixels, other.pixels
            )));
        }
        let n = first.pixels;
        if n == 0 {
            return Ok(Encoded { pixels: 0, words: Vec::new() });
        }
        // The payloads go straight into the staging buffer, one after the other, and the
        // active segments (first pixel, count, word offset there) are listed on the way.
        let ctx = self.ctx.clone();
        let words: usize = inputs.iter().map(|e| e.words.len()).sum();
        let staging = self.payload.host(&ctx, words, "blend payloads")?;
        self.segment_list.clear();
        self.table_list.clear();
        let mut base = 0usize;
        for e in inputs {
            staging[base..base + e.words.len()].copy_from_slice(&e.words);
            let first_segment = self.segment_list.len() / 3;
            let (mut pixel, mut word) = (0usize, base);
            for run in runs(&e.words) {
                pixel += run.inactive as usize;
                word += 2;
                if run.active > 0 {
                    self.segment_list.extend_from_slice(&[pixel as u32, run.active, word as u32]);
                }
                pixel += run.active as usize;
                word += run.pixels.len();
            }
            base += e.words.len();
            let count = self.segment_list.len() / 3 - first_segment;
            self.table_list.extend_from_slice(&[first_segment as u32, count as u32]);
        }
        let mut rec = ctx.recorder()?;
        self.payload.record_copy(&ctx, &mut rec, words, "blend payloads")?;
        self.segments.stage(&ctx, &mut rec, &self.segment_list, "blend segments")?;
        self.table.stage(&ctx, &mut rec, &self.table_list, "blend inputs")?;
        let color = ctx.reuse_buffer(&mut self.color, n, Location::Device, "blend colour")?;
        let depth = ctx.reuse_buffer(&mut self.depth, n, Location::Device, "blend depth")?;
        rec.barrier();
        rec.dispatch_linear(
            &self.pipe,
            &[
                self.payload.device().binding(),
                self.segments.device().binding(),
                self.table.device().binding(),
                color.binding(),
                depth.binding(),
            ],
            &Push { n: n as u32, k: inputs.len() as u32, op: op.code() },
            n.div_ceil(WORKGROUP as usize) as u32,
        );
        rec.submit()?.wait()?;
        // The result is encoded as one row of n pixels (the encoding does not depend on the
        // image's shape).
        let (color, depth) = (self.color.as_ref().unwrap(), self.depth.as_ref().unwrap());
        let (words, _) = self.encoder.encode_roi(color, depth, n as u32, 1, &Roi::full(n as u32, 1))?;
        let (words, _) = self.encoder.download(words)?;
        Ok(Encoded { pixels: n, words })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode_serial;
    use crate::patterns;
    use engine::testing;

    #[test]
    fn gpu_compositing_matches_the_cpu_operators() {
        let ctx = testing::context();
        let mut blender = GpuBlender::new(ctx).unwrap();
        for (w, h) in [(7, 3), (333, 211)] {
            let a = patterns::all(w, h, 21);
            let b = patterns::all(w, h, 22);
            for ((na, fa), (nb, fb)) in a.iter().zip(b.iter().rev()) {
                let mut fb = fb.clone();
                for i in (0..fb.pixels()).step_by(3) {
                    if fa.depth[i] != 1.0 && fb.depth[i] != 1.0 {
                        fb.depth[i] = fa.depth[i];
                    }
                }
                let (ea, eb) = (encode_serial(fa), encode_serial(&fb));
                for op in [Op::ZBuffer, Op::Over] {
                    let want = crate::ops::composite(&[&ea, &eb, &ea], op).unwrap();
                    let got = blender.composite(&[&ea, &eb, &ea], op).unwrap();
                    assert_eq!(got, want, "{na} + {nb} {op:?} {w}x{h}");
                }
            }
        }
        testing::assert_no_validation_messages();
    }
}
