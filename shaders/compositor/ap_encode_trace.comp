#version 460
// ap_encode with per-tile timing (ap_encode.glsl says what it records).
#define AP_TRACE
#include "ap_encode.glsl"
