#version 460
// Per kernel and gradient component: the sum of refine_grad's SPLITS partial records, in
// order (deterministic), into the kernel's gradient record; views after the first
// (pc.view > 0) add to it.
#include "refine.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint SPLITS = 8;
layout(set = 0, binding = 0) readonly buffer Partial { float partial[]; };
layout(set = 0, binding = 1) buffer Grad { float grad[]; };

void main() {
    uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= pc.kernels * GRAD_STRIDE) return;
    uint k = i / GRAD_STRIDE, g = i % GRAD_STRIDE;
    float s = 0.0;
    for (uint part = 0u; part < SPLITS; part++) s += partial[(k * SPLITS + part) * GRAD_STRIDE + g];
    grad[i] = pc.view == 0u ? s : grad[i] + s;
}
