#version 460
// A chunk of whole lines of the gray image, less its mean, as complex values: line l of the
// chunk is window line first + l, image row (origin_y + first + l) mod height for P, image
// column (origin_x + first + l) mod width for Q.
#include "common.glsl"
#include "seam_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Gray { float gray[]; };
layout(set = 0, binding = 1) restrict writeonly buffer Chunk { vec2 chunk[]; };

void main() {
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= lines * len) return;
    uint l = gid / len;
    uint k = gid - l * len;
    uint at;
    if (rows != 0u) {
        at = ((origin_y + first + l) % height) * width + k;
    } else {
        at = k * width + (origin_x + first + l) % width;
    }
    chunk[gid] = vec2(gray[at] - mean, 0.0);
}
