#version 460
// SoftAssign, every Sinkhorn iteration of one cooling iteration in one workgroup: D, f and g
// live in shared memory (the host uses this kernel only when they fit), so a cooling
// iteration is one dispatch instead of two per Sinkhorn iteration, whose launch gaps are all
// the time of a small matrix. Same arithmetic as sinkhorn_rows.comp + sinkhorn_cols.comp:
//   row i:    s = sum_j exp(clamp((f[i] + (g[j] + alpha) - d[i][j]) / t));  f[i] -= t ln s
//   column j: c = sum_i e[i][j] / s[i] (e with the f before this iteration's row update);
//             g[j] -= t (ln(c + exp(clamp(g[j] / t))) - ln N)
// Rows: one subgroup per row, lanes over the columns (consecutive words of a row, no bank
// conflicts). Columns: `slices` groups of N invocations, invocation j of a slice summing
// rows slice, slice + slices, ...; the slices are added in shared memory. f is double
// buffered by iteration so the row update does not race the column sums that read the old f.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "sinkhorn_column.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint M = 1;
layout(constant_id = 2) const uint N = 1;

layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 1) buffer RowPotentials { float f[]; };
layout(set = 0, binding = 2) buffer ColPotentials { float g[]; };
layout(push_constant) uniform Push {
    uint iterations;
    float t;
    float alpha;
    float clamp_;
    float log_capacity;
};

shared float sd[M * N];
shared float sf[2][M];
shared float inv_row_sum[M];
shared float sg[N];
shared float slice_sums[gl_WorkGroupSize.x];

float entry(float fi, float gja, float dij, float inv_t) {
    return exp(clamp((fi + gja - dij) * inv_t, -clamp_, clamp_));
}

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    for (uint q = lid; q < M * N; q += wg) sd[q] = d[q];
    for (uint i = lid; i < M; i += wg) sf[0][i] = f[i];
    for (uint j = lid; j < N; j += wg) sg[j] = g[j];
    barrier();
    const float inv_t = 1.0 / t;
    // With N > wg one slice: each invocation owns columns lid, lid + wg, ... outright.
    const uint slices = max(1u, wg / N);
    const uint slice = lid / N;
    uint p = 0;
    for (uint it = 0; it < iterations; it++) {
        for (uint i = gl_SubgroupID; i < M; i += gl_NumSubgroups) {
            float fi = sf[p][i];
            float s = 0.0;
            for (uint j = gl_SubgroupInvocationID; j < N; j += gl_SubgroupSize) {
                s += entry(fi, sg[j] + alpha, sd[i * N + j], inv_t);
            }
            s = subgroupAdd(s);
            if (subgroupElect()) {
                inv_row_sum[i] = 1.0 / s;
                sf[p ^ 1u][i] = fi - t * log(s);
            }
        }
        barrier();
        if (N <= wg) {
            uint j = lid % N;
            float c = 0.0;
            if (slice < slices) {
                float gja = sg[j] + alpha;
                for (uint i = slice; i < M; i += slices) {
                    c += entry(sf[p][i], gja, sd[i * N + j], inv_t) * inv_row_sum[i];
                }
            }
            slice_sums[lid] = c;
            barrier();
            if (lid < N) {
                float total = 0.0;
                for (uint q = 0; q < slices; q++) total += slice_sums[q * N + lid];
                sg[lid] = normalised_column(sg[lid], total, t, clamp_, log_capacity);
            }
        } else {
            for (uint j = lid; j < N; j += wg) {
                float gj = sg[j];
                float gja = gj + alpha;
                float total = 0.0;
                for (uint i = 0; i < M; i++) total += entry(sf[p][i], gja, sd[i * N + j], inv_t) * inv_row_sum[i];
                sg[j] = normalised_column(gj, total, t, clamp_, log_capacity);
            }
        }
        barrier();
        p ^= 1u;
    }
    for (uint i = lid; i < M; i += wg) f[i] = sf[p][i];
    for (uint j = lid; j < N; j += wg) g[j] = sg[j];
}
