#version 460
// Per kernel: the raw record (pi, mu, joint covariance) of the optimised parameters, which
// the renderer then prepares as it prepares a loaded model. U (normalised coordinates) has
// rows exp(s_i) (E_i on the diagonal, shear_im E_m below it); L = U^-1, S_XX = L L^T,
// S_XY = L G^T, S_YY = G G^T + the conditional colour covariance kept from EM.
// pi = exp(ln pi - the largest ln pi) (the renderer's softmax does not see the scale). With
// floor_prior, first raises ln pi to the largest minus PRIOR_RANGE and stores it (the
// host's `project`, which needs the maximum over all kernels that refine_adam gathered).
// With quantise, the record is that of the values as the .smc file stores them (each
// rounded to its group's step within its range, ln pi relative to the largest; the host's
// `codec::quantised`): the forward and backward passes see the quantised model, Adam moves
// the unquantised values (a straight-through estimate of the quantiser's gradient).
#include "refine.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer V { float v[]; };
layout(set = 0, binding = 1) readonly buffer Resid { float resid[]; };
layout(set = 0, binding = 2) readonly buffer Thmax { uint thmax[]; };
layout(set = 0, binding = 3) writeonly buffer Raw { float raw[]; };

// Value i (theta: ln pi) of a kernel as expanded: quantised with its group's step within
// its range when pc.quantise is set (`codec::Quantiser`), else as it is.
float stored(uint i, float x, float top) {
    if (pc.quantise == 0u) return x;
    uint g;
    float lo, hi;
    if (i < S_OFF) {
        g = 0u; lo = -pc.extent[i]; hi = 2.0 * pc.extent[i];
    } else if (i < N_OFF) {
        g = 1u; lo = pc.min_log_diag; hi = MAX_LOG_DIAG;
    } else if (i < THETA) {
        g = 2u; lo = -MAX_SHEAR; hi = MAX_SHEAR;
    } else if (i == THETA) {
        g = 3u; lo = -PRIOR_RANGE; hi = 0.0; x -= top;
    } else if (i < G_OFF) {
        g = 4u; lo = -MAX_COLOUR; hi = MAX_COLOUR;
    } else {
        g = 5u; lo = -MAX_SLOPE; hi = MAX_SLOPE;
    }
    float s = pc.qstep[g];
    float q = clamp(round(x / s), ceil(lo / s), floor(hi / s)) * s;
    return i == THETA ? q + top : q;
}

void main() {
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k >= pc.kernels) return;
    uint o = k * STRIDE, rb = k * RAW_STRIDE;
    float top = key_float(thmax[pc.step]);
    float theta = v[o + THETA];
    if (pc.floor_prior == 1u) {
        theta = max(theta, top - PRIOR_RANGE);
        v[o + THETA] = theta;
    }
    float w[STRIDE];
    for (uint i = 0u; i < STRIDE; i++) w[i] = stored(i, i == THETA ? theta : v[o + i], top);
    theta = w[THETA];
    float U[4][4], L[4][4];
    for (uint i = 0u; i < P; i++) {
        float e = exp(w[S_OFF + i]);
        U[i][i] = e * pc.extent[i];
        for (uint m = 0u; m < i; m++) U[i][m] = e * w[N_OFF + shear(i, m)] * pc.extent[m];
    }
    for (uint col = 0u; col < P; col++) {
        for (uint i = col; i < P; i++) {
            float s = i == col ? 1.0 : 0.0;
            for (uint m = col; m < i; m++) s -= U[i][m] * L[m][col];
            L[i][col] = s / U[i][i];
        }
    }
    raw[rb] = exp(theta - top);
    for (uint i = 0u; i < P; i++) raw[rb + 1u + i] = w[i] / pc.extent[i];
    for (uint c = 0u; c < 3u; c++) raw[rb + 1u + P + c] = w[MUY + c];
    uint cb = rb + 1u + D;
    for (uint a = 0u; a < D; a++) {
        for (uint b = 0u; b <= a; b++) {
            float s = 0.0;
            if (a < P) {
                for (uint t = 0u; t <= b; t++) s += L[a][t] * L[b][t];
            } else if (b < P) {
                for (uint t = 0u; t <= b; t++) s += L[b][t] * w[G_OFF + (a - P) * P + t];
            } else {
                for (uint t = 0u; t < P; t++) s += w[G_OFF + (a - P) * P + t] * w[G_OFF + (b - P) * P + t];
                s += resid[k * 6u + tri(a - P, b - P)];
            }
            raw[cb + tri(a, b)] = s;
        }
    }
}
