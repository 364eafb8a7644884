#version 460
// Hungarian method, step 1 over columns: v[j] = the least d[i][j] - u[i]. Workgroup (x, y)
// takes a run of columns (one an invocation, coalesced) over `rows` rows; the host fills v
// with INT_MAX first, and each invocation folds its rows in with one atomicMin.
#define HUNGARIAN_NO_CONTROL
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Costs { int d[]; };
layout(set = 0, binding = 1) readonly buffer RowPotentials { int u[]; };
layout(set = 0, binding = 2) buffer ColumnPotentials { int v[]; };
layout(push_constant) uniform Push {
    uint n;
    uint rows;
};

void main() {
    uint j = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (j >= n) return;
    uint first = gl_WorkGroupID.y * rows;
    uint last = min(n, first + rows);
    int m = INT_MAX;
    for (uint i = first; i < last; i++) m = min(m, d[i * n + j] - u[i]);
    atomicMin(v[j], m);
}
