#version 460
// Row sums of a row-major m x n f32 matrix. Short rows: one subgroup per row (push
// whole_group = 0). Long rows: one workgroup per row (whole_group = 1). Lanes stride over
// the row (coalesced) with Kahan accumulation, then a subgroup tree.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "kahan.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Matrix { float a[]; };
layout(set = 0, binding = 1) writeonly buffer Sums { float sums[]; };
layout(push_constant) uniform Push { uint m; uint n; uint whole_group; };

shared float s_sums[gl_WorkGroupSize.x];

void main() {
    uint group = linear_group_id();
    if (whole_group != 0u) {
        uint row = group;
        Kahan acc = kahan_new();
        for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) kahan_add(acc, a[row * n + j]);
        float v = subgroupAdd(acc.sum - acc.c);
        if (subgroupElect()) s_sums[gl_SubgroupID] = v;
        barrier();
        if (gl_SubgroupID == 0u) {
            float w = 0.0;
            for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) w += s_sums[s];
            w = subgroupAdd(w);
            if (subgroupElect()) sums[row] = w;
        }
    } else {
        uint row = group * gl_NumSubgroups + gl_SubgroupID;
        if (row >= m) return;
        Kahan acc = kahan_new();
        for (uint j = gl_SubgroupInvocationID; j < n; j += gl_SubgroupSize) kahan_add(acc, a[row * n + j]);
        float v = subgroupAdd(acc.sum - acc.c);
        if (subgroupElect()) sums[row] = v;
    }
}
