// The in-workgroup Stockham FFT shared by the FFT kernels (shaders/engine/fft_*.comp).
//
// Every invocation holds E (2, 4 or 8) values of one line in registers, always at positions
// tj + e*T (T = M/E invocations per line), does E/R radix-R butterflies per pass and
// exchanges through shared memory between passes; the last pass leaves the results in the
// positions it read, so callers load and store lines straight from and to global memory.
// Radix E everywhere except one smaller first pass when log2(M) is not a multiple of log2(E).
// The shape is specialised, so every loop unrolls with constant register indices.
//
// Needs GL_EXT_control_flow_attributes. Before including, declare `readonly buffer { vec2 tables[]; }` and a push constant
// `twiddle_at` with tables[twiddle_at + i] = exp(-2 pi i / M) for i < M (from the host in
// f64: the Vulkan precision of sin/cos is far too loose for 1e-5).
#ifndef TESSERA_FFT_STOCKHAM_GLSL
#define TESSERA_FFT_STOCKHAM_GLSL

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint E = 8;           // values per invocation: 2, 4 or 8
layout(constant_id = 2) const uint LOG2M = 9;       // FFT size M = 2^LOG2M
layout(constant_id = 3) const uint GROUP_LINES = 1; // lines per workgroup
// Neighbouring invocations take neighbouring lines (coalesced access when lines are
// neighbours in memory) instead of neighbouring positions on one line.
layout(constant_id = 4) const bool LINES_FAST = false;
// Without LINES_FAST: one padding slot after every 2^PAD_SHIFT, so the strided Stockham
// scatter of the early passes does not hit the same shared-memory banks (0: no padding).
layout(constant_id = 5) const uint PAD_SHIFT = 0;
layout(constant_id = 6) const uint SHARED = 4096;   // complex slots in shared memory
// Exchange the real, then the imaginary parts, each slot() a float of `buf` (slot s is
// buf[s / 2][s % 2]) rather than a complex: half the shared memory per line.
layout(constant_id = 7) const bool SPLIT = false;

const uint M = 1u << LOG2M;
const uint T = M / E; // invocations per line

shared vec2 buf[SHARED];
vec2 x[8];

// This invocation's line in the workgroup and its first position on it.
uint local_line() {
    uint t = gl_LocalInvocationID.x;
    return LINES_FAST ? t % GROUP_LINES : t / T;
}

uint first_position() {
    uint t = gl_LocalInvocationID.x;
    return LINES_FAST ? t / GROUP_LINES : t % T;
}

#include "fft_radix.glsl"

// Shared-memory slot of position p of this workgroup's line ll.
uint slot(uint ll, uint p) {
    if (LINES_FAST) return p * GROUP_LINES + ll;
    uint padded = PAD_SHIFT == 0u ? M : M + (M >> PAD_SHIFT);
    return ll * padded + (PAD_SHIFT == 0u ? p : p + (p >> PAD_SHIFT));
}

// One radix-r Stockham pass over sub-transforms of length ns: butterfly j (this invocation
// owns j = tj + b*T) takes x[b + q*(E/r)] for q < r, i.e. positions j + q*m/r.
void butterflies(uint r, uint log2r, uint ns, uint log2ns, uint tj, bool inv) {
    uint per = E / r;
    [[unroll]] for (uint b = 0u; b < per; b++) {
        uint k = (tj + b * T) & (ns - 1u);
        if (k != 0u) {
            // W_{ns r}^{q k} = exp(-2 pi i q k m / (ns r) / m).
            uint step = k << (LOG2M - log2ns - log2r);
            [[unroll]] for (uint q = 1u; q < r; q++) {
                x[b + q * per] = cmul(x[b + q * per], table(twiddle_at, q * step, inv));
            }
        }
        if (r == 8u) dft8(b, per, inv);
        else if (r == 4u) dft4(b, per, inv);
        else dft2(b, per);
    }
}

// Shared-memory slot of output q of this invocation's butterfly b in a radix-r pass over
// sub-transforms of length ns: its Stockham position.
uint scatter_slot(uint r, uint ns, uint ll, uint tj, uint b, uint q) {
    uint j = tj + b * T;
    uint k = j & (ns - 1u);
    return slot(ll, (j - k) * r + k + q * ns);
}

// Scatters the pass results to their Stockham positions and gathers this invocation's
// positions for the next pass.
void exchange(uint r, uint ns, uint ll, uint tj) {
    uint per = E / r;
    if (SPLIT) {
        [[unroll]] for (uint c = 0u; c < 2u; c++) {
            barrier();
            [[unroll]] for (uint b = 0u; b < per; b++) {
                [[unroll]] for (uint q = 0u; q < r; q++) {
                    uint s = scatter_slot(r, ns, ll, tj, b, q);
                    buf[s >> 1u][s & 1u] = x[b + q * per][c];
                }
            }
            barrier();
            [[unroll]] for (uint e = 0u; e < E; e++) {
                uint s = slot(ll, tj + e * T);
                x[e][c] = buf[s >> 1u][s & 1u];
            }
        }
        return;
    }
    barrier();
    [[unroll]] for (uint b = 0u; b < per; b++) {
        [[unroll]] for (uint q = 0u; q < r; q++) buf[scatter_slot(r, ns, ll, tj, b, q)] = x[b + q * per];
    }
    barrier();
    [[unroll]] for (uint e = 0u; e < E; e++) x[e] = buf[slot(ll, tj + e * T)];
}

// One Stockham pass; the radix is a literal in each branch so that, once inlined, every
// register index is a constant (a dynamic index would push x[] out to local memory).
// Returns false after the last pass, whose results stay in registers.
bool stockham_pass(uint log2r, uint ns, uint log2ns, uint ll, uint tj, bool inv) {
    uint r = 1u << log2r;
    if (log2r == 3u) butterflies(8u, 3u, ns, log2ns, tj, inv);
    else if (log2r == 2u) butterflies(4u, 2u, ns, log2ns, tj, inv);
    else butterflies(2u, 1u, ns, log2ns, tj, inv);
    if (ns * r == M) return false;
    if (log2r == 3u) exchange(8u, ns, ll, tj);
    else if (log2r == 2u) exchange(4u, ns, ll, tj);
    else exchange(2u, ns, ll, tj);
    return true;
}

// FFT of size m of the values in x (positions tj + e*T); results in the same positions.
// Radix E, except one smaller first pass when log2(m) is not a multiple of log2(E).
void fft(uint ll, uint tj, bool inv) {
    uint log2e = findLSB(E);
    uint first = LOG2M % log2e;
    uint ns = 1u, log2ns = 0u;
    if (first != 0u) {
        if (!stockham_pass(first, ns, log2ns, ll, tj, inv)) return;
        ns <<= first;
        log2ns += first;
    }
    [[unroll]] for (uint pass = 0u; pass < LOG2M / log2e; pass++) {
        if (!stockham_pass(log2e, ns, log2ns, ll, tj, inv)) return;
        ns <<= log2e;
        log2ns += log2e;
    }
}

#endif
