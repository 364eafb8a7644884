//! What an FFT plan is made of, shared by its radix-2 and Bluestein kernels ([`super::gpu`])
//! and its mixed-radix kernel ([`super::mixed`]): the kernels' shape ([`FftConfig`]), how
//! an axis's lines lie in memory ([`Lines`]), the kernels' push constants, the plan's
//! dispatches and its constant table.

use crate::error::{EngineError, Result};
use crate::kernel::Kernel;

/// Bytes of one complex f32 in shared memory.
pub(super) const COMPLEX_BYTES: usize = 8;
/// The shape of the in-workgroup FFT kernels: what their specialization constants 0
/// (workgroup size), 1 (values per invocation) and 3 (lines per workgroup) follow. The
/// default is the built-in shape; `sweep` (entry `engine.fft`) tries the others, and a caller
/// with a tuning file passes its choice to [`Fft2d::with_config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FftConfig {
    /// Values each invocation holds in registers (the main radix), one of [`FFT_VALUES`];
    /// the mixed-radix kernel holds up to twice as many (at least its largest radix).
    pub values: u32,
    /// Columns one workgroup transforms together at most (both kernels), one of [`FFT_COLUMNS`]: 16
    /// complex f32 make one 128-byte memory transaction per row. Fewer where shared memory
    /// is short (after halving its use per column, see [`Shape::new`]), rounded down to a
    /// power of two so that each row segment stays aligned to whole 32-byte sectors.
    pub columns: u32,
    /// Invocations a row workgroup aims for when lines are short (many rows per workgroup),
    /// one of [`FFT_ROW_INVOCATIONS`].
    pub row_invocations: u32,
}

/// Values per invocation `fft_stockham.glsl` accepts.
pub const FFT_VALUES: &[u32] = &[2, 4, 8];
/// Column group sizes (powers of two).
pub const FFT_COLUMNS: &[u32] = &[4, 8, 16, 32];
/// Row workgroup targets.
pub const FFT_ROW_INVOCATIONS: &[u32] = &[64, 128, 256, 512];

impl Default for FftConfig {
    fn default() -> FftConfig {
        FftConfig { values: 8, columns: 16, row_invocations: 128 }
    }
}

impl FftConfig {
    pub(super) fn check(&self) -> Result<()> {
        let ok = FFT_VALUES.contains(&self.values)
            && FFT_COLUMNS.contains(&self.columns)
            && FFT_ROW_INVOCATIONS.contains(&self.row_invocations);
        if !ok {
            return Err(EngineError::InvalidInput(format!(
                "FFT shape {self:?}: values one of {FFT_VALUES:?}, columns one of {FFT_COLUMNS:?}, \
                 row invocations one of {FFT_ROW_INVOCATIONS:?}"
            )));
        }
        Ok(())
    }
}

/// The head every FFT kernel's push constants share: how the lines of one axis lie in
/// memory ([`Lines`] in u32).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct LinesLayout {
    pub(super) n: u32,
    pub(super) lines: u32,
    pub(super) lines_per_image: u32,
    pub(super) image_stride: u32,
    pub(super) line_stride: u32,
    pub(super) elem_stride: u32,
}

impl From<&Lines> for LinesLayout {
    fn from(lines: &Lines) -> LinesLayout {
        LinesLayout {
            n: lines.len as u32,
            lines: lines.count as u32,
            lines_per_image: lines.per_image as u32,
            image_stride: lines.image_stride as u32,
            line_stride: lines.line_stride as u32,
            elem_stride: lines.elem_stride as u32,
        }
    }
}

/// Push constants of `fft_lines.comp` (same order).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct LinesPush {
    pub(super) layout: LinesLayout,
    pub(super) inverse: u32,
    pub(super) twiddle_at: u32,
    pub(super) chirp_at: u32,
    pub(super) kernel_at: u32,
    pub(super) scale: f32,
}

impl LinesPush {
    /// A forward transform of `lines`, with its tables at the given offsets (0 where unused).
    pub(super) fn forward(lines: &Lines, twiddle_at: u32, chirp_at: u32, kernel_at: u32) -> LinesPush {
        LinesPush { layout: lines.into(), inverse: 0, twiddle_at, chirp_at, kernel_at, scale: 1.0 }
    }
}

/// Push constants of `fft_long.comp` (same order).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct LongPush {
    pub(super) layout: LinesLayout,
    pub(super) scratch_line: u32,
    pub(super) scratch_elem: u32,
    pub(super) log2_total: u32,
    pub(super) inverse: u32,
    pub(super) twiddle_at: u32,
    pub(super) total_twiddle_at: u32,
    pub(super) chirp_at: u32,
    pub(super) kernel_at: u32,
    pub(super) scale: f32,
}

pub(super) enum Push {
    Lines(Kernel<LinesPush>, LinesPush),
    Long(Kernel<LongPush>, LongPush),
}

/// How the lines of one axis are laid out in memory.
pub(super) struct Lines {
    pub(super) len: usize,
    pub(super) count: usize,
    pub(super) per_image: usize,
    pub(super) image_stride: usize,
    pub(super) line_stride: usize,
    pub(super) elem_stride: usize,
    /// Rows (values of a line are neighbours in memory) rather than columns (lines are).
    pub(super) rows: bool,
}

/// What a plan's shapes follow: the kernels' shape, and the FFT size above which lines take
/// the four-step path (lowered by tests to reach it at small sizes).
pub(super) struct Limits {
    pub(super) config: FftConfig,
    pub(super) direct: usize,
}

/// One dispatch of the plan.
pub(super) struct Dispatch {
    pub(super) push: Push,
    pub(super) groups: u32,
}

impl Dispatch {
    pub(super) fn name(&self) -> &'static str {
        match &self.push {
            Push::Lines(kernel, _) => kernel.name(),
            Push::Long(kernel, _) => kernel.name(),
        }
    }
}

/// Appends `values` to the plan's table and returns where they start.
pub(super) fn append(table: &mut Vec<[f32; 2]>, values: impl IntoIterator<Item = [f32; 2]>) -> u32 {
    let at = table.len() as u32;
    table.extend(values);
    at
}
