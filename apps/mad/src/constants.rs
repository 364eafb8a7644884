//! Every constant of the metric, each with the place it comes from in the authors' 2011
//! release: `MAD_index.m` (MaxiaoyuHehe/FRIQA) and its C helpers `ical_std.c` and
//! `ical_stat.c` (hanwei0912/SmoothAdversarialExamples, folder `mad/`, commit 7db8784).
//! The GLSL twin of this file is `shaders/mad/mad_constants.glsl`; keep the two in step.

/// `hi_index`: `k = 0.02874`, the scale of the lightness LUT.
pub const LUT_K: f64 = 0.02874;
/// `hi_index`: `LUT = k .* LUT .^ (2.2/3)` (gamma 2.2, then the cube root of lightness).
pub const LUT_EXPONENT: f64 = 2.2 / 3.0;
/// `hi_index` reads `LUT(ref_img + 1)` in uint8 arithmetic, which saturates at 255, so a
/// pixel of 255 reads the entry for 254. Only 8-bit inputs take the LUT path.
pub const LUT_MAX_8BIT: f64 = 254.0;

/// `make_csf(M, N, 32)`: 32 cycles per degree across the image width.
pub const CSF_NFREQ: f64 = 32.0;
/// `make_csf`: `w = 0.7`, the symmetry parameter (about 3 dB down along the diagonals).
pub const CSF_W: f64 = 0.7;
/// `make_csf`: `csf = 2.6*(0.0192+0.114*f).*exp(-(0.114*f).^1.1)`.
pub const CSF_GAIN: f64 = 2.6;
pub const CSF_OFFSET: f64 = 0.0192;
pub const CSF_SLOPE: f64 = 0.114;
pub const CSF_POWER: f64 = 1.1;
/// `make_csf`: `csf(radfreq < 7.8909) = 0.9809` (flat below the peak).
pub const CSF_PEAK_FREQ: f64 = 7.8909;
pub const CSF_PEAK_VALUE: f64 = 0.9809;

/// `hi_index`: `G = 0.5`, the luminance threshold under which no distortion is visible.
pub const LUMINANCE_THRESHOLD: f64 = 0.5;
/// `hi_index`: `C_slope = 1`.
pub const C_SLOPE: f64 = 1.0;
/// `hi_index`: `Ci_thrsh = -5`.
pub const CI_THRESHOLD: f64 = -5.0;
/// `hi_index`: `Cd_thrsh = -5`.
pub const CD_THRESHOLD: f64 = -5.0;
/// `hi_index`: `ms_scale = 1`.
pub const MS_SCALE: f64 = 1.0;
/// `hi_index`: `I = norm(mp2(:),2) ./ sqrt(length(mp2(:))) .* 200` (the June 2010 fix).
pub const DETECTION_SCALE: f64 = 200.0;

/// `ical_std.c` / `ical_stat.c`: 16x16 blocks (`i+16`, divisors 256 and 255).
pub const BLOCK: usize = 16;
/// `ical_std.c` / `ical_stat.c`: blocks start every 4 pixels (`i += 4`) and each block's
/// statistics fill the 4x4 cell at its top-left corner.
pub const STRIDE: usize = 4;
/// `ical_std.c`: the reference's small-window standard deviation uses 8x8 windows (`i+8`,
/// divisors 64 and 63).
pub const SUB_BLOCK: usize = 8;
/// `ical_std.c`: the minimum is taken over the stored 8x8 deviations at offsets 0 and 5
/// (`iB += 5` in `i..i+8`), i.e. over this block and its right, lower and lower-right
/// neighbours on the stride-4 grid, each only while `offset < size - 15`.
pub const MIN_NEIGHBOUR_OFFSET: usize = 5;
/// `MAD_index.m`: `BSIZE = 16`; maps are cropped to `BSIZE+1 : end-BSIZE-1` (1-based),
/// i.e. rows and columns `16 ..= size - 18` (0-based) before the norms.
pub const CROP: usize = 16;
/// Smallest side that leaves a non-empty cropped map (`size - 33 >= 1`).
pub const MIN_SIDE: usize = 2 * CROP + 2;

/// `gaborconvolve`: `nscale = 5`.
pub const GABOR_SCALES: usize = 5;
/// `gaborconvolve`: `norient = 4`.
pub const GABOR_ORIENTATIONS: usize = 4;
/// `gaborconvolve`: `minWaveLength = 3`.
pub const GABOR_MIN_WAVELENGTH: f64 = 3.0;
/// `gaborconvolve`: `mult = 3` (wavelengths 3, 9, 27, 81, 243).
pub const GABOR_MULT: f64 = 3.0;
/// `gaborconvolve`: `sigmaOnf = 0.55`.
pub const GABOR_SIGMA_ON_F: f64 = 0.55;
/// `gaborconvolve`: `dThetaOnSigma = 1.5`.
pub const GABOR_DTHETA_ON_SIGMA: f64 = 1.5;
/// `lo_index`: `s = [0.5 0.75 1 5 6]`, normalised by their sum, one weight per scale.
pub const SCALE_WEIGHTS: [f64; GABOR_SCALES] = [0.5, 0.75, 1.0, 5.0, 6.0];
/// `lo_index`: `abs(std) + 2.*abs(skw) + abs(krt)`.
pub const SKEW_WEIGHT: f64 = 2.0;

/// `MAD_index`: `thresh1 = 2.55`, `thresh2 = 3.35`, `b1 = exp(-thresh1/thresh2)`,
/// `b2 = 1/(log(10)*thresh2)`, `sig = 1 ./ (1 + b1*HI^b2)`.
pub const THRESH1: f64 = 2.55;
pub const THRESH2: f64 = 3.35;

/// MATLAB's `rgb2gray`: the first row of the inverse NTSC (YIQ) transform.
pub const RGB_TO_GRAY: [f64; 3] = [0.298936021293775, 0.587043074451121, 0.114020904255103];

/// The scale weights normalised by their sum (`s = s./sum(s(:))`).
pub fn scale_weight(scale: usize) -> f64 {
    SCALE_WEIGHTS[scale] / SCALE_WEIGHTS.iter().sum::<f64>()
}

/// `beta1 = exp(-thresh1/thresh2)` (about 0.467).
pub fn beta1() -> f64 {
    (-THRESH1 / THRESH2).exp()
}

/// `beta2 = 1/(ln 10 * thresh2)` (about 0.130).
pub fn beta2() -> f64 {
    1.0 / (std::f64::consts::LN_10 * THRESH2)
}

/// The blend weight of the detection score: `alpha = 1 / (1 + beta1 * d_detect^beta2)`.
pub fn alpha(detection: f64) -> f64 {
    1.0 / (1.0 + beta1() * detection.powf(beta2()))
}

/// `MAD = d_detect^alpha * d_appear^(1-alpha)`. With `d_detect = 0`, alpha is 1 and the
/// score is 0 (MATLAB's `0^0` is 1).
pub fn combine(detection: f64, appearance: f64) -> (f64, f64) {
    let a = alpha(detection);
    (detection.powf(a) * appearance.powf(1.0 - a), a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blend_constants_match_the_paper() {
        // Larson & Chandler 2010 quote beta1 = 0.467 and beta2 = 0.130.
        assert!((beta1() - 0.467).abs() < 5e-4);
        assert!((beta2() - 0.130).abs() < 5e-4);
        assert_eq!(combine(0.0, 0.0).0, 0.0);
    }
}
