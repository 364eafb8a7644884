#version 460
// Active Pixel encoding, step 3 (REDUCEBYKEY(run_id, 1) of Algorithm 1): the run lengths.
// Runs are contiguous, so the count of each key is the distance between run boundaries:
// the last pixel of run r (1-based) writes run_end[r - 1] = its index + 1, and
// run_len(r) = run_end[r - 1] - run_end[r - 2] (ap_compress.comp).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer NewRun { uint new_run[]; };
layout(set = 0, binding = 1) readonly buffer RunId { uint run_id[]; };
layout(set = 0, binding = 2) writeonly buffer RunEnd { uint run_end[]; };
layout(push_constant) uniform Push { uint begin; uint n; uint total; };

void main() {
    uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= n) return;
    if (i + 1u == n || new_run[i + 1u] == 1u) run_end[run_id[i] - 1u] = i + 1u;
}
