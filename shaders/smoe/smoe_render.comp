#version 460
// One workgroup per tile: every pixel of the tile blends the tile's kernels (Eq. 5, 8, 9)
// with a log-domain online softmax (running maximum, rescaled sums), so no weight
// underflows however far the pixel is from the kernels. Kernel records are staged through
// shared memory in chunks. Without culling, or for a tile whose list did not fit (or that
// has no bound), the tile blends all kernels, which is always correct.
#include "common.glsl"
#include "smoe.glsl"

layout(local_size_x_id = 0, local_size_y_id = 3) in;
layout(constant_id = 4) const uint CHUNK = 64;
layout(set = 0, binding = 0) readonly buffer Prepared { float prep[]; };
layout(set = 0, binding = 1) readonly buffer Counts { uint counts[]; };
layout(set = 0, binding = 2) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 3) readonly buffer Lists { uint lists[]; };
layout(set = 0, binding = 4) readonly buffer Keys { uint keys[]; };
layout(set = 0, binding = 5) writeonly buffer Out { uint outbuf[]; };

shared float chunk[CHUNK * 32u];

void main() {
    uint tx = gl_WorkGroupID.x, ty = gl_WorkGroupID.y;
    uint t = ty * pc.tiles_x + tx;
    uint lid = gl_LocalInvocationIndex;
    uint threads = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
    bool every = pc.cull == 0u;
    uint n = 0u, off = 0u;
    if (!every) {
        n = counts[t];
        off = offsets[t];
        every = (pc.cull == 1u && keys[t] == 0u) || off + n > pc.capacity;
    }
    if (every) {
        n = pc.kernels;
        off = 0u;
    }
    for (uint py = 0u; py < pc.tile; py += gl_WorkGroupSize.y) {
        for (uint px = 0u; px < pc.tile; px += gl_WorkGroupSize.x) {
            uint lx = px + gl_LocalInvocationID.x, ly = py + gl_LocalInvocationID.y;
            uint col = tx * pc.tile + lx, row = ty * pc.tile + ly;
            bool inside = lx < pc.tile && ly < pc.tile && col < pc.width && row < pc.height;
            float x[4] = float[4]((float(col) + 0.5) / float(pc.width), (float(row) + 0.5) / float(pc.height),
                                  pc.view_u, pc.view_v);
            float mx = -3.0e38, sum = 0.0;
            vec3 acc = vec3(0.0);
            for (uint base = 0u; base < n; base += CHUNK) {
                uint m = min(CHUNK, n - base);
                barrier();
                for (uint e = lid; e < m * PREP_STRIDE; e += threads) {
                    uint j = e / PREP_STRIDE;
                    uint k = every ? base + j : lists[off + base + j];
                    chunk[e] = prep[k * PREP_STRIDE + (e - j * PREP_STRIDE)];
                }
                barrier();
                if (!inside) continue;
                for (uint j = 0u; j < m; j++) {
                    uint b = j * PREP_STRIDE;
                    float d[4], v[4];
                    for (uint i = 0u; i < P; i++) d[i] = x[i] - chunk[b + i];
                    float q = 0.0;
                    if (ROBUST == 1u) {
                        // z = L^-1 d by forward substitution; q = |z|^2; the expert uses z.
                        for (uint i = 0u; i < P; i++) {
                            float a = d[i];
                            for (uint r = 0u; r < i; r++) a -= chunk[b + OFF_MAT + packed_index(i, r)] * v[r];
                            v[i] = a * chunk[b + OFF_MAT + packed_index(i, i)];
                            q += v[i] * v[i];
                        }
                    } else {
                        for (uint i = 0u; i < P; i++) {
                            float a = 0.5 * chunk[b + OFF_MAT + packed_index(i, i)] * d[i];
                            for (uint r = 0u; r < i; r++) a += chunk[b + OFF_MAT + packed_index(i, r)] * d[r];
                            q += 2.0 * a * d[i];
                            v[i] = d[i];
                        }
                    }
                    float l = chunk[b + OFF_C] - 0.5 * q;
                    // Below e^-40 of the running maximum a kernel cannot move the colour
                    // by more than K e^-40 (far below f32 resolution): skip its expert.
                    if (l < mx - 40.0) continue;
                    if (l > mx) {
                        float f = exp(mx - l);
                        sum *= f;
                        acc *= f;
                        mx = l;
                    }
                    float w = exp(l - mx);
                    vec3 y = vec3(chunk[b + OFF_MUY], chunk[b + OFF_MUY + 1u], chunk[b + OFF_MUY + 2u]);
                    for (uint i = 0u; i < P; i++) {
                        y += v[i] * vec3(chunk[b + OFF_REG + i], chunk[b + OFF_REG + P + i],
                                         chunk[b + OFF_REG + 2u * P + i]);
                    }
                    sum += w;
                    acc += w * y;
                }
            }
            if (!inside) continue;
            vec3 rgb = sum > 0.0 ? acc / sum : vec3(0.0);
            if (pc.ycbcr == 1u) {
                float cb = rgb.y - 0.5, cr = rgb.z - 0.5;
                rgb = vec3(rgb.x + 1.402 * cr, rgb.x - 0.344136 * cb - 0.714136 * cr, rgb.x + 1.772 * cb);
            }
            uint p = row * pc.width + col;
            if (pc.out_format == 0u) {
                outbuf[3u * p] = floatBitsToUint(rgb.x);
                outbuf[3u * p + 1u] = floatBitsToUint(rgb.y);
                outbuf[3u * p + 2u] = floatBitsToUint(rgb.z);
            } else if (pc.out_format == 3u) {
                // RGB and the log of the softmax's denominator, for the refinement's backward pass.
                outbuf[4u * p] = floatBitsToUint(rgb.x);
                outbuf[4u * p + 1u] = floatBitsToUint(rgb.y);
                outbuf[4u * p + 2u] = floatBitsToUint(rgb.z);
                outbuf[4u * p + 3u] = floatBitsToUint(sum > 0.0 ? mx + log(sum) : -3.0e38);
            } else if (pc.out_format == 1u) {
                outbuf[p] = packUnorm4x8(vec4(clamp(rgb, 0.0, 1.0), 1.0));
            } else {
                outbuf[p] = packUnorm4x8(vec4(clamp(rgb.zyx, 0.0, 1.0), 1.0));
            }
        }
    }
}
