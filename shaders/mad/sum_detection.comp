#version 460
// Sum of squares of the detection map over one row of the crop (BSIZE+1 : end-BSIZE-1) of
// one pair: workgroup (row, 0, pair) writes one partial; the host adds them in f64.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Map { float detection_map[]; };
layout(set = 0, binding = 1) writeonly buffer Partials { float partials[]; };

shared float subgroup_sums[64];

void main() {
    uint p = gl_WorkGroupID.z;
    uint crop_rows = height - 2u * CROP - 1u;
    uint y = CROP + gl_WorkGroupID.x;
    uint row = p * pixels() + y * width;
    float acc = 0.0;
    for (uint x = CROP + gl_LocalInvocationID.x; x < width - CROP - 1u; x += gl_WorkGroupSize.x) {
        float v = detection_map[row + x];
        acc += v * v;
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) subgroup_sums[gl_SubgroupID] = acc;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float total = 0.0;
        for (uint s = 0u; s < gl_NumSubgroups; s++) total += subgroup_sums[s];
        partials[p * crop_rows + gl_WorkGroupID.x] = total;
    }
}
