// Complex helpers and the small DFTs of the FFT kernels, in place on the includer's register
// array `x` (declared before including; indices are constants once loops unroll).
//
// Before including, declare `vec2 x[...]`, `readonly buffer { vec2 tables[]; }` and a push
// constant `twiddle_at` (see table()).
#ifndef TESSERA_FFT_RADIX_GLSL
#define TESSERA_FFT_RADIX_GLSL

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

// Radix-2, -3, -4, -5 and -8 DFTs in place on x[o], x[o + s], ... (o, s constant after
// unrolling), with the sign of the exponent of `inv`.
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

void dft3(uint o, uint s, bool inv) {
    const float h = 0.86602540378443865; // sin(2 pi / 3)
    vec2 a = x[o], b = x[o + s], c = x[o + 2u * s];
    vec2 t = b + c, m = a - 0.5 * t, d = rot(h * (b - c), inv);
    x[o] = a + t;
    x[o + s] = m + d;
    x[o + 2u * s] = m - d;
}

void dft5(uint o, uint s, bool inv) {
    // cos and sin of 2 pi / 5 and 4 pi / 5.
    const float c1 = 0.30901699437494742, c2 = -0.80901699437494742;
    const float s1 = 0.95105651629515357, s2 = 0.58778525229247313;
    vec2 a = x[o];
    vec2 t1 = x[o + s] + x[o + 4u * s], t3 = x[o + s] - x[o + 4u * s];
    vec2 t2 = x[o + 2u * s] + x[o + 3u * s], t4 = x[o + 2u * s] - x[o + 3u * s];
    vec2 b1 = a + c1 * t1 + c2 * t2, b2 = a + c2 * t1 + c1 * t2;
    vec2 d1 = rot(s1 * t3 + s2 * t4, inv), d2 = rot(s2 * t3 - s1 * t4, inv);
    x[o] = a + t1 + t2;
    x[o + s] = b1 + d1;
    x[o + 4u * s] = b1 - d1;
    x[o + 2u * s] = b2 + d2;
    x[o + 3u * s] = b2 - d2;
}

#endif
