// What the two tile passes of the Active Pixel encoder (ap_reduce.comp, ap_scatter.comp)
// share: the tile shape, each workgroup's range of tiles, and each invocation's chunk of
// elements with its activity bits.
//
// A tile is WG chunks of PER_INVOCATION consecutive elements (ap_elements.glsl), chunk i on
// invocation i, so an invocation's elements are consecutive pixels of a box row (except
// where a row ends) and their activity is one word of PER_INVOCATION bits: run starts,
// active counts and the last run start of a chunk are bit operations on that word, and the
// scatter walks it with running counters, so the per-element work is a handful of integer
// operations (the passes are bound by instruction issue as much as by memory). Pass 1 keeps
// each chunk's word in `masks` (one uint a chunk) for pass 3.
//
// Algorithm 1's scans run over the monoid (run starts: +, active elements: +, last run start
// + 1: max; ap_monoid.glsl). Workgroup p of G takes an equal share of the tiles, in order
// (its partition), so the scan across workgroups (ap_scan_partitions.comp) has G values, not
// one per tile. Both passes divide alike, so partition p is the same tiles in both.
//
// The includer declares `layout(local_size_x_id = 0) in;` and includes ap_elements.glsl
// first.
#ifndef TESSERA_AP_TILE_GLSL
#define TESSERA_AP_TILE_GLSL

#include "ap_monoid.glsl"

// Elements per invocation (specialization constant 1): a power of two up to 32.
layout(constant_id = 1) const uint PER_INVOCATION = 8u;
const uint WG = gl_WorkGroupSize.x;
const uint TILE = PER_INVOCATION * WG;
// Bits of the f32 1.0, the background depth.
const uint BACKGROUND_BITS = 0x3f800000u;

// Tiles [first, end) of partition p of gl_NumWorkGroups.x: equal shares, sizes differing by
// at most one.
uvec2 partition_tiles(uint p) {
    uint tiles = ceil_div(el_n, TILE);
    uint parts = gl_NumWorkGroups.x;
    uint first = p * (tiles / parts) + min(p, tiles % parts);
    return uvec2(first, first + tiles / parts + (p < tiles % parts ? 1u : 0u));
}

// Bits of the chunk from element e0 that are elements of the sequence (below el_n).
uint chunk_valid(uint e0) {
    uint n = e0 >= el_n ? 0u : min(el_n - e0, PER_INVOCATION);
    return n >= 32u ? 0xFFFFFFFFu : (1u << n) - 1u;
}

// Run starts of the chunk from element e0 with activity `bits`, the element before it being
// active or not: where activity changes, and element 0.
uint chunk_starts(uint bits, bool before, uint e0) {
    uint starts = (bits ^ ((bits << 1) | (before ? 1u : 0u))) & chunk_valid(e0);
    return e0 == 0u && el_n > 0u ? starts | 1u : starts;
}

// The monoid value of a chunk: (run starts, active elements, last run start + 1 or 0).
uvec3 chunk_value(uint starts, uint bits, uint e0) {
    return uvec3(bitCount(starts), bitCount(bits), starts != 0u ? e0 + uint(findMSB(starts)) + 1u : 0u);
}

#endif
