#version 460
// Per kernel and view: the 2D Gaussian that a kernel's gate becomes on the rendered view,
// in output pixel units, for culling. For light fields (P = 4) the view (u, v) is fixed,
// so the gate's quadratic form over (x, y) is that of the conditional covariance
// S' = S_aa - S_ab S_bb^-1 S_ba around mu_xy + S_ab S_bb^-1 (uv - mu_uv), plus the constant
// s = (uv - mu_uv)^T S_bb^-1 (uv - mu_uv). Record: cx, cy, S'(00, 01, 11), S'^-1(00, 01,
// 11), c, s, g, 0.
#include "common.glsl"
#include "smoe.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Raw { float raw[]; };
layout(set = 0, binding = 1) readonly buffer Prepared { float prep[]; };
layout(set = 0, binding = 2) writeonly buffer Cull { float cullrec[]; };

float cov(uint base, uint i, uint j) {
    return raw[base + 1u + D + packed_index(i, j)];
}

void main() {
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k >= pc.kernels) return;
    uint rb = k * RAW_STRIDE;
    vec2 mu = vec2(raw[rb + 1u], raw[rb + 2u]);
    mat2 S = mat2(cov(rb, 0u, 0u), cov(rb, 1u, 0u), cov(rb, 0u, 1u), cov(rb, 1u, 1u));
    float s = 0.0;
    if (P == 4u) {
        vec2 duv = vec2(pc.view_u - raw[rb + 3u], pc.view_v - raw[rb + 4u]);
        mat2 B = mat2(cov(rb, 0u, 2u), cov(rb, 1u, 2u), cov(rb, 0u, 3u), cov(rb, 1u, 3u));
        mat2 Dm = mat2(cov(rb, 2u, 2u), cov(rb, 3u, 2u), cov(rb, 2u, 3u), cov(rb, 3u, 3u));
        mat2 Di = inverse(Dm);
        vec2 w = Di * duv;
        mu += B * w;
        S -= B * Di * transpose(B);
        s = max(dot(duv, w), 0.0);
    }
    float W = float(pc.width), H = float(pc.height);
    float s00 = S[0][0] * W * W, s01 = S[1][0] * W * H, s11 = S[1][1] * H * H;
    float det = max(s00 * s11 - s01 * s01, 1e-30);
    uint cb = k * CULL_STRIDE;
    cullrec[cb + 0u] = mu.x * W;
    cullrec[cb + 1u] = mu.y * H;
    cullrec[cb + 2u] = s00;
    cullrec[cb + 3u] = s01;
    cullrec[cb + 4u] = s11;
    cullrec[cb + 5u] = s11 / det;
    cullrec[cb + 6u] = -s01 / det;
    cullrec[cb + 7u] = s00 / det;
    cullrec[cb + 8u] = prep[k * PREP_STRIDE + OFF_C];
    cullrec[cb + 9u] = s;
    cullrec[cb + 10u] = prep[k * PREP_STRIDE + OFF_G];
    cullrec[cb + 11u] = 0.0;
}
