// Shared by every MAD kernel: the constants of the release (twin of apps/mad/src/constants.rs,
// each with its source there), the push constants, the block geometry and the two
// frequency-domain filters evaluated per FFT bin (twin of apps/mad/src/filters.rs).
#ifndef MAD_COMMON_GLSL
#define MAD_COMMON_GLSL

// MAD_index.m hi_index: k = 0.02874, LUT = k .* LUT .^ (2.2/3); uint8 LUT(v+1) saturates at 254.
const float LUT_K = 0.02874;
const float LUT_EXPONENT = 2.2 / 3.0;
const float LUT_MAX_8BIT = 254.0;
// make_csf(M, N, 32): nfreq 32, w = 0.7, 2.6*(0.0192+0.114 f) exp(-(0.114 f)^1.1), 0.9809 below 7.8909.
const float CSF_NFREQ = 32.0;
const float CSF_W = 0.7;
const float CSF_GAIN = 2.6;
const float CSF_OFFSET = 0.0192;
const float CSF_SLOPE = 0.114;
const float CSF_POWER = 1.1;
const float CSF_PEAK_FREQ = 7.8909;
const float CSF_PEAK_VALUE = 0.9809;
// hi_index: G = 0.5, C_slope = 1, Ci_thrsh = -5, Cd_thrsh = -5, ms_scale = 1.
const float LUMINANCE_THRESHOLD = 0.5;
const float C_SLOPE = 1.0;
const float CI_THRESHOLD = -5.0;
const float CD_THRESHOLD = -5.0;
const float MS_SCALE = 1.0;
// ical_std.c / ical_stat.c: 16x16 blocks every 4 pixels, 8x8 windows, the minimum read at +5.
const uint BLOCK = 16u;
const uint STRIDE = 4u;
const uint SUB_BLOCK = 8u;
const uint MIN_NEIGHBOUR_OFFSET = 5u;
// MAD_index.m: BSIZE = 16, crop BSIZE+1 : end-BSIZE-1.
const uint CROP = 16u;
// gaborconvolve: nscale 5, norient 4, minWaveLength 3, mult 3, sigmaOnf 0.55, dThetaOnSigma 1.5.
const uint GABOR_SCALES = 5u;
const uint GABOR_ORIENTATIONS = 4u;
const float GABOR_MIN_WAVELENGTH = 3.0;
const float GABOR_MULT = 3.0;
const float GABOR_SIGMA_ON_F = 0.55;
const float GABOR_DTHETA_ON_SIGMA = 1.5;
// lo_index: s = [0.5 0.75 1 5 6] / sum, skewness weighted by 2.
const float SCALE_WEIGHTS[5] = float[5](0.5 / 13.25, 0.75 / 13.25, 1.0 / 13.25, 5.0 / 13.25, 6.0 / 13.25);
const float SKEW_WEIGHT = 2.0;
const float PI = 3.14159265358979;

layout(push_constant) uniform Push {
    uint width;
    uint height;
    uint pairs;
    uint blocks_x;
    uint blocks_y;
    // Appearance: the group of log-Gabor bands one dispatch runs, band = scale * 4 + orientation.
    uint band_first;
    uint band_count;
    uint accumulate;   // appearance: add to the cells (0: overwrite, the first group)
    uint sum_cells;    // appearance: write the crop-weighted sums of squared cells (the last group)
    // Where the images (width x height) lie in the pair they score (tiled.rs): the whole
    // image's size, which the filters, the neighbour rule, the crop and the local MSE's mirror
    // follow; the image pixel of the first pixel (origin + i wraps around the image); whether
    // the filters sample a tile's bins; and the blocks [cells_x0, cells_x1) x [cells_y0,
    // cells_y1) whose statistics and sums are kept. For a whole image: its own size, origin 0,
    // every block.
    uint full_width;
    uint full_height;
    int origin_x;
    int origin_y;
    uint tiled;
    uint cells_x0;
    uint cells_y0;
    uint cells_x1;
    uint cells_y1;
};

uint pixels() { return width * height; }
uint blocks() { return blocks_x * blocks_y; }
bool in_cells(uint bx, uint by) { return bx >= cells_x0 && bx < cells_x1 && by >= cells_y0 && by < cells_y1; }

// Pixels of [start, start + STRIDE) inside the crop [CROP, size - CROP - 1) of the whole
// image (start in its pixels): how many times a cell counts in the cropped map's norm.
uint crop_overlap(int start, uint size) {
    int lo = max(start, int(CROP));
    int hi = min(start + int(STRIDE), int(size - CROP) - 1);
    return hi > lo ? uint(hi - lo) : 0u;
}

// ical_std.c reads the neighbour's stored 8x8 deviation at i+5 only while i+5 < size-15, i
// the block's column in the whole image.
bool right_neighbour(uint bx) { return int(STRIDE * bx) + origin_x + int(MIN_NEIGHBOUR_OFFSET + BLOCK) - 1 < int(full_width); }
bool lower_neighbour(uint by) { return int(STRIDE * by) + origin_y + int(MIN_NEIGHBOUR_OFFSET + BLOCK) - 1 < int(full_height); }

// Bin k of a length-t spectrum in bins of the whole length-n image's spectrum, centred
// (fftshift's order): the same frequency in cycles per pixel. Exact where t == n.
float whole_bins(uint k, uint t, uint n) { return float(n) * float(int((k + t / 2u) % t) - int(t / 2u)) / float(t); }

// make_csf's meshgrid position of bin k: see filters.rs::csf_position (half a bin up for even n).
float csf_position(uint k, uint t, uint n) { return whole_bins(k, t, n) + (n % 2u == 0u ? 0.5 : 0.0); }

// make_csf(M, N, 32)' at bin (kr, kc): see filters.rs::csf and csf_at.
float csf(uint kr, uint kc) {
    float scale_f = 2.0 * CSF_NFREQ / float(full_width);
    float u = csf_position(kr, height, full_height) * scale_f;
    float v = csf_position(kc, width, full_width) * scale_f;
    float radius = length(vec2(u, v));
    // atan(0, 0) is undefined in GLSL; a zero radius is below the peak at any angle.
    if (radius == 0.0) return CSF_PEAK_VALUE;
    float angle = atan(v, u);
    float s = (1.0 - CSF_W) * 0.5 * cos(4.0 * angle) + (1.0 + CSF_W) * 0.5;
    float f = radius / s;
    if (f < CSF_PEAK_FREQ) return CSF_PEAK_VALUE;
    return CSF_GAIN * (CSF_OFFSET + CSF_SLOPE * f) * exp(-pow(CSF_SLOPE * f, CSF_POWER));
}

// gaborconvolve's grid position of bin k (normalised frequency in -1..1): see
// filters.rs::log_gabor_position (half a bin up for odd n).
float gabor_position(uint k, uint t, uint n) {
    float x = 2.0 * whole_bins(k, t, n) / float(n) + (n % 2u == 1u ? 1.0 / float(n) : 0.0);
    return x >= 1.0 ? x - 2.0 : x;
}

// gaborconvolve's log-Gabor filter at bin (kr, kc): see filters.rs::log_gabor and
// log_gabor_at. The release zeroes a whole image's DC bin; a tile keeps the filter's value
// there (its input is free of the whole image's mean).
float log_gabor(uint kr, uint kc, uint s, uint o) {
    if (tiled == 0u && kr == 0u && kc == 0u) return 0.0;
    float y = gabor_position(kr, height, full_height);
    float x = gabor_position(kc, width, full_width);
    float radius = length(vec2(x, y));
    // log(0) is undefined in GLSL: the radial factor is exp(-inf) = 0 there.
    if (radius == 0.0) return 0.0;
    float wavelength = GABOR_MIN_WAVELENGTH * pow(GABOR_MULT, float(s));
    float rfo = (1.0 / wavelength) / 0.5;
    float log_sigma = log(GABOR_SIGMA_ON_F);
    float lr = log(radius) - log(rfo);
    float radial = exp(lr * lr / -(2.0 * log_sigma * log_sigma));
    float theta = atan(-y, x);
    float angle = float(o) * PI / float(GABOR_ORIENTATIONS);
    float ds = sin(theta) * cos(angle) - cos(theta) * sin(angle);
    float dc = cos(theta) * cos(angle) + sin(theta) * sin(angle);
    float dtheta = abs(atan(ds, dc));
    float theta_sigma = PI / float(GABOR_ORIENTATIONS) / GABOR_DTHETA_ON_SIGMA;
    return radial * exp(-dtheta * dtheta / (2.0 * theta_sigma * theta_sigma));
}

// The visibility mask of hi_index for one block (see cpu.rs::visibility): zero where the
// reference mean is under G, where MATLAB's real-part comparisons select no branch.
float visibility(float std_error, float mean, float std_min) {
    if (mean < LUMINANCE_THRESHOLD) return 0.0;
    // log(0) is undefined in GLSL: spell out the -inf cases. Ci_dst = -inf selects nothing;
    // Ci_ref = -inf takes the constant-threshold branch.
    if (std_error <= 0.0) return 0.0;
    float ci_dst = log(std_error / mean);
    if (std_min <= 0.0) return ci_dst > CD_THRESHOLD ? (ci_dst - CD_THRESHOLD) / MS_SCALE : 0.0;
    float ci_ref = log(std_min / mean);
    float slope_threshold = C_SLOPE * (ci_ref - CI_THRESHOLD) + CD_THRESHOLD;
    if (ci_ref > CI_THRESHOLD && ci_dst > slope_threshold) return (ci_dst - slope_threshold) / MS_SCALE;
    if (ci_ref <= CI_THRESHOLD && ci_dst > CD_THRESHOLD) return (ci_dst - CD_THRESHOLD) / MS_SCALE;
    return 0.0;
}

#endif
