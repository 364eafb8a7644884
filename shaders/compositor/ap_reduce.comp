#version 460
// Active Pixel encoding, pass 1 of 3 (Algorithm 1's pixel properties and the reduction of
// its scans): every element's depth is read once; the activity words go to `masks` for pass
// 3, each strip's scan total (run starts, active elements, last run start + 1) to
// `strip_totals` and each workgroup's to `totals` (ap_strips.glsl). Subgroups walk their
// strips independently; the only barrier is the workgroup's final reduction.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Depth { uint depth_bits[]; };
// The box as the ROI kernel leaves it: (x0, y0, ~x1, ~y1), x0 = 0xFFFFFFFF when empty.
layout(set = 0, binding = 1) readonly buffer Roi { uint roi[4]; };
layout(set = 0, binding = 2) restrict writeonly buffer Masks { uint masks[]; };
layout(set = 0, binding = 3) restrict writeonly buffer StripTotals { uvec4 strip_totals[]; };
layout(set = 0, binding = 4) restrict writeonly buffer Totals { uvec4 totals[]; };
// origin: index in the depth buffer of the image's first pixel. The box is the ROI kernel's
// result in `roi` when box_source is 1, else box_push = (x0, y0, x1, y1).
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; };

#include "ap_strips.glsl"

bool element_active(uint e) {
    return e < el_n && !is_gap(e) && depth_bits[origin + element_pixel(e)] != BACKGROUND_BITS;
}

void main() {
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint lane = gl_SubgroupInvocationID;
    uint size = gl_SubgroupSize;
    uvec2 strip = strip_elements();
    bool carry_bit = strip.x > 0u && strip.x < strip.y && element_active(strip.x - 1u);
    uvec3 total = uvec3(0u);
    uint word = 0u;  // subgroups of fewer than 32 invocations gather a word over steps
    ElementWalk walk = walk_start(strip.x + lane, size);
    for (uint e = strip.x; e < strip.y; e += STEPS * size) {
        // Every load is issued before any is used, unconditionally: elements outside the
        // strip and gap elements read the image's first pixel (a cache hit) and are then
        // ignored, so no branch separates the loads.
        uint depth[STEPS];
        uint real = 0u;  // bit t: step t's element is a pixel of the strip
        [[unroll]] for (uint t = 0u; t < STEPS; t++) {
            bool in_strip = e + t * size + lane < strip.y && !walk_is_gap(walk);
            real |= in_strip ? 1u << t : 0u;
            depth[t] = depth_bits[origin + (in_strip ? walk_pixel(walk) : 0u)];
            walk_next(walk);
        }
        [[unroll]] for (uint t = 0u; t < STEPS; t++) {
            uint e0 = e + t * size;
            if (e0 >= strip.y) break;
            bool on = (real & (1u << t)) != 0u && depth[t] != BACKGROUND_BITS;
            uvec4 actives = subgroupBallot(on);
            bool before = lane > 0u ? bit4(actives, lane - 1u) : carry_bit;
            bool start = e0 + lane < strip.y && (on != before || e0 + lane == 0u);
            uvec4 starts = subgroupBallot(start);
            total = combine3(total, step_value(starts, actives, e0));
            carry_bit = bit4(actives, size - 1u);
            // Activity words; a word past the strip's end belongs to the next strip.
            if (size >= 32u) {
                uint w = (e0 >> 5) + lane;
                if (lane < size / 32u && 32u * w < strip.y) masks[w] = actives[lane];
            } else {
                word |= actives.x << (e0 & 31u);
                if (((e0 + size) & 31u) == 0u || e0 + size >= strip.y) {
                    if (subgroupElect()) masks[e0 >> 5] = word;
                    word = 0u;
                }
            }
        }
    }
    if (subgroupElect()) strip_totals[strip_index()] = uvec4(total, 0u);
    monoid_scan(subgroupElect() ? total : uvec3(0u), uvec3(0u));
    if (gl_LocalInvocationIndex == 0u) totals[gl_WorkGroupID.x] = uvec4(s_scan_total, 0u);
}
