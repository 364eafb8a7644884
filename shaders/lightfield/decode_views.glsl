// Decoder straight into the light field in device memory (U x V x H x W x 3 f32, as the
// renderer reads it): each patch's samples inside the light field are written clamped to
// [0, 1], the padding dropped; a NaN or infinity sets `bad` (the host refuses the decode).
// Patch `pid` of this dispatch is patch `first + pid` of the grid. The body of
// decode_views.comp (tensor in shared memory) and decode_views_global.comp (tensor of grid
// patch p at p * P of binding 8). See decode.glsl.
#include "decode.glsl"

layout(set = 0, binding = 6) writeonly buffer Views { float views[]; };
layout(set = 0, binding = 7) buffer Flags { uint bad; };
layout(push_constant) uniform Push {
    uint n_patches;
    uint first;
    uint size_u, size_v, size_h, size_w;
    uint count_v, count_y, count_x;
};

void main() {
    uint pid = linear_group_id();
    if (pid >= n_patches) return;
    decode_patch(pid, first + pid);
    // Patch order: view block (u, v), then pixel rows, then columns; mode order in the
    // patch: view row (M0), view column (M1), pixel row (M2), pixel column (M3), colour.
    uint p = first + pid;
    uint bx = p % count_x;
    uint by = (p / count_x) % count_y;
    uint bv = (p / (count_x * count_y)) % count_v;
    uint bu = p / (count_x * count_y * count_v);
    bool finite = true;
    for (uint j = gl_LocalInvocationID.x; j < P; j += gl_WorkGroupSize.x) {
        uint c = j % M4;
        uint x = bx * M3 + (j / M4) % M3;
        uint y = by * M2 + (j / (M4 * M3)) % M2;
        uint v = bv * M1 + (j / (M4 * M3 * M2)) % M1;
        uint u = bu * M0 + j / (M4 * M3 * M2 * M1);
        if (u < size_u && v < size_v && y < size_h && x < size_w) {
            float s = X_AT(j);
            // By its bits: a compiler may assume no NaN in isnan().
            finite = finite && (floatBitsToUint(s) & 0x7f800000u) != 0x7f800000u;
            views[(((u * size_v + v) * size_h + y) * size_w + x) * M4 + c] = clamp(s, 0.0, 1.0);
        }
    }
    if (!finite) atomicOr(bad, 1u);
}
