//! The kernels' order: the Morton code (bit interleaving) of their quantised centres, so
//! that kernels next to each other in the file are near in the image and predict each
//! other, and the centres are coded as the differences of sorted codes.

/// The bits that hold every value in 0..=`span`.
pub fn bits_for(span: u64) -> u32 {
    64 - span.leading_zeros()
}

/// The Morton code of `coords` (axis i holding `bits[i]` bits): from the top bit level down,
/// one bit of every axis that has a bit at that level, axis 0 first. At most 128 bits in all.
pub fn interleave(coords: &[u64], bits: &[u32]) -> u128 {
    let top = bits.iter().copied().max().unwrap_or(0);
    let mut code = 0u128;
    for level in (0..top).rev() {
        for (&c, &b) in coords.iter().zip(bits) {
            if level < b {
                code = (code << 1) | ((c >> level) & 1) as u128;
            }
        }
    }
    code
}

/// The coordinates of a Morton code (the inverse of [`interleave`]); bits of `code` above
/// the sum of `bits` are ignored.
pub fn deinterleave(code: u128, bits: &[u32], coords: &mut [u64]) {
    let top = bits.iter().copied().max().unwrap_or(0);
    let mut at = bits.iter().sum::<u32>();
    coords.iter_mut().for_each(|c| *c = 0);
    for level in (0..top).rev() {
        for (c, &b) in coords.iter_mut().zip(bits) {
            if level < b {
                at -= 1;
                *c |= (((code >> at) & 1) as u64) << level;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_invert_and_keep_the_order_of_each_axis() {
        let bits = [5, 3, 2, 1];
        let mut rng = kit::fuzz::Rng::new(1);
        let mut back = [0u64; 4];
        for _ in 0..500 {
            let c: Vec<u64> = bits.iter().map(|&b| rng.below(1 << b) as u64).collect();
            let code = interleave(&c, &bits);
            assert!(code < 1 << 11);
            deinterleave(code, &bits, &mut back);
            assert_eq!(back.to_vec(), c);
            let mut up = c.clone();
            if up[0] + 1 < 1 << 5 {
                up[0] += 1;
                assert!(interleave(&up, &bits) > code);
            }
        }
        assert_eq!(bits_for(0), 0);
        assert_eq!(bits_for(1), 1);
        assert_eq!(bits_for(255), 8);
    }
}
