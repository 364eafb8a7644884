// In-place n-mode products of one 5D patch tensor, shared by the light-field encode and
// decode kernels. The includer declares (before including):
//   spec constants P (samples per patch), D (floats per dictionary), M0..M4 (mode sizes);
//   where the tensor lives (patch_shared.glsl or patch_global.glsl): a macro X_AT(i), element
//   i of this workgroup's tensor (an lvalue), and patch_barrier(), after which every
//   invocation's writes to it are visible to the whole workgroup (patch_fence(): the same
//   without the barrier, for a barrier that follows);
//   and a macro MODE_INPUT(i) giving sample i of the kernel's input for the first product.
// In the dictionaries (global memory) matrices are m x m row-major with basis vectors in the
// columns, modes in storage order (view row, view column, pixel row, pixel column, colour).
// In shared memory (Mats, loaded by load_matrices) each matrix is stored the way its product
// reads it: output i's m weights contiguous, rows padded to a multiple of 4, so one
// invocation reads them as vec4s (a 16-byte load instead of four) in the same order.

#ifndef LIGHTFIELD_MODES_GLSL
#define LIGHTFIELD_MODES_GLSL

const uint MAX_MODE = 16u;
const uint S4 = 1u;
const uint S3 = M4;
const uint S2 = M4 * M3;
const uint S1 = M4 * M3 * M2;
const uint S0 = M4 * M3 * M2 * M1;
// Offsets of the matrices in the dictionaries (m x m each).
const uint O0 = 0u;
const uint O1 = M0 * M0;
const uint O2 = O1 + M1 * M1;
const uint O3 = O2 + M2 * M2;
const uint O4 = O3 + M3 * M3;
// Padded rows in shared memory: R_n floats per output, at vec4 offset V_n.
const uint R0 = (M0 + 3u) / 4u;
const uint R1 = (M1 + 3u) / 4u;
const uint R2 = (M2 + 3u) / 4u;
const uint R3 = (M3 + 3u) / 4u;
const uint R4 = (M4 + 3u) / 4u;
const uint V0 = 0u;
const uint V1 = V0 + M0 * R0;
const uint V2 = V1 + M1 * R1;
const uint V3 = V2 + M2 * R2;
const uint V4 = V3 + M3 * R3;
const uint VECS = V4 + M4 * R4;
shared vec4 Mats[VECS];

// Dictionary k's matrices into Mats, arranged for analysis (weights of output i: column i
// of U) or synthesis (row i of U); padding is zero. Ends with a barrier.
void load_matrix(uint k, bool analysis, uint m, uint o, uint v, uint r) {
    for (uint e = gl_LocalInvocationID.x; e < m * r * 4u; e += gl_WorkGroupSize.x) {
        uint i = e / (4u * r), t = e - i * 4u * r;
        float w = 0.0;
        if (t < m) w = dicts[k * D + o + (analysis ? t * m + i : i * m + t)];
        Mats[v + e / 4u][e & 3u] = w;
    }
}

void load_matrices(uint k, bool analysis) {
    load_matrix(k, analysis, M0, O0, V0, R0);
    load_matrix(k, analysis, M1, O1, V1, R1);
    load_matrix(k, analysis, M2, O2, V2, R2);
    load_matrix(k, analysis, M3, O3, V3, R3);
    load_matrix(k, analysis, M4, O4, V4, R4);
    barrier();
}

// One invocation per fiber: it reads the whole fiber into registers, then writes the m
// products back in place (fibers are disjoint, so no other invocation reads them). All
// invocations walk the matrix in the same order, so its reads broadcast from shared memory.
// Mats holds the product's weights (load_matrices): X = X x_n U^T (analysis) or X x_n U.
void mode_product(uint m, uint s, uint v, uint r, bool from_input, uint input_base) {
    uint fibers = P / m;
    for (uint f = gl_LocalInvocationID.x; f < fibers; f += gl_WorkGroupSize.x) {
        uint outer = f / s;
        uint base = outer * m * s + (f - outer * s);
        float x[MAX_MODE];
        [[unroll]] for (uint t = 0u; t < m; t++) {
            x[t] = from_input ? MODE_INPUT(input_base + base + t * s) : X_AT(base + t * s);
        }
        [[unroll]] for (uint i = 0u; i < m; i++) {
            float acc = 0.0;
            [[unroll]] for (uint q = 0u; q < r; q++) {
                vec4 w = Mats[v + i * r + q];
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    if (4u * q + c < m) acc += w[c] * x[4u * q + c];
                }
            }
            X_AT(base + i * s) = acc;
        }
    }
    patch_barrier();
}

// All five products with the matrices in Mats, mode 0 first (the CPU reference uses the
// same order).
void all_modes(bool from_input, uint input_base) {
    mode_product(M0, S0, V0, R0, from_input, input_base);
    mode_product(M1, S1, V1, R1, false, 0u);
    mode_product(M2, S2, V2, R2, false, 0u);
    mode_product(M3, S3, V3, R3, false, 0u);
    mode_product(M4, S4, V4, R4, false, 0u);
}

#endif
