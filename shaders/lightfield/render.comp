#version 460
// Light-field rendering from decoded views (lightfield view / render): each output pixel
// blends the views within `aperture` of the virtual viewpoint (pu, pv) with tent weights
// (aperture 1: bilinear interpolation of the four nearest views), each view sampled
// bilinearly at the pixel shifted by `focus` pixels per view of distance (shift-and-add
// refocusing on the plane of that disparity). The CPU twin is lightfield::render::render_cpu;
// the operation order here matches it.
layout(local_size_x = 16, local_size_y = 16) in;

layout(set = 0, binding = 0) readonly buffer Views { float views[]; };  // (U, V, H, W, 3)
layout(set = 0, binding = 1) writeonly buffer Out { uint pixels[]; };  // out_w x out_h packed
layout(push_constant) uniform Push {
    uint n_u;
    uint n_v;
    uint height;
    uint width;
    uint out_w;
    uint out_h;
    uint bgra;
    uint pad;
    float pu;
    float pv;
    float focus;
    float aperture;
    float scale_x;
    float scale_y;
};

vec3 texel(uint view, int x, int y) {
    uint i = ((view * height + uint(y)) * width + uint(x)) * 3u;
    return vec3(views[i], views[i + 1u], views[i + 2u]);
}

// Bilinear sample of view `view` at (sx, sy), clamped to the edge.
vec3 sample_view(uint view, float sx, float sy) {
    sx = clamp(sx, 0.0, float(width - 1u));
    sy = clamp(sy, 0.0, float(height - 1u));
    int x0 = int(floor(sx));
    int y0 = int(floor(sy));
    int x1 = min(x0 + 1, int(width) - 1);
    int y1 = min(y0 + 1, int(height) - 1);
    float fx = sx - float(x0);
    float fy = sy - float(y0);
    vec3 top = (1.0 - fx) * texel(view, x0, y0) + fx * texel(view, x1, y0);
    vec3 bottom = (1.0 - fx) * texel(view, x0, y1) + fx * texel(view, x1, y1);
    return (1.0 - fy) * top + fy * bottom;
}

uint to_u8(float v) {
    return uint(clamp(v, 0.0, 1.0) * 255.0 + 0.5);
}

void main() {
    uint ox = gl_GlobalInvocationID.x;
    uint oy = gl_GlobalInvocationID.y;
    if (ox >= out_w || oy >= out_h) return;
    float x = (float(ox) + 0.5) * scale_x - 0.5;
    float y = (float(oy) + 0.5) * scale_y - 0.5;
    int i0 = max(0, int(ceil(pu - aperture)));
    int i1 = min(int(n_u) - 1, int(floor(pu + aperture)));
    int j0 = max(0, int(ceil(pv - aperture)));
    int j1 = min(int(n_v) - 1, int(floor(pv + aperture)));
    vec3 acc = vec3(0.0);
    float wsum = 0.0;
    for (int i = i0; i <= i1; i++) {
        float wi = 1.0 - abs(float(i) - pu) / aperture;
        if (wi <= 0.0) continue;
        float sy = y + focus * (float(i) - pu);
        for (int j = j0; j <= j1; j++) {
            float wj = 1.0 - abs(float(j) - pv) / aperture;
            if (wj <= 0.0) continue;
            float w = wi * wj;
            float sx = x + focus * (float(j) - pv);
            acc += w * sample_view(uint(i) * n_v + uint(j), sx, sy);
            wsum += w;
        }
    }
    vec3 c = acc / wsum;
    uint r = to_u8(c.r);
    uint g = to_u8(c.g);
    uint b = to_u8(c.b);
    pixels[oy * out_w + ox] = bgra != 0u ? (b | (g << 8) | (r << 16) | (255u << 24))
                                         : (r | (g << 8) | (b << 16) | (255u << 24));
}
