#version 460
// The backward pass of the renderer: the gradient of the rendered image's squared error
// sum_pixels |clamp(out) - target|^2 with respect to each kernel's prepared parameters, over
// the pixels of the box exact culling keeps it in (the whole image when no tile has a
// bound). Per pixel, with w = exp(l - lse) the kernel's gate, y its expert, z = U d
// (U = L^-1, d = x - mu_X) and r = 2 (clamp(out) - target) (the clamp passed straight
// through):
//   dmu_Y = w r,  dG = w r z^T,  dc = w (y - out).r,  dz = -dc z + G^T w r,
//   dU = dz d^T (lower triangle),  dmu_X = -U^T dz.
// SPLITS workgroups per kernel: a box of more than MIN_SPLIT pixels is cut into up to SPLITS
// equal runs of its pixels, one per workgroup, so that the widest kernels do not leave the
// GPU waiting on one workgroup's long loop. Each workgroup sums its pixels (each thread,
// then shared memory in a fixed order) into its partial record; refine_grad_sum adds a
// kernel's partials in order (deterministic; no float atomics). Record layout (GRAD_STRIDE
// floats): dmu_X[P], dU packed lower, dc, dmu_Y[3], dG[3][P], then the pixels walked (the
// bench reads the box sizes from it). pc.phase is the view's index: the target is read at
// that view.
#include "common.glsl"
#include "smoe.glsl"

layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer Prepared { float prep[]; };
layout(set = 0, binding = 1) readonly buffer Cull { float cullrec[]; };
layout(set = 0, binding = 2) readonly buffer Params { uint params[]; };
layout(set = 0, binding = 3) readonly buffer State { float state[]; };
layout(set = 0, binding = 4) readonly buffer Target { float target[]; };
layout(set = 0, binding = 5) writeonly buffer Partial { float partial[]; };
layout(constant_id = 3) const uint SPLITS = 8;

const uint TRI = P * (P + 1u) / 2u;
const uint G_U = P;
const uint G_C = P + TRI;
const uint G_MUY = G_C + 1u;
const uint G_G = G_MUY + 3u;
const uint GS = G_G + 3u * P;
const uint GRAD_STRIDE = P == 2u ? 16u : 32u;
const uint THREADS = 64u;
// Pixels per workgroup below which a box is not cut further.
const uint MIN_SPLIT = 1024u;

shared float red[THREADS * 32u];

void main() {
    uint group = linear_group_id();
    uint k = group / SPLITS, part = group % SPLITS;
    if (k >= pc.kernels) return;
    uint lid = gl_LocalInvocationIndex;
    uint b = k * PREP_STRIDE;
    uint cb = k * CULL_STRIDE;
    ivec4 box;
    SUPPORT_BOX(cullrec, cb, params[0], pc.span, pc.margin, pc.width, pc.height, box);
    int x0 = box.x, y0 = box.y, x1 = box.z, y1 = box.w;
    float acc[GS];
    for (uint g = 0u; g < GS; g++) acc[g] = 0.0;
    uint bw = x1 >= x0 ? uint(x1 - x0 + 1) : 0u;
    uint bh = y1 >= y0 ? uint(y1 - y0 + 1) : 0u;
    uint view = pc.phase * pc.width * pc.height;
    uint area = bw * bh;
    uint parts = clamp((area + MIN_SPLIT - 1u) / MIN_SPLIT, 1u, SPLITS);
    uint run = (area + parts - 1u) / parts;
    // Empty for the workgroups past `parts` (their partial is zero).
    uint lo = min(part * run, area), hi = min(lo + run, area);
    for (uint e = lo + lid; e < hi; e += THREADS) {
        uint col = uint(x0) + e % bw, row = uint(y0) + e / bw;
        float x[4] = float[4]((float(col) + 0.5) / float(pc.width), (float(row) + 0.5) / float(pc.height),
                              pc.view_u, pc.view_v);
        float d[4], z[4];
        float q = 0.0;
        for (uint i = 0u; i < P; i++) {
            d[i] = x[i] - prep[b + i];
            float a = d[i];
            for (uint m = 0u; m < i; m++) a -= prep[b + OFF_MAT + packed_index(i, m)] * z[m];
            z[i] = a * prep[b + OFF_MAT + packed_index(i, i)];
            q += z[i] * z[i];
        }
        uint px = row * pc.width + col;
        float w = exp(prep[b + OFF_C] - 0.5 * q - state[4u * px + 3u]);
        if (!(w > 1e-12)) continue;
        vec3 out_rgb = vec3(state[4u * px], state[4u * px + 1u], state[4u * px + 2u]);
        uint t = 3u * (view + px);
        vec3 r = 2.0 * (clamp(out_rgb, 0.0, 1.0) - vec3(target[t], target[t + 1u], target[t + 2u]));
        vec3 y = vec3(prep[b + OFF_MUY], prep[b + OFF_MUY + 1u], prep[b + OFF_MUY + 2u]);
        for (uint i = 0u; i < P; i++) {
            y += z[i] * vec3(prep[b + OFF_REG + i], prep[b + OFF_REG + P + i], prep[b + OFF_REG + 2u * P + i]);
        }
        vec3 wr = w * r;
        float gl = w * dot(y - out_rgb, r);
        acc[G_C] += gl;
        float dz[4];
        for (uint c = 0u; c < 3u; c++) acc[G_MUY + c] += wr[c];
        for (uint i = 0u; i < P; i++) {
            vec3 gi = vec3(prep[b + OFF_REG + i], prep[b + OFF_REG + P + i], prep[b + OFF_REG + 2u * P + i]);
            for (uint c = 0u; c < 3u; c++) acc[G_G + c * P + i] += wr[c] * z[i];
            dz[i] = -gl * z[i] + dot(gi, wr);
            for (uint m = 0u; m <= i; m++) acc[G_U + packed_index(i, m)] += dz[i] * d[m];
        }
        // dmu_X = -U^T dz = -L^-T dz: back substitution with the packed factor.
        float a[4];
        for (int i = int(P) - 1; i >= 0; i--) {
            float s = dz[i];
            for (uint m = uint(i) + 1u; m < P; m++) s -= prep[b + OFF_MAT + packed_index(m, uint(i))] * a[m];
            a[i] = s * prep[b + OFF_MAT + packed_index(uint(i), uint(i))];
            acc[i] -= a[i];
        }
    }
    for (uint g = 0u; g < GS; g++) red[g * THREADS + lid] = acc[g];
    barrier();
    if (lid < GRAD_STRIDE) {
        float s = 0.0;
        if (lid < GS) {
            for (uint i = 0u; i < THREADS; i++) s += red[lid * THREADS + i];
        } else if (lid == GS) {
            s = float(hi - lo);
        }
        partial[group * GRAD_STRIDE + lid] = s;
    }
}
