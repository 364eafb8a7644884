#version 460
// Mosaic rendering, one band of output rows per dispatch: output cell k (row-major over the
// grid) shows thumbnail tiles[k], resampled bilinearly (pixel centres aligned, edges
// clamped) from thumb_w x thumb_h to cell_w x cell_h, then each channel c mapped by the
// cell's tint: gain[c] v + offset[c] (tints[6k .. 6k + 6] = gain rgb, offset rgb).
// Thumbnails and output are packed RGBA8 (one uint per pixel); each used thumbnail is held
// once however many cells show it.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Thumbs { uint thumbs[]; };
layout(set = 0, binding = 1) readonly buffer Tiles { uint tiles[]; };
layout(set = 0, binding = 2) readonly buffer Tints { float tints[]; };
layout(set = 0, binding = 3) writeonly buffer Image { uint image[]; };
layout(push_constant) uniform Push {
    uint cols;
    uint cell_w;
    uint cell_h;
    uint thumb_w;
    uint thumb_h;
    uint y0;
    uint band_rows;
};

vec4 texel(uint base, int x, int y) {
    x = clamp(x, 0, int(thumb_w) - 1);
    y = clamp(y, 0, int(thumb_h) - 1);
    return unpackUnorm4x8(thumbs[base + uint(y) * thumb_w + uint(x)]);
}

void main() {
    uint width = cols * cell_w;
    uint index = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= width * band_rows) return;
    uint y = y0 + index / width;
    uint x = index % width;
    uint cell = (y / cell_h) * cols + x / cell_w;
    float sx = (float(x % cell_w) + 0.5) * float(thumb_w) / float(cell_w) - 0.5;
    float sy = (float(y % cell_h) + 0.5) * float(thumb_h) / float(cell_h) - 0.5;
    float fx = floor(sx);
    float fy = floor(sy);
    float ax = sx - fx;
    float ay = sy - fy;
    uint base = tiles[cell] * thumb_w * thumb_h;
    int x0 = int(fx);
    int y0_ = int(fy);
    vec4 top = mix(texel(base, x0, y0_), texel(base, x0 + 1, y0_), ax);
    vec4 bottom = mix(texel(base, x0, y0_ + 1), texel(base, x0 + 1, y0_ + 1), ax);
    vec3 c = mix(top, bottom, ay).rgb;
    uint t = cell * 6u;
    vec3 gain = vec3(tints[t], tints[t + 1u], tints[t + 2u]);
    vec3 offset = vec3(tints[t + 3u], tints[t + 4u], tints[t + 5u]);
    image[index] = packUnorm4x8(vec4(gain * c + offset, 1.0));
}
