#version 460
// Hungarian method, step 4: primes uncovered zeros. A zero whose row and column are
// uncovered and whose row has no prime yet takes the row's prime with a compare-and-swap
// (one prime a row); a row with a star is then covered and its star's column uncovered, a
// row without one marks Control.free_row (step 5 follows). Each workgroup sweeps its slice
// of the zero list again while it primes (other workgroups' covers change meanwhile), up to
// `sweeps` times or until a free row is found. The last workgroup to finish chooses the next
// step: a free row primed -> augment; something primed -> another pass; nothing -> dual
// update.
#include "common.glsl"
#include "hungarian_common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1) readonly buffer Zeros { uint zeros[]; };
layout(set = 0, binding = 2) readonly buffer StarCol { uint star_col[]; };
layout(set = 0, binding = 3) coherent buffer Prime { uint prime[]; };
layout(set = 0, binding = 4) coherent buffer CoverRow { uint cover_row[]; };
layout(set = 0, binding = 5) coherent buffer CoverCol { uint cover_col[]; };
layout(push_constant) uniform Push {
    uint n;
    uint capacity;
    uint sweeps;
};

shared bool s_progress;
shared bool s_stop;

void main() {
    if (ctl.mode != MODE_PRIME) return;
    uint count = min(ctl.zeros, capacity);
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
    uint first = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    for (uint sweep = 0u; sweep < sweeps; sweep++) {
        if (gl_LocalInvocationID.x == 0u) s_progress = false;
        barrier();
        bool progress = false;
        for (uint k = first; k < count; k += stride) {
            uint z = zeros[k];
            uint i = z / n;
            uint j = z - i * n;
            if (cover_col[j] != 0u || cover_row[i] != 0u || prime[i] != NONE) continue;
            if (atomicCompSwap(prime[i], NONE, j) != NONE) continue;
            progress = true;
            uint s = star_col[i];
            if (s == NONE) {
                atomicOr(ctl.free_row, 1u);
            } else {
                atomicExchange(cover_row[i], 1u);
                // The row is covered before its star's column is seen uncovered.
                memoryBarrierBuffer();
                atomicExchange(cover_col[s], 0u);
            }
        }
        if (progress) {
            s_progress = true;
            atomicOr(ctl.found, 1u);
        }
        barrier();
        if (gl_LocalInvocationID.x == 0u) s_stop = !s_progress || ctl.free_row != 0u;
        barrier();
        if (s_stop) break;
    }
    barrier();
    if (gl_LocalInvocationID.x != 0u) return;
    // Every write of this workgroup is made visible before it counts itself; the last one
    // to count sees every other workgroup's.
    memoryBarrierBuffer();
    if (atomicAdd(ctl.arrived, 1u) != gl_NumWorkGroups.x * gl_NumWorkGroups.y - 1u) return;
    memoryBarrierBuffer();
    ctl.arrived = 0u;
    ctl.passes += 1u;
    if (atomicOr(ctl.free_row, 0u) != 0u) {
        ctl.mode = MODE_AUGMENT;
        ctl.augmentations += 1u;
    } else if (atomicOr(ctl.found, 0u) != 0u) {
        ctl.found = 0u;
    } else {
        ctl.mode = MODE_DUAL;
        ctl.delta = INT_MAX;
        ctl.dual_updates += 1u;
    }
}
