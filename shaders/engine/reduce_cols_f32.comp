#version 460
// Column sums of a row-major m x n f32 matrix, coalesced: a workgroup is a tile of `tx`
// consecutive columns by WG/tx rows of invocations and covers `rows_per_chunk` rows; each
// invocation sums its column over every (WG/tx)-th row of the chunk (Kahan), then the
// workgroup adds its rows of invocations by a tree. Output: out[chunk * n + column]. With
// several chunks the host runs this kernel again on the chunks x n partials.
#include "common.glsl"
#include "kahan.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Matrix { float a[]; };
layout(set = 0, binding = 1) writeonly buffer Sums { float sums[]; };
layout(push_constant) uniform Push { uint m; uint n; uint rows_per_chunk; uint tx; uint col_groups; };

shared float s_sums[gl_WorkGroupSize.x];

void main() {
    uint group = linear_group_id();
    uint chunk = group / col_groups;
    uint ty_count = gl_WorkGroupSize.x / tx;
    uint tx_i = gl_LocalInvocationID.x % tx;
    uint ty_i = gl_LocalInvocationID.x / tx;
    uint col = (group % col_groups) * tx + tx_i;
    uint row_begin = chunk * rows_per_chunk;
    uint row_end = min(row_begin + rows_per_chunk, m);
    Kahan acc = kahan_new();
    if (col < n) {
        for (uint r = row_begin + ty_i; r < row_end; r += ty_count) kahan_add(acc, a[r * n + col]);
    }
    s_sums[gl_LocalInvocationID.x] = acc.sum - acc.c;
    barrier();
    for (uint stride = ty_count / 2u; stride > 0u; stride /= 2u) {
        if (ty_i < stride) s_sums[gl_LocalInvocationID.x] += s_sums[gl_LocalInvocationID.x + stride * tx];
        barrier();
    }
    if (ty_i == 0u && col < n) sums[chunk * n + col] = s_sums[tx_i];
}
