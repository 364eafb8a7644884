#version 460
// The encode kernel with the patch tensor in a device buffer (binding 6: one region of P
// floats per patch of the dispatch), for patches too large for shared memory; the same
// products and selection as encode.comp, so the same codes. See encode.glsl.
#define PATCH_BINDING 6
#include "encode.glsl"
