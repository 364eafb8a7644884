#version 460
// Hungarian method, step 5 second half: from each marked column without a star, back along
// the marks: the marking row stars this column and gives up its old star's column, which
// its own marking row takes next, until a row that had no star. Paths from different end
// columns share no row and no column, so they flip in parallel.
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) buffer StarCol { uint star_col[]; };
layout(set = 0, binding = 2) buffer StarRow { uint star_row[]; };
layout(set = 0, binding = 3) readonly buffer Green { uint green[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
};

void main() {
    if (ctl.mode != MODE_AUGMENT) return;
    uint j = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (j >= n || green[j] == NONE || star_row[j] != NONE) return;
    uint col = j;
    for (uint step = 0u; step <= m; step++) {
        uint r = green[col];
        if (r == NONE) break;
        uint old = star_col[r];
        star_col[r] = col;
        star_row[col] = r;
        if (old == NONE) return;
        col = old;
    }
    fault(FAULT_PATH);
}
