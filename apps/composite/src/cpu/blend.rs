//! Compositing on the CPU, the twin of [`crate::gpu::blend`]: encoded images composited
//! without decoding them ([`composite`]), raw spans composited pixel by pixel
//! ([`composite_raw`]), and the per-pixel rule of every [`Op`] both follow.
//!
//! Compositing encoded images walks the run headers of all inputs together: stretches where
//! every input is inactive are passed on as one count, stretches where only one input is
//! active are copied as they are, and only where inputs overlap are pixels combined one by
//! one.

use crate::ap::{runs, ApWriter, Encoded, Run, BACKGROUND_DEPTH};
use crate::error::Result;
use crate::types::Op;

fn div255(x: u32) -> u32 {
    (x + 127) / 255
}

/// `front over back` for premultiplied RGBA8 words (R in the low byte).
pub fn over_rgba(front: u32, back: u32) -> u32 {
    let transparency = 255 - (front >> 24);
    let mut out = 0u32;
    for shift in [0, 8, 16, 24] {
        let c = ((front >> shift) & 255) + div255(((back >> shift) & 255) * transparency);
        out |= c.min(255) << shift;
    }
    out
}

/// Combines active pixels (colour, depth bits) of several inputs at one position, given in
/// input order.
pub(crate) fn combine(op: Op, pixels: &[[u32; 2]]) -> [u32; 2] {
    let mut acc = pixels[0];
    for px in &pixels[1..] {
        match op {
            Op::ZBuffer => {
                if f32::from_bits(px[1]) < f32::from_bits(acc[1]) {
                    acc = *px;
                }
            }
            Op::Over => acc[0] = over_rgba(acc[0], px[0]),
        }
    }
    acc
}

/// Where one input stands in its run stream.
struct Cursor<'a> {
    runs: Box<dyn Iterator<Item = Run<'a>> + 'a>,
    inactive_left: u32,
    active: &'a [u32],
}

impl<'a> Cursor<'a> {
    fn new(words: &'a [u32]) -> Cursor<'a> {
        Cursor { runs: Box::new(runs(words)), inactive_left: 0, active: &[] }
    }

    /// Makes sure the cursor holds a non-empty segment (the payload covers the pixels still
    /// to come, so a next run exists).
    fn refill(&mut self) {
        if self.inactive_left == 0 && self.active.is_empty() {
            if let Some(r) = self.runs.next() {
                self.inactive_left = r.inactive;
                self.active = r.pixels;
            }
        }
    }

    /// Length of the current uniform segment and whether it is active.
    fn segment(&self) -> (u32, bool) {
        if self.inactive_left > 0 {
            (self.inactive_left, false)
        } else {
            ((self.active.len() / 2) as u32, true)
        }
    }

    fn advance(&mut self, n: u32) {
        if self.inactive_left > 0 {
            self.inactive_left -= n;
        } else {
            self.active = &self.active[2 * n as usize..];
        }
    }
}

/// Composites encoded inputs of equal pixel count with `op`, giving an encoded result.
pub fn composite(inputs: &[&Encoded], op: Op) -> Result<Encoded> {
    let pixels = crate::ap::same_pixels(inputs)?;
    let mut cursors: Vec<Cursor> = inputs.iter().map(|e| Cursor::new(&e.words)).collect();
    let mut out = ApWriter::with_capacity(inputs.iter().map(|e| e.words.len()).max().unwrap_or(0));
    let mut left = pixels as u64;
    let mut gathered: Vec<[u32; 2]> = Vec::with_capacity(inputs.len());
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
        match active_inputs {
            0 => out.push_inactive(len),
            1 => out.push_active(&cursors[last_active].active[..2 * len as usize]),
            _ => {
                for i in 0..len as usize {
                    gathered.clear();
                    gathered.extend(
                        cursors.iter().filter(|c| c.inactive_left == 0).map(|c| [c.active[2 * i], c.active[2 * i + 1]]),
                    );
                    out.push_active(&combine(op, &gathered));
                }
            }
        }
        for c in &mut cursors {
            c.advance(len);
        }
        left -= len as u64;
    }
    Ok(Encoded { pixels, words: out.finish() })
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

/// Words per pixel of a raw RGBA32F span: the four channels' bits, then the depth bits.
pub const WIDE_WORDS: usize = 5;

/// [`combine`] for RGBA32F pixels: the z-buffer as for RGBA8, and "over" in f32,
/// `acc = acc + next * (1 - acc.a)` per channel, front to back.
fn combine_wide(op: Op, acc: &mut [u32], px: &[u32]) {
    match op {
        Op::ZBuffer => {
            if f32::from_bits(px[4]) < f32::from_bits(acc[4]) {
                acc.copy_from_slice(px);
            }
        }
        Op::Over => {
            let transparency = 1.0 - f32::from_bits(acc[3]);
            for k in 0..4 {
                acc[k] = (f32::from_bits(acc[k]) + f32::from_bits(px[k]) * transparency).to_bits();
            }
        }
    }
}

/// Composites raw RGBA32F spans of `pixels` pixels ([`WIDE_WORDS`] per pixel) in order, as
/// [`composite_raw`] does; an input without words has no active pixel, and so does the
/// result when no input has words.
pub fn composite_wide(inputs: &[&[u32]], pixels: usize, op: Op) -> Vec<u32> {
    let drawn: Vec<&[u32]> = inputs.iter().copied().filter(|w| !w.is_empty()).collect();
    if drawn.is_empty() {
        return Vec::new();
    }
    let background = BACKGROUND_DEPTH.to_bits();
    let mut out = vec![0u32; WIDE_WORDS * pixels];
    for (i, acc) in out.chunks_exact_mut(WIDE_WORDS).enumerate() {
        acc[4] = background;
        let at = WIDE_WORDS * i..WIDE_WORDS * (i + 1);
        for px in drawn.iter().map(|w| &w[at.clone()]).filter(|px| px[4] != background) {
            if acc[4] == background {
                acc.copy_from_slice(px);
            } else {
                combine_wide(op, acc, px);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn different_sizes_are_refused() {
        let a = encode_serial(&Frame::empty(2, 2));
        let b = encode_serial(&Frame::empty(3, 2));
        assert!(matches!(composite(&[&a, &b], Op::ZBuffer), Err(CompositeError::PixelCounts { .. })));
    }
}
