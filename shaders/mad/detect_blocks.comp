#version 460
// Block statistics of ical_std(dst - ref, ref) on the CSF-filtered lightness: for each 16x16
// block at stride 4, the error's standard deviation (divisor 255), the reference's mean, and
// the reference's 8x8 standard deviation at the block origin (divisor 63). A workgroup
// handles TILE x TILE blocks of one pair from a shared-memory tile of both images, with
// two-pass moments as the C helper computes them. The minimum over neighbours is taken
// where the blocks are used (detect_map.comp).
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;  // TILE * TILE invocations
layout(constant_id = 1) const uint TILE = 8u;
layout(set = 0, binding = 0) readonly buffer Light { vec2 light[]; };  // [2p] ref, [2p+1] error
layout(set = 0, binding = 1) writeonly buffer Blocks { vec4 block_stats[]; };

const uint SPAN = STRIDE * TILE + BLOCK - STRIDE;
shared float s_ref[SPAN * SPAN];
shared float s_err[SPAN * SPAN];

void main() {
    uint p = gl_WorkGroupID.z;
    uint n = pixels();
    // Workgroups tile the kept blocks and one more column and row (the minimum's neighbours).
    uint x0 = (cells_x0 + gl_WorkGroupID.x * TILE) * STRIDE;
    uint y0 = (cells_y0 + gl_WorkGroupID.y * TILE) * STRIDE;
    for (uint t = gl_LocalInvocationID.x; t < SPAN * SPAN; t += gl_WorkGroupSize.x) {
        uint x = x0 + t % SPAN;
        uint y = y0 + t / SPAN;
        bool inside = x < width && y < height;
        s_ref[t] = inside ? light[2u * p * n + y * width + x].x : 0.0;
        s_err[t] = inside ? light[(2u * p + 1u) * n + y * width + x].x : 0.0;
    }
    barrier();
    uint bx = cells_x0 + gl_WorkGroupID.x * TILE + gl_LocalInvocationID.x % TILE;
    uint by = cells_y0 + gl_WorkGroupID.y * TILE + gl_LocalInvocationID.x / TILE;
    if (bx >= min(cells_x1 + 1u, blocks_x) || by >= min(cells_y1 + 1u, blocks_y)) return;
    uint origin = (STRIDE * (gl_LocalInvocationID.x / TILE)) * SPAN + STRIDE * (gl_LocalInvocationID.x % TILE);

    // Each invocation walks its block's columns starting at its own rotation, so the 32 lanes
    // of a warp (stride-4 block origins) hit 32 different shared-memory banks.
    uint phase = gl_LocalInvocationID.x / TILE;
    float mean_ref = 0.0, mean_err = 0.0, mean_small = 0.0;
    for (uint r = 0u; r < BLOCK; r++) {
        for (uint c = 0u; c < BLOCK; c++) {
            uint at = origin + r * SPAN + (c + phase) % BLOCK;
            mean_ref += s_ref[at];
            mean_err += s_err[at];
        }
    }
    for (uint r = 0u; r < SUB_BLOCK; r++) {
        for (uint c = 0u; c < SUB_BLOCK; c++) mean_small += s_ref[origin + r * SPAN + (c + phase) % SUB_BLOCK];
    }
    mean_ref /= float(BLOCK * BLOCK);
    mean_err /= float(BLOCK * BLOCK);
    mean_small /= float(SUB_BLOCK * SUB_BLOCK);
    float var_err = 0.0, var_small = 0.0;
    for (uint r = 0u; r < BLOCK; r++) {
        for (uint c = 0u; c < BLOCK; c++) {
            float d = s_err[origin + r * SPAN + (c + phase) % BLOCK] - mean_err;
            var_err += d * d;
        }
    }
    for (uint r = 0u; r < SUB_BLOCK; r++) {
        for (uint c = 0u; c < SUB_BLOCK; c++) {
            float d = s_ref[origin + r * SPAN + (c + phase) % SUB_BLOCK] - mean_small;
            var_small += d * d;
        }
    }
    block_stats[p * blocks() + by * blocks_x + bx] = vec4(
        sqrt(var_err / float(BLOCK * BLOCK - 1u)), mean_ref, sqrt(var_small / float(SUB_BLOCK * SUB_BLOCK - 1u)), 0.0);
}
