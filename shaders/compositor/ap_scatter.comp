#version 460
// Active Pixel encoding, pass 3 of 3 (Algorithm 1's run ids, run lengths, active indices and
// the scatter to the Equation 1 offsets): each workgroup walks its partition of tiles
// (ap_tile.glsl) from the exclusive prefix of the partitions before it (pass 2); each tile
// reads its activity words (pass 1), scans them from the running prefix, and writes its
// active pixels and run headers. Only active pixels' depths and colours are read, so over
// the three passes every depth in the box is read once and every active pixel's depth and
// colour once more. Partitions go in reverse order: the depths pass 1 read last are the
// likeliest to be still in L2.
//
// From the scan's prefix every element knows its run id r, its active index a and where its
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
// Exclusive prefix of the partitions before each partition (pass 2).
layout(set = 0, binding = 6) restrict readonly buffer Prefixes { uvec4 prefixes[]; };
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; };

#include "ap_tile.glsl"

shared uint s_mask[WORDS];    // activity of the tile's elements
shared uint s_start[WORDS];   // run starts, same layout
shared uvec3 s_prefix[WORDS]; // (runs, actives, last start + 1) of everything before word w
shared uint s_edge[2];        // activity of the elements just before and just after the tile

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

void main() {
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint lid = gl_LocalInvocationIndex;
    if (el_n == 0u) {
        if (gl_WorkGroupID.x == 0u && lid == 0u) {
            ap[0] = el_total;
            ap[1] = 0u;
            ap_words[0] = 2u;
        }
        return;
    }
    uint tiles = ceil_div(el_n, TILE);
    uint tail = el_total - el_end;
    uint partition_index = gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x;
    uvec2 range = partition_tiles(partition_index);
    uvec3 carry = prefixes[partition_index].xyz;
    for (uint tile = range.x; tile < range.y; tile++) {
        uint base = tile * TILE;
        if (lid < WORDS) s_mask[lid] = masks[tile * WORDS + lid];
        if (lid == 0u) s_edge[0] = tile > 0u ? masks[tile * WORDS - 1u] >> 31 : 0u;
        if (lid == WG - 1u) s_edge[1] = tile + 1u < tiles ? masks[(tile + 1u) * WORDS] & 1u : 0u;
        barrier();

        // The active pixels' depths and colours, loaded while the tile's words are scanned:
        // all issued at once and without branches (inactive elements read the image's first
        // pixel, a cache hit).
        uint depth[PER_INVOCATION];
        uint colour[PER_INVOCATION];
        uint on_bits = 0u;  // bit k: element k * WG + lid is active
        ElementWalk walk = walk_start(base + lid, WG);
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            uint off = k * WG + lid;
            bool on = (s_mask[off >> 5] & (1u << (off & 31u))) != 0u;
            on_bits |= on ? 1u << k : 0u;
            uint at = origin + (on ? walk_pixel(walk) : 0u);
            depth[k] = depth_bits[at];
            colour[k] = color[at];
            walk_next(walk);
        }

        uvec3 v = uvec3(0u);
        if (lid < WORDS) {
            uint m = s_mask[lid];
            uint e0 = base + 32u * lid;
            uint starts = word_starts(m, lid > 0u ? s_mask[lid - 1u] >> 31 : s_edge[0], e0);
            s_start[lid] = starts;
            v = word_value(starts, m, e0);
        }
        uvec3 excl = monoid_scan(v, carry);
        carry = s_scan_total;
        if (lid < WORDS) s_prefix[lid] = excl;
        barrier();

        walk = walk_start(base + lid, WG);
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            uint off = k * WG + lid;
            uint e = base + off;
            bool on = (on_bits & (1u << k)) != 0u;
            bool last = e + 1u == el_n;
            uint pixel = walk_pixel(walk);
            walk_next(walk);
            if (!on && !last) continue;
            uint w = off >> 5;
            uint bit = 1u << (off & 31u);
            uint upto = bit | (bit - 1u);
            uint m = s_mask[w];
            uint starts = s_start[w];
            uvec3 pre = s_prefix[w];
            uint a = pre.y + bitCount(m & (bit - 1u));
            uint r = pre.x + bitCount(starts & upto);
            uint mine = starts & upto;
            uint run_start = mine != 0u ? base + 32u * w + uint(findMSB(mine)) + 1u : pre.z;
            if (on) {
                uint pos = ap_offset(a, r);
                ap2[pos >> 1] = uvec2(colour[k], depth[k]);
                if ((starts & bit) != 0u) {
                    uint earlier = starts & (bit - 1u);
                    uint previous = earlier != 0u ? base + 32u * w + uint(findMSB(earlier)) + 1u : pre.z;
                    ap[pos - 2u] = pixel - start_pixel(previous);
                }
                bool next_on = (off & 31u) != 31u ? (m & (bit << 1)) != 0u
                                                  : (w + 1u < WORDS ? (s_mask[w + 1u] & 1u) != 0u : s_edge[1] != 0u);
                if (!next_on) {
                    uint len = e + 2u - run_start;
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
        // The next tile reuses the shared arrays.
        barrier();
    }
}
