// Active Pixel encoding in one pass: the five steps of the paper's Algorithm 1 (pixel
// properties, run ids by an inclusive scan of run starts, run lengths by reduce-by-key,
// active indices by an exclusive scan of activity, and the scatter to the Equation 1
// offsets) fused into one single-pass scan with decoupled look-back, so every pixel's depth
// is read once, every active pixel's colour once, and only the payload is written.
//
// The scan runs over the ROI elements (ap_elements.glsl) with the monoid of ap_scan.glsl
// (run starts, active elements, pixel of the last run start). From its prefix every element
// knows its run id r, its active index a and where its run began, which is all the scatter
// needs (ap_payload.glsl):
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

// The shared arrays have fixed sizes, those of the largest tile (16384 elements) and the
// most subgroups (1024 invocations in subgroups of 4) the host lets through, not sizes
// computed from the specialization constants: with those, some shapes (512 x 8, and
// 1024 x 16 in an earlier build) encoded garbage on the H100 in every frame while right on
// lavapipe; with fixed sizes all 36 configurations of `composite sweep` were right.
#define AP_MAX_WORDS 512u
#define AP_MAX_SUBGROUPS 256u
#include "ap_tile.glsl"
#include "ap_payload.glsl"
shared uvec3 s_tile_prefix;

void main() {
#ifdef AP_TRACE
    uint real_start = clockRealtime2x32EXT().x;
    uint c_start = clock2x32ARB().x;
#endif
    elements_init(width, height, box_source != 0u ? uvec4(roi[0], roi[1], ~roi[2], ~roi[3]) : box_push);
    uint tiles = max(ceil_div(el_n, TILE), 1u);
    // Surplus workgroups (those of a grid over x and y, or of a dispatch for the whole image)
    // leave before taking a ticket, so tickets 0 .. tiles - 1 all go to workgroups that run.
    if (linear_group_id() >= tiles) return;
    uint tile = lb_take_tile();
#ifdef AP_TRACE
    uint c_ticket = clock2x32ARB().x;
#endif
    uint lid = gl_LocalInvocationIndex;
    if (el_n == 0u) {
        if (lid == 0u) write_empty();
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
    mask_clear();
    [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) mask_store(k, depth[k] != BACKGROUND_BITS);
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
    uvec3 word_sum = lid < WORDS ? word_runs(lid, base) : uvec3(0u);

    // Steps 2-4 (the scans): across the words of the tile, then across tiles by look-back.
    uvec3 carry;
    uvec3 lane_excl = scan_subgroups(word_sum, carry);
    if (gl_SubgroupID == 0u) {
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

    // Step 5 (compress): run headers per mask word, then pixels.
    if (lid < WORDS) write_headers(lid, base);
    walk = walk_start(base + lid, WG);
    [[unroll]] for (uint k = 0u; k < PER_INVOCATION; k++) {
        uint off = k * WG + lid;
        bool on = depth[k] != BACKGROUND_BITS;
        uint pixel = walk_pixel(walk);
        walk_next(walk);
        if (on || base + off + 1u == el_n) {
            write_element(base, off, on, uvec2(LATE_COLOUR != 0u ? color[origin + pixel] : colour[k], depth[k]));
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
