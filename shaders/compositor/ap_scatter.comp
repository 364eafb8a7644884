#version 460
// Active Pixel encoding, pass 3 of 3 (Algorithm 1's run ids, run lengths, active indices and
// the scatter to the Equation 1 offsets): each workgroup walks its partition of tiles
// (ap_tile.glsl) from the exclusive prefix of the partitions before it (pass 2). Per tile,
// each invocation reads its chunk's activity word (pass 1) and its neighbours', the chunks'
// values are scanned across the workgroup from the running prefix, and each invocation walks
// its chunk with running counters, writing its active pixels and run headers. Only active
// pixels' depths and colours are read, so over the three passes every depth in the box is
// read once and every active pixel's depth and colour once more. Partitions go in reverse
// order: the depths pass 1 read last are the likeliest to be still in L2.
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

// The tile's active pixels by active index within the tile, with their payload word
// offsets: staged here so that the writes to the payload go out coalesced (consecutive
// invocations, consecutive pixels) rather than each invocation writing its own chunk's
// pixels, PER_INVOCATION pixels apart (which ran at a third of the bandwidth on the H100).
shared uvec2 s_pixels[TILE];
shared uint s_offsets[TILE];

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
    uint last_chunk = ceil_div(el_n, TILE) * WG - 1u;
    uint tail = el_total - el_end;
    uint partition_index = gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x;
    uvec2 range = partition_tiles(partition_index);
    uvec3 carry = prefixes[partition_index].xyz;
    for (uint tile = range.x; tile < range.y; tile++) {
        uint chunk = tile * WG + lid;
        uint e0 = chunk * PER_INVOCATION;
        // The chunk's activity and its neighbours' (clamped loads, no branches).
        uint bits = masks[chunk];
        uint before_bits = masks[max(chunk, 1u) - 1u];
        uint after_bits = masks[min(chunk + 1u, last_chunk)];
        bool before = chunk > 0u && (before_bits >> (PER_INVOCATION - 1u)) != 0u;
        bool after_on = chunk < last_chunk && (after_bits & 1u) != 0u;
        uint starts = chunk_starts(bits, before, e0);
        uvec3 pre = monoid_scan(chunk_value(starts, bits, e0), carry);
        uint tile_active = carry.y;  // active index of the tile's first active pixel
        carry = s_scan_total;

        // The active pixels' depths and colours, all loads issued at once and without
        // branches (inactive elements read the image's first pixel, a cache hit).
        uint depth[PER_INVOCATION];
        uint colour[PER_INVOCATION];
        uint pixel[PER_INVOCATION];
        ElementWalk walk = walk_start(e0, 1u);
        [[unroll]] for (uint j = 0u; j < PER_INVOCATION; j++) {
            pixel[j] = walk_pixel(walk);
            uint at = origin + (((bits >> j) & 1u) != 0u ? pixel[j] : 0u);
            depth[j] = depth_bits[at];
            colour[j] = color[at];
            walk_next(walk);
        }

        // The chunk's elements in order: r counts run starts up to and including the element,
        // a the active elements before it, run_start is the current run's first element + 1.
        uint r = pre.x;
        uint a = pre.y;
        uint run_start = pre.z;
        [[unroll]] for (uint j = 0u; j < PER_INVOCATION; j++) {
            uint e = e0 + j;
            bool on = ((bits >> j) & 1u) != 0u;
            bool start = ((starts >> j) & 1u) != 0u;
            bool last = e + 1u == el_n;
            uint previous = run_start;
            r += start ? 1u : 0u;
            run_start = start ? e + 1u : run_start;
            if (on) {
                uint pos = ap_offset(a, r);
                s_offsets[a - tile_active] = pos;
                s_pixels[a - tile_active] = uvec2(colour[j], depth[j]);
                if (start) ap[pos - 2u] = pixel[j] - start_pixel(previous);
                bool next_on = j + 1u < PER_INVOCATION ? ((bits >> (j + 1u)) & 1u) != 0u : after_on;
                if (!next_on || last) {
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
                a += 1u;
            } else if (last) {
                uint pos = ap_offset(a, r - 1u);
                ap[pos] = el_total - start_pixel(run_start);
                ap[pos + 1u] = 0u;
                ap_words[0] = pos + 2u;
            }
        }
        barrier();
        for (uint i = lid; i < carry.y - tile_active; i += WG) ap2[s_offsets[i] >> 1] = s_pixels[i];
        // The next tile reuses the staging arrays.
        barrier();
    }
}
