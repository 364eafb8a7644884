// The Active Pixel encoder's monoid: (run starts: +, active elements: +, pixel of the last
// run start + 1: max); pixels grow with elements, so max picks the last. From an active
// pixel's prefix (a actives before it, r run starts up to it) follows its payload offset.
#ifndef TESSERA_AP_MONOID_GLSL
#define TESSERA_AP_MONOID_GLSL

uvec3 combine3(uvec3 a, uvec3 b) {
    return uvec3(a.xy + b.xy, max(a.z, b.z));
}

// Word offset of an active pixel of `stride` words (the paper's Equation 1 for stride 2):
// floor((r - 1) / 2) + 1 two-word run headers and a active pixels before it; floor, not
// truncation, so that an all-inactive image puts its header at 0.
uint ap_offset(uint a, uint r, uint stride) {
    return uint(2 * (((int(r) - 1) >> 1) + 1)) + stride * a;
}

#endif
