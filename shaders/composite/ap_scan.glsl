// The scan of the Active Pixel encoder's monoid (ap_monoid.glsl) across a workgroup's
// subgroups. The includer declares `layout(local_size_x_id = 0) in;` and defines
// AP_MAX_SUBGROUPS (the most subgroups a workgroup may have).
#ifndef TESSERA_AP_SCAN_GLSL
#define TESSERA_AP_SCAN_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require

#include "ap_monoid.glsl"

shared uvec3 s_sg[AP_MAX_SUBGROUPS]; // per-subgroup totals, then their exclusive prefixes

// Scans every invocation's `x` across the workgroup (uniform control flow): returns the
// exclusive prefix of `x` within its subgroup and leaves in s_sg[s] the exclusive prefix of
// subgroup s's total. The first subgroup also gets the workgroup's total in `total`.
uvec3 scan_subgroups(uvec3 x, out uvec3 total) {
    uvec3 incl = uvec3(subgroupInclusiveAdd(x.x), subgroupInclusiveAdd(x.y), subgroupInclusiveMax(x.z));
    uvec3 lane_excl = uvec3(incl.xy - x.xy, subgroupExclusiveMax(x.z));
    if (gl_SubgroupInvocationID == subgroupBallotFindMSB(subgroupBallot(true))) s_sg[gl_SubgroupID] = incl;
    barrier();
    total = uvec3(0u);
    if (gl_SubgroupID == 0u) {
        for (uint first = 0u; first < gl_NumSubgroups; first += gl_SubgroupSize) {
            uint i = first + gl_SubgroupInvocationID;
            uvec3 y = i < gl_NumSubgroups ? s_sg[i] : uvec3(0u);
            uvec3 excl = uvec3(subgroupExclusiveAdd(y.x), subgroupExclusiveAdd(y.y), subgroupExclusiveMax(y.z));
            if (i < gl_NumSubgroups) s_sg[i] = combine3(total, excl);
            total = combine3(total, uvec3(subgroupAdd(y.x), subgroupAdd(y.y), subgroupMax(y.z)));
        }
    }
    return lane_excl;
}

#endif
