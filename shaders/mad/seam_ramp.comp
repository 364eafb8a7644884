#version 460
// The chunk's line spectra multiplied by the ramp at the whole image's bins (s for rows, t
// for columns).
#include "common.glsl"
#include "seam_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Ramp { float ramp[]; };
layout(set = 0, binding = 1) restrict buffer Chunk { vec2 chunk[]; };

void main() {
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= lines * len) return;
    chunk[gid] *= ramp[gid % len];
}
