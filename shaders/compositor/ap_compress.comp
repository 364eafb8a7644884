#version 460
// Active Pixel encoding, step 5 (COMPRESSIMAGE of Algorithm 1): every active element writes
// its pixel's colour and depth at ApOffset(active_idx, run_id); the first element of each
// active run also writes the run header (preceding inactive count, active count) just
// before it; the last element writes the payload size and, when the sequence ends inactive,
// the final (inactive count, 0) header. Offsets are in 4-byte words: ApOffset / 4.
//
// The elements cover the ROI box (ap_elements.glsl); the pixels before the box's first
// pixel (`begin`) and after its last (`total - end`) are inactive, so they are added to the
// first and last inactive counts and the payload is that of the whole image.
//
// ApOffset uses floor division for (r - 1) / 2: for an all-inactive sequence the last
// element has active_run = 0 and its header belongs at offset 0, which truncating division
// misses.
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Color { uint color[]; };
layout(set = 0, binding = 1) readonly buffer Depth { uint depth_bits[]; };
layout(set = 0, binding = 2) readonly buffer NewRun { uint new_run[]; };
layout(set = 0, binding = 3) readonly buffer IsActive { uint is_active[]; };
layout(set = 0, binding = 4) readonly buffer RunId { uint run_id[]; };
layout(set = 0, binding = 5) readonly buffer RunEnd { uint run_end[]; };
layout(set = 0, binding = 6) readonly buffer ActiveIdx { uint active_idx[]; };
layout(set = 0, binding = 7) writeonly buffer Out { uint ap[]; };
layout(set = 0, binding = 8) writeonly buffer Size { uint ap_words[]; };

// Word offset of an active pixel: 2 * (a + floor((r - 1) / 2) + 1).
uint ap_offset(uint a, uint r) {
    return uint(2 * (int(a) + ((int(r) - 1) >> 1) + 1));
}

// Length in pixels of run r (1-based); the first run starts at the box's first pixel.
uint run_len(uint r) {
    return run_end[r - 1u] - (r > 1u ? run_end[r - 2u] : element_pixel(0u));
}

// Length of inactive run r; the first run also counts the pixels before the box.
uint inactive_len(uint r) {
    return r == 1u ? run_end[0] : run_len(r);
}

void main() {
    uint e = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (e >= n) return;
    bool last = e + 1u == n;
    uint on = is_active[e];
    // Inactive elements other than the last write nothing: skip their other loads.
    if (on == 0u && !last) return;
    uint r = run_id[e];
    if (on == 1u) {
        uint p = element_pixel(e);
        uint pos = ap_offset(active_idx[e], r);
        ap[pos] = color[p];
        ap[pos + 1u] = depth_bits[p];
        if (new_run[e] == 1u) {
            // Run r - 1 is the inactive run before this one; with r == 1 there is none, and
            // only the pixels before the box precede it.
            ap[pos - 2u] = r > 1u ? inactive_len(r - 1u) : element_pixel(0u);
            ap[pos - 1u] = run_len(r);
        }
    }
    if (last) {
        uint tail = total - end;
        uint active_run = r + on - 1u;
        uint pos = ap_offset(active_idx[e], active_run);
        if (on == 1u) {
            if (tail > 0u) {
                ap[pos + 2u] = tail;
                ap[pos + 3u] = 0u;
                ap_words[0] = pos + 4u;
            } else {
                ap_words[0] = pos + 2u;
            }
        } else {
            ap[pos] = inactive_len(r) + tail;
            ap[pos + 1u] = 0u;
            ap_words[0] = pos + 2u;
        }
    }
}
