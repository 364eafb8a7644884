// The end of a Sinkhorn dispatch of sinkhorn_atomic.comp and sinkhorn_scaled.comp: the
// block's column sums (invocation lid holds groups of 4 columns, q = lid + k * workgroup
// size) added atomically into slot `slot` of `sums`, through the shared tile so that
// consecutive invocations add consecutive columns: group k's 4 wg columns start at 4 k wg.
// Needs GROUPS, n, `shared vec4 tile[gl_WorkGroupSize.x]` and the buffer `sums`.
#ifndef TESSERA_SINKHORN_BLOCK_SUMS_GLSL
#define TESSERA_SINKHORN_BLOCK_SUMS_GLSL

void add_block_sums(vec4 colsum[GROUPS], uint slot) {
    const uint wg = gl_WorkGroupSize.x;
    const uint lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint k = 0; k < GROUPS; k++) {
        barrier();
        tile[lid] = colsum[k];
        barrier();
        [[unroll]] for (uint c = 0; c < 4u; c++) {
            uint local = lid + c * wg;
            uint j = 4u * k * wg + local;
            if (j < n) atomicAdd(sums[slot * n + j], tile[local >> 2][local & 3u]);
        }
    }
}

#endif
