// The patch tensor of modes.glsl in a device buffer: one region of P floats per patch of the
// dispatch (patch pid at pid * P), for patches too large for the device's shared memory.
// Each workgroup touches only its own region, small enough to stay in cache while the
// workgroup works on it. The products exchange elements between invocations through it, so
// the buffer is `coherent` and patch_barrier() makes the writes visible (patch_fence, a
// buffer memory barrier) before the workgroup barrier. Needs P and PATCH_BINDING (the binding) defined.
#ifndef LIGHTFIELD_PATCH_STORAGE
#define LIGHTFIELD_PATCH_STORAGE

layout(set = 0, binding = PATCH_BINDING) coherent buffer Tensor { float tensor[]; };
uint x_base = 0u;
#define X_AT(i) tensor[x_base + (i)]

// Points X_AT at patch `pid`'s region.
void bind_patch(uint pid) {
    x_base = pid * P;
}

// This invocation's writes to the tensor, visible to the workgroup after its next barrier.
void patch_fence() {
    memoryBarrierBuffer();
}

void patch_barrier() {
    patch_fence();
    barrier();
}

#endif
