// Single-pass exclusive scan of u32 tiles with decoupled look-back (Merrill & Garland 2016).
//
// The includer declares, before including this file:
//   layout(local_size_x_id = 0) in;
//   a buffer `scratch` (uint array, coherent) laid out as
//     scratch[0]          tile ticket (zeroed before the dispatch)
//     scratch[1]          the grand total, written by the last tile
//     scratch[2 + 2t + h] descriptor half h of tile t (zeroed before the dispatch)
//
// A tile is 4 rows of gl_WorkGroupSize.x uvec4, i.e. 16 elements per invocation; element
// (row r, invocation i, component c) of tile t is t*TILE + r*4*WG + 4*i + c, so every row
// is one coalesced 16-byte-per-invocation load.
//
// Tile order comes from an atomic ticket, not from gl_WorkGroupID: a tile only ever waits
// for tiles that took their ticket earlier, which have started and so will finish even on
// devices (lavapipe) that do not run all workgroups at once.
//
// A descriptor is a 32-bit value split over two words, each `flag << 16 | half`, so a word
// is published with one atomic store and can never be seen torn. Flags only grow
// (0 none, 1 aggregate of this tile, 2 inclusive prefix up to this tile); a reader trusts a
// descriptor only when both halves carry the same flag.

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require

const uint SCAN_FLAG_AGGREGATE = 1u;
const uint SCAN_FLAG_PREFIX = 2u;

shared uint s_scan_tile;
shared uint s_scan_prefix;
// Per (row, subgroup) totals, then their exclusive prefixes. A subgroup has at least 4
// invocations, so there are at most WG/4 subgroups.
shared uint s_scan_sg[gl_WorkGroupSize.x];

// Takes the next tile in ticket order; uniform across the workgroup.
uint scan_take_tile() {
    if (gl_LocalInvocationIndex == 0u) s_scan_tile = atomicAdd(scratch[0], 1u);
    barrier();
    return s_scan_tile;
}

void scan_publish(uint tile, uint flag, uint value) {
    atomicExchange(scratch[2u + 2u * tile], (flag << 16) | (value & 0xffffu));
    atomicExchange(scratch[3u + 2u * tile], (flag << 16) | (value >> 16));
}

// Exclusive prefix of everything before `tile`, computed by the whole (first) subgroup.
uint scan_look_back(uint tile) {
    uint prefix = 0u;
    // Tile `nearest - lane` is read by each lane; `nearest` walks backwards window by window.
    int nearest = int(tile) - 1;
    while (true) {
        int j = nearest - int(gl_SubgroupInvocationID);
        uint flag = SCAN_FLAG_PREFIX;
        uint value = 0u;
        if (j >= 0) {
            // atomicOr(.., 0) is an atomic load: never hoisted out of the spin loop.
            uint lo = atomicOr(scratch[2u + 2u * uint(j)], 0u);
            uint hi = atomicOr(scratch[3u + 2u * uint(j)], 0u);
            flag = (lo >> 16) == (hi >> 16) ? lo >> 16 : 0u;
            value = (lo & 0xffffu) | (hi << 16);
        }
        uvec4 not_ready = subgroupBallot(flag == 0u);
        uvec4 has_prefix = subgroupBallot(flag == SCAN_FLAG_PREFIX);
        uint first_wait = subgroupBallotFindLSB(not_ready);
        uint first_prefix = subgroupBallotFindLSB(has_prefix);
        bool any_wait = not_ready != uvec4(0u);
        bool any_prefix = has_prefix != uvec4(0u);
        if (any_prefix && (!any_wait || first_prefix < first_wait)) {
            prefix += subgroupAdd(gl_SubgroupInvocationID <= first_prefix ? value : 0u);
            return prefix;
        }
        // Consume the ready aggregates nearest to us, then wait for (or step past) the rest.
        uint ready = any_wait ? first_wait : gl_SubgroupSize;
        prefix += subgroupAdd(gl_SubgroupInvocationID < ready ? value : 0u);
        nearest -= int(ready);
    }
    return prefix;
}

// Replaces `v` (this invocation's 16 elements of tile `tile`) by their exclusive (or, with
// `inclusive`, inclusive) prefix over the whole array. The last tile (`tile == num_tiles - 1`)
// writes the total.
void scan_tile(inout uvec4 v[4], uint tile, uint num_tiles, bool inclusive) {
    uint sg = gl_SubgroupID;
    uint nsg = gl_NumSubgroups;
    uvec4 vec_sum;
    for (uint r = 0u; r < 4u; r++) {
        uvec4 x = v[r];
        vec_sum[r] = x.x + x.y + x.z + x.w;
        uvec4 excl = uvec4(0u, x.x, x.x + x.y, x.x + x.y + x.z);
        v[r] = inclusive ? excl + x : excl;
    }
    uvec4 incl = subgroupInclusiveAdd(vec_sum);
    uint last_lane = subgroupBallotFindMSB(subgroupBallot(true));
    if (gl_SubgroupInvocationID == last_lane) {
        for (uint r = 0u; r < 4u; r++) s_scan_sg[r * nsg + sg] = incl[r];
    }
    barrier();
    if (sg == 0u) {
        // Exclusive scan of the 4*nsg (row, subgroup) totals in row-major order.
        uint carry = 0u;
        for (uint base = 0u; base < 4u * nsg; base += gl_SubgroupSize) {
            uint i = base + gl_SubgroupInvocationID;
            uint x = i < 4u * nsg ? s_scan_sg[i] : 0u;
            uint inc = subgroupInclusiveAdd(x);
            if (i < 4u * nsg) s_scan_sg[i] = carry + inc - x;
            carry += subgroupAdd(x);
        }
        uint aggregate = carry;
        uint prefix = 0u;
        if (tile == 0u) {
            if (subgroupElect()) scan_publish(tile, SCAN_FLAG_PREFIX, aggregate);
        } else {
            if (subgroupElect()) scan_publish(tile, SCAN_FLAG_AGGREGATE, aggregate);
            prefix = scan_look_back(tile);
            if (subgroupElect()) scan_publish(tile, SCAN_FLAG_PREFIX, prefix + aggregate);
        }
        if (subgroupElect()) {
            s_scan_prefix = prefix;
            if (tile == num_tiles - 1u) atomicExchange(scratch[1], prefix + aggregate);
        }
    }
    barrier();
    uvec4 lane_excl = incl - vec_sum;
    for (uint r = 0u; r < 4u; r++) {
        v[r] += s_scan_prefix + s_scan_sg[r * nsg + sg] + lane_excl[r];
    }
}
