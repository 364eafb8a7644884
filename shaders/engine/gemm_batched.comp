#version 460
// Batched small GEMM: C_b = alpha * op(A_b) * op(B_b) + beta * C_b for b < batch, f32,
// row-major with leading dimensions, batch strides (a stride of 0 shares one matrix) and
// the element offsets where each operand's first matrix starts.
// op(A) is m x k: A stored m x k (trans_a = 0) or k x m (trans_a = 1); op(B) is k x n:
// B stored k x n or n x k. beta = 0 never reads C.
//
// A workgroup of T x T invocations (T = sqrt(WG)) computes a (T*R) x (T*R) tile of one C_b,
// R x R outputs per invocation (R = specialization constant 1), stepping over k in slices of
// KT that are staged in shared memory k-major, so the inner loop reads a row of op(A) and a
// column of op(B) from shared memory without conflicts between the R outputs.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint R = 4u;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) buffer C { float c[]; };
layout(push_constant) uniform Push {
    uint m; uint n; uint k;
    uint lda; uint ldb; uint ldc;
    uint stride_a; uint stride_b; uint stride_c;
    uint offset_a; uint offset_b; uint offset_c;
    uint trans_a; uint trans_b; uint batch;
    float alpha; float beta;
    uint tiles_m; uint tiles_n;
};

const uint KT = 16u;
// T = sqrt(WG), computed on the host and checked: WG is 64, 256 or 1024.
layout(constant_id = 2) const uint T = 16u;
const uint TILE = T * R;

shared float s_a[KT * TILE];  // s_a[kk * TILE + i] = op(A)[row0 + i][k0 + kk]
shared float s_b[KT * TILE];  // s_b[kk * TILE + j] = op(B)[k0 + kk][col0 + j]

void main() {
    uint group = linear_group_id();
    uint per_batch = tiles_m * tiles_n;
    uint bi = group / per_batch;
    if (bi >= batch) return;
    uint t = group % per_batch;
    uint row0 = (t / tiles_n) * TILE;
    uint col0 = (t % tiles_n) * TILE;
    uint a_base = offset_a + bi * stride_a;
    uint b_base = offset_b + bi * stride_b;
    uint c_base = offset_c + bi * stride_c;
    uint tx = gl_LocalInvocationID.x % T;
    uint ty = gl_LocalInvocationID.x / T;
    uint wg = gl_WorkGroupSize.x;

    float acc[R][R];
    for (uint i = 0u; i < R; i++) for (uint j = 0u; j < R; j++) acc[i][j] = 0.0;

    for (uint k0 = 0u; k0 < k; k0 += KT) {
        // Stage op(A)[row0 .. row0+TILE][k0 .. k0+KT]; consecutive invocations take
        // consecutive addresses of whichever layout A is stored in.
        for (uint e = gl_LocalInvocationID.x; e < KT * TILE; e += wg) {
            uint i, kk;
            if (trans_a == 0u) { kk = e % KT; i = e / KT; } else { i = e % TILE; kk = e / TILE; }
            uint row = row0 + i, col = k0 + kk;
            float v = 0.0;
            if (row < m && col < k) v = trans_a == 0u ? a[a_base + row * lda + col] : a[a_base + col * lda + row];
            s_a[kk * TILE + i] = v;
        }
        for (uint e = gl_LocalInvocationID.x; e < KT * TILE; e += wg) {
            uint j, kk;
            if (trans_b == 0u) { j = e % TILE; kk = e / TILE; } else { kk = e % KT; j = e / KT; }
            uint row = k0 + kk, col = col0 + j;
            float v = 0.0;
            if (row < k && col < n) v = trans_b == 0u ? b[b_base + row * ldb + col] : b[b_base + col * ldb + row];
            s_b[kk * TILE + j] = v;
        }
        barrier();
        for (uint kk = 0u; kk < KT; kk++) {
            float av[R];
            float bv[R];
            // Invocation (ty, tx) owns rows ty + T*i and columns tx + T*j: neighbours read
            // neighbouring shared words.
            for (uint i = 0u; i < R; i++) av[i] = s_a[kk * TILE + ty + T * i];
            for (uint j = 0u; j < R; j++) bv[j] = s_b[kk * TILE + tx + T * j];
            for (uint i = 0u; i < R; i++) for (uint j = 0u; j < R; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier();
    }

    for (uint i = 0u; i < R; i++) {
        uint row = row0 + ty + T * i;
        if (row >= m) continue;
        for (uint j = 0u; j < R; j++) {
            uint col = col0 + tx + T * j;
            if (col >= n) continue;
            uint at = c_base + row * ldc + col;
            float v = alpha * acc[i][j];
            if (beta != 0.0) v += beta * c[at];
            c[at] = v;
        }
    }
}
