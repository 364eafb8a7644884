// The monoid of Algorithm 1's fused scans, (run starts: +, active elements: +, last run
// start + 1: max), and its exclusive scan across a workgroup, shared by the encoder's
// passes (ap_reduce.comp and ap_scatter.comp scan a tile's words, ap_scan_tiles.comp the
// tiles' totals).
//
// The includer declares `layout(local_size_x_id = 0) in;` first.
#ifndef TESSERA_AP_MONOID_GLSL
#define TESSERA_AP_MONOID_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require

shared uvec3 s_sg[gl_WorkGroupSize.x];  // per-subgroup totals, then their exclusive prefixes
shared uvec3 s_scan_total;

uvec3 combine3(uvec3 a, uvec3 b) {
    return uvec3(a.xy + b.xy, max(a.z, b.z));
}

// Exclusive scan of one value per invocation across the workgroup, starting from `carry`:
// returns carry combined with the values of the invocations before this one, and leaves
// carry combined with all of them in s_scan_total, which stays until the next call. Every
// invocation must call it (it has barriers).
uvec3 monoid_scan(uvec3 v, uvec3 carry) {
    uvec3 incl = uvec3(subgroupInclusiveAdd(v.x), subgroupInclusiveAdd(v.y), subgroupInclusiveMax(v.z));
    uvec3 lane_excl = uvec3(incl.xy - v.xy, subgroupExclusiveMax(v.z));
    if (gl_SubgroupInvocationID == subgroupBallotFindMSB(subgroupBallot(true))) s_sg[gl_SubgroupID] = incl;
    barrier();
    if (gl_SubgroupID == 0u) {
        for (uint first = 0u; first < gl_NumSubgroups; first += gl_SubgroupSize) {
            uint i = first + gl_SubgroupInvocationID;
            uvec3 x = i < gl_NumSubgroups ? s_sg[i] : uvec3(0u);
            uvec3 excl = uvec3(subgroupExclusiveAdd(x.x), subgroupExclusiveAdd(x.y), subgroupExclusiveMax(x.z));
            if (i < gl_NumSubgroups) s_sg[i] = combine3(carry, excl);
            carry = combine3(carry, uvec3(subgroupAdd(x.x), subgroupAdd(x.y), subgroupMax(x.z)));
        }
        if (subgroupElect()) s_scan_total = carry;
    }
    barrier();
    uvec3 prefix = combine3(s_sg[gl_SubgroupID], lane_excl);
    // s_sg is written again by the next call before its first barrier.
    barrier();
    return prefix;
}

#endif
