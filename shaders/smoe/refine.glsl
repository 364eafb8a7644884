// Shared by the refinement's own passes (refine_expand, refine_loss, refine_adam): the
// optimised parameters' layout per kernel (apps/smoe/src/refine/mod.rs, `Params`) and the
// push constants. Per kernel, STRIDE floats: centre in pixels [P], log-diagonal of the
// precision factor in pixel units [P], its shears relative to the diagonal [P(P-1)/2, row by
// row], ln pi, mu_Y [3], G [3][P]. The gradient record (refine_grad, GRAD_STRIDE floats)
// has the natural parameters at the same offsets: dmu_X, dU packed lower, dc, dmu_Y, dG.
#ifndef REFINE_GLSL
#define REFINE_GLSL

#include "common.glsl"
#include "bound.glsl"

layout(constant_id = 1) const uint P = 2;

const uint TRI = P * (P + 1u) / 2u;
const uint D = P + 3u;
const uint RAW_STRIDE = 1u + D + D * (D + 1u) / 2u;
const uint S_OFF = P;
const uint N_OFF = 2u * P;
const uint THETA = P + TRI;
const uint MUY = THETA + 1u;
const uint G_OFF = MUY + 3u;
const uint STRIDE = G_OFF + 3u * P;
const uint GRAD_STRIDE = P == 2u ? 16u : 32u;

// How far below the largest ln pi a prior may go (PRIOR_RANGE on the host), and the clamps
// of the other values (refine.rs).
const float PRIOR_RANGE = 60.0;
const float MAX_LOG_DIAG = 1.3862943611198906, MAX_SHEAR = 8.0, MAX_COLOUR = 4.0, MAX_SLOPE = 8.0;

layout(push_constant) uniform Push {
    uint kernels;
    uint step;         // the step's index: slot of the loss and prior maximum it uses
    uint update;       // adam: 1 to take a step (0: only keep the best parameters)
    uint floor_prior;  // expand: 1 to raise ln pi to the largest minus PRIOR_RANGE
    vec4 extent;       // pixels per coordinate axis
    float lr;          // adam: learning rate of this step
    float c1;          // adam: bias corrections 1 - beta^t
    float c2;
    float min_log_diag;
    uint width;        // loss: pixels of a view
    uint height;
    uint view;         // loss phase 0: the view's index
    uint count;        // loss: partial sums per view (phase 0), all partial sums (phase 1)
    uint phase;
    uint quantise;     // expand: 1 to expand the parameters as the .smc file stores them
    float qstep[6];    // expand: the step of each group (centre, log-diagonal, shear, prior, colour, slope)
} pc;

// Packed lower-triangular index of (i, j), i >= j.
uint tri(uint i, uint j) {
    return i * (i + 1u) / 2u + j;
}

// Index of the shear of row i, column m < i, within the shears.
uint shear(uint i, uint m) {
    return i * (i - 1u) / 2u + m;
}

#endif
