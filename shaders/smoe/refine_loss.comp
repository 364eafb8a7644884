#version 460
// The rendered image's squared error sum |clamp(out) - target|^2, reduced on the GPU in a
// fixed order (deterministic). phase 0: one partial sum per workgroup of pixels of view
// pc.view (partials[view * count + group]). phase 1: one workgroup sums the pc.count
// partials into track[step] and keeps the best so far: best[step + 1] = min(best[step],
// track[step]).
#include "refine.glsl"

layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer State { float state[]; };
layout(set = 0, binding = 1) readonly buffer Target { float target[]; };
layout(set = 0, binding = 2) buffer Partials { float partials[]; };
layout(set = 0, binding = 3) buffer Track { float track[]; };
layout(set = 0, binding = 4) buffer Best { float best[]; };

shared float red[256];

void main() {
    uint lid = gl_LocalInvocationID.x;
    float s = 0.0;
    if (pc.phase == 0u) {
        uint pixels = pc.width * pc.height;
        uint i = linear_group_id() * 256u + lid;
        if (i < pixels) {
            for (uint c = 0u; c < 3u; c++) {
                float e = clamp(state[4u * i + c], 0.0, 1.0) - target[3u * (pc.view * pixels + i) + c];
                s += e * e;
            }
        }
    } else {
        for (uint i = lid; i < pc.count; i += 256u) s += partials[i];
    }
    red[lid] = s;
    barrier();
    for (uint half_n = 128u; half_n > 0u; half_n >>= 1u) {
        if (lid < half_n) red[lid] += red[lid + half_n];
        barrier();
    }
    if (lid != 0u) return;
    if (pc.phase == 0u) {
        partials[pc.view * pc.count + linear_group_id()] = red[0];
    } else {
        track[pc.step] = red[0];
        best[pc.step + 1u] = min(best[pc.step], red[0]);
    }
}
