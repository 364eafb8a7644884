#version 460
// Hungarian method, step 6 second half: covered rows u -= delta, uncovered columns
// v += delta (the reduced costs of covered rows rise, of uncovered columns fall); the zero
// list is emptied for hungarian_compress.comp to rebuild. No positive delta (nothing left
// uncovered, or a bug) stops the machine.
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) buffer RowPotentials { int u[]; };
layout(set = 0, binding = 2) buffer ColumnPotentials { int v[]; };
layout(set = 0, binding = 3) readonly buffer CoverRow { uint cover_row[]; };
layout(set = 0, binding = 4) readonly buffer CoverCol { uint cover_col[]; };
layout(push_constant) uniform Push {
    uint n;
};

void main() {
    if (ctl.mode != MODE_DUAL) return;
    int delta = ctl.delta;
    bool valid = delta > 0 && delta != INT_MAX;
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k == 0u) {
        ctl.zeros = 0u;
        if (!valid) fault(FAULT_DELTA);
    }
    if (!valid || k >= n) return;
    if (cover_row[k] != 0u) u[k] -= delta;
    if (cover_col[k] == 0u) v[k] += delta;
}
