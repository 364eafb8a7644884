#version 460
// Auction, last pass of a round: each column's winner takes it at its bid, the previous
// owner becomes unassigned, and the per-round state (bid, winner) is reset for the next
// round. Every bidder takes its winner slot with a compare-and-swap, so the reset by the
// winner never races with the losers' reads. `free_rows` counts the unassigned rows.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer BidCol { uint bid_col[]; };
layout(set = 0, binding = 1) buffer ColBid { uint col_bid[]; };
layout(set = 0, binding = 2) buffer Winner { uint winner[]; };
layout(set = 0, binding = 3) buffer Prices { float price[]; };
layout(set = 0, binding = 4) buffer Owner { uint owner[]; };
layout(set = 0, binding = 5) buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 6) buffer FreeRows { uint free_rows; };
layout(push_constant) uniform Push {
    uint m;
};

const uint NONE = 0xffffffffu;

void main() {
    uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= m) return;
    uint j = bid_col[i];
    if (j == NONE) return;
    bid_col[i] = NONE;
    if (atomicCompSwap(winner[j], i, NONE) != i) return;
    price[j] = uintBitsToFloat(col_bid[j]);
    col_bid[j] = 0u;
    uint previous = owner[j];
    owner[j] = i;
    col4row[i] = j;
    // The previous owner did not bid this round (it was assigned), so no other invocation
    // writes its entry.
    if (previous != NONE) {
        col4row[previous] = NONE;
    } else {
        atomicAdd(free_rows, NONE);
    }
}
