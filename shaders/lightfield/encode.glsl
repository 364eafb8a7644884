// The body of the encode kernels (encode.comp, encode_global.comp), which differ only in
// where the patch tensor lives while it is projected.
//
// Algorithm 1 (light-field dictionary-ensemble paper), fused into one kernel: one workgroup
// per patch projects the patch onto every dictionary with five in-place n-mode products
// (modes.glsl), then finds the fewest largest quantised coefficients that meet the patch's
// squared-error budget, and keeps the sparsest dictionary (ties by error, then by index).
//
// Why fused rather than the engine's batched GEMM: each product is a 4800 x m by m x m
// multiply with m <= 16, far too thin to be worth a round trip through global memory, and
// the selection needs the whole coefficient tensor of one (patch, dictionary) pair at once.
// Kept in shared memory (encode.comp), the tensor never leaves the workgroup: the only
// global traffic is the patch (read once per dictionary, from L2) and the chosen
// coefficients. A patch too large for shared memory (8 x 8 pixels of 9 x 9 views in colour
// are 62 KB; NVIDIA gives a workgroup 48 KB) keeps its tensor in a device buffer instead
// (encode_global.comp: one region per patch, which stays in cache while its workgroup
// works): the same products in the same order, the same selection. The selection works
// from registers either way (each invocation's share of the coefficients, load_terms) and
// reads the tensor again only to write the kept coefficients (compact).
//
// Selection without sorting (Eq. 9-12): with orthonormal dictionaries the squared error of
// keeping the set S = { key >= t } is sum_{j not in S} x_j^2 + sum_{j in S} d_j^2 (d is the
// quantisation error), so a threshold search over t (binary search on the bit patterns of
// |x|, which order like |x|) finds the same set as the paper's greedy nullification, with one
// workgroup reduction per step and no reconstruction. See apps/lightfield/src/select.rs for
// the exact semantics (ties, the sparsity cap, failures), which the CPU reference shares.
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint PER_THREAD = 1u;  // ceil(P / workgroup size)
#include "patch_spec.glsl"

layout(set = 0, binding = 0) readonly buffer Patches { float patches[]; };
layout(set = 0, binding = 1) readonly buffer Dicts { float dicts[]; };
// Per patch: squared-error budget, quantisation step and its reciprocal (from the host, so
// the CPU reference quantises with bit-identical arithmetic), padding.
layout(set = 0, binding = 2) readonly buffer Limits { vec4 limits[]; };
layout(set = 0, binding = 3) writeonly buffer Info { uint info[]; };      // per patch: dict, count, success, error bits
layout(set = 0, binding = 4) writeonly buffer Locations { uint locations[]; };  // per patch: sparsity slots
layout(set = 0, binding = 5) writeonly buffer Levels { int levels[]; };
layout(push_constant) uniform Push {
    uint n_patches;
    uint n_dicts;
    uint sparsity;
};

#ifdef PATCH_BINDING
#include "patch_global.glsl"
#else
#include "patch_shared.glsl"
#endif
#define MODE_INPUT(i) patches[i]
#include "modes.glsl"

const uint KEEP_NOTHING = 0x7F800001u;  // above every finite |x| bit pattern
const uint NONE = 0xFFFFFFFFu;

// This invocation's share of the coefficient tensor (elements lane + r * workgroup size):
// the key (bits of |x|, or 0 for a zero level) and the quantisation error d^2; x^2 is the
// key's value squared. Coefficients of level 0 are never kept, so their x^2 only enters as
// a constant (zero_x2). Two arrays rather than three keep registers, and occupancy, up.
uint reg_key[PER_THREAD];
float reg_d2[PER_THREAD];
float zero_x2;

// Per subgroup: error and total (as bits), count and largest key, one 16-byte load each
// when every invocation sums them. Integers in the float lanes would be denormal patterns,
// which a driver may flush; finite floats in uint lanes keep their bits.
shared uvec4 red[2 * 64];
shared uint sg_counts[64];
shared uint sg_ties[64];
uint slot = 0u;
float step, inv_step;

float quant_level(float x) {
    precise float a = floor(abs(x) * inv_step + 0.5);
    return a;
}

void load_terms() {
    zero_x2 = 0.0;
    [[unroll]] for (uint r = 0u; r < PER_THREAD; r++) {
        uint j = r * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
        float x = j < P ? X_AT(j) : 0.0;
        float a = quant_level(x);
        float d = abs(x) - a * step;
        reg_key[r] = a == 0.0 ? 0u : floatBitsToUint(abs(x));
        reg_d2[r] = d * d;
        zero_x2 += a == 0.0 ? x * x : 0.0;
    }
}

// Squared error and size of the set { key >= t }, the total energy and the largest key, for
// the whole patch; every invocation gets the same values (summed in a fixed order). Two
// slots of shared scratch alternate so one barrier per call suffices.
void evaluate(uint t, out float err, out uint count, out float total, out uint kmax) {
    float e = zero_x2, tot = zero_x2;
    uint c = 0u, km = 0u;
    [[unroll]] for (uint r = 0u; r < PER_THREAD; r++) {
        float ax = uintBitsToFloat(reg_key[r]);
        float x2 = ax * ax;
        bool keep = reg_key[r] >= t;
        e += keep ? reg_d2[r] : x2;
        tot += x2;
        c += keep ? 1u : 0u;
        km = max(km, reg_key[r]);
    }
    e = subgroupAdd(e);
    tot = subgroupAdd(tot);
    c = subgroupAdd(c);
    km = subgroupMax(km);
    uint base = slot * 64u;
    if (subgroupElect()) red[base + gl_SubgroupID] = uvec4(floatBitsToUint(e), floatBitsToUint(tot), c, km);
    barrier();
    err = 0.0;
    total = 0.0;
    count = 0u;
    kmax = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) {
        uvec4 r = red[base + s];
        err += uintBitsToFloat(r.x);
        total += uintBitsToFloat(r.y);
        count += r.z;
        kmax = max(kmax, r.w);
    }
    slot ^= 1u;
}

// The smallest set meeting `budget`, if it has at most `cap` coefficients. `probe` (0 for
// none) is the threshold the best dictionary so far chose: tested first, it usually shows
// at once that this dictionary needs more than `cap` coefficients, so losing dictionaries
// cost one reduction instead of a whole search. The probe's error and size come back in
// probe_e and probe_c (probe_c = NONE if it was not evaluated).
bool fewest_within(float budget, uint cap, uint probe, out uint count, out float err, out uint thr,
                   out float probe_e, out uint probe_c) {
    float e, total, e_lo;
    uint c, c_lo, kmax;
    probe_e = 0.0;
    probe_c = NONE;
    // Every key of a non-zero level is at least about step/2, so this bound keeps the same
    // set as threshold 1 and narrows the search.
    uint lo = floatBitsToUint(0.49 * step), hi = KEEP_NOTHING, c_hi = 0u;
    bool lo_known = false;
    if (probe > lo && probe < KEEP_NOTHING) {
        evaluate(probe, e, c, total, kmax);
        probe_e = e;
        probe_c = c;
        if (e <= budget) {
            lo = probe;
            e_lo = e;
            c_lo = c;
            lo_known = true;
        } else {
            if (c > cap && total > budget) return false;  // the answer keeps even more: cannot win
            hi = probe;
            c_hi = c;
        }
    }
    if (!lo_known) {
        evaluate(lo, e_lo, c_lo, total, kmax);
        if (e_lo > budget) return false;  // even every non-zero coefficient is not enough
    }
    if (total <= budget) {
        count = 0u;
        err = total;
        thr = KEEP_NOTHING;
        return true;
    }
    hi = min(hi, kmax + 1u);
    // Invariant: { key >= lo } meets the budget, { key >= hi } does not. Stop once one key
    // value separates them.
    while (hi - lo > 1u && c_lo - c_hi > 1u) {
        uint mid = lo + (hi - lo) / 2u;
        evaluate(mid, e, c, total, kmax);
        if (e <= budget) {
            lo = mid;
            e_lo = e;
            c_lo = c;
        } else {
            hi = mid;
            c_hi = c;
            if (c > cap) return false;
        }
    }
    if (c_lo > cap) return false;
    count = c_lo;
    err = e_lo;
    thr = lo;
    return true;
}

// Whether the set { key >= t } (c coefficients, error e) proves that the cap largest
// coefficients have an error above `beat`, so this dictionary cannot strictly improve on a
// failed patch's best. With c >= cap the cap largest are a subset: their error is at least e.
// With c < cap, each of the cap - c coefficients added has |x| below t's value v, so it
// lowers the error by less than v^2 (x^2 - d^2 <= x^2). The margin, 1e-3 of e, is far above
// the rounding of the reductions' float sums, so a pruned dictionary never was a tie.
bool cannot_beat(float beat, uint cap, uint t, float e, uint c) {
    float v = uintBitsToFloat(t);
    float bound = c >= cap ? e : e - float(cap - c) * v * v;
    return bound > beat + 1e-3 * e;
}

// The `cap` largest non-zero coefficients (all if fewer), ties at the last place broken by
// lower location: the set { key >= thr } plus the first tie_take coefficients of key tie_key.
// Returns false, as soon as a step of the search proves it (cannot_beat), when their error
// is above `beat` (+infinity: always finish).
bool most_within(uint cap, float beat, out uint count, out float err, out uint thr, out uint tie_key, out uint tie_take) {
    float e, total;
    uint c, kmax;
    tie_key = 0u;
    tie_take = 0u;
    evaluate(1u, e, c, total, kmax);
    // Every non-zero coefficient kept: no set of them has a smaller error.
    if (e > beat + 1e-3 * e) return false;
    if (c <= cap) {
        count = c;
        err = e;
        thr = c == 0u ? KEEP_NOTHING : 1u;
        return true;
    }
    uint lo = 1u, hi = kmax + 1u, c_lo = c, c_hi = 0u;
    float e_hi = total;
    // Invariant: { key >= lo } holds more than cap coefficients, { key >= hi } at most cap.
    while (hi - lo > 1u && c_lo - c_hi > 1u) {
        uint mid = lo + (hi - lo) / 2u;
        evaluate(mid, e, c, total, kmax);
        if (cannot_beat(beat, cap, mid, e, c)) return false;
        if (c <= cap) {
            hi = mid;
            c_hi = c;
            e_hi = e;
        } else {
            lo = mid;
            c_lo = c;
        }
    }
    count = c_hi;
    err = e_hi;
    thr = hi;
    if (c_hi < cap) {
        // Only one key value (lo) lies below hi in the set of lo: a tie group straddles cap.
        tie_key = lo;
        tie_take = cap - c_hi;
        float x = uintBitsToFloat(lo);
        float d = x - quant_level(x) * step;
        err = e_hi - float(tie_take) * (x * x - d * d);
        count = cap;
    }
    return true;
}

void load_dict(uint k) {
    load_matrices(k, true);
}

// Writes the kept coefficients (key >= thr, plus the first tie_take of key tie_key) of the
// tensor in X in ascending location order: element lane + r * workgroup size, with lanes
// numbered subgroup by subgroup so a ballot prefix gives each its slot.
void compact(uint pid, uint thr, uint tie_key, uint tie_take) {
    uint lane = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    uint out_base = pid * sparsity;
    uint written = 0u, ties_seen = 0u;
    [[unroll]] for (uint r = 0u; r < PER_THREAD; r++) {
        uint j = r * gl_WorkGroupSize.x + lane;
        float x = j < P ? X_AT(j) : 0.0;
        float a = quant_level(x);
        uint key = (j < P && a != 0.0) ? floatBitsToUint(abs(x)) : 0u;
        bool tie = tie_take > 0u && key == tie_key;
        uvec4 tie_ballot = subgroupBallot(tie);  // outside the elect branch: all lanes vote
        uint tie_before = subgroupBallotExclusiveBitCount(tie_ballot);
        if (subgroupElect()) sg_ties[gl_SubgroupID] = subgroupBallotBitCount(tie_ballot);
        barrier();
        uint tie_rank = ties_seen + tie_before, ties_total = 0u;
        for (uint s = 0u; s < gl_NumSubgroups; s++) {
            uint n = sg_ties[s];
            tie_rank += s < gl_SubgroupID ? n : 0u;
            ties_total += n;
        }
        ties_seen += ties_total;
        bool keep = key != 0u && (key >= thr || (tie && tie_rank < tie_take));
        uvec4 ballot = subgroupBallot(keep);
        uint before = subgroupBallotExclusiveBitCount(ballot);
        if (subgroupElect()) sg_counts[gl_SubgroupID] = subgroupBallotBitCount(ballot);
        barrier();
        uint offset = written, total = 0u;
        for (uint s = 0u; s < gl_NumSubgroups; s++) {
            uint n = sg_counts[s];
            offset += s < gl_SubgroupID ? n : 0u;
            total += n;
        }
        uint at = offset + before;
        if (keep && at < sparsity) {
            locations[out_base + at] = j;
            levels[out_base + at] = x < 0.0 ? -int(a) : int(a);
        }
        written += total;
        barrier();
    }
}

void main() {
    uint pid = linear_group_id();
    if (pid >= n_patches) return;
    uint in_base = pid * P;
    bind_patch(pid);
    vec4 limit = limits[pid];
    float budget = limit.x;
    step = limit.y;
    inv_step = limit.z;

    // Sparsest successful dictionary so far (best_*), and, while none succeeded, the failed
    // one with the least error at T coefficients (fail_*): one pass over the dictionaries
    // serves both, so a patch no dictionary can serve costs no second pass.
    bool success = false;
    uint best_k = NONE, best_c = 0u, best_t = KEEP_NOTHING, last_k = NONE, best_tie_key = 0u, best_tie_take = 0u;
    float best_e = 0.0;
    uint fail_k = NONE, fail_c = 0u, fail_t = KEEP_NOTHING, fail_tie_key = 0u, fail_tie_take = 0u;
    float fail_e = 0.0;
    for (uint k = 0u; k < n_dicts; k++) {
        load_dict(k);
        all_modes(true, in_base);
        load_terms();
        last_k = k;
        uint c, t, probe_c;
        float e, probe_e;
        uint probe = success ? best_t : (fail_k != NONE ? fail_t : 0u);
        if (fewest_within(budget, success ? best_c : sparsity, probe, c, e, t, probe_e, probe_c)) {
            if (!success || c < best_c || (c == best_c && e < best_e)) {
                success = true;
                best_k = k;
                best_c = c;
                best_e = e;
                best_t = t;
            }
        }
        if (!success) {
            // A set of at least T coefficients with error >= fail_e bounds this dictionary's
            // T-coefficient error from below: it cannot do strictly better. So can a smaller
            // set at the probe (cannot_beat), and any step of most_within's search.
            bool beaten = fail_k != NONE && probe_c != NONE
                          && ((probe_c >= sparsity && probe_e >= fail_e) || cannot_beat(fail_e, sparsity, probe, probe_e, probe_c));
            uint tk, tt;
            if (!beaten && most_within(sparsity, fail_k == NONE ? uintBitsToFloat(0x7F800000u) : fail_e, c, e, t, tk, tt)) {
                if (fail_k == NONE || e < fail_e) {
                    fail_k = k;
                    fail_c = c;
                    fail_e = e;
                    fail_t = t;
                    fail_tie_key = tk;
                    fail_tie_take = tt;
                }
            }
        }
    }
    if (!success) {
        best_k = fail_k;
        best_c = fail_c;
        best_e = fail_e;
        best_t = fail_t;
        best_tie_key = fail_tie_key;
        best_tie_take = fail_tie_take;
    }
    if (best_k != last_k) {
        load_dict(best_k);
        all_modes(true, in_base);
    }
    compact(pid, best_t, best_tie_key, best_tie_take);
    if (gl_LocalInvocationID.x == 0u) {
        info[4u * pid + 0u] = best_k;
        info[4u * pid + 1u] = best_c;
        info[4u * pid + 2u] = success ? 1u : 0u;
        info[4u * pid + 3u] = floatBitsToUint(best_e);
    }
}
