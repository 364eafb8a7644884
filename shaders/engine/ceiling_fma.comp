#version 460
// FP32 FMA throughput probe: 8 independent fma chains per invocation (enough to hide the
// pipeline latency), `iterations` rounds; the result is written so nothing is optimised away.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) writeonly buffer Out { float result[]; };
layout(push_constant) uniform Push { uint iterations; float seed; };

void main() {
    uint id = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    float x = seed * float(id & 7u);
    vec4 a = vec4(x, x + 1.0, x + 2.0, x + 3.0);
    vec4 b = vec4(x + 4.0, x + 5.0, x + 6.0, x + 7.0);
    const vec4 m = vec4(0.9999);
    const vec4 c = vec4(0.0001);
    for (uint i = 0u; i < iterations; ++i) {
        a = fma(a, m, c); b = fma(b, m, c);
        a = fma(a, m, c); b = fma(b, m, c);
        a = fma(a, m, c); b = fma(b, m, c);
        a = fma(a, m, c); b = fma(b, m, c);
    }
    result[id] = dot(a + b, vec4(1.0));
}
