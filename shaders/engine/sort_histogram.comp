#version 460
// Radix sort, pass step 1: the 256-bin histogram of one 8-bit digit for each block of
// BLOCK = 16 * WG keys, written digit-major (hist[digit * num_blocks + block]) so that one
// exclusive scan of the whole array gives every (digit, block) its output offset.
#include "common.glsl"

layout(local_size_x_id = 0) in;
// Keys as 32-bit words: key i's digit word is keys[i * key_words + word].
layout(set = 0, binding = 0) readonly buffer Keys { uint keys[]; };
layout(set = 0, binding = 1) writeonly buffer Hist { uint hist[]; };
layout(push_constant) uniform Push { uint n; uint num_blocks; uint shift; uint key_words; uint word; };

const uint ITEMS = 16u;
shared uint s_hist[256];

void main() {
    uint block = linear_group_id();
    if (block >= num_blocks) return;
    for (uint d = gl_LocalInvocationID.x; d < 256u; d += gl_WorkGroupSize.x) s_hist[d] = 0u;
    barrier();
    uint begin = block * ITEMS * gl_WorkGroupSize.x;
    uint end = min(begin + ITEMS * gl_WorkGroupSize.x, n);
    for (uint i = begin + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x) {
        atomicAdd(s_hist[(keys[i * key_words + word] >> shift) & 255u], 1u);
    }
    barrier();
    for (uint d = gl_LocalInvocationID.x; d < 256u; d += gl_WorkGroupSize.x) hist[d * num_blocks + block] = s_hist[d];
}
