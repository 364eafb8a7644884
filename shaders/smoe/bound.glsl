// The exact culling bound's support box (docs/formats.md, "SMoE culling bound"), shared by
// the renderer's binning, the refinement's backward pass and the EM's culled M-step. Pure
// functions of a kernel's culling record (smoe_view.comp) and the frame's constants, so
// every pass draws the same box.
#ifndef BOUND_GLSL
#define BOUND_GLSL

// Size of the culling record written by smoe_view per kernel and view.
const uint CULL_STRIDE = 12u;

// Order-preserving map of floats to uints (for atomicMax/atomicMin on floats). 0 is below
// every encoded float and means "no value".
uint float_key(float f) {
    uint b = floatBitsToUint(f);
    return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

float key_float(uint k) {
    uint b = (k & 0x80000000u) != 0u ? (k & 0x7fffffffu) : ~k;
    return uintBitsToFloat(b);
}

// Half-extents (pixels, x and y) of the box outside which exact culling drops a kernel from
// every tile: the largest r with c - r^2/2 + ln(a + g max(r,1)) >= floor - M, using
// ln(a + g r) <= ln(a + g) + r/e, turned into a box through the view's 2D Gaussian (s00,
// s11: its variances in pixels^2; s: the view's offset term). Negative when the kernel is
// dropped everywhere. `floor_key` is the smallest tile bound (smoe_floor), `span`
// the colour deviation bound a, `margin` M.
vec2 support_half_of(float c, float s, float g, float s00, float s11, uint floor_key, float span, float margin) {
    const float INV_E = 0.36787944117144233;
    float reach = c + log(span + g) - key_float(floor_key) + margin;
    if (reach < 0.0) return vec2(-1.0);
    float r = INV_E + sqrt(INV_E * INV_E + 2.0 * reach);
    float q = max(r * r - s, 0.0);
    return vec2(sqrt(q * s00), sqrt(q * s11));
}

// The pixel box (x0, y0, x1, y1), inclusive, of culling record `cb` in a width x height
// frame: the whole frame when no tile has a bound (floor_key 0), empty (x1 < x0) when the
// kernel is dropped everywhere.
#define SUPPORT_BOX(cullrec, cb, floor_key, span, margin, width, height, box)                  \
    {                                                                                         \
        box = ivec4(0, 0, int(width) - 1, int(height) - 1);                                   \
        if (floor_key != 0u) {                                                                \
            vec2 h_ = support_half_of(cullrec[cb + 8u], cullrec[cb + 9u], cullrec[cb + 10u],  \
                                      cullrec[cb + 2u], cullrec[cb + 4u], floor_key, span, margin); \
            vec2 c_ = vec2(cullrec[cb], cullrec[cb + 1u]);                                    \
            if (h_.x < 0.0) {                                                                 \
                box.z = -1;                                                                   \
            } else {                                                                          \
                box.x = max(box.x, int(floor(c_.x - h_.x)));                                  \
                box.z = min(box.z, int(ceil(c_.x + h_.x)));                                   \
                box.y = max(box.y, int(floor(c_.y - h_.y)));                                  \
                box.w = min(box.w, int(ceil(c_.y + h_.y)));                                   \
            }                                                                                 \
        }                                                                                     \
    }

#endif
