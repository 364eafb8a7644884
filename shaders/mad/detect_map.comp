#version 460
// The detection map msk .* lmse for a 16x16 tile of pixels of one pair:
// - lmse = imfilter((ref - dst).^2, ones(16)/256, 'symmetric', 'same', 'conv'), i.e. the mean
//   over offsets -7..=8 with mirrored borders, as two separable passes in shared memory;
// - msk from the pixel's cell: the block's statistics, the minimum 8x8 deviation over the
//   neighbours ical_std.c reads, and the visibility rule; zero past the last cell.
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x = 16, local_size_y = 16) in;
layout(set = 0, binding = 0) readonly buffer SqDiff { float sqdiff[]; };
layout(set = 0, binding = 1) readonly buffer Blocks { vec4 block_stats[]; };
layout(set = 0, binding = 2) writeonly buffer Map { float detection_map[]; };

const uint SIDE = 16u;
const int LOW = 7;  // offsets -7..=8: the centre of an even kernel sits at floor((16+1)/2)
const uint SPAN = SIDE + BLOCK - 1u;
shared float s_sq[SPAN * SPAN];
shared float s_rows[SPAN * SIDE];

int mirror(int i, uint n) {
    int m = int(n);
    i = i < 0 ? -i - 1 : i;
    return i >= m ? 2 * m - 1 - i : i;
}

// The pixel of these images holding the whole image's mirrored pixel at position i of this
// axis (origin + i in the whole image: the images are a wrapped window of it). For the kept
// cells' pixels (CPU: local_mse over the whole image) it lies within the window; others clamp.
uint mirrored(int i, int origin, uint full, uint size) {
    return uint(clamp(mirror(origin + i, full) - origin, 0, int(size) - 1));
}

float mask_of(uint p, uint bx, uint by) {
    uint base = p * blocks();
    vec4 b = block_stats[base + by * blocks_x + bx];
    float small = b.z;
    bool right = right_neighbour(bx);
    bool lower = lower_neighbour(by);
    if (right) small = min(small, block_stats[base + by * blocks_x + bx + 1u].z);
    if (lower) small = min(small, block_stats[base + (by + 1u) * blocks_x + bx].z);
    if (right && lower) small = min(small, block_stats[base + (by + 1u) * blocks_x + bx + 1u].z);
    return visibility(b.x, b.y, small);
}

void main() {
    uint p = gl_WorkGroupID.z;
    uint n = pixels();
    int x0 = int(gl_WorkGroupID.x * SIDE) - LOW;
    int y0 = int(gl_WorkGroupID.y * SIDE) - LOW;
    uint local = gl_LocalInvocationIndex;
    for (uint t = local; t < SPAN * SPAN; t += SIDE * SIDE) {
        uint x = mirrored(x0 + int(t % SPAN), origin_x, full_width, width);
        uint y = mirrored(y0 + int(t / SPAN), origin_y, full_height, height);
        s_sq[t] = sqdiff[p * n + y * width + x];
    }
    barrier();
    for (uint t = local; t < SPAN * SIDE; t += SIDE * SIDE) {
        uint r = t / SIDE;
        uint c = t % SIDE;
        float sum = 0.0;
        for (uint k = 0u; k < BLOCK; k++) sum += s_sq[r * SPAN + c + k];
        s_rows[t] = sum;
    }
    barrier();
    uint x = gl_WorkGroupID.x * SIDE + gl_LocalInvocationID.x;
    uint y = gl_WorkGroupID.y * SIDE + gl_LocalInvocationID.y;
    if (x >= width || y >= height) return;
    float lmse = 0.0;
    for (uint k = 0u; k < BLOCK; k++) lmse += s_rows[(gl_LocalInvocationID.y + k) * SIDE + gl_LocalInvocationID.x];
    lmse /= float(BLOCK * BLOCK);
    uint bx = x / STRIDE;
    uint by = y / STRIDE;
    float mask = in_cells(bx, by) ? mask_of(p, bx, by) : 0.0;
    detection_map[p * n + y * width + x] = mask * lmse;
}
