#version 460
// Eq. 1: D[i][j] = sqrt(sum_k (patch[i][k] - tile[j][k])^2) over the u x v x RGB features.
// One invocation per entry, j fastest, so neighbouring invocations share the patch row.
// One dispatch computes the m rows from row0 on (a block: D need not fit on the device).
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Patches { float patches[]; };
layout(set = 0, binding = 1) readonly buffer Tiles { float tiles[]; };
layout(set = 0, binding = 2) writeonly buffer Distances { float d[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    uint width;
    uint row0;
};

void main() {
    uint index = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= m * n) return;
    uint i = index / n;
    uint j = index - i * n;
    float s = 0.0;
    for (uint k = 0; k < width; k++) {
        float diff = patches[(row0 + i) * width + k] - tiles[j * width + k];
        s += diff * diff;
    }
    d[index] = sqrt(s);
}
