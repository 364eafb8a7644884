// In-place n-mode products of one 5D patch held in shared memory, shared by the light-field
// encode and decode kernels. The includer declares (before including):
//   spec constants P (samples per patch), D (floats per dictionary), M0..M4 (mode sizes),
//   shared float X[P] (the patch), shared float Mats[D] (the current dictionary),
//   and a macro MODE_INPUT(i) giving sample i of the kernel's input for the first product.
// Matrices are m x m row-major with basis vectors in the columns, modes in storage order
// (view row, view column, pixel row, pixel column, colour).

#ifndef LIGHTFIELD_MODES_GLSL
#define LIGHTFIELD_MODES_GLSL

const uint MAX_MODE = 16u;
const uint S4 = 1u;
const uint S3 = M4;
const uint S2 = M4 * M3;
const uint S1 = M4 * M3 * M2;
const uint S0 = M4 * M3 * M2 * M1;
const uint O0 = 0u;
const uint O1 = M0 * M0;
const uint O2 = O1 + M1 * M1;
const uint O3 = O2 + M2 * M2;
const uint O4 = O3 + M3 * M3;

// One invocation per fiber: it reads the whole fiber into registers, then writes the m
// products back in place (fibers are disjoint, so no other invocation reads them). All
// invocations walk the matrix in the same order, so its reads broadcast from shared memory.
// analysis: X = X x_n U^T (coefficients); otherwise X = X x_n U (samples).
void mode_product(uint m, uint s, uint moff, bool analysis, bool from_input, uint input_base) {
    uint fibers = P / m;
    for (uint f = gl_LocalInvocationID.x; f < fibers; f += gl_WorkGroupSize.x) {
        uint outer = f / s;
        uint base = outer * m * s + (f - outer * s);
        float v[MAX_MODE];
        [[unroll]] for (uint t = 0u; t < m; t++) {
            v[t] = from_input ? MODE_INPUT(input_base + base + t * s) : X[base + t * s];
        }
        [[unroll]] for (uint i = 0u; i < m; i++) {
            float acc = 0.0;
            [[unroll]] for (uint t = 0u; t < m; t++) {
                acc += (analysis ? Mats[moff + t * m + i] : Mats[moff + i * m + t]) * v[t];
            }
            X[base + i * s] = acc;
        }
    }
    barrier();
}

// All five products, mode 0 first (the CPU reference uses the same order).
void all_modes(bool analysis, bool from_input, uint input_base) {
    mode_product(M0, S0, O0, analysis, from_input, input_base);
    mode_product(M1, S1, O1, analysis, false, 0u);
    mode_product(M2, S2, O2, analysis, false, 0u);
    mode_product(M3, S3, O3, analysis, false, 0u);
    mode_product(M4, S4, O4, analysis, false, 0u);
}

#endif
