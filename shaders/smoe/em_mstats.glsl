// The M-step's sufficient statistics of one kernel (one workgroup per kernel) and its
// update, shared by the dense M-step (all samples) and the culled one (the samples of the
// kernel's support box). Moments are about the old mean, so the covariance does not cancel
// catastrophically in f32. The including shader declares `rec` (prepared records, em.glsl)
// and `raw` (the records the update overwrites) before including this.
#ifndef EM_MSTATS_GLSL
#define EM_MSTATS_GLSL

// N_k, sum r (z - mu), packed sum r (z - mu)(z - mu)^T for D <= 7.
const uint STATS = 1u + 7u + 28u;
shared float sub_sums[64 * STATS];
shared float total[STATS];

// Adds sample z with responsibility r to the statistics of the kernel prepared at rec[pb..].
void add_sample(inout float acc[STATS], float r, float z[7], uint pb) {
    float d[7];
    for (uint i = 0u; i < D; i++) d[i] = z[i] - rec[pb + i];
    acc[0] += r;
    for (uint i = 0u; i < D; i++) {
        acc[1u + i] += r * d[i];
        for (uint j = 0u; j <= i; j++) acc[1u + D + packed_index(i, j)] += r * d[i] * d[j];
    }
}

// Every Cholesky pivot of (a PSD matrix + diag(reg)) is at least reg_i in exact arithmetic.
// The f32 statistics of a wide, thin kernel (its spread across near the regulariser, below
// the rounding of the sums along it) can still come out indefinite, and one such kernel
// would turn the next E-step's log-sum-exp into NaN wherever it reaches. A covariance with
// a pivot under half its regulariser is replaced by L L^T with that pivot raised to the
// regulariser; any other is kept bit for bit. The CPU twin is em::keep_factorable.
void keep_factorable(inout float cov[28]) {
    float L[28];
    bool repaired = false;
    for (uint i = 0u; i < D; i++) {
        for (uint j = 0u; j <= i; j++) {
            float s = cov[packed_index(i, j)];
            for (uint m = 0u; m < j; m++) s -= L[packed_index(i, m)] * L[packed_index(j, m)];
            if (i == j) {
                if (!(s >= 0.5 * pc.reg[i])) {
                    s = pc.reg[i];
                    repaired = true;
                }
                L[packed_index(i, i)] = sqrt(s);
            } else {
                L[packed_index(i, j)] = s / L[packed_index(j, j)];
            }
        }
    }
    if (!repaired) return;
    for (uint i = 0u; i < D; i++) {
        for (uint j = 0u; j <= i; j++) {
            float v = 0.0;
            for (uint m = 0u; m <= j; m++) v += L[packed_index(i, m)] * L[packed_index(j, m)];
            cov[packed_index(i, j)] = v;
        }
    }
}

// Reduces every invocation's statistics (a fixed order: subgroups, then their sums) and
// writes kernel k's new pi, mu and regularised covariance over its raw record. Called by
// the whole workgroup.
void finish_kernel(float acc[STATS], uint k, uint pb) {
    uint nstats = 1u + D + D * (D + 1u) / 2u;
    for (uint s = 0u; s < nstats; s++) {
        float v = subgroupAdd(acc[s]);
        if (subgroupElect()) sub_sums[gl_SubgroupID * STATS + s] = v;
    }
    barrier();
    for (uint s = gl_LocalInvocationIndex; s < nstats; s += gl_WorkGroupSize.x * gl_WorkGroupSize.y) {
        float t = 0.0;
        for (uint g = 0u; g < gl_NumSubgroups; g++) t += sub_sums[g * STATS + s];
        total[s] = t;
    }
    barrier();
    if (gl_LocalInvocationIndex != 0u) return;
    uint rb = k * RAW_STRIDE;
    float nk = total[0];
    // A kernel that lost all its samples keeps its place and shape with a negligible prior.
    if (nk < 1e-3) {
        raw[rb] = 1e-3 / float(pc.samples);
        return;
    }
    raw[rb] = nk / float(pc.samples);
    float delta[7];
    for (uint i = 0u; i < D; i++) {
        delta[i] = total[1u + i] / nk;
        raw[rb + 1u + i] = rec[pb + i] + delta[i];
    }
    float cov[28];
    for (uint i = 0u; i < D; i++) {
        for (uint j = 0u; j <= i; j++) {
            float v = total[1u + D + packed_index(i, j)] / nk - delta[i] * delta[j];
            if (i == j) v = max(v, 0.0) + pc.reg[i];
            cov[packed_index(i, j)] = v;
        }
    }
    keep_factorable(cov);
    for (uint e = 0u; e < D * (D + 1u) / 2u; e++) raw[rb + 1u + D + e] = cov[e];
}

#endif
