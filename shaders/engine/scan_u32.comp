#version 460
// Exclusive or inclusive scan of u32 (wrapping), single pass with decoupled look-back.
// One workgroup per tile of 16 * WG elements; see include/scan_tile.glsl for the protocol.
#include "common.glsl"

layout(local_size_x_id = 0) in;
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
    uvec4 v[4];
    for (uint r = 0u; r < 4u; r++) {
        uint q = tile * 4u * wg + r * wg + gl_LocalInvocationID.x;
        uint e = 4u * q;
        if (e + 3u < n) {
            v[r] = in4[q];
        } else {
            for (uint c = 0u; c < 4u; c++) v[r][c] = e + c < n ? in1[e + c] : 0u;
        }
    }
    scan_tile(v, tile, num_tiles, inclusive != 0u);
    for (uint r = 0u; r < 4u; r++) {
        uint q = tile * 4u * wg + r * wg + gl_LocalInvocationID.x;
        uint e = 4u * q;
        if (e + 3u < n) {
            out4[q] = v[r];
        } else {
            for (uint c = 0u; c < 4u; c++) if (e + c < n) out1[e + c] = v[r][c];
        }
    }
}
