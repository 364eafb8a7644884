// What every kernel of the GPU Hungarian method shares: the control block (the state
// machine the host records ticks of, see apps/mosaic/src/gpu/hungarian.rs), its modes and
// faults, and a workgroup minimum.
#ifndef HUNGARIAN_COMMON_GLSL
#define HUNGARIAN_COMMON_GLSL

const uint NONE = 0xffffffffu;
const int INT_MAX = 0x7fffffff;

// Control.mode: which step the next kernels do; every kernel returns at once in another.
const uint MODE_START = 0u;   // reductions, zeros and first stars; covers next
const uint MODE_PRIME = 1u;   // step 4
const uint MODE_DUAL = 2u;    // step 6
const uint MODE_AUGMENT = 3u; // step 5, then covers (step 3)
const uint MODE_DONE = 4u;
const uint MODE_FAULT = 5u;

// Control.fault
const uint FAULT_ZEROS = 1u; // more zeros than the list holds
const uint FAULT_DELTA = 2u; // no positive reduced cost left uncovered
const uint FAULT_PATH = 3u;  // an alternating path longer than n

#ifndef HUNGARIAN_NO_CONTROL
// The control block, binding 0 of every kernel that has one (coherent: its words are read
// after other workgroups' atomics).
layout(set = 0, binding = 0) coherent buffer Control {
    uint mode;
    uint found;    // step 4 primed something in this pass
    uint free_row; // step 4 primed a row without a star
    int delta;     // step 6's least uncovered reduced cost
    uint matches;  // stars counted by step 3
    uint zeros;    // entries in the zero list
    uint fault;
    uint passes;
    uint dual_updates;
    uint augmentations;
    uint arrived;  // workgroups of the prime pass that have finished it
} ctl;

// Sets the fault (the first one is kept) and stops the machine.
void fault(uint what) {
    atomicCompSwap(ctl.fault, 0u, what);
    atomicExchange(ctl.mode, MODE_FAULT);
}
#endif

#ifdef HUNGARIAN_WORKGROUP_MIN
shared int s_min[64];

// The least x over the workgroup (every invocation calls it; the host keeps
// workgroup / subgroup size <= 64).
int workgroup_min(int x) {
    x = subgroupMin(x);
    if (subgroupElect()) s_min[gl_SubgroupID] = x;
    barrier();
    int m = s_min[0];
    for (uint q = 1u; q < gl_NumSubgroups; q++) m = min(m, s_min[q]);
    barrier();
    return m;
}
#endif

#endif
