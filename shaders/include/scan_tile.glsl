// Single-pass exclusive scan of u32 tiles with decoupled look-back (Merrill & Garland 2016).
//
// The includer declares, before including this file:
//   layout(local_size_x_id = 0) in;
//   a buffer `scratch` (uint array, coherent) laid out as
//     scratch[0]          tile ticket (zeroed before the dispatch)
//     scratch[1]          the grand total, written by the last tile
//     scratch[2 + 2t + h] descriptor half h of tile t (zeroed before the dispatch)
//
// A tile is SCAN_ROWS rows of gl_WorkGroupSize.x uvec4, i.e. 4 * SCAN_ROWS elements per
// invocation; element (row r, invocation i, component c) of tile t is
// t*TILE + r*4*WG + 4*i + c, so every row is one coalesced 16-byte-per-invocation load.
// The includer may define SCAN_ROWS (a constant or specialization constant, 1 to 8) before
// including this file; it is 4 (16 elements per invocation) otherwise.
//
// Tiles are taken with lb_take_tile() and chained by the decoupled look-back of
// lookback.glsl (ticket order, so it is deadlock-free on lavapipe).

#ifndef SCAN_ROWS
#define SCAN_ROWS 4u
#endif

#define LB_COMPONENTS 1u
#define LB_MAX_MASK 0u
#include "lookback.glsl"

shared uint s_scan_prefix;
// Per (row, subgroup) totals, then their exclusive prefixes. A subgroup has at least 4
// invocations, so there are at most WG/4 subgroups.
shared uint s_scan_sg[SCAN_ROWS * gl_WorkGroupSize.x / 4u];

// Replaces `v` (this invocation's 4 * SCAN_ROWS elements of tile `tile`) by their exclusive
// (or, with `inclusive`, inclusive) prefix over the whole array. The last tile
// (`tile == num_tiles - 1`) writes the total.
void scan_tile(inout uvec4 v[SCAN_ROWS], uint tile, uint num_tiles, bool inclusive) {
    uint sg = gl_SubgroupID;
    uint nsg = gl_NumSubgroups;
    uint last_lane = subgroupBallotFindMSB(subgroupBallot(true));
    // Each row: the prefix within the invocation's uvec4, plus the subgroup's exclusive
    // prefix of the row sums; the subgroup's row total goes to shared memory.
    for (uint r = 0u; r < SCAN_ROWS; r++) {
        uvec4 x = v[r];
        uint sum = x.x + x.y + x.z + x.w;
        uint incl = subgroupInclusiveAdd(sum);
        uvec4 excl = uvec4(0u, x.x, x.x + x.y, x.x + x.y + x.z) + (incl - sum);
        v[r] = inclusive ? excl + x : excl;
        if (gl_SubgroupInvocationID == last_lane) s_scan_sg[r * nsg + sg] = incl;
    }
    barrier();
    if (sg == 0u) {
        // Exclusive scan of the SCAN_ROWS*nsg (row, subgroup) totals in row-major order.
        uint count = SCAN_ROWS * nsg;
        uint carry = 0u;
        for (uint base = 0u; base < count; base += gl_SubgroupSize) {
            uint i = base + gl_SubgroupInvocationID;
            uint x = i < count ? s_scan_sg[i] : 0u;
            uint inc = subgroupInclusiveAdd(x);
            if (i < count) s_scan_sg[i] = carry + inc - x;
            carry += subgroupAdd(x);
        }
        uint aggregate = carry;
        uint prefix = 0u;
        if (tile == 0u) {
            if (subgroupElect()) lb_publish(tile, LB_FLAG_PREFIX, uvec4(aggregate));
        } else {
            if (subgroupElect()) lb_publish(tile, LB_FLAG_AGGREGATE, uvec4(aggregate));
            prefix = lb_look_back(tile).x;
            if (subgroupElect()) lb_publish(tile, LB_FLAG_PREFIX, uvec4(prefix + aggregate));
        }
        if (subgroupElect()) {
            s_scan_prefix = prefix;
            if (tile == num_tiles - 1u) atomicExchange(scratch[1], prefix + aggregate);
        }
    }
    barrier();
    uint tile_prefix = s_scan_prefix;
    for (uint r = 0u; r < SCAN_ROWS; r++) v[r] += tile_prefix + s_scan_sg[r * nsg + sg];
}
