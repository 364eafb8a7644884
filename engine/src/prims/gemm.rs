//! Batched small dense matrix products (f32), and tensor n-mode products built on them.
//!
//! [`Gemm`] runs many independent products `C_b = alpha * op(A_b) * op(B_b) + beta * C_b`
//! described by a [`BatchedGemm`] (row-major, leading dimensions, batch strides, optional
//! transposes), tuned for matrices up to 64 x 64: a workgroup computes one tile of one
//! product from k-slices staged in shared memory (`shaders/engine/gemm_batched.comp`). Three
//! tile sizes (16, 32, 64 at the default workgroup) are built and the smallest that covers
//! the product is used, so small products do not leave most invocations idle.
//!
//! [`ModeProduct`] is the n-mode product of a batch of small tensors with one matrix, as
//! the light-field codec's tensor decompositions use it; it maps onto one batched GEMM.

use crate::commands::Recorder;
use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::kernel::Kernel;
use crate::memory::Buffer;
use crate::prims::scan::{check_binding, check_workgroup};
use crate::shaders::kernels;

/// Workgroup sizes (specialization constant 0) the GEMM kernel accepts: square thread grids
/// of 8 x 8, 16 x 16 and 32 x 32.
pub const WORKGROUP_SIZES: &[u32] = &[64, 256, 1024];

/// Workgroup size [`Gemm::new`] uses.
pub const DEFAULT_WORKGROUP: u32 = 256;

/// Outputs per invocation along each axis for the three pipelines (tile = side * r).
const MICRO_TILES: [u32; 3] = [1, 2, 4];

/// One batch of independent products `C_b = alpha * op(A_b) * op(B_b) + beta * C_b`,
/// `b < batch`. All matrices are row-major; `op(A)` is `m x k` and `op(B)` is `k x n`.
/// Matrix `b` of A starts at element `offset_a + b * stride_a` (a stride of 0 shares one
/// matrix across the batch), and likewise for B and C. `beta == 0` never reads C. The
/// offsets let one buffer hold many batches (e.g. segments of patches, each with its own
/// dictionary) without sub-buffer bindings, whose offsets must meet the device alignment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchedGemm {
    /// Number of products.
    pub batch: usize,
    /// Rows of op(A) and C.
    pub m: usize,
    /// Columns of op(B) and C.
    pub n: usize,
    /// Columns of op(A), rows of op(B).
    pub k: usize,
    /// A is stored `k x m` (so op(A) = A^T) instead of `m x k`.
    pub trans_a: bool,
    /// B is stored `n x k` (so op(B) = B^T) instead of `k x n`.
    pub trans_b: bool,
    /// Elements between rows of A as stored.
    pub lda: usize,
    /// Elements between rows of B as stored.
    pub ldb: usize,
    /// Elements between rows of C.
    pub ldc: usize,
    /// Elements between consecutive A matrices.
    pub stride_a: usize,
    /// Elements between consecutive B matrices.
    pub stride_b: usize,
    /// Elements between consecutive C matrices.
    pub stride_c: usize,
    /// Element where A's first matrix starts.
    pub offset_a: usize,
    /// Element where B's first matrix starts.
    pub offset_b: usize,
    /// Element where C's first matrix starts.
    pub offset_c: usize,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the existing C.
    pub beta: f32,
}

impl BatchedGemm {
    /// `C_b = A_b * B_b` for `batch` densely packed `m x k` and `k x n` matrices.
    pub fn packed(batch: usize, m: usize, n: usize, k: usize) -> BatchedGemm {
        BatchedGemm {
            batch,
            m,
            n,
            k,
            trans_a: false,
            trans_b: false,
            lda: k,
            ldb: n,
            ldc: n,
            stride_a: m * k,
            stride_b: k * n,
            stride_c: m * n,
            offset_a: 0,
            offset_b: 0,
            offset_c: 0,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// The same packed batch with A and/or B stored transposed (leading dimensions follow).
    pub fn transposed(self, trans_a: bool, trans_b: bool) -> BatchedGemm {
        BatchedGemm {
            trans_a,
            trans_b,
            lda: if trans_a { self.m } else { self.k },
            ldb: if trans_b { self.k } else { self.n },
            ..self
        }
    }

    /// The same batch starting at elements `a`, `b` and `c` of the three buffers.
    pub fn at(self, a: usize, b: usize, c: usize) -> BatchedGemm {
        BatchedGemm { offset_a: a, offset_b: b, offset_c: c, ..self }
    }

    /// The same batch with `C = alpha * op(A) op(B) + beta * C`.
    pub fn scaled(self, alpha: f32, beta: f32) -> BatchedGemm {
        BatchedGemm { alpha, beta, ..self }
    }

    /// (rows, columns) of A and B as stored.
    fn stored_shapes(&self) -> ((usize, usize), (usize, usize)) {
        let a = if self.trans_a { (self.k, self.m) } else { (self.m, self.k) };
        let b = if self.trans_b { (self.n, self.k) } else { (self.k, self.n) };
        (a, b)
    }

    /// Elements a buffer must hold for `batch` matrices of `rows x cols` at `ld` and `stride`.
    fn extent(&self, rows: usize, cols: usize, ld: usize, stride: usize) -> usize {
        if self.batch == 0 || rows == 0 || cols == 0 {
            return 0;
        }
        (self.batch - 1) * stride + (rows - 1) * ld + cols
    }

    /// Checks the description against buffers of the given lengths.
    fn validate(&self, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
        let ((ar, ac), (br, bc)) = self.stored_shapes();
        let bad = |msg: String| Err(EngineError::InvalidInput(format!("batched GEMM: {msg}")));
        if self.lda < ac || self.ldb < bc || self.ldc < self.n {
            return bad(format!(
                "leading dimensions {}, {}, {} below the row lengths {ac}, {bc}, {}",
                self.lda, self.ldb, self.ldc, self.n
            ));
        }
        for (name, need, have) in [
            ("A", self.offset_a + self.extent(ar, ac, self.lda, self.stride_a), a_len),
            ("B", self.offset_b + self.extent(br, bc, self.ldb, self.stride_b), b_len),
            ("C", self.offset_c + self.extent(self.m, self.n, self.ldc, self.stride_c), c_len),
        ] {
            // The shader indexes in u32.
            if need > u32::MAX as usize {
                return bad(format!("{name} reaches element {need}, past u32 indexing"));
            }
            if need > have {
                return bad(format!("{name} needs {need} elements, buffer holds {have}"));
            }
        }
        Ok(())
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    stride_a: u32,
    stride_b: u32,
    stride_c: u32,
    offset_a: u32,
    offset_b: u32,
    offset_c: u32,
    trans_a: u32,
    trans_b: u32,
    batch: u32,
    alpha: f32,
    beta: f32,
    tiles_m: u32,
    tiles_n: u32,
}

/// The n-mode product of a batch of small tensors with one matrix U.
///
/// Each of the `batch` tensors is stored densely, row-major over `dims` (the last index
/// varies fastest), one after another. With `J = u_rows`:
/// - `transpose_u == false`: U is `J x dims[mode]` (row-major) and `Y = X x_mode U`,
///   i.e. the mode unfolding is `Y_(mode) = U * X_(mode)`;
/// - `transpose_u == true`: U is `dims[mode] x J` and `Y_(mode) = U^T * X_(mode)` (projection
///   onto the columns of an orthonormal factor, as in HOSVD encoding).
///
/// Y has `dims` with `dims[mode]` replaced by `J`, stored the same way.
#[derive(Clone, Debug, PartialEq)]
pub struct ModeProduct {
    /// Dimensions of each input tensor.
    pub dims: Vec<usize>,
    /// The mode (index into `dims`) the matrix acts on.
    pub mode: usize,
    /// Number of tensors.
    pub batch: usize,
    /// J: the size of `mode` in the output.
    pub u_rows: usize,
    /// Apply U^T (U stored `dims[mode] x J`) instead of U (stored `J x dims[mode]`).
    pub transpose_u: bool,
}

impl ModeProduct {
    /// Dimensions of each output tensor.
    pub fn output_dims(&self) -> Vec<usize> {
        let mut d = self.dims.clone();
        if let Some(x) = d.get_mut(self.mode) {
            *x = self.u_rows;
        }
        d
    }

    /// Elements of the batch of inputs, of U and of the batch of outputs.
    pub fn lens(&self) -> (usize, usize, usize) {
        let x: usize = self.dims.iter().product();
        let y: usize = self.output_dims().iter().product();
        (self.batch * x, self.u_rows * self.dims.get(self.mode).copied().unwrap_or(0), self.batch * y)
    }

    /// The batched GEMM this product is: for every tensor and every index p of the modes
    /// before `mode`, `Y_p (J x Q) = op(U) (J x D) * X_p (D x Q)` with `D = dims[mode]` and Q the
    /// product of the later dimensions.
    pub fn as_gemm(&self) -> Result<BatchedGemm> {
        if self.mode >= self.dims.len() {
            return Err(EngineError::InvalidInput(format!(
                "mode product: mode {} of a {}-dimensional tensor",
                self.mode,
                self.dims.len()
            )));
        }
        let p: usize = self.dims[..self.mode].iter().product();
        let d = self.dims[self.mode];
        let q: usize = self.dims[self.mode + 1..].iter().product();
        let j = self.u_rows;
        Ok(BatchedGemm {
            batch: self.batch * p,
            m: j,
            n: q,
            k: d,
            trans_a: self.transpose_u,
            trans_b: false,
            lda: if self.transpose_u { j } else { d },
            ldb: q,
            ldc: q,
            stride_a: 0,
            stride_b: d * q,
            stride_c: j * q,
            offset_a: 0,
            offset_b: 0,
            offset_c: 0,
            alpha: 1.0,
            beta: 0.0,
        })
    }
}

/// Batched-GEMM pipelines for one context.
pub struct Gemm {
    ctx: Context,
    workgroup: u32,
    /// One pipeline per micro-tile size in [`MICRO_TILES`].
    pipes: Vec<Kernel<Push>>,
}

impl Gemm {
    /// Creates the GEMM pipelines with [`DEFAULT_WORKGROUP`].
    pub fn new(ctx: &Context) -> Result<Gemm> {
        Gemm::with_workgroup(ctx, DEFAULT_WORKGROUP)
    }

    /// Creates the GEMM pipelines with the given workgroup size (one of [`WORKGROUP_SIZES`]),
    /// for tuning sweeps.
    pub fn with_workgroup(ctx: &Context, workgroup: u32) -> Result<Gemm> {
        check_workgroup(ctx, "batched GEMM", workgroup, WORKGROUP_SIZES)?;
        let side = (workgroup as f64).sqrt() as u32;
        let pipes = MICRO_TILES
            .iter()
            .map(|&r| ctx.kernel(&kernels::GEMM_BATCHED, &[workgroup, r, side]))
            .collect::<Result<Vec<_>>>()?;
        Ok(Gemm { ctx: ctx.clone(), workgroup, pipes })
    }

    /// The workgroup size this GEMM was built with.
    pub fn workgroup(&self) -> u32 {
        self.workgroup
    }

    /// Records the batch of products described by `desc`.
    pub fn record(
        &self,
        rec: &mut Recorder,
        desc: &BatchedGemm,
        a: &Buffer<f32>,
        b: &Buffer<f32>,
        c: &Buffer<f32>,
    ) -> Result<()> {
        desc.validate(a.len(), b.len(), c.len())?;
        for (name, buf) in [("A", a), ("B", b), ("C", c)] {
            check_binding(&self.ctx, &format!("batched GEMM {name}"), buf.len(), buf.bytes())?;
        }
        if desc.batch == 0 || desc.m == 0 || desc.n == 0 {
            return Ok(());
        }
        let side = (self.workgroup as f64).sqrt() as usize;
        // The smallest tile that covers the product, else the largest.
        let size = desc.m.max(desc.n);
        let which = MICRO_TILES.iter().position(|&r| side * r as usize >= size).unwrap_or(MICRO_TILES.len() - 1);
        let tile = side * MICRO_TILES[which] as usize;
        let (tiles_m, tiles_n) = (desc.m.div_ceil(tile), desc.n.div_ceil(tile));
        let groups = desc.batch as u64 * (tiles_m * tiles_n) as u64;
        if groups > u32::MAX as u64 {
            return Err(EngineError::InvalidInput(format!("batched GEMM: {groups} workgroups is too many")));
        }
        let push = Push {
            m: desc.m as u32,
            n: desc.n as u32,
            k: desc.k as u32,
            lda: desc.lda as u32,
            ldb: desc.ldb as u32,
            ldc: desc.ldc as u32,
            stride_a: desc.stride_a as u32,
            stride_b: desc.stride_b as u32,
            stride_c: desc.stride_c as u32,
            offset_a: desc.offset_a as u32,
            offset_b: desc.offset_b as u32,
            offset_c: desc.offset_c as u32,
            trans_a: desc.trans_a as u32,
            trans_b: desc.trans_b as u32,
            batch: desc.batch as u32,
            alpha: desc.alpha,
            beta: desc.beta,
            tiles_m: tiles_m as u32,
            tiles_n: tiles_n as u32,
        };
        // Products on disjoint parts of one buffer (a mode product per dictionary) are
        // independent: each declares the elements it addresses, as `validate` bounds them.
        let ((ar, ac), (br, bc)) = desc.stored_shapes();
        let a = part(a, desc.offset_a, desc.extent(ar, ac, desc.lda, desc.stride_a));
        let b = part(b, desc.offset_b, desc.extent(br, bc, desc.ldb, desc.stride_b));
        let c = part(c, desc.offset_c, desc.extent(desc.m, desc.n, desc.ldc, desc.stride_c));
        rec.pass(&self.pipes[which]).read(&a).read(&b).read_write(&c).push(&push).dispatch_linear(groups as u32)
    }

    /// Runs the batch of products (records, submits, waits); C is updated in place.
    pub fn run(&self, desc: &BatchedGemm, a: &Buffer<f32>, b: &Buffer<f32>, c: &Buffer<f32>) -> Result<()> {
        let mut rec = self.ctx.recorder()?;
        self.record(&mut rec, desc, a, b, c)?;
        rec.submit()?.wait()
    }

    /// Records the mode product `y = x x_mode U` (see [`ModeProduct`] for layouts), with the
    /// batch of X, the matrix U and the batch of Y starting at the given elements of their
    /// buffers (0 for whole buffers). The last mode (nothing after it)
    /// runs as one GEMM `Y (N x J) = X (N x D) op(U)^T` over all N fibers, which fills the
    /// tiles where the per-block form would compute N blocks of J x 1.
    pub fn record_mode_product_at(
        &self,
        rec: &mut Recorder,
        product: &ModeProduct,
        (x, x_at): (&Buffer<f32>, usize),
        (u, u_at): (&Buffer<f32>, usize),
        (y, y_at): (&Buffer<f32>, usize),
    ) -> Result<()> {
        let desc = product.as_gemm()?;
        if desc.n == 1 {
            let (rows, d, j) = (desc.batch, desc.k, desc.m);
            let flat = BatchedGemm::packed(1, rows, j, d).transposed(false, !product.transpose_u);
            return self.record(rec, &flat.at(x_at, u_at, y_at), x, u, y);
        }
        self.record(rec, &desc.at(u_at, x_at, y_at), u, x, y)
    }

    /// Runs the mode product (records, submits, waits).
    pub fn mode_product(&self, product: &ModeProduct, x: &Buffer<f32>, u: &Buffer<f32>, y: &Buffer<f32>) -> Result<()> {
        let mut rec = self.ctx.recorder()?;
        self.record_mode_product_at(&mut rec, product, (x, 0), (u, 0), (y, 0))?;
        rec.submit()?.wait()
    }
}

/// Elements `start..start + len` of `buf` as the part a product touches (all of it for none).
fn part(buf: &Buffer<f32>, start: usize, len: usize) -> crate::memory::Region<'_> {
    if len == 0 {
        buf.touching(0, buf.len())
    } else {
        buf.touching(start, len)
    }
}

/// CPU reference in f64: the contents of C after the batch of products (`c` is C before;
/// elements no product touches are copied unchanged).
pub fn batched_gemm_cpu(desc: &BatchedGemm, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f64> {
    let mut out: Vec<f64> = c.iter().map(|&x| x as f64).collect();
    for bi in 0..desc.batch {
        let ab = desc.offset_a + bi * desc.stride_a;
        let bb = desc.offset_b + bi * desc.stride_b;
        let cb = desc.offset_c + bi * desc.stride_c;
        for i in 0..desc.m {
            for j in 0..desc.n {
                let mut acc = 0.0f64;
                for kk in 0..desc.k {
                    let av = if desc.trans_a { a[ab + kk * desc.lda + i] } else { a[ab + i * desc.lda + kk] };
                    let bv = if desc.trans_b { b[bb + j * desc.ldb + kk] } else { b[bb + kk * desc.ldb + j] };
                    acc += av as f64 * bv as f64;
                }
                let at = cb + i * desc.ldc + j;
                let prior = if desc.beta != 0.0 { desc.beta as f64 * out[at] } else { 0.0 };
                out[at] = desc.alpha as f64 * acc + prior;
            }
        }
    }
    out
}

/// CPU reference in f64 of a mode product, straight from the definition
/// `Y[.., j, ..] = sum_i U[j][i] X[.., i, ..]` (or `U[i][j]` with `transpose_u`).
pub fn mode_product_cpu(product: &ModeProduct, x: &[f32], u: &[f32]) -> Vec<f64> {
    let mode = product.mode;
    let p: usize = product.dims[..mode].iter().product();
    let d = product.dims[mode];
    let q: usize = product.dims[mode + 1..].iter().product();
    let j_len = product.u_rows;
    let mut y = vec![0.0f64; product.batch * p * j_len * q];
    for t in 0..product.batch * p {
        for j in 0..j_len {
            for qi in 0..q {
                let mut acc = 0.0f64;
                for i in 0..d {
                    let uv = if product.transpose_u { u[i * j_len + j] } else { u[j * d + i] };
                    acc += uv as f64 * x[(t * d + i) * q + qi] as f64;
                }
                y[(t * j_len + j) * q + qi] = acc;
            }
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Location;
    use crate::testing;
    use rand::{Rng, SeedableRng};

    /// Two products into disjoint parts of one C (as a mode product per dictionary writes
    /// them) get no barrier between them, and each part holds its product.
    #[test]
    fn products_on_disjoint_parts_of_one_buffer_need_no_barrier_between_them() {
        let ctx = testing::context();
        let gemm = Gemm::new(ctx).unwrap();
        let (m, n, k) = (5, 7, 3);
        let a_host: Vec<f32> = (0..2 * m * k).map(|i| (i % 7) as f32 - 2.5).collect();
        let b_host: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.5 + 0.25).collect();
        let c_host = vec![0.0f32; 2 * m * n + 3];
        let (a, b, c) =
            (ctx.upload(&a_host, "a").unwrap(), ctx.upload(&b_host, "b").unwrap(), ctx.upload(&c_host, "c").unwrap());
        let first = BatchedGemm::packed(1, m, n, k);
        let second = first.at(m * k, 0, m * n + 3);
        let mut rec = ctx.recorder().unwrap();
        gemm.record(&mut rec, &first, &a, &b, &c).unwrap();
        gemm.record(&mut rec, &second, &a, &b, &c).unwrap();
        assert_eq!(rec.barriers_placed(), 0);
        rec.submit().unwrap().wait().unwrap();
        let want = batched_gemm_cpu(
            &second,
            &a_host,
            &b_host,
            &batched_gemm_cpu(&first, &a_host, &b_host, &c_host).iter().map(|&v| v as f32).collect::<Vec<_>>(),
        );
        assert!(testing::max_rel_error(&ctx.download(&c).unwrap(), &want, 1.0) < 1e-6);
        testing::assert_no_validation_messages();
    }

    /// f32 products of length k with inputs in [-1, 1): the error is a few ulps of
    /// sum |a||b| <= k, so it is measured relative to max(|want|, k * 1e-2); 1e-5 leaves
    /// margin above the ~k * 6e-8 worst case for k <= 64.
    const BOUND: f64 = 1e-5;

    fn random(rng: &mut impl Rng, len: usize) -> Vec<f32> {
        (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
    }

    fn check(gemm: &Gemm, desc: &BatchedGemm, rng: &mut impl Rng) {
        let ctx = testing::context();
        let ((ar, ac), (br, bc)) = desc.stored_shapes();
        let a = random(rng, (desc.offset_a + desc.extent(ar, ac, desc.lda, desc.stride_a)).max(1));
        let b = random(rng, (desc.offset_b + desc.extent(br, bc, desc.ldb, desc.stride_b)).max(1));
        let c = random(rng, (desc.offset_c + desc.extent(desc.m, desc.n, desc.ldc, desc.stride_c)).max(1));
        let (ga, gb, gc) = (ctx.upload(&a, "A").unwrap(), ctx.upload(&b, "B").unwrap(), ctx.upload(&c, "C").unwrap());
        gemm.run(desc, &ga, &gb, &gc).unwrap();
        let got = ctx.download(&gc).unwrap();
        let err = testing::max_rel_error(&got, &batched_gemm_cpu(desc, &a, &b, &c), desc.k.max(1) as f64 * 1e-2);
        assert!(err < BOUND, "{desc:?}: error {err:e}");
    }

    #[test]
    fn batched_gemm_matches_f64_reference() {
        let gemm = Gemm::new(testing::context()).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        // Square and awkward shapes up to 64, every transpose combination, with and
        // without alpha/beta, across all three tile sizes.
        for (batch, m, n, k) in [(1, 1, 1, 1), (31, 7, 13, 5), (5, 64, 64, 64), (9, 33, 17, 40), (3, 20, 50, 31)] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let desc = BatchedGemm::packed(batch, m, n, k).transposed(ta, tb);
                check(&gemm, &desc, &mut rng);
                check(&gemm, &desc.scaled(-0.5, 0.75), &mut rng);
            }
        }
        // Padded leading dimensions, a shared A (stride 0) and a larger-than-tile product.
        let mut desc = BatchedGemm::packed(4, 10, 12, 9);
        desc.lda = 11;
        desc.ldc = 15;
        desc.stride_a = 0;
        desc.stride_c = 10 * 15 + 3;
        check(&gemm, &desc, &mut rng);
        check(&gemm, &BatchedGemm::packed(2, 100, 70, 130), &mut rng);
        // Batches starting inside their buffers (unaligned offsets), C^T-style products
        // with k-long rows as the light-field training's per-patch Gram matrices use them.
        check(&gemm, &BatchedGemm::packed(13, 7, 7, 45).transposed(false, true).at(5, 3, 11), &mut rng);
        check(&gemm, &BatchedGemm::packed(6, 5, 9, 5).at(0, 17, 1).scaled(1.0, 1.0), &mut rng);
        // Many tiny products: the batch count of the awkward sizes.
        check(&gemm, &BatchedGemm::packed(1000, 4, 4, 4), &mut rng);
        testing::assert_no_validation_messages();
    }

    #[test]
    fn batched_gemm_works_at_every_workgroup_size() {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        for &wg in WORKGROUP_SIZES {
            if let Ok(gemm) = Gemm::with_workgroup(ctx, wg) {
                check(&gemm, &BatchedGemm::packed(3, 45, 23, 37).transposed(true, true), &mut rng);
            }
        }
    }

    #[test]
    fn mode_products_match_the_definition() {
        let ctx = testing::context();
        let gemm = Gemm::new(ctx).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(14);
        let dims = vec![5, 9, 4, 7];
        for mode in 0..dims.len() {
            for transpose_u in [false, true] {
                let product = ModeProduct { dims: dims.clone(), mode, batch: 3, u_rows: 6, transpose_u };
                let (xl, ul, yl) = product.lens();
                let (x, u) = (random(&mut rng, xl), random(&mut rng, ul));
                let (gx, gu) = (ctx.upload(&x, "X").unwrap(), ctx.upload(&u, "U").unwrap());
                let gy = ctx.buffer::<f32>(yl, Location::Device, "Y").unwrap();
                gemm.mode_product(&product, &gx, &gu, &gy).unwrap();
                let got = ctx.download(&gy).unwrap();
                let err = testing::max_rel_error(&got, &mode_product_cpu(&product, &x, &u), dims[mode] as f64 * 1e-2);
                assert!(err < BOUND, "mode {mode}, transpose {transpose_u}: error {err:e}");
            }
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn bad_shapes_are_rejected() {
        let ctx = testing::context();
        let gemm = Gemm::new(ctx).unwrap();
        let buf = ctx.upload(&[0.0f32; 16], "buf").unwrap();
        assert!(gemm.run(&BatchedGemm::packed(2, 3, 3, 3), &buf, &buf, &buf).is_err());
        let product = ModeProduct { dims: vec![2, 2], mode: 2, batch: 1, u_rows: 2, transpose_u: false };
        assert!(gemm.mode_product(&product, &buf, &buf, &buf).is_err());
    }
}
