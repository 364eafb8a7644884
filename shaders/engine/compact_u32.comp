#version 460
// Stream compaction: keeps values[i] (or the index i) where flags[i] != 0, in order.
// The scan of the 0/1 predicates runs in the same single pass as the scan (decoupled
// look-back, include/scan_tile.glsl); scratch[1] ends up holding the number kept.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Flags4 { uvec4 flags4[]; };
layout(set = 0, binding = 0) readonly buffer Flags1 { uint flags1[]; };
layout(set = 0, binding = 1) readonly buffer Values4 { uvec4 values4[]; };
layout(set = 0, binding = 1) readonly buffer Values1 { uint values1[]; };
layout(set = 0, binding = 2) writeonly buffer Output { uint out1[]; };
layout(set = 0, binding = 3) coherent buffer Scratch { uint scratch[]; };
// use_index != 0: keep the index i instead of values[i] (binding 1 is then not read).
layout(push_constant) uniform Push { uint n; uint num_tiles; uint use_index; };

#include "scan_tile.glsl"

void main() {
    uint tile = lb_take_tile();
    if (tile >= num_tiles) return;
    uint wg = gl_WorkGroupSize.x;
    uvec4 keep[4];
    for (uint r = 0u; r < 4u; r++) {
        uint q = tile * 4u * wg + r * wg + gl_LocalInvocationID.x;
        uint e = 4u * q;
        uvec4 f;
        if (e + 3u < n) {
            f = flags4[q];
        } else {
            for (uint c = 0u; c < 4u; c++) f[c] = e + c < n ? flags1[e + c] : 0u;
        }
        keep[r] = uvec4(notEqual(f, uvec4(0u)));
    }
    uvec4 pos[4] = keep;
    scan_tile(pos, tile, num_tiles, false);
    for (uint r = 0u; r < 4u; r++) {
        if (all(equal(keep[r], uvec4(0u)))) continue;
        uint q = tile * 4u * wg + r * wg + gl_LocalInvocationID.x;
        uint e = 4u * q;
        uvec4 val;
        if (use_index != 0u) {
            val = uvec4(e, e + 1u, e + 2u, e + 3u);
        } else if (e + 3u < n) {
            val = values4[q];
        } else {
            for (uint c = 0u; c < 4u; c++) val[c] = e + c < n ? values1[e + c] : 0u;
        }
        for (uint c = 0u; c < 4u; c++) if (keep[r][c] != 0u) out1[pos[r][c]] = val[c];
    }
}
