// Shared layout of the EM fitter's kernels (apps/smoe/src/fit.rs). A raw record is pi,
// mu[D], packed lower covariance; a prepared record is mu[D], the packed lower Cholesky
// factor L of the covariance with 1/L_ii on the diagonal, and the log-constant
// c = ln pi - sum ln L_ii - (D/2) ln 2pi.
#ifndef EM_GLSL
#define EM_GLSL

layout(constant_id = 1) const uint D = 5;   // joint dimensions p + 3
const uint RAW_STRIDE = 1u + D + D * (D + 1u) / 2u;
const uint EM_STRIDE = D + D * (D + 1u) / 2u + 1u;
const uint OFF_L = D;
const uint OFF_C = D + D * (D + 1u) / 2u;

uint packed_index(uint i, uint j) {
    return i >= j ? i * (i + 1u) / 2u + j : j * (j + 1u) / 2u + i;
}

layout(push_constant) uniform Push {
    uint samples;
    uint kernels;
    uint per_group;   // samples per workgroup in the E-step partial sums
    uint pad;
    float reg[8];     // covariance regularisation added to each diagonal entry
    // The culled passes (images): the frame and its tile lists (em_estep_tiles,
    // em_mstep_boxes), and the renderer's culling constants.
    uint width;
    uint height;
    uint tiles_x;
    uint capacity;    // length of the tile-list buffer
    float span;
    float margin;
} pc;

// Log-density of sample z (D values) under the prepared record at rec[base..].
#define EM_LOG_DENSITY(rec, base, z, out_q)                                        \
    {                                                                              \
        float y_[7];                                                               \
        out_q = 0.0;                                                               \
        for (uint i_ = 0u; i_ < D; i_++) {                                         \
            float a_ = z[i_] - rec[base + i_];                                     \
            for (uint m_ = 0u; m_ < i_; m_++) a_ -= rec[base + OFF_L + packed_index(i_, m_)] * y_[m_]; \
            y_[i_] = a_ * rec[base + OFF_L + packed_index(i_, i_)];               \
            out_q += y_[i_] * y_[i_];                                              \
        }                                                                          \
    }

#endif
