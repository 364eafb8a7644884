#version 460
// Radix sort, pass step 3: stable scatter of one block of BLOCK = ITEMS * WG keys (and their
// values) by one 8-bit digit, given offsets[digit * num_blocks + block] (the exclusive scan
// of the histograms).
//
// Ranking: subgroup s owns the contiguous keys [s * SG * ITEMS, (s + 1) * SG * ITEMS) of the
// block and walks them in ITEMS rounds of SG consecutive keys. In a round, the lanes holding
// the same digit find each other with 8 ballots (one per digit bit); the lowest of them adds
// their number to the subgroup's private counter of that digit and shares the old value.
// A key's rank in the block is then
//   (keys of smaller digits in the block) + (same digit in earlier subgroups)
//   + (same digit earlier in this subgroup),
// which keeps equal keys in input order. Keys and values go through shared memory in block
// order so the global writes of each digit's run are consecutive.
//
// For speed every global load of a phase is issued before its values are needed (keys before
// the ranking, values before the key writes), and each digit's output offset is read from
// global memory once per block into shared memory rather than once per key.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
// Upper bound of gl_NumSubgroups (set by the host from the subgroup size).
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32u;
// Keys per invocation.
layout(constant_id = 2) const uint ITEMS = 16u;

layout(set = 0, binding = 0) readonly buffer KeysIn { uint keys_in[]; };
layout(set = 0, binding = 1) readonly buffer ValsIn { uint vals_in[]; };
layout(set = 0, binding = 2) readonly buffer Offsets { uint offsets[]; };
layout(set = 0, binding = 3) writeonly buffer KeysOut { uint keys_out[]; };
layout(set = 0, binding = 4) writeonly buffer ValsOut { uint vals_out[]; };
layout(push_constant) uniform Push { uint n; uint num_blocks; uint shift; uint key_words; uint word; };

const uint BLOCK = ITEMS * gl_WorkGroupSize.x;

shared uint s_counts[MAX_SUBGROUPS * 256u];
shared uint s_digit_start[256];
// Output index of a digit's run minus the run's start in the block.
shared uint s_global[256];
shared uint s_exchange[BLOCK];

uint digit_of(uint w) {
    return (w >> shift) & 255u;
}

// Among the valid lanes holding digit d: (lanes below this one, their number, the lowest).
uvec3 match_digit(uint d, bool valid) {
    if (gl_SubgroupSize <= 32u) {
        // One mask word is enough: skip the wide ballot arithmetic.
        uint peers = subgroupBallot(valid).x;
        [[unroll]] for (uint b = 0u; b < 8u; b++) {
            bool bit = ((d >> b) & 1u) != 0u;
            uint ones = subgroupBallot(bit).x;
            peers &= bit ? ones : ~ones;
        }
        uint leader = peers == 0u ? 0u : uint(findLSB(peers));
        return uvec3(bitCount(peers & gl_SubgroupLtMask.x), bitCount(peers), leader);
    }
    uvec4 peers = subgroupBallot(valid);
    [[unroll]] for (uint b = 0u; b < 8u; b++) {
        bool bit = ((d >> b) & 1u) != 0u;
        uvec4 ones = subgroupBallot(bit);
        peers &= bit ? ones : ~ones;
    }
    uint leader = peers == uvec4(0u) ? 0u : subgroupBallotFindLSB(peers);
    return uvec3(subgroupBallotExclusiveBitCount(peers), subgroupBallotBitCount(peers), leader);
}

void main() {
    uint block = linear_group_id();
    if (block >= num_blocks) return;
    uint wg = gl_WorkGroupSize.x;
    uint tid = gl_LocalInvocationID.x;
    uint sg = gl_SubgroupID;
    uint lane = gl_SubgroupInvocationID;
    uint sg_size = gl_SubgroupSize;
    uint block_base = block * BLOCK;
    uint seg_base = block_base + sg * sg_size * ITEMS;

    uint w[ITEMS];
    [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
        uint idx = seg_base + it * sg_size + lane;
        w[it] = idx < n ? keys_in[idx * key_words + word] : 0u;
    }
    for (uint i = tid; i < gl_NumSubgroups * 256u; i += wg) s_counts[i] = 0u;
    barrier();

    // Rank each of this invocation's keys among equal digits of its subgroup.
    uint pos[ITEMS];
    [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
        bool valid = seg_base + it * sg_size + lane < n;
        uint d = digit_of(w[it]);
        uvec3 m = match_digit(d, valid);
        uint old = 0u;
        if (valid && m.x == 0u) old = atomicAdd(s_counts[sg * 256u + d], m.y);
        pos[it] = subgroupShuffle(old, m.z) + m.x;
    }
    barrier();

    // Per digit: exclusive prefix over subgroups (in place) and the block's digit totals.
    for (uint d = tid; d < 256u; d += wg) {
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

    for (uint d = tid; d < 256u; d += wg) s_global[d] = offsets[d * num_blocks + block] - s_digit_start[d];
    [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
        if (seg_base + it * sg_size + lane < n) {
            uint d = digit_of(w[it]);
            pos[it] += s_digit_start[d] + s_counts[sg * 256u + d];
            s_exchange[pos[it]] = w[it];
        }
    }
    // The first payload (the other word of 64-bit keys, else the values) is loaded now so its
    // latency overlaps the key writes.
    uint first = key_words == 2u ? 0u : 1u;
    uint p[ITEMS];
    [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
        uint idx = seg_base + it * sg_size + lane;
        p[it] = idx < n ? (first == 0u ? keys_in[idx * 2u + 1u - word] : vals_in[idx]) : 0u;
    }
    barrier();

    uint count = min(BLOCK, n - block_base);
    uint dst[ITEMS];
    [[unroll]] for (uint j = 0u; j < ITEMS; j++) {
        uint i = j * wg + tid;
        if (i < count) {
            uint x = s_exchange[i];
            dst[j] = s_global[digit_of(x)] + i;
            keys_out[dst[j] * key_words + word] = x;
        }
    }

    for (uint phase = first; phase < 2u; phase++) {
        if (phase != first) {
            [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
                uint idx = seg_base + it * sg_size + lane;
                if (idx < n) p[it] = vals_in[idx];
            }
        }
        barrier();
        [[unroll]] for (uint it = 0u; it < ITEMS; it++) {
            if (seg_base + it * sg_size + lane < n) s_exchange[pos[it]] = p[it];
        }
        barrier();
        [[unroll]] for (uint j = 0u; j < ITEMS; j++) {
            uint i = j * wg + tid;
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
