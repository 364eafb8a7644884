#version 460
#include "ap_encode.glsl"
