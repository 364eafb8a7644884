#version 460
// Pass 2 of the chunked Active Pixel encoder (ap_chunk.glsl): each subgroup writes its
// chunk's payload from the chunk's prefix (its ap_count workgroup's prefix, then the chunk's
// within the workgroup), waiting for no other chunk. A chunk without active pixels writes
// nothing (unless it holds the sequence's last pixel) and reads nothing but its prefix, so
// only the active parts of a frame are read twice. Per pixel, from its word's running prefix
// (a actives before it, r run starts up to it):
// - an active pixel writes (colour, depth bits) at ap_offset(a, r, STRIDE): one colour word
//   (RGBA8) or four (RGBA32F, the channels' bits), as specialization constant 3 says;
// - the first pixel of an active run writes the run header's inactive count (from the start
//   of the inactive run before it), the last one its active count;
// - the sequence's last pixel writes the payload size, and the final (inactive count, 0)
//   header when the image ends inactive.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Color { uint color[]; };
layout(set = 0, binding = 0) restrict readonly buffer Color4 { uvec4 color4[]; };
layout(set = 0, binding = 1) restrict readonly buffer Depth { uint depth_bits[]; };
layout(set = 0, binding = 2) restrict readonly buffer Chunks { uvec4 chunk_info[]; };
// Per ap_count workgroup g: its exclusive prefix at 2 g (its box at 2 g + 1).
layout(set = 0, binding = 3) restrict readonly buffer Groups { uvec4 group_data[]; };
layout(set = 0, binding = 4) writeonly buffer Out { uint ap[]; };
layout(set = 0, binding = 4) writeonly buffer Out2 { uvec2 ap2[]; };
layout(set = 0, binding = 5) restrict writeonly buffer Size { uint ap_words[]; };

#include "ap_chunk.glsl"

// Pixels per lane loaded at once (a divisor of PER_LANE).
layout(constant_id = 2) const uint BATCH = 4u;
// Colour words per pixel: 1 (RGBA8, `color`) or 4 (RGBA32F, `color4`).
layout(constant_id = 3) const uint COLOR_WORDS = 1u;
// Payload words per active pixel.
const uint STRIDE = COLOR_WORDS + 1u;

void main() {
    uint chunk = chunk_index();
    if (chunk >= chunks) return;
    uvec4 info = chunk_info[chunk];
    uint base = chunk * chunk_size();
    bool holds_last = base + chunk_size() >= n;
    if (info.w == 0u && !holds_last) return;
    uvec3 pre = combine3(group_data[2u * (chunk / group_chunks)].xyz, info.xyz);

    uint lane = gl_SubgroupInvocationID;
    uint bit = 1u << lane;
    uint below = bit - 1u;
    uint upto = bit | below;
    uint before = active_before(base);
    // The chunk in batches of BATCH words, so that registers hold one batch's depths and
    // colours while other subgroups' loads are in flight; each batch's depths are loaded
    // while the batch before is written (4 words a batch: 28 registers on the H100, and
    // 68.3 against 71.1 us without the early loads at 8K).
    uint next_depth[BATCH];
    [[unroll]] for (uint k = 0u; k < BATCH; k++) next_depth[k] = depth_bits[pixel_index(base + k * gl_SubgroupSize + lane)];
    for (uint batch = 0u; batch < PER_LANE; batch += BATCH) {
        uint start = base + batch * gl_SubgroupSize;
        uint depth[BATCH];
        [[unroll]] for (uint k = 0u; k < BATCH; k++) depth[k] = next_depth[k];
        if (batch + BATCH < PER_LANE) {
            [[unroll]] for (uint k = 0u; k < BATCH; k++) {
                next_depth[k] = depth_bits[pixel_index(start + (BATCH + k) * gl_SubgroupSize + lane)];
            }
        }
        uint after = pixel_active(start + BATCH * gl_SubgroupSize);
        uint words[BATCH];
        uvec4 colour[BATCH];
        [[unroll]] for (uint k = 0u; k < BATCH; k++) {
            uint first = start + k * gl_SubgroupSize;
            words[k] = active_word(first, depth[k]);
            uint at = (words[k] & bit) != 0u ? origin + first + lane : origin;
            if (COLOR_WORDS == 4u) colour[k] = color4[at];
            else colour[k] = uvec4(color[at], 0u, 0u, 0u);
        }
        [[unroll]] for (uint k = 0u; k < BATCH; k++) {
            uint first = start + k * gl_SubgroupSize;
            uint e = first + lane;
            uint m = words[k];
            uint starts = start_bits(m, before, first, gl_SubgroupSize);
            uint a = pre.y + bitCount(m & below);
            uint r = pre.x + bitCount(starts & upto);
            uint mine = starts & upto;  // run starts in this word up to this pixel
            if ((m & bit) != 0u) {
                uint pos = ap_offset(a, r, STRIDE);
                if (COLOR_WORDS == 4u) {
                    [[unroll]] for (uint c = 0u; c < 4u; c++) ap[pos + c] = colour[k][c];
                    ap[pos + 4u] = depth[k];
                } else {
                    ap2[pos >> 1] = uvec2(colour[k].x, depth[k]);
                }
                if ((starts & bit) != 0u) {
                    uint earlier = starts & below;
                    uint previous = r <= 2u ? 0u : (earlier != 0u ? first + uint(findMSB(earlier)) : pre.z - 1u);
                    ap[pos - 2u] = e - previous;
                }
                uint next_first = k + 1u < BATCH ? words[min(k + 1u, BATCH - 1u)] & 1u : after;
                uint next = lane + 1u < gl_SubgroupSize ? ((m >> lane) >> 1) & 1u : next_first;
                if (next == 0u) {
                    uint len = e + 1u - (mine != 0u ? first + uint(findMSB(mine)) : pre.z - 1u);
                    ap[ap_offset(a + 1u - len, r, STRIDE) - 1u] = len;
                }
                if (e + 1u == n) ap_words[0] = pos + STRIDE;
            } else if (e + 1u == n) {
                // The image ends inactive: the last header counts from this run's first pixel.
                uint from = r <= 1u ? 0u : (mine != 0u ? first + uint(findMSB(mine)) : pre.z - 1u);
                uint pos = ap_offset(a, r - 1u, STRIDE);
                ap[pos] = n - from;
                ap[pos + 1u] = 0u;
                ap_words[0] = pos + 2u;
            }
            pre = combine3(pre, word_sum(m, starts, first));
            before = m >> (gl_SubgroupSize - 1u);
        }
    }
}
