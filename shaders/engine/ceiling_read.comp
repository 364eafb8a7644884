#version 460
// Read bandwidth probe shaped like a kernel's load step (the compositor's depth loads): each
// invocation issues READ_LOADS loads, of one u32 (WIDTH 1) or one uvec4 (WIDTH 4), a
// workgroup apart, all before using any, then writes the XOR of everything it read, so no
// load can be dropped. The two widths at the same bytes show whether an SM's loads are
// limited by how many are in flight rather than by the bytes they carry.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
// Words per load: 1 or 4 (specialization constant 1).
layout(constant_id = 1) const uint WIDTH = 1u;
layout(set = 0, binding = 0) readonly buffer Src1 { uint src1[]; };
layout(set = 0, binding = 0) readonly buffer Src4 { uvec4 src4[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
// Loads of WIDTH words in the source.
layout(push_constant) uniform Push { uint n; };

const uint READ_LOADS = 16u;

void main() {
    uint wg = gl_WorkGroupSize.x;
    uint invocation = linear_group_id() * wg + gl_LocalInvocationID.x;
    uint first = linear_group_id() * wg * READ_LOADS + gl_LocalInvocationID.x;
    uint acc = 0u;
    // Loads past the end read element 0 (no branch between the loads) and are left out of
    // the XOR.
    if (WIDTH == 4u) {
        uvec4 v[READ_LOADS];
        [[unroll]] for (uint k = 0u; k < READ_LOADS; k++) {
            uint i = first + k * wg;
            v[k] = src4[i < n ? i : 0u];
        }
        [[unroll]] for (uint k = 0u; k < READ_LOADS; k++) {
            if (first + k * wg < n) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
        }
    } else {
        uint v[READ_LOADS];
        [[unroll]] for (uint k = 0u; k < READ_LOADS; k++) {
            uint i = first + k * wg;
            v[k] = src1[i < n ? i : 0u];
        }
        [[unroll]] for (uint k = 0u; k < READ_LOADS; k++) {
            if (first + k * wg < n) acc ^= v[k];
        }
    }
    dst[invocation] = acc;
}
