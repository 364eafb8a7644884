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

// Column j's offer or descent to lambda `l` (every invocation of the workgroup calls it).
void offer_column(uint j, float l) {
    float best = INF;
    float second = INF;
    uint index = NONE;
    for (uint i = gl_LocalInvocationID.x; i < m; i += gl_WorkGroupSize.x) {
        precise float y = dt[j * m + i] - w[i];
        select_fold(y, i, best, second, index);
    }
    float b, s;
    uint i;
    bool lead = select_combine(best, second, index, b, s, i);
    // The shared slots are read before the next column writes them.
    barrier();
    if (!lead) return;
    atomicAdd(above[parity], 1u);
    precise float top = -b - eps;
    // A single row has no second: -INF - eps stays below lambda.
    precise float low = -s - eps;
    float offer = low > l ? low : l;
    precise float value = dt[j * m + i] + offer;
    if (!(top > l) || !(value < w[i])) {
        price[j] = l;
        return;
    }
    offer_row[j] = i;
    offer_price[j] = offer;
    atomicMin(row_offer[parity * m + i], (uint64_t(floatBitsToUint(value)) << 32) | uint64_t(j));
}

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
        if (owner[j] == NONE && price[j] > l) offer_column(j, l);
    }
}
