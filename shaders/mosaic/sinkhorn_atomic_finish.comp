#version 460
// The end of a cooling iteration run by sinkhorn_atomic.comp (and sinkhorn_scaled.comp):
// applies the last Sinkhorn iteration's column normalisation from its finished column sums,
// writing g slot 0 (the potentials), and zeroes every column-sum slot so the next cooling
// iteration starts clean. After scaled iterations (absorb = 1), g_in is slot 0 (g0, which K
// was built with), so the same formula gives g0 + t ln v, and each row's scaling u joins its
// potential: f += t ln u. One invocation per column and per row, so updates in place are safe.
#include "common.glsl"
#include "sinkhorn_column.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer ColPotentials { float g[]; };
layout(set = 0, binding = 1) buffer ColumnSums { float sums[]; };
layout(set = 0, binding = 2) buffer RowPotentials { float f[]; };
// sinkhorn_scaled.comp's row scalings (bound but unused without absorb).
layout(set = 0, binding = 3) readonly buffer RowScalings { float u[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    float t;
    float clamp_;
    float log_capacity;
    uint g_in;
    uint sums_read;
    uint absorb;
};

void main() {
    uint j = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (absorb != 0u && j < m) f[j] += t * log(u[j]);
    if (j >= n) return;
    g[j] = normalised_column(g[g_in * n + j], sums[sums_read * n + j], t, clamp_, log_capacity);
    for (uint slot = 0; slot < 3u; slot++) sums[slot * n + j] = 0.0;
}
