// The patch tensor of modes.glsl in workgroup shared memory: the fused kernels, for patches
// whose P floats fit in the device's shared memory beside the kernel's other shared arrays.
// The tensor never leaves the workgroup, so a workgroup barrier orders its accesses.
// Needs P defined. See patch_global.glsl for the other placement.
#ifndef LIGHTFIELD_PATCH_STORAGE
#define LIGHTFIELD_PATCH_STORAGE

shared float X[P];
#define X_AT(i) X[i]

// Nothing to locate: the workgroup's tensor is its shared array.
void bind_patch(uint pid) {}

// Nothing to make visible beyond what a workgroup barrier orders.
void patch_fence() {}

void patch_barrier() {
    barrier();
}

#endif
