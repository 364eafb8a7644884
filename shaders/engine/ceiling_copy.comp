#version 460
// Copy bandwidth probe: each invocation copies uvec4 elements in a grid-stride loop, so the
// kernel is limited only by DRAM read + write bandwidth.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
    for (uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < n; i += stride) {
        dst[i] = src[i];
    }
}
