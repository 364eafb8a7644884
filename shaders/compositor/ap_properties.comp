#version 460
// Active Pixel encoding, step 1 (PIXELPROPERTIES of Algorithm 1) over the ROI elements
// (ap_elements.glsl): is_active[e] = real pixel with depth != 1.0, new_run[e] = 1 where a
// run of active or inactive elements starts (always at e = 0).
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Depth { float depth[]; };
layout(set = 0, binding = 1) writeonly buffer NewRun { uint new_run[]; };
layout(set = 0, binding = 2) writeonly buffer IsActive { uint is_active[]; };

bool element_active(uint e) {
    return !is_gap(e) && depth[element_pixel(e)] != 1.0;
}

void main() {
    uint e = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (e >= n) return;
    bool on = element_active(e);
    is_active[e] = on ? 1u : 0u;
    new_run[e] = (e == 0u || element_active(e - 1u) != on) ? 1u : 0u;
}
