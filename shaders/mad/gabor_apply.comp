#version 460
// The log-Gabor bands [band_first, band_first + band_count) of every image of the chunk in
// one dispatch: bands[(p * band_count + b) * 2 + i] = spectra[2p + i] * log-Gabor(band_first + b),
// the filter evaluated on the fly once per bin and band (one invocation per bin, looping over
// the group's bands and the chunk's images), so one batched inverse FFT takes them all.
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Spectra { vec2 spectra[]; };
layout(set = 0, binding = 1) writeonly buffer Bands { vec2 bands[]; };

void main() {
    uint n = pixels();
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= n) return;
    for (uint b = 0u; b < band_count; b++) {
        uint band = band_first + b;
        float f = log_gabor(gid / width, gid % width, band / GABOR_ORIENTATIONS, band % GABOR_ORIENTATIONS);
        for (uint p = 0u; p < pairs; p++) {
            uint out_image = 2u * (p * band_count + b);
            bands[out_image * n + gid] = spectra[2u * p * n + gid] * f;
            bands[(out_image + 1u) * n + gid] = spectra[(2u * p + 1u) * n + gid] * f;
        }
    }
}
