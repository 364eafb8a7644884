// Compensated (Kahan) f32 accumulation, so long per-invocation loops keep their error at a
// few ulps instead of growing with the loop length. `precise` stops the compiler from
// reassociating the compensation away.
#ifndef TESSERA_KAHAN_GLSL
#define TESSERA_KAHAN_GLSL

struct Kahan {
    float sum;
    float c;
};

Kahan kahan_new() {
    return Kahan(0.0, 0.0);
}

void kahan_add(inout Kahan k, float x) {
    precise float y = x - k.c;
    precise float t = k.sum + y;
    precise float c = (t - k.sum) - y;
    k.c = c;
    k.sum = t;
}

#endif
