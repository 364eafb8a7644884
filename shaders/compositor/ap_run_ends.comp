#version 460
// Active Pixel encoding, step 3 (REDUCEBYKEY(run_id, 1) of Algorithm 1): the run lengths.
// Runs are contiguous, so the count of each key is the distance between run boundaries:
// the last element of run r (1-based) writes run_end[r - 1] = the image index of the pixel
// after the run, and a run's length in pixels is the difference of consecutive ends
// (ap_compress.comp). Measuring in image pixels makes gap elements count as the inactive
// pixels they stand for.
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer NewRun { uint new_run[]; };
layout(set = 0, binding = 1) readonly buffer RunId { uint run_id[]; };
layout(set = 0, binding = 2) writeonly buffer RunEnd { uint run_end[]; };

void main() {
    uint e = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (e >= n) return;
    if (e + 1u == n || new_run[e + 1u] == 1u) run_end[run_id[e] - 1u] = element_pixel(e + 1u);
}
