#version 460
// M-step, one workgroup per kernel: responsibilities r = exp(ln pi N(z) - lse) over all
// samples, reduced to the kernel's statistics and update (em_mstats.glsl).
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "em.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Samples { float samples[]; };
layout(set = 0, binding = 1) readonly buffer Prepared { float rec[]; };
layout(set = 0, binding = 2) readonly buffer Lse { float lse[]; };
layout(set = 0, binding = 3) buffer Raw { float raw[]; };

#include "em_mstats.glsl"

void main() {
    uint k = linear_group_id();
    if (k >= pc.kernels) return;
    uint pb = k * EM_STRIDE;
    float acc[STATS];
    for (uint s = 0u; s < STATS; s++) acc[s] = 0.0;
    float c = rec[pb + OFF_C];
    for (uint n = gl_LocalInvocationID.x; n < pc.samples; n += gl_WorkGroupSize.x) {
        float z[7];
        for (uint i = 0u; i < D; i++) z[i] = samples[n * D + i];
        float q;
        EM_LOG_DENSITY(rec, pb, z, q);
        float r = exp(c - 0.5 * q - lse[n]);
        if (!(r >= 1e-30)) continue;  // NaN too: never summed
        add_sample(acc, r, z, pb);
    }
    finish_kernel(acc, k, pb);
}
