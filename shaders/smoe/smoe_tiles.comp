#version 460
// One workgroup over all tiles. phase 0: params[0] = the smallest tile bound key (0 when
// no tile has one), from which smoe_bin sizes each kernel's support box. phase 1:
// exclusive scan of the per-tile kernel counts into offsets; params[1] = total.
#include "common.glsl"
#include "smoe.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Keys { uint keys[]; };
layout(set = 0, binding = 1) readonly buffer Counts { uint counts[]; };
layout(set = 0, binding = 2) writeonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 3) buffer Params { uint params[]; };

shared uint partial[1024];

void main() {
    uint n = pc.tiles_x * pc.tiles_y;
    uint lid = gl_LocalInvocationID.x;
    uint threads = gl_WorkGroupSize.x;
    if (pc.phase == 0u) {
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
        return;
    }
    uint per = ceil_div(n, threads);
    uint begin = min(lid * per, n), end = min(begin + per, n);
    uint sum = 0u;
    for (uint t = begin; t < end; t++) sum += counts[t];
    partial[lid] = sum;
    barrier();
    if (lid == 0u) {
        uint run = 0u;
        for (uint i = 0u; i < threads; i++) {
            uint v = partial[i];
            partial[i] = run;
            run += v;
        }
        params[1] = run;
    }
    barrier();
    uint run = partial[lid];
    for (uint t = begin; t < end; t++) {
        offsets[t] = run;
        run += counts[t];
    }
}
