#version 460
// Region of interest: the bounding box of the active pixels (depth != 1.0) of a width x height
// image. Each workgroup reduces `per_group` pixels with subgroup and shared-memory min/max and
// issues one atomic per bound. roi = (min x, min y, ~max x, ~max y), all kept as minima so one
// fill with 0xFFFFFFFF initialises it; an image without active pixels leaves min x = ~0.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Depth { float depth[]; };
layout(set = 0, binding = 1) coherent buffer Roi { uint roi[4]; };
layout(push_constant) uniform Push { uint width; uint height; uint per_group; };

shared uvec4 partial[64];

void main() {
    uint n = width * height;
    uint begin = linear_group_id() * per_group;
    uint end = min(begin + per_group, n);
    uvec4 m = uvec4(0xFFFFFFFFu);
    for (uint i = begin + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x) {
        if (depth[i] != 1.0) {
            uint y = i / width;
            uint x = i - y * width;
            m = min(m, uvec4(x, y, ~x, ~y));
        }
    }
    m = uvec4(subgroupMin(m.x), subgroupMin(m.y), subgroupMin(m.z), subgroupMin(m.w));
    if (subgroupElect()) partial[gl_SubgroupID] = m;
    barrier();
    if (gl_SubgroupID == 0u) {
        uvec4 v = uvec4(0xFFFFFFFFu);
        for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) v = min(v, partial[s]);
        v = uvec4(subgroupMin(v.x), subgroupMin(v.y), subgroupMin(v.z), subgroupMin(v.w));
        if (subgroupElect() && v.x != 0xFFFFFFFFu) {
            atomicMin(roi[0], v.x);
            atomicMin(roi[1], v.y);
            atomicMin(roi[2], v.z);
            atomicMin(roi[3], v.w);
        }
    }
}
