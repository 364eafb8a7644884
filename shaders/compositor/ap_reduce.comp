#version 460
// Active Pixel encoding, pass 1 of 3 (Algorithm 1's pixel properties, and the reduction of
// its scans): every element's depth is read once; the tiles' activity words go to `masks`
// for pass 3, and each workgroup's total of the scans over its partition of tiles (run
// starts, active elements, last run start + 1; ap_tile.glsl) to `totals` for pass 2. No
// workgroup waits for another.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Depth { uint depth_bits[]; };
// The box as the ROI kernel leaves it: (x0, y0, ~x1, ~y1), x0 = 0xFFFFFFFF when empty.
layout(set = 0, binding = 1) readonly buffer Roi { uint roi[4]; };
layout(set = 0, binding = 2) restrict writeonly buffer Masks { uint masks[]; };
layout(set = 0, binding = 3) restrict writeonly buffer Totals { uvec4 totals[]; };
// origin: index in the depth buffer of the image's first pixel. The box is the ROI kernel's
// result in `roi` when box_source is 1, else box_push = (x0, y0, x1, y1).
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; };

#include "ap_tile.glsl"

shared uint s_mask[WORDS];
shared uint s_before;  // activity of the element just before the partition

bool element_active(uint e) {
    return e < el_n && !is_gap(e) && depth_bits[origin + element_pixel(e)] != BACKGROUND_BITS;
}

void main() {
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint lid = gl_LocalInvocationIndex;
    uvec2 range = partition_tiles(gl_WorkGroupID.x);
    if (lid == 0u) s_before = range.x < range.y && range.x > 0u && element_active(range.x * TILE - 1u) ? 1u : 0u;
    barrier();
    // Activity of the element before the tile: the last of the previous tile after the first.
    uint before = s_before;
    uvec3 total = uvec3(0u);
    for (uint tile = range.x; tile < range.y; tile++) {
        uint base = tile * TILE;
        // Every load is issued before any is used, unconditionally: elements past the end
        // and gap elements read the image's first pixel (a cache hit) and are then ignored,
        // so no branch separates the loads (with one, NVIDIA's compiler waited for each
        // load before issuing the next).
        uint depth[PER_INVOCATION];
        uint real = 0u;  // bit k: element k * WG + lid is a pixel of the box
        ElementWalk walk = walk_start(base + lid, WG);
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            bool pixel = base + k * WG + lid < el_n && !walk_is_gap(walk);
            real |= pixel ? 1u << k : 0u;
            depth[k] = depth_bits[origin + (pixel ? walk_pixel(walk) : 0u)];
            walk_next(walk);
        }
        // Subgroups of 32 or more lanes store whole words; smaller ones OR into them.
        if (gl_SubgroupSize < 32u) {
            for (uint w = lid; w < WORDS; w += WG) s_mask[w] = 0u;
            barrier();
        }
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            uvec4 b = subgroupBallot((real & (1u << k)) != 0u && depth[k] != BACKGROUND_BITS);
            if (subgroupElect()) {
                uint first = k * WG + gl_SubgroupID * gl_SubgroupSize;
                if (gl_SubgroupSize >= 32u) {
                    for (uint c = 0u; c < gl_SubgroupSize / 32u; c++) s_mask[first / 32u + c] = b[c];
                } else {
                    atomicOr(s_mask[first / 32u], b.x << (first % 32u));
                }
            }
        }
        barrier();
        uvec3 v = uvec3(0u);
        if (lid < WORDS) {
            uint m = s_mask[lid];
            masks[tile * WORDS + lid] = m;
            uint e0 = base + 32u * lid;
            v = word_value(word_starts(m, lid > 0u ? s_mask[lid - 1u] >> 31 : before, e0), m, e0);
        }
        before = s_mask[WORDS - 1u] >> 31;
        // The total only; monoid_scan's barriers also keep s_mask until every invocation has
        // read it.
        monoid_scan(v, uvec3(0u));
        total = combine3(total, s_scan_total);
    }
    if (lid == 0u) totals[gl_WorkGroupID.x] = uvec4(total, 0u);
}
