#version 460
// Mosaic rendering: output cell k (row-major over the grid) shows thumbnail k, resampled
// bilinearly (pixel centres aligned, edges clamped) from thumb_w x thumb_h to cell_w x
// cell_h. Thumbnails and output are packed RGBA8 (one uint per pixel).
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Thumbs { uint thumbs[]; };
layout(set = 0, binding = 1) writeonly buffer Image { uint image[]; };
layout(push_constant) uniform Push {
    uint cols;
    uint rows;
    uint cell_w;
    uint cell_h;
    uint thumb_w;
    uint thumb_h;
};

vec4 texel(uint base, int x, int y) {
    x = clamp(x, 0, int(thumb_w) - 1);
    y = clamp(y, 0, int(thumb_h) - 1);
    return unpackUnorm4x8(thumbs[base + uint(y) * thumb_w + uint(x)]);
}

void main() {
    uint width = cols * cell_w;
    uint index = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= width * rows * cell_h) return;
    uint y = index / width;
    uint x = index - y * width;
    uint cell = (y / cell_h) * cols + x / cell_w;
    float sx = (float(x % cell_w) + 0.5) * float(thumb_w) / float(cell_w) - 0.5;
    float sy = (float(y % cell_h) + 0.5) * float(thumb_h) / float(cell_h) - 0.5;
    float fx = floor(sx);
    float fy = floor(sy);
    float ax = sx - fx;
    float ay = sy - fy;
    uint base = cell * thumb_w * thumb_h;
    int x0 = int(fx);
    int y0 = int(fy);
    vec4 top = mix(texel(base, x0, y0), texel(base, x0 + 1, y0), ax);
    vec4 bottom = mix(texel(base, x0, y0 + 1), texel(base, x0 + 1, y0 + 1), ax);
    vec4 c = mix(top, bottom, ay);
    image[index] = packUnorm4x8(vec4(c.rgb, 1.0));
}
