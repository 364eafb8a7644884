#version 460
// Between two epsilon phases, over columns (after auction_prepare.comp computed lambda):
// every unassigned column goes to lambda, the lowest assigned price, and every column is
// released for the next phase. After a completed reverse stage that only raises prices,
// which keeps the state eps-optimal, and the next phase's forward rounds then never assign
// a column below lambda, which would leave the columns it displaces far above the new
// lambda for the reverse rounds to bring down one displacement at a time.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer Prices { float price[]; };
layout(set = 0, binding = 1) buffer Owner { uint owner[]; };
layout(set = 0, binding = 2) readonly buffer Lambda { uint lambda[2]; };
layout(push_constant) uniform Push {
    uint n;
};

const uint NONE = 0xffffffffu;

void main() {
    uint j = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (j >= n) return;
    if (owner[j] == NONE && lambda[0] != NONE) price[j] = uintBitsToFloat(lambda[0]);
    owner[j] = NONE;
}
