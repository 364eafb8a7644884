#version 460
// Auction, last pass of a forward round: each column's winner (its row in the low word of
// the column's best bid, auction_bid.comp) takes it at its bid, the previous owner becomes
// unassigned, and the per-round state is reset for the next round. The winner clears the
// column's best bid while the losers may still read it: they compare its low word with
// their own ~row, which neither the bid nor the cleared 0 matches. `free_rows` counts the
// unassigned rows.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer BidCol { uint bid_col[]; };
layout(set = 0, binding = 1) buffer ColBest { uint64_t col_best[]; };
layout(set = 0, binding = 2) buffer Prices { float price[]; };
layout(set = 0, binding = 3) buffer Owner { uint owner[]; };
layout(set = 0, binding = 4) buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 5) buffer FreeRows { uint free_rows; };
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
    uint64_t best = col_best[j];
    if (uint(best) != ~i) return;
    col_best[j] = 0ul;
    price[j] = uintBitsToFloat(uint(best >> 32));
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
