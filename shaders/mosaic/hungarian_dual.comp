#version 460
// Hungarian method, step 6 second half: uncovered rows u += delta, covered columns
// v -= delta, so reduced costs fall by delta where row and column are uncovered and rise
// where both are covered. Column potentials only fall, and a column never starred is
// never covered: v stays <= 0 with v = 0 on unused columns, the rectangular problem's dual.
// The zero list is emptied for hungarian_compress.comp to rebuild. No positive delta
// (nothing left uncovered, or a bug) stops the machine. One invocation per index below
// max(m, n).
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) buffer RowPotentials { int u[]; };
layout(set = 0, binding = 2) buffer ColumnPotentials { int v[]; };
layout(set = 0, binding = 3) readonly buffer CoverRow { uint cover_row[]; };
layout(set = 0, binding = 4) readonly buffer CoverCol { uint cover_col[]; };
layout(push_constant) uniform Push {
    uint m;
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
    if (!valid) return;
    if (k < m && cover_row[k] == 0u) u[k] += delta;
    if (k < n && cover_col[k] != 0u) v[k] -= delta;
}
