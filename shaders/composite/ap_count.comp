#version 460
// Pass 1 of the chunked Active Pixel encoder (ap_chunk.glsl): every chunk's monoid sum and
// its prefix within the workgroup, and each workgroup's sum and box of active pixels,
// reading every depth once. The workgroup that finishes last turns the workgroups' sums into
// exclusive prefixes, and their boxes into the region of interest (the bounding box of the
// active pixels); it also resets the finished-workgroup counter, so that the host records no
// fill (and no barrier after one) before the kernel.
//
// Unlike ap_scatter, each lane here owns whole 32-pixel activity words (word t * subgroup
// size + lane of its chunk), read as 16-byte vectors and transposed by shuffles
// (load_words): a word's run starts, monoid sum and box need a few instructions per 32
// pixels instead of a ballot and its bit operations per pixel, and the lanes' sums are
// combined once per chunk. Subgroups of 8, 16 or 32 lanes.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Depth4 { uvec4 depth4[]; };
layout(set = 0, binding = 0) restrict readonly buffer Depth1 { uint depth_bits[]; };
// The box as (min x, min y, ~max x, ~max y), all minima; min x = ~0 when the image has no
// active pixel.
layout(set = 0, binding = 1) restrict writeonly buffer Roi { uvec4 roi; };
layout(set = 0, binding = 2) restrict writeonly buffer Chunks { uvec4 chunk_info[]; };
// Per workgroup g: at 2 g its sum, then (scanned by the last workgroup) its exclusive prefix;
// at 2 g + 1 its box, as `roi`.
layout(set = 0, binding = 3) coherent buffer Groups { uvec4 group_data[]; };
// Workgroups finished: 0 before the dispatch (set when the buffer is made, and reset by the
// last workgroup).
layout(set = 0, binding = 4) coherent buffer Finished { uint finished; };

#define AP_MAX_SUBGROUPS 128u
#include "ap_chunk.glsl"
#include "ap_scan.glsl"

shared uvec4 s_box[AP_MAX_SUBGROUPS];
const uint WORDS = PER_LANE / 32u;  // activity words per lane
shared bool s_last;

// The activity words this lane owns: word t * subgroup size + lane of the chunk at `base`,
// for t < WORDS. The loads coalesce: vector j * subgroup size + lane of the chunk (pixels
// 4 (j * subgroup size + lane) + 0..3) is this lane's j-th 16-byte load, and its activity
// nibble goes to bits 4 (j % 8) of packed[j / 8]. Word w is vectors 8 w .. 8 w + 7, which
// lanes (8 w + i) % subgroup size hold as nibble (8 w / subgroup size) % 8 of their packed
// word t: eight shuffles. Chunks at the end of the image, and spans at a pixel that is not a
// multiple of 4, read pixel by pixel instead.
void load_words(uint base, out uint words[WORDS]) {
    uint lane = gl_SubgroupInvocationID;
    if ((origin & 3u) == 0u && base + chunk_size() <= n) {
        uvec4 v[8u * WORDS];
        [[unroll]] for (uint j = 0u; j < 8u * WORDS; j++) v[j] = depth4[((origin + base) >> 2) + j * gl_SubgroupSize + lane];
        uint nibble = (8u * lane / gl_SubgroupSize) % 8u;
        [[unroll]] for (uint t = 0u; t < WORDS; t++) {
            uint packed = 0u;
            [[unroll]] for (uint j = 0u; j < 8u; j++) {
                bvec4 on = notEqual(v[8u * t + j], uvec4(BACKGROUND_BITS));
                packed |= (uint(on.x) | uint(on.y) << 1 | uint(on.z) << 2 | uint(on.w) << 3) << (4u * j);
            }
            uint m = 0u;
            [[unroll]] for (uint i = 0u; i < 8u; i++) {
                uint from = subgroupShuffle(packed, (8u * lane + i) % gl_SubgroupSize);
                m |= ((from >> (4u * nibble)) & 15u) << (4u * i);
            }
            words[t] = m;
        }
    } else {
        [[unroll]] for (uint t = 0u; t < WORDS; t++) {
            uint p = base + 32u * (t * gl_SubgroupSize + lane);
            uint m = 0u;
            for (uint i = 0u; i < 32u; i++) m |= pixel_active(p + i) << i;
            words[t] = m;
        }
    }
}

// Widens `box` by the active pixels of word m at pixel p, one image row segment at a time.
void widen_box(uint m, uint p, inout uvec4 box) {
    if (m == 0u) return;
    uint row = p / width;
    uint col = p - row * width;
    for (uint off = 0u; off < 32u; row++, col = 0u) {
        uint len = min(32u - off, width - col);
        uint seg = (m >> off) & (len == 32u ? 0xFFFFFFFFu : (1u << len) - 1u);
        if (seg != 0u) box = min(box, uvec4(col + uint(findLSB(seg)), row, ~(col + uint(findMSB(seg))), ~row));
        off += len;
    }
}

// The last workgroup: exclusive prefixes of the `groups` sums, in place, 8 per invocation
// and round (all loads issued, past the end clamped: with a branch per load, NVIDIA's
// compiler waits for each before issuing the next), the union of their boxes into `roi`, and
// the counter reset.
void finish_groups() {
    const uint PER_INVOCATION = 8u;
    uint lid = gl_LocalInvocationIndex;
    uvec3 carry = uvec3(0u);
    uvec4 box = uvec4(0xFFFFFFFFu);
    for (uint round = 0u; round < groups; round += PER_INVOCATION * gl_WorkGroupSize.x) {
        uint first = round + PER_INVOCATION * lid;
        uvec3 v[PER_INVOCATION];
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            uint g = min(first + k, groups - 1u);
            v[k] = group_data[2u * g].xyz;
            box = min(box, group_data[2u * g + 1u]);
        }
        uvec3 mine = uvec3(0u);
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            if (first + k >= groups) v[k] = uvec3(0u);
            mine = combine3(mine, v[k]);
        }
        uvec3 total;
        uvec3 excl = scan_subgroups(mine, total);
        if (lid == 0u) s_box[0].xyz = total;
        barrier();
        uvec3 prefix = combine3(carry, combine3(s_sg[gl_SubgroupID], excl));
        carry = combine3(carry, s_box[0].xyz);
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            if (first + k < groups) group_data[2u * (first + k)] = uvec4(prefix, 0u);
            prefix = combine3(prefix, v[k]);
        }
        barrier();
    }
    box = uvec4(subgroupMin(box.x), subgroupMin(box.y), subgroupMin(box.z), subgroupMin(box.w));
    if (subgroupElect()) s_box[gl_SubgroupID] = box;
    barrier();
    if (lid == 0u) {
        for (uint s = 0u; s < gl_NumSubgroups; s++) box = min(box, s_box[s]);
        roi = box;
        finished = 0u;
    }
}

void main() {
    uint chunk = chunk_index();
    uint base = chunk * chunk_size();
    uint lane = gl_SubgroupInvocationID;
    uint words[WORDS];
    load_words(base, words);
    uint before = active_before(base);

    // This lane's share of the chunk's monoid sum and of the box. The previous word of word
    // (j, lane) is (j, lane - 1), or for lane 0 (j - 1, last lane): a rotation by one lane.
    uvec3 sum = uvec3(0u);
    uvec4 box = uvec4(0xFFFFFFFFu);
    uint carried = before;
    [[unroll]] for (uint j = 0u; j < WORDS; j++) {
        uint p = base + 32u * (j * gl_SubgroupSize + lane);
        uint m = words[j];
        uint rotated = subgroupShuffle(m >> 31, (lane + gl_SubgroupSize - 1u) & (gl_SubgroupSize - 1u));
        uint prev = lane > 0u ? rotated : carried;
        carried = rotated;
        uint starts = start_bits(m, prev, p, 32u);
        sum = combine3(sum, word_sum(m, starts, p));
        widen_box(m, p, box);
    }
    sum = uvec3(subgroupAdd(sum.x), subgroupAdd(sum.y), subgroupMax(sum.z));
    box = uvec4(subgroupMin(box.x), subgroupMin(box.y), subgroupMin(box.z), subgroupMin(box.w));

    // Exclusive prefixes of the workgroup's chunks, from one value per subgroup.
    uvec3 total;
    scan_subgroups(lane == 0u ? sum : uvec3(0u), total);
    if (subgroupElect()) s_box[gl_SubgroupID] = box;
    barrier();
    if (subgroupElect() && chunk < chunks) chunk_info[chunk] = uvec4(s_sg[gl_SubgroupID], sum.y);
    if (gl_SubgroupID == 0u) {
        for (uint s = lane; s < gl_NumSubgroups; s += gl_SubgroupSize) box = min(box, s_box[s]);
        box = uvec4(subgroupMin(box.x), subgroupMin(box.y), subgroupMin(box.z), subgroupMin(box.w));
        if (subgroupElect()) {
            group_data[2u * linear_group_id()] = uvec4(total, 0u);
            group_data[2u * linear_group_id() + 1u] = box;
            // Release this workgroup's sum and box.
            uint done = atomicAdd(finished, 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelease);
            s_last = done + 1u == gl_NumWorkGroups.x * gl_NumWorkGroups.y;
        }
    }
    barrier();
    if (s_last) {
        // The last workgroup: every invocation acquires all the sums (the counter's final
        // value ends the release sequence of every workgroup's increment). Only here, so
        // that the other workgroups retire without a device-scope fence.
        atomicLoad(finished, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
        finish_groups();
    }
}
