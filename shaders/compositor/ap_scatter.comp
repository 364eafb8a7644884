#version 460
// Active Pixel encoding, pass 3 of 3 (Algorithm 1's run ids, run lengths, active indices and
// the scatter to the Equation 1 offsets). Each subgroup walks its strip (ap_strips.glsl)
// from the scans' value before it: its workgroup's exclusive prefix (pass 2) combined with
// the totals of the strips before it in the workgroup (pass 1). Activity comes from pass 1's
// words, so only active pixels' depths and colours are read: over the three passes every
// depth in the box is read once and every active pixel's depth and colour once more.
// Workgroups go in reverse order: the depths pass 1 read last are the likeliest to be still
// in L2.
//
// From the running value every element knows its run id r, its active index a and where its
// run began:
// - an active element writes its pixel at ApOffset(a, r);
// - the first element of an active run writes the run header's inactive count (its pixel
//   minus the previous run's first pixel), the last one writes the active count (the run's
//   element count);
// - the last element writes the final (inactive count, 0) header when the image ends
//   inactive, and the payload size.
// Elements are measured in image pixels, so the payload is that of the whole image.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Color { uint color[]; };
layout(set = 0, binding = 1) restrict readonly buffer Depth { uint depth_bits[]; };
// The box as the ROI kernel leaves it: (x0, y0, ~x1, ~y1), x0 = 0xFFFFFFFF when empty.
layout(set = 0, binding = 2) readonly buffer Roi { uint roi[4]; };
layout(set = 0, binding = 3) writeonly buffer Out { uint ap[]; };
layout(set = 0, binding = 3) writeonly buffer Out2 { uvec2 ap2[]; };
layout(set = 0, binding = 4) writeonly buffer Size { uint ap_words[]; };
layout(set = 0, binding = 5) restrict readonly buffer Masks { uint masks[]; };
layout(set = 0, binding = 6) restrict readonly buffer StripTotals { uvec4 strip_totals[]; };
// Exclusive prefix of the workgroups before each workgroup (pass 2).
layout(set = 0, binding = 7) restrict readonly buffer Prefixes { uvec4 prefixes[]; };
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; };

#include "ap_strips.glsl"

uint ap_offset(uint a, uint r) {
    // Word offset of an active pixel: 2 * (a + floor((r - 1) / 2) + 1); floor, not
    // truncation, so that an all-inactive image puts its header at 0.
    return uint(2 * (int(a) + ((int(r) - 1) >> 1) + 1));
}

// First image pixel of the run that starts at element s1 - 1 (s1 is 1-based, 0 = none); the
// first run also covers the pixels before the box.
uint start_pixel(uint s1) {
    return s1 <= 1u ? 0u : element_pixel(s1 - 1u);
}

// Activity of element e from pass 1's words (false from el_n on).
bool active_at(uint e) {
    return e < el_n && ((masks[e >> 5] >> (e & 31u)) & 1u) != 0u;
}

// Activity of the gl_SubgroupSize elements from e0 (a multiple of the subgroup size or of
// 32, whichever is smaller, as every step start is) as a subgroup bit set; empty from el_n
// on. The loads are unconditional (clamped to the last word) so that the steps' loads are
// issued together.
uvec4 step_activity(uint e0) {
    uint size = gl_SubgroupSize;
    uint last = (el_n - 1u) >> 5;
    if (size < 32u) {
        uint word = masks[min(e0 >> 5, last)];
        return e0 < el_n ? uvec4((word >> (e0 & 31u)) & ((1u << size) - 1u), 0u, 0u, 0u) : uvec4(0u);
    }
    uvec4 set = uvec4(0u);
    for (uint c = 0u; c < size / 32u; c++) {
        uint w = (e0 >> 5) + c;
        uint word = masks[min(w, last)];
        set[c] = w <= last ? word : 0u;
    }
    return set;
}

void main() {
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    if (el_n == 0u) {
        if (gl_WorkGroupID.x == 0u && gl_LocalInvocationIndex == 0u) {
            ap[0] = el_total;
            ap[1] = 0u;
            ap_words[0] = 2u;
        }
        return;
    }
    uint lane = gl_SubgroupInvocationID;
    uint size = gl_SubgroupSize;
    uint tail = el_total - el_end;
    uvec2 strip = strip_elements();

    // The running value before the strip: the workgroup's prefix and the strips before it.
    uint first_strip = gl_WorkGroupID.x * gl_NumSubgroups;
    uvec3 carry = prefixes[gl_WorkGroupID.x].xyz;
    for (uint s = 0u; s < gl_SubgroupID; s += size) {
        uvec3 x = s + lane < gl_SubgroupID ? strip_totals[first_strip + s + lane].xyz : uvec3(0u);
        carry = combine3(carry, uvec3(subgroupAdd(x.x), subgroupAdd(x.y), subgroupMax(x.z)));
    }
    bool carry_bit = strip.x > 0u && active_at(strip.x - 1u);

    ElementWalk walk = walk_start(strip.x + lane, size);
    for (uint e = strip.x; e < strip.y; e += STEPS * size) {
        // Activity of the steps and of the first element after them, then the active
        // pixels' depths and colours, each batch of loads issued at once and without
        // branches (inactive elements read the image's first pixel, a cache hit).
        uvec4 activity[STEPS + 1u];
        [[unroll]] for (uint t = 0u; t <= STEPS; t++) activity[t] = step_activity(e + t * size);
        uint depth[STEPS];
        uint colour[STEPS];
        uint pixel[STEPS];
        [[unroll]] for (uint t = 0u; t < STEPS; t++) {
            bool on = e + t * size + lane < strip.y && bit4(activity[t], lane);
            pixel[t] = walk_pixel(walk);
            uint at = origin + (on ? pixel[t] : 0u);
            depth[t] = depth_bits[at];
            colour[t] = color[at];
            walk_next(walk);
        }
        [[unroll]] for (uint t = 0u; t < STEPS; t++) {
            uint e0 = e + t * size;
            if (e0 >= strip.y) break;
            uint el = e0 + lane;
            bool real = el < strip.y;
            bool on = real && bit4(activity[t], lane);
            bool before = lane > 0u ? bit4(activity[t], lane - 1u) : carry_bit;
            bool start = real && (on != before || el == 0u);
            uvec4 starts = subgroupBallot(start);
            uvec4 actives = subgroupBallot(on);
            bool last = el + 1u == el_n;
            if (on || last) {
                uvec4 upto = starts & gl_SubgroupLeMask;
                uint a = carry.y + subgroupBallotExclusiveBitCount(actives);
                uint r = carry.x + count4(upto);
                uint run_start = upto != uvec4(0u) ? e0 + msb4(upto) + 1u : carry.z;
                if (on) {
                    uint pos = ap_offset(a, r);
                    ap2[pos >> 1] = uvec2(colour[t], depth[t]);
                    if (start) {
                        uvec4 earlier = starts & gl_SubgroupLtMask;
                        uint previous = earlier != uvec4(0u) ? e0 + msb4(earlier) + 1u : carry.z;
                        ap[pos - 2u] = pixel[t] - start_pixel(previous);
                    }
                    bool next_on = lane + 1u < size ? bit4(activity[t], lane + 1u) : bit4(activity[t + 1u], 0u);
                    if (!next_on || last) {
                        uint len = el + 2u - run_start;
                        ap[ap_offset(a + 1u - len, r) - 1u] = len;
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
            carry = combine3(carry, step_value(starts, actives, e0));
            carry_bit = bit4(activity[t], size - 1u);
        }
    }
}
