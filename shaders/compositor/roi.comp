#version 460
// Region of interest: the bounding box of the active pixels (depth != 1.0) of a width x height
// image (a span of the distributed renderer is an image of one row). Each workgroup reduces 32 pixels per invocation, read as 16-byte vectors (all
// loads issued before any is used), with subgroup and shared-memory min/max, and issues one
// atomic per bound. roi = (min x, min y, ~max x, ~max y), all kept as minima so one fill
// with 0xFFFFFFFF initialises it; an image without active pixels leaves min x = ~0.
//
// The last workgroup to finish also writes the workgroup counts of the encoding that
// follows (one workgroup per tile of `tile` elements of the box, ap_elements.glsl), for an
// indirect dispatch: the host records the encoding before the box is known, and a dispatch
// sized for the whole image would launch a workgroup per tile outside the box too (at 8K,
// 1231 surplus workgroups for 794 tiles of a dense frame).
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"
#include "ap_elements.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Depth4 { uvec4 depth4[]; };
layout(set = 0, binding = 0) restrict readonly buffer Depth1 { uint depth1[]; };
layout(set = 0, binding = 1) coherent buffer Roi { uint roi[4]; };
// Workgroups finished (zeroed before the dispatch), then the encoding's workgroup counts
// (x, y, z), laid out over x and y for linear_group_id().
layout(set = 0, binding = 2) coherent buffer Grid { uint finished; uint grid[3]; };
// origin: index in Depth of the image's first pixel (16-byte loads only when it is a
// multiple of 4). The encoder's push constants, whose last word is its tile size.
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; uint tile; };

const uint VECTORS = 8u;  // per invocation
const uint BACKGROUND_BITS = 0x3f800000u;  // f32 1.0

shared uvec4 partial[64];

void main() {
    uint n = width * height;
    uint first = linear_group_id() * VECTORS * gl_WorkGroupSize.x;
    uvec4 v[VECTORS];
    [[unroll]] for (uint k = 0u; k < VECTORS; k++) {
        uint q = first + k * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
        if (4u * q + 3u < n && (origin & 3u) == 0u) {
            v[k] = depth4[(origin >> 2) + q];
        } else {
            for (uint c = 0u; c < 4u; c++) v[k][c] = 4u * q + c < n ? depth1[origin + 4u * q + c] : BACKGROUND_BITS;
        }
    }
    uvec4 m = uvec4(0xFFFFFFFFu);
    [[unroll]] for (uint k = 0u; k < VECTORS; k++) {
        uint q = first + k * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
        for (uint c = 0u; c < 4u; c++) {
            if (v[k][c] != BACKGROUND_BITS) {
                uint i = 4u * q + c;
                uint y = i / width;
                uint x = i - y * width;
                m = min(m, uvec4(x, y, ~x, ~y));
            }
        }
    }
    m = uvec4(subgroupMin(m.x), subgroupMin(m.y), subgroupMin(m.z), subgroupMin(m.w));
    if (subgroupElect()) partial[gl_SubgroupID] = m;
    barrier();
    if (gl_SubgroupID == 0u) {
        uvec4 r = uvec4(0xFFFFFFFFu);
        for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) r = min(r, partial[s]);
        r = uvec4(subgroupMin(r.x), subgroupMin(r.y), subgroupMin(r.z), subgroupMin(r.w));
        if (subgroupElect()) {
            if (r.x != 0xFFFFFFFFu) {
                atomicMin(roi[0], r.x);
                atomicMin(roi[1], r.y);
                atomicMin(roi[2], r.z);
                atomicMin(roi[3], r.w);
            }
            // Release this workgroup's bounds, and in the last workgroup acquire everyone's.
            uint before = atomicAdd(finished, 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease);
            if (before + 1u == gl_NumWorkGroups.x * gl_NumWorkGroups.y) {
                // Read by read-modify-writes, like the bounds were written.
                uvec4 box = uvec4(atomicMin(roi[0], ~0u), atomicMin(roi[1], ~0u), ~atomicMin(roi[2], ~0u),
                                  ~atomicMin(roi[3], ~0u));
                elements_init(width, height, box);
                uint tiles = max(ceil_div(el_n, tile), 1u);
                uint rows = ceil_div(tiles, 65535u);
                grid[0] = ceil_div(tiles, rows);
                grid[1] = rows;
                grid[2] = 1u;
            }
        }
    }
}
