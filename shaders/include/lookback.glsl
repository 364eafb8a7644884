// Tile ordering and decoupled look-back (Merrill & Garland 2016) for single-pass scans whose
// tile descriptor is LB_COMPONENTS u32 values (1 to 4, in the components of a uvec4).
// Component c combines by max when bit c of LB_MAX_MASK is set (0 must then mean "none",
// being max's identity), otherwise by wrapping addition. Both operators are commutative, so a
// window of aggregates can be reduced in any lane order.
//
// The includer defines LB_COMPONENTS and LB_MAX_MASK and declares, before including:
//   layout(local_size_x_id = 0) in;
//   a buffer `scratch` (uint array, coherent) laid out as
//     scratch[0]                 tile ticket (zeroed before the dispatch)
//     scratch[1]                 free for the includer (the scans put their total there)
//     scratch[2 + 2*C*t + 2c + h] half h of component c of tile t's descriptor (zeroed)
//
// Tile order comes from an atomic ticket, not from gl_WorkGroupID: a tile only ever waits
// for tiles that took their ticket earlier, which have started and so will finish even on
// devices (lavapipe) that do not run all workgroups at once.
//
// Each descriptor word is `flag << 16 | half`, so it is published with one atomic store and
// can never be seen torn. Flags only grow (0 none, 1 aggregate of this tile, 2 inclusive
// prefix up to this tile); a reader trusts a descriptor only when all its halves carry the
// same flag. Words are published with relaxed atomic stores, which do not wait for a reply
// as read-modify-write atomics do, so a descriptor's words go out with overlapping
// latencies (publishing sits on every tile's critical path). They are read with
// atomicOr(.., 0): relaxed atomic loads are all the memory model asks for (each word carries
// its own flag), but with them (or volatile loads) lavapipe's scans came out wrong on a
// million elements.
#ifndef TESSERA_LOOKBACK_GLSL
#define TESSERA_LOOKBACK_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_memory_scope_semantics : require

const uint LB_FLAG_AGGREGATE = 1u;
const uint LB_FLAG_PREFIX = 2u;
const uint LB_WORDS = 2u * LB_COMPONENTS;

shared uint s_lb_tile;

// Takes the next tile in ticket order; uniform across the workgroup.
uint lb_take_tile() {
    if (gl_LocalInvocationIndex == 0u) s_lb_tile = atomicAdd(scratch[0], 1u);
    barrier();
    return s_lb_tile;
}

bool lb_is_max(uint c) {
    return ((LB_MAX_MASK >> c) & 1u) != 0u;
}

uvec4 lb_combine(uvec4 a, uvec4 b) {
    uvec4 r = a;
    for (uint c = 0u; c < LB_COMPONENTS; c++) r[c] = lb_is_max(c) ? max(a[c], b[c]) : a[c] + b[c];
    return r;
}

uint lb_load(uint i) {
    return atomicOr(scratch[i], 0u);
}

void lb_store(uint i, uint value) {
    atomicStore(scratch[i], value, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
}

// Publishes tile `tile`'s descriptor (one invocation).
void lb_publish(uint tile, uint flag, uvec4 value) {
    uint base = 2u + LB_WORDS * tile;
    for (uint c = 0u; c < LB_COMPONENTS; c++) {
        lb_store(base + 2u * c, (flag << 16) | (value[c] & 0xffffu));
        lb_store(base + 2u * c + 1u, (flag << 16) | (value[c] >> 16));
    }
}

// Combination of the lanes below `count` (a subgroup operation).
uvec4 lb_reduce_below(uvec4 value, uint count) {
    bool take = gl_SubgroupInvocationID < count;
    uvec4 r = uvec4(0u);
    for (uint c = 0u; c < LB_COMPONENTS; c++) {
        uint v = take ? value[c] : 0u;
        r[c] = lb_is_max(c) ? subgroupMax(v) : subgroupAdd(v);
    }
    return r;
}

// Exclusive prefix of everything before `tile`, computed by the whole (first) subgroup.
uvec4 lb_look_back(uint tile) {
    uvec4 prefix = uvec4(0u);
    // Tile `nearest - lane` is read by each lane; `nearest` walks backwards window by window.
    int nearest = int(tile) - 1;
    while (true) {
        int j = nearest - int(gl_SubgroupInvocationID);
        uint flag = LB_FLAG_PREFIX;
        uvec4 value = uvec4(0u);
        if (j >= 0) {
            uint base = 2u + LB_WORDS * uint(j);
            for (uint c = 0u; c < LB_COMPONENTS; c++) {
                // Atomic read-modify-writes are never hoisted out of the spin loop.
                uint lo = lb_load(base + 2u * c);
                uint hi = lb_load(base + 2u * c + 1u);
                if (c == 0u) flag = lo >> 16;
                if ((lo >> 16) != flag || (hi >> 16) != flag) flag = 0u;
                value[c] = (lo & 0xffffu) | (hi << 16);
            }
        }
        uvec4 not_ready = subgroupBallot(flag == 0u);
        uvec4 has_prefix = subgroupBallot(flag == LB_FLAG_PREFIX);
        uint first_wait = subgroupBallotFindLSB(not_ready);
        uint first_prefix = subgroupBallotFindLSB(has_prefix);
        bool any_wait = not_ready != uvec4(0u);
        bool any_prefix = has_prefix != uvec4(0u);
        if (any_prefix && (!any_wait || first_prefix < first_wait)) {
            return lb_combine(prefix, lb_reduce_below(value, first_prefix + 1u));
        }
        // Consume the ready aggregates nearest to us, then wait for (or step past) the rest.
        uint ready = any_wait ? first_wait : gl_SubgroupSize;
        prefix = lb_combine(prefix, lb_reduce_below(value, ready));
        nearest -= int(ready);
    }
    return prefix;
}

#endif
