#version 460
// Per kernel: keeps the parameters if this step's loss is the best so far, then (update)
// one Adam step on them: the natural gradient (refine_grad) chained to the optimised
// parameters, Adam's moments, the step scaled per kind (centres 20 pixels, ln pi 2, mu_Y
// 0.5, the rest 1, times the learning rate), and the clamps that keep the model valid in
// f32; the largest ln pi goes to thmax[step + 1] for refine_expand's floor. The host's
// `Params::adam_step` is the f64 twin.
#include "refine.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer V { float v[]; };
layout(set = 0, binding = 1) buffer M { float m1[]; };
layout(set = 0, binding = 2) buffer M2 { float m2[]; };
layout(set = 0, binding = 3) readonly buffer Grad { float grad[]; };
layout(set = 0, binding = 4) writeonly buffer Keep { float keep[]; };
layout(set = 0, binding = 5) readonly buffer Track { float track[]; };
layout(set = 0, binding = 6) readonly buffer Best { float best[]; };
layout(set = 0, binding = 7) buffer Thmax { uint thmax[]; };

const float B1 = 0.9, B2 = 0.999;

void main() {
    uint k = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (k >= pc.kernels) return;
    uint o = k * STRIDE, go = k * GRAD_STRIDE;
    if (track[pc.step] < best[pc.step]) {
        for (uint i = 0u; i < STRIDE; i++) keep[o + i] = v[o + i];
    }
    if (pc.update == 0u) return;
    float ch[STRIDE];
    float gc = grad[go + THETA];
    for (uint i = 0u; i < P; i++) {
        ch[i] = grad[go + i] / pc.extent[i];
        // Row i of U scales with exp(s_i); c holds ln U_ii = s_i + ln E_i.
        float e = exp(v[o + S_OFF + i]);
        float s = grad[go + P + tri(i, i)] * e * pc.extent[i] + gc;
        for (uint m = 0u; m < i; m++) {
            float gu = grad[go + P + tri(i, m)] * e * pc.extent[m];
            s += gu * v[o + N_OFF + shear(i, m)];
            ch[N_OFF + shear(i, m)] = gu;
        }
        ch[S_OFF + i] = s;
    }
    ch[THETA] = gc;
    for (uint i = MUY; i < STRIDE; i++) ch[i] = grad[go + i];
    for (uint i = 0u; i < STRIDE; i++) {
        float scale = i < P ? 20.0 : (i == THETA ? 2.0 : (i >= MUY && i < G_OFF ? 0.5 : 1.0));
        float g = ch[i];
        float a = B1 * m1[o + i] + (1.0 - B1) * g;
        float b = B2 * m2[o + i] + (1.0 - B2) * g * g;
        m1[o + i] = a;
        m2[o + i] = b;
        float x = v[o + i] - pc.lr * scale * (a / pc.c1) / (sqrt(b / pc.c2) + 1e-12);
        if (i < P) {
            x = clamp(x, -pc.extent[i], 2.0 * pc.extent[i]);
        } else if (i < N_OFF) {
            x = clamp(x, pc.min_log_diag, MAX_LOG_DIAG);
        } else if (i < THETA) {
            x = clamp(x, -MAX_SHEAR, MAX_SHEAR);
        } else if (i >= MUY && i < G_OFF) {
            x = clamp(x, -MAX_COLOUR, MAX_COLOUR);
        } else if (i >= G_OFF) {
            x = clamp(x, -MAX_SLOPE, MAX_SLOPE);
        }
        v[o + i] = x;
    }
    atomicMax(thmax[pc.step + 1u], float_key(v[o + THETA]));
}
