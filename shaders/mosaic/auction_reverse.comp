#version 460
// Reverse bidding (Jacobi), for the rectangular problem's condition "no unassigned column
// costs more than lambda, the lowest assigned price": every unassigned column j priced
// above lambda finds, over all rows, the largest gain beta = w[i] - d[i][j] (at the
// smallest such i: the row that would pay the most for j) and the second largest omega.
// If even the best row gains no more than lambda + eps, j comes down to lambda and stays
// unassigned. Otherwise j offers itself to that row at price max(lambda, omega - eps), the
// highest at which no other row would prefer j by more than eps; the row takes its lowest
// offer, at the smallest column: one 64-bit atomicMin on (value bits << 32) | j keeps it
// (values are non-negative floats, whose bits order like unsigned integers), and
// auction_reverse_assign.comp hands the row over. An offer must lower the
// row's value strictly (rounding could prevent it with a tiny eps): else j comes down to
// lambda too, so every offer taken makes progress and the rounds end.
// One workgroup a column; the scan selects the smallest y = d[i][j] - w[i] = -gain.
// Rounds alternate between two sets of the per-round words (`parity`): this round reads
// lambda[p], counts in above[p] and offers in row_offer[p], and resets lambda[q] and
// above[q] (q = 1 - p), which the round's last pass and the next round fill.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#include "common.glsl"
#include "auction_select.glsl"

layout(local_size_x_id = 0) in;

// D transposed (n x m, auction_transpose.comp): a column's entries are consecutive.
layout(set = 0, binding = 0) readonly buffer Transposed { float dt[]; };
layout(set = 0, binding = 1) buffer Prices { float price[]; };
layout(set = 0, binding = 2) readonly buffer Owner { uint owner[]; };
layout(set = 0, binding = 3) readonly buffer Value { float w[]; };
layout(set = 0, binding = 4) buffer Lambda { uint lambda[2]; };
layout(set = 0, binding = 5) writeonly buffer OfferRow { uint offer_row[]; };
layout(set = 0, binding = 6) writeonly buffer OfferPrice { float offer_price[]; };
// Per row, two rounds' sets of m: the lowest offer, (value bits << 32) | column.
layout(set = 0, binding = 7) buffer RowOffer { uint64_t row_offer[]; };
layout(set = 0, binding = 8) buffer Above { uint above[2]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    float eps;
    uint parity;
};

#define AUCTION_OFFER_SCAN
#include "auction_scans.glsl"

// The workgroups stride over the columns, as auction_bid.comp's over the rows.
void main() {
    if (linear_group_id() == 0u && gl_LocalInvocationID.x == 0u) {
        lambda[1u - parity] = NONE;
        above[1u - parity] = 0u;
    }
    float l = uintBitsToFloat(lambda[parity]);
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint j = linear_group_id(); j < n; j += groups) {
        // Uniform per workgroup: every invocation of a column skips it together.
        uint i, value;
        float offer;
        if (owner[j] == NONE && price[j] > l && offer_scan(j, l, i, value, offer)) {
            atomicAdd(above[parity], 1u);
            if (i != NONE) {
                offer_row[j] = i;
                offer_price[j] = offer;
                atomicMin(row_offer[parity * m + i], (uint64_t(value) << 32) | uint64_t(j));
            }
        }
    }
}
