#version 460
// One k-means++ seeding step: D(x) = min(D(x), |x - c|^2) for the newest centre
// c = samples[picks[step]] (or D(x) = |x - c|^2 for the first), and each workgroup's sum of
// D, the first level of the draw (kmeans_draw.comp). Sums are trees in shared memory, so the
// draw is the same on every run.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint D = 5;
layout(set = 0, binding = 0) readonly buffer Samples { float samples[]; };
layout(set = 0, binding = 1) readonly buffer Picks { uint picks[]; };
layout(set = 0, binding = 2) buffer Near { float near[]; };
layout(set = 0, binding = 3) writeonly buffer Blocks { float block_sums[]; };
layout(push_constant) uniform Push {
    uint n;
    uint step;
    uint first;
} pc;

shared float partial[256];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint i = linear_group_id() * 256u + lid;
    float e = 0.0;
    if (i < pc.n) {
        uint c = picks[pc.step];
        for (uint a = 0u; a < D; a++) {
            float t = samples[i * D + a] - samples[c * D + a];
            e += t * t;
        }
        if (pc.first == 0u) e = min(e, near[i]);
        near[i] = e;
    }
    partial[lid] = e;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (lid < s) partial[lid] += partial[lid + s];
        barrier();
    }
    if (lid == 0u) block_sums[linear_group_id()] = partial[0];
}
