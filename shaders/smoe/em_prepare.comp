#version 460
// Per kernel: Cholesky factor of the joint covariance and the log-constant (em.glsl).
#include "common.glsl"
#include "em.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Raw { float raw[]; };
layout(set = 0, binding = 1) writeonly buffer Prepared { float rec[]; };

void main() {
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k >= pc.kernels) return;
    uint rb = k * RAW_STRIDE, pb = k * EM_STRIDE;
    float L[7][7];
    float half_logdet = 0.0;
    for (uint i = 0u; i < D; i++) {
        rec[pb + i] = raw[rb + 1u + i];
        for (uint j = 0u; j <= i; j++) {
            float s = raw[rb + 1u + D + packed_index(i, j)];
            for (uint m = 0u; m < j; m++) s -= L[i][m] * L[j][m];
            if (i == j) {
                // The M-step regularises every diagonal entry, so s > 0 up to rounding.
                L[i][i] = sqrt(max(s, 1e-30));
                half_logdet += log(L[i][i]);
                rec[pb + OFF_L + packed_index(i, i)] = 1.0 / L[i][i];
            } else {
                L[i][j] = s / L[j][j];
                rec[pb + OFF_L + packed_index(i, j)] = L[i][j];
            }
        }
    }
    rec[pb + OFF_C] = log(raw[rb]) - half_logdet - 0.5 * float(D) * log(6.283185307179586);
}
