#version 460
// Block statistics of ical_stat on the magnitudes of a group of log-Gabor bands (the group's
// inverse FFTs, one batch), for the reference and the distorted image of each pair: standard
// deviation (divisor 255), skewness and kurtosis (divisor 256, zero on flat blocks), two-pass
// from a shared-memory tile. Each block adds weight(scale) * (|d std| + 2 |d skew| + |d kurt|)
// of every band of the group to its cell (lo_index), in band order in a register, so a whole
// group costs one read of its bands and one write of the cells. After the last group
// (sum_cells), each workgroup also writes the crop-weighted sum of its squared cells, the
// partial of the appearance norm the host adds in f64.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;  // TILE * TILE invocations
layout(constant_id = 1) const uint TILE = 8u;
// Image (p * band_count + b) * 2 + i: band b of the group, reference (i = 0) or distorted.
layout(set = 0, binding = 0) readonly buffer Bands { vec2 bands[]; };
layout(set = 0, binding = 1) buffer Cells { float cells[]; };
// Per pair, one per workgroup: tiles_y rows of tiles_x.
layout(set = 0, binding = 2) writeonly buffer Partials { float partials[]; };

const uint SPAN = STRIDE * TILE + BLOCK - STRIDE;
shared float s_img[2 * SPAN * SPAN];
shared float subgroup_sums[64];

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
    uint p = gl_WorkGroupID.z;
    uint n = pixels();
    uint x0 = gl_WorkGroupID.x * TILE * STRIDE;
    uint y0 = gl_WorkGroupID.y * TILE * STRIDE;
    uint bx = gl_WorkGroupID.x * TILE + gl_LocalInvocationID.x % TILE;
    uint by = gl_WorkGroupID.y * TILE + gl_LocalInvocationID.x / TILE;
    // Invocations past the last block still load tiles and meet every barrier.
    bool valid = bx < blocks_x && by < blocks_y;
    uint cell = p * blocks() + by * blocks_x + bx;
    uint origin = (STRIDE * (gl_LocalInvocationID.x / TILE)) * SPAN + STRIDE * (gl_LocalInvocationID.x % TILE);
    uint phase = gl_LocalInvocationID.x / TILE;
    float acc = (valid && accumulate != 0u) ? cells[cell] : 0.0;
    for (uint b = 0u; b < band_count; b++) {
        uint image = 2u * (p * band_count + b);
        barrier();  // the previous band's statistics are done with the tile
        for (uint t = gl_LocalInvocationID.x; t < 2u * SPAN * SPAN; t += gl_WorkGroupSize.x) {
            uint img = t / (SPAN * SPAN);
            uint u = t - img * SPAN * SPAN;
            uint x = x0 + u % SPAN;
            uint y = y0 + u / SPAN;
            s_img[t] = (x < width && y < height) ? length(bands[(image + img) * n + y * width + x]) : 0.0;
        }
        barrier();
        if (valid) {
            vec3 r = stats(origin, phase);
            vec3 d = stats(SPAN * SPAN + origin, phase);
            uint scale = (band_first + b) / GABOR_ORIENTATIONS;
            acc += SCALE_WEIGHTS[scale] * (abs(r.x - d.x) + SKEW_WEIGHT * abs(r.y - d.y) + abs(r.z - d.z));
        }
    }
    if (valid) cells[cell] = acc;
    if (sum_cells == 0u) return;
    float weighted = valid ? acc * acc * float(crop_overlap(STRIDE * by, height) * crop_overlap(STRIDE * bx, width)) : 0.0;
    weighted = subgroupAdd(weighted);
    if (subgroupElect()) subgroup_sums[gl_SubgroupID] = weighted;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float total = 0.0;
        for (uint s = 0u; s < gl_NumSubgroups; s++) total += subgroup_sums[s];
        partials[(p * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x] = total;
    }
}
