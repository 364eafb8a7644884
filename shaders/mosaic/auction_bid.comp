#version 460
// Auction bidding (forward, Jacobi): every unassigned row i finds, over all columns, the
// smallest value x_j = d[i][j] + price[j] (best, at the smallest such j) and the second
// smallest value (the next in the multiset: equal to best on a tie), and bids
//   bid = price[j] + (second - best) + eps
// on its best column. One workgroup per row; each invocation scans a strided slice of the
// columns, then subgroups and finally invocation 0 combine (best, second, index). Bids are
// positive floats, whose bit patterns order like unsigned integers, so the column keeps its
// highest bid with a 32-bit atomicMax.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 1) readonly buffer Prices { float price[]; };
layout(set = 0, binding = 2) readonly buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 3) writeonly buffer BidCol { uint bid_col[]; };
layout(set = 0, binding = 4) writeonly buffer BidVal { uint bid_val[]; };
layout(set = 0, binding = 5) buffer ColBid { uint col_bid[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    float eps;
};

const uint NONE = 0xffffffffu;
// The largest finite float stands for "none": values are at most a few units (D is
// normalised to [0, 1] on the host).
const float INF = 3.402823466e38;
// The host keeps workgroup / subgroup size <= 64.
shared float s_best[64];
shared float s_second[64];
shared uint s_index[64];

void main() {
    uint i = linear_group_id();
    // Uniform per workgroup: every invocation of a row leaves together.
    if (i >= m || col4row[i] != NONE) return;
    uint lid = gl_LocalInvocationID.x;
    float best = INF;
    float second = INF;
    uint index = NONE;
    uint base = i * n;
    for (uint j = lid; j < n; j += gl_WorkGroupSize.x) {
        precise float x = d[base + j] + price[j];
        if (x < best) {
            second = best;
            best = x;
            index = j;
        } else if (x < second) {
            second = x;
        }
    }
    // Subgroup combine: the smallest best, the smallest index achieving it, and the second
    // smallest value (the winning lane's second, every other lane's best).
    float b = subgroupMin(best);
    uint w = subgroupMin(best == b ? index : NONE);
    float s = subgroupMin(index == w && best == b ? second : best);
    if (subgroupElect()) {
        s_best[gl_SubgroupID] = b;
        s_second[gl_SubgroupID] = s;
        s_index[gl_SubgroupID] = w;
    }
    barrier();
    if (lid != 0u) return;
    b = s_best[0];
    s = s_second[0];
    w = s_index[0];
    for (uint q = 1u; q < gl_NumSubgroups; q++) {
        float qb = s_best[q];
        if (qb < b || (qb == b && s_index[q] < w)) {
            s = min(b, s_second[q]);
            b = qb;
            w = s_index[q];
        } else {
            s = min(s, qb);
        }
    }
    float p = price[w];
    // A single column has no second best: the bid is then just eps above the price.
    precise float gap = s == INF ? 0.0 : s - b;
    precise float bid = (p + gap) + eps;
    // Rounding must never leave the price where it is (the auction would not end).
    if (!(bid > p)) bid = uintBitsToFloat(floatBitsToUint(p) + 1u);
    bid_col[i] = w;
    bid_val[i] = floatBitsToUint(bid);
    atomicMax(col_bid[w], floatBitsToUint(bid));
}
