#version 460
// Active Pixel encoding, pass 2 of 3: the exclusive scan of the tiles' monoid totals (run
// starts, active elements, last run start + 1; ap_tile.glsl) in place, by one workgroup.
// Each invocation takes PER consecutive tiles of a chunk (all loads issued at once), the
// chunk's invocations are scanned, and a carry runs across chunks, so any tile count works
// and the usual one (up to WG * PER tiles) takes one chunk.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
#include "ap_monoid.glsl"

// Elements per tile of passes 1 and 3 (specialization constant 1).
layout(constant_id = 1) const uint TILE = 8192u;
layout(set = 0, binding = 0) readonly buffer Roi { uint roi[4]; };
layout(set = 0, binding = 1) restrict buffer Totals { uvec4 totals[]; };
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; };

const uint PER = 16u;
const uint WG = gl_WorkGroupSize.x;

void main() {
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint tiles = ceil_div(el_n, TILE);
    uint lid = gl_LocalInvocationIndex;
    uvec3 carry = uvec3(0u);
    for (uint chunk = 0u; chunk < tiles; chunk += WG * PER) {
        uint first = chunk + lid * PER;
        uvec3 t[PER];
        uvec3 sum = uvec3(0u);
        [[unroll]] for (uint k = 0u; k < PER; k++) {
            t[k] = first + k < tiles ? totals[first + k].xyz : uvec3(0u);
            sum = combine3(sum, t[k]);
        }
        uvec3 prefix = monoid_scan(sum, carry);
        [[unroll]] for (uint k = 0u; k < PER; k++) {
            if (first + k < tiles) totals[first + k] = uvec4(prefix, 0u);
            prefix = combine3(prefix, t[k]);
        }
        carry = s_scan_total;
    }
}
