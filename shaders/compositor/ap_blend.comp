#version 460
// Compositing of Active Pixel encoded images on the GPU, reading pixels straight out of the
// encoded payloads (no decoded copies of the inputs). The host describes each input's active
// runs as segments (first pixel, pixel count, word offset of its first pixel in `payload`),
// which it collects anyway while validating the payloads. Each invocation finds, per input,
// the segment holding its pixel by binary search and combines the active ones in input order:
// op 0 = z-buffer (smallest depth, ties to the earlier input), op 1 = premultiplied "over"
// front to back with the same integer rounding as the CPU operator (ops.rs). The result is a
// raw colour + depth frame that the GPU encoder then encodes.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Payload { uint payload[]; };
layout(set = 0, binding = 1) readonly buffer Segments { uint segments[]; };
layout(set = 0, binding = 2) readonly buffer Inputs { uint inputs[]; };
layout(set = 0, binding = 3) writeonly buffer Color { uint color[]; };
layout(set = 0, binding = 4) writeonly buffer Depth { float depth[]; };
layout(push_constant) uniform Push { uint n; uint k; uint op; };

uint div255(uint x) { return (x + 127u) / 255u; }

uint over_rgba(uint front, uint back) {
    uint transparency = 255u - (front >> 24);
    uint result = 0u;
    for (uint shift = 0u; shift < 32u; shift += 8u) {
        uint c = ((front >> shift) & 255u) + div255(((back >> shift) & 255u) * transparency);
        result |= min(c, 255u) << shift;
    }
    return result;
}

void main() {
    uint p = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (p >= n) return;
    bool any_active = false;
    uint acc_color = 0u;
    float acc_depth = 1.0;
    for (uint j = 0u; j < k; j++) {
        uint first = inputs[2u * j];
        uint count = inputs[2u * j + 1u];
        // Last segment starting at or before p.
        uint lo = 0u, hi = count;
        while (lo < hi) {
            uint mid = (lo + hi) / 2u;
            if (segments[3u * (first + mid)] <= p) lo = mid + 1u; else hi = mid;
        }
        if (lo == 0u) continue;
        uint s = first + lo - 1u;
        uint start = segments[3u * s];
        if (p - start >= segments[3u * s + 1u]) continue;
        uint word = segments[3u * s + 2u] + 2u * (p - start);
        uint c = payload[word];
        float d = uintBitsToFloat(payload[word + 1u]);
        if (!any_active) {
            acc_color = c;
            acc_depth = d;
            any_active = true;
        } else if (op == 0u) {
            if (d < acc_depth) {
                acc_color = c;
                acc_depth = d;
            }
        } else {
            acc_color = over_rgba(acc_color, c);
        }
    }
    color[p] = acc_color;
    depth[p] = acc_depth;
}
