#version 460
// M-step, one workgroup per kernel: responsibilities r = exp(ln pi N(z) - lse) over all
// samples, reduced to N_k, sum r (z - mu), sum r (z - mu)(z - mu)^T (moments about the old
// mean, so the covariance does not cancel catastrophically in f32), then the new pi, mu and
// regularised covariance are written over the kernel's raw record.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "em.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Samples { float samples[]; };
layout(set = 0, binding = 1) readonly buffer Prepared { float rec[]; };
layout(set = 0, binding = 2) readonly buffer Lse { float lse[]; };
layout(set = 0, binding = 3) buffer Raw { float raw[]; };

const uint STATS = 1u + 7u + 28u;
shared float sub_sums[64 * 36];
shared float total[36];

void main() {
    uint k = linear_group_id();
    if (k >= pc.kernels) return;
    uint pb = k * EM_STRIDE;
    uint nstats = 1u + D + D * (D + 1u) / 2u;
    float acc[36];
    for (uint s = 0u; s < nstats; s++) acc[s] = 0.0;
    float c = rec[pb + OFF_C];
    for (uint n = gl_LocalInvocationID.x; n < pc.samples; n += gl_WorkGroupSize.x) {
        float z[7];
        for (uint i = 0u; i < D; i++) z[i] = samples[n * D + i];
        float q;
        EM_LOG_DENSITY(rec, pb, z, q);
        float r = exp(c - 0.5 * q - lse[n]);
        if (r < 1e-30) continue;
        float d[7];
        for (uint i = 0u; i < D; i++) d[i] = z[i] - rec[pb + i];
        acc[0] += r;
        for (uint i = 0u; i < D; i++) {
            acc[1u + i] += r * d[i];
            for (uint j = 0u; j <= i; j++) acc[1u + D + packed_index(i, j)] += r * d[i] * d[j];
        }
    }
    for (uint s = 0u; s < nstats; s++) {
        float v = subgroupAdd(acc[s]);
        if (subgroupElect()) sub_sums[gl_SubgroupID * 36u + s] = v;
    }
    barrier();
    for (uint s = gl_LocalInvocationID.x; s < nstats; s += gl_WorkGroupSize.x) {
        float t = 0.0;
        for (uint g = 0u; g < gl_NumSubgroups; g++) t += sub_sums[g * 36u + s];
        total[s] = t;
    }
    barrier();
    if (gl_LocalInvocationID.x != 0u) return;
    uint rb = k * RAW_STRIDE;
    float nk = total[0];
    // A kernel that lost all its samples keeps its place and shape with a negligible prior.
    if (nk < 1e-3) {
        raw[rb] = 1e-3 / float(pc.samples);
        return;
    }
    raw[rb] = nk / float(pc.samples);
    float delta[7];
    for (uint i = 0u; i < D; i++) {
        delta[i] = total[1u + i] / nk;
        raw[rb + 1u + i] = rec[pb + i] + delta[i];
    }
    for (uint i = 0u; i < D; i++) {
        for (uint j = 0u; j <= i; j++) {
            float v = total[1u + D + packed_index(i, j)] / nk - delta[i] * delta[j];
            if (i == j) v = max(v, 0.0) + pc.reg[i];
            raw[rb + 1u + D + packed_index(i, j)] = v;
        }
    }
}
