// Active Pixel encoding in one pass: the five steps of the paper's Algorithm 1 (pixel
// properties, run ids by an inclusive scan of run starts, run lengths by reduce-by-key,
// active indices by an exclusive scan of activity, and the scatter to the Equation 1
// offsets) fused into one single-pass scan with decoupled look-back, so every pixel's depth
// is read once, every active pixel's colour once, and only the payload is written.
//
// The scan runs over the ROI elements (ap_elements.glsl) with the monoid
// (run starts: +, active elements: +, pixel of the last run start + 1: max; pixels grow with
// elements, so max picks the last). From its prefix every element knows its run id r, its
// active index a and where its run began, which is all the scatter needs:
// - an active element writes its pixel at ApOffset(a, r);
// - for each active run that begins in a 32-element word, the invocation of that word writes
//   the run header's inactive count (the run's first pixel minus the previous run's first
//   pixel), and for each that ends in it, the active count (the run's element count);
// - the last element writes the final (inactive count, 0) header when the image ends
//   inactive, and the payload size.
// Elements are measured in image pixels, so the payload is that of the whole image.
//
// A tile is PER_INVOCATION elements per invocation, element k * WG + i of the tile on
// invocation i; activity is kept as bit masks of 32 elements (from subgroup ballots) so the
// run starts, their counts and the last start of every 32 elements come from bit
// operations.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "ap_elements.glsl"

// AP_TRACE (ap_encode_trace.comp): each tile records when it reached each step, for
// `composite sweep --trace` (there is no profiler on the GPU machines). TRACE_WORDS words
// for the tile of ticket t from trace[TRACE_WORDS * t]: the device clock (ns, low word) at
// its start and end, its SM's id, the look-back windows it read, then its SM's clock (low
// word) at its start, its ticket, its depth loads' ballots, its aggregate's publication,
// its look-back's end and its scatter's end. Each word is stored when it is known, so that
// tracing keeps no value alive through the kernel.
#ifdef AP_TRACE
#extension GL_ARB_shader_clock : require
#extension GL_EXT_shader_realtime_clock : require
#extension GL_NV_shader_sm_builtins : require
#define LB_COUNT_ROUNDS
const uint TRACE_WORDS = 10u;
#define TRACE(word, value) trace[TRACE_WORDS * (base / TILE) + (word)] = (value)
#endif

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) restrict readonly buffer Color { uint color[]; };
layout(set = 0, binding = 1) restrict readonly buffer Depth { uint depth_bits[]; };
// The box as the ROI kernel leaves it: (x0, y0, ~x1, ~y1), x0 = 0xFFFFFFFF when empty.
layout(set = 0, binding = 2) readonly buffer Roi { uint roi[4]; };
layout(set = 0, binding = 3) writeonly buffer Out { uint ap[]; };
layout(set = 0, binding = 3) writeonly buffer Out2 { uvec2 ap2[]; };

layout(set = 0, binding = 4) writeonly buffer Size { uint ap_words[]; };
layout(set = 0, binding = 5) coherent buffer Scratch { uint scratch[]; };
#ifdef AP_TRACE
layout(set = 0, binding = 6) writeonly buffer Trace { uint trace[]; };
#endif
// origin: index in the colour and depth buffers of the image's first pixel. The box is the
// ROI kernel's result in `roi` when box_source is 1, else box_push = (x0, y0, x1, y1), which
// saves a dependent load at the start of every tile when the host knows the box.
layout(push_constant) uniform Push { uint width; uint height; uint origin; uint box_source; uvec4 box_push; };

// Elements per invocation (specialization constant 1).
layout(constant_id = 1) const uint PER_INVOCATION = 16u;
// 1: the look-back reads descriptors with relaxed atomic loads (lookback.glsl says when).
layout(constant_id = 2) const uint RELAXED_LOADS = 0u;
// 1: active colours are loaded in the scatter, not held in registers across the scans:
// fewer registers per invocation, so more tiles share an SM and hide each other's latency.
layout(constant_id = 3) const uint LATE_COLOUR = 0u;

#define LB_COMPONENTS 3u
#define LB_MAX_MASK 4u
#define LB_RELAXED_LOADS (RELAXED_LOADS != 0u)
#include "lookback.glsl"

const uint WG = gl_WorkGroupSize.x;
const uint TILE = PER_INVOCATION * WG;
const uint WORDS = TILE / 32u;
// Bits of the f32 1.0, the background depth.
const uint BACKGROUND_BITS = 0x3f800000u;

// The shared arrays have fixed sizes, those of the largest tile (16384 elements) and the
// most subgroups (1024 invocations in subgroups of 4) the host lets through, not sizes
// computed from the specialization constants: with those, some shapes (512 x 8, and
// 1024 x 16 in an earlier build) encoded garbage on the H100 in every frame while right on
// lavapipe; with fixed sizes all 36 configurations of `composite sweep` were right.
const uint MAX_WORDS = 512u;
const uint MAX_SUBGROUPS = 256u;
shared uint s_mask[MAX_WORDS];    // activity of the tile's elements, bit j of word w = element 32w + j
shared uint s_start[MAX_WORDS];   // run starts, same layout
shared uvec3 s_prefix[MAX_WORDS]; // (runs, actives, last start's pixel + 1) of everything before word w
shared uvec3 s_sg[MAX_SUBGROUPS]; // per-subgroup totals, then their exclusive prefixes
shared uvec3 s_tile_prefix;
shared uint s_edge[2];        // activity of the elements just before and just after the tile

uint ap_offset(uint a, uint r) {
    // Word offset of an active pixel: 2 * (a + floor((r - 1) / 2) + 1); floor, not
    // truncation, so that an all-inactive image puts its header at 0.
    return uint(2 * (int(a) + ((int(r) - 1) >> 1) + 1));
}

// Pixel of element j of a word whose first element is at (row0, col0) of the element grid: a
// division only where the word runs past the end of its box row.
uint word_element_pixel(uint row0, uint col0, uint j) {
    uint col = col0 + j;
    uint rows = col >= el_stride ? col / el_stride : 0u;
    return (el_y0 + row0 + rows) * el_width + el_x0 + col - rows * el_stride;
}
bool element_active(uint e) {
    return e < el_n && !is_gap(e) && depth_bits[origin + element_pixel(e)] != BACKGROUND_BITS;
}

uvec3 combine3(uvec3 a, uvec3 b) {
    return uvec3(a.xy + b.xy, max(a.z, b.z));
}

// The run headers of word w of the tile at element `base`: for each active run that begins
// in the word, its inactive count (from the previous run's first pixel, or from pixel 0 for
// the first run); for each that ends in it, its active count (an active run has no gap
// element, so its pixels are its elements).
void write_headers(uint w, uint base) {
    uint e0 = base + 32u * w;
    uint m = s_mask[w];
    uint starts = s_start[w];
    uint next = w + 1u < WORDS ? s_mask[w + 1u] & 1u : s_edge[1];
    uint begins = starts & m;
    uint ends = m & ~((m >> 1) | (next << 31));
    uint bounds = begins | ends;
    if (e0 >= el_n || bounds == 0u) return;
    uvec3 pre = s_prefix[w];
    uint row0 = e0 / el_stride;
    uint col0 = e0 - row0 * el_stride;
    while (bounds != 0u) {
        uint j = uint(findLSB(bounds));
        bounds &= bounds - 1u;
        uint below = (1u << j) - 1u;
        uint upto = below | (1u << j);
        uint a = pre.y + bitCount(m & below);
        uint r = pre.x + bitCount(starts & upto);
        uint pixel = word_element_pixel(row0, col0, j);
        if ((begins & (1u << j)) != 0u) {
            uint earlier = starts & below;
            uint previous = r <= 2u ? 0u : (earlier != 0u ? word_element_pixel(row0, col0, uint(findMSB(earlier))) : pre.z - 1u);
            ap[ap_offset(a, r) - 2u] = pixel - previous;
        }
        if ((ends & (1u << j)) != 0u) {
            uint mine = starts & upto;
            uint len = mine != 0u ? j + 1u - uint(findMSB(mine)) : pixel + 2u - pre.z;
            ap[ap_offset(a + 1u - len, r) - 1u] = len;
        }
    }
}

void main() {
#ifdef AP_TRACE
    uint real_start = clockRealtime2x32EXT().x;
    uint c_start = clock2x32ARB().x;
#endif
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint tiles = max(ceil_div(el_n, TILE), 1u);
    // Surplus workgroups (with the box from `roi`, the dispatch covers the whole image) leave
    // before taking a ticket, so tickets 0 .. tiles - 1 all go to workgroups that run.
    if (linear_group_id() >= tiles) return;
    uint tile = lb_take_tile();
#ifdef AP_TRACE
    uint c_ticket = clock2x32ARB().x;
#endif
    uint lid = gl_LocalInvocationIndex;
    if (el_n == 0u) {
        if (lid == 0u) {
            ap[0] = el_total;
            ap[1] = 0u;
            ap_words[0] = 2u;
        }
        return;
    }
    uint base = tile * TILE;
#ifdef AP_TRACE
    if (lid == 0u) {
        TRACE(0u, real_start);
        TRACE(2u, gl_SMIDNV);
        TRACE(4u, c_start);
        TRACE(5u, c_ticket);
    }
#endif

    // Step 1 (pixel properties): activity bits by ballot. All loads are issued first (with
    // the two elements around the tile, on two other warps) so their latencies overlap, and
    // unconditionally: elements past the end and gap elements read the image's first pixel
    // (a cache hit) and are then ignored, so no branch separates the loads (with one,
    // NVIDIA's compiler waited for each load before issuing the next).
    uint depth[PER_INVOCATION];
    uint real = 0u;  // bit k: element k * WG + lid is a pixel of the box
    ElementWalk walk = walk_start(base + lid, WG);
    [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
        bool pixel = base + k * WG + lid < el_n && !walk_is_gap(walk);
        real |= pixel ? 1u << k : 0u;
        depth[k] = depth_bits[origin + (pixel ? walk_pixel(walk) : 0u)];
        walk_next(walk);
    }
    [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
        if ((real & (1u << k)) == 0u) depth[k] = BACKGROUND_BITS;
    }
    if (lid == 0u) s_edge[0] = base > 0u && element_active(base - 1u) ? 1u : 0u;
    if (lid == WG - 1u) s_edge[1] = element_active(base + TILE) ? 1u : 0u;
    // Subgroups of 32 or more lanes store whole mask words; smaller ones OR into them.
    if (gl_SubgroupSize < 32u) {
        for (uint w = lid; w < WORDS; w += WG) s_mask[w] = 0u;
        barrier();
    }
    [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
        uvec4 b = subgroupBallot(depth[k] != BACKGROUND_BITS);
        if (subgroupElect()) {
            uint first = k * WG + gl_SubgroupID * gl_SubgroupSize;
            if (gl_SubgroupSize >= 32u) {
                for (uint c = 0u; c < gl_SubgroupSize / 32u; c++) s_mask[first / 32u + c] = b[c];
            } else {
                atomicOr(s_mask[first / 32u], b.x << (first % 32u));
            }
        }
    }
    // The active pixels' colours, loaded while the scans below run.
    uint colour[PER_INVOCATION];
    if (LATE_COLOUR == 0u) {
        walk = walk_start(base + lid, WG);
        [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
            colour[k] = color[origin + (depth[k] != BACKGROUND_BITS ? walk_pixel(walk) : 0u)];
            walk_next(walk);
        }
    }
    barrier();
#ifdef AP_TRACE
    if (lid == 0u) TRACE(6u, clock2x32ARB().x);
#endif

    // Run starts and the monoid value of each word (one invocation per word).
    uvec3 word_sum = uvec3(0u);
    if (lid < WORDS) {
        uint m = s_mask[lid];
        uint before = lid > 0u ? s_mask[lid - 1u] >> 31 : s_edge[0];
        uint e0 = base + 32u * lid;
        uint starts = m ^ ((m << 1) | before);
        if (e0 == 0u) starts |= 1u;  // the sequence opens its first run
        if (e0 + 32u > el_n) starts &= e0 >= el_n ? 0u : (1u << (el_n - e0)) - 1u;
        s_start[lid] = starts;
        word_sum = uvec3(bitCount(starts), bitCount(m), starts != 0u ? element_pixel(e0 + uint(findMSB(starts))) + 1u : 0u);
    }

    // Steps 2-4 (the scans): across the words of the tile, then across tiles by look-back.
    uvec3 incl = uvec3(subgroupInclusiveAdd(word_sum.x), subgroupInclusiveAdd(word_sum.y),
                       subgroupInclusiveMax(word_sum.z));
    uvec3 lane_excl = uvec3(incl.xy - word_sum.xy, subgroupExclusiveMax(word_sum.z));
    if (gl_SubgroupInvocationID == subgroupBallotFindMSB(subgroupBallot(true))) s_sg[gl_SubgroupID] = incl;
    barrier();
    if (gl_SubgroupID == 0u) {
        uvec3 carry = uvec3(0u);
        for (uint first = 0u; first < gl_NumSubgroups; first += gl_SubgroupSize) {
            uint i = first + gl_SubgroupInvocationID;
            uvec3 x = i < gl_NumSubgroups ? s_sg[i] : uvec3(0u);
            uvec3 excl = uvec3(subgroupExclusiveAdd(x.x), subgroupExclusiveAdd(x.y), subgroupExclusiveMax(x.z));
            if (i < gl_NumSubgroups) s_sg[i] = combine3(carry, excl);
            carry = combine3(carry, uvec3(subgroupAdd(x.x), subgroupAdd(x.y), subgroupMax(x.z)));
        }
        uvec4 aggregate = uvec4(carry, 0u);
        uvec4 prefix = uvec4(0u);
#ifdef AP_TRACE
        if (subgroupElect()) TRACE(7u, clock2x32ARB().x);
#endif
        if (tile == 0u) {
            if (subgroupElect()) lb_publish(tile, LB_FLAG_PREFIX, aggregate);
#ifdef AP_TRACE
            if (subgroupElect()) {
                TRACE(8u, clock2x32ARB().x);
                TRACE(3u, 0u);
            }
#endif
        } else {
            if (subgroupElect()) lb_publish(tile, LB_FLAG_AGGREGATE, aggregate);
            prefix = lb_look_back(tile);
#ifdef AP_TRACE
            if (subgroupElect()) {
                TRACE(8u, clock2x32ARB().x);
                TRACE(3u, lb_rounds);
            }
#endif
            if (subgroupElect()) lb_publish(tile, LB_FLAG_PREFIX, lb_combine(prefix, aggregate));
        }
        if (subgroupElect()) s_tile_prefix = prefix.xyz;
    }
    barrier();
    if (lid < WORDS) s_prefix[lid] = combine3(combine3(s_tile_prefix, s_sg[gl_SubgroupID]), lane_excl);
    barrier();

    // Step 5 (compress): run headers, then pixels.
    // One invocation per mask word writes the headers of the runs that begin or end in its
    // word, walking their bits: in a scatter per element, the header branches that nearly
    // every 32 elements of a dense frame take cost the kernel 40% of its time on the H100
    // (run W in BENCHMARKS.md).
    if (lid < WORDS) write_headers(lid, base);
    // Every active element writes its pixel at Equation 1's offset; the last element, the
    // payload size, and the final header when the image ends inactive.
    uint tail = el_total - el_end;
    walk = walk_start(base + lid, WG);
    [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
        uint off = k * WG + lid;
        bool on = depth[k] != BACKGROUND_BITS;
        bool last = base + off + 1u == el_n;
        uint pixel = walk_pixel(walk);
        walk_next(walk);
        if (!on && !last) continue;
        uint w = off >> 5;
        uint bit = 1u << (off & 31u);
        uint starts = s_start[w];
        uvec3 pre = s_prefix[w];
        uint a = pre.y + bitCount(s_mask[w] & (bit - 1u));
        uint r = pre.x + bitCount(starts & (bit | (bit - 1u)));
        if (on) {
            uint pos = ap_offset(a, r);
            ap2[pos >> 1] = uvec2(LATE_COLOUR != 0u ? color[origin + pixel] : colour[k], depth[k]);
            if (last) {
                if (tail > 0u) {
                    ap[pos + 2u] = tail;
                    ap[pos + 3u] = 0u;
                    ap_words[0] = pos + 4u;
                } else {
                    ap_words[0] = pos + 2u;
                }
            }
        } else {
            // The image ends inactive: the last header counts from this run's first pixel.
            uint mine = starts & (bit | (bit - 1u));
            uint first = r <= 1u ? 0u : (mine != 0u ? element_pixel(base + 32u * w + uint(findMSB(mine))) : pre.z - 1u);
            uint pos = ap_offset(a, r - 1u);
            ap[pos] = el_total - first;
            ap[pos + 1u] = 0u;
            ap_words[0] = pos + 2u;
        }
    }
#ifdef AP_TRACE
    barrier();
    if (lid == 0u) {
        TRACE(9u, clock2x32ARB().x);
        TRACE(1u, clockRealtime2x32EXT().x);
    }
#endif
}
