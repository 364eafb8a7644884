// What both Active Pixel encoding kernels (ap_encode.comp over ROI elements, and
// ap_encode_quads.comp over 16-byte quads) share: the payload's offsets, the scan monoid
// and the tile-level scan with decoupled look-back.
//
// The scan monoid is (segment starts: +, active pixels: +, last segment start: max), where
// segments are the alternating inactive and active stretches of the run sequence; a
// segment's start is kept 1-based so that 0 means "none" (max's identity).
//
// The includer declares, before including: `layout(local_size_x_id = 0) in;`, the coherent
// buffer `scratch` lookback.glsl describes, and the specialization constant RELAXED_LOADS.
#ifndef TESSERA_AP_TILE_GLSL
#define TESSERA_AP_TILE_GLSL

#define LB_COMPONENTS 3u
#define LB_MAX_MASK 4u
#define LB_RELAXED_LOADS (RELAXED_LOADS != 0u)
#include "lookback.glsl"

// Bits of the f32 1.0, the background depth.
const uint BACKGROUND_BITS = 0x3f800000u;

// The shared arrays have fixed sizes (the most subgroups a 1024-invocation workgroup has, in
// subgroups of 4), not sizes computed from specialization constants: with those, some tile
// shapes of ap_encode encoded garbage on the H100 in every frame while right on lavapipe.
const uint MAX_SUBGROUPS = 256u;
shared uvec3 s_sg[MAX_SUBGROUPS];  // per-subgroup totals, then their exclusive prefixes
shared uvec3 s_tile_prefix;        // everything before the tile

uint ap_offset(uint a, uint r) {
    // Word offset of an active pixel with a active pixels and r segment starts up to it:
    // 2 * (a + floor((r - 1) / 2) + 1); floor, not truncation, so that an all-inactive
    // image puts its header at 0.
    return uint(2 * (int(a) + ((int(r) - 1) >> 1) + 1));
}

uvec3 combine3(uvec3 a, uvec3 b) {
    return uvec3(a.xy + b.xy, max(a.z, b.z));
}

// The tile's scan across subgroups and across tiles, run once every subgroup has left its
// total in s_sg[gl_SubgroupID] and passed a barrier: the first subgroup turns s_sg into
// exclusive prefixes within the tile, publishes the tile's aggregate, looks back for the
// prefix of the tiles before and leaves it in s_tile_prefix. Callers pass a barrier before
// reading either.
void tile_scan(uint tile) {
    if (gl_SubgroupID != 0u) return;
    uvec3 carry = uvec3(0u);
    for (uint first = 0u; first < gl_NumSubgroups; first += gl_SubgroupSize) {
        uint i = first + gl_SubgroupInvocationID;
        uvec3 x = i < gl_NumSubgroups ? s_sg[i] : uvec3(0u);
        uvec3 excl = uvec3(subgroupExclusiveAdd(x.x), subgroupExclusiveAdd(x.y), subgroupExclusiveMax(x.z));
        if (i < gl_NumSubgroups) s_sg[i] = combine3(carry, excl);
        carry = combine3(carry, uvec3(subgroupAdd(x.x), subgroupAdd(x.y), subgroupMax(x.z)));
    }
    uvec4 aggregate = uvec4(carry, 0u);
    uvec4 prefix = uvec4(0u);
    if (tile == 0u) {
        if (subgroupElect()) lb_publish(tile, LB_FLAG_PREFIX, aggregate);
    } else {
        if (subgroupElect()) lb_publish(tile, LB_FLAG_AGGREGATE, aggregate);
        prefix = lb_look_back(tile);
        if (subgroupElect()) lb_publish(tile, LB_FLAG_PREFIX, lb_combine(prefix, aggregate));
    }
    if (subgroupElect()) s_tile_prefix = prefix.xyz;
}

#endif
