//! Compositing on the CPU, the twin of [`crate::gpu::blend`]: encoded images composited
//! without decoding them ([`composite`]), raw spans composited pixel by pixel
//! ([`composite_raw`]), and the per-pixel rule of every [`Op`] both follow.
//!
//! Compositing encoded images walks the run headers of all inputs together: stretches where
//! every input is inactive are passed on as one count, stretches where only one input is
//! active are copied as they are, and only where inputs overlap are pixels combined one by
//! one.

use rayon::prelude::*;

use crate::ap::{ApWriter, Encoded, BACKGROUND_DEPTH, PIXEL_WORDS};
use crate::error::Result;
use crate::spans::{Cursor, PARALLEL_PIXELS};
use crate::types::Op;

/// `front over back` for premultiplied RGBA8 words (R in the low byte): per channel
/// `min(255, front + (back * (255 - front.a) + 127) / 255)`, the four channels at once in
/// 16-bit lanes of a u64 (the division by 255 as `(y + (y >> 8) + 1) >> 8`, exact for
/// y = x + 127 <= 65152).
pub fn over_rgba(front: u32, back: u32) -> u32 {
    const LOW: u64 = 0x00FF_00FF_00FF_00FF;
    let lanes = |c: u32| {
        let c = c as u64;
        (c & 0xFF) | (c & 0xFF00) << 8 | (c & 0xFF_0000) << 16 | (c & 0xFF00_0000) << 24
    };
    let transparency = 255 - (front >> 24) as u64;
    let y = lanes(back) * transparency + 0x007F_007F_007F_007F;
    let sum = (((y + ((y >> 8) & LOW) + 0x0001_0001_0001_0001) >> 8) & LOW) + lanes(front);
    // Lanes past 255 have bit 8 set: they become 255.
    let over = sum & 0x0100_0100_0100_0100;
    let c = (sum | (over - (over >> 8))) & LOW;
    (c & 0xFF | (c >> 8) & 0xFF00 | (c >> 16) & 0xFF_0000 | (c >> 24) & 0xFF00_0000) as u32
}

/// Combines active pixels (colour, depth bits) of several inputs at one position, given in
/// input order.
pub(crate) fn combine(op: Op, pixels: &[[u32; 2]]) -> [u32; 2] {
    let mut acc = pixels[0];
    for px in &pixels[1..] {
        combine_into(op, &mut acc, px);
    }
    acc
}

/// Combines the active pixel `px` behind `acc` (both RGBA8 (colour, depth bits), or both
/// RGBA32F ([`crate::ap::WIDE_WORDS`]: the channels' bits, then the depth bits)): the z-buffer keeps the
/// nearer, `acc` on a tie; "over" keeps `acc`'s depth, in RGBA8 by [`over_rgba`] and in f32
/// as `acc + px * (1 - acc.a)` per channel.
pub(crate) fn combine_into(op: Op, acc: &mut [u32], px: &[u32]) {
    let d = acc.len() - 1;
    match op {
        Op::ZBuffer => {
            if f32::from_bits(px[d]) < f32::from_bits(acc[d]) {
                acc.copy_from_slice(px);
            }
        }
        Op::Over if d == 1 => acc[0] = over_rgba(acc[0], px[0]),
        Op::Over => {
            let transparency = 1.0 - f32::from_bits(acc[3]);
            for k in 0..4 {
                acc[k] = (f32::from_bits(acc[k]) + f32::from_bits(px[k]) * transparency).to_bits();
            }
        }
    }
}

/// Composites encoded RGBA8 inputs of equal pixel count with `op`, giving an encoded result.
pub fn composite(inputs: &[&Encoded], op: Op) -> Result<Encoded> {
    composite_of(inputs, op, PIXEL_WORDS)
}

/// [`composite`] for payloads of `stride` words per active pixel ([`PIXEL_WORDS`], or
/// [`crate::ap::WIDE_WORDS`] for RGBA32F). Large spans are cut into parts at the same pixels of every
/// input (cursors found by walking the run headers, no pixel copied), the parts composited
/// in parallel and joined.
pub fn composite_of(inputs: &[&Encoded], op: Op, stride: usize) -> Result<Encoded> {
    let pixels = crate::ap::same_pixels(inputs)?;
    if pixels == 0 {
        return Ok(Encoded { pixels, words: Vec::new() });
    }
    let threads = rayon::current_num_threads();
    let parts = if threads == 1 { 1 } else { (pixels / PARALLEL_PIXELS).clamp(1, 4 * threads) };
    let bounds: Vec<usize> = (0..parts).map(|k| k * pixels / parts).collect();
    let cursors: Vec<Vec<Cursor>> = inputs.iter().map(|e| Cursor::at(&e.words, stride, &bounds)).collect();
    // The writers are made on this thread (see spans::split_of).
    let capacity = inputs.iter().map(|e| e.words.len()).max().unwrap_or(0) / parts + 16;
    let writers: Vec<ApWriter> = (0..parts).map(|_| ApWriter::of(capacity, stride)).collect();
    let composited: Vec<Encoded> = writers
        .into_par_iter()
        .enumerate()
        .map(|(k, writer)| {
            let end = bounds.get(k + 1).copied().unwrap_or(pixels);
            let part: Vec<Cursor> = cursors.iter().map(|c| c[k].clone()).collect();
            composite_part(part, end - bounds[k], op, writer)
        })
        .collect();
    Ok(crate::spans::concat_of(composited, stride))
}

/// Composites `pixels` pixels of the inputs from their cursors into `out`: stretches where
/// every input is inactive as one count, where one is active copied, where several are
/// combined input by input over the whole stretch.
fn composite_part(mut cursors: Vec<Cursor>, pixels: usize, op: Op, mut out: ApWriter) -> Encoded {
    let stride = out.stride();
    let mut left = pixels as u64;
    while left > 0 {
        let mut len = u32::MAX;
        let mut active_inputs = 0usize;
        let mut last_active = 0usize;
        for (k, c) in cursors.iter_mut().enumerate() {
            c.refill();
            let (n, active) = c.segment();
            len = len.min(n);
            if active {
                active_inputs += 1;
                last_active = k;
            }
        }
        let len = len.min(u32::try_from(left).unwrap_or(u32::MAX));
        let words = stride * len as usize;
        match active_inputs {
            0 => out.push_inactive(len),
            1 => out.push_active(&cursors[last_active].active[..words]),
            _ => {
                let acc = out.active_mut(len as usize);
                let mut active = cursors.iter().filter(|c| c.inactive_left == 0);
                acc.copy_from_slice(&active.next().expect("two active inputs").active[..words]);
                for c in active {
                    combine_span(op, acc, &c.active[..words], stride);
                }
            }
        }
        for c in &mut cursors {
            c.advance(len);
        }
        left -= len as u64;
    }
    Encoded { pixels, words: out.finish() }
}

/// [`combine_into`] for every pixel of a stretch of `stride` words a pixel, the loops of
/// RGBA8 and of the z-buffer without a branch on the format per pixel.
fn combine_span(op: Op, acc: &mut [u32], px: &[u32], stride: usize) {
    let pairs = acc.chunks_exact_mut(stride).zip(px.chunks_exact(stride));
    match (op, stride) {
        (Op::Over, PIXEL_WORDS) => pairs.for_each(|(a, p)| a[0] = over_rgba(a[0], p[0])),
        (Op::ZBuffer, _) => pairs.for_each(|(a, p)| {
            if f32::from_bits(p[stride - 1]) < f32::from_bits(a[stride - 1]) {
                a.copy_from_slice(p);
            }
        }),
        _ => pairs.for_each(|(a, p)| combine_into(op, a, p)),
    }
}

/// Composites raw spans of `pixels` pixels ((colour, depth bits) per pixel) in order: the
/// active pixels of each position combined with `op`, background where none is active.
pub fn composite_raw(inputs: &[&[u32]], pixels: usize, op: Op) -> Vec<u32> {
    let mut out = vec![0u32; 2 * pixels];
    let background = BACKGROUND_DEPTH.to_bits();
    let mut active = Vec::with_capacity(inputs.len());
    for i in 0..pixels {
        active.clear();
        active.extend(inputs.iter().map(|w| [w[2 * i], w[2 * i + 1]]).filter(|px| px[1] != background));
        let px = if active.is_empty() { [0, background] } else { combine(op, &active) };
        out[2 * i..2 * i + 2].copy_from_slice(&px);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ap::WIDE_WORDS;
    use crate::cpu::encode::encode_serial;
    use crate::error::CompositeError;
    use crate::frame::{raw_words, Frame};
    use crate::patterns;

    /// Per-pixel reference on decoded frames: their raw forms composited.
    fn reference(frames: &[Frame], op: Op) -> Frame {
        let raws: Vec<Vec<u32>> = frames.iter().map(|f| raw_words(&f.color, &f.depth)).collect();
        let raws: Vec<&[u32]> = raws.iter().map(Vec::as_slice).collect();
        let mut out = Frame::empty(frames[0].width, frames[0].height);
        out.paint_raw(&composite_raw(&raws, out.pixels(), op), 0);
        out
    }

    #[test]
    fn composite_matches_decoded_reference() {
        for (w, h) in patterns::SIZES {
            for (name, fa, fb) in patterns::tied_pairs(w, h, 1, 5) {
                let frames = [fa.clone(), fb, fa];
                let encoded: Vec<Encoded> = frames.iter().map(encode_serial).collect();
                let refs: Vec<&Encoded> = encoded.iter().collect();
                for op in [Op::ZBuffer, Op::Over] {
                    let got = composite(&refs, op).unwrap();
                    let want = reference(&frames, op);
                    assert_eq!(Frame::decode(&got, w, h), want, "{name} {op:?} {w}x{h}");
                    assert_eq!(got, encode_serial(&want), "canonical bytes: {name} {op:?}");
                }
            }
        }
    }

    /// Spans large enough to be composited in parallel parts give the bytes of one serial
    /// walk, RGBA8 and RGBA32F, three inputs, both ops.
    #[test]
    fn parallel_parts_equal_one_serial_walk() {
        let (w, h) = (1031, 517);
        for (name, fa, fb) in patterns::tied_pairs(w, h, 3, 7) {
            let frames = [fb.clone(), fa, fb];
            for stride in [PIXEL_WORDS, WIDE_WORDS] {
                let encoded: Vec<Encoded> = frames
                    .iter()
                    .enumerate()
                    .map(|(k, f)| {
                        let colors = if stride == WIDE_WORDS { patterns::widen(f, k as u64) } else { f.color.clone() };
                        crate::cpu::encode::encode_planes(&colors, &f.depth, 0, f.pixels())
                    })
                    .collect();
                let refs: Vec<&Encoded> = encoded.iter().collect();
                for op in [Op::ZBuffer, Op::Over] {
                    let cursors = refs.iter().map(|e| Cursor::at(&e.words, stride, &[0]).remove(0)).collect();
                    let serial = composite_part(cursors, frames[0].pixels(), op, ApWriter::of(0, stride));
                    let parallel = composite_of(&refs, op, stride).unwrap();
                    crate::ap::validate_of(&parallel.words, parallel.pixels, stride).unwrap();
                    assert!(parallel == serial, "{name} {op:?} stride {stride}");
                }
            }
        }
    }

    #[test]
    fn zbuffer_ties_go_to_the_earlier_input() {
        let mut a = Frame::empty(2, 1);
        let mut b = Frame::empty(2, 1);
        (a.color[0], a.depth[0]) = (1, 0.5);
        (b.color[0], b.depth[0]) = (2, 0.5);
        let (ea, eb) = (encode_serial(&a), encode_serial(&b));
        assert_eq!(Frame::decode(&composite(&[&ea, &eb], Op::ZBuffer).unwrap(), 2, 1).color[0], 1);
        assert_eq!(Frame::decode(&composite(&[&eb, &ea], Op::ZBuffer).unwrap(), 2, 1).color[0], 2);
    }

    #[test]
    fn over_is_premultiplied() {
        // Half-transparent red over opaque blue: (128, 0, 0, 128) + (0, 0, 255, 255) * 127/255.
        let front = u32::from_le_bytes([128, 0, 0, 128]);
        let back = u32::from_le_bytes([0, 0, 255, 255]);
        assert_eq!(over_rgba(front, back).to_le_bytes(), [128, 0, 127, 255]);
    }

    /// Every front alpha, front channel and back channel: the lanes of [`over_rgba`] give
    /// the scalar rule.
    #[test]
    fn over_rgba_is_the_scalar_rule_for_every_channel() {
        let scalar = |f: u32, b: u32, a: u32| (f + (b * (255 - a) + 127) / 255).min(255);
        for a in 0..=255u32 {
            for f in 0..=255u32 {
                for b in (0..=255u32).step_by(3).chain([254, 255]) {
                    let front = u32::from_le_bytes([f as u8, (255 - f) as u8, (f / 2) as u8, a as u8]);
                    let back = u32::from_le_bytes([b as u8, (255 - b) as u8, (b ^ 0x5A) as u8, (255 - b) as u8]);
                    let got = over_rgba(front, back).to_le_bytes();
                    let want = [
                        scalar(f, b, a),
                        scalar(255 - f, 255 - b, a),
                        scalar(f / 2, b ^ 0x5A, a),
                        scalar(a, 255 - b, a),
                    ];
                    assert_eq!(got.map(u32::from), want, "front {front:08x} back {back:08x}");
                }
            }
        }
    }

    #[test]
    fn different_sizes_are_refused() {
        let a = encode_serial(&Frame::empty(2, 2));
        let b = encode_serial(&Frame::empty(3, 2));
        assert!(matches!(composite(&[&a, &b], Op::ZBuffer), Err(CompositeError::PixelCounts { .. })));
    }
}
