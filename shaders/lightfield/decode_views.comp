#version 460
// Decoder straight into the light field, the tensor in shared memory; see decode_views.glsl.
#include "decode_views.glsl"
