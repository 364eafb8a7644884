// Shared GLSL helpers for every Tessera kernel.
#ifndef TESSERA_COMMON_GLSL
#define TESSERA_COMMON_GLSL

// Workgroups are laid out over x and y when there are more than 65535 of them
// (engine::commands::linear_grid); this is the linear index of the current one.
uint linear_group_id() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

uint ceil_div(uint a, uint b) {
    return (a + b - 1u) / b;
}

#endif
