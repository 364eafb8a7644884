#version 460
// Radix sort, pass step 1: the 256-bin histogram of one 8-bit digit for each block of
// BLOCK = ITEMS * WG keys, written digit-major (hist[digit * num_blocks + block]) so that one
// exclusive scan of the whole array gives every (digit, block) its output offset.
// All loads of a block are issued before the first shared-memory atomic, so their latency
// overlaps instead of adding up key by key.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
// Keys per invocation (as in sort_scatter.comp).
layout(constant_id = 1) const uint ITEMS = 16u;
// Keys as 32-bit words: key i's digit word is keys[i * key_words + word].
layout(set = 0, binding = 0) readonly buffer Keys { uint keys[]; };
layout(set = 0, binding = 1) writeonly buffer Hist { uint hist[]; };
layout(push_constant) uniform Push { uint n; uint num_blocks; uint shift; uint key_words; uint word; };

shared uint s_hist[256];

void main() {
    uint block = linear_group_id();
    if (block >= num_blocks) return;
    uint wg = gl_WorkGroupSize.x;
    uint begin = block * ITEMS * wg + gl_LocalInvocationID.x;
    // 256 marks a key past the end.
    uint digit[ITEMS];
    [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
        uint i = begin + it * wg;
        digit[it] = i < n ? (keys[i * key_words + word] >> shift) & 255u : 256u;
    }
    for (uint d = gl_LocalInvocationID.x; d < 256u; d += wg) s_hist[d] = 0u;
    barrier();
    [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
        if (digit[it] < 256u) atomicAdd(s_hist[digit[it]], 1u);
    }
    barrier();
    for (uint d = gl_LocalInvocationID.x; d < 256u; d += wg) hist[d * num_blocks + block] = s_hist[d];
}
