// How the Active Pixel encoder's two element passes (ap_reduce.comp, ap_scatter.comp) divide
// the element sequence (ap_elements.glsl), and the bit operations on subgroup-wide bit sets
// that replace shared-memory scans in them.
//
// The sequence is cut into 32-element words (word w = elements 32w .. 32w + 31; the activity
// words in `masks` hold bit j of word w for element 32w + j). Workgroup p of G takes an equal
// share of the words (its partition), and subgroup s of the workgroup an equal share of the
// partition (its strip). A subgroup walks its strip in steps of one element per invocation,
// carrying the scans' running value (run starts, active elements, last run start + 1; see
// ap_monoid.glsl) from step to step, so no invocation ever waits for another workgroup or
// for a barrier: the two passes do the same division, so strip s of partition p is the same
// elements in both.
//
// The includer declares `layout(local_size_x_id = 0) in;` and includes ap_elements.glsl.
#ifndef TESSERA_AP_STRIPS_GLSL
#define TESSERA_AP_STRIPS_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "ap_monoid.glsl"

// Steps a subgroup loads at once (specialization constant 1), so their latencies overlap.
layout(constant_id = 1) const uint STEPS = 8u;
const uint BACKGROUND_BITS = 0x3f800000u;  // f32 1.0, the background depth

// Share `part` of `parts` of `n` items: [first, end), sizes differing by at most one.
uvec2 share(uint n, uint part, uint parts) {
    uint q = n / parts;
    uint r = n % parts;
    uint first = part * q + min(part, r);
    return uvec2(first, first + q + (part < r ? 1u : 0u));
}

// Elements [first, end) of this subgroup's strip.
uvec2 strip_elements() {
    uint words = ceil_div(el_n, 32u);
    uvec2 part = share(words, gl_WorkGroupID.x, gl_NumWorkGroups.x);
    uvec2 strip = share(part.y - part.x, gl_SubgroupID, gl_NumSubgroups) + part.x;
    return uvec2(32u * strip.x, min(32u * strip.y, el_n));
}

// Index of this subgroup's strip among all strips.
uint strip_index() {
    return gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
}

// Bit i of a subgroup-wide bit set (i < gl_SubgroupSize).
bool bit4(uvec4 set, uint i) {
    return ((set[i >> 5] >> (i & 31u)) & 1u) != 0u;
}

uint count4(uvec4 set) {
    return bitCount(set.x) + bitCount(set.y) + bitCount(set.z) + bitCount(set.w);
}

// Highest set bit of a non-empty set.
uint msb4(uvec4 set) {
    for (int c = 3; c > 0; c--) {
        if (set[c] != 0u) return 32u * uint(c) + uint(findMSB(set[c]));
    }
    return uint(findMSB(set.x));
}

// The scans' value of one step whose first element is e0: its run starts, active elements
// (both as bit sets of the subgroup) and last run start + 1.
uvec3 step_value(uvec4 starts, uvec4 actives, uint e0) {
    return uvec3(count4(starts), count4(actives), starts != uvec4(0u) ? e0 + msb4(starts) + 1u : 0u);
}

#endif
