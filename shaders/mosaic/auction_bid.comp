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

#define AUCTION_BID_SCAN
#include "auction_scans.glsl"

// The workgroups stride over the rows: a round late in a phase has few bidders, and a
// workgroup launched for each row would cost more than the bids.
void main() {
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint i = linear_group_id(); i < m; i += groups) {
        // Uniform per workgroup: every invocation of a row skips it together.
        uint column, bid;
        if (col4row[i] == NONE && bid_scan(i, column, bid)) {
            bid_col[i] = column;
            atomicMax(col_best[column], (uint64_t(bid) << 32) | uint64_t(~i));
        }
    }
}
