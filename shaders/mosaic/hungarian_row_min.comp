#version 460
// Hungarian method, step 1 over rows: u[i] = the least entry of row i. One workgroup a row.
#extension GL_KHR_shader_subgroup_arithmetic : require
#define HUNGARIAN_NO_CONTROL
#define HUNGARIAN_WORKGROUP_MIN
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Costs { int d[]; };
layout(set = 0, binding = 1) writeonly buffer RowPotentials { int u[]; };
layout(push_constant) uniform Push {
    uint n;
};

void main() {
    uint i = linear_group_id();
    if (i >= n) return;
    int m = INT_MAX;
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) m = min(m, d[i * n + j]);
    m = workgroup_min(m);
    if (gl_LocalInvocationID.x == 0u) u[i] = m;
}
