#version 460
// Reverse auction, last pass of a round: each row's winning column (auction_claim.comp
// with the roles swapped) takes the row at its offered price; the row's previous column
// becomes unassigned at its price. The per-round state is reset as in auction_assign.comp:
// every offering column takes the row's winner slot with a compare-and-swap, so the reset
// by the winner never races with the losers' reads.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer OfferRow { uint offer_row[]; };
layout(set = 0, binding = 1) readonly buffer OfferPrice { float offer_price[]; };
layout(set = 0, binding = 2) buffer RowWinner { uint row_winner[]; };
layout(set = 0, binding = 3) buffer RowOffer { uint row_offer[]; };
layout(set = 0, binding = 4) buffer Prices { float price[]; };
layout(set = 0, binding = 5) buffer Owner { uint owner[]; };
layout(set = 0, binding = 6) buffer Col4Row { uint col4row[]; };
// Reset to "none" for the next round's auction_prepare.comp (no pass of this round reads it
// any more): lambda is "none" outside a round.
layout(set = 0, binding = 7) writeonly buffer Lambda { uint lambda; };
layout(push_constant) uniform Push {
    uint n;
};

const uint NONE = 0xffffffffu;

void main() {
    uint j = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (j == 0u) lambda = NONE;
    if (j >= n) return;
    uint i = offer_row[j];
    if (i == NONE) return;
    offer_row[j] = NONE;
    if (atomicCompSwap(row_winner[i], j, NONE) != j) return;
    row_offer[i] = NONE;
    price[j] = offer_price[j];
    // The row's previous column is assigned, so it made no offer: no other invocation
    // writes its entry.
    owner[col4row[i]] = NONE;
    owner[j] = i;
    col4row[i] = j;
}
