#version 460
// Auction, second pass of a round: among the bidders whose bid equals their target's best
// bid, the smallest index wins (atomicMin), so ties resolve as on the CPU twin. Forward
// rounds: bidders are rows, targets columns (highest bid); reverse rounds: bidders are
// columns, targets rows (lowest offered value). Only equality is tested here.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer BidTarget { uint bid_target[]; };
layout(set = 0, binding = 1) readonly buffer BidVal { uint bid_val[]; };
layout(set = 0, binding = 2) readonly buffer TargetBid { uint target_bid[]; };
layout(set = 0, binding = 3) buffer Winner { uint winner[]; };
layout(push_constant) uniform Push {
    uint bidders;
};

const uint NONE = 0xffffffffu;

void main() {
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k >= bidders) return;
    uint t = bid_target[k];
    if (t != NONE && bid_val[k] == target_bid[t]) atomicMin(winner[t], k);
}
