#version 460
// Active Pixel encoding, pass 2 of 3: the exclusive scan of the workgroups' scan totals of
// pass 1 (run starts, active elements, last run start + 1; ap_monoid.glsl) in place, by one
// workgroup. Each invocation takes PER consecutive totals of a chunk (all loads issued at
// once), and a carry runs across chunks, so any count works.
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict buffer Totals { uvec4 totals[]; };
layout(push_constant) uniform Push { uint count; };

#include "ap_monoid.glsl"

const uint PER = 8u;

void main() {
    uint lid = gl_LocalInvocationIndex;
    uvec3 carry = uvec3(0u);
    for (uint chunk = 0u; chunk < count; chunk += gl_WorkGroupSize.x * PER) {
        uint first = chunk + lid * PER;
        uvec3 t[PER];
        uvec3 sum = uvec3(0u);
        [[unroll]] for (uint k = 0u; k < PER; k++) {
            // Clamped, not skipped: no branch between the loads.
            uvec3 x = totals[min(first + k, count - 1u)].xyz;
            t[k] = first + k < count ? x : uvec3(0u);
            sum = combine3(sum, t[k]);
        }
        uvec3 prefix = monoid_scan(sum, carry);
        [[unroll]] for (uint k = 0u; k < PER; k++) {
            if (first + k < count) totals[first + k] = uvec4(prefix, 0u);
            prefix = combine3(prefix, t[k]);
        }
        carry = s_scan_total;
    }
}
