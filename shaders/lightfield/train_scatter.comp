#version 460
// Dense coefficient tensors from the sparse codes of the training's assignment step: the
// host resolves every kept coefficient to its element of the (zeroed) output and its
// dequantised value; distinct coefficients never share an element.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Dest { uint dest[]; };
layout(set = 0, binding = 1) readonly buffer Values { float values[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float dense[]; };
layout(push_constant) uniform Push {
    uint count;
};

void main() {
    uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i < count) dense[dest[i]] = values[i];
}
