#version 460
// SoftAssign, one dispatch per Sinkhorn iteration for matrices too large for one workgroup:
// the column sums travel between dispatches in float atomics (VK_EXT_shader_atomic_float)
// instead of per-block partials and a column pass. Dispatch s of a cooling iteration:
//  1. (s > 0) every workgroup applies iteration s-1's column normalisation itself, from the
//     finished sums[sums_read] and the g of iteration s-1 (g slot g_in): n exp + log per
//     workgroup, read from L2; workgroup 0 stores the result in g slot g_out for dispatch
//     s+1. (s = 0 starts from g slot 0, the potentials.) Workgroups share no state here:
//     they all compute the same g from the same inputs.
//  2. the row pass of sinkhorn_rows.comp over the workgroup's block of rows, first to last
//     or (reverse, every other dispatch) last to first, so that a dispatch starts on the
//     rows its predecessor read last, which the L2 cache still holds (D is larger than L2,
//     so rows read in the same order every time would always have left it):
//       e[j] = exp(clamp((f[i] + g[j] + alpha - d[i][j]) / t)), s = sum_j e[j],
//       f[i] -= t ln s, colsum[j] += e[j] / s
//     ROWS rows per step, one workgroup barrier per step; the next step's distances load
//     before the barrier so their latency overlaps the reduction.
//  3. atomicAdd of the block's column sums into sums[sums_add], coalesced through a shared
//     tile; workgroups also zero sums[sums_zero], the slot dispatch s+1 adds into (its last
//     reader was dispatch s-1).
// With WRITE_K (the first dispatch of a cooling iteration where sinkhorn_scaled.comp runs the
// others), each row-normalised entry e[j] / s is also stored in f16 as that kernel's K.
// sinkhorn_atomic_finish.comp applies the last iteration's column normalisation.
// Invocation lid owns GROUPS groups of 4 consecutive columns, q = lid + k * workgroup size;
// with VEC4 (n % 4 == 0) a group is one 16-byte load.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_atomic_float : require
#include "common.glsl"
#include "sinkhorn_column.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint GROUPS = 2;
layout(constant_id = 2) const uint ROWS = 1;
layout(constant_id = 3) const bool VEC4 = true;
// n is exactly 4 GROUPS x workgroup size: no column is past n, so no masks (registers).
layout(constant_id = 4) const bool FULL = false;
// Store the row-normalised entries in K (needs VEC4).
layout(constant_id = 5) const bool WRITE_K = false;

// The same distances, seen as floats and (VEC4) as vec4.
layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 0) readonly buffer Distances4 { vec4 d4[]; };
layout(set = 0, binding = 1) buffer RowPotentials { float f[]; };
// Two slots of n: slot 0 holds the potentials between cooling iterations.
layout(set = 0, binding = 2) buffer ColPotentials { float g[]; };
// Three slots of n column sums.
layout(set = 0, binding = 3) buffer ColumnSums { float sums[]; };
// sinkhorn_scaled.comp's K, four f16 entries per element (bound but unused without WRITE_K).
layout(set = 0, binding = 4) writeonly buffer Kernel { uvec2 k4[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    uint blocks;
    float t;
    float alpha;
    float clamp_;
    float log_capacity;
    uint update;
    uint g_in;
    uint g_out;
    uint sums_read;
    uint sums_add;
    uint sums_zero;
    uint reverse;
};

// Per-subgroup row sums, double buffered by step as in sinkhorn_rows.comp (the host keeps
// workgroups to at most 128 subgroups).
shared float subgroup_sums[2][ROWS][128];
shared vec4 tile[gl_WorkGroupSize.x];
#include "sinkhorn_block_sums.glsl"

// Columns 4q .. 4q + 3 of row i, 0 past n.
vec4 load_group(uint i, uint q) {
    uint j = 4u * q;
    if (VEC4) return j < n ? d4[(i * n + j) >> 2] : vec4(0.0);
    vec4 v = vec4(0.0);
    [[unroll]] for (uint c = 0; c < 4u; c++) {
        if (j + c < n) v[c] = d[i * n + j + c];
    }
    return v;
}

// The row at position li of the block [begin, end), in this dispatch's order.
uint row_at(uint begin, uint end, uint li) {
    return reverse != 0u ? end - 1u - li : begin + li;
}

// The sum of the step's per-subgroup sums of row r, in every invocation.
float workgroup_total(uint parity, uint r) {
    float x = 0.0;
    for (uint q = gl_SubgroupInvocationID; q < gl_NumSubgroups; q += gl_SubgroupSize) x += subgroup_sums[parity][r][q];
    return subgroupAdd(x);
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
    const float inv_t = 1.0 / t;

    // The first step's distances and f first: their latency overlaps the column update.
    vec4 dv[ROWS][GROUPS];
    float fr[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; r++) {
        bool live = r < count;
        uint row = row_at(row_begin, row_end, r);
        fr[r] = live ? f[row] : 0.0;
        [[unroll]] for (uint k = 0; k < GROUPS; k++) dv[r][k] = live ? load_group(row, lid + k * wg) : vec4(0.0);
    }

    // 1. The column potentials (+ alpha) of the owned columns, and which of them are real.
    vec4 gja[GROUPS];
    vec4 live_column[GROUPS];
    [[unroll]] for (uint k = 0; k < GROUPS; k++) {
        [[unroll]] for (uint c = 0; c < 4u; c++) {
            uint j = 4u * (lid + k * wg) + c;
            float gj = 0.0;
            if (j < n) {
                gj = g[g_in * n + j];
                if (update != 0u) {
                    gj = normalised_column(gj, sums[sums_read * n + j], t, clamp_, log_capacity);
                    if (block == 0u) g[g_out * n + j] = gj;
                }
            }
            gja[k][c] = gj + alpha;
            live_column[k][c] = FULL || j < n ? 1.0 : 0.0;
        }
    }
    for (uint j = block * wg + lid; j < n; j += blocks * wg) sums[sums_zero * n + j] = 0.0;

    // 2. The row pass.
    vec4 colsum[GROUPS];
    [[unroll]] for (uint k = 0; k < GROUPS; k++) colsum[k] = vec4(0.0);
    uint parity = 0;
    for (uint li = 0; li < count; li += ROWS) {
        vec4 e[ROWS][GROUPS];
        float s[ROWS];
        float fi[ROWS];
        [[unroll]] for (uint r = 0; r < ROWS; r++) {
            fi[r] = fr[r];
            s[r] = 0.0;
            [[unroll]] for (uint k = 0; k < GROUPS; k++) {
                vec4 x = (fi[r] + gja[k] - dv[r][k]) * inv_t;
                e[r][k] = exp(clamp(x, -clamp_, clamp_));
                if (!FULL) e[r][k] *= live_column[k];
                s[r] += dot(e[r][k], vec4(1.0));
            }
        }
        uint next = li + ROWS;
        [[unroll]] for (uint r = 0; r < ROWS; r++) {
            if (next + r < count) {
                uint row = row_at(row_begin, row_end, next + r);
                fr[r] = f[row];
                [[unroll]] for (uint k = 0; k < GROUPS; k++) dv[r][k] = load_group(row, lid + k * wg);
            }
        }
        [[unroll]] for (uint r = 0; r < ROWS; r++) {
            float total = subgroupAdd(s[r]);
            if (subgroupElect()) subgroup_sums[parity][r][gl_SubgroupID] = total;
        }
        barrier();
        [[unroll]] for (uint r = 0; r < ROWS; r++) {
            if (li + r < count) {
                float total = workgroup_total(parity, r);
                float inv_total = 1.0 / total;
                uint row = row_at(row_begin, row_end, li + r);
                [[unroll]] for (uint k = 0; k < GROUPS; k++) {
                    vec4 normalised = e[r][k] * inv_total;
                    colsum[k] += normalised;
                    uint q = lid + k * wg;
                    if (WRITE_K && 4u * q < n) {
                        k4[((row * n) >> 2) + q] = uvec2(packHalf2x16(normalised.xy), packHalf2x16(normalised.zw));
                    }
                }
                if (lid == 0u) f[row] = fi[r] - t * log(total);
            }
        }
        parity ^= 1u;
    }

    // 3. The block's column sums.
    add_block_sums(colsum, sums_add);
}
