#version 460
// Active Pixel encoding in one pass, as ap_encode.comp (the five steps of the paper's
// Algorithm 1 fused into one single-pass scan with decoupled look-back), for images whose
// width and first pixel are multiples of 4, which lets every load be a 16-byte vector of
// 4 pixels (a quad) and every scan run in registers:
//
// - The ROI box is widened to whole quads, with one inactive quad between box rows, so the
//   elements are image pixels and need no gap elements (ap_elements.glsl,
//   elements_init_quads).
// - Each subgroup owns a contiguous chunk of the tile, QUADS steps of one quad per
//   invocation. An invocation turns its quad into 4 activity bits and 4 segment-start bits
//   (the element before each quad comes from the neighbouring invocation by a shuffle), and
//   the subgroup scans (starts, actives) packed in one word, and the last start by max,
//   step by step with the carry in registers; no per-element shared memory at all.
// - The subgroups' totals are scanned across the tile and across tiles by look-back
//   (ap_tile.glsl); then each invocation writes its quads' active pixels and run headers
//   from its own counters, a few bit operations per pixel.
//
// Segment starts are kept as image pixel + 1 (pixels grow with the element order, so max
// still finds the latest), and the first segment, when inactive, as pixel 0 + 1, because
// it also covers the pixels before the box. Active runs never cross a row (the inactive
// quad between rows), so a run's length is a difference of pixels.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Color4 { uvec4 color4[]; };
layout(set = 0, binding = 1) restrict readonly buffer Depth4 { uvec4 depth4[]; };
layout(set = 0, binding = 1) restrict readonly buffer Depth1 { uint depth1[]; };
// The box as the ROI kernel leaves it: (x0, y0, ~x1, ~y1), x0 = 0xFFFFFFFF when empty.
layout(set = 0, binding = 2) readonly buffer Roi { uint roi[4]; };
layout(set = 0, binding = 3) writeonly buffer Out { uint ap[]; };
layout(set = 0, binding = 3) writeonly buffer Out2 { uvec2 ap2[]; };
layout(set = 0, binding = 4) writeonly buffer Size { uint ap_words[]; };
layout(set = 0, binding = 5) coherent buffer Scratch { uint scratch[]; };
// As ap_encode.comp; origin and width are multiples of 4 here.
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; };

// Quads per invocation (specialization constant 1).
layout(constant_id = 1) const uint QUADS = 4u;
// 1: the look-back reads descriptors with relaxed atomic loads (lookback.glsl says when).
layout(constant_id = 2) const uint RELAXED_LOADS = 0u;

#include "ap_tile.glsl"

// Staging words of the compress step, per invocation: a step's stretch of the payload is at
// most 2 words per pixel plus one run header (8 per quad, and 4 for the subgroup); fixed
// size for the largest workgroup, as ap_tile.glsl says why.
const uint STAGE_WORDS_PER_LANE = 9u;
shared uint s_stage[STAGE_WORDS_PER_LANE * 1024u];

// Activity bits of a quad's 4 depths.
uint quad_activity(uvec4 d) {
    bvec4 on = notEqual(d, uvec4(BACKGROUND_BITS));
    return (on.x ? 1u : 0u) | (on.y ? 2u : 0u) | (on.z ? 4u : 0u) | (on.w ? 8u : 0u);
}

bool element_active(uint e) {
    return e < el_n && depth1[origin + element_pixel(e)] != BACKGROUND_BITS;
}

// Payload words before the pixels and runs that begin at an element with a active pixels
// and r segment starts before it: 2 per active pixel and 2 (a run's header) per active run
// begun; the segments alternate from the first one, active when element 0 is.
uint payload_words(uint a, uint r, bool first_on) {
    return 2u * (a + (first_on ? (r + 1u) >> 1 : r >> 1));
}

// Start value (pixel + 1) of element j of a quad whose first element is e and first pixel p.
uint start_value(uint e, uint p, uint j, uint on_bits) {
    return e + j == 0u && (on_bits & 1u) == 0u ? 1u : p + j + 1u;
}

uint start_pixel(uint value) {
    return value == 0u ? 0u : value - 1u;
}

void main() {
    elements_init_quads(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint SG = gl_SubgroupSize;
    uint tile_elements = 4u * QUADS * gl_WorkGroupSize.x;
    uint tiles = max(ceil_div(el_n, tile_elements), 1u);
    // Surplus workgroups (the dispatch covers the whole image when the box comes from
    // `roi`) leave before taking a ticket, so every ticket goes to a workgroup that runs.
    if (linear_group_id() >= tiles) return;
    uint tile = lb_take_tile();
    uint lane = gl_SubgroupInvocationID;
    if (el_n == 0u) {
        if (gl_LocalInvocationIndex == 0u) {
            ap[0] = el_total;
            ap[1] = 0u;
            ap_words[0] = 2u;
        }
        return;
    }
    // This subgroup's chunk: QUADS steps of SG quads; step k's quad of this invocation
    // starts at element first + 4 * SG * k.
    uint chunk = 4u * QUADS * SG;
    uint chunk_start = tile * tile_elements + gl_SubgroupID * chunk;
    uint first = chunk_start + 4u * lane;

    // Step 1 (pixel properties), loads first: every quad's depth (quads past the end read
    // quad 0, a cache hit, so no branch separates the loads) and the elements just before
    // and after the chunk.
    uvec4 depth[QUADS];
    ElementWalk walk = walk_start(first, 4u * SG);
    [[unroll]] for (uint k = 0u; k < QUADS; k++) {
        bool real = first + 4u * SG * k < el_n;
        depth[k] = depth4[real ? (origin + walk_pixel(walk)) >> 2 : 0u];
        walk_next(walk);
    }
    uint before = 0u;  // activity of the element before the chunk, and after it
    uint after = 0u;
    if (lane == 0u) before = chunk_start > 0u && element_active(chunk_start - 1u) ? 1u : 0u;
    if (lane == 1u % SG) after = element_active(chunk_start + chunk) ? 1u : 0u;
    uint zero_on = 0u;  // activity of element 0, which fixes the segments' alternation
    if (lane == 2u % SG) zero_on = element_active(0u) ? 1u : 0u;
    before = subgroupShuffle(before, 0u);
    after = subgroupShuffle(after, 1u % SG);
    bool first_on = subgroupShuffle(zero_on, 2u % SG) != 0u;

    // Activity and segment-start bits per quad: bits 0-3 activity, 4-7 starts, 8 the
    // activity of the element after the quad.
    uint bits[QUADS];
    [[unroll]] for (uint k = 0u; k < QUADS; k++) {
        bool real = first + 4u * SG * k < el_n;
        bits[k] = real ? quad_activity(depth[k]) : 0u;
    }
    uint below = (lane + SG - 1u) % SG;
    uint above = (lane + 1u) % SG;
    [[unroll]] for (uint k = 0u; k < QUADS; k++) {
        // The element before this quad is the last of the invocation below's quad, or, for
        // the first invocation, the last of the previous step's last quad.
        uint last_of = lane == SG - 1u ? (k > 0u ? bits[k > 0u ? k - 1u : 0u] >> 3 : before) : bits[k] >> 3;
        uint prev = subgroupShuffle(last_of & 1u, below);
        uint first_of = lane == 0u ? (k + 1u < QUADS ? bits[min(k + 1u, QUADS - 1u)] : after) : bits[k];
        uint next = subgroupShuffle(first_of & 1u, above);
        uint a = bits[k] & 15u;
        uint starts = (a ^ ((a << 1) | prev)) & 15u;
        uint e = first + 4u * SG * k;
        if (e == 0u) starts |= 1u;  // the sequence opens its first segment
        if (e >= el_n) starts = 0u;
        bits[k] = a | (starts << 4) | (next << 8);
    }

    // The active pixels' colours, loaded while the scans below run.
    uvec4 colour[QUADS];
    walk = walk_start(first, 4u * SG);
    [[unroll]] for (uint k = 0u; k < QUADS; k++) {
        colour[k] = color4[(bits[k] & 15u) != 0u ? (origin + walk_pixel(walk)) >> 2 : 0u];
        walk_next(walk);
    }

    // Steps 2-4 (the scans) within the chunk: per step, (starts | actives << 16) by one
    // inclusive add and the last start by max, with the chunk's running totals carried.
    uint before_packed[QUADS];  // exclusive (starts, actives) within the chunk, packed
    uint before_last[QUADS];    // last start before the quad within the chunk, 0 = none
    uint carry = 0u;
    uint carry_last = 0u;
    walk = walk_start(first, 4u * SG);
    [[unroll]] for (uint k = 0u; k < QUADS; k++) {
        uint a = bits[k] & 15u;
        uint starts = (bits[k] >> 4) & 15u;
        uint e = first + 4u * SG * k;
        uint mine = starts != 0u ? start_value(e, walk_pixel(walk), uint(findMSB(starts)), a) : 0u;
        walk_next(walk);
        uint packed = bitCount(starts) | (bitCount(a) << 16);
        uint incl = subgroupInclusiveAdd(packed);
        before_packed[k] = carry + incl - packed;
        carry += subgroupShuffle(incl, SG - 1u);
        before_last[k] = max(carry_last, subgroupExclusiveMax(mine));
        carry_last = max(carry_last, subgroupMax(mine));
    }
    if (subgroupElect()) s_sg[gl_SubgroupID] = uvec3(carry & 0xffffu, carry >> 16, carry_last);
    barrier();
    tile_scan(tile);
    barrier();
    uvec3 chunk_prefix = combine3(s_tile_prefix, s_sg[gl_SubgroupID]);

    // Step 5 (compress), one step at a time: each invocation puts its quad's pixels and run
    // headers into the subgroup's staging words, and the subgroup then copies the step's
    // whole stretch of the payload out with consecutive invocations on consecutive words (an
    // invocation writing its own 4 pixels would leave 32-byte gaps between the lanes of
    // every store). Words outside the stretch (the length header of a run that began in an
    // earlier step, and the closing header) go straight to the payload, and the copy skips
    // the stretch's one word that a later step writes: the length header of a run that
    // goes on past the step.
    uint tail = el_total - el_end;
    uint stage = gl_SubgroupID * STAGE_WORDS_PER_LANE * SG;
    walk = walk_start(first, 4u * SG);
    [[unroll]] for (uint k = 0u; k < QUADS; k++) {
        uint e = first + 4u * SG * k;
        uint p = walk_pixel(walk);
        walk_next(walk);
        uint a_bits = bits[k] & 15u;
        uint starts = (bits[k] >> 4) & 15u;
        bool ends = e + 4u == el_n;  // the quad holds the last element
        uint r0 = chunk_prefix.x + (before_packed[k] & 0xffffu);
        uint a0 = chunk_prefix.y + (before_packed[k] >> 16);
        uint last0 = max(chunk_prefix.z, before_last[k]);
        // The step's stretch [lo, hi): the payload words of the pixels and runs that begin
        // in it, from the counts before its first quad and after its last.
        uint r1 = r0 + bitCount(starts);
        uint a1 = a0 + bitCount(a_bits);
        uint lo = subgroupShuffle(payload_words(a0, r0, first_on), 0u);
        uint hi = subgroupShuffle(payload_words(a1, r1, first_on), SG - 1u);
        uint skip = 0xFFFFFFFFu;
        if ((a_bits & 8u) != 0u && (bits[k] & 256u) != 0u) {
            uint run_start = (starts & 15u) != 0u ? start_value(e, p, uint(findMSB(starts)), a_bits) : last0;
            uint len = p + 4u - start_pixel(run_start);
            skip = ap_offset(a1 - len, r1) - 1u;
        }
        skip = subgroupShuffle(skip, SG - 1u);
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            uint bit = 1u << j;
            bool on = (a_bits & bit) != 0u;
            bool last = ends && j == 3u;
            if (!on && !last) continue;
            uint a = a0 + bitCount(a_bits & (bit - 1u));
            uint upto = starts & (bit | (bit - 1u));
            uint r = r0 + bitCount(upto);
            uint run_start = upto != 0u ? start_value(e, p, uint(findMSB(upto)), a_bits) : last0;
            if (on) {
                uint pos = ap_offset(a, r);
                s_stage[stage + pos - lo] = colour[k][j];
                s_stage[stage + pos + 1u - lo] = depth[k][j];
                if ((starts & bit) != 0u) {
                    uint earlier = starts & (bit - 1u);
                    uint previous = earlier != 0u ? start_value(e, p, uint(findMSB(earlier)), a_bits) : last0;
                    s_stage[stage + pos - 2u - lo] = p + j - start_pixel(previous);
                }
                bool next_on = j < 3u ? (a_bits & (bit << 1)) != 0u : (bits[k] & 256u) != 0u;
                if (!next_on) {
                    uint len = p + j + 1u - start_pixel(run_start);
                    uint at = ap_offset(a + 1u - len, r) - 1u;
                    if (at >= lo) s_stage[stage + at - lo] = len; else ap[at] = len;
                }
                if (last) {
                    if (tail > 0u) {
                        ap[pos + 2u] = tail;
                        ap[pos + 3u] = 0u;
                        ap_words[0] = pos + 4u;
                    } else {
                        ap_words[0] = pos + 2u;
                    }
                }
            } else {
                uint pos = ap_offset(a, r - 1u);
                ap[pos] = el_total - start_pixel(run_start);
                ap[pos + 1u] = 0u;
                ap_words[0] = pos + 2u;
            }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint i = lane; lo + i < hi; i += SG) {
            if (lo + i != skip) ap[lo + i] = s_stage[stage + i];
        }
        subgroupBarrier();
    }
}
