// Writing an Active Pixel payload from a tile's mask words (ap_tile.glsl) once their
// prefixes are known: run headers per mask word, pixels per element. The includer declares
// `ap` and `ap2` (the payload as words and as word pairs) and `ap_words` (its size) and
// includes ap_tile.glsl first.
#ifndef TESSERA_AP_PAYLOAD_GLSL
#define TESSERA_AP_PAYLOAD_GLSL

// (runs, actives, last start's pixel + 1) of everything before word w
shared uvec3 s_prefix[AP_MAX_WORDS];

// Pixel of element j of a word whose first element is at (row0, col0) of the element grid: a
// division only where the word runs past the end of its box row.
uint word_element_pixel(uint row0, uint col0, uint j) {
    uint col = col0 + j;
    uint rows = col >= el_stride ? col / el_stride : 0u;
    return (el_y0 + row0 + rows) * el_width + el_x0 + col - rows * el_stride;
}

// The run headers of word w of the tile at element `base`: for each
// active run that begins in the word, its inactive count (from the previous run's first
// pixel, or from pixel 0 for the first run); for each that ends in it, its active count (an
// active run has no gap element, so its pixels are its elements). One invocation per word
// walks the word's run boundaries: in a scatter per element, the header branches that nearly
// every 32 elements of a dense frame take cost the one-pass kernel 40% of its time on the
// H100 (run W in BENCHMARKS.md).
void write_headers(uint w, uint base) {
    uint e0 = base + 32u * w;
    uint m = s_mask[w];
    uint starts = s_start[w];
    uint next = w + 1u < WORDS ? s_mask[w + 1u] & 1u : s_edge[1];
    uint begins = starts & m;
    uint ends = m & ~((m >> 1) | (next << 31));
    uint bounds = begins | ends;
    if (e0 >= el_n || bounds == 0u) return;
    uvec3 pre = s_prefix[w];
    uint row0 = e0 / el_stride;
    uint col0 = e0 - row0 * el_stride;
    while (bounds != 0u) {
        uint j = uint(findLSB(bounds));
        bounds &= bounds - 1u;
        uint below = (1u << j) - 1u;
        uint upto = below | (1u << j);
        uint a = pre.y + bitCount(m & below);
        uint r = pre.x + bitCount(starts & upto);
        uint pixel = word_element_pixel(row0, col0, j);
        if ((begins & (1u << j)) != 0u) {
            uint earlier = starts & below;
            uint previous = r <= 2u ? 0u : (earlier != 0u ? word_element_pixel(row0, col0, uint(findMSB(earlier))) : pre.z - 1u);
            ap[ap_offset(a, r) - 2u] = pixel - previous;
        }
        if ((ends & (1u << j)) != 0u) {
            uint mine = starts & upto;
            uint len = mine != 0u ? j + 1u - uint(findMSB(mine)) : pixel + 2u - pre.z;
            ap[ap_offset(a + 1u - len, r) - 1u] = len;
        }
    }
}

// Element `off` of the tile at `base`, active (`on`) or the sequence's last element: an
// active element writes its (colour, depth bits) `value` at Equation 1's offset; the last
// element writes the payload size, and the final header when the image ends inactive.
void write_element(uint base, uint off, bool on, uvec2 value) {
    bool last = base + off + 1u == el_n;
    uint w = off >> 5;
    uint bit = 1u << (off & 31u);
    uint starts = s_start[w];
    uvec3 pre = s_prefix[w];
    uint a = pre.y + bitCount(s_mask[w] & (bit - 1u));
    uint r = pre.x + bitCount(starts & (bit | (bit - 1u)));
    if (on) {
        uint pos = ap_offset(a, r);
        ap2[pos >> 1] = value;
        if (last) {
            uint tail = el_total - el_end;
            if (tail > 0u) {
                ap[pos + 2u] = tail;
                ap[pos + 3u] = 0u;
                ap_words[0] = pos + 4u;
            } else {
                ap_words[0] = pos + 2u;
            }
        }
    } else {
        // The image ends inactive: the last header counts from this run's first pixel.
        uint mine = starts & (bit | (bit - 1u));
        uint first = r <= 1u ? 0u : (mine != 0u ? element_pixel(base + 32u * w + uint(findMSB(mine))) : pre.z - 1u);
        uint pos = ap_offset(a, r - 1u);
        ap[pos] = el_total - first;
        ap[pos + 1u] = 0u;
        ap_words[0] = pos + 2u;
    }
}

// The payload of an image without active pixels: one all-inactive run.
void write_empty() {
    ap[0] = el_total;
    ap[1] = 0u;
    ap_words[0] = 2u;
}

#endif
