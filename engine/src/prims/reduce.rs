//! Reductions: full sums (u32 wrapping, f32), and row sums and column sums of a row-major
//! f32 matrix.
//!
//! f32 sums keep their error small without f64: every invocation accumulates its share with
//! Kahan compensation (`shaders/include/kahan.glsl`) and invocations, subgroups and
//! workgroups combine by trees. Row sums give each row a subgroup (short rows) or a whole
//! workgroup (long rows); column sums read tiles of consecutive columns so every load is
//! coalesced, split the rows into chunks when there are too few column tiles to fill the
//! device, and add the chunks in a second pass. All passes of one call are recorded in the
//! caller's [`Recorder`] as declared passes, which the recorder orders after the work that
//! produces their inputs; nothing returns to the host in between.

use crate::commands::Recorder;
use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::kernel::Kernel;
use crate::memory::{Buffer, Location};
use crate::prims::scan::{check_binding, check_len, check_workgroup};
use crate::shaders::kernels;
use rayon::prelude::*;

/// Workgroup sizes (specialization constant 0) the reduction kernels accept.
pub const WORKGROUP_SIZES: &[u32] = &[64, 128, 256, 512, 1024];

/// Workgroup size [`Reducer::new`] uses.
pub const DEFAULT_WORKGROUP: u32 = 256;

/// Elements per invocation a full-sum workgroup aims for (more makes fewer partials; the
/// Kahan accumulation keeps long loops accurate).
const PER_INVOCATION: usize = 16;

/// At most this many partials, so the second pass is one workgroup's work.
const MAX_PARTIALS: usize = 4096;

/// Workgroups column sums aim for before they split rows into chunks (enough to fill a
/// large GPU several times over).
const TARGET_GROUPS: usize = 2048;

/// Rows of one column-sum chunk, at least, per row of invocations.
const MIN_ROWS_PER_INVOCATION: usize = 16;

/// Rows at least this long get a whole workgroup each in row sums, shorter ones a subgroup.
const WHOLE_GROUP_ROW: usize = 1024;

/// Reduction pipelines for one context.
pub struct Reducer {
    ctx: Context,
    workgroup: u32,
    sum_u32: Kernel<SumPush>,
    sum_f32: Kernel<SumPush>,
    rows_f32: Kernel<RowsPush>,
    cols_f32: Kernel<ColsPush>,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SumPush {
    pub n: u32,
    pub per_group: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RowsPush {
    m: u32,
    n: u32,
    whole_group: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ColsPush {
    m: u32,
    n: u32,
    rows_per_chunk: u32,
    tx: u32,
    col_groups: u32,
}

/// How a column-sum call is split: `tx` columns per workgroup, `chunks` row chunks of
/// `rows_per_chunk` rows.
#[derive(Clone, Copy, Debug)]
struct ColPlan {
    tx: usize,
    col_groups: usize,
    chunks: usize,
    rows_per_chunk: usize,
}

impl Reducer {
    /// Creates the reduction pipelines with [`DEFAULT_WORKGROUP`].
    pub fn new(ctx: &Context) -> Result<Reducer> {
        Reducer::with_workgroup(ctx, DEFAULT_WORKGROUP)
    }

    /// Creates the reduction pipelines with the given workgroup size (one of
    /// [`WORKGROUP_SIZES`]), for tuning sweeps.
    pub fn with_workgroup(ctx: &Context, workgroup: u32) -> Result<Reducer> {
        check_workgroup(ctx, "reduce", workgroup, WORKGROUP_SIZES)?;
        let spec = &[workgroup];
        Ok(Reducer {
            ctx: ctx.clone(),
            workgroup,
            sum_u32: ctx.kernel(&kernels::REDUCE_SUM_U32, spec)?,
            sum_f32: ctx.kernel(&kernels::REDUCE_SUM_F32, spec)?,
            rows_f32: ctx.kernel(&kernels::REDUCE_ROWS_F32, spec)?,
            cols_f32: ctx.kernel(&kernels::REDUCE_COLS_F32, spec)?,
        })
    }

    /// The workgroup size this reducer was built with.
    pub fn workgroup(&self) -> u32 {
        self.workgroup
    }

    /// Workgroups and elements per workgroup of a full-sum pass over `n` elements.
    fn groups(&self, n: usize) -> (u32, u32) {
        let wg = self.workgroup as usize;
        let per_group = (wg * PER_INVOCATION).max(n.div_ceil(MAX_PARTIALS)).next_multiple_of(wg);
        (n.div_ceil(per_group).max(1) as u32, per_group as u32)
    }

    /// Records the partial sums of `input` into `partials` (length from [`Reducer::partial_len`]).
    pub fn record_sum_u32(&self, rec: &mut Recorder, input: &Buffer<u32>, partials: &Buffer<u32>) -> Result<()> {
        let (groups, per_group) = self.groups(input.len());
        let push = SumPush { n: input.len() as u32, per_group };
        rec.pass(&self.sum_u32).read(input).write(partials).push(&push).dispatch_linear(groups)
    }

    /// Number of partial sums [`Reducer::record_sum_u32`] writes for `n` inputs.
    pub fn partial_len(&self, n: usize) -> usize {
        self.groups(n).0 as usize
    }

    /// The wrapping sum of all elements.
    pub fn sum_u32(&self, input: &Buffer<u32>) -> Result<u32> {
        let partials = self.ctx.buffer::<u32>(self.partial_len(input.len()), Location::Device, "reduce partials")?;
        let mut rec = self.ctx.recorder()?;
        self.record_sum_u32(&mut rec, input, &partials)?;
        rec.submit()?.wait()?;
        Ok(self.ctx.download(&partials)?.into_iter().fold(0u32, u32::wrapping_add))
    }

    /// The sum of all elements, f32 in two passes: partials per workgroup, then one
    /// workgroup adds them (records, submits, waits).
    pub fn sum_f32(&self, input: &Buffer<f32>) -> Result<f32> {
        let n = input.len();
        check_binding(&self.ctx, "sum input", n, input.bytes())?;
        let (groups, per_group) = self.groups(n);
        let scratch = self.ctx.buffer::<f32>(groups as usize, Location::Device, "sum scratch")?;
        let out = self.ctx.buffer::<f32>(1, Location::Device, "sum")?;
        let mut rec = self.ctx.recorder()?;
        let first = SumPush { n: n as u32, per_group };
        rec.pass(&self.sum_f32).read(input).write(&scratch).push(&first).dispatch_linear(groups)?;
        let second = SumPush { n: groups, per_group: groups };
        rec.pass(&self.sum_f32).read(&scratch).write(&out).push(&second).dispatch_linear(1)?;
        rec.submit()?.wait()?;
        Ok(self.ctx.download(&out)?[0])
    }

    fn check_matrix(&self, what: &str, matrix: &Buffer<f32>, m: usize, n: usize) -> Result<()> {
        let len = m
            .checked_mul(n)
            .ok_or_else(|| EngineError::InvalidInput(format!("{what}: {m} x {n} matrix is too large")))?;
        check_len(what, matrix.len(), len)?;
        check_binding(&self.ctx, what, len, 4 * len as u64)
    }

    /// Records `out[i] = sum_j matrix[i * n + j]` for the row-major `m x n` matrix.
    pub fn record_row_sums(
        &self,
        rec: &mut Recorder,
        matrix: &Buffer<f32>,
        m: usize,
        n: usize,
        out: &Buffer<f32>,
    ) -> Result<()> {
        self.check_matrix("row sums matrix", matrix, m, n)?;
        check_len("row sums output", out.len(), m)?;
        if m == 0 {
            return Ok(());
        }
        let whole_group = n >= WHOLE_GROUP_ROW;
        let rows_per_group =
            if whole_group { 1 } else { (self.workgroup / self.ctx.info().subgroup_size).max(1) as usize };
        rec.pass(&self.rows_f32)
            .read(&matrix.range(0, m * n))
            .write(&out.range(0, m))
            .push(&RowsPush { m: m as u32, n: n as u32, whole_group: whole_group as u32 })
            .dispatch_linear(m.div_ceil(rows_per_group) as u32)
    }

    /// Row sums of the row-major `m x n` matrix in a new device buffer of `m` floats.
    pub fn row_sums(&self, matrix: &Buffer<f32>, m: usize, n: usize) -> Result<Buffer<f32>> {
        let out = self.ctx.buffer(m, Location::Device, "row sums")?;
        let mut rec = self.ctx.recorder()?;
        self.record_row_sums(&mut rec, matrix, m, n, &out)?;
        rec.submit()?.wait()?;
        Ok(out)
    }

    fn col_plan(&self, m: usize, n: usize) -> ColPlan {
        let wg = self.workgroup as usize;
        // Full subgroups of consecutive columns where the matrix is wide enough.
        let tx = n.next_power_of_two().clamp(1, wg);
        let ty = wg / tx;
        let col_groups = n.div_ceil(tx).max(1);
        let most_chunks = m.div_ceil(ty * MIN_ROWS_PER_INVOCATION).max(1);
        let chunks = TARGET_GROUPS.div_ceil(col_groups).clamp(1, most_chunks);
        let rows_per_chunk = m.div_ceil(chunks).max(1);
        ColPlan { tx, col_groups, chunks: m.div_ceil(rows_per_chunk).max(1), rows_per_chunk }
    }

    /// Length in f32 of the scratch buffer [`Reducer::record_col_sums`] needs (at least 1).
    pub fn col_sums_scratch_len(&self, m: usize, n: usize) -> usize {
        let plan = self.col_plan(m, n);
        if plan.chunks > 1 {
            plan.chunks * n
        } else {
            1
        }
    }

    fn dispatch_cols(
        &self,
        rec: &mut Recorder,
        plan: ColPlan,
        m: usize,
        n: usize,
        input: &Buffer<f32>,
        out: &Buffer<f32>,
    ) -> Result<()> {
        rec.pass(&self.cols_f32)
            .read(&input.range(0, m * n))
            .write(&out.range(0, plan.chunks * n))
            .push(&ColsPush {
                m: m as u32,
                n: n as u32,
                rows_per_chunk: plan.rows_per_chunk as u32,
                tx: plan.tx as u32,
                col_groups: plan.col_groups as u32,
            })
            .dispatch_linear((plan.col_groups * plan.chunks) as u32)
    }

    /// Records `out[j] = sum_i matrix[i * n + j]` for the row-major `m x n` matrix; `scratch`
    /// holds [`Reducer::col_sums_scratch_len`] floats of partial sums.
    pub fn record_col_sums(
        &self,
        rec: &mut Recorder,
        matrix: &Buffer<f32>,
        m: usize,
        n: usize,
        scratch: &Buffer<f32>,
        out: &Buffer<f32>,
    ) -> Result<()> {
        self.check_matrix("column sums matrix", matrix, m, n)?;
        check_len("column sums output", out.len(), n)?;
        check_len("column sums scratch", scratch.len(), self.col_sums_scratch_len(m, n))?;
        if n == 0 {
            return Ok(());
        }
        if m == 0 {
            rec.fill(out, 0);
            return Ok(());
        }
        let plan = self.col_plan(m, n);
        if plan.chunks == 1 {
            return self.dispatch_cols(rec, plan, m, n, matrix, out);
        }
        self.dispatch_cols(rec, plan, m, n, matrix, scratch)?;
        // The chunks x n partials are themselves a matrix; one chunk covers all its rows.
        let second = ColPlan { chunks: 1, rows_per_chunk: plan.chunks, ..self.col_plan(plan.chunks, n) };
        self.dispatch_cols(rec, second, plan.chunks, n, scratch, out)
    }

    /// Column sums of the row-major `m x n` matrix in a new device buffer of `n` floats.
    pub fn col_sums(&self, matrix: &Buffer<f32>, m: usize, n: usize) -> Result<Buffer<f32>> {
        let out = self.ctx.buffer(n, Location::Device, "column sums")?;
        let scratch = self.ctx.buffer(self.col_sums_scratch_len(m, n), Location::Device, "column sums scratch")?;
        let mut rec = self.ctx.recorder()?;
        self.record_col_sums(&mut rec, matrix, m, n, &scratch, &out)?;
        rec.submit()?.wait()?;
        Ok(out)
    }
}

/// CPU reference: wrapping sum.
pub fn sum_u32_cpu(data: &[u32]) -> u32 {
    data.iter().fold(0u32, |a, &b| a.wrapping_add(b))
}

/// CPU reference: the sum in f64 (multithreaded).
pub fn sum_f32_cpu(data: &[f32]) -> f64 {
    data.par_chunks(1 << 16).map(|c| c.iter().map(|&x| x as f64).sum::<f64>()).sum()
}

/// CPU reference: row sums of a row-major `m x n` matrix, in f64 (multithreaded).
pub fn row_sums_cpu(matrix: &[f32], m: usize, n: usize) -> Vec<f64> {
    if n == 0 {
        return vec![0.0; m];
    }
    matrix[..m * n].par_chunks(n).map(|row| row.iter().map(|&x| x as f64).sum()).collect()
}

/// CPU reference: column sums of a row-major `m x n` matrix, in f64 (multithreaded over
/// blocks of rows).
pub fn col_sums_cpu(matrix: &[f32], m: usize, n: usize) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    let rows_per_block = 64;
    matrix[..m * n]
        .par_chunks(n * rows_per_block)
        .map(|block| {
            let mut acc = vec![0.0f64; n];
            for row in block.chunks(n) {
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a += x as f64;
                }
            }
            acc
        })
        .reduce(
            || vec![0.0f64; n],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x += y;
                }
                a
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use rand::{Rng, SeedableRng};

    /// Relative error bound of f32 sums against f64: Kahan per invocation plus trees of
    /// depth about log2(n) leave a few ulps (2^-24 = 6e-8 each) of the sum of magnitudes.
    const SUM_BOUND: f64 = 2e-6;

    /// The matrix shapes tested: every pair of awkward sizes whose product stays at most
    /// 2^20 + 7 elements, plus a long-row case that takes the whole-workgroup path.
    fn shapes() -> Vec<(usize, usize)> {
        let mut shapes: Vec<(usize, usize)> = testing::AWKWARD_SIZES
            .iter()
            .flat_map(|&m| testing::AWKWARD_SIZES.iter().map(move |&n| (m, n)))
            .filter(|&(m, n)| m * n <= (1 << 20) + 7)
            .collect();
        shapes.push((33, 4099));
        shapes
    }

    /// Signed random data; errors are measured relative to the sum of magnitudes, the scale
    /// rounding errors are proportional to.
    fn random(rng: &mut impl Rng, len: usize) -> Vec<f32> {
        (0..len).map(|_| rng.gen_range(-1.0f32..1.0) + if rng.gen_bool(0.5) { 0.25 } else { -0.125 }).collect()
    }

    fn scaled_error(got: &[f32], want: &[f64], scale: &[f64]) -> f64 {
        got.iter().zip(want).zip(scale).map(|((&g, &w), &s)| (g as f64 - w).abs() / s.max(1e-30)).fold(0.0, f64::max)
    }

    /// Asserts that `got` is within [`SUM_BOUND`] of `reference` on `data`, relative to
    /// `reference` on the magnitudes of `data`.
    fn assert_close(what: &str, got: &[f32], reference: impl Fn(&[f32]) -> Vec<f64>, data: &[f32]) {
        let abs: Vec<f32> = data.iter().map(|x| x.abs()).collect();
        let err = scaled_error(got, &reference(data), &reference(&abs));
        assert!(err < SUM_BOUND, "{what}: error {err:e} relative to the sum of magnitudes");
    }

    /// The test context, a reducer on it and the random numbers of the test `seed` names.
    fn setup(seed: u64) -> (&'static Context, Reducer, rand_chacha::ChaCha8Rng) {
        let ctx = testing::context();
        (ctx, Reducer::new(ctx).unwrap(), rand_chacha::ChaCha8Rng::seed_from_u64(seed))
    }

    /// The GPU's row and column sums of the `m x n` matrix in `buf`.
    fn row_and_col_sums(reducer: &Reducer, buf: &Buffer<f32>, m: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
        let ctx = &reducer.ctx;
        let rows = ctx.download(&reducer.row_sums(buf, m, n).unwrap()).unwrap();
        (rows, ctx.download(&reducer.col_sums(buf, m, n).unwrap()).unwrap())
    }

    #[test]
    fn sum_u32_matches_cpu_at_awkward_sizes() {
        let (ctx, reducer, mut rng) = setup(1);
        for n in testing::AWKWARD_SIZES {
            let data: Vec<u32> = (0..n).map(|_| rng.gen_range(1..u32::MAX)).collect();
            let buf = ctx.upload(&data, "test input").unwrap();
            assert_eq!(reducer.sum_u32(&buf).unwrap(), sum_u32_cpu(&data), "n = {n}");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn sum_f32_matches_f64_at_awkward_sizes() {
        let (ctx, reducer, mut rng) = setup(5);
        for n in testing::AWKWARD_SIZES {
            let data = random(&mut rng, n);
            let buf = ctx.upload(&data, "sum input").unwrap();
            let got = reducer.sum_f32(&buf).unwrap();
            assert_close(&format!("n = {n}"), &[got], |d| vec![sum_f32_cpu(d)], &data);
            // All-positive data: the plain relative error is bounded the same way.
            let abs: Vec<f32> = data.iter().map(|x| x.abs()).collect();
            let got = reducer.sum_f32(&ctx.upload(&abs, "sum input").unwrap()).unwrap();
            let err = testing::max_rel_error(&[got], &[sum_f32_cpu(&abs)], 1e-30);
            assert!(err < SUM_BOUND, "n = {n}: relative error {err:e}");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn row_and_column_sums_match_f64() {
        let (ctx, reducer, mut rng) = setup(6);
        for (m, n) in shapes() {
            let data = random(&mut rng, m * n);
            let buf = ctx.upload(&data, "matrix").unwrap();
            let (rows, cols) = row_and_col_sums(&reducer, &buf, m, n);
            assert_close(&format!("row sums {m} x {n}"), &rows, |d| row_sums_cpu(d, m, n), &data);
            assert_close(&format!("column sums {m} x {n}"), &cols, |d| col_sums_cpu(d, m, n), &data);
        }
        testing::assert_no_validation_messages();
    }

    /// Small integers sum exactly in f32 (every partial sum stays below 2^24), so a dropped
    /// or doubled element shows as an exact mismatch however large the input.
    #[test]
    fn integer_valued_sums_are_exact() {
        let (ctx, reducer, mut rng) = setup(15);
        for (m, n) in shapes() {
            let data: Vec<f32> = (0..m * n).map(|_| rng.gen_range(1..8) as f32).collect();
            let buf = ctx.upload(&data, "matrix").unwrap();
            let exact = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
            assert_eq!(reducer.sum_f32(&buf).unwrap() as f64, sum_f32_cpu(&data), "sum of {m} x {n}");
            let (rows, cols) = row_and_col_sums(&reducer, &buf, m, n);
            assert!(rows == exact(row_sums_cpu(&data, m, n)), "row sums {m} x {n}");
            assert!(cols == exact(col_sums_cpu(&data, m, n)), "column sums {m} x {n}");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn column_sums_split_into_chunks_for_tall_matrices() {
        let reducer = Reducer::new(testing::context()).unwrap();
        assert!(reducer.col_plan(1 << 20, 7).chunks > 1);
        assert_eq!(reducer.col_plan(3, 1000).chunks, 1);
    }

    #[test]
    fn reductions_reject_short_buffers() {
        let ctx = testing::context();
        let reducer = Reducer::new(ctx).unwrap();
        let buf = ctx.upload(&[1.0f32; 10], "matrix").unwrap();
        assert!(reducer.row_sums(&buf, 3, 4).is_err());
        assert!(reducer.col_sums(&buf, 4, 3).is_err());
    }
}
