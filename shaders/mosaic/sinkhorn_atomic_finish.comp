#version 460
// The end of a cooling iteration run by sinkhorn_atomic.comp: applies the last Sinkhorn
// iteration's column normalisation from its finished column sums, writing g slot 0 (the
// potentials), and zeroes every column-sum slot so the next cooling iteration starts clean.
// One invocation per column, so reading and writing slot 0 in place is safe.
#include "common.glsl"
#include "sinkhorn_column.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) buffer ColPotentials { float g[]; };
layout(set = 0, binding = 1) buffer ColumnSums { float sums[]; };
layout(push_constant) uniform Push {
    uint n;
    float t;
    float clamp_;
    float log_capacity;
    uint g_in;
    uint sums_read;
};

void main() {
    uint j = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (j >= n) return;
    g[j] = normalised_column(g[g_in * n + j], sums[sums_read * n + j], t, clamp_, log_capacity);
    for (uint slot = 0; slot < 3u; slot++) sums[slot * n + j] = 0.0;
}
