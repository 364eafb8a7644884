//! Active Pixel encoding on the GPU as reduce, scan, scatter over chunks of one subgroup
//! (`ap_chunk.glsl`), with no tile waiting for another:
//!
//! 1. `ap_count`: every chunk's monoid sum and its prefix within the workgroup, each
//!    workgroup's sum, and the ROI box, reading every depth once; the workgroup that
//!    finishes last scans the workgroup sums;
//! 2. `ap_scatter`: each chunk with active pixels writes its payload from its prefix.
//!
//! The sequence is the image's pixels, so chunks outside the active pixels are skipped
//! instead of cut off by the box, and the result is the payload of the whole image,
//! byte-identical with [`crate::codec::encode_serial`].

use std::time::Instant;

use engine::{Buffer, ComputePipeline, Context, Location, PipelineDesc};

use crate::error::{CompositorError, Result};
use crate::gpu_encode::{EncodeTimes, Roi};
use crate::shaders;
use crate::timing::{gpu_ms, ms_since};

/// Shape of the chunked encoder's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChunkConfig {
    /// Invocations per workgroup of `ap_count` and `ap_scatter`.
    pub workgroup: u32,
    /// Words (subgroup-wide loads) per chunk.
    pub per_lane: u32,
    /// `ap_scatter` takes the chunks from the last one down.
    pub reverse: bool,
    /// Words `ap_scatter` loads at once (a divisor of `per_lane`).
    pub batch: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ChunkPush {
    n: u32,
    origin: u32,
    width: u32,
    groups: u32,
    chunks: u32,
    group_chunks: u32,
}

/// The chunked encoder's pipelines and buffers.
pub struct ChunkEncoder {
    ctx: Context,
    count: ComputePipeline,
    scatter: ComputePipeline,
    config: ChunkConfig,
    subgroup: u32,
    roi_box: Buffer<u32>,
    roi_host: Buffer<u32>,
    finished: Buffer<u32>,
    chunk_info: Option<Buffer<u32>>,
    group_sums: Option<Buffer<u32>>,
    out: Option<Buffer<u32>>,
    host: Option<Buffer<u32>>,
    size: Buffer<u32>,
}

impl ChunkEncoder {
    pub fn with_config(ctx: &Context, config: ChunkConfig) -> Result<ChunkEncoder> {
        let subgroup = ctx.info().subgroup_size;
        if config.per_lane == 0 || config.per_lane % 32 != 0 || config.batch == 0 || config.per_lane % config.batch != 0
        {
            return Err(CompositorError::Invalid(format!(
                "batches of {} words in chunks of {}",
                config.batch, config.per_lane
            )));
        }
        if !(8..=32).contains(&subgroup) || config.workgroup % subgroup != 0 || config.workgroup / subgroup > 128 {
            return Err(CompositorError::Invalid(format!(
                "chunked encoding needs subgroups of 8 to 32 lanes dividing the workgroup (subgroup {subgroup}, workgroup {})",
                config.workgroup
            )));
        }
        let pipe = |name: &str, spirv: &[u8], bindings: u32, spec: &[u32]| {
            ctx.compute_pipeline(&PipelineDesc {
                name,
                spirv,
                bindings,
                push_bytes: std::mem::size_of::<ChunkPush>() as u32,
                spec,
            })
        };
        Ok(ChunkEncoder {
            ctx: ctx.clone(),
            count: pipe("ap_count", shaders::AP_COUNT, 5, &[config.workgroup, config.per_lane])?,
            scatter: pipe(
                "ap_scatter",
                shaders::AP_SCATTER,
                6,
                &[config.workgroup, config.per_lane, config.reverse as u32, config.batch],
            )?,
            config,
            subgroup,
            roi_box: ctx.buffer(4, Location::Device, "roi box")?,
            roi_host: ctx.buffer(4, Location::Download, "roi box (host)")?,
            finished: ctx.buffer(1, Location::Device, "ap count workgroups finished")?,
            chunk_info: None,
            group_sums: None,
            out: None,
            host: None,
            size: ctx.buffer(1, Location::Download, "ap size")?,
        })
    }

    pub fn config(&self) -> ChunkConfig {
        self.config
    }

    /// The driver's compiler statistics of the counting and scatter kernels.
    pub fn kernel_statistics(&self) -> Result<[engine::PipelineStatistics; 2]> {
        Ok([self.count.statistics()?, self.scatter.statistics()?])
    }

    /// Encodes the `width x height` image at pixel `origin` of the buffers into the device
    /// payload buffer: payload words, the ROI box, and the GPU times (`roi_ms`: pass 1,
    /// `encode_ms`: passes 2 and 3).
    pub fn encode_image(
        &mut self,
        color: &Buffer<u32>,
        depth: &Buffer<f32>,
        width: u32,
        height: u32,
        origin: usize,
    ) -> Result<(usize, Option<Roi>, EncodeTimes)> {
        let total = crate::ap::pixel_count(width, height)?;
        let end = origin + total;
        let Ok(origin) = u32::try_from(origin) else {
            return Err(CompositorError::Invalid(format!("image at pixel {origin} is too far into its buffers")));
        };
        if color.len() < end || depth.len() < end {
            return Err(CompositorError::Invalid(format!(
                "colour/depth buffers smaller than a {width}x{height} image at pixel {origin}"
            )));
        }
        let chunk = (self.subgroup * self.config.per_lane) as usize;
        let group_chunks = (self.config.workgroup / self.subgroup) as usize;
        let chunks = total.div_ceil(chunk);
        let groups = chunks.div_ceil(group_chunks);
        self.ctx.reuse_buffer(&mut self.out, 2 * total + 4, Location::Device, "ap payload")?;
        self.ctx.reuse_buffer(&mut self.chunk_info, 4 * chunks, Location::Device, "ap chunk prefixes")?;
        self.ctx.reuse_buffer(&mut self.group_sums, 4 * groups, Location::Device, "ap group sums")?;
        let (out, info, sums) =
            (self.out.as_ref().unwrap(), self.chunk_info.as_ref().unwrap(), self.group_sums.as_ref().unwrap());
        let push = ChunkPush {
            n: total as u32,
            origin,
            width,
            groups: groups as u32,
            chunks: chunks as u32,
            group_chunks: group_chunks as u32,
        };
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(4)?;
        rec.fill(&self.roi_box, u32::MAX);
        rec.fill(&self.finished, 0);
        rec.barrier();
        rec.dispatch_linear(
            &self.count,
            &[depth.binding(), self.roi_box.binding(), info.binding(), sums.binding(), self.finished.binding()],
            &push,
            groups as u32,
        );
        rec.mark("roi");
        rec.barrier();
        rec.dispatch_linear(
            &self.scatter,
            &[color.binding(), depth.binding(), info.binding(), sums.binding(), out.binding(), self.size.binding()],
            &push,
            groups as u32,
        );
        rec.mark("encode");
        rec.copy(&self.roi_box, &self.roi_host);
        rec.mark("roi readback");
        let wall = Instant::now();
        let passes = rec.submit()?.wait_profiled()?;
        let wall = ms_since(wall);
        let words = self.size.mapped()?[0] as usize;
        if words > 2 * total + 4 {
            return Err(CompositorError::Corrupt(format!("GPU encoder reported {words} words for {total} pixels")));
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

    /// Copies the first `words` of the device payload to the host.
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
        Ok((host.mapped()?[..words].to_vec(), ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode_serial;
    use crate::gpu_encode::roi_cpu;
    use crate::patterns;
    use engine::testing;

    #[test]
    fn chunked_encoding_is_byte_identical_with_the_cpu_reference() {
        let ctx = testing::context();
        for config in [
            ChunkConfig { workgroup: 256, per_lane: 32, reverse: false, batch: 8 },
            ChunkConfig { workgroup: 64, per_lane: 96, reverse: true, batch: 12 },
        ] {
            let mut enc = ChunkEncoder::with_config(ctx, config).unwrap();
            for (w, h) in patterns::SIZES {
                for (name, frame) in patterns::all(w, h, 11) {
                    let color = ctx.upload(&frame.color, "color").unwrap();
                    let depth = ctx.upload(&frame.depth, "depth").unwrap();
                    let want = encode_serial(&frame);
                    let (words, roi, _) = enc.encode_image(&color, &depth, w, h, 0).unwrap();
                    assert_eq!(roi, roi_cpu(&frame.depth, w), "ROI of {name} {w}x{h} {config:?}");
                    assert_eq!(enc.download(words).unwrap().0, want.words, "{name} {w}x{h} {config:?}");
                    let n = frame.pixels();
                    let (start, len) = (n / 3, (n / 2).max(1));
                    let span = crate::ops::split(&want, &[start, start + len]).swap_remove(1);
                    let (words, _, _) = enc.encode_image(&color, &depth, len as u32, 1, start).unwrap();
                    assert_eq!(enc.download(words).unwrap().0, span.words, "span of {name} {w}x{h} {config:?}");
                }
            }
        }
        // One subgroup per workgroup: the scan of the workgroup sums takes several rounds.
        let sg = ctx.info().subgroup_size;
        let mut enc =
            ChunkEncoder::with_config(ctx, ChunkConfig { workgroup: sg, per_lane: 32, reverse: false, batch: 4 })
                .unwrap();
        let (w, h) = (1031, 517);
        for (name, frame) in patterns::all(w, h, 5) {
            let color = ctx.upload(&frame.color, "color").unwrap();
            let depth = ctx.upload(&frame.depth, "depth").unwrap();
            let (words, _, _) = enc.encode_image(&color, &depth, w, h, 0).unwrap();
            assert_eq!(
                enc.download(words).unwrap().0,
                encode_serial(&frame).words,
                "{name} {w}x{h}, {sg}-pixel chunks"
            );
        }
        testing::assert_no_validation_messages();
    }
}
