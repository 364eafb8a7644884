#version 460
// SoftAssign's Sinkhorn iterations 2..S of a cooling iteration on the atomic path, in scaling
// form on the kernel K that iteration 1 left (sinkhorn_atomic.comp with WRITE_K): K[i][j] is
// M[i][j] after iteration 1's row normalisation, in f16 (at most 1, a row sums to 1). With
// row scalings u (f = f1 + t ln u, f1 the row potentials iteration 1 wrote) and column
// scalings v (g = g0 + t ln v, g0 the potentials in g slot 0), M = K u v, and the log-form
// recurrence of sinkhorn_atomic.comp becomes, without an exp or a log per entry:
//   v[j] = N / (c[j] + O[j])           c: the previous dispatch's sums, O[j] = exp(clamp(g0[j] / t))
//   u[i] = 1 / sum_j K[i][j] v[j]      (f -= t ln(sum_j M[i][j]))
//   c[j] += K[i][j] u[i]               (atomics into the next slot, as sinkhorn_atomic.comp)
// since g0 - t (ln(c + O) - ln N) = g0 + t ln v is its column normalisation, and M's column
// sums are v[j] c[j]. sinkhorn_atomic_finish.comp absorbs u and the last v into f and g.
// Why: per entry, one multiply-add for the row sum and one for the column sum instead of the
// exponent's arithmetic and an exp, and half the bytes of D in f32.
// Rows stream two ahead: a workgroup has two rows of K (as many bytes as one row of D in f32)
// in flight while it reduces the current one. Invocation lid owns GROUPS groups of 4
// consecutive columns, q = lid + k * workgroup size, one 8-byte load each (n % 4 == 0).
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_atomic_float : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint GROUPS = 2;
// n is exactly 4 GROUPS x workgroup size: no column is past n, so no masks.
layout(constant_id = 2) const bool FULL = false;

// Four f16 entries per element.
layout(set = 0, binding = 0) readonly buffer Kernel { uvec2 k4[]; };
layout(set = 0, binding = 1) buffer RowScalings { float u[]; };
// Slot 0: g0, the potentials K was built with.
layout(set = 0, binding = 2) readonly buffer ColPotentials { float g[]; };
// Three slots of n column sums.
layout(set = 0, binding = 3) buffer ColumnSums { float sums[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    uint blocks;
    float t;
    float clamp_;
    float log_capacity;
    uint sums_read;
    uint sums_add;
    uint sums_zero;
    uint reverse;
};

// Per-subgroup row sums, double buffered by row (the host keeps workgroups to at most 128
// subgroups): a row's readers finish before the barrier of the next row, which precedes the
// writes of the row after it.
shared float subgroup_sums[2][128];
shared vec4 tile[gl_WorkGroupSize.x];
#include "sinkhorn_block_sums.glsl"

// This invocation's column scalings and column sums.
vec4 v[GROUPS];
vec4 colsum[GROUPS];
uint parity = 0;

// Columns 4q .. 4q + 3 of row i, 0 past n.
uvec2 load_group(uint i, uint q) {
    return FULL || 4u * q < n ? k4[((i * n) >> 2) + q] : uvec2(0u);
}

// The row at position li of the block [begin, end), in this dispatch's order.
uint row_at(uint begin, uint end, uint li) {
    return reverse != 0u ? end - 1u - li : begin + li;
}

// Row li of the block from `slot`, which then starts loading row li + 2.
void scale_row(inout uvec2 slot[GROUPS], uint li, uint begin, uint end) {
    const uint wg = gl_WorkGroupSize.x;
    const uint lid = gl_LocalInvocationID.x;
    vec4 kv[GROUPS];
    float s = 0.0;
    [[unroll]] for (uint k = 0; k < GROUPS; k++) {
        kv[k] = vec4(unpackHalf2x16(slot[k].x), unpackHalf2x16(slot[k].y));
        s += dot(kv[k], v[k]);
    }
    if (li + 2u < end - begin) {
        uint row = row_at(begin, end, li + 2u);
        [[unroll]] for (uint k = 0; k < GROUPS; k++) slot[k] = load_group(row, lid + k * wg);
    }
    float total = subgroupAdd(s);
    if (subgroupElect()) subgroup_sums[parity][gl_SubgroupID] = total;
    barrier();
    float x = 0.0;
    for (uint q = gl_SubgroupInvocationID; q < gl_NumSubgroups; q += gl_SubgroupSize) x += subgroup_sums[parity][q];
    float ui = 1.0 / subgroupAdd(x);
    [[unroll]] for (uint k = 0; k < GROUPS; k++) colsum[k] += kv[k] * ui;
    if (lid == 0u) u[row_at(begin, end, li)] = ui;
    parity ^= 1u;
}

void main() {
    const uint wg = gl_WorkGroupSize.x;
    const uint lid = gl_LocalInvocationID.x;
    const uint block = linear_group_id();
    // Blocks differ by at most one row.
    const uint base = m / blocks;
    const uint extra = m % blocks;
    const uint row_begin = block * base + min(block, extra);
    const uint row_end = row_begin + base + (block < extra ? 1u : 0u);
    const uint count = row_end - row_begin;

    // The first two rows load first: their latency overlaps the column scalings.
    uvec2 a[GROUPS];
    uvec2 b[GROUPS];
    [[unroll]] for (uint k = 0; k < GROUPS; k++) {
        a[k] = count > 0u ? load_group(row_at(row_begin, row_end, 0u), lid + k * wg) : uvec2(0u);
        b[k] = count > 1u ? load_group(row_at(row_begin, row_end, 1u), lid + k * wg) : uvec2(0u);
    }
    const float capacity = exp(log_capacity);
    [[unroll]] for (uint k = 0; k < GROUPS; k++) {
        [[unroll]] for (uint c = 0; c < 4u; c++) {
            uint j = 4u * (lid + k * wg) + c;
            float outlier = j < n ? exp(clamp(g[j] / t, -clamp_, clamp_)) : 0.0;
            v[k][c] = j < n ? capacity / (sums[sums_read * n + j] + outlier) : 0.0;
        }
        colsum[k] = vec4(0.0);
    }
    for (uint j = block * wg + lid; j < n; j += blocks * wg) sums[sums_zero * n + j] = 0.0;

    for (uint li = 0; li < count; li += 2u) {
        scale_row(a, li, row_begin, row_end);
        if (li + 1u < count) scale_row(b, li + 1u, row_begin, row_end);
    }

    add_block_sums(colsum, sums_add);
}
