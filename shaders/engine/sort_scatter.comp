#version 460
// Radix sort, pass step 3: stable scatter of one block of BLOCK = 16 * WG keys (and their
// values) by one 8-bit digit, given offsets[digit * num_blocks + block] (the exclusive scan
// of the histograms).
//
// Ranking: subgroup s owns the contiguous keys [s * SG * 16, (s + 1) * SG * 16) of the block
// and walks them in 16 rounds of SG consecutive keys. In a round, the lanes holding the
// same digit find each other with 8 ballots (one per digit bit); the lowest of them adds
// their number to the subgroup's private counter of that digit and shares the old value.
// A key's rank in the block is then
//   (keys of smaller digits in the block) + (same digit in earlier subgroups)
//   + (same digit earlier in this subgroup),
// which keeps equal keys in input order. Keys and values go through shared memory in block
// order so the global writes of each digit's run are consecutive.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
// Upper bound of gl_NumSubgroups (set by the host from the subgroup size).
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32u;

layout(set = 0, binding = 0) readonly buffer KeysIn { uint keys_in[]; };
layout(set = 0, binding = 1) readonly buffer ValsIn { uint vals_in[]; };
layout(set = 0, binding = 2) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 3) writeonly buffer KeysOut { uint keys_out[]; };
layout(set = 0, binding = 4) writeonly buffer ValsOut { uint vals_out[]; };
layout(push_constant) uniform Push { uint n; uint num_blocks; uint shift; uint key_words; uint word; };

const uint ITEMS = 16u;
const uint BLOCK = ITEMS * gl_WorkGroupSize.x;

shared uint s_counts[MAX_SUBGROUPS * 256u];
shared uint s_digit_start[256];
shared uint s_exchange[BLOCK];

uint digit_of(uint w) {
    return (w >> shift) & 255u;
}

void main() {
    uint block = linear_group_id();
    if (block >= num_blocks) return;
    uint wg = gl_WorkGroupSize.x;
    uint sg = gl_SubgroupID;
    uint lane = gl_SubgroupInvocationID;
    uint sg_size = gl_SubgroupSize;
    uint block_base = block * BLOCK;

    for (uint i = gl_LocalInvocationID.x; i < gl_NumSubgroups * 256u; i += wg) s_counts[i] = 0u;
    barrier();

    // Rank each of this invocation's keys among equal digits of its subgroup.
    uint seg_base = block_base + sg * sg_size * ITEMS;
    uint local_pos[ITEMS];
    uint digit_word[ITEMS];
    for (uint it = 0u; it < ITEMS; it++) {
        uint idx = seg_base + it * sg_size + lane;
        bool valid = idx < n;
        uint w = valid ? keys_in[idx * key_words + word] : 0u;
        uint d = digit_of(w);
        uvec4 peers = subgroupBallot(valid);
        for (uint b = 0u; b < 8u; b++) {
            bool bit = ((d >> b) & 1u) != 0u;
            uvec4 ones = subgroupBallot(bit);
            peers &= bit ? ones : ~ones;
        }
        uint before = subgroupBallotExclusiveBitCount(peers);
        uint old = 0u;
        if (valid && before == 0u) old = atomicAdd(s_counts[sg * 256u + d], subgroupBallotBitCount(peers));
        old = subgroupShuffle(old, subgroupBallotFindLSB(peers));
        local_pos[it] = old + before;
        digit_word[it] = w;
    }
    barrier();

    // Per digit: exclusive prefix over subgroups (in place) and the block's digit totals.
    for (uint d = gl_LocalInvocationID.x; d < 256u; d += wg) {
        uint run = 0u;
        for (uint s = 0u; s < gl_NumSubgroups; s++) {
            uint c = s_counts[s * 256u + d];
            s_counts[s * 256u + d] = run;
            run += c;
        }
        s_digit_start[d] = run;
    }
    barrier();
    if (sg == 0u) {
        uint carry = 0u;
        for (uint base = 0u; base < 256u; base += sg_size) {
            uint i = base + lane;
            uint x = i < 256u ? s_digit_start[i] : 0u;
            uint inc = subgroupInclusiveAdd(x);
            if (i < 256u) s_digit_start[i] = carry + inc - x;
            carry += subgroupAdd(x);
        }
    }
    barrier();

    // Block-local positions; the digit word goes through shared memory first.
    for (uint it = 0u; it < ITEMS; it++) {
        uint idx = seg_base + it * sg_size + lane;
        if (idx < n) {
            uint d = digit_of(digit_word[it]);
            local_pos[it] += s_digit_start[d] + s_counts[sg * 256u + d];
            s_exchange[local_pos[it]] = digit_word[it];
        }
    }
    barrier();
    uint count = min(BLOCK, n - block_base);
    uint dst[ITEMS];
    for (uint j = 0u; j < ITEMS; j++) {
        uint i = j * wg + gl_LocalInvocationID.x;
        if (i < count) {
            uint w = s_exchange[i];
            uint d = digit_of(w);
            dst[j] = offsets[d * num_blocks + block] + (i - s_digit_start[d]);
            keys_out[dst[j] * key_words + word] = w;
        }
    }

    // The other word of 64-bit keys, then the values, follow the same permutation.
    for (uint phase = key_words == 2u ? 0u : 1u; phase < 2u; phase++) {
        barrier();
        for (uint it = 0u; it < ITEMS; it++) {
            uint idx = seg_base + it * sg_size + lane;
            if (idx < n) s_exchange[local_pos[it]] = phase == 0u ? keys_in[idx * 2u + 1u - word] : vals_in[idx];
        }
        barrier();
        for (uint j = 0u; j < ITEMS; j++) {
            uint i = j * wg + gl_LocalInvocationID.x;
            if (i < count) {
                if (phase == 0u) {
                    keys_out[dst[j] * 2u + 1u - word] = s_exchange[i];
                } else {
                    vals_out[dst[j]] = s_exchange[i];
                }
            }
        }
    }
}
