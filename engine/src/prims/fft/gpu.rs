//! The GPU 2D FFT plan: dispatches of `shaders/engine/fft_lines.comp` (and `fft_long.comp`).
//!
//! A 2D FFT is a batch of row FFTs followed by a batch of column FFTs. Lengths
//! `2^a 3^b 5^c` that are not powers of two take `fft_mixed.comp` (see `mixed.rs`), one
//! dispatch per axis like the direct path here. Where a line's FFT (its length, or the
//! Bluestein size for other lengths) fits in one workgroup's shared memory
//! (`8 * m <= maxComputeSharedMemorySize`: up to 4096, so Bluestein up to length 2048),
//! each axis is one in-place dispatch that reads and writes the whole data once, so a 2D FFT
//! is 2 passes over memory (1 when width or height is 1). A workgroup holds a few whole
//! lines: rows with neighbouring invocations on neighbouring values, columns with
//! neighbouring invocations on neighbouring columns, both coalesced. Longer lines take the
//! four-step path through a scratch buffer owned by the plan: 2 dispatches per axis for
//! powers of two, 3 for Bluestein.

use super::mixed::{self, MixedShape};
use super::plan::{append, Dispatch, FftConfig, Limits, Lines, LinesPush, LongPush, Push, COMPLEX_BYTES};
use super::tables::{bluestein_kernel, chirp, fft_size, twiddles};
use super::Direction;
use crate::commands::Recorder;
use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::memory::{Buffer, Location};
use crate::shaders::kernels;

/// The workgroup shape of in-workgroup FFTs of size `m`.
struct Shape {
    m: usize,
    values: usize,
    group_lines: usize,
    lines_fast: bool,
    pad_shift: u32,
    line_slots: usize,
    /// Exchange real and imaginary parts in turn (`SPLIT`), in half the shared memory.
    split: bool,
}

impl Shape {
    /// The shape for `count` lines, or `None` when one line does not fit in a workgroup of
    /// this device (or exceeds `direct_limit`, which tests lower to reach the long path), or
    /// is shorter than 2 (lines of 1 need no transform and are never planned).
    fn new(ctx: &Context, m: usize, lines_fast: bool, count: usize, limits: &Limits) -> Option<Shape> {
        let (config, direct_limit) = (&limits.config, limits.direct);
        let info = ctx.info();
        let values = (config.values as usize).min(m);
        let max_columns = config.columns as usize;
        let per_line = m / values;
        let max_shared = info.max_shared_memory_bytes as usize;
        // Rows pad their shared-memory lines (one slot per 8) where the padding fits.
        let pad_shift = if !lines_fast && (m + m / 8) * COMPLEX_BYTES <= max_shared { 3 } else { 0 };
        let line_slots = if pad_shift > 0 { m + (m >> pad_shift) } else { m };
        let invocation_limit = info.max_workgroup_invocations.min(info.max_workgroup_size[0]) as usize / per_line;
        if m < 2 || m > direct_limit || max_shared < line_slots * COMPLEX_BYTES || invocation_limit == 0 {
            return None;
        }
        let wanted = if lines_fast { max_columns } else { (config.row_invocations as usize).div_ceil(per_line) };
        // Lines per workgroup when each shared-memory slot takes `slot_bytes`.
        let fit = |slot_bytes: usize| {
            let lines = wanted.min(max_shared / (line_slots * slot_bytes)).min(invocation_limit).min(count).max(1);
            if lines_fast {
                1 << lines.ilog2()
            } else {
                lines
            }
        };
        let mut group_lines = fit(COMPLEX_BYTES);
        // Columns held below full row segments by shared memory alone (512-point columns on
        // NVIDIA's 48 KiB: 8 of 16) exchange real and imaginary parts in turn through half the
        // memory, which measured faster on an H100 than half-filled 128-byte transactions.
        let split = lines_fast && group_lines < max_columns && fit(COMPLEX_BYTES / 2) == max_columns;
        if split {
            group_lines = max_columns;
        }
        Some(Shape { m, values, group_lines, lines_fast, pad_shift, line_slots, split })
    }

    /// Specialization constants 0..=7 of `fft_stockham.glsl`, then `extra`.
    fn spec(&self, extra: &[u32]) -> Vec<u32> {
        let mut spec = vec![
            (self.group_lines * self.m / self.values) as u32,
            self.values as u32,
            self.m.trailing_zeros(),
            self.group_lines as u32,
            self.lines_fast as u32,
            self.pad_shift,
            (self.group_lines * self.line_slots / if self.split { 2 } else { 1 }) as u32,
            self.split as u32,
        ];
        spec.extend_from_slice(extra);
        spec
    }
}

/// A 2D FFT plan for `batch` complex images of `width x height` on one device: pipelines,
/// constant tables and scratch are made once here; [`Fft2d::record`] records the transform.
pub struct Fft2d {
    ctx: Context,
    width: usize,
    height: usize,
    batch: usize,
    dispatches: Vec<Dispatch>,
    tables: Buffer<[f32; 2]>,
    /// For lines too long for one workgroup (four-step), else a minimal placeholder.
    scratch: Buffer<[f32; 2]>,
}

impl Fft2d {
    /// Plans the transform; fails with [`EngineError::InvalidInput`] for an empty shape and
    /// [`EngineError::BindingRange`] when the data, or the scratch that lines too long for
    /// one workgroup need, exceeds what one storage buffer may hold on this device.
    pub fn new(ctx: &Context, width: usize, height: usize, batch: usize) -> Result<Fft2d> {
        Self::with_config(ctx, width, height, batch, FftConfig::default())
    }

    /// [`Fft2d::new`] with the kernels in the given shape (tuned, or swept).
    pub fn with_config(ctx: &Context, width: usize, height: usize, batch: usize, config: FftConfig) -> Result<Fft2d> {
        config.check()?;
        Self::plan(ctx, width, height, batch, &Limits { config, direct: usize::MAX })
    }

    /// [`Fft2d::new`], using the four-step path for every line whose FFT size exceeds
    /// `direct_limit` (tests use it to reach that path at small sizes).
    #[cfg(test)]
    pub(super) fn with_direct_limit(
        ctx: &Context,
        width: usize,
        height: usize,
        batch: usize,
        direct_limit: usize,
    ) -> Result<Fft2d> {
        Self::plan(ctx, width, height, batch, &Limits { config: FftConfig::default(), direct: direct_limit })
    }

    fn plan(ctx: &Context, width: usize, height: usize, batch: usize, limits: &Limits) -> Result<Fft2d> {
        if width == 0 || height == 0 || batch == 0 {
            return Err(EngineError::InvalidInput(format!("FFT of {batch} images of {width}x{height}")));
        }
        let total = width.checked_mul(height).and_then(|v| v.checked_mul(batch)).unwrap_or(usize::MAX);
        check_buffer(ctx, total, "FFT data", batch, width, height)?;
        let image = width * height;
        let mut axes = Vec::new();
        if width > 1 {
            axes.push(Lines {
                len: width,
                count: batch * height,
                per_image: height,
                image_stride: image,
                line_stride: width,
                elem_stride: 1,
                rows: true,
            });
        }
        if height > 1 {
            axes.push(Lines {
                len: height,
                count: batch * width,
                per_image: width,
                image_stride: image,
                line_stride: 1,
                elem_stride: width,
                rows: false,
            });
        }
        let mut table = Vec::new();
        let mut dispatches = Vec::new();
        let mut scratch_len = 0;
        for lines in &axes {
            if let Some(shape) = MixedShape::new(ctx, lines.len, !lines.rows, lines.count, limits) {
                dispatches.push(mixed::dispatch(ctx, lines, &shape, &mut table)?);
                continue;
            }
            let m = fft_size(lines.len);
            match Shape::new(ctx, m, !lines.rows, lines.count, limits) {
                Some(shape) => dispatches.push(direct(ctx, lines, &shape, &mut table)?),
                None => {
                    dispatches.extend(long(ctx, lines, limits, &mut table)?);
                    scratch_len = scratch_len.max(lines.count.saturating_mul(m));
                }
            }
        }
        check_buffer(ctx, scratch_len, "FFT scratch for lines longer than a workgroup holds", batch, width, height)?;
        let tables = ctx.upload(&table, "FFT twiddle and chirp tables")?;
        let scratch = ctx.buffer(scratch_len.max(1), Location::Device, "FFT scratch")?;
        Ok(Fft2d { ctx: ctx.clone(), width, height, batch, dispatches, tables, scratch })
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

    /// Dispatches [`Fft2d::record`] makes, each reading and writing the whole batch (or its
    /// padded scratch) once: 1 per axis longer than 1 whose FFT fits in a workgroup (so 2 for
    /// a 2D FFT up to 4096x4096, mixed radix, Bluestein or not), else 2 (powers of two) or 3
    /// (Bluestein).
    pub fn passes(&self) -> usize {
        self.dispatches.len()
    }

    /// The kernel of each dispatch in order (`fft_lines`, `fft_mixed`, `fft_long`), which
    /// says which path each axis takes.
    pub fn kernels(&self) -> Vec<&str> {
        self.dispatches.iter().map(Dispatch::name).collect()
    }

    /// Records the transform of `data` (`len()` complex values, the batch of images) in place:
    /// [`Fft2d::passes`] declared passes, which the recorder orders after the work that
    /// wrote `data` (and after an earlier transform that used the plan's scratch).
    ///
    /// To time it, wrap it in marks: `rec.enable_profiling(2)?; plan.record(&mut rec, &data,
    /// Direction::Forward)?; rec.mark("fft2d");` then `rec.submit()?.wait_profiled()?`.
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
        let last = self.dispatches.len().saturating_sub(1);
        let inverse = direction == Direction::Inverse;
        // The inverse's 1/(width*height) goes to the last dispatch, the one writing the result.
        let scale = |i: usize| if inverse && i == last { 1.0 / (self.width * self.height) as f32 } else { 1.0 };
        for (i, d) in self.dispatches.iter().enumerate() {
            match &d.push {
                Push::Lines(kernel, push) => {
                    let push = LinesPush { inverse: inverse as u32, scale: scale(i), ..*push };
                    rec.pass(kernel).read_write(data).read(&self.tables).push(&push).dispatch_linear(d.groups)?;
                }
                Push::Long(kernel, push) => {
                    let push = LongPush { inverse: inverse as u32, scale: scale(i), ..*push };
                    rec.pass(kernel)
                        .read_write(data)
                        .read_write(&self.scratch)
                        .read(&self.tables)
                        .push(&push)
                        .dispatch_linear(d.groups)?;
                }
            }
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

/// Fails unless `len` complex values fit one storage-buffer binding and u32 indexing.
fn check_buffer(ctx: &Context, len: usize, what: &str, batch: usize, width: usize, height: usize) -> Result<()> {
    let what = format!("{what} for {batch} images of {width}x{height}");
    if len > u32::MAX as usize {
        return Err(EngineError::Unsupported(format!("{what} holds {len} values, past 32-bit indices")));
    }
    ctx.check_binding(len.saturating_mul(COMPLEX_BYTES) as u64, &what)
}

/// Chirp and filter tables of Bluestein's algorithm for length `n` and FFT size `m`.
fn append_bluestein(table: &mut Vec<[f32; 2]>, n: usize, m: usize) -> (u32, u32) {
    let c = chirp(n);
    let chirp_at = append(table, c.iter().map(|v| [v.re as f32, v.im as f32]));
    let kernel_at = append(table, bluestein_kernel(&c, m));
    (chirp_at, kernel_at)
}

/// The single dispatch of an axis whose lines fit in a workgroup.
fn direct(ctx: &Context, lines: &Lines, shape: &Shape, table: &mut Vec<[f32; 2]>) -> Result<Dispatch> {
    let (n, m) = (lines.len, shape.m);
    let twiddle_at = append(table, twiddles(m));
    let bluestein = m != n;
    let (chirp_at, kernel_at) = if bluestein { append_bluestein(table, n, m) } else { (0, 0) };
    let push = LinesPush::forward(lines, twiddle_at, chirp_at, kernel_at);
    let kernel = ctx.kernel(&kernels::FFT_LINES, &shape.spec(&[bluestein as u32]))?;
    Ok(Dispatch { push: Push::Lines(kernel, push), groups: lines.count.div_ceil(shape.group_lines) as u32 })
}

/// The four-step dispatches (`fft_long.comp`: stages A and B, and C for Bluestein) of an
/// axis whose lines need an FFT larger than a workgroup holds.
fn long(ctx: &Context, lines: &Lines, limits: &Limits, table: &mut Vec<[f32; 2]>) -> Result<Vec<Dispatch>> {
    let (n, m) = (lines.len, fft_size(lines.len));
    let log2m = m.trailing_zeros();
    // Stages A and C transform over n1 (size m1), stage B over n2 (size m2).
    let m1 = 1usize << log2m.div_ceil(2);
    let m2 = m / m1;
    let unsupported = || {
        EngineError::Unsupported(format!(
            "FFT line length {n} needs an FFT of size {m}, over the square of what one workgroup of this device holds"
        ))
    };
    // Stages A and C: sub-lines of one long line are neighbours for rows, the same sub-line
    // of neighbouring lines for columns; both coalesced with neighbouring invocations on
    // neighbouring sub-lines. Stage B: positions are contiguous in scratch for rows.
    let shape_ac = Shape::new(ctx, m1, true, lines.count * (m / m1), limits).ok_or_else(unsupported)?;
    let shape_b = Shape::new(ctx, m2, !lines.rows, lines.count * (m / m2), limits).ok_or_else(unsupported)?;
    let twiddle_ac = append(table, twiddles(m1));
    let twiddle_b = append(table, twiddles(m2));
    let total_twiddle_at = append(table, twiddles(m));
    let bluestein = m != n;
    let (chirp_at, kernel_at) = if bluestein { append_bluestein(table, n, m) } else { (0, 0) };
    // Scratch holds each line padded to m: contiguous per line for rows, line-fastest for
    // columns, so both stay coalesced like the data.
    let (scratch_line, scratch_elem) = if lines.rows { (m, 1) } else { (1, lines.count) };
    let stages: &[u32] = if bluestein { &[0, 1, 2] } else { &[0, 1] };
    stages
        .iter()
        .map(|&stage| {
            let shape = if stage == 1 { &shape_b } else { &shape_ac };
            let push = LongPush {
                layout: lines.into(),
                scratch_line: scratch_line as u32,
                scratch_elem: scratch_elem as u32,
                log2_total: log2m,
                inverse: 0,
                twiddle_at: if stage == 1 { twiddle_b } else { twiddle_ac },
                total_twiddle_at,
                chirp_at,
                kernel_at,
                scale: 1.0,
            };
            let spec = shape.spec(&[bluestein as u32, stage, lines.rows as u32]);
            let kernel = ctx.kernel(&kernels::FFT_LONG, &spec)?;
            let subs = lines.count * (m / shape.m);
            Ok(Dispatch { push: Push::Long(kernel, push), groups: subs.div_ceil(shape.group_lines) as u32 })
        })
        .collect()
}
