#version 460
// One workgroup over all tiles: params[0] = the smallest tile bound key (0 when no tile has
// one), from which smoe_bin sizes each kernel's support box.
#include "common.glsl"
#include "smoe.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Keys { uint keys[]; };
layout(set = 0, binding = 1) writeonly buffer Params { uint params[]; };

shared uint partial[1024];

void main() {
    uint n = pc.tiles_x * pc.tiles_y;
    uint lid = gl_LocalInvocationID.x;
    uint threads = gl_WorkGroupSize.x;
    uint m = 0xffffffffu;
    for (uint t = lid; t < n; t += threads) {
        uint k = keys[t];
        if (k != 0u) m = min(m, k);
    }
    partial[lid] = m;
    barrier();
    if (lid == 0u) {
        uint best = 0xffffffffu;
        for (uint i = 0u; i < threads; i++) best = min(best, partial[i]);
        params[0] = best == 0xffffffffu ? 0u : best;
    }
}
