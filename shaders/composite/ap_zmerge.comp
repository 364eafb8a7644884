#version 460
// Z-buffer compositing of Active Pixel encoded spans into a raw span, in place: the
// distributed renderer keeps its partial image raw on the GPU and merges what the other
// ranks send for the span it keeps (ap_segments.glsl finds their pixels). Inputs are taken
// in group order, this rank's raw span at position `own` among the `k` received ones; per
// pixel the smallest depth wins, ties to the earlier input, as in its CPU twin
// (cpu/blend.rs).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Payload { uint payload[]; };
layout(set = 0, binding = 1) readonly buffer Segments { uint segments[]; };
layout(set = 0, binding = 2) readonly buffer Inputs { uint inputs[]; };
layout(set = 0, binding = 3) buffer Color { uint color[]; };
layout(set = 0, binding = 4) buffer Depth { float depth[]; };
// n: span pixels; origin: index of the span's first pixel in Color and Depth.
layout(push_constant) uniform Push { uint n; uint k; uint own; uint origin; };
#include "ap_segments.glsl"

void main() {
    uint p = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (p >= n) return;
    uint q = origin + p;
    uint own_color = color[q];
    float own_depth = depth[q];
    bool any_active = false;
    uint acc_color = 0u;
    float acc_depth = 1.0;
    for (uint i = 0u; i <= k; i++) {
        uint c;
        float d;
        if (i == own) {
            if (own_depth == 1.0) continue;
            c = own_color;
            d = own_depth;
        } else {
            uint word;
            if (!segment_pixel(i < own ? i : i - 1u, p, word)) continue;
            c = payload[word];
            d = uintBitsToFloat(payload[word + 1u]);
        }
        if (!any_active || d < acc_depth) {
            acc_color = c;
            acc_depth = d;
            any_active = true;
        }
    }
    if (any_active) {
        color[q] = acc_color;
        depth[q] = acc_depth;
    }
}
