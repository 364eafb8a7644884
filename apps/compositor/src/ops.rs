//! Compositing operators that work on encoded images without decoding them, plus splitting
//! an encoded image into pixel spans and joining spans back (what the distributed exchange
//! sends around).
//!
//! Compositing walks the run headers of all inputs together: stretches where every input is
//! inactive are passed on as one count, stretches where only one input is active are copied
//! as they are, and only where inputs overlap are pixels combined one by one.
//!
//! Operators (inputs in order, first = front / lowest rank):
//! - [`Op::ZBuffer`]: the smallest depth wins; on equal depths the earlier input wins.
//! - [`Op::Over`]: colours are premultiplied RGBA8; `acc = acc + next * (255 - acc.a) / 255`
//!   per channel, front to back, each product rounded to nearest (`(x + 127) / 255`) and
//!   clamped to 255. The depth kept is the front-most active depth. Integer arithmetic keeps
//!   CPU and GPU results identical.

use crate::ap::{runs, ApWriter, Encoded, Run};
use crate::error::{CompositorError, Result};

/// A compositing operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Nearest depth wins; ties go to the earlier input.
    #[value(name = "zbuffer")]
    ZBuffer,
    /// Premultiplied-alpha "over", front (first input) to back.
    Over,
}

impl Op {
    /// Shader code of the operator.
    pub fn code(self) -> u32 {
        match self {
            Op::ZBuffer => 0,
            Op::Over => 1,
        }
    }
}

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
    let first = inputs.first().ok_or_else(|| CompositorError::Invalid("nothing to composite".into()))?;
    if let Some(other) = inputs.iter().find(|e| e.pixels != first.pixels) {
        return Err(CompositorError::SizeMismatch(format!("inputs have {} and {} pixels", first.pixels, other.pixels)));
    }
    let mut cursors: Vec<Cursor> = inputs.iter().map(|e| Cursor::new(&e.words)).collect();
    let mut out = ApWriter::with_capacity(inputs.iter().map(|e| e.words.len()).max().unwrap_or(0));
    let mut left = first.pixels as u64;
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
    Ok(Encoded { pixels: first.pixels, words: out.finish() })
}

/// Splits an encoded span at the given pixel boundaries (`bounds` ascending, each at most
/// `encoded.pixels`): piece `k` covers `bounds[k-1]..bounds[k]`, with 0 and `pixels` as the
/// outer ends, so there are `bounds.len() + 1` pieces.
pub fn split(encoded: &Encoded, bounds: &[usize]) -> Vec<Encoded> {
    let mut ends: Vec<usize> = bounds.to_vec();
    ends.push(encoded.pixels);
    let mut pieces = Vec::with_capacity(ends.len());
    // Sized for an even share of the words, so a writer rarely grows (each growth copies).
    let share = encoded.words.len() / ends.len() + encoded.words.len() / (4 * ends.len()) + 4;
    let mut writer = ApWriter::with_capacity(share);
    let mut start = 0usize;
    let mut k = 0usize;
    let mut pos = 0usize;
    let mut close = |writer: &mut ApWriter, start: &mut usize, end: usize| {
        pieces.push(Encoded {
            pixels: end - *start,
            words: std::mem::replace(writer, ApWriter::with_capacity(share)).finish(),
        });
        *start = end;
    };
    for run in runs(&encoded.words) {
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
            let n = (px.len() / 2).min(ends[k] - pos);
            writer.push_active(&px[..2 * n]);
            pos += n;
            px = &px[2 * n..];
        }
    }
    while k < ends.len() {
        close(&mut writer, &mut start, ends[k]);
        k += 1;
    }
    pieces
}

/// Joins encoded spans that follow each other into one.
pub fn concat(mut pieces: Vec<Encoded>) -> Encoded {
    if pieces.len() == 1 {
        return pieces.remove(0);
    }
    let mut writer = ApWriter::with_capacity(pieces.iter().map(|p| p.words.len()).sum());
    for p in &pieces {
        writer.push_runs(&p.words);
    }
    Encoded { pixels: pieces.iter().map(|p| p.pixels).sum(), words: writer.finish() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode, encode_serial};
    use crate::frame::Frame;
    use crate::patterns;

    /// Per-pixel reference on decoded frames.
    fn reference(frames: &[Frame], op: Op) -> Frame {
        let mut out = Frame::empty(frames[0].width, frames[0].height);
        for i in 0..out.pixels() {
            let active: Vec<[u32; 2]> = frames
                .iter()
                .filter(|f| f.depth[i] != crate::ap::BACKGROUND_DEPTH)
                .map(|f| [f.color[i], f.depth[i].to_bits()])
                .collect();
            if !active.is_empty() {
                let px = combine(op, &active);
                (out.color[i], out.depth[i]) = (px[0], f32::from_bits(px[1]));
            }
        }
        out
    }

    #[test]
    fn composite_matches_decoded_reference() {
        for (w, h) in patterns::SIZES {
            let a = patterns::all(w, h, 1);
            let b = patterns::all(w, h, 2);
            for ((na, fa), (nb, fb)) in a.iter().zip(b.iter().rev()) {
                let mut fb = fb.clone();
                // Equal depths at some pixels exercise the tie rule.
                for i in (0..fb.pixels()).step_by(5) {
                    if fa.depth[i] != 1.0 && fb.depth[i] != 1.0 {
                        fb.depth[i] = fa.depth[i];
                    }
                }
                let frames = [fa.clone(), fb.clone(), fa.clone()];
                let encoded: Vec<Encoded> = frames.iter().map(encode_serial).collect();
                let refs: Vec<&Encoded> = encoded.iter().collect();
                for op in [Op::ZBuffer, Op::Over] {
                    let got = composite(&refs, op).unwrap();
                    let want = reference(&frames, op);
                    assert_eq!(decode(&got, w, h), want, "{na} + {nb} {op:?} {w}x{h}");
                    assert_eq!(got, encode_serial(&want), "canonical bytes: {na} + {nb} {op:?}");
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
        assert_eq!(decode(&composite(&[&ea, &eb], Op::ZBuffer).unwrap(), 2, 1).color[0], 1);
        assert_eq!(decode(&composite(&[&eb, &ea], Op::ZBuffer).unwrap(), 2, 1).color[0], 2);
    }

    #[test]
    fn over_is_premultiplied() {
        // Half-transparent red over opaque blue: (128, 0, 0, 128) + (0, 0, 255, 255) * 127/255.
        let front = u32::from_le_bytes([128, 0, 0, 128]);
        let back = u32::from_le_bytes([0, 0, 255, 255]);
        assert_eq!(over_rgba(front, back).to_le_bytes(), [128, 0, 127, 255]);
    }

    #[test]
    fn split_then_concat_is_identity() {
        for (w, h) in patterns::SIZES {
            for (name, frame) in patterns::all(w, h, 3) {
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
                    assert_eq!(*p, crate::codec::encode_range(&frame, start, end), "{name} piece {k}");
                    start = end;
                }
                assert_eq!(concat(pieces), e, "{name} {w}x{h}");
            }
        }
    }

    #[test]
    fn different_sizes_are_refused() {
        let a = encode_serial(&Frame::empty(2, 2));
        let b = encode_serial(&Frame::empty(3, 2));
        assert!(matches!(composite(&[&a, &b], Op::ZBuffer), Err(CompositorError::SizeMismatch(_))));
    }
}
