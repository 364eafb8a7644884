#version 460
// Reverse bidding (Jacobi), for the rectangular problem's condition "no unassigned column
// costs more than lambda, the lowest assigned price": every unassigned column j priced
// above lambda finds, over all rows, the largest gain beta = w[i] - d[i][j] (at the
// smallest such i: the row that would pay the most for j) and the second largest omega.
// If even the best row gains no more than lambda + eps, j comes down to lambda and stays
// unassigned. Otherwise j offers itself to that row at price max(lambda, omega - eps), the
// highest at which no other row would prefer j by more than eps; the row takes its lowest
// offer (auction_claim.comp, then auction_reverse_assign.comp). An offer must lower the
// row's value strictly (rounding could prevent it with a tiny eps): else j comes down to
// lambda too, so every offer taken makes progress and the rounds end.
// One workgroup per column; the scan selects the smallest y = d[i][j] - w[i] = -gain.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "auction_select.glsl"

layout(local_size_x_id = 0) in;

// D transposed (n x m, auction_transpose.comp): a column's entries are consecutive.
layout(set = 0, binding = 0) readonly buffer Transposed { float dt[]; };
layout(set = 0, binding = 1) buffer Prices { float price[]; };
layout(set = 0, binding = 2) readonly buffer Owner { uint owner[]; };
layout(set = 0, binding = 3) readonly buffer Value { float w[]; };
layout(set = 0, binding = 4) readonly buffer Lambda { uint lambda; };
layout(set = 0, binding = 5) writeonly buffer OfferRow { uint offer_row[]; };
layout(set = 0, binding = 6) writeonly buffer OfferVal { uint offer_val[]; };
layout(set = 0, binding = 7) writeonly buffer OfferPrice { float offer_price[]; };
layout(set = 0, binding = 8) buffer RowOffer { uint row_offer[]; };
layout(set = 0, binding = 9) buffer Above { uint above; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    float eps;
};

void main() {
    uint j = linear_group_id();
    float l = uintBitsToFloat(lambda);
    // Uniform per workgroup: every invocation of a column leaves together.
    if (j >= n || owner[j] != NONE || !(price[j] > l)) return;
    float best = INF;
    float second = INF;
    uint index = NONE;
    for (uint i = gl_LocalInvocationID.x; i < m; i += gl_WorkGroupSize.x) {
        precise float y = dt[j * m + i] - w[i];
        select_fold(y, i, best, second, index);
    }
    float b, s;
    uint i;
    if (!select_combine(best, second, index, b, s, i)) return;
    atomicAdd(above, 1u);
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
    offer_val[j] = floatBitsToUint(value);
    offer_price[j] = offer;
    atomicMin(row_offer[i], floatBitsToUint(value));
}
