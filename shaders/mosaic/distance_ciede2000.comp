#version 460
// D[i][j] = sqrt(sum over cells of DeltaE00(patch cell, tile cell)^2): the CIEDE2000 colour
// difference (Sharma, Wu and Dalal 2005; kL = kC = kH = 1) of each of the u x v cells, whose
// features are (L, a, b) triples. The CPU twin is mosaic::colour::ciede2000, in f64.
// One invocation per entry, j fastest; one dispatch computes the m rows from row0 on.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Patches { float patches[]; };
layout(set = 0, binding = 1) readonly buffer Tiles { float tiles[]; };
layout(set = 0, binding = 2) writeonly buffer Distances { float d[]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
    uint width;
    uint row0;
};

const float POW25_7 = 6103515625.0;
const float DEG = 57.29577951308232;

// Hue angle in degrees, in [0, 360); 0 for a neutral colour.
float hue(float b, float a) {
    if (a == 0.0 && b == 0.0) return 0.0;
    float h = atan(b, a) * DEG;
    return h < 0.0 ? h + 360.0 : h;
}

float pow7(float x) {
    float x2 = x * x;
    return x2 * x2 * x2 * x;
}

// DeltaE00 squared.
float delta_e00_squared(vec3 p, vec3 q) {
    float c_mean = 0.5 * (length(p.yz) + length(q.yz));
    float c7 = pow7(c_mean);
    float g = 0.5 * (1.0 - sqrt(c7 / (c7 + POW25_7)));
    float ap1 = (1.0 + g) * p.y;
    float ap2 = (1.0 + g) * q.y;
    float cp1 = length(vec2(ap1, p.z));
    float cp2 = length(vec2(ap2, q.z));
    float hp1 = hue(p.z, ap1);
    float hp2 = hue(q.z, ap2);
    bool chroma_zero = cp1 * cp2 == 0.0;
    float diff = hp2 - hp1;
    float dh = chroma_zero ? 0.0 : (abs(diff) <= 180.0 ? diff : (diff > 180.0 ? diff - 360.0 : diff + 360.0));
    float dhh = 2.0 * sqrt(cp1 * cp2) * sin(0.5 * dh / DEG);
    float l_mean = 0.5 * (p.x + q.x);
    float cp_mean = 0.5 * (cp1 + cp2);
    float sum = hp1 + hp2;
    float hp_mean = chroma_zero ? sum
        : (abs(hp1 - hp2) <= 180.0 ? 0.5 * sum : (sum < 360.0 ? 0.5 * (sum + 360.0) : 0.5 * (sum - 360.0)));
    float t = 1.0 - 0.17 * cos((hp_mean - 30.0) / DEG) + 0.24 * cos(2.0 * hp_mean / DEG)
        + 0.32 * cos((3.0 * hp_mean + 6.0) / DEG) - 0.20 * cos((4.0 * hp_mean - 63.0) / DEG);
    float x = (hp_mean - 275.0) / 25.0;
    float d_theta = 30.0 * exp(-x * x);
    float cp7 = pow7(cp_mean);
    float rc = 2.0 * sqrt(cp7 / (cp7 + POW25_7));
    float l50 = (l_mean - 50.0) * (l_mean - 50.0);
    float sl = 1.0 + 0.015 * l50 / sqrt(20.0 + l50);
    float sc = 1.0 + 0.045 * cp_mean;
    float sh = 1.0 + 0.015 * cp_mean * t;
    float rt = -sin(2.0 * d_theta / DEG) * rc;
    float ql = (q.x - p.x) / sl;
    float qc = (cp2 - cp1) / sc;
    float qh = dhh / sh;
    return max(ql * ql + qc * qc + qh * qh + rt * qc * qh, 0.0);
}

void main() {
    uint index = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= m * n) return;
    uint i = index / n;
    uint j = index - i * n;
    uint pi = (row0 + i) * width;
    uint tj = j * width;
    float s = 0.0;
    for (uint k = 0; k + 2 < width; k += 3) {
        vec3 p = vec3(patches[pi + k], patches[pi + k + 1], patches[pi + k + 2]);
        vec3 q = vec3(tiles[tj + k], tiles[tj + k + 1], tiles[tj + k + 2]);
        s += delta_e00_squared(p, q);
    }
    d[index] = sqrt(s);
}
