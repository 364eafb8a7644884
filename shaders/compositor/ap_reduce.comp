#version 460
// Active Pixel encoding, pass 1 of 3 (Algorithm 1's pixel properties, and the per-tile
// reduction of its scans): reads every element's depth once, stores the tile's activity
// words (one bit per element) for pass 3, and the tile's monoid total (run starts, active
// elements, last run start + 1; ap_tile.glsl) for pass 2. Tiles do not wait for each other,
// so the GPU overlaps them freely; workgroups stride over the tiles, so a dispatch sized for
// the whole image (when the ROI box is only known on the GPU) costs no idle workgroups.
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
shared uint s_before;  // activity of the element just before the tile

bool element_active(uint e) {
    return e < el_n && !is_gap(e) && depth_bits[origin + element_pixel(e)] != BACKGROUND_BITS;
}

void main() {
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint tiles = ceil_div(el_n, TILE);
    uint lid = gl_LocalInvocationIndex;
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        uint base = tile * TILE;
        // All loads first, so their latencies overlap.
        uint depth[PER_INVOCATION];
        ElementWalk walk = walk_start(base + lid, WG);
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            bool real = base + k * WG + lid < el_n && !walk_is_gap(walk);
            depth[k] = real ? depth_bits[origin + walk_pixel(walk)] : BACKGROUND_BITS;
            walk_next(walk);
        }
        if (lid == 0u) s_before = base > 0u && element_active(base - 1u) ? 1u : 0u;
        // Subgroups of 32 or more lanes store whole words; smaller ones OR into them.
        if (gl_SubgroupSize < 32u) {
            for (uint w = lid; w < WORDS; w += WG) s_mask[w] = 0u;
            barrier();
        }
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            uvec4 b = subgroupBallot(depth[k] != BACKGROUND_BITS);
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
            v = word_value(word_starts(m, lid > 0u ? s_mask[lid - 1u] >> 31 : s_before, e0), m, e0);
        }
        monoid_scan(v, uvec3(0u));
        if (lid == 0u) totals[tile] = uvec4(s_scan_total, 0u);
    }
}
