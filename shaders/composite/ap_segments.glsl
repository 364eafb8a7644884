// Looking up pixels of Active Pixel encoded inputs on the GPU. The host describes each
// input's active runs as segments (first pixel, pixel count, word offset of its first pixel
// in `payload`), listed while it validates the payloads; `inputs` holds each input's (first
// segment, segment count). The includer declares the three buffers.
#ifndef TESSERA_AP_SEGMENTS_GLSL
#define TESSERA_AP_SEGMENTS_GLSL

// Whether pixel p of input j is active, and if so the word offset of its colour (its depth
// bits follow), by binary search for the last segment starting at or before p.
bool segment_pixel(uint j, uint p, out uint word) {
    uint first = inputs[2u * j];
    uint count = inputs[2u * j + 1u];
    uint lo = 0u, hi = count;
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        if (segments[3u * (first + mid)] <= p) lo = mid + 1u; else hi = mid;
    }
    word = 0u;
    if (lo == 0u) return false;
    uint s = first + lo - 1u;
    uint start = segments[3u * s];
    if (p - start >= segments[3u * s + 1u]) return false;
    word = segments[3u * s + 2u] + 2u * (p - start);
    return true;
}

#endif
