#version 460
// Decoder into patch-major samples (the host crops the padding); see decode.glsl.
#include "decode.glsl"

layout(set = 0, binding = 6) writeonly buffer Out { float samples[]; };
layout(push_constant) uniform Push {
    uint n_patches;
};

void main() {
    uint pid = linear_group_id();
    if (pid >= n_patches) return;
    decode_patch(pid, pid);
    for (uint j = gl_LocalInvocationID.x; j < P; j += gl_WorkGroupSize.x) samples[pid * P + j] = X_AT(j);
}
