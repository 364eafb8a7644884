// Shared layout of SMoE kernels on the GPU (see apps/smoe/src/gpu.rs for the host side).
//
// Raw record (as uploaded, also the binary file's record): pi, mu[D], packed lower
// triangle of the D x D covariance (D = P + 3). Prepared record (written by
// smoe_prepare): mu_X[P], the coordinate block's precision (fast) or Cholesky factor
// (robust) packed lower, log-constant c, regression matrix REG[3][P], mu_Y[3], and g (the
// expert's colour change per unit Mahalanobis distance, used by culling).
#ifndef SMOE_GLSL
#define SMOE_GLSL

#include "bound.glsl"

layout(constant_id = 1) const uint P = 2;          // coordinate dimensions, 2 or 4
layout(constant_id = 2) const uint ROBUST = 0;     // 0: closed-form inverse, 1: Cholesky

const uint D = P + 3u;
const uint RAW_STRIDE = 1u + D + D * (D + 1u) / 2u;
const uint PREP_STRIDE = P == 2u ? 16u : 32u;
const uint OFF_MAT = P;
const uint OFF_C = P + P * (P + 1u) / 2u;
const uint OFF_REG = OFF_C + 1u;
const uint OFF_MUY = OFF_REG + 3u * P;
const uint OFF_G = OFF_MUY + 3u;

uint packed_index(uint i, uint j) {
    return i >= j ? i * (i + 1u) / 2u + j : j * (j + 1u) / 2u + i;
}

// Push constants shared by the view, binning, tile and render passes.
layout(push_constant) uniform Push {
    uint width;       // output pixels
    uint height;
    uint tile;        // tile (block) edge in pixels
    uint tiles_x;
    uint tiles_y;
    uint kernels;
    uint cull;        // 0 off, 1 exact, 2 relevance window
    uint phase;
    float view_u;     // normalised view position (light fields)
    float view_v;
    float span;       // a: colour deviation bound (see docs/formats.md, culling)
    float margin;     // M = ln(65536 K gain) + slack
    float window;     // relevance-window border in pixels
    uint capacity;    // length of the tile-list buffer
    uint out_format;  // 0: f32 RGB, 1: RGBA8, 2: BGRA8, 3: f32 RGB + log-sum-exp
    uint ycbcr;       // 1: experts output BT.601 YCbCr
} pc;

// Pixel-centre rectangle of tile (tx, ty) in pixel units (pixel c is centred at c + 0.5).
vec4 tile_rect(uint tx, uint ty) {
    float x0 = float(tx * pc.tile) + 0.5;
    float y0 = float(ty * pc.tile) + 0.5;
    float x1 = float(min((tx + 1u) * pc.tile, pc.width)) - 0.5;
    float y1 = float(min((ty + 1u) * pc.tile, pc.height)) - 0.5;
    return vec4(x0, y0, x1, y1);
}

// support_half_of with this frame's constants.
vec2 support_half(float c, float s, float g, float s00, float s11, uint floor_key) {
    return support_half_of(c, s, g, s00, s11, floor_key, pc.span, pc.margin);
}

#endif
