#version 460
// The k-means++ draw of one step, in one workgroup: the sample i with probability
// D(i) / sum D, as the first i whose inclusive prefix of D exceeds u * sum D (u uniform in
// [0, 1), drawn on the host and uploaded once). Three levels: chunks of blocks (one per
// invocation, scanned in shared memory), the blocks of the chosen chunk (walked), the
// samples of the chosen block (scanned). Rounding can leave no prefix above the target: then
// the last positive entry is taken, so a sample with D = 0 (a chosen centre) is never drawn.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Near { float near[]; };
layout(set = 0, binding = 1) readonly buffer Blocks { float block_sums[]; };
layout(set = 0, binding = 2) readonly buffer Uniforms { float uniforms[]; };
layout(set = 0, binding = 3) buffer Picks { uint picks[]; };
layout(push_constant) uniform Push {
    uint n;
    uint blocks;
    uint step;
} pc;

const uint NONE = 0xffffffffu;
shared float scan[256];
shared uint found;
shared uint last;

// Inclusive prefix sum of v over the workgroup (Hillis-Steele, deterministic); scan[] keeps
// every invocation's prefix until the next call.
float scan_inclusive(float v) {
    uint lid = gl_LocalInvocationID.x;
    barrier();
    scan[lid] = v;
    barrier();
    for (uint off = 1u; off < 256u; off <<= 1) {
        float add = lid >= off ? scan[lid - off] : 0.0;
        barrier();
        scan[lid] += add;
        barrier();
    }
    return scan[lid];
}

// The first invocation with v > 0 and an inclusive prefix above target, else the last with
// v > 0 (NONE if there is none).
uint first_above(float v, float incl, float target) {
    uint lid = gl_LocalInvocationID.x;
    if (lid == 0u) {
        found = NONE;
        last = 0u;
    }
    barrier();
    if (v > 0.0) {
        if (incl > target) atomicMin(found, lid);
        atomicMax(last, lid + 1u);
    }
    barrier();
    return found != NONE ? found : last - 1u;
}

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint per = ceil_div(pc.blocks, 256u);
    uint b0 = min(lid * per, pc.blocks), b1 = min(b0 + per, pc.blocks);
    float chunk = 0.0;
    for (uint b = b0; b < b1; b++) chunk += block_sums[b];
    float incl = scan_inclusive(chunk);
    float total = scan[255];
    float u = uniforms[pc.step];
    if (!(total > 0.0)) {
        // Every sample coincides with a centre: any sample will do.
        if (lid == 0u) picks[pc.step] = min(uint(u * float(pc.n)), pc.n - 1u);
        return;
    }
    float target = u * total;
    uint t = first_above(chunk, incl, target);
    float rest = target - (t > 0u ? scan[t - 1u] : 0.0);
    // Every invocation walks the chosen chunk's blocks (the same loads, uniform control flow).
    uint pick = NONE, last_positive = NONE;
    float before = 0.0, last_before = 0.0, acc = 0.0;
    for (uint b = t * per; b < min(t * per + per, pc.blocks); b++) {
        float s = block_sums[b];
        if (s > 0.0) {
            if (pick == NONE && acc + s > rest) {
                pick = b;
                before = acc;
            }
            last_positive = b;
            last_before = acc;
        }
        acc += s;
    }
    if (pick == NONE) {
        pick = last_positive;
        before = last_before;
    }
    rest -= before;
    uint i = pick * 256u + lid;
    float v = i < pc.n ? near[i] : 0.0;
    uint e = first_above(v, scan_inclusive(v), rest);
    if (lid == 0u) picks[pc.step] = pick * 256u + e;
}
