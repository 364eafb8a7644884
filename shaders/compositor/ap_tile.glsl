// A tile of Active Pixel encoding's elements (ap_elements.glsl) as activity mask words of 32
// elements, and the run starts and monoid sums (ap_scan.glsl) of each word. Element
// k * WG + i of a tile is the k-th of invocation i, so that loads coalesce; bit j of word w
// is element 32 w + j. The includer declares `layout(local_size_x_id = 0) in;`, the tile's
// mask words WORDS, the depth buffer `depth_bits` and the push constant `origin` (the
// image's first pixel in it), and defines AP_MAX_WORDS (mask words of the largest tile) and
// AP_MAX_SUBGROUPS.
#ifndef TESSERA_AP_TILE_GLSL
#define TESSERA_AP_TILE_GLSL

#include "ap_elements.glsl"
#include "ap_scan.glsl"

// Bits of the f32 1.0, the background depth.
const uint BACKGROUND_BITS = 0x3f800000u;

shared uint s_mask[AP_MAX_WORDS];  // activity
shared uint s_start[AP_MAX_WORDS]; // run starts
shared uint s_edge[2];             // activity of the elements just before and just after the tile

bool element_active(uint e) {
    return e < el_n && !is_gap(e) && depth_bits[origin + element_pixel(e)] != BACKGROUND_BITS;
}

// Clears the mask words before mask_store where subgroups are narrower than a word.
void mask_clear() {
    if (gl_SubgroupSize < 32u) {
        for (uint w = gl_LocalInvocationIndex; w < WORDS; w += gl_WorkGroupSize.x) s_mask[w] = 0u;
        barrier();
    }
}

// Stores the activity of every invocation's k-th element by ballot: subgroups of 32 or more
// lanes store whole words, smaller ones OR into them.
void mask_store(uint k, bool is_active) {
    uvec4 b = subgroupBallot(is_active);
    if (subgroupElect()) {
        uint first = k * gl_WorkGroupSize.x + gl_SubgroupID * gl_SubgroupSize;
        if (gl_SubgroupSize >= 32u) {
            for (uint c = 0u; c < gl_SubgroupSize / 32u; c++) s_mask[first / 32u + c] = b[c];
        } else {
            atomicOr(s_mask[first / 32u], b.x << (first % 32u));
        }
    }
}

// The run starts of word w of the tile whose first element is `base` (from s_mask and
// s_edge[0]) into s_start[w], and the word's monoid sum.
uvec3 word_runs(uint w, uint base) {
    uint m = s_mask[w];
    uint before = w > 0u ? s_mask[w - 1u] >> 31 : s_edge[0];
    uint e0 = base + 32u * w;
    uint starts = m ^ ((m << 1) | before);
    if (e0 == 0u) starts |= 1u;  // the sequence opens its first run
    if (e0 + 32u > el_n) starts &= e0 >= el_n ? 0u : (1u << (el_n - e0)) - 1u;
    s_start[w] = starts;
    return uvec3(bitCount(starts), bitCount(m), starts != 0u ? element_pixel(e0 + uint(findMSB(starts))) + 1u : 0u);
}

#endif
