#version 460
// Reverse auction, last pass of a round, over max(m, n) invocations: each row's lowest
// offer (its column in the low word, auction_reverse.comp) takes the row at its offered
// price, and the row's value becomes the offered value; a column whose row took an offer
// elsewhere becomes unassigned at its price (every row with an offer takes one). Each
// column settles itself alone, so no entry has two writers. Then lambda, the lowest price
// of an assigned column, for the next round (lambda[q], q = 1 - parity), and the offers of
// the round before (row_offer[q], read by no pass of this round) are reset for the next.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer OfferRow { uint offer_row[]; };
layout(set = 0, binding = 1) readonly buffer OfferPrice { float offer_price[]; };
layout(set = 0, binding = 2) buffer RowOffer { uint64_t row_offer[]; };
layout(set = 0, binding = 3) buffer Prices { float price[]; };
layout(set = 0, binding = 4) buffer Owner { uint owner[]; };
layout(set = 0, binding = 5) writeonly buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 6) writeonly buffer Value { float w[]; };
layout(set = 0, binding = 7) buffer Lambda { uint lambda[2]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    uint parity;
};

const uint NONE = 0xffffffffu;
const uint64_t NO_OFFER = 0xfffffffffffffffful;

void main() {
    uint x = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint p = parity * m;
    if (x < m) row_offer[(1u - parity) * m + x] = NO_OFFER;
    // This column's price if it ends the round assigned, else NONE.
    uint assigned = NONE;
    if (x < n) {
        uint i = offer_row[x];
        if (i != NONE) {
            offer_row[x] = NONE;
            uint64_t offer = row_offer[p + i];
            if (uint(offer) == x) {
                price[x] = offer_price[x];
                owner[x] = i;
                col4row[i] = x;
                w[i] = uintBitsToFloat(uint(offer >> 32));
                assigned = floatBitsToUint(offer_price[x]);
            }
        } else {
            uint row = owner[x];
            if (row != NONE) {
                if (row_offer[p + row] != NO_OFFER) {
                    owner[x] = NONE;
                } else {
                    assigned = floatBitsToUint(price[x]);
                }
            }
        }
    }
    uint low = subgroupMin(assigned);
    if (subgroupElect() && low != NONE) atomicMin(lambda[1u - parity], low);
}
