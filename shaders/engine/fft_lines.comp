#version 460
// Batched 1D FFTs along the lines (rows or columns) of a stack of complex images, in place.
//
// One workgroup transforms `group_lines` lines of length `n`. Each line is an FFT of size
// `m` (a power of two): `m == n` directly, or, for any other `n`, Bluestein's chirp-z
// algorithm with `m >= 2n - 1` (multiply by the chirp, FFT, multiply by the FFT of the
// conjugate chirp, inverse FFT, multiply by the chirp) without leaving the workgroup.
//
// The FFT is Stockham autosort: every invocation holds E (2, 4 or 8) values in registers,
// always at positions tj + e*T of its line (T = m/E invocations per line), does E/R radix-R
// butterflies per pass and exchanges through shared memory between passes. The first pass
// reads global memory directly and the last pass leaves the results in the same positions
// it read, so each dispatch reads and writes its lines exactly once, and in place is safe.
// Radix E everywhere except one smaller first pass when log2(m) is not a multiple of log2(E).
//
// Twiddles and chirps come from a table computed in f64 on the host (no sin/cos here: the
// Vulkan precision of sin/cos is far too loose for 1e-5).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint E = 8;         // values per invocation: 2, 4 or 8
layout(constant_id = 2) const uint SHARED = 4096; // complex slots: group_lines * m

layout(set = 0, binding = 0) buffer Data { vec2 data[]; };
layout(set = 0, binding = 1) readonly buffer Tables { vec2 tables[]; };

layout(push_constant) uniform Push {
    uint n;               // line length
    uint m;               // FFT size (power of two)
    uint log2m;
    uint lines;           // lines in the whole batch
    uint lines_per_image;
    uint image_stride;    // elements between images
    uint line_stride;     // elements between lines of one image
    uint elem_stride;     // elements between neighbours on a line
    uint group_lines;     // lines per workgroup
    uint flags;           // FLAG_*
    uint twiddle_at;      // tables[twiddle_at + i] = exp(-2 pi i / m), i < m
    uint chirp_at;        // tables[chirp_at + i] = exp(-pi i^2 / n), i < n (Bluestein)
    uint kernel_at;       // FFT_m(conj chirp, wrapped) / m, conjugated for the inverse (Bluestein)
    float scale;          // applied to every output
};

const uint FLAG_INVERSE = 1u;
const uint FLAG_BLUESTEIN = 2u;
// Invocations next to each other take neighbouring lines (coalesced column access) instead
// of neighbouring positions on one line (coalesced row access).
const uint FLAG_LINES_FAST = 4u;

shared vec2 buf[SHARED];
vec2 x[8];

vec2 cmul(vec2 a, vec2 b) {
    return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// Multiplies by -i (forward) or +i (inverse).
vec2 rot(vec2 v, bool inv) {
    return inv ? vec2(-v.y, v.x) : vec2(v.y, -v.x);
}

vec2 table(uint at, uint i, bool inv) {
    vec2 v = tables[at + i];
    return inv ? vec2(v.x, -v.y) : v;
}

// Radix-2, -4 and -8 DFTs in place on x[o], x[o + s], ... (o, s constant after unrolling).
void dft2(uint o, uint s) {
    vec2 a = x[o], b = x[o + s];
    x[o] = a + b;
    x[o + s] = a - b;
}

void dft4(uint o, uint s, bool inv) {
    vec2 t0 = x[o] + x[o + 2u * s], t1 = x[o] - x[o + 2u * s];
    vec2 t2 = x[o + s] + x[o + 3u * s], t3 = rot(x[o + s] - x[o + 3u * s], inv);
    x[o] = t0 + t2;
    x[o + s] = t1 + t3;
    x[o + 2u * s] = t0 - t2;
    x[o + 3u * s] = t1 - t3;
}

void dft8(uint o, uint s, bool inv) {
    const float h = 0.70710678118654752;
    // Even and odd halves as radix-4 DFTs, then the radix-2 combination with W8^k.
    vec2 e0 = x[o] + x[o + 4u * s], e1 = x[o] - x[o + 4u * s];
    vec2 e2 = x[o + 2u * s] + x[o + 6u * s], e3 = rot(x[o + 2u * s] - x[o + 6u * s], inv);
    vec2 o0 = x[o + s] + x[o + 5u * s], o1 = x[o + s] - x[o + 5u * s];
    vec2 o2 = x[o + 3u * s] + x[o + 7u * s], o3 = rot(x[o + 3u * s] - x[o + 7u * s], inv);
    vec2 E0 = e0 + e2, E2 = e0 - e2, E1 = e1 + e3, E3 = e1 - e3;
    vec2 O0 = o0 + o2, O2 = o0 - o2, O1 = o1 + o3, O3 = o1 - o3;
    // W8 = (1 - i)/sqrt2 forward, (1 + i)/sqrt2 inverse; W8^2 = rot; W8^3 = rot(W8).
    vec2 w1 = inv ? vec2(h * (O1.x - O1.y), h * (O1.x + O1.y)) : vec2(h * (O1.x + O1.y), h * (O1.y - O1.x));
    vec2 w2 = rot(O2, inv);
    vec2 w3 = inv ? vec2(-h * (O3.x + O3.y), h * (O3.x - O3.y)) : vec2(h * (O3.y - O3.x), -h * (O3.x + O3.y));
    x[o] = E0 + O0;
    x[o + 4u * s] = E0 - O0;
    x[o + s] = E1 + w1;
    x[o + 5u * s] = E1 - w1;
    x[o + 2u * s] = E2 + w2;
    x[o + 6u * s] = E2 - w2;
    x[o + 3u * s] = E3 + w3;
    x[o + 7u * s] = E3 - w3;
}

// Shared-memory slot of position p of this workgroup's line ll.
uint slot(uint ll, uint p, bool lines_fast) {
    return lines_fast ? p * group_lines + ll : ll * m + p;
}

// One radix-r Stockham pass over sub-transforms of length ns: butterfly j (this invocation
// owns j = tj + b*T) takes x[b + q*(E/r)] for q < r, i.e. positions j + q*m/r.
void butterflies(uint r, uint log2r, uint ns, uint log2ns, uint tj, uint T, bool inv) {
    uint per = E / r;
    for (uint b = 0u; b < per; b++) {
        uint k = (tj + b * T) & (ns - 1u);
        if (k != 0u) {
            // W_{ns r}^{q k} = exp(-2 pi i q k m / (ns r) / m).
            uint step = k << (log2m - log2ns - log2r);
            for (uint q = 1u; q < r; q++) x[b + q * per] = cmul(x[b + q * per], table(twiddle_at, q * step, inv));
        }
        if (r == 8u) dft8(b, per, inv);
        else if (r == 4u) dft4(b, per, inv);
        else dft2(b, per);
    }
}

// Scatters the pass results to their Stockham positions and gathers this invocation's
// positions for the next pass.
void exchange(uint r, uint ns, uint ll, uint tj, uint T, bool lines_fast) {
    uint per = E / r;
    barrier();
    for (uint b = 0u; b < per; b++) {
        uint j = tj + b * T;
        uint k = j & (ns - 1u);
        uint out_pos = (j - k) * r + k;
        for (uint q = 0u; q < r; q++) buf[slot(ll, out_pos + q * ns, lines_fast)] = x[b + q * per];
    }
    barrier();
    for (uint e = 0u; e < E; e++) x[e] = buf[slot(ll, tj + e * T, lines_fast)];
}

// One Stockham pass; the radix is a literal in each branch so that, once inlined, every
// register index is a constant (a dynamic index would push x[] out to local memory).
bool stockham_pass(uint log2r, uint ns, uint log2ns, uint ll, uint tj, uint T, bool inv, bool lines_fast) {
    uint r = 1u << log2r;
    if (log2r == 3u) butterflies(8u, 3u, ns, log2ns, tj, T, inv);
    else if (log2r == 2u) butterflies(4u, 2u, ns, log2ns, tj, T, inv);
    else butterflies(2u, 1u, ns, log2ns, tj, T, inv);
    if (ns * r == m) return false;
    if (log2r == 3u) exchange(8u, ns, ll, tj, T, lines_fast);
    else if (log2r == 2u) exchange(4u, ns, ll, tj, T, lines_fast);
    else exchange(2u, ns, ll, tj, T, lines_fast);
    return true;
}

// FFT of size m of the values in x (positions tj + e*T); results in the same positions.
void fft(uint ll, uint tj, uint T, bool inv, bool lines_fast) {
    uint log2e = findLSB(E);
    uint first = log2m % log2e;
    uint ns = 1u, log2ns = 0u;
    if (first != 0u) {
        if (!stockham_pass(first, ns, log2ns, ll, tj, T, inv, lines_fast)) return;
        ns <<= first;
        log2ns += first;
    }
    while (stockham_pass(log2e, ns, log2ns, ll, tj, T, inv, lines_fast)) {
        ns <<= log2e;
        log2ns += log2e;
    }
}

void main() {
    bool inv = (flags & FLAG_INVERSE) != 0u;
    bool bluestein = (flags & FLAG_BLUESTEIN) != 0u;
    bool lines_fast = (flags & FLAG_LINES_FAST) != 0u;
    uint T = m / E;
    uint t = gl_LocalInvocationID.x;
    uint ll = lines_fast ? t % group_lines : t / T;
    uint tj = lines_fast ? t / group_lines : t % T;
    uint line = linear_group_id() * group_lines + ll;
    bool valid = line < lines;
    uint base = (line / lines_per_image) * image_stride + (line % lines_per_image) * line_stride;

    for (uint e = 0u; e < E; e++) {
        uint p = tj + e * T;
        vec2 v = vec2(0.0);
        if (valid && p < n) {
            v = data[base + p * elem_stride];
            if (bluestein) v = cmul(v, table(chirp_at, p, inv));
        }
        x[e] = v;
    }
    fft(ll, tj, T, inv, lines_fast);
    if (bluestein) {
        for (uint e = 0u; e < E; e++) x[e] = cmul(x[e], table(kernel_at, tj + e * T, inv));
        // The convolution's inverse FFT (unnormalised; 1/m is in the kernel table).
        fft(ll, tj, T, !inv, lines_fast);
        for (uint e = 0u; e < E; e++) {
            uint p = tj + e * T;
            if (p < n) x[e] = cmul(x[e], table(chirp_at, p, inv));
        }
    }
    if (valid) {
        for (uint e = 0u; e < E; e++) {
            uint p = tj + e * T;
            if (p < n) data[base + p * elem_stride] = x[e] * scale;
        }
    }
}
