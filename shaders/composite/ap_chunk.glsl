// Active Pixel encoding in chunks of one subgroup each, without any chunk waiting for another.
// The sequence is the image's pixels (the whole image, or a span of the distributed
// renderer); chunk c is the chunk_size() = gl_SubgroupSize * PER_LANE consecutive pixels from
// c * chunk_size(). In ap_scatter, lane i reads pixel k * gl_SubgroupSize + i of the chunk in
// its k-th load, so loads coalesce and the subgroup ballot of the k-th load is the activity
// word of gl_SubgroupSize consecutive pixels (at most 32); ap_count reads the same chunk its
// own way. Run starts and their monoid (ap_monoid.glsl) come from activity words by bit
// operations, so a chunk needs no shared memory and no barrier. The includer declares the
// depth buffer `depth_bits`.
//
// ap_count.comp sums every chunk's monoid (and finds the ROI box) and scans the sums, and
// ap_scatter.comp writes each chunk's payload from its prefix: the paper's Algorithm 1
// (pixel properties, run ids, run lengths, active indices, scatter) as reduce, scan,
// scatter.
#ifndef TESSERA_AP_CHUNK_GLSL
#define TESSERA_AP_CHUNK_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "ap_monoid.glsl"

// n: pixels of the sequence; origin: index in the colour and depth buffers of its first
// pixel; width: pixels of an image row (for the ROI box); groups: workgroups (each sums its
// chunks); chunks: chunks in the sequence; group_chunks: chunks per workgroup.
layout(push_constant) uniform Push { uint n; uint origin; uint width; uint groups; uint chunks; uint group_chunks; };

// Pixels per lane of a chunk, a multiple of 32 (specialization constant 1).
layout(constant_id = 1) const uint PER_LANE = 32u;

// Bits of the f32 1.0, the background depth.
const uint BACKGROUND_BITS = 0x3f800000u;

// Chunk of the current subgroup.
uint chunk_index() {
    return linear_group_id() * gl_NumSubgroups + gl_SubgroupID;
}

uint chunk_size() {
    return gl_SubgroupSize * PER_LANE;
}

// Buffer index of pixel e, or of the first pixel past the end (a cache hit, then ignored):
// the loads are issued without a branch between them.
uint pixel_index(uint e) {
    return origin + (e < n ? e : 0u);
}

// Bits of a `bits`-pixel word at `first` (at most 32) whose pixels are before the end.
uint valid_bits(uint first, uint bits) {
    uint rem = first < n ? n - first : 0u;
    return rem >= bits ? (bits == 32u ? 0xFFFFFFFFu : (1u << bits) - 1u) : (1u << rem) - 1u;
}

// The activity word of the subgroup's pixels from `first` (this lane's pixel: first + lane)
// with depth bits `d`.
uint active_word(uint first, uint d) {
    return subgroupBallot(d != BACKGROUND_BITS).x & valid_bits(first, gl_SubgroupSize);
}

// The run starts of the `bits`-pixel word `m` at `first` whose previous pixel's activity is
// `before`: every change of activity, and pixel 0, which opens the first run.
uint start_bits(uint m, uint before, uint first, uint bits) {
    uint starts = (m ^ ((m << 1) | before)) & valid_bits(first, bits);
    return first == 0u && n > 0u ? starts | 1u : starts;
}

// Whether pixel e (read only when there is one) is active, as a bit.
uint pixel_active(uint e) {
    return e < n && depth_bits[origin + e] != BACKGROUND_BITS ? 1u : 0u;
}

// Whether the pixel before `first` is active.
uint active_before(uint first) {
    return first > 0u ? pixel_active(first - 1u) : 0u;
}

// The monoid sum of one word.
uvec3 word_sum(uint m, uint starts, uint first) {
    return uvec3(bitCount(starts), bitCount(m), starts != 0u ? first + uint(findMSB(starts)) + 1u : 0u);
}

#endif
