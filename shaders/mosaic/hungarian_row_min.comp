#version 460
// Hungarian method, step 1 over rows: u[i] = the least entry of row i (of n). One workgroup a
// row, m rows.
#extension GL_KHR_shader_subgroup_arithmetic : require
#define HUNGARIAN_NO_CONTROL
#define HUNGARIAN_WORKGROUP_MIN
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Costs { int d[]; };
layout(set = 0, binding = 1) writeonly buffer RowPotentials { int u[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
};

void main() {
    uint i = linear_group_id();
    if (i >= m) return;
    int lowest = INT_MAX;
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) lowest = min(lowest, d[i * n + j]);
    lowest = workgroup_min(lowest);
    if (gl_LocalInvocationID.x == 0u) u[i] = lowest;
}
