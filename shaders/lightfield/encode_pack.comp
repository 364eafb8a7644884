#version 460
// Packs one encoded chunk's codes for the host: each patch's kept locations and levels (the
// first `count` of its `sparsity` slots) one patch after another in patch order, written
// straight into host-visible memory, so only the kept coefficients cross the bus instead of
// every patch's `sparsity` slots. One workgroup per patch. Its place is the sum of the
// counts before it: a chunk is at most a few thousand patches, so each workgroup adding
// them (from L2) costs less than a separate scan pass. Counts are clamped to `sparsity` so
// every index stays in its buffer; the host refuses a count over it from the info words.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Info { uint info[]; };  // per patch: dict, count, success, error
layout(set = 0, binding = 1) readonly buffer Locations { uint locations[]; };
layout(set = 0, binding = 2) readonly buffer Levels { int levels[]; };
layout(set = 0, binding = 3) writeonly buffer PackedLocations { uint packed_locations[]; };
layout(set = 0, binding = 4) writeonly buffer PackedLevels { int packed_levels[]; };
layout(push_constant) uniform Push {
    uint n_patches;
    uint sparsity;
};

shared uint sub_sums[64];

void main() {
    uint p = linear_group_id();
    if (p >= n_patches) return;
    uint lid = gl_LocalInvocationID.x;
    uint before = 0u;
    for (uint q = lid; q < p; q += gl_WorkGroupSize.x) before += min(info[4u * q + 1u], sparsity);
    before = subgroupAdd(before);
    if (subgroupElect()) sub_sums[gl_SubgroupID] = before;
    barrier();
    uint offset = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) offset += sub_sums[s];
    uint count = min(info[4u * p + 1u], sparsity);
    uint from = p * sparsity;
    for (uint e = lid; e < count; e += gl_WorkGroupSize.x) {
        packed_locations[offset + e] = locations[from + e];
        packed_levels[offset + e] = levels[from + e];
    }
}
