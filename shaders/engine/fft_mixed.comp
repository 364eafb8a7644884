#version 460
// Batched 1D FFTs along the lines (rows or columns) of a stack of complex images, in place,
// for line lengths N = 2^a 3^b 5^c that are not powers of two: a mixed-radix Stockham FFT
// (radices 8, 4, 2, 5, 3) of GROUP_LINES whole lines per workgroup, so the dispatch reads
// and writes every line once, with none of Bluestein's two FFTs of a power of two >= 2N - 1.
//
// Pass p has radix r after sub-transforms of length ns (the product of the earlier radices):
// butterfly j < N/r takes positions j + q*N/r (q < r), multiplies them by W_{ns r}^{q k}
// (k = j mod ns), does a radix-r DFT and puts output q at (j - k)*r + k + q*ns. Each line
// has T invocations; invocation tj does butterflies j = tj + b*T (b < ceil(N/r / T), the
// last maybe idle) holding their values in x[b*r + q], and passes exchange through shared
// memory. The last pass (ns = N/r, so k = j) leaves its outputs at the positions its inputs
// came from, so lines are loaded in the first pass's layout and stored in the last's.
//
// The radices are specialization constants and every loop bound follows from them, so once
// specialised every loop unrolls and every register index is a constant.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1080;        // line length
layout(constant_id = 2) const uint T = 72;          // invocations per line
layout(constant_id = 3) const uint GROUP_LINES = 1; // lines per workgroup
// Neighbouring invocations take neighbouring lines (coalesced when lines are neighbours in
// memory, i.e. columns) instead of neighbouring positions on one line.
layout(constant_id = 4) const bool LINES_FAST = false;
// One padding slot after every 2^PAD_SHIFT shared-memory slots, against bank conflicts of
// the strided scatters (0: none).
layout(constant_id = 5) const uint PAD_SHIFT = 0;
layout(constant_id = 6) const uint SHARED = 1080;   // complex slots in shared memory
layout(constant_id = 7) const uint REGS = 16;       // max over passes of ceil(N/r / T) * r
layout(constant_id = 8) const uint PASSES = 5;
// Radix of pass p in bits 4p..4p+3.
layout(constant_id = 9) const uint RADICES = 0x33358u;

layout(set = 0, binding = 0) buffer Data { vec2 data[]; };
layout(set = 0, binding = 1) readonly buffer Tables { vec2 tables[]; };

// The layout of fft_lines.comp's (the chirp and kernel offsets are unused here).
layout(push_constant) uniform Push {
    uint n;               // line length (N)
    uint lines;           // lines in the whole batch
    uint lines_per_image;
    uint image_stride;    // elements between images
    uint line_stride;     // elements between lines of one image
    uint elem_stride;     // elements between neighbours on a line
    uint inverse;         // 0: exp(-2 pi i ...), 1: exp(+2 pi i ...)
    uint twiddle_at;      // tables[twiddle_at + i] = exp(-2 pi i / N), i < N
    uint chirp_at;
    uint kernel_at;
    float scale;          // applied to every output
};

shared vec2 buf[SHARED];
vec2 x[REGS];

#include "fft_radix.glsl"

// This invocation's line in the workgroup, its first butterfly, the direction, and where
// its line starts in the data (valid: the line exists; the last workgroup may be ragged).
uint ll, tj, base;
bool inv, valid;

uint radix(uint p) {
    return (RADICES >> (4u * p)) & 15u;
}

// Butterflies per invocation of a radix-r pass.
uint per(uint r) {
    return (N / r + T - 1u) / T;
}

// Position of x[b*r + q] when the registers hold a radix-r pass's inputs (or the last
// pass's outputs); N where butterfly b of this invocation is past the end.
uint position(uint r, uint b, uint q) {
    uint j = tj + b * T;
    return j < N / r ? j + q * (N / r) : N;
}

uint slot(uint p) {
    uint s = LINES_FAST ? p * GROUP_LINES + ll : ll * N + p;
    return PAD_SHIFT == 0u ? s : s + (s >> PAD_SHIFT);
}

void load(uint r) {
    [[unroll]] for (uint b = 0u; b < per(r); b++) {
        [[unroll]] for (uint q = 0u; q < r; q++) {
            uint p = position(r, b, q);
            x[b * r + q] = valid && p < N ? data[base + p * elem_stride] : vec2(0.0);
        }
    }
}

void store(uint r) {
    if (!valid) return;
    [[unroll]] for (uint b = 0u; b < per(r); b++) {
        [[unroll]] for (uint q = 0u; q < r; q++) {
            uint p = position(r, b, q);
            if (p < N) data[base + p * elem_stride] = x[b * r + q] * scale;
        }
    }
}

void gather(uint r) {
    [[unroll]] for (uint b = 0u; b < per(r); b++) {
        [[unroll]] for (uint q = 0u; q < r; q++) {
            uint p = position(r, b, q);
            x[b * r + q] = p < N ? buf[slot(p)] : vec2(0.0);
        }
    }
}

void butterflies(uint r, uint ns) {
    [[unroll]] for (uint b = 0u; b < per(r); b++) {
        uint k = (tj + b * T) % ns;
        if (k != 0u) {
            // W_{ns r}^{q k} = exp(-2 pi i q k (N / (ns r)) / N).
            uint step = k * (N / (ns * r));
            [[unroll]] for (uint q = 1u; q < r; q++) x[b * r + q] = cmul(x[b * r + q], table(twiddle_at, q * step, inv));
        }
        uint o = b * r;
        if (r == 8u) dft8(o, 1u, inv);
        else if (r == 4u) dft4(o, 1u, inv);
        else if (r == 2u) dft2(o, 1u);
        else if (r == 5u) dft5(o, 1u, inv);
        else dft3(o, 1u, inv);
    }
}

// Writes a radix-r pass's outputs to their Stockham positions in shared memory.
void scatter(uint r, uint ns) {
    [[unroll]] for (uint b = 0u; b < per(r); b++) {
        uint j = tj + b * T;
        if (j < N / r) {
            uint k = j % ns;
            [[unroll]] for (uint q = 0u; q < r; q++) buf[slot((j - k) * r + k + q * ns)] = x[b * r + q];
        }
    }
}

// Calls F with the radix r as a literal, so that inlined, its loops have constant bounds.
#define WITH_RADIX(r, F) \
    if ((r) == 8u) { F(8u); } else if ((r) == 4u) { F(4u); } else if ((r) == 2u) { F(2u); } \
    else if ((r) == 5u) { F(5u); } else { F(3u); }
#define BUTTERFLIES(R) butterflies(R, ns)
#define SCATTER(R) scatter(R, ns)

void main() {
    inv = inverse != 0u;
    uint t = gl_LocalInvocationID.x;
    ll = LINES_FAST ? t % GROUP_LINES : t / T;
    tj = LINES_FAST ? t / GROUP_LINES : t % T;
    uint line = linear_group_id() * GROUP_LINES + ll;
    valid = line < lines;
    base = (line / lines_per_image) * image_stride + (line % lines_per_image) * line_stride;

    WITH_RADIX(radix(0u), load)
    uint ns = 1u;
    [[unroll]] for (uint p = 0u; p < PASSES; p++) {
        uint r = radix(p);
        WITH_RADIX(r, BUTTERFLIES)
        if (p + 1u < PASSES) {
            // Others may still be gathering the previous pass's values.
            barrier();
            WITH_RADIX(r, SCATTER)
            barrier();
            WITH_RADIX(radix(p + 1u), gather)
        }
        ns *= r;
    }
    WITH_RADIX(radix(PASSES - 1u), store)
}
