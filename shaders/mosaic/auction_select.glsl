// The selection both auction scans share: over a workgroup, the smallest value `best`, the
// smallest index achieving it, and the second smallest value (the next in the multiset:
// equal to best on a tie). Each invocation folds its strided slice with select_fold, then
// select_combine merges subgroups and finally the slots of every subgroup on invocation 0.
#ifndef AUCTION_SELECT_GLSL
#define AUCTION_SELECT_GLSL

// The largest finite float stands for "none": values are at most a few units (D is
// normalised to [0, 1] on the host).
const float INF = 3.402823466e38;
const uint NONE = 0xffffffffu;

// The host keeps workgroup / subgroup size <= 64.
shared float s_best[64];
shared float s_second[64];
shared uint s_index[64];

// Folds value x at index j into one invocation's (best, second, index); indices arrive in
// increasing order, so a tie keeps the earlier one.
void select_fold(float x, uint j, inout float best, inout float second, inout uint index) {
    if (x < best) {
        second = best;
        best = x;
        index = j;
    } else if (x < second) {
        second = x;
    }
}

// Merges every invocation's (best, second, index); returns true on invocation 0 only, with
// the workgroup's result in (b, s, w). Every invocation must call it (it has a barrier).
bool select_combine(float best, float second, uint index, out float b, out float s, out uint w) {
    // Subgroup combine: the smallest best, the smallest index achieving it, and the second
    // smallest value (the winning lane's second, every other lane's best).
    b = subgroupMin(best);
    w = subgroupMin(best == b ? index : NONE);
    s = subgroupMin(index == w && best == b ? second : best);
    if (subgroupElect()) {
        s_best[gl_SubgroupID] = b;
        s_second[gl_SubgroupID] = s;
        s_index[gl_SubgroupID] = w;
    }
    barrier();
    if (gl_LocalInvocationID.x != 0u) return false;
    b = s_best[0];
    s = s_second[0];
    w = s_index[0];
    for (uint q = 1u; q < gl_NumSubgroups; q++) {
        float qb = s_best[q];
        if (qb < b || (qb == b && s_index[q] < w)) {
            s = min(b, s_second[q]);
            b = qb;
            w = s_index[q];
        } else {
            s = min(s, qb);
        }
    }
    return true;
}

#endif
