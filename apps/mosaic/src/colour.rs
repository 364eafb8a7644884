//! Perceptual colour for matching (`--metric`): sRGB to CIELAB (D65), and the CIEDE2000
//! colour difference of Sharma, Wu and Dalal (Color Res. Appl. 30, 2005), in f64. The GPU
//! kernel `distance_ciede2000.comp` computes the same formula in f32.

use std::borrow::Cow;

use crate::features::Features;

/// How the cells of a patch and a tile are compared (`--metric`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// The paper's Eq. 1: Euclidean distance of the cells' mean sRGB values (0..255).
    Rgb,
    /// Euclidean distance in CIELAB (D65) of the cells' mean colours (CIE76 Delta E per
    /// cell, the cells combined as the square root of the sum of squares).
    #[default]
    Lab,
    /// CIEDE2000 Delta E of the cells' mean colours in CIELAB, combined as for lab.
    Ciede2000,
}

/// The per-cell difference a distance kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Formula {
    /// Euclidean over every feature value.
    Euclidean,
    /// CIEDE2000 per (L, a, b) cell.
    Ciede2000,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Rgb => "rgb",
            Metric::Lab => "lab",
            Metric::Ciede2000 => "ciede2000",
        }
    }

    pub fn formula(self) -> Formula {
        match self {
            Metric::Rgb | Metric::Lab => Formula::Euclidean,
            Metric::Ciede2000 => Formula::Ciede2000,
        }
    }

    /// Features as this metric compares them: mean sRGB as they are, or each cell's mean
    /// colour in CIELAB.
    pub fn features(self, rgb: &Features) -> Cow<'_, Features> {
        match self {
            Metric::Rgb => Cow::Borrowed(rgb),
            Metric::Lab | Metric::Ciede2000 => Cow::Owned(Features {
                cells: rgb.cells,
                data: rgb
                    .data
                    .chunks_exact(3)
                    .flat_map(|c| srgb_to_lab([c[0] as f64, c[1] as f64, c[2] as f64]).map(|v| v as f32))
                    .collect(),
            }),
        }
    }
}

/// CIELAB (D65 white) of an sRGB colour in 0..255 units.
pub fn srgb_to_lab(rgb: [f64; 3]) -> [f64; 3] {
    let linear = rgb.map(|v| {
        let c = v / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    });
    let [r, g, b] = linear;
    // sRGB primaries to XYZ, and the D65 white point.
    let x = 0.4124564 * r + 0.3575761 * g + 0.1804375 * b;
    let y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
    let z = 0.0193339 * r + 0.1191920 * g + 0.9503041 * b;
    let (xn, yn, zn) = (0.95047, 1.0, 1.08883);
    let delta: f64 = 6.0 / 29.0;
    let f = |t: f64| if t > delta.powi(3) { t.cbrt() } else { t / (3.0 * delta * delta) + 4.0 / 29.0 };
    let (fx, fy, fz) = (f(x / xn), f(y / yn), f(z / zn));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

/// 25^7, the chroma constant of CIEDE2000.
const POW25_7: f64 = 6_103_515_625.0;

/// The CIEDE2000 colour difference of two CIELAB colours (kL = kC = kH = 1).
pub fn ciede2000(lab1: [f64; 3], lab2: [f64; 3]) -> f64 {
    let [l1, a1, b1] = lab1;
    let [l2, a2, b2] = lab2;
    let c_mean = (a1.hypot(b1) + a2.hypot(b2)) / 2.0;
    let g = 0.5 * (1.0 - (c_mean.powi(7) / (c_mean.powi(7) + POW25_7)).sqrt());
    let (ap1, ap2) = ((1.0 + g) * a1, (1.0 + g) * a2);
    let (cp1, cp2) = (ap1.hypot(b1), ap2.hypot(b2));
    let hue = |b: f64, a: f64| {
        if a == 0.0 && b == 0.0 {
            0.0
        } else {
            b.atan2(a).to_degrees().rem_euclid(360.0)
        }
    };
    let (hp1, hp2) = (hue(b1, ap1), hue(b2, ap2));
    let chroma_zero = cp1 * cp2 == 0.0;
    let dl = l2 - l1;
    let dc = cp2 - cp1;
    let dh = if chroma_zero {
        0.0
    } else if (hp2 - hp1).abs() <= 180.0 {
        hp2 - hp1
    } else if hp2 - hp1 > 180.0 {
        hp2 - hp1 - 360.0
    } else {
        hp2 - hp1 + 360.0
    };
    let dhh = 2.0 * (cp1 * cp2).sqrt() * (dh.to_radians() / 2.0).sin();
    let l_mean = (l1 + l2) / 2.0;
    let cp_mean = (cp1 + cp2) / 2.0;
    let hp_mean = if chroma_zero {
        hp1 + hp2
    } else if (hp1 - hp2).abs() <= 180.0 {
        (hp1 + hp2) / 2.0
    } else if hp1 + hp2 < 360.0 {
        (hp1 + hp2 + 360.0) / 2.0
    } else {
        (hp1 + hp2 - 360.0) / 2.0
    };
    let cos = |deg: f64| deg.to_radians().cos();
    let t = 1.0 - 0.17 * cos(hp_mean - 30.0) + 0.24 * cos(2.0 * hp_mean) + 0.32 * cos(3.0 * hp_mean + 6.0)
        - 0.20 * cos(4.0 * hp_mean - 63.0);
    let d_theta = 30.0 * (-((hp_mean - 275.0) / 25.0).powi(2)).exp();
    let rc = 2.0 * (cp_mean.powi(7) / (cp_mean.powi(7) + POW25_7)).sqrt();
    let sl = 1.0 + 0.015 * (l_mean - 50.0).powi(2) / (20.0 + (l_mean - 50.0).powi(2)).sqrt();
    let sc = 1.0 + 0.045 * cp_mean;
    let sh = 1.0 + 0.015 * cp_mean * t;
    let rt = -(2.0 * d_theta).to_radians().sin() * rc;
    let (ql, qc, qh) = (dl / sl, dc / sc, dhh / sh);
    (ql * ql + qc * qc + qh * qh + rt * qc * qh).max(0.0).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 34 test pairs of Sharma, Wu and Dalal (2005), Table 1: L, a, b of each colour and
    /// the published Delta E 2000 (four decimals).
    const SHARMA: [([f64; 3], [f64; 3], f64); 34] = [
        ([50.0, 2.6772, -79.7751], [50.0, 0.0, -82.7485], 2.0425),
        ([50.0, 3.1571, -77.2803], [50.0, 0.0, -82.7485], 2.8615),
        ([50.0, 2.8361, -74.0200], [50.0, 0.0, -82.7485], 3.4412),
        ([50.0, -1.3802, -84.2814], [50.0, 0.0, -82.7485], 1.0000),
        ([50.0, -1.1848, -84.8006], [50.0, 0.0, -82.7485], 1.0000),
        ([50.0, -0.9009, -85.5211], [50.0, 0.0, -82.7485], 1.0000),
        ([50.0, 0.0, 0.0], [50.0, -1.0, 2.0], 2.3669),
        ([50.0, -1.0, 2.0], [50.0, 0.0, 0.0], 2.3669),
        ([50.0, 2.4900, -0.0010], [50.0, -2.4900, 0.0009], 7.1792),
        ([50.0, 2.4900, -0.0010], [50.0, -2.4900, 0.0010], 7.1792),
        ([50.0, 2.4900, -0.0010], [50.0, -2.4900, 0.0011], 7.2195),
        ([50.0, 2.4900, -0.0010], [50.0, -2.4900, 0.0012], 7.2195),
        ([50.0, -0.0010, 2.4900], [50.0, 0.0009, -2.4900], 4.8045),
        ([50.0, -0.0010, 2.4900], [50.0, 0.0010, -2.4900], 4.8045),
        ([50.0, -0.0010, 2.4900], [50.0, 0.0011, -2.4900], 4.7461),
        ([50.0, 2.5, 0.0], [50.0, 0.0, -2.5], 4.3065),
        ([50.0, 2.5, 0.0], [73.0, 25.0, -18.0], 27.1492),
        ([50.0, 2.5, 0.0], [61.0, -5.0, 29.0], 22.8977),
        ([50.0, 2.5, 0.0], [56.0, -27.0, -3.0], 31.9030),
        ([50.0, 2.5, 0.0], [58.0, 24.0, 15.0], 19.4535),
        ([50.0, 2.5, 0.0], [50.0, 3.1736, 0.5854], 1.0000),
        ([50.0, 2.5, 0.0], [50.0, 3.2972, 0.0], 1.0000),
        ([50.0, 2.5, 0.0], [50.0, 1.8634, 0.5757], 1.0000),
        ([50.0, 2.5, 0.0], [50.0, 3.2592, 0.3350], 1.0000),
        ([60.2574, -34.0099, 36.2677], [60.4626, -34.1751, 39.4387], 1.2644),
        ([63.0109, -31.0961, -5.8663], [62.8187, -29.7946, -4.0864], 1.2630),
        ([61.2901, 3.7196, -5.3901], [61.4292, 2.2480, -4.9620], 1.8731),
        ([35.0831, -44.1164, 3.7933], [35.0232, -40.0716, 1.5901], 1.8645),
        ([22.7233, 20.0904, -46.6940], [23.0331, 14.9730, -42.5619], 2.0373),
        ([36.4612, 47.8580, 18.3852], [36.2715, 50.5065, 21.2231], 1.4146),
        ([90.8027, -2.0831, 1.4410], [91.1528, -1.6435, 0.0447], 1.4441),
        ([90.9257, -0.5406, -0.9208], [88.6381, -0.8985, -0.7239], 1.5381),
        ([6.7747, -0.2908, -2.4247], [5.8714, -0.0985, -2.2286], 0.6377),
        ([2.0776, 0.0795, -1.1350], [0.9033, -0.0636, -0.5514], 0.9082),
    ];

    #[test]
    fn ciede2000_matches_sharmas_test_pairs_both_ways() {
        for (k, (a, b, want)) in SHARMA.iter().enumerate() {
            for (x, y) in [(a, b), (b, a)] {
                let got = ciede2000(*x, *y);
                // Published to four decimals: half a unit of the last, and rounding.
                assert!((got - want).abs() <= 6e-5, "pair {}: {got:.6} vs {want}", k + 1);
            }
        }
        assert_eq!(ciede2000([40.0, 10.0, -3.0], [40.0, 10.0, -3.0]), 0.0);
    }

    #[test]
    fn lab_of_reference_colours() {
        let close = |got: [f64; 3], want: [f64; 3]| got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 0.01);
        assert!(close(srgb_to_lab([255.0, 255.0, 255.0]), [100.0, 0.0, 0.0]), "{:?}", srgb_to_lab([255.0; 3]));
        assert!(close(srgb_to_lab([0.0, 0.0, 0.0]), [0.0, 0.0, 0.0]));
        assert!(close(srgb_to_lab([255.0, 0.0, 0.0]), [53.24, 80.09, 67.20]), "{:?}", srgb_to_lab([255.0, 0.0, 0.0]));
        assert!(close(srgb_to_lab([0.0, 0.0, 255.0]), [32.30, 79.19, -107.86]), "{:?}", srgb_to_lab([0.0, 0.0, 255.0]));
        // A gray is neutral at every level.
        for v in [1.0, 10.0, 100.0, 200.0] {
            let [_, a, b] = srgb_to_lab([v; 3]);
            assert!(a.abs() < 1e-3 && b.abs() < 1e-3, "{v}: {a} {b}");
        }
    }
}
