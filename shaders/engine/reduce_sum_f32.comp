#version 460
// Partial sums of f32: workgroup g sums elements [g*per_group, (g+1)*per_group) into
// partials[g]. Each invocation accumulates its strided share with Kahan compensation, then
// subgroups and the workgroup combine by trees. Run again on the partials with one
// workgroup for the total.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "kahan.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Input { float data[]; };
layout(set = 0, binding = 1) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { uint n; uint per_group; };

shared float s_sums[gl_WorkGroupSize.x];

void main() {
    uint group = linear_group_id();
    uint begin = group * per_group;
    uint end = min(begin + per_group, n);
    Kahan acc = kahan_new();
    for (uint i = begin + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x) kahan_add(acc, data[i]);
    float v = subgroupAdd(acc.sum - acc.c);
    if (subgroupElect()) s_sums[gl_SubgroupID] = v;
    barrier();
    if (gl_SubgroupID == 0u) {
        float w = 0.0;
        for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) w += s_sums[s];
        w = subgroupAdd(w);
        if (subgroupElect()) partials[group] = w;
    }
}
