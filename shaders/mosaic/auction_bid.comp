#version 460
// Auction bidding (forward, Jacobi): every unassigned row i finds, over all columns, the
// smallest value x_j = d[i][j] + price[j] (best, at the smallest such j) and the second
// smallest value, and bids
//   bid = price[j] + (second - best) + eps
// on its best column. One workgroup a row; each invocation scans a strided slice of the
// columns, then auction_select.glsl combines. Bids are positive floats, whose bit patterns
// order like unsigned integers, so one 64-bit atomicMax on (bid bits, ~row) keeps each
// column's highest bid and, among equal bids, the smallest row: the round's winner, as on
// the CPU twin, with no pass of its own.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#include "common.glsl"
#include "auction_select.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 1) readonly buffer Prices { float price[]; };
layout(set = 0, binding = 2) readonly buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 3) writeonly buffer BidCol { uint bid_col[]; };
// Per column: (highest bid's bits << 32) | ~(its row), 0 where no row bid.
layout(set = 0, binding = 4) buffer ColBest { uint64_t col_best[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    float eps;
};

// Row i's bid (every invocation of the workgroup calls it).
void bid_row(uint i) {
    float best = INF;
    float second = INF;
    uint index = NONE;
    uint base = i * n;
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) {
        precise float x = d[base + j] + price[j];
        select_fold(x, j, best, second, index);
    }
    float b, s;
    uint w;
    bool lead = select_combine(best, second, index, b, s, w);
    // The shared slots are read before the next row writes them.
    barrier();
    if (!lead) return;
    float p = price[w];
    // A single column has no second best: the bid is then just eps above the price.
    precise float gap = s == INF ? 0.0 : s - b;
    precise float bid = (p + gap) + eps;
    // Rounding must never leave the price where it is (the auction would not end).
    if (!(bid > p)) bid = uintBitsToFloat(floatBitsToUint(p) + 1u);
    bid_col[i] = w;
    atomicMax(col_best[w], (uint64_t(floatBitsToUint(bid)) << 32) | uint64_t(~i));
}

// The workgroups stride over the rows: a round late in a phase has few bidders, and a
// workgroup launched for each row would cost more than the bids.
void main() {
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint i = linear_group_id(); i < m; i += groups) {
        // Uniform per workgroup: every invocation of a row skips it together.
        if (col4row[i] == NONE) bid_row(i);
    }
}
