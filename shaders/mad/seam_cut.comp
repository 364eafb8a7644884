#version 460
// The chunk's ramped lines cut to the window: P line l (window row first + l) keeps the
// window's columns, (origin_x + i) mod width; Q line l (window column first + l) keeps its
// rows, (origin_y + j) mod height. Written row-major in the window's size from out_offset.
#include "common.glsl"
#include "seam_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Chunk { vec2 chunk[]; };
layout(set = 0, binding = 1) restrict writeonly buffer Out { vec2 lines_out[]; };

void main() {
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint kept = rows != 0u ? window_w : window_h;
    if (gid >= lines * kept) return;
    uint l = gid / kept;
    uint i = gid - l * kept;
    if (rows != 0u) {
        lines_out[out_offset + (first + l) * window_w + i] = chunk[l * len + (origin_x + i) % width];
    } else {
        lines_out[out_offset + i * window_w + first + l] = chunk[l * len + (origin_y + i) % height];
    }
}
