//! Compositing of encoded images on the GPU, the twin of [`crate::cpu::blend`]: the encoded
//! payloads go to the device as they are, with a table of their active segments, and each
//! kernel reads every pixel straight from the payloads. `ap_blend` composites them into a
//! raw frame, which the GPU encoder encodes ([`GpuBlender::composite`]); `ap_zmerge`
//! z-buffers them into a span of a raw frame in place ([`GpuBlender::merge_into`]).
//! Buffers are kept from call to call (the distributed renderer composites every frame).
//!
//! Inputs whose payloads, segment tables or raw pixels would not bind within the device's
//! storage-buffer range are cut into pieces of pixels on the host ([`crate::spans::split`])
//! and composited piece by piece, one submission each.

use engine::{Buffer, Context, Kernel, Location, Recorder, Region};

use crate::ap::{runs, Encoded};
use crate::error::{CompositeError, Result};
use crate::gpu::encode::GpuEncoder;
use crate::shaders::kernels;
use crate::spans::{concat, split};
use crate::types::Op;

const WORKGROUP: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BlendPush {
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
    /// Words of the last copy (the buffers may be longer).
    len: usize,
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
        self.len = len;
        Ok(())
    }

    /// Writes `data` to the host buffer and records its copy to the device buffer.
    fn stage(&mut self, ctx: &Context, rec: &mut Recorder, data: &[u32], what: &str) -> Result<()> {
        self.host(ctx, data.len(), what)?[..data.len()].copy_from_slice(data);
        self.record_copy(ctx, rec, data.len(), what)
    }

    /// The words of the last copy on the device, as a binding.
    fn device(&self) -> Region<'_> {
        self.device.as_ref().unwrap().range(0, self.len)
    }
}

/// Encoded inputs on their way to the GPU: the payloads one after the other, their active
/// segments (first pixel, count, word offset there) and each input's (first segment,
/// segment count), as `ap_segments.glsl` reads them.
#[derive(Default)]
struct EncodedInputs {
    payload: Staged,
    segments: Staged,
    table: Staged,
    /// Host lists, kept for reuse.
    segment_list: Vec<u32>,
    table_list: Vec<u32>,
}

impl EncodedInputs {
    /// Writes `inputs` to the staging buffers (the payloads straight in, the segments listed
    /// on the way) and records their copies to the device.
    fn record_upload(&mut self, ctx: &Context, rec: &mut Recorder, inputs: &[&Encoded]) -> Result<()> {
        let words: usize = inputs.iter().map(|e| e.words.len()).sum();
        let staging = self.payload.host(ctx, words, "blend payloads")?;
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
        self.payload.record_copy(ctx, rec, words, "blend payloads")?;
        self.segments.stage(ctx, rec, &self.segment_list, "blend segments")?;
        self.table.stage(ctx, rec, &self.table_list, "blend inputs")?;
        Ok(())
    }

    /// The three device buffers, in binding order.
    fn bindings(&self) -> [Region<'_>; 3] {
        [self.payload.device(), self.segments.device(), self.table.device()]
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct MergePush {
    n: u32,
    k: u32,
    own: u32,
    origin: u32,
}

/// `inputs` of `n` pixels each cut into pieces of `piece` pixels (the last may be shorter):
/// each piece's first pixel and the inputs' parts.
fn in_pieces(inputs: &[&Encoded], n: usize, piece: usize) -> Vec<(usize, Vec<Encoded>)> {
    let bounds: Vec<usize> = (piece..n).step_by(piece).collect();
    let mut parts: Vec<std::vec::IntoIter<Encoded>> = inputs.iter().map(|e| split(e, &bounds).into_iter()).collect();
    std::iter::once(0)
        .chain(bounds.iter().copied())
        .map(|at| (at, parts.iter_mut().map(|p| p.next().expect("one part per piece")).collect()))
        .collect()
}

/// The GPU compositing pipelines, the encoder for their results and their buffers.
pub struct GpuBlender {
    ctx: Context,
    blend: Kernel<BlendPush>,
    merge: Kernel<MergePush>,
    encoder: GpuEncoder,
    inputs: EncodedInputs,
    color: Option<Buffer<u32>>,
    depth: Option<Buffer<f32>>,
    /// Bytes one binding holds: the device's storage-buffer range.
    range: usize,
}

impl GpuBlender {
    pub fn new(ctx: &Context) -> Result<GpuBlender> {
        Ok(GpuBlender {
            ctx: ctx.clone(),
            blend: ctx.kernel(&kernels::AP_BLEND, &[WORKGROUP])?,
            merge: ctx.kernel(&kernels::AP_ZMERGE, &[WORKGROUP])?,
            encoder: GpuEncoder::new(ctx)?,
            inputs: EncodedInputs::default(),
            color: None,
            depth: None,
            range: usize::try_from(ctx.info().max_storage_buffer_range).unwrap_or(usize::MAX),
        })
    }

    /// Composites validated encoded inputs of equal pixel count with `op` (same result,
    /// byte for byte, as [`crate::cpu::blend::composite`]).
    pub fn composite(&mut self, inputs: &[&Encoded], op: Op) -> Result<Encoded> {
        let n = crate::ap::same_pixels(inputs)?;
        let piece = self.piece_pixels(inputs, n);
        if piece >= n {
            return self.composite_piece(inputs, op);
        }
        let pieces = in_pieces(inputs, n, piece)
            .iter()
            .map(|(_, part)| self.composite_piece(&part.iter().collect::<Vec<_>>(), op))
            .collect::<Result<Vec<_>>>()?;
        Ok(concat(pieces))
    }

    /// [`GpuBlender::composite`] in one submission.
    fn composite_piece(&mut self, inputs: &[&Encoded], op: Op) -> Result<Encoded> {
        let n = self.blend(inputs, op)?;
        if n == 0 {
            return Ok(Encoded { pixels: 0, words: Vec::new() });
        }
        // The result is encoded as one row of n pixels (the encoding does not depend on the
        // image's shape).
        let (color, depth) = (self.color.as_ref().unwrap(), self.depth.as_ref().unwrap());
        Ok(self.encoder.encode_span(color, depth, 0, n)?.0)
    }

    /// The most pixels one blend or merge submission covers for these inputs of `n` pixels:
    /// all of them where the payloads, their segments (at most one 3-word segment per 2-word
    /// run header) and the raw pixels bind at once, else a share sized for the worst case
    /// (2 words a pixel and 4 more per input).
    fn piece_pixels(&self, inputs: &[&Encoded], n: usize) -> usize {
        let range = self.range;
        let align = self.ctx.info().offset_alignment_words();
        let binds = |words: usize, pixels: usize| 6 * words <= range && 4 * (pixels + align) <= range;
        let words: usize = inputs.iter().map(|e| e.words.len()).sum();
        if binds(words, n) {
            return n;
        }
        let per_input = (range / (6 * inputs.len().max(1))).saturating_sub(4) / 2;
        per_input.min((range / 4).saturating_sub(align)).max(1)
    }

    /// `ap_blend`: composites the inputs into the raw colour and depth buffers; returns their
    /// pixel count.
    fn blend(&mut self, inputs: &[&Encoded], op: Op) -> Result<usize> {
        let n = crate::ap::same_pixels(inputs)?;
        if n == 0 {
            return Ok(0);
        }
        let ctx = self.ctx.clone();
        let mut rec = ctx.recorder()?;
        self.inputs.record_upload(&ctx, &mut rec, inputs)?;
        let color = ctx.reuse_buffer(&mut self.color, n, Location::Device, "blend colour")?.range(0, n);
        let depth = ctx.reuse_buffer(&mut self.depth, n, Location::Device, "blend depth")?.range(0, n);
        let [payload, segments, table] = self.inputs.bindings();
        rec.pass(&self.blend)
            .read(&payload)
            .read(&segments)
            .read(&table)
            .write(&color)
            .write(&depth)
            .push(&BlendPush { n: n as u32, k: inputs.len() as u32, op: op.code() })
            .dispatch_linear(n.div_ceil(WORKGROUP as usize) as u32)?;
        rec.submit()?.wait()?;
        Ok(n)
    }

    /// Z-buffers validated encoded spans `received` of `len` pixels each into the raw span of
    /// `len` pixels at pixel `start` of `color` and `depth`, in place; the raw span takes
    /// position `own` among the inputs' order (ties go to the earlier input).
    pub fn merge_into(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        (start, len): (usize, usize),
        received: &[&Encoded],
        own: usize,
    ) -> Result<()> {
        if let Some(e) = received.iter().find(|e| e.pixels != len) {
            return Err(CompositeError::SpanPixels { got: e.pixels, want: len });
        }
        if start + len > color.len().min(depth.len()) || own > received.len() {
            return Err(CompositeError::Invalid(format!("span {start}+{len} outside the frame")));
        }
        if received.is_empty() || len == 0 {
            return Ok(());
        }
        let piece = self.piece_pixels(received, len);
        if piece >= len {
            return self.merge_piece((color, depth), (start, len), received, own);
        }
        for (at, part) in in_pieces(received, len, piece) {
            let part: Vec<&Encoded> = part.iter().collect();
            self.merge_piece((color, depth), (start + at, part[0].pixels), &part, own)?;
        }
        Ok(())
    }

    /// [`GpuBlender::merge_into`] in one submission.
    fn merge_piece(
        &mut self,
        (color, depth): (&Buffer<u32>, &Buffer<f32>),
        (start, len): (usize, usize),
        received: &[&Encoded],
        own: usize,
    ) -> Result<()> {
        let ctx = self.ctx.clone();
        let mut rec = ctx.recorder()?;
        self.inputs.record_upload(&ctx, &mut rec, received)?;
        let [payload, segments, table] = self.inputs.bindings();
        // The span's slices start at the aligned pixel at or before it.
        let base = start - start % ctx.info().offset_alignment_words();
        let (color, depth) = (color.range(base, start + len - base), depth.range(base, start + len - base));
        let origin = (start - base) as u32;
        let push = MergePush { n: len as u32, k: received.len() as u32, own: own as u32, origin };
        rec.pass(&self.merge)
            .read(&payload)
            .read(&segments)
            .read(&table)
            .read_write(&color)
            .read_write(&depth)
            .push(&push)
            .dispatch_linear(len.div_ceil(WORKGROUP as usize) as u32)?;
        rec.submit()?.wait()?;
        Ok(())
    }

    /// The encoder this blender uses (for callers that encode spans of their own frames).
    pub fn encoder(&mut self) -> &mut GpuEncoder {
        &mut self.encoder
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::blend::composite;
    use crate::cpu::encode::encode_serial;
    use crate::frame::Frame;
    use crate::patterns;
    use crate::spans::split;
    use engine::testing;

    /// `ap_blend` on its own (its raw frame against the CPU twin's result, decoded), then
    /// with the encoder after it, at every test size, on random runs and the edge patterns.
    #[test]
    fn ap_blend_matches_the_cpu_operators() {
        let ctx = testing::context();
        let mut blender = GpuBlender::new(ctx).unwrap();
        for (w, h) in patterns::SIZES {
            for (name, fa, fb) in patterns::tied_pairs(w, h, 21, 3) {
                let (ea, eb) = (encode_serial(&fa), encode_serial(&fb));
                for op in [Op::ZBuffer, Op::Over] {
                    let want = composite(&[&ea, &eb, &ea], op).unwrap();
                    let n = blender.blend(&[&ea, &eb, &ea], op).unwrap();
                    let color = ctx.download(blender.color.as_ref().unwrap()).unwrap()[..n].to_vec();
                    let depth = ctx.download(blender.depth.as_ref().unwrap()).unwrap()[..n].to_vec();
                    let raw = Frame { width: w, height: h, color, depth };
                    assert_eq!(raw, Frame::decode(&want, w, h), "ap_blend: {name} {op:?} {w}x{h}");
                    let got = blender.composite(&[&ea, &eb, &ea], op).unwrap();
                    assert_eq!(got, want, "{name} {op:?} {w}x{h}");
                }
            }
        }
        testing::assert_no_validation_messages();
    }

    /// Inputs larger than one submission binds (a small range stands in for lavapipe's 128
    /// MiB) are blended and merged in pieces, with the same result.
    #[test]
    fn inputs_past_the_binding_range_go_in_pieces() {
        let ctx = testing::context();
        let mut blender = GpuBlender::new(ctx).unwrap();
        let (w, h) = (211u32, 67u32);
        let frames: Vec<Frame> = (40..43).map(|seed| patterns::all(w, h, seed).pop().unwrap().1).collect();
        let encoded: Vec<Encoded> = frames.iter().map(encode_serial).collect();
        let refs: Vec<&Encoded> = encoded.iter().collect();
        for range in [4096, 20_000, 100_003] {
            blender.range = range;
            let n = frames[0].pixels();
            assert!(blender.piece_pixels(&refs, n) < n, "{range} bytes hold every input");
            blender.encoder().limit_submissions(range / 8);
            for op in [Op::ZBuffer, Op::Over] {
                assert_eq!(blender.composite(&refs, op).unwrap(), composite(&refs, op).unwrap(), "{op:?}, {range}");
            }
            // Rank 1's frame takes the others' spans of its middle half, from an odd pixel.
            let (start, len) = (n / 4 + 1, n / 2);
            let spans: Vec<Encoded> = encoded.iter().map(|e| split(e, &[start, start + len]).swap_remove(1)).collect();
            let color = ctx.upload(&frames[1].color, "own colour").unwrap();
            let depth = ctx.upload(&frames[1].depth, "own depth").unwrap();
            blender.merge_into(&color, &depth, (start, len), &[&spans[0], &spans[2]], 1).unwrap();
            let merged = Frame {
                width: len as u32,
                height: 1,
                color: ctx.download(&color).unwrap()[start..start + len].to_vec(),
                depth: ctx.download(&depth).unwrap()[start..start + len].to_vec(),
            };
            let want = composite(&spans.iter().collect::<Vec<_>>(), Op::ZBuffer).unwrap();
            assert_eq!(encode_serial(&merged), want, "merged in pieces, {range}");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn ap_zmerge_matches_the_cpu_zbuffer() {
        let ctx = testing::context();
        let mut blender = GpuBlender::new(ctx).unwrap();
        for (w, h) in patterns::SIZES {
            // Three ranks' frames (random runs), with equal depths where they overlap every
            // third pixel so that the tie rule matters.
            let mut frames: Vec<Frame> = (31..34).map(|seed| patterns::all(w, h, seed).pop().unwrap().1).collect();
            let (front, rest) = frames.split_first_mut().unwrap();
            for f in rest {
                patterns::tie(front, f, 3);
            }
            let n = frames[0].pixels();
            let (start, len) = (n / 5, n / 2);
            let span = |f: &Frame| split(&encode_serial(f), &[start, start + len]).swap_remove(1);
            let spans: Vec<Encoded> = frames.iter().map(span).collect();
            let want = composite(&spans.iter().collect::<Vec<_>>(), Op::ZBuffer).unwrap();
            for (own, frame) in frames.iter().enumerate() {
                let color = ctx.upload(&frame.color, "own colour").unwrap();
                let depth = ctx.upload(&frame.depth, "own depth").unwrap();
                let received: Vec<&Encoded> = (0..3).filter(|&i| i != own).map(|i| &spans[i]).collect();
                blender.merge_into(&color, &depth, (start, len), &received, own).unwrap();
                let (c, d) = (ctx.download(&color).unwrap(), ctx.download(&depth).unwrap());
                let merged = Frame {
                    width: len as u32,
                    height: 1,
                    color: c[start..start + len].to_vec(),
                    depth: d[start..start + len].to_vec(),
                };
                assert_eq!(encode_serial(&merged), want, "own frame at position {own}, {w}x{h}");
                assert_eq!(&c[..start], &frame.color[..start], "pixels before the span changed");
                assert_eq!(&d[start + len..], &frame.depth[start + len..], "pixels after the span changed");
            }
        }
        testing::assert_no_validation_messages();
    }
}
