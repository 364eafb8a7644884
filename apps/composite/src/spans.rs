//! Cutting an encoded span into pieces at pixel boundaries and joining pieces back: what
//! the distributed exchange sends around, and how the multithreaded encoder joins its
//! bands. Both work on the run headers; no pixel is decoded.

use crate::ap::{runs_of, ApWriter, Encoded, PIXEL_WORDS};

/// Splits an encoded RGBA8 span at the given pixel boundaries (`bounds` ascending, each at
/// most `encoded.pixels`): piece `k` covers `bounds[k-1]..bounds[k]`, with 0 and `pixels` as
/// the outer ends, so there are `bounds.len() + 1` pieces.
pub fn split(encoded: &Encoded, bounds: &[usize]) -> Vec<Encoded> {
    split_of(encoded, bounds, PIXEL_WORDS)
}

/// [`split`] for a payload of `stride` words per active pixel.
pub fn split_of(encoded: &Encoded, bounds: &[usize], stride: usize) -> Vec<Encoded> {
    let mut ends: Vec<usize> = bounds.to_vec();
    ends.push(encoded.pixels);
    let mut pieces = Vec::with_capacity(ends.len());
    // Sized for an even share of the words, so a writer rarely grows (each growth copies).
    let share = encoded.words.len() / ends.len() + encoded.words.len() / (4 * ends.len()) + 4;
    let mut writer = ApWriter::of(share, stride);
    let mut start = 0usize;
    let mut k = 0usize;
    let mut pos = 0usize;
    let mut close = |writer: &mut ApWriter, start: &mut usize, end: usize| {
        pieces.push(Encoded {
            pixels: end - *start,
            words: std::mem::replace(writer, ApWriter::of(share, stride)).finish(),
        });
        *start = end;
    };
    for run in runs_of(&encoded.words, stride) {
        let mut inactive = run.inactive as usize;
        while inactive > 0 {
            while pos == ends[k] {
                close(&mut writer, &mut start, ends[k]);
                k += 1;
            }
            let n = inactive.min(ends[k] - pos);
            writer.push_inactive(n as u32);
            pos += n;
            inactive -= n;
        }
        let mut px = run.pixels;
        while !px.is_empty() {
            while pos == ends[k] {
                close(&mut writer, &mut start, ends[k]);
                k += 1;
            }
            let n = (px.len() / stride).min(ends[k] - pos);
            writer.push_active(&px[..stride * n]);
            pos += n;
            px = &px[stride * n..];
        }
    }
    while k < ends.len() {
        close(&mut writer, &mut start, ends[k]);
        k += 1;
    }
    pieces
}

/// Joins encoded RGBA8 spans that follow each other into one.
pub fn concat(pieces: Vec<Encoded>) -> Encoded {
    concat_of(pieces, PIXEL_WORDS)
}

/// [`concat`] for payloads of `stride` words per active pixel.
pub fn concat_of(mut pieces: Vec<Encoded>, stride: usize) -> Encoded {
    if pieces.len() == 1 {
        return pieces.remove(0);
    }
    let mut writer = ApWriter::of(pieces.iter().map(|p| p.words.len()).sum(), stride);
    for p in &pieces {
        writer.push_runs(&p.words);
    }
    Encoded { pixels: pieces.iter().map(|p| p.pixels).sum(), words: writer.finish() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::encode::{encode_range, encode_serial};
    use crate::patterns;

    #[test]
    fn split_then_concat_is_identity() {
        for (name, frame) in patterns::at_every_size(3) {
            let e = encode_serial(&frame);
            let n = frame.pixels();
            let bounds = [0, n / 3, n / 3, n / 2, n];
            let pieces = split(&e, &bounds);
            assert_eq!(pieces.len(), bounds.len() + 1);
            let mut start = 0;
            for (k, p) in pieces.iter().enumerate() {
                let end = bounds.get(k).copied().unwrap_or(n);
                assert_eq!(p.pixels, end - start);
                crate::ap::validate(&p.words, p.pixels).unwrap();
                assert_eq!(*p, encode_range(&frame, start, end), "{name} piece {k}");
                start = end;
            }
            assert_eq!(concat(pieces), e, "{name} {}x{}", frame.width, frame.height);
        }
    }
}
