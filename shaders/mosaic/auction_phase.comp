#version 460
// Between two epsilon phases, over columns. Step 0: lambda = the lowest price of an
// assigned column (atomicMin on the bits of non-negative floats). Step 1: unassigned
// columns come down to at most lambda, as if the implicit dummy rows of the square problem
// held them, and every column is released for the next phase.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer Prices { float price[]; };
layout(set = 0, binding = 1) buffer Owner { uint owner[]; };
layout(set = 0, binding = 2) buffer Lambda { uint lambda; };
layout(push_constant) uniform Push {
    uint n;
    uint step_;
};

const uint NONE = 0xffffffffu;

void main() {
    uint j = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (j >= n) return;
    if (step_ == 0u) {
        if (owner[j] != NONE) atomicMin(lambda, floatBitsToUint(price[j]));
    } else {
        if (owner[j] == NONE && lambda != NONE) price[j] = min(price[j], uintBitsToFloat(lambda));
        owner[j] = NONE;
    }
}
