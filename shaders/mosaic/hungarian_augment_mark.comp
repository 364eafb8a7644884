#version 460
// Hungarian method, step 5 first half: from every free primed row, along prime -> star in
// that column -> its row's prime ..., each column reached remembers the row that primed it
// (green[c] = r; where paths join, one of them). A path ends at a column without a star.
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) readonly buffer StarCol { uint star_col[]; };
layout(set = 0, binding = 2) readonly buffer StarRow { uint star_row[]; };
layout(set = 0, binding = 3) readonly buffer Prime { uint prime[]; };
layout(set = 0, binding = 4) writeonly buffer Green { uint green[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
};

void main() {
    if (ctl.mode != MODE_AUGMENT) return;
    uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= m || star_col[i] != NONE) return;
    uint c = prime[i];
    if (c == NONE) return;
    green[c] = i;
    for (uint step = 0u; step < m; step++) {
        uint r = star_row[c];
        if (r == NONE) return;
        c = prime[r];
        if (c == NONE) break;
        green[c] = r;
    }
    fault(FAULT_PATH);
}
