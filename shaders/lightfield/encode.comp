#version 460
// The encode kernel with the patch tensor in shared memory (patches that fit: the fused
// kernel); see encode.glsl.
#include "encode.glsl"
