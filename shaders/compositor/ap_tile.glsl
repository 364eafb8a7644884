// What the two tile passes of the Active Pixel encoder (ap_reduce.comp, ap_scatter.comp)
// share: the tile shape, each workgroup's range of tiles, the run starts of a word of
// activity bits, and the words' monoid values.
//
// A tile is PER_INVOCATION elements per invocation (ap_elements.glsl), element k * WG + i of
// the tile on invocation i, so subgroup ballots give activity as words of 32 elements (bit j
// of word w = element 32w + j of the tile), and the workgroup's loads of one k are one
// contiguous run of memory. Algorithm 1's scans run over the monoid (run starts: +, active
// elements: +, last run start + 1: max); a word's value comes from bit operations on its
// activity and run-start bits.
//
// Workgroup p of G takes an equal share of the tiles, in order (its partition), so the scan
// across workgroups (ap_scan_partitions.comp) has G values, not one per tile. Both passes
// divide alike, so partition p is the same tiles in both.
//
// The includer declares `layout(local_size_x_id = 0) in;` and includes ap_elements.glsl
// first. Tiles are scanned with ap_monoid.glsl's monoid_scan.
#ifndef TESSERA_AP_TILE_GLSL
#define TESSERA_AP_TILE_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "ap_monoid.glsl"

// Elements per invocation (specialization constant 1); at most 32, so that a tile has no
// more words than invocations.
layout(constant_id = 1) const uint PER_INVOCATION = 8u;
const uint WG = gl_WorkGroupSize.x;
const uint TILE = PER_INVOCATION * WG;
const uint WORDS = TILE / 32u;
// Bits of the f32 1.0, the background depth.
const uint BACKGROUND_BITS = 0x3f800000u;

// Run starts among the 32 elements of activity word m whose first element is e0; `before`
// is the activity of element e0 - 1. Element 0 always starts a run; elements from el_n on
// start none.
uint word_starts(uint m, uint before, uint e0) {
    uint starts = m ^ ((m << 1) | before);
    if (e0 == 0u) starts |= 1u;
    if (e0 + 32u > el_n) starts &= e0 >= el_n ? 0u : (1u << (el_n - e0)) - 1u;
    return starts;
}

// The monoid value of a word: (run starts, active elements, last run start + 1 or 0).
uvec3 word_value(uint starts, uint m, uint e0) {
    return uvec3(bitCount(starts), bitCount(m), starts != 0u ? e0 + uint(findMSB(starts)) + 1u : 0u);
}

// Tiles [first, end) of partition p of gl_NumWorkGroups.x: equal shares, sizes differing by
// at most one.
uvec2 partition_tiles(uint p) {
    uint tiles = ceil_div(el_n, TILE);
    uint parts = gl_NumWorkGroups.x;
    uint first = p * (tiles / parts) + min(p, tiles % parts);
    return uvec2(first, first + tiles / parts + (p < tiles % parts ? 1u : 0u));
}

#endif
