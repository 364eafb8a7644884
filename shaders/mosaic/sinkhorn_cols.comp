#version 460
// SoftAssign column pass: adds the row pass's per-block column sums and the outlier row's
// entry O[j] = exp(clamp(g[j] / t)) (an unused tile costs 0), then scales the column to the
// tile's capacity N (the uses it may have, --repeat): g[j] -= t (ln(colsum + O[j]) - ln N).
// A workgroup owns COLUMNS consecutive columns; its invocations form workgroup_size / COLUMNS
// slices, slice s adding blocks s, s + slices, ... so every block row is read coalesced and
// many workgroups share the blocks; the slices are then added in shared memory.
#include "common.glsl"
#include "sinkhorn_column.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint COLUMNS = 32;

layout(set = 0, binding = 0) readonly buffer Partials { float partials[]; };
layout(set = 0, binding = 1) buffer ColPotentials { float g[]; };
layout(push_constant) uniform Push {
    uint n;
    uint blocks;
    float t;
    float clamp_;
    float log_capacity;
};

shared float slice_sums[gl_WorkGroupSize.x];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint c = lid % COLUMNS;
    uint slice = lid / COLUMNS;
    uint slices = gl_WorkGroupSize.x / COLUMNS;
    uint j = linear_group_id() * COLUMNS + c;
    float s = 0.0;
    if (j < n) {
        for (uint b = slice; b < blocks; b += slices) s += partials[b * n + j];
    }
    slice_sums[lid] = s;
    barrier();
    if (slice != 0u || j >= n) return;
    float total = 0.0;
    for (uint q = 0; q < slices; q++) total += slice_sums[q * COLUMNS + c];
    g[j] = normalised_column(g[j], total, t, clamp_, log_capacity);
}
