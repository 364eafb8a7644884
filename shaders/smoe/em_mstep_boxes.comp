#version 460
// The culled M-step (images), one workgroup per kernel: responsibilities
// r = exp(ln pi N(z) - lse) over the pixels of the kernel's support box (bound.glsl, the
// box binning drew it in: outside it the kernel's gate share is below 1/(65536 K) at every
// pixel of every tile with a bound), reduced to its statistics and update (em_mstats.glsl).
// Deterministic: no atomics, a fixed reduction order.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "em.glsl"
#include "bound.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Samples { float samples[]; };
layout(set = 0, binding = 1) readonly buffer Prepared { float rec[]; };
layout(set = 0, binding = 2) readonly buffer Lse { float lse[]; };
layout(set = 0, binding = 3) buffer Raw { float raw[]; };
layout(set = 0, binding = 4) readonly buffer Cull { float cullrec[]; };
layout(set = 0, binding = 5) readonly buffer Params { uint params[]; };

#include "em_mstats.glsl"

void main() {
    uint k = linear_group_id();
    if (k >= pc.kernels) return;
    uint pb = k * EM_STRIDE;
    ivec4 box;
    SUPPORT_BOX(cullrec, k * CULL_STRIDE, params[0], pc.span, pc.margin, pc.width, pc.height, box);
    uint bw = box.z >= box.x ? uint(box.z - box.x + 1) : 0u;
    uint bh = box.w >= box.y ? uint(box.w - box.y + 1) : 0u;
    float acc[STATS];
    for (uint s = 0u; s < STATS; s++) acc[s] = 0.0;
    float c = rec[pb + OFF_C];
    for (uint e = gl_LocalInvocationID.x; e < bw * bh; e += gl_WorkGroupSize.x) {
        uint n = (uint(box.y) + e / bw) * pc.width + uint(box.x) + e % bw;
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
