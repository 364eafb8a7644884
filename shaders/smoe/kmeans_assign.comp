#version 460
// Lloyd assignment: the nearest centre of every sample (the first on ties, as on the CPU).
// Centres pass through shared memory in tiles of 256, loaded by the whole workgroup.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint D = 5;
layout(set = 0, binding = 0) readonly buffer Samples { float samples[]; };
layout(set = 0, binding = 1) readonly buffer Centres { float centres[]; };
layout(set = 0, binding = 2) writeonly buffer Labels { uint labels[]; };
layout(push_constant) uniform Push {
    uint n;
    uint k;
} pc;

// D is at most 7 (x, y, u, v, r, g, b).
shared float tile[256 * 7];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint i = linear_group_id() * 256u + lid;
    bool live = i < pc.n;
    float s[7];
    for (uint a = 0u; a < D; a++) s[a] = live ? samples[i * D + a] : 0.0;
    float best = 3.0e38;
    uint arg = 0u;
    for (uint base = 0u; base < pc.k; base += 256u) {
        uint m = min(256u, pc.k - base);
        barrier();
        for (uint x = lid; x < m * D; x += 256u) tile[x] = centres[base * D + x];
        barrier();
        for (uint j = 0u; j < m; j++) {
            float e = 0.0;
            for (uint a = 0u; a < D; a++) {
                float t = s[a] - tile[j * D + a];
                e += t * t;
            }
            if (e < best) {
                best = e;
                arg = base + j;
            }
        }
    }
    if (live) labels[i] = arg;
}
