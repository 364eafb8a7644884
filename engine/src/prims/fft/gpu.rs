//! The GPU 2D FFT plan: one dispatch of `shaders/engine/fft_lines.comp` per axis.
//!
//! A 2D FFT is a batch of row FFTs followed by a batch of column FFTs, each done in place by
//! one dispatch that reads and writes the whole data once (so a 2D FFT is 2 passes over
//! memory, 1 when width or height is 1, for every size, power of two or Bluestein). A
//! workgroup holds a few whole lines in shared memory: rows with neighbouring invocations on
//! neighbouring values, columns with neighbouring invocations on neighbouring columns, both
//! coalesced. The line's FFT size (the length, or the Bluestein size for other lengths) must
//! fit in shared memory: `8 * m <= maxComputeSharedMemorySize`.

use super::tables::{bluestein_kernel, chirp, fft_size, twiddles};
use super::Direction;
use crate::commands::Recorder;
use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::memory::Buffer;
use crate::pipeline::{ComputePipeline, PipelineDesc};
use crate::shaders;

/// Bytes of one complex f32 in shared memory.
const COMPLEX_BYTES: usize = 8;
/// Values each invocation holds in registers (the main radix).
const VALUES_PER_INVOCATION: usize = 8;
/// Columns one workgroup transforms together at most: 16 complex f32 make one 128-byte
/// memory transaction per row.
const MAX_COLUMNS_PER_GROUP: usize = 16;
/// Invocations a row workgroup aims for when lines are short (many rows per workgroup).
const ROW_GROUP_INVOCATIONS: usize = 128;

/// Push constants of `fft_lines.comp` (same order).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    n: u32,
    lines: u32,
    lines_per_image: u32,
    image_stride: u32,
    line_stride: u32,
    elem_stride: u32,
    inverse: u32,
    twiddle_at: u32,
    chirp_at: u32,
    kernel_at: u32,
    scale: f32,
}

/// How the lines of one axis are laid out in memory.
struct Lines {
    len: usize,
    count: usize,
    per_image: usize,
    image_stride: usize,
    line_stride: usize,
    elem_stride: usize,
    /// Columns: neighbouring invocations take neighbouring lines.
    lines_fast: bool,
}

/// One axis of the plan: its pipeline (specialised for its workgroup shape) and arguments.
struct Axis {
    pipeline: ComputePipeline,
    push: Push,
    groups: u32,
}

/// A 2D FFT plan for `batch` complex images of `width x height` on one device: pipelines and
/// constant tables are made once here; [`Fft2d::record`] records the transform.
pub struct Fft2d {
    ctx: Context,
    width: usize,
    height: usize,
    batch: usize,
    axes: Vec<Axis>,
    tables: Buffer<[f32; 2]>,
}

impl Fft2d {
    /// Plans the transform; fails with [`EngineError::InvalidInput`] for an empty shape and
    /// [`EngineError::Unsupported`] when a line needs a larger FFT than shared memory holds.
    pub fn new(ctx: &Context, width: usize, height: usize, batch: usize) -> Result<Fft2d> {
        if width == 0 || height == 0 || batch == 0 {
            return Err(EngineError::InvalidInput(format!("FFT of {batch} images of {width}x{height}")));
        }
        let total = width.checked_mul(height).and_then(|v| v.checked_mul(batch)).unwrap_or(usize::MAX);
        let bytes = total.saturating_mul(COMPLEX_BYTES) as u64;
        if total > u32::MAX as usize || bytes > ctx.info().max_storage_buffer_range {
            return Err(EngineError::Unsupported(format!(
                "FFT of {batch} images of {width}x{height} ({bytes} bytes) exceeds the device's storage buffer range of {} bytes; split the batch",
                ctx.info().max_storage_buffer_range
            )));
        }
        let image = width * height;
        let mut layouts = Vec::new();
        if width > 1 {
            layouts.push(Lines {
                len: width,
                count: batch * height,
                per_image: height,
                image_stride: image,
                line_stride: width,
                elem_stride: 1,
                lines_fast: false,
            });
        }
        if height > 1 {
            layouts.push(Lines {
                len: height,
                count: batch * width,
                per_image: width,
                image_stride: image,
                line_stride: 1,
                elem_stride: width,
                lines_fast: true,
            });
        }
        let mut table = Vec::new();
        let mut axes = Vec::new();
        for lines in &layouts {
            axes.push(Self::axis(ctx, lines, &mut table)?);
        }
        let tables = ctx.upload(&table, "FFT twiddle and chirp tables")?;
        Ok(Fft2d { ctx: ctx.clone(), width, height, batch, axes, tables })
    }

    /// Builds one axis: appends its tables to `table` and creates its pipeline.
    fn axis(ctx: &Context, lines: &Lines, table: &mut Vec<[f32; 2]>) -> Result<Axis> {
        let info = ctx.info();
        let n = lines.len;
        let m = fft_size(n);
        let values = VALUES_PER_INVOCATION.min(m);
        let per_line = m / values;
        let max_shared = info.max_shared_memory_bytes as usize;
        // Rows pad their shared-memory lines (one slot per 8) where the padding fits.
        let pad_shift = if !lines.lines_fast && (m + m / 8) * COMPLEX_BYTES <= max_shared { 3 } else { 0 };
        let line_slots = if pad_shift > 0 { m + (m >> pad_shift) } else { m };
        let shared_limit = max_shared / (line_slots * COMPLEX_BYTES);
        let invocation_limit = info.max_workgroup_invocations.min(info.max_workgroup_size[0]) as usize / per_line;
        if shared_limit == 0 || invocation_limit == 0 {
            return Err(EngineError::Unsupported(format!(
                "FFT line length {n} needs an in-workgroup FFT of size {m} ({} bytes of shared memory, {per_line} invocations); this device allows {} bytes and {} invocations",
                m * COMPLEX_BYTES,
                info.max_shared_memory_bytes,
                info.max_workgroup_invocations
            )));
        }
        let wanted = if lines.lines_fast { MAX_COLUMNS_PER_GROUP } else { ROW_GROUP_INVOCATIONS.div_ceil(per_line) };
        let group_lines = wanted.min(shared_limit).min(invocation_limit).min(lines.count).max(1);

        let twiddle_at = table.len() as u32;
        table.extend(twiddles(m));
        let bluestein = m != n;
        let (chirp_at, kernel_at) = if bluestein {
            let c = chirp(n);
            let chirp_at = table.len() as u32;
            table.extend(c.iter().map(|v| [v.re as f32, v.im as f32]));
            let kernel_at = table.len() as u32;
            table.extend(bluestein_kernel(&c, m));
            (chirp_at, kernel_at)
        } else {
            (0, 0)
        };
        let push = Push {
            n: n as u32,
            lines: lines.count as u32,
            lines_per_image: lines.per_image as u32,
            image_stride: lines.image_stride as u32,
            line_stride: lines.line_stride as u32,
            elem_stride: lines.elem_stride as u32,
            inverse: 0,
            twiddle_at,
            chirp_at,
            kernel_at,
            scale: 1.0,
        };
        let pipeline = ctx.compute_pipeline(&PipelineDesc {
            name: "fft_lines",
            spirv: shaders::FFT_LINES,
            bindings: 2,
            push_bytes: std::mem::size_of::<Push>() as u32,
            spec: &[
                (group_lines * per_line) as u32,
                values as u32,
                m.trailing_zeros(),
                group_lines as u32,
                lines.lines_fast as u32,
                pad_shift,
                (group_lines * line_slots) as u32,
                bluestein as u32,
            ],
        })?;
        Ok(Axis { pipeline, push, groups: lines.count.div_ceil(group_lines) as u32 })
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Complex values in the whole batch (`width * height * batch`).
    pub fn len(&self) -> usize {
        self.width * self.height * self.batch
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Dispatches [`Fft2d::record`] makes; each reads and writes the whole batch once, so the
    /// transform moves `passes() * 2 * len() * 8` bytes.
    pub fn passes(&self) -> usize {
        self.axes.len()
    }

    /// Records the transform of `data` (`len()` complex values, the batch of images) in place:
    /// one dispatch per axis with a barrier between them. The caller orders earlier writes to
    /// `data` before, and later reads after, with [`Recorder::barrier`]. The plan (its tables)
    /// must outlive the submission.
    pub fn record(&self, rec: &mut Recorder, data: &Buffer<[f32; 2]>, direction: Direction) -> Result<()> {
        if data.len() != self.len() {
            return Err(EngineError::InvalidInput(format!(
                "FFT plan for {} images of {}x{} ({} values) given a buffer of {} values",
                self.batch,
                self.width,
                self.height,
                self.len(),
                data.len()
            )));
        }
        let last = self.axes.len().saturating_sub(1);
        for (i, axis) in self.axes.iter().enumerate() {
            if i > 0 {
                rec.barrier();
            }
            let mut push = axis.push;
            if direction == Direction::Inverse {
                push.inverse = 1;
                if i == last {
                    push.scale = 1.0 / (self.width * self.height) as f32;
                }
            }
            rec.dispatch_linear(&axis.pipeline, &[data.binding(), self.tables.binding()], &push, axis.groups);
        }
        Ok(())
    }

    /// Uploads `host`, transforms it, downloads the result (a convenience for tests and
    /// one-off use; pipelines keep data on the GPU with [`Fft2d::record`]).
    pub fn transform(&self, host: &[[f32; 2]], direction: Direction) -> Result<Vec<[f32; 2]>> {
        let data = self.ctx.upload(host, "FFT data")?;
        let mut rec = self.ctx.recorder()?;
        self.record(&mut rec, &data, direction)?;
        rec.submit()?.wait()?;
        self.ctx.download(&data)
    }

    /// [`Fft2d::transform`] forward.
    pub fn forward(&self, host: &[[f32; 2]]) -> Result<Vec<[f32; 2]>> {
        self.transform(host, Direction::Forward)
    }

    /// [`Fft2d::transform`] inverse (scaled by `1 / (width*height)`).
    pub fn inverse(&self, host: &[[f32; 2]]) -> Result<Vec<[f32; 2]>> {
        self.transform(host, Direction::Inverse)
    }
}
