#version 460
// Hungarian method, step 2: a first matching on the zero list. A zero whose row and column
// are free takes the column, then the row; if the row was taken meanwhile, the column is
// given back. The host records a few of these passes; what they leave free, step 4 finds.
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) readonly buffer Zeros { uint zeros[]; };
layout(set = 0, binding = 2) coherent buffer StarCol { uint star_col[]; };
layout(set = 0, binding = 3) coherent buffer StarRow { uint star_row[]; };
layout(push_constant) uniform Push {
    uint n;
    uint capacity;
};

void main() {
    if (ctl.mode != MODE_START) return;
    uint count = min(ctl.zeros, capacity);
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
    for (uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; k < count; k += stride) {
        uint z = zeros[k];
        uint i = z / n;
        uint j = z - i * n;
        if (star_col[i] != NONE || star_row[j] != NONE) continue;
        if (atomicCompSwap(star_row[j], NONE, i) != NONE) continue;
        if (atomicCompSwap(star_col[i], NONE, j) != NONE) atomicExchange(star_row[j], NONE);
    }
}
