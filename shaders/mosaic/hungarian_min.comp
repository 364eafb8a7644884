#version 460
// Hungarian method, step 6 first half: Control.delta = the least d - u - v over uncovered
// rows and columns. Workgroups stride over rows, skipping covered ones whole; invocations
// over a row's uncovered columns.
#extension GL_KHR_shader_subgroup_arithmetic : require
#define HUNGARIAN_WORKGROUP_MIN
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) readonly buffer Costs { int d[]; };
layout(set = 0, binding = 2) readonly buffer RowPotentials { int u[]; };
layout(set = 0, binding = 3) readonly buffer ColumnPotentials { int v[]; };
layout(set = 0, binding = 4) readonly buffer CoverRow { uint cover_row[]; };
layout(set = 0, binding = 5) readonly buffer CoverCol { uint cover_col[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
};

void main() {
    if (ctl.mode != MODE_DUAL) return;
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    int lowest = INT_MAX;
    for (uint i = linear_group_id(); i < m; i += groups) {
        if (cover_row[i] != 0u) continue;
        int ui = u[i];
        for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) {
            if (cover_col[j] == 0u) lowest = min(lowest, d[i * n + j] - ui - v[j]);
        }
    }
    lowest = workgroup_min(lowest);
    if (gl_LocalInvocationID.x == 0u && lowest != INT_MAX) atomicMin(ctl.delta, lowest);
}
