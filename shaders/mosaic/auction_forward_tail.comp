#version 460
// Forward rounds in one workgroup, for the end of a forward stage: there many rounds have a
// few unassigned rows, and two dispatches a round cost more than the bids. While a round
// has between 1 and `limit` unassigned rows, this kernel runs it exactly as
// auction_bid.comp and auction_assign.comp do (the same bids against the same prices, each
// column taking its highest bid from the smallest row), up to `rounds` rounds, keeping
// `free_rows` as they do, and counts its rounds in tail[0]. With no unassigned row, or
// more than `limit`, it stops without changing anything, and the Jacobi rounds that follow
// go on from the same state. Only the first round scans every row: a later round's
// unassigned rows are the ones that lost and the ones displaced in the round before.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "auction_select.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 1) coherent buffer Prices { float price[]; };
layout(set = 0, binding = 2) coherent buffer Owner { uint owner[]; };
layout(set = 0, binding = 3) coherent buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 4) buffer FreeRows { uint free_rows; };
// The rounds run here in the stage (word 2; the reverse stage's counts come before it).
layout(set = 0, binding = 5) buffer Tail { uint tail[3]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    float eps;
    uint rounds;
    uint limit;
};

// At most this many unassigned rows in a round run here.
const uint MAX_LIMIT = 16u;

shared uint s_count;
// The round's unassigned rows, then the next round's (at most twice as many: the rows that
// lost, and the rows that winners displaced).
shared uint s_row[2 * MAX_LIMIT];
shared uint s_column[MAX_LIMIT];
shared uint s_bid[MAX_LIMIT];

#define AUCTION_BID_SCAN
#include "auction_scans.glsl"

// Invocation 0, after the bids: each column takes its highest bid (the smallest row on a
// tie); the rows that lost and the rows displaced are the next round's unassigned rows.
void settle(uint count) {
    uint next = 0u;
    uint row[MAX_LIMIT];
    for (uint a = 0u; a < count; a++) row[a] = s_row[a];
    for (uint a = 0u; a < count; a++) {
        bool wins = true;
        for (uint b = 0u; b < count; b++) {
            bool higher = s_bid[b] > s_bid[a] || (s_bid[b] == s_bid[a] && row[b] < row[a]);
            if (b != a && s_column[b] == s_column[a] && higher) wins = false;
        }
        uint i = row[a];
        if (!wins) {
            s_row[next++] = i;
            continue;
        }
        uint j = s_column[a];
        price[j] = uintBitsToFloat(s_bid[a]);
        uint previous = owner[j];
        owner[j] = i;
        col4row[i] = j;
        if (previous != NONE) {
            col4row[previous] = NONE;
            s_row[next++] = previous;
        } else {
            free_rows -= 1u;
        }
    }
    s_count = next;
}

void main() {
    uint cap = min(limit, MAX_LIMIT);
    if (gl_LocalInvocationID.x == 0u) s_count = 0u;
    barrier();
    for (uint i = gl_LocalInvocationID.x; i < m; i += gl_WorkGroupSize.x) {
        if (col4row[i] == NONE) {
            uint k = atomicAdd(s_count, 1u);
            if (k < cap) s_row[k] = i;
        }
    }
    barrier();
    uint done = 0u;
    for (; done < rounds; done++) {
        uint count = s_count;
        // Uniform: every invocation read the same count after a barrier.
        if (count == 0u || count > cap) break;
        for (uint a = 0u; a < count; a++) {
            uint column, bid;
            if (bid_scan(s_row[a], column, bid)) {
                s_column[a] = column;
                s_bid[a] = bid;
            }
        }
        memoryBarrierBuffer();
        barrier();
        if (gl_LocalInvocationID.x == 0u) settle(count);
        memoryBarrierBuffer();
        barrier();
    }
    if (gl_LocalInvocationID.x == 0u) tail[2] += done;
}
