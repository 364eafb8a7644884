#version 460
// Sum of squares of the appearance map over the crop, from its cells: each cell counts as
// many times as it has pixels inside the crop. Workgroup (block row, 0, pair) writes one
// partial; the host adds them in f64.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Cells { float cells[]; };
layout(set = 0, binding = 1) writeonly buffer Partials { float partials[]; };

shared float subgroup_sums[64];

// Pixels of [start, start + STRIDE) inside the crop [CROP, size - CROP - 1).
uint overlap(uint start, uint size) {
    uint lo = max(start, CROP);
    uint hi = min(start + STRIDE, size - CROP - 1u);
    return hi > lo ? hi - lo : 0u;
}

void main() {
    uint p = gl_WorkGroupID.z;
    uint by = gl_WorkGroupID.x;
    uint rows = overlap(STRIDE * by, height);
    float acc = 0.0;
    for (uint bx = gl_LocalInvocationID.x; bx < blocks_x; bx += gl_WorkGroupSize.x) {
        float v = cells[p * blocks() + by * blocks_x + bx];
        acc += v * v * float(rows * overlap(STRIDE * bx, width));
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) subgroup_sums[gl_SubgroupID] = acc;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float total = 0.0;
        for (uint s = 0u; s < gl_NumSubgroups; s++) total += subgroup_sums[s];
        partials[p * blocks_y + by] = total;
    }
}
