#version 460
// Partial sums of u32: each workgroup sums `items` consecutive elements per invocation-stride
// loop and writes one partial; the host (or a second pass) adds the partials.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Input { uint data[]; };
layout(set = 0, binding = 1) writeonly buffer Partials { uint partials[]; };
layout(push_constant) uniform Push { uint n; uint per_group; };

shared uint subgroup_sums[64];

void main() {
    uint group = linear_group_id();
    uint begin = group * per_group;
    uint end = min(begin + per_group, n);
    uint acc = 0u;
    for (uint i = begin + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x) {
        acc += data[i];
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) subgroup_sums[gl_SubgroupID] = acc;
    barrier();
    if (gl_SubgroupID == 0u) {
        uint v = gl_SubgroupInvocationID < gl_NumSubgroups ? subgroup_sums[gl_SubgroupInvocationID] : 0u;
        // Fewer than 64 subgroups per workgroup: one subgroup may need several passes.
        for (uint s = gl_SubgroupInvocationID + gl_SubgroupSize; s < gl_NumSubgroups; s += gl_SubgroupSize) v += subgroup_sums[s];
        v = subgroupAdd(v);
        if (subgroupElect()) partials[group] = v;
    }
}
