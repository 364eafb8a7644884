#version 460
// Reverse rounds in one workgroup, for the end of a reverse stage: there most rounds have
// one or a few columns above lambda (a chain of displacements, each a round), and two
// dispatches a round cost more than the round's work. While a round has between 1 and
// `limit` such columns, this kernel runs it exactly as auction_reverse.comp and
// auction_reverse_assign.comp do (the same offers against the same state, each row taking
// its lowest offer at the smallest column), up to `rounds` rounds; then it leaves lambda
// for the next Jacobi round in lambda[parity] and counts its rounds in above[2]. With no
// column above lambda, or more than `limit`, it stops without changing anything, and the
// Jacobi rounds that follow go on from the same state. Only the first round scans every
// column: a later round's columns above lambda are among those whose offers lost and those
// the moved rows left, since every other unassigned column is at most lambda, which never
// falls (an offer is never below it), and lambda is found again only when a row leaves a
// column at its price.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "auction_select.glsl"

layout(local_size_x_id = 0) in;

// D transposed (n x m, auction_transpose.comp): a column's entries are consecutive.
layout(set = 0, binding = 0) readonly buffer Transposed { float dt[]; };
layout(set = 0, binding = 1) coherent buffer Prices { float price[]; };
layout(set = 0, binding = 2) coherent buffer Owner { uint owner[]; };
layout(set = 0, binding = 3) coherent buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 4) coherent buffer Value { float w[]; };
layout(set = 0, binding = 5) buffer Lambda { uint lambda[2]; };
// Columns above lambda by even and odd Jacobi rounds, then the rounds run here.
layout(set = 0, binding = 6) buffer Above { uint above[3]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    float eps;
    uint parity;
    uint rounds;
    uint limit;
};

// At most this many columns above lambda in a round run here.
const uint MAX_LIMIT = 16u;

shared uint s_lambda;
shared uint s_count;
shared bool s_recompute;
// The round's columns above lambda, then the next round's candidates (at most twice as many:
// the columns whose offers lost, and the columns the rows that moved left).
shared uint s_column[2 * MAX_LIMIT];
shared uint s_row[MAX_LIMIT];
shared uint s_value[MAX_LIMIT];
shared float s_offer[MAX_LIMIT];

// Lambda, the lowest price of an assigned column, into s_lambda (every invocation calls it).
void lowest_assigned_price() {
    if (gl_LocalInvocationID.x == 0u) s_lambda = NONE;
    barrier();
    uint low = NONE;
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) {
        if (owner[j] != NONE) low = min(low, floatBitsToUint(price[j]));
    }
    low = subgroupMin(low);
    if (subgroupElect()) atomicMin(s_lambda, low);
    barrier();
}

#define AUCTION_OFFER_SCAN
#include "auction_scans.glsl"

// Invocation 0, after the offers: rows take their lowest offers; the columns whose offers
// lost and the columns the rows left become the next round's candidates; s_recompute says
// whether a column left at lambda's price (lambda may rise; an offer is never below it).
void settle(uint count) {
    uint next = 0u;
    s_recompute = false;
    uint column[MAX_LIMIT];
    for (uint a = 0u; a < count; a++) column[a] = s_column[a];
    for (uint a = 0u; a < count; a++) {
        uint i = s_row[a];
        if (i == NONE) continue;
        bool wins = true;
        for (uint b = 0u; b < count; b++) {
            bool lower = s_value[b] < s_value[a] || (s_value[b] == s_value[a] && column[b] < column[a]);
            if (b != a && s_row[b] == i && lower) wins = false;
        }
        uint j = column[a];
        if (!wins) {
            s_column[next++] = j;
            continue;
        }
        uint left = col4row[i];
        if (floatBitsToUint(price[left]) == s_lambda) s_recompute = true;
        price[j] = s_offer[a];
        owner[left] = NONE;
        owner[j] = i;
        col4row[i] = j;
        w[i] = uintBitsToFloat(s_value[a]);
        s_column[next++] = left;
    }
    s_count = next;
}

void main() {
    uint cap = min(limit, MAX_LIMIT);
    lowest_assigned_price();
    float l = uintBitsToFloat(s_lambda);
    if (gl_LocalInvocationID.x == 0u) s_count = 0u;
    barrier();
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) {
        if (owner[j] == NONE && price[j] > l) {
            uint k = atomicAdd(s_count, 1u);
            if (k < cap) s_column[k] = j;
        }
    }
    barrier();
    uint done = 0u;
    for (; done < rounds; done++) {
        uint count = s_count;
        // Uniform: every invocation read the same count after a barrier.
        if (count == 0u || count > cap) break;
        for (uint a = 0u; a < count; a++) {
            uint row, value;
            float offer;
            if (offer_scan(s_column[a], l, row, value, offer)) {
                s_row[a] = row;
                s_value[a] = value;
                s_offer[a] = offer;
            }
        }
        memoryBarrierBuffer();
        barrier();
        if (gl_LocalInvocationID.x == 0u) settle(count);
        memoryBarrierBuffer();
        barrier();
        if (s_recompute) lowest_assigned_price();
        l = uintBitsToFloat(s_lambda);
        // Every other unassigned column is at most the old lambda, so at most the new one.
        if (gl_LocalInvocationID.x == 0u) {
            uint kept = 0u;
            for (uint a = 0u; a < s_count; a++) {
                uint j = s_column[a];
                if (price[j] > l) s_column[kept++] = j;
            }
            s_count = kept;
        }
        barrier();
    }
    if (gl_LocalInvocationID.x == 0u) {
        lambda[parity] = s_lambda;
        above[2] += done;
    }
}
