#version 460
// Compositing of Active Pixel encoded images on the GPU, reading pixels straight out of the
// encoded payloads (no decoded copies of the inputs; ap_segments.glsl finds a pixel). Each
// invocation combines the active ones of its pixel in input order:
// op 0 = z-buffer (smallest depth, ties to the earlier input), op 1 = premultiplied "over"
// front to back with the same integer rounding as its CPU twin (cpu/blend.rs). The result
// is a raw colour + depth frame that the GPU encoder then encodes.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Payload { uint payload[]; };
layout(set = 0, binding = 1) readonly buffer Segments { uint segments[]; };
layout(set = 0, binding = 2) readonly buffer Inputs { uint inputs[]; };
layout(set = 0, binding = 3) writeonly buffer Color { uint color[]; };
layout(set = 0, binding = 4) writeonly buffer Depth { float depth[]; };
layout(push_constant) uniform Push { uint n; uint k; uint op; };
#include "ap_segments.glsl"

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
        uint word;
        if (!segment_pixel(j, p, word)) continue;
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
