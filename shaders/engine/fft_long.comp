#version 460
// One stage of the four-step FFT for lines too long for one workgroup's shared memory.
//
// A line's FFT of size M (its length, or for other lengths n the Bluestein size M >= 2n - 1)
// is split as M = M1 * M2, position n = n2 + M2*n1 and frequency k = k1 + M1*k2:
//   stage A: for each n2, FFT_M1 over n1 (stride M2), times exp(-+2 pi i n2 k1 / M), to scratch
//            at logical index n2 + M2*k1;
//   stage B: for each k1, FFT_M2 over the contiguous n2 -> X[k1 + M1*k2]. Powers of two write
//            that to the data in natural order. Bluestein multiplies by the FFT of the chirp
//            filter and starts the inverse FFT of the convolution at once (the same steps
//            backwards: FFT_M2 over k2, twiddle) back into scratch;
//   stage C: (Bluestein) for each n2, the inverse FFT_M1 over k1, times the chirp, to the data.
// So a power-of-two line takes 2 dispatches and a Bluestein line 3. Every sub-line FFT is the
// in-workgroup Stockham FFT of fft_stockham.glsl with M = 2^LOG2M (M1 in A and C, M2 in B).
//
// Logical element n of long line l lives in the data at
//   (l / lines_per_image) * image_stride + (l % lines_per_image) * line_stride + n * elem_stride
// and in the scratch at l * scratch_line + n * scratch_elem.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(constant_id = 8) const bool BLUESTEIN = false;
layout(constant_id = 9) const uint STAGE = 0; // 0: A, 1: B, 2: C
// Whether the sub-lines of one long line are numbered consecutively (rows, where they are
// neighbours in memory) or the same sub-line of consecutive long lines is (columns).
layout(constant_id = 10) const bool ROWS = true;

layout(set = 0, binding = 0) buffer Data { vec2 data[]; };
layout(set = 0, binding = 1) buffer Scratch { vec2 scratch[]; };
layout(set = 0, binding = 2) readonly buffer Tables { vec2 tables[]; };

layout(push_constant) uniform Push {
    uint n;               // line length
    uint lines;           // long lines in the whole batch
    uint lines_per_image;
    uint image_stride;
    uint line_stride;
    uint elem_stride;
    uint scratch_line;
    uint scratch_elem;
    uint log2_total;      // log2 of the whole line's FFT size
    uint inverse;         // 0: exp(-2 pi i ...), 1: exp(+2 pi i ...)
    uint twiddle_at;      // exp(-2 pi i / 2^LOG2M), for the sub-line FFTs
    uint total_twiddle_at; // exp(-2 pi i / 2^log2_total), for the four-step twiddles
    uint chirp_at;        // Bluestein chirp exp(-pi i j^2 / n), j < n
    uint kernel_at;       // FFT(conj chirp, wrapped) / 2^log2_total, natural order
    float scale;          // applied to every value written to the data
};

#include "fft_stockham.glsl"

void main() {
    bool inv = inverse != 0u;
    uint ll = local_line();
    uint tj = first_position();
    uint log2c = log2_total - LOG2M;
    uint subs = 1u << log2c; // sub-lines per long line
    uint mask = (1u << log2_total) - 1u;
    uint sub = linear_group_id() * GROUP_LINES + ll;
    bool valid = sub < lines * subs;
    uint l = ROWS ? sub >> log2c : sub % lines;
    uint c = ROWS ? sub & (subs - 1u) : sub / lines; // n2 in stages A and C, k1 in B
    uint dbase = (l / lines_per_image) * image_stride + (l % lines_per_image) * line_stride;
    uint sbase = l * scratch_line;

    if (STAGE == 1u) {
        [[unroll]] for (uint e = 0u; e < E; e++) {
            uint at = (c << LOG2M) + tj + e * T;
            x[e] = valid ? scratch[sbase + at * scratch_elem] : vec2(0.0);
        }
        fft(ll, tj, inv);
        if (BLUESTEIN) {
            [[unroll]] for (uint e = 0u; e < E; e++) {
                x[e] = cmul(x[e], table(kernel_at, c + ((tj + e * T) << log2c), inv));
            }
            // The convolution's inverse FFT begins: its sign is the opposite one.
            fft(ll, tj, !inv);
            if (valid) {
                [[unroll]] for (uint e = 0u; e < E; e++) {
                    uint p = tj + e * T;
                    scratch[sbase + ((c << LOG2M) + p) * scratch_elem] =
                        cmul(x[e], table(total_twiddle_at, (c * p) & mask, !inv));
                }
            }
        } else if (valid) {
            [[unroll]] for (uint e = 0u; e < E; e++) {
                uint k = c + ((tj + e * T) << log2c);
                data[dbase + k * elem_stride] = x[e] * scale;
            }
        }
        return;
    }

    // Stages A and C: the sub-line of position c over the stride 2^log2c.
    bool first = STAGE == 0u;
    [[unroll]] for (uint e = 0u; e < E; e++) {
        uint at = c + ((tj + e * T) << log2c);
        vec2 v = vec2(0.0);
        if (valid && first && at < n) {
            v = data[dbase + at * elem_stride];
            if (BLUESTEIN) v = cmul(v, table(chirp_at, at, inv));
        } else if (valid && !first) {
            v = scratch[sbase + at * scratch_elem];
        }
        x[e] = v;
    }
    fft(ll, tj, first ? inv : !inv);
    if (!valid) return;
    [[unroll]] for (uint e = 0u; e < E; e++) {
        uint p = tj + e * T;
        uint at = c + (p << log2c);
        if (first) {
            scratch[sbase + at * scratch_elem] = cmul(x[e], table(total_twiddle_at, (c * p) & mask, inv));
        } else if (at < n) {
            data[dbase + at * elem_stride] = cmul(x[e], table(chirp_at, at, inv)) * scale;
        }
    }
}
