#version 460
// band = spectrum * log-Gabor(scale, orientation), the filter evaluated on the fly per bin.
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Spectra { vec2 spectra[]; };
layout(set = 0, binding = 1) writeonly buffer Band { vec2 band[]; };

void main() {
    uint n = pixels();
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= 2u * pairs * n) return;
    uint k = gid % n;
    band[gid] = spectra[gid] * log_gabor(k / width, k % width, scale, orientation);
}
