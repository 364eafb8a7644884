// The patch shape as specialisation constants, shared by the encode and decode kernels in
// the order gpu::spec builds them: P samples a patch, D the values of one dictionary (its
// five mode matrices), M0..M4 the mode sizes. Constant 1 is the encoder's own.
#ifndef LIGHTFIELD_PATCH_SPEC_GLSL
#define LIGHTFIELD_PATCH_SPEC_GLSL
layout(constant_id = 2) const uint P = 1u;
layout(constant_id = 3) const uint D = 1u;
layout(constant_id = 4) const uint M0 = 1u;
layout(constant_id = 5) const uint M1 = 1u;
layout(constant_id = 6) const uint M2 = 1u;
layout(constant_id = 7) const uint M3 = 1u;
layout(constant_id = 8) const uint M4 = 1u;
#endif
