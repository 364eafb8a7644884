#version 460
// Auction, second pass of a round: among the rows whose bid equals their column's highest
// bid, the smallest row index wins (atomicMin), so ties resolve as on the CPU twin.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer BidCol { uint bid_col[]; };
layout(set = 0, binding = 1) readonly buffer BidVal { uint bid_val[]; };
layout(set = 0, binding = 2) readonly buffer ColBid { uint col_bid[]; };
layout(set = 0, binding = 3) buffer Winner { uint winner[]; };
layout(push_constant) uniform Push {
    uint m;
};

const uint NONE = 0xffffffffu;

void main() {
    uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= m) return;
    uint j = bid_col[i];
    if (j != NONE && bid_val[i] == col_bid[j]) atomicMin(winner[j], i);
}
