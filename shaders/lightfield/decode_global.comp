#version 460
// Decoder into patch-major samples (the host crops the padding) for patches too large for
// shared memory: each patch's tensor is its own place in the output (binding 6), decoded
// there in place by the same products as decode.comp. See decode.glsl.
#define PATCH_BINDING 6
#include "decode.glsl"

layout(push_constant) uniform Push {
    uint n_patches;
};

void main() {
    uint pid = linear_group_id();
    if (pid >= n_patches) return;
    decode_patch(pid, pid);
}
