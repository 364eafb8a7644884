#version 460
// The log-Gabor bands [band_first, band_first + band_count) of every image of the chunk in
// one dispatch: bands[(p * band_count + b) * 2 + i] = spectra[2p + i] * log-Gabor(band_first + b),
// the filter evaluated on the fly once per bin and band (one invocation per bin, looping over
// the group's bands and the chunk's images), so one batched inverse FFT takes them all.
// A tile's window (tiled, one pair) adds the filters' seams at the spectrum's edge from the
// spectra of its ramped lines (apps/mad/src/seams.rs, whose `factors` this evaluates):
// band = F A + F_P B + F_Q C with A = G - Jp s - Kp t - c s t - c S_n T_n, B = Jp + c T_n,
// C = Kp + c S_n.
#include "common.glsl"
#include "mad_common.glsl"

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Spectra { vec2 spectra[]; };
layout(set = 0, binding = 1) writeonly buffer Bands { vec2 bands[]; };
// Tiled only (else any buffer): the window spectra of P and Q, [P_ref, P_dst, Q_ref, Q_dst],
// and Seams::table: Jp (bands x height), Kp (bands x width), c (bands), S_n (width, complex),
// T_n (height, complex).
layout(set = 0, binding = 2) readonly buffer Lines { vec2 lines[]; };
layout(set = 0, binding = 3) readonly buffer SeamTable { float seams[]; };

const uint BANDS = GABOR_SCALES * GABOR_ORIENTATIONS;

vec2 cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

void main() {
    uint n = pixels();
    uint gid = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (gid >= n) return;
    uint kr = gid / width;
    uint kc = gid % width;
    // The ramps and the truncated kernels' spectra at this bin, read once (tiled only: a
    // whole image's filter needs none of them).
    uint kp_at = BANDS * height;
    uint c_at = kp_at + BANDS * width;
    float s = 0.0, t = 0.0;
    vec2 sn = vec2(0.0), tn = vec2(0.0);
    if (tiled != 0u) {
        s = 0.5 * (gabor_position(kc, width, full_width) + 1.0);
        t = 0.5 * (gabor_position(kr, height, full_height) + 1.0);
        uint sn_at = c_at + BANDS;
        uint tn_at = sn_at + 2u * width;
        sn = vec2(seams[sn_at + 2u * kc], seams[sn_at + 2u * kc + 1u]);
        tn = vec2(seams[tn_at + 2u * kr], seams[tn_at + 2u * kr + 1u]);
    }
    for (uint b = 0u; b < band_count; b++) {
        uint band = band_first + b;
        float f = log_gabor(kr, kc, band / GABOR_ORIENTATIONS, band % GABOR_ORIENTATIONS);
        if (tiled != 0u) {
            float jp = seams[band * height + kr];
            float kp = seams[kp_at + band * width + kc];
            float c = seams[c_at + band];
            vec2 a = vec2(f - jp * s - kp * t - c * s * t, 0.0) - c * cmul(sn, tn);
            vec2 bp = vec2(jp, 0.0) + c * tn;
            vec2 bq = vec2(kp, 0.0) + c * sn;
            uint out_image = 2u * b;
            for (uint i = 0u; i < 2u; i++) {
                bands[(out_image + i) * n + gid] =
                    cmul(spectra[i * n + gid], a) + cmul(lines[i * n + gid], bp) + cmul(lines[(2u + i) * n + gid], bq);
            }
            continue;
        }
        for (uint p = 0u; p < pairs; p++) {
            uint out_image = 2u * (p * band_count + b);
            bands[out_image * n + gid] = spectra[2u * p * n + gid] * f;
            bands[(out_image + 1u) * n + gid] = spectra[(2u * p + 1u) * n + gid] * f;
        }
    }
}
