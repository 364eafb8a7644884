#version 460
// Adds the weighted statistics differences of a group of log-Gabor bands (appear_blocks.comp)
// into the cells, in band order (from zero for the first group, onto the cells after), and
// after the last group (sum_cells) writes, per workgroup, the crop-weighted sum of its
// squared cells: the partials of the appearance norm the host adds in f64. Only the kept
// blocks (in_cells) count. Workgroup (cells of one pair, 0, pair).
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Diffs { float diffs[]; };  // [p * band_count + b][block]
layout(set = 0, binding = 1) buffer Cells { float cells[]; };
layout(set = 0, binding = 2) writeonly buffer Partials { float partials[]; };  // [p][workgroup]

shared float subgroup_sums[64];

void main() {
    uint p = gl_WorkGroupID.z;
    uint nb = blocks();
    uint b = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint bx = b % blocks_x, by = b / blocks_x;
    // Only the kept blocks have statistics (appear_blocks.comp).
    bool valid = b < nb && in_cells(bx, by);
    float acc = 0.0;
    if (valid) {
        uint cell = p * nb + b;
        acc = accumulate != 0u ? cells[cell] : 0.0;
        for (uint k = 0u; k < band_count; k++) acc += diffs[(p * band_count + k) * nb + b];
        cells[cell] = acc;
    }
    if (sum_cells == 0u) return;
    uint crop = crop_overlap(int(STRIDE * by) + origin_y, full_height) * crop_overlap(int(STRIDE * bx) + origin_x, full_width);
    float weighted = valid ? acc * acc * float(crop) : 0.0;
    weighted = subgroupAdd(weighted);
    if (subgroupElect()) subgroup_sums[gl_SubgroupID] = weighted;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float total = 0.0;
        for (uint s = 0u; s < gl_NumSubgroups; s++) total += subgroup_sums[s];
        partials[p * gl_NumWorkGroups.x + gl_WorkGroupID.x] = total;
    }
}
