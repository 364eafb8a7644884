#version 460
// Decoder straight into the light field for patches too large for shared memory: the tensor
// of grid patch p at p * P of binding 8 (every section's patches in one buffer, so sections
// in flight together never share a region); see decode_views.glsl.
#define PATCH_BINDING 8
#include "decode_views.glsl"
