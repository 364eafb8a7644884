// The decoder's common part: one workgroup per patch scatters the patch's dequantised
// coefficients into a zeroed tensor in shared memory and applies the five synthesis n-mode
// products of its dictionary (X x_n U). decode.comp writes the patch patch-major,
// decode_views.comp straight into the light field. Needs P, D and M0..M4 defined.
layout(set = 0, binding = 0) readonly buffer Dicts { float dicts[]; };
layout(set = 0, binding = 1) readonly buffer Membership { uint membership[]; };
layout(set = 0, binding = 2) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 3) readonly buffer Locations { uint locations[]; };
layout(set = 0, binding = 4) readonly buffer Levels { int levels[]; };
layout(set = 0, binding = 5) readonly buffer Steps { float steps[]; };  // per patch quantisation step

shared float X[P];
#define MODE_INPUT(i) X[i]
#include "modes.glsl"

// Leaves patch `pid`'s samples in X.
void decode_patch(uint pid) {
    uint k = membership[pid];
    float step = steps[pid];
    for (uint j = gl_LocalInvocationID.x; j < P; j += gl_WorkGroupSize.x) X[j] = 0.0;
    load_matrices(k, false);
    for (uint i = offsets[pid] + gl_LocalInvocationID.x; i < offsets[pid + 1u]; i += gl_WorkGroupSize.x) {
        X[locations[i]] = float(levels[i]) * step;
    }
    barrier();
    all_modes(false, 0u);
}
