#version 460
// band = spectrum * log-Gabor(scale, orientation), the filter evaluated on the fly once per
// bin (one invocation per bin, looping over the chunk's images).
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Spectra { vec2 spectra[]; };
layout(set = 0, binding = 1) writeonly buffer Band { vec2 band[]; };

void main() {
    uint n = pixels();
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= n) return;
    float f = log_gabor(gid / width, gid % width, scale, orientation);
    for (uint i = 0u; i < 2u * pairs; i++) band[i * n + gid] = spectra[i * n + gid] * f;
}
