#version 460
// Batched 1D FFTs along the lines (rows or columns) of a stack of complex images, in place.
//
// One workgroup transforms GROUP_LINES whole lines of length `n`, held in registers and
// shared memory (fft_stockham.glsl), so the dispatch reads and writes every line exactly
// once. Each line is an FFT of size M (a power of two): M == n directly, or, for any other
// n, Bluestein's chirp-z algorithm with M >= 2n - 1 (multiply by the chirp, FFT, multiply by
// the FFT of the conjugate chirp, inverse FFT, multiply by the chirp) without leaving the
// workgroup.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 8) const bool BLUESTEIN = false;

layout(set = 0, binding = 0) buffer Data { vec2 data[]; };
layout(set = 0, binding = 1) readonly buffer Tables { vec2 tables[]; };

layout(push_constant) uniform Push {
    uint n;               // line length
    uint lines;           // lines in the whole batch
    uint lines_per_image;
    uint image_stride;    // elements between images
    uint line_stride;     // elements between lines of one image
    uint elem_stride;     // elements between neighbours on a line
    uint inverse;         // 0: exp(-2 pi i ...), 1: exp(+2 pi i ...)
    uint twiddle_at;      // tables[twiddle_at + i] = exp(-2 pi i / M), i < M
    uint chirp_at;        // tables[chirp_at + i] = exp(-pi i^2 / n), i < n (Bluestein)
    uint kernel_at;       // FFT_M(conj chirp, wrapped) / M, conjugated for the inverse (Bluestein)
    float scale;          // applied to every output
};

#include "fft_stockham.glsl"

void main() {
    bool inv = inverse != 0u;
    uint ll = local_line();
    uint tj = first_position();
    uint line = linear_group_id() * GROUP_LINES + ll;
    bool valid = line < lines;
    uint base = (line / lines_per_image) * image_stride + (line % lines_per_image) * line_stride;

    [[unroll]] for (uint e = 0u; e < E; e++) {
        uint p = tj + e * T;
        vec2 v = vec2(0.0);
        if (valid && p < n) {
            v = data[base + p * elem_stride];
            if (BLUESTEIN) v = cmul(v, table(chirp_at, p, inv));
        }
        x[e] = v;
    }
    fft(ll, tj, inv);
    if (BLUESTEIN) {
        [[unroll]] for (uint e = 0u; e < E; e++) x[e] = cmul(x[e], table(kernel_at, tj + e * T, inv));
        // The convolution's inverse FFT (unnormalised; 1/m is in the kernel table).
        fft(ll, tj, !inv);
        [[unroll]] for (uint e = 0u; e < E; e++) {
            uint p = tj + e * T;
            if (p < n) x[e] = cmul(x[e], table(chirp_at, p, inv));
        }
    }
    if (valid) {
        [[unroll]] for (uint e = 0u; e < E; e++) {
            uint p = tj + e * T;
            if (p < n) data[base + p * elem_stride] = x[e] * scale;
        }
    }
}
