#version 460
// The transpose of D (m x n, row-major) into dt (n x m), for the reverse rounds: each
// column's scan then reads consecutive words (a column of D is n words apart per entry,
// one memory sector an entry). 32 x 32 tiles through shared memory (one padding column
// against bank conflicts); a workgroup of 32 x 8 invocations moves four rows of a tile
// each.

layout(local_size_x = 32, local_size_y = 8) in;

layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 1) writeonly buffer Transposed { float dt[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
};

shared float tile[32][33];

void main() {
    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;
    // Tiles of columns from x0, rows from y0 (of D); the grid's x axis strides over the
    // tiles of a wide matrix (a grid axis is limited).
    uint y0 = gl_WorkGroupID.y * 32u;
    for (uint x0 = gl_WorkGroupID.x * 32u; x0 < n; x0 += gl_NumWorkGroups.x * 32u) {
        for (uint k = ty; k < 32u; k += 8u) {
            uint i = y0 + k;
            uint j = x0 + tx;
            if (i < m && j < n) tile[k][tx] = d[i * n + j];
        }
        barrier();
        for (uint k = ty; k < 32u; k += 8u) {
            uint j = x0 + k;
            uint i = y0 + tx;
            if (j < n && i < m) dt[j * m + i] = tile[tx][k];
        }
        barrier();
    }
}
