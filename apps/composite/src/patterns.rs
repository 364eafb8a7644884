//! Test images: the acceptance patterns (empty, full, checkerboard, single pixel) and random
//! frames with runs of every length, at awkward sizes. The GPU encoder also checks itself on
//! two of them when it is created.

use rand::{Rng, SeedableRng};

#[cfg(test)]
use crate::ap::BACKGROUND_DEPTH;
use crate::frame::Frame;

/// Sizes tests use: small, odd, not multiples of any workgroup size.
#[cfg(test)]
pub const SIZES: [(u32, u32); 4] = [(1, 1), (7, 3), (96, 64), (333, 211)];

/// Every named pattern ([`all`]) at every size of [`SIZES`], from one seed.
#[cfg(test)]
pub fn at_every_size(seed: u64) -> impl Iterator<Item = (String, Frame)> {
    SIZES.into_iter().flat_map(move |(w, h)| all(w, h, seed))
}

fn random_pixel(rng: &mut impl Rng) -> (u32, f32) {
    (rng.gen(), rng.gen_range(0.0f32..0.999))
}

/// Every named pattern at one size, with its name.
pub fn all(width: u32, height: u32, seed: u64) -> Vec<(String, Frame)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = (width * height) as usize;
    let mut out = vec![("empty".to_string(), Frame::empty(width, height))];
    let mut fill = |name: &str, active: &dyn Fn(usize) -> bool, rng: &mut rand_chacha::ChaCha8Rng| {
        let mut f = Frame::empty(width, height);
        for i in 0..n {
            if active(i) {
                (f.color[i], f.depth[i]) = random_pixel(rng);
            }
        }
        out.push((name.to_string(), f));
    };
    let w = width as usize;
    fill("full", &|_| true, &mut rng);
    fill("checkerboard", &|i| (i % w + i / w).is_multiple_of(2), &mut rng);
    fill("single pixel", &|i| i == n / 2, &mut rng);
    fill("last pixel", &|i| i == n - 1, &mut rng);
    // A narrow box whose rows end and start active (runs must break at the box edges), and
    // a two-pixel-wide, full-height box holding only two active pixels.
    let h = height as usize;
    fill("band", &|i| (w / 3..=w / 3 + w / 5).contains(&(i % w)) && (i / w) % 5 != 2, &mut rng);
    fill("two pixels", &|i| i == w / 2 || i == (h - 1) * w + (w / 2).saturating_sub(1), &mut rng);
    // Random runs of geometric lengths (short and long ones).
    let mut mask = vec![false; n];
    let mut i = 0usize;
    let mut on = rng.gen_bool(0.5);
    while i < n {
        let len = 1 + (rng.gen_range(0.0f64..1.0).powi(3) * 200.0) as usize;
        for m in mask.iter_mut().skip(i).take(len) {
            *m = on;
        }
        i += len;
        on = !on;
    }
    fill("random runs", &|i| mask[i], &mut rng);
    out
}

/// RGBA32F colour for `frame`: four finite f32 a pixel (their bits), random over every
/// exponent and both signs, whatever the pixel's depth (encoders copy only active pixels').
pub fn widen(frame: &Frame, seed: u64) -> Vec<u32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x0057_4549_4445);
    (0..4 * frame.pixels())
        .map(|_| loop {
            let bits: u32 = rng.gen();
            if f32::from_bits(bits).is_finite() && bits != 0 {
                break bits;
            }
        })
        .collect()
}

/// Pairs of patterns at one size (each of seed `seed` with one of seed `seed + 1`, named
/// "front + back"), the back one given the front's depth at every `every`-th pixel where
/// both are active, so that compositing them exercises the tie rule.
#[cfg(test)]
pub fn tied_pairs(width: u32, height: u32, seed: u64, every: usize) -> Vec<(String, Frame, Frame)> {
    let backs = all(width, height, seed + 1);
    let pairs = all(width, height, seed).into_iter().zip(backs.into_iter().rev());
    pairs
        .map(|((nf, front), (nb, mut back))| {
            tie(&front, &mut back, every);
            (format!("{nf} + {nb}"), front, back)
        })
        .collect()
}

/// Gives `back` the depth of `front` at every `every`-th pixel where both are active, so
/// that compositing them exercises the tie rule.
#[cfg(test)]
pub fn tie(front: &Frame, back: &mut Frame, every: usize) {
    for i in (0..back.pixels()).step_by(every) {
        if front.depth[i] != BACKGROUND_DEPTH && back.depth[i] != BACKGROUND_DEPTH {
            back.depth[i] = front.depth[i];
        }
    }
}
