#version 460
// Sum of squares of the detection map over one row of the crop (BSIZE+1 : end-BSIZE-1) of
// one pair, within the kept cells: workgroup (row, 0, pair) writes one partial (zero for a
// row past the kept ones); the host adds them in f64.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Map { float detection_map[]; };
layout(set = 0, binding = 1) writeonly buffer Partials { float partials[]; };

shared float subgroup_sums[64];

// The window pixels [lo, hi) of one axis that are the kept cells' and inside the whole
// image's crop: the crop itself for a whole image (tiled.rs: Sums).
ivec2 kept(uint cell0, uint cell1, int origin, uint full) {
    return ivec2(max(int(STRIDE * cell0), int(CROP) - origin), min(int(STRIDE * cell1), int(full - CROP) - 1 - origin));
}

void main() {
    uint p = gl_WorkGroupID.z;
    ivec2 xs = kept(cells_x0, cells_x1, origin_x, full_width);
    ivec2 ys = kept(cells_y0, cells_y1, origin_y, full_height);
    int y = ys.x + int(gl_WorkGroupID.x);
    float acc = 0.0;
    if (y < ys.y) {
        uint row = p * pixels() + uint(y) * width;
        for (int x = xs.x + int(gl_LocalInvocationID.x); x < xs.y; x += int(gl_WorkGroupSize.x)) {
            float v = detection_map[row + uint(x)];
            acc += v * v;
        }
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) subgroup_sums[gl_SubgroupID] = acc;
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float total = 0.0;
        for (uint s = 0u; s < gl_NumSubgroups; s++) total += subgroup_sums[s];
        partials[p * gl_NumWorkGroups.x + gl_WorkGroupID.x] = total;
    }
}
