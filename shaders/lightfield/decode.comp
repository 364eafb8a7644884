#version 460
// Decoder into patch-major samples (the host crops the padding); see decode.glsl.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 2) const uint P = 1u;
layout(constant_id = 3) const uint D = 1u;
layout(constant_id = 4) const uint M0 = 1u;
layout(constant_id = 5) const uint M1 = 1u;
layout(constant_id = 6) const uint M2 = 1u;
layout(constant_id = 7) const uint M3 = 1u;
layout(constant_id = 8) const uint M4 = 1u;

#include "decode.glsl"

layout(set = 0, binding = 6) writeonly buffer Out { float samples[]; };
layout(push_constant) uniform Push {
    uint n_patches;
};

void main() {
    uint pid = linear_group_id();
    if (pid >= n_patches) return;
    decode_patch(pid);
    for (uint j = gl_LocalInvocationID.x; j < P; j += gl_WorkGroupSize.x) samples[pid * P + j] = X[j];
}
