#version 460
// Multiplies every spectrum of the batch by the CSF, evaluated on the fly per bin.
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer Spectra { vec2 spectra[]; };

void main() {
    uint n = pixels();
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= 2u * pairs * n) return;
    uint k = gid % n;
    spectra[gid] *= csf(k / width, k % width);
}
