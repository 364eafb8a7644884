#version 460
// Mode-n unfolding of a batch of patches for the training's per-patch Gram products:
// dst patch s holds src patch index[s] (or s) with mode n moved outermost, so its rows are
// the m mode-n fibers' partners: dst[s][r][pi * q + qi] = src[p][pi][r][qi], where pi runs
// over the modes before n and qi over the modes after (q = their product). CPU twin:
// `train::cpu` reads the same fibers in place (`mode_gram`).
#include "common.glsl"

layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) readonly buffer Index { uint index[]; };
layout(set = 0, binding = 2) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push {
    uint slots;    // patches to write
    uint plen;     // samples per patch
    uint m;        // size of mode n
    uint q;        // product of the modes after n
    uint indexed;  // read src patch index[s] (1) or s (0)
};

void main() {
    uint e = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (e >= slots * plen) return;
    uint s = e / plen;
    uint w = e % plen;
    uint len = plen / m;
    uint r = w / len;
    uint l = w % len;
    uint pi = l / q;
    uint qi = l % q;
    uint p = indexed != 0u ? index[s] : s;
    dst[e] = src[p * plen + (pi * m + r) * q + qi];
}
