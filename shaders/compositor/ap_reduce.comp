#version 460
// Active Pixel encoding, pass 1 of 3 (Algorithm 1's pixel properties, and the reduction of
// its scans): every element's depth is read once; each chunk's activity word goes to
// `masks` for pass 3 (ap_tile.glsl), and each workgroup's total of the scans over its
// partition of tiles (run starts, active elements, last run start + 1) to `totals` for
// pass 2. Each invocation reads the element before its chunk itself (a cache hit), so no
// invocation waits for another until the workgroup's final reduction.
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

void main() {
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint lid = gl_LocalInvocationIndex;
    uvec2 range = partition_tiles(gl_WorkGroupID.x);
    uvec3 total = uvec3(0u);
    for (uint tile = range.x; tile < range.y; tile++) {
        uint e0 = tile * TILE + lid * PER_INVOCATION;
        ElementWalk walk = walk_start(e0, 1u);
        // The element before the chunk: the previous column, or the last of the previous
        // row's stride (a gap when the box is narrower than the image).
        bool wrap = walk.col == 0u;
        uint prev_col = wrap ? el_stride - 1u : walk.col - 1u;
        bool prev_real = e0 > 0u && e0 <= el_n && prev_col < el_box_w;
        uint prev_pixel = (el_y0 + walk.row - (wrap ? 1u : 0u)) * el_width + el_x0 + prev_col;
        // Every load issued before any is used, and unconditionally: elements past the end
        // and gap elements read the image's first pixel (a cache hit) and are ignored, so no
        // branch separates the loads (with one, NVIDIA's compiler waited for each load
        // before issuing the next).
        uint before = depth_bits[origin + (prev_real ? prev_pixel : 0u)];
        uint depth[PER_INVOCATION];
        uint real = 0u;
        [[unroll]] for (uint j = 0u; j < PER_INVOCATION; j++) {
            bool pixel = e0 + j < el_n && !walk_is_gap(walk);
            real |= pixel ? 1u << j : 0u;
            depth[j] = depth_bits[origin + (pixel ? walk_pixel(walk) : 0u)];
            walk_next(walk);
        }
        uint bits = 0u;
        [[unroll]] for (uint j = 0u; j < PER_INVOCATION; j++) {
            bits |= depth[j] != BACKGROUND_BITS ? 1u << j : 0u;
        }
        bits &= real & chunk_valid(e0);
        masks[tile * WG + lid] = bits;
        uint starts = chunk_starts(bits, prev_real && before != BACKGROUND_BITS, e0);
        total = combine3(total, chunk_value(starts, bits, e0));
    }
    monoid_scan(total, uvec3(0u));
    if (lid == 0u) totals[gl_WorkGroupID.x] = uvec4(s_scan_total, 0u);
}
