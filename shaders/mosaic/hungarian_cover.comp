#version 460
// Hungarian method, step 3 (after the first stars, and after each step 5): every starred
// column covered, every row uncovered, primes and path marks cleared; the stars counted
// into Control.matches. One invocation per index below max(m, n).
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) readonly buffer StarRow { uint star_row[]; };
layout(set = 0, binding = 2) writeonly buffer CoverRow { uint cover_row[]; };
layout(set = 0, binding = 3) writeonly buffer CoverCol { uint cover_col[]; };
layout(set = 0, binding = 4) writeonly buffer Prime { uint prime[]; };
layout(set = 0, binding = 5) writeonly buffer Green { uint green[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
};

void main() {
    uint mode = ctl.mode;
    if (mode != MODE_START && mode != MODE_AUGMENT) return;
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k >= max(m, n)) return;
    uint starred = 0u;
    if (k < n) {
        starred = star_row[k] != NONE ? 1u : 0u;
        cover_col[k] = starred;
        green[k] = NONE;
    }
    if (k < m) {
        cover_row[k] = 0u;
        prime[k] = NONE;
    }
    uint stars = subgroupAdd(starred);
    if (subgroupElect() && stars > 0u) atomicAdd(ctl.matches, stars);
}
