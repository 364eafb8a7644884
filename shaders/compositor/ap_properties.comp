#version 460
// Active Pixel encoding, step 1 (PIXELPROPERTIES of Algorithm 1): for pixels begin..begin+n
// of the image, is_active[i] = depth != 1.0 and new_run[i] = 1 where a run of active or
// inactive pixels starts (always at i = 0).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Depth { float depth[]; };
layout(set = 0, binding = 1) writeonly buffer NewRun { uint new_run[]; };
layout(set = 0, binding = 2) writeonly buffer IsActive { uint is_active[]; };
layout(push_constant) uniform Push { uint begin; uint n; uint total; };

void main() {
    uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= n) return;
    uint p = begin + i;
    bool on = depth[p] != 1.0;
    is_active[i] = on ? 1u : 0u;
    new_run[i] = (i == 0u || (depth[p - 1u] != 1.0) != on) ? 1u : 0u;
}
