#version 460
// Exclusive or inclusive scan of u32 (wrapping), single pass with decoupled look-back.
// One workgroup per tile of ITEMS * WG elements; see include/scan_tile.glsl for the protocol.
#include "common.glsl"

layout(local_size_x_id = 0) in;
// Elements per invocation (specialization constant 1): a multiple of 4 from 4 to 32, loaded
// and stored as ITEMS / 4 coalesced uvec4 rows. Longer tiles mean fewer tiles, so fewer
// look-back steps on the serial chain; shorter ones mean fewer registers and more tiles
// in flight.
layout(constant_id = 1) const uint ITEMS = 16u;
const uint ROWS = ITEMS / 4u;
#define SCAN_ROWS ROWS

layout(set = 0, binding = 0) readonly buffer Input4 { uvec4 in4[]; };
layout(set = 0, binding = 0) readonly buffer Input1 { uint in1[]; };
layout(set = 0, binding = 1) writeonly buffer Output4 { uvec4 out4[]; };
layout(set = 0, binding = 1) writeonly buffer Output1 { uint out1[]; };
layout(set = 0, binding = 2) coherent buffer Scratch { uint scratch[]; };
layout(push_constant) uniform Push { uint n; uint num_tiles; uint inclusive; };

#include "scan_tile.glsl"

void main() {
    uint tile = lb_take_tile();
    if (tile >= num_tiles) return;
    uint wg = gl_WorkGroupSize.x;
    uint first = tile * ROWS * wg + gl_LocalInvocationID.x;
    // Whole rows are the rule; only the last tile has a ragged end (n not a multiple of 4,
    // or rows past n), read element by element.
    bool whole = 4u * (first + (ROWS - 1u) * wg) + 3u < n;
    uvec4 v[ROWS];
    for (uint r = 0u; r < ROWS; r++) {
        uint q = first + r * wg;
        uint e = 4u * q;
        if (whole || e + 3u < n) {
            v[r] = in4[q];
        } else {
            for (uint c = 0u; c < 4u; c++) v[r][c] = e + c < n ? in1[e + c] : 0u;
        }
    }
    scan_tile(v, tile, num_tiles, inclusive != 0u);
    for (uint r = 0u; r < ROWS; r++) {
        uint q = first + r * wg;
        uint e = 4u * q;
        if (whole || e + 3u < n) {
            out4[q] = v[r];
        } else {
            for (uint c = 0u; c < 4u; c++) if (e + c < n) out1[e + c] = v[r][c];
        }
    }
}
