#version 460
// Decoder: one workgroup per patch scatters the patch's dequantised coefficients into a
// zeroed tensor in shared memory, applies the five synthesis n-mode products of its
// dictionary (X x_n U), and writes the patch (patch-major; the host crops the padding).
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

layout(set = 0, binding = 0) readonly buffer Dicts { float dicts[]; };
layout(set = 0, binding = 1) readonly buffer Membership { uint membership[]; };
layout(set = 0, binding = 2) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 3) readonly buffer Locations { uint locations[]; };
layout(set = 0, binding = 4) readonly buffer Levels { int levels[]; };
layout(set = 0, binding = 5) readonly buffer Steps { float steps[]; };  // per patch quantisation step
layout(set = 0, binding = 6) writeonly buffer Out { float samples[]; };
layout(push_constant) uniform Push {
    uint n_patches;
};

shared float X[P];
shared float Mats[D];
#define MODE_INPUT(i) X[i]
#include "modes.glsl"

void main() {
    uint pid = linear_group_id();
    if (pid >= n_patches) return;
    uint k = membership[pid];
    float step = steps[pid];
    for (uint j = gl_LocalInvocationID.x; j < P; j += gl_WorkGroupSize.x) X[j] = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < D; i += gl_WorkGroupSize.x) Mats[i] = dicts[k * D + i];
    barrier();
    for (uint i = offsets[pid] + gl_LocalInvocationID.x; i < offsets[pid + 1u]; i += gl_WorkGroupSize.x) {
        X[locations[i]] = float(levels[i]) * step;
    }
    barrier();
    all_modes(false, false, 0u);
    for (uint j = gl_LocalInvocationID.x; j < P; j += gl_WorkGroupSize.x) samples[pid * P + j] = X[j];
}
