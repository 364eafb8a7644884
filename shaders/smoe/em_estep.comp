#version 460
// E-step, one thread per sample: log-sum-exp over all kernels of ln pi_k N(z; mu_k, S_k)
// (online, log domain), written per sample; each workgroup also writes the sum of its
// samples' log-likelihoods.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "em.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 2) const uint CHUNK = 64;
layout(set = 0, binding = 0) readonly buffer Samples { float samples[]; };
layout(set = 0, binding = 1) readonly buffer Prepared { float rec[]; };
layout(set = 0, binding = 2) writeonly buffer Lse { float lse[]; };
layout(set = 0, binding = 3) writeonly buffer Partials { float partials[]; };

shared float chunk[CHUNK * 36u];
shared float sums[64];

void main() {
    uint group = linear_group_id();
    uint n = group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    bool inside = n < pc.samples;
    float z[7];
    for (uint i = 0u; i < D; i++) z[i] = inside ? samples[n * D + i] : 0.0;
    float mx = -3.0e38, sum = 0.0;
    for (uint base = 0u; base < pc.kernels; base += CHUNK) {
        uint m = min(CHUNK, pc.kernels - base);
        barrier();
        for (uint e = gl_LocalInvocationID.x; e < m * EM_STRIDE; e += gl_WorkGroupSize.x) chunk[e] = rec[base * EM_STRIDE + e];
        barrier();
        for (uint j = 0u; j < m; j++) {
            float q;
            EM_LOG_DENSITY(chunk, j * EM_STRIDE, z, q);
            float l = chunk[j * EM_STRIDE + OFF_C] - 0.5 * q;
            if (l > mx) {
                sum *= exp(mx - l);
                mx = l;
            }
            sum += exp(l - mx);
        }
    }
    float value = mx + log(sum);
    if (inside) lse[n] = value;
    float s = subgroupAdd(inside ? value : 0.0);
    if (subgroupElect()) sums[gl_SubgroupID] = s;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float t = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; i++) t += sums[i];
        partials[group] = t;
    }
}
