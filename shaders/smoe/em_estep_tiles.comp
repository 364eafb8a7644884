#version 460
// The culled E-step (images), one workgroup per screen tile, one invocation per pixel: the
// log-sum-exp of ln pi_k N(z; mu_k, S_k) over the kernels the renderer's exact culling
// lists for the tile (smoe_bin.comp; a kernel left out has a gate share below 1/(65536 K)
// at every pixel of the tile). A tile without a bound, with an empty list, or whose list
// did not fit sums over every kernel, which is always correct. Each workgroup also writes
// the sum of its pixels' log-likelihoods, so memory is O(samples + list entries).
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "em.glsl"

layout(local_size_x_id = 3, local_size_y_id = 3) in;
layout(constant_id = 2) const uint CHUNK = 64;
layout(constant_id = 3) const uint TILE = 16;
layout(set = 0, binding = 0) readonly buffer Samples { float samples[]; };
layout(set = 0, binding = 1) readonly buffer Prepared { float rec[]; };
layout(set = 0, binding = 2) readonly buffer Counts { uint counts[]; };
layout(set = 0, binding = 3) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 4) readonly buffer Lists { uint lists[]; };
layout(set = 0, binding = 5) readonly buffer Keys { uint keys[]; };
layout(set = 0, binding = 6) writeonly buffer Lse { float lse[]; };
layout(set = 0, binding = 7) writeonly buffer Partials { float partials[]; };

shared float chunk[CHUNK * 36u];
shared float sums[64];

void main() {
    uint t = gl_WorkGroupID.y * pc.tiles_x + gl_WorkGroupID.x;
    uint lid = gl_LocalInvocationIndex;
    uint col = gl_WorkGroupID.x * TILE + gl_LocalInvocationID.x;
    uint row = gl_WorkGroupID.y * TILE + gl_LocalInvocationID.y;
    bool inside = col < pc.width && row < pc.height;
    uint n = row * pc.width + col;
    float z[7];
    for (uint i = 0u; i < D; i++) z[i] = inside ? samples[n * D + i] : 0.0;
    uint count = counts[t], off = offsets[t];
    bool every = keys[t] == 0u || count == 0u || off + count > pc.capacity;
    if (every) {
        count = pc.kernels;
        off = 0u;
    }
    float mx = -3.0e38, sum = 0.0;
    for (uint base = 0u; base < count; base += CHUNK) {
        uint m = min(CHUNK, count - base);
        barrier();
        for (uint e = lid; e < m * EM_STRIDE; e += TILE * TILE) {
            uint j = e / EM_STRIDE;
            uint k = every ? base + j : lists[off + base + j];
            chunk[e] = rec[k * EM_STRIDE + (e - j * EM_STRIDE)];
        }
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
    if (lid == 0u) {
        float total = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; i++) total += sums[i];
        partials[t] = total;
    }
}
