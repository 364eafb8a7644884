// The decoder's common part: one workgroup per patch scatters the patch's dequantised
// coefficients into a zeroed tensor and applies the five synthesis n-mode products of its
// dictionary (X x_n U). decode.comp writes the patch patch-major, decode_views.comp straight
// into the light field; both hold the tensor in shared memory. For patches too large for
// shared memory, decode_global.comp holds it in its output buffer instead and
// decode_views_global.comp in a buffer of its own (define PATCH_BINDING, the binding of
// that buffer, before including).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "patch_spec.glsl"

layout(set = 0, binding = 0) readonly buffer Dicts { float dicts[]; };
layout(set = 0, binding = 1) readonly buffer Membership { uint membership[]; };
layout(set = 0, binding = 2) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 3) readonly buffer Locations { uint locations[]; };
layout(set = 0, binding = 4) readonly buffer Levels { int levels[]; };
layout(set = 0, binding = 5) readonly buffer Steps { float steps[]; };  // per patch quantisation step

#ifdef PATCH_BINDING
#include "patch_global.glsl"
#else
#include "patch_shared.glsl"
#endif
#define MODE_INPUT(i) X_AT(i)
#include "modes.glsl"

// Leaves patch `pid`'s samples in the tensor (X_AT), with a tensor in a buffer at region
// `region`.
void decode_patch(uint pid, uint region) {
    bind_patch(region);
    uint k = membership[pid];
    float step = steps[pid];
    for (uint j = gl_LocalInvocationID.x; j < P; j += gl_WorkGroupSize.x) X_AT(j) = 0.0;
    // load_matrices ends with a barrier, which puts the zeros before any coefficient lands
    // on them; the fence makes that hold for a tensor in a buffer too.
    patch_fence();
    load_matrices(k, false);
    for (uint i = offsets[pid] + gl_LocalInvocationID.x; i < offsets[pid + 1u]; i += gl_WorkGroupSize.x) {
        X_AT(locations[i]) = float(levels[i]) * step;
    }
    patch_barrier();
    all_modes(false, 0u);
}
