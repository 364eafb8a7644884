#version 460
// Multiplies every spectrum of the chunk by the CSF, evaluated on the fly once per bin
// (one invocation per bin, looping over the chunk's images).
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer Spectra { vec2 spectra[]; };

void main() {
    uint n = pixels();
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= n) return;
    float f = csf(gid / width, gid % width);
    for (uint i = 0u; i < 2u * pairs; i++) spectra[i * n + gid] *= f;
}
