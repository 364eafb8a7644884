#version 460
// Block statistics of ical_stat on the magnitudes of one log-Gabor band of a group (the
// group's inverse FFTs, one batch), for the reference and the distorted image of one pair:
// standard deviation (divisor 255), skewness and kurtosis (divisor 256, zero on flat
// blocks), two-pass from a shared-memory tile. Each block writes weight(scale) *
// (|d std| + 2 |d skew| + |d kurt|) for its band; sum_bands.comp adds the group's bands into
// the cells in band order. Workgroup (tile x, tile y, pair * band_count + band): every band
// of every pair at once, so even one 512x512 pair fills the GPU.
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;  // TILE * TILE invocations
layout(constant_id = 1) const uint TILE = 8u;
// Image (p * band_count + b) * 2 + i: band b of the group, reference (i = 0) or distorted.
layout(set = 0, binding = 0) readonly buffer Bands { vec2 bands[]; };
// Per pair and band of the group (p * band_count + b), one per block.
layout(set = 0, binding = 1) writeonly buffer Diffs { float diffs[]; };

const uint SPAN = STRIDE * TILE + BLOCK - STRIDE;
shared float s_img[2 * SPAN * SPAN];

// `phase` rotates the column order per invocation so a warp's stride-4 block origins fall
// in different shared-memory banks.
vec3 stats(uint base, uint phase) {
    float mean = 0.0;
    for (uint r = 0u; r < BLOCK; r++) {
        for (uint c = 0u; c < BLOCK; c++) mean += s_img[base + r * SPAN + (c + phase) % BLOCK];
    }
    mean /= float(BLOCK * BLOCK);
    float m2 = 0.0, m3 = 0.0, m4 = 0.0;
    for (uint r = 0u; r < BLOCK; r++) {
        for (uint c = 0u; c < BLOCK; c++) {
            float d = s_img[base + r * SPAN + (c + phase) % BLOCK] - mean;
            float d2 = d * d;
            m2 += d2;
            m3 += d2 * d;
            m4 += d2 * d2;
        }
    }
    float n = float(BLOCK * BLOCK);
    float std_dev = sqrt(m2 / (n - 1.0));
    float biased = sqrt(m2 / n);
    if (biased == 0.0) return vec3(std_dev, 0.0, 0.0);
    return vec3(std_dev, (m3 / n) / (biased * biased * biased), (m4 / n) / (biased * biased * biased * biased));
}

void main() {
    uint pb = gl_WorkGroupID.z;  // p * band_count + b
    uint image = 2u * pb;
    uint n = pixels();
    // Workgroups tile the kept blocks (in_cells) only.
    uint x0 = (cells_x0 + gl_WorkGroupID.x * TILE) * STRIDE;
    uint y0 = (cells_y0 + gl_WorkGroupID.y * TILE) * STRIDE;
    for (uint t = gl_LocalInvocationID.x; t < 2u * SPAN * SPAN; t += gl_WorkGroupSize.x) {
        uint img = t / (SPAN * SPAN);
        uint u = t - img * SPAN * SPAN;
        uint x = x0 + u % SPAN;
        uint y = y0 + u / SPAN;
        s_img[t] = (x < width && y < height) ? length(bands[(image + img) * n + y * width + x]) : 0.0;
    }
    barrier();
    uint bx = cells_x0 + gl_WorkGroupID.x * TILE + gl_LocalInvocationID.x % TILE;
    uint by = cells_y0 + gl_WorkGroupID.y * TILE + gl_LocalInvocationID.x / TILE;
    if (!in_cells(bx, by)) return;
    uint origin = (STRIDE * (gl_LocalInvocationID.x / TILE)) * SPAN + STRIDE * (gl_LocalInvocationID.x % TILE);
    uint phase = gl_LocalInvocationID.x / TILE;
    vec3 r = stats(origin, phase);
    vec3 d = stats(SPAN * SPAN + origin, phase);
    uint scale = (band_first + pb % band_count) / GABOR_ORIENTATIONS;
    diffs[pb * blocks() + by * blocks_x + bx] =
        SCALE_WEIGHTS[scale] * (abs(r.x - d.x) + SKEW_WEIGHT * abs(r.y - d.y) + abs(r.z - d.z));
}
