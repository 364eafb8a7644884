#version 460
// SoftAssign column pass: adds the row pass's per-block column sums and the outlier row's
// entry O[j] = exp(clamp(g[j] / t)) (an unused tile costs 0), then normalises the column:
// g[j] -= t ln(colsum + O[j]).
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Partials { float partials[]; };
layout(set = 0, binding = 1) buffer ColPotentials { float g[]; };
layout(push_constant) uniform Push {
    uint n;
    uint blocks;
    float t;
    float clamp_;
};

void main() {
    uint j = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (j >= n) return;
    float s = 0.0;
    for (uint b = 0; b < blocks; b++) s += partials[b * n + j];
    float gj = g[j];
    s += exp(clamp(gj / t, -clamp_, clamp_));
    g[j] = gj - t * log(s);
}
