#version 460
// Hungarian method: the zero list, every entry i n + j where d - u - v is 0 (steps 1 and
// 6; the host records it for both, and it runs in mode `when` only). Workgroups stride over
// rows, invocations over a row's columns; each subgroup appends its zeros with one atomic.
// A list that would overflow `capacity` stops the machine (FAULT_ZEROS).
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) readonly buffer Costs { int d[]; };
layout(set = 0, binding = 2) readonly buffer RowPotentials { int u[]; };
layout(set = 0, binding = 3) readonly buffer ColumnPotentials { int v[]; };
layout(set = 0, binding = 4) writeonly buffer Zeros { uint zeros[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    uint capacity;
    uint when;
};

void main() {
    if (ctl.mode != when) return;
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint i = linear_group_id(); i < m; i += groups) {
        int ui = u[i];
        for (uint first = 0u; first < n; first += gl_WorkGroupSize.x) {
            uint j = first + gl_LocalInvocationID.x;
            bool zero = j < n && d[i * n + j] - ui - v[j] == 0;
            uvec4 ballot = subgroupBallot(zero);
            uint count = subgroupBallotBitCount(ballot);
            if (count == 0u) continue;
            uint base = 0u;
            if (subgroupElect()) base = atomicAdd(ctl.zeros, count);
            base = subgroupBroadcastFirst(base);
            if (!zero) continue;
            uint k = base + subgroupBallotExclusiveBitCount(ballot);
            if (k < capacity) {
                zeros[k] = i * n + j;
            } else {
                fault(FAULT_ZEROS);
            }
        }
    }
}
