#version 460
// SoftAssign row pass (one Sinkhorn half-iteration plus the column sums of the next one).
// A workgroup owns `rows_per_block` consecutive rows; each invocation owns the columns
// j = local_id + k * workgroup_size, k < PER_THREAD, keeping their g[j], the current row's
// exponentials and the block's column sums in registers. For each row i:
//   e[j] = exp(clamp((f[i] + g[j] - (d[i][j] - alpha)) / t, -clamp_, clamp_))   (Sec. 5.1)
//   s = sum_j e[j];  f[i] -= t ln s;  colsum[j] += e[j] / s   (the row-normalised M)
// so D is read once per Sinkhorn iteration. The block's column sums go to partials[block].
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint PER_THREAD = 1;

layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 1) buffer RowPotentials { float f[]; };
layout(set = 0, binding = 2) readonly buffer ColPotentials { float g[]; };
layout(set = 0, binding = 3) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    uint rows_per_block;
    float t;
    float alpha;
    float clamp_;
};

// Two buffers of per-subgroup sums, alternating by row, so one barrier per row suffices:
// a row's buffer is rewritten two rows later, after every invocation passed the barrier
// of the row in between (and so finished reading it).
shared float subgroup_sums[2][128];

void main() {
    uint block = linear_group_id();
    uint row_begin = block * rows_per_block;
    uint row_end = min(row_begin + rows_per_block, m);
    uint lid = gl_LocalInvocationID.x;
    float inv_t = 1.0 / t;

    float gj[PER_THREAD];
    float colsum[PER_THREAD];
    float e[PER_THREAD];
    // The current row's distances; the next row's are loaded into it before the barrier,
    // so their latency overlaps the reduction.
    float dv[PER_THREAD];
    [[unroll]] for (uint k = 0; k < PER_THREAD; k++) {
        uint j = lid + k * gl_WorkGroupSize.x;
        gj[k] = j < n ? g[j] + alpha : 0.0;
        colsum[k] = 0.0;
        dv[k] = (j < n && row_begin < row_end) ? d[row_begin * n + j] : 0.0;
    }
    // f[i] of the block's rows is written only by this workgroup, after it was read; the
    // next row's is loaded with its distances.
    float f_next = row_begin < row_end ? f[row_begin] : 0.0;
    for (uint i = row_begin; i < row_end; i++) {
        float fi = f_next;
        float s = 0.0;
        [[unroll]] for (uint k = 0; k < PER_THREAD; k++) {
            uint j = lid + k * gl_WorkGroupSize.x;
            float x = (fi + gj[k] - dv[k]) * inv_t;
            e[k] = j < n ? exp(clamp(x, -clamp_, clamp_)) : 0.0;
            s += e[k];
        }
        if (i + 1u < row_end) {
            uint next = (i + 1u) * n;
            f_next = f[i + 1u];
            [[unroll]] for (uint k = 0; k < PER_THREAD; k++) {
                uint j = lid + k * gl_WorkGroupSize.x;
                dv[k] = j < n ? d[next + j] : 0.0;
            }
        }
        s = subgroupAdd(s);
        uint parity = i & 1u;
        if (subgroupElect()) subgroup_sums[parity][gl_SubgroupID] = s;
        barrier();
        float total = 0.0;
        for (uint q = 0; q < gl_NumSubgroups; q++) total += subgroup_sums[parity][q];
        float inv_total = 1.0 / total;
        [[unroll]] for (uint k = 0; k < PER_THREAD; k++) colsum[k] += e[k] * inv_total;
        if (lid == 0u) f[i] = fi - t * log(total);
    }
    [[unroll]] for (uint k = 0; k < PER_THREAD; k++) {
        uint j = lid + k * gl_WorkGroupSize.x;
        if (j < n) partials[block * n + j] = colsum[k];
    }
}
