//! The mixed-radix path: lines of length `n = 2^a 3^b 5^c` (not a power of two) whose `n`
//! values fit in one workgroup's shared memory, one dispatch of `shaders/engine/fft_mixed.comp`
//! per axis, instead of Bluestein's two FFTs of a power of two `>= 2n - 1` per line.
//!
//! Passes and bytes (not measured here; the lead measures with `mad bench` and
//! `prims-bench`), for MAD's 1920x1080 band stack of 40 images (8 bytes a value, 663 MB):
//! - before, Bluestein: 2 dispatches, rows of 1920 and columns of 1080 each on two FFTs of
//!   4096 (32 KiB of shared memory a line). Rows read and write 663 MB each, coalesced.
//!   Columns go one per workgroup, so each 8-byte access of a warp lands in its own 32-byte
//!   sector: up to 4 x 663 MB read and as much written, unless L2 keeps the neighbouring
//!   columns' sectors (why MAD's groups shrank to 33 MB to stay in L2). About 1.3 + up to
//!   5.3 GB per inverse FFT, and 2 x 4096 x 12 / (1080 x 10.1) = 9x (columns) and 4.7x (rows)
//!   the butterfly work of a direct transform. Measured: 12.1 ms for one pair's 20 bands.
//! - now: still 2 dispatches, each reading and writing 663 MB once. Columns of 1080 need
//!   1080 (+1/32 padding) slots, 8.7 KiB, so 4 share a workgroup on NVIDIA's 48 KiB
//!   (288 invocations, 72 a column) and each row segment a warp reads is one whole 32-byte
//!   sector; rows of 1920 take 128 invocations, 5 passes of radix 8, 4, 4, 5, 3 in shared
//!   memory. 2.65 GB in all per inverse FFT of the stack: 0.66 ms at 4 TB/s.

use super::plan::{append, Dispatch, Limits, Lines, LinesPush, Push, COMPLEX_BYTES};
use super::tables::twiddles;
use crate::context::Context;
use crate::error::Result;
use crate::shaders::kernels;

/// Passes the kernel's radix word holds (4 bits each).
const MAX_PASSES: usize = 8;

/// The radices of the passes for `n`, or `None` unless `n = 2^a 3^b 5^c` is not a power of
/// two (those take the power-of-two kernel) and needs at most [`MAX_PASSES`] passes. Radix 8
/// where it can, 4 rather than one 2 after 8s (8·4·4 for 2^7, not 8·8·2), then 5s and 3s.
pub(super) fn radices(n: usize) -> Option<Vec<u32>> {
    if n < 2 || n.is_power_of_two() {
        return None;
    }
    let twos = n.trailing_zeros();
    let mut odd = n >> twos;
    let mut radices = vec![8; (twos / 3) as usize];
    match (twos % 3, radices.is_empty()) {
        (1, false) => {
            radices.pop();
            radices.extend([4, 4]);
        }
        (1, true) => radices.push(2),
        (2, _) => radices.push(4),
        _ => {}
    }
    for p in [5, 3] {
        while odd.is_multiple_of(p) {
            odd /= p;
            radices.push(p as u32);
        }
    }
    (odd == 1 && radices.len() <= MAX_PASSES).then_some(radices)
}

/// Invocations per line and the registers (complex values) each needs: the count whose
/// invocations are busiest over all passes (butterflies `j < n/r` dealt `ceil(n/r / t)` to
/// each invocation, the last round maybe part idle), with at most `max_regs` values each;
/// fewer invocations on a tie.
fn invocations(n: usize, radices: &[u32], max_regs: usize) -> (usize, usize) {
    let regs = |t: usize| radices.iter().map(move |&r| (n / r as usize).div_ceil(t) * r as usize);
    (1..=n)
        .filter(|&t| regs(t).max().unwrap_or(0) <= max_regs)
        .map(|t| {
            // Work slots used over slots held: n values per pass over t invocations' values.
            let held: usize = regs(t).sum();
            (n * radices.len() * 1000 / (t * held), t)
        })
        .max_by_key(|&(busy, t)| (busy, std::cmp::Reverse(t)))
        .map(|(_, t)| (t, regs(t).max().unwrap_or(0)))
        .expect("t = n holds one butterfly per invocation")
}

/// The workgroup shape of one axis on the mixed-radix path.
pub(super) struct MixedShape {
    radices: Vec<u32>,
    invocations: usize,
    regs: usize,
    group_lines: usize,
    lines_fast: bool,
    pad_shift: u32,
    slots: usize,
}

impl MixedShape {
    /// The shape for `count` lines of length `n`, or `None` where the path does not apply:
    /// other lengths, lines over `limits.direct` or over what one workgroup holds.
    pub(super) fn new(ctx: &Context, n: usize, lines_fast: bool, count: usize, limits: &Limits) -> Option<MixedShape> {
        let radices = radices(n)?;
        let info = ctx.info();
        let config = &limits.config;
        let max_radix = *radices.iter().max()? as usize;
        let (invocations, regs) = invocations(n, &radices, (2 * config.values as usize).max(max_radix));
        let max_shared = info.max_shared_memory_bytes as usize / COMPLEX_BYTES;
        let max_invocations = info.max_workgroup_invocations.min(info.max_workgroup_size[0]) as usize;
        // Padding against bank conflicts: one slot in 8 for rows (strided scatters within a
        // line), one in 32 for columns (lines interleaved, a radix-8 scatter strides 8 lines).
        let wanted_pad = if lines_fast { 5 } else { 3 };
        let slots = |lines: usize, pad: u32| lines * n + if pad > 0 { (lines * n) >> pad } else { 0 };
        let pad_shift = if slots(1, wanted_pad) <= max_shared { wanted_pad } else { 0 };
        if n > limits.direct || slots(1, pad_shift) > max_shared || invocations > max_invocations {
            return None;
        }
        let wanted =
            if lines_fast { config.columns as usize } else { (config.row_invocations as usize).div_ceil(invocations) };
        let most = wanted.min(max_invocations / invocations).min(count).max(1);
        let mut group_lines = (1..=most).rev().find(|&g| slots(g, pad_shift) <= max_shared)?;
        if lines_fast {
            // A power of two, so that each row segment read stays aligned to whole sectors.
            group_lines = 1 << group_lines.ilog2();
        }
        let slots = slots(group_lines, pad_shift);
        Some(MixedShape { radices, invocations, regs, group_lines, lines_fast, pad_shift, slots })
    }

    /// Specialization constants 0..=9 of `fft_mixed.comp`.
    fn spec(&self, n: usize) -> Vec<u32> {
        let packed = self.radices.iter().rev().fold(0, |word, &r| word << 4 | r);
        vec![
            (self.group_lines * self.invocations) as u32,
            n as u32,
            self.invocations as u32,
            self.group_lines as u32,
            self.lines_fast as u32,
            self.pad_shift,
            self.slots as u32,
            self.regs as u32,
            self.radices.len() as u32,
            packed,
        ]
    }
}

/// The single dispatch of an axis on the mixed-radix path.
pub(super) fn dispatch(
    ctx: &Context,
    lines: &Lines,
    shape: &MixedShape,
    table: &mut Vec<[f32; 2]>,
) -> Result<Dispatch> {
    let n = lines.len;
    let push = LinesPush::forward(lines, append(table, twiddles(n)), 0, 0);
    let kernel = ctx.kernel(&kernels::FFT_MIXED, &shape.spec(n))?;
    Ok(Dispatch { push: Push::Lines(kernel, push), groups: lines.count.div_ceil(shape.group_lines) as u32 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radices_and_invocations() {
        assert_eq!(radices(1080), Some(vec![8, 5, 3, 3, 3]));
        assert_eq!(radices(1920), Some(vec![8, 4, 4, 5, 3]));
        assert_eq!(radices(6), Some(vec![2, 3]));
        assert_eq!(radices(12), Some(vec![4, 3]));
        assert_eq!(radices(3), Some(vec![3]));
        for n in [1, 2, 1024, 7, 97, 1365] {
            assert_eq!(radices(n), None, "{n}");
        }
        // 3^9 needs 9 passes.
        assert_eq!(radices(19683), None);
        assert_eq!(invocations(1080, &[8, 5, 3, 3, 3], 16), (72, 16));
        assert_eq!(invocations(1920, &[8, 4, 4, 5, 3], 16), (128, 16));
        assert_eq!(invocations(3, &[3], 6), (1, 3));
    }
}
