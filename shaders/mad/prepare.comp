#version 460
// First pass of a chunk of pairs: from the uploaded gray values (ref then dst per pair) build
// the complex inputs of both stages and the squared difference of the local MSE.
// - light[2p] = lightness of ref, light[2p+1] = lightness(dst) - lightness(ref): the CSF is
//   linear, so filtering the difference directly keeps f32 precision where dst ~ ref.
// - spec[2p], spec[2p+1] = gray minus its image mean: the log-Gabor filters are zero at DC,
//   so removing the mean changes nothing but the rounding of the forward FFT.
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Gray { float gray[]; };
// Per pair: [eight_bit (0/1), mean of ref, mean of dst, unused].
layout(set = 0, binding = 1) readonly buffer Info { vec4 info[]; };
layout(set = 0, binding = 2) writeonly buffer Light { vec2 light[]; };
layout(set = 0, binding = 3) writeonly buffer Spec { vec2 spec[]; };
layout(set = 0, binding = 4) writeonly buffer SqDiff { float sqdiff[]; };

float lightness(float v, bool eight_bit) {
    return LUT_K * pow(eight_bit ? min(v, LUT_MAX_8BIT) : v, LUT_EXPONENT);
}

void main() {
    uint n = pixels();
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= pairs * n) return;
    uint p = gid / n;
    uint i = gid - p * n;
    vec4 meta = info[p];
    bool eight_bit = meta.x > 0.5;
    float r = gray[2u * p * n + i];
    float d = gray[(2u * p + 1u) * n + i];
    float lr = lightness(r, eight_bit);
    light[2u * p * n + i] = vec2(lr, 0.0);
    light[(2u * p + 1u) * n + i] = vec2(lightness(d, eight_bit) - lr, 0.0);
    spec[2u * p * n + i] = vec2(r - meta.y, 0.0);
    spec[(2u * p + 1u) * n + i] = vec2(d - meta.z, 0.0);
    sqdiff[p * n + i] = (r - d) * (r - d);
}
