#version 460
// Per kernel: turns a raw record (pi, mu, covariance) into what the renderer evaluates per
// pixel. fast (ROBUST = 0): closed-form inverse of the coordinate covariance (2x2 directly,
// 4x4 by 2x2 blocks and the Schur complement), A = S_YX S_XX^-1. robust (ROBUST = 1):
// Cholesky factor L of S_XX (diagonal stored as 1/L_ii) and B = L^-1 S_XY, so that the expert is mu_Y + B^T (L^-1 d).
#include "common.glsl"
#include "smoe.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Raw { float raw[]; };
layout(set = 0, binding = 1) writeonly buffer Prepared { float prep[]; };

float cov(uint base, uint i, uint j) {
    return raw[base + 1u + D + packed_index(i, j)];
}

void main() {
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k >= pc.kernels) return;
    uint rb = k * RAW_STRIDE;
    uint pb = k * PREP_STRIDE;
    float pi = raw[rb];
    for (uint i = 0u; i < P; i++) prep[pb + i] = raw[rb + 1u + i];
    for (uint c = 0u; c < 3u; c++) prep[pb + OFF_MUY + c] = raw[rb + 1u + P + c];

    float logdet;
    float g2 = 0.0;
    if (ROBUST == 0u) {
        float inv[4][4];
        if (P == 2u) {
            float a = cov(rb, 0u, 0u), b = cov(rb, 1u, 0u), d = cov(rb, 1u, 1u);
            float det = a * d - b * b;
            inv[0][0] = d / det; inv[0][1] = -b / det; inv[1][0] = -b / det; inv[1][1] = a / det;
            logdet = log(det);
        } else {
            mat2 A = mat2(cov(rb, 0u, 0u), cov(rb, 1u, 0u), cov(rb, 0u, 1u), cov(rb, 1u, 1u));
            // B (rows: x, y; columns: u, v), stored column-major: B[col][row].
            mat2 B = mat2(cov(rb, 0u, 2u), cov(rb, 1u, 2u), cov(rb, 0u, 3u), cov(rb, 1u, 3u));
            mat2 Dm = mat2(cov(rb, 2u, 2u), cov(rb, 3u, 2u), cov(rb, 2u, 3u), cov(rb, 3u, 3u));
            mat2 Ai = inverse(A);
            mat2 S = Dm - transpose(B) * Ai * B;
            mat2 Si = inverse(S);
            mat2 TR = -(Ai * B * Si);
            mat2 TL = Ai - TR * transpose(B) * Ai;
            for (uint i = 0u; i < 2u; i++) {
                for (uint j = 0u; j < 2u; j++) {
                    inv[i][j] = TL[j][i];
                    inv[i][j + 2u] = TR[j][i];
                    inv[j + 2u][i] = TR[j][i];
                    inv[i + 2u][j + 2u] = Si[j][i];
                }
            }
            logdet = log(determinant(A)) + log(determinant(S));
        }
        for (uint i = 0u; i < P; i++)
            for (uint j = 0u; j <= i; j++) prep[pb + OFF_MAT + packed_index(i, j)] = inv[i][j];
        for (uint c = 0u; c < 3u; c++) {
            for (uint i = 0u; i < P; i++) {
                float a = 0.0;
                for (uint j = 0u; j < P; j++) a += cov(rb, P + c, j) * inv[j][i];
                prep[pb + OFF_REG + c * P + i] = a;
                g2 += a * cov(rb, i, P + c);
            }
        }
    } else {
        float L[4][4];
        logdet = 0.0;
        for (uint i = 0u; i < P; i++) {
            for (uint j = 0u; j <= i; j++) {
                float s = cov(rb, i, j);
                for (uint m = 0u; m < j; m++) s -= L[i][m] * L[j][m];
                if (i == j) {
                    L[i][i] = sqrt(max(s, 1e-30));
                    logdet += 2.0 * log(L[i][i]);
                } else {
                    L[i][j] = s / L[j][j];
                }
                // The renderer multiplies by the diagonal's reciprocal instead of dividing.
                prep[pb + OFF_MAT + packed_index(i, j)] = i == j ? 1.0 / L[i][i] : L[i][j];
            }
        }
        for (uint c = 0u; c < 3u; c++) {
            float z[4];
            for (uint i = 0u; i < P; i++) {
                float s = cov(rb, i, P + c);
                for (uint m = 0u; m < i; m++) s -= L[i][m] * z[m];
                z[i] = s / L[i][i];
                prep[pb + OFF_REG + c * P + i] = z[i];
                g2 += z[i] * z[i];
            }
        }
    }
    prep[pb + OFF_C] = log(pi) - 0.5 * logdet - 0.5 * float(P) * log(6.283185307179586);
    prep[pb + OFF_G] = sqrt(max(g2, 0.0));
    for (uint i = OFF_G + 1u; i < PREP_STRIDE; i++) prep[pb + i] = 0.0;
}
