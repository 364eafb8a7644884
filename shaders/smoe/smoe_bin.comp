#version 460
// Per kernel: bins kernels to screen tiles (one workgroup per kernel, its invocations
// striding over the tiles of its support box, so a wide kernel's many tiles are spread over
// the workgroup instead of one thread's loop). phase 0 (exact culling only): each kernel raises the lower bound
// B_T of the best log-weight in nearby tiles (atomicMax on order-preserving keys).
// phase 1: counts, per tile, the kernels it keeps; phase 2: writes their indices at the
// tile's offset (the engine's exclusive scan of the counts).
//
// Exact culling keeps kernel j in tile T unless
//   c_j - r^2/2 + ln(a + g_j max(r, 1)) < B_T - M,  r = lower bound of the Mahalanobis
// distance from the kernel to any pixel centre of T, which bounds its share of the colour
// by 1/(65536 K) (derivation in docs/formats.md, "SMoE culling bound").
#include "common.glsl"
#include "smoe.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Cull { float cullrec[]; };
layout(set = 0, binding = 1) buffer Keys { uint keys[]; };
layout(set = 0, binding = 2) buffer Counts { uint counts[]; };
layout(set = 0, binding = 3) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 4) buffer Cursor { uint cursor[]; };
layout(set = 0, binding = 5) writeonly buffer Lists { uint lists[]; };
layout(set = 0, binding = 6) readonly buffer Params { uint params[]; };

// Tiles per axis a kernel scans in phase 0 (any subset of kernels gives a valid bound).
const int BOUND_REACH = 16;

void emit(uint k, uint t) {
    if (pc.phase == 1u) {
        atomicAdd(counts[t], 1u);
    } else {
        uint slot = offsets[t] + atomicAdd(cursor[t], 1u);
        if (slot < pc.capacity) lists[slot] = k;
    }
}

// Tile index range [lo, hi] covering pixel-space interval [a, b] on an axis of n tiles;
// empty (lo > hi) when the interval misses the image.
ivec2 tile_range(float a, float b, uint n, uint extent) {
    if (b < 0.0 || a > float(extent) || !(a <= b)) return ivec2(1, 0);
    int lo = int(floor(max(a, 0.0) / float(pc.tile)));
    int hi = int(floor(min(b, float(extent) - 0.5) / float(pc.tile)));
    return ivec2(clamp(lo, 0, int(n) - 1), clamp(hi, 0, int(n) - 1));
}

// Tiles in the column range xr and row range yr (inclusive; empty when lo > hi).
uint tiles_in(ivec2 xr, ivec2 yr) {
    return xr.y >= xr.x && yr.y >= yr.x ? uint(xr.y - xr.x + 1) * uint(yr.y - yr.x + 1) : 0u;
}

// The e-th tile (column, row) of those ranges, row by row.
ivec2 tile_at(uint e, ivec2 xr, ivec2 yr) {
    uint nx = uint(xr.y - xr.x + 1);
    return ivec2(xr.x + int(e % nx), yr.x + int(e / nx));
}

void main() {
    uint k = linear_group_id();
    if (k >= pc.kernels) return;
    uint cb = k * CULL_STRIDE;
    vec2 centre = vec2(cullrec[cb], cullrec[cb + 1u]);
    float s00 = cullrec[cb + 2u], s11 = cullrec[cb + 4u];
    vec3 prec = vec3(cullrec[cb + 5u], cullrec[cb + 6u], cullrec[cb + 7u]);
    float c = cullrec[cb + 8u], s = cullrec[cb + 9u], g = cullrec[cb + 10u];

    if (pc.cull == 2u) {
        // The paper's relevance window: the kernel's centre lies in the tile grown by
        // `window` pixels on every side.
        ivec2 xr = tile_range(centre.x - pc.window, centre.x + pc.window, pc.tiles_x, pc.width);
        ivec2 yr = tile_range(centre.y - pc.window, centre.y + pc.window, pc.tiles_y, pc.height);
        for (uint e = gl_LocalInvocationID.x; e < tiles_in(xr, yr); e += gl_WorkGroupSize.x) {
            ivec2 tt = tile_at(e, xr, yr);
            emit(k, uint(tt.y) * pc.tiles_x + uint(tt.x));
        }
        return;
    }

    if (pc.phase == 0u) {
        float hx = 3.0 * sqrt(s00), hy = 3.0 * sqrt(s11);
        ivec2 xr = tile_range(centre.x - hx, centre.x + hx, pc.tiles_x, pc.width);
        ivec2 yr = tile_range(centre.y - hy, centre.y + hy, pc.tiles_y, pc.height);
        ivec2 ct = ivec2(floor(centre / float(pc.tile)));
        xr = ivec2(max(xr.x, ct.x - BOUND_REACH), min(xr.y, ct.x + BOUND_REACH));
        yr = ivec2(max(yr.x, ct.y - BOUND_REACH), min(yr.y, ct.y + BOUND_REACH));
        for (uint e = gl_LocalInvocationID.x; e < tiles_in(xr, yr); e += gl_WorkGroupSize.x) {
            ivec2 tt = tile_at(e, xr, yr);
            vec4 r = tile_rect(uint(tt.x), uint(tt.y));
            float qmax = 0.0;
            for (uint corner = 0u; corner < 4u; corner++) {
                vec2 d = vec2((corner & 1u) == 0u ? r.x : r.z, (corner & 2u) == 0u ? r.y : r.w) - centre;
                qmax = max(qmax, prec.x * d.x * d.x + 2.0 * prec.y * d.x * d.y + prec.z * d.y * d.y);
            }
            atomicMax(keys[uint(tt.y) * pc.tiles_x + uint(tt.x)], float_key(c - 0.5 * (s + qmax)));
        }
        return;
    }

    uint floor_key = params[0];
    if (floor_key == 0u) return;  // no tile has a bound: every tile renders all kernels
    vec2 half_box = support_half(c, s, g, s00, s11, floor_key);
    if (half_box.x < 0.0) return;
    float hx = half_box.x, hy = half_box.y;
    ivec2 xr = tile_range(centre.x - hx, centre.x + hx, pc.tiles_x, pc.width);
    ivec2 yr = tile_range(centre.y - hy, centre.y + hy, pc.tiles_y, pc.height);
    for (uint e = gl_LocalInvocationID.x; e < tiles_in(xr, yr); e += gl_WorkGroupSize.x) {
        ivec2 tt = tile_at(e, xr, yr);
        uint t = uint(tt.y) * pc.tiles_x + uint(tt.x);
        uint key = keys[t];
        if (key == 0u) continue;
        vec4 rect = tile_rect(uint(tt.x), uint(tt.y));
        float dx = max(max(rect.x - centre.x, centre.x - rect.z), 0.0);
        float dy = max(max(rect.y - centre.y, centre.y - rect.w), 0.0);
        float rmin2 = s + max(dx * dx / s00, dy * dy / s11);
        float bound = c - 0.5 * rmin2 + log(pc.span + g * max(sqrt(rmin2), 1.0));
        if (bound >= key_float(key) - pc.margin) emit(k, t);
    }
}
