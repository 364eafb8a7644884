//! Active Pixel encoding on the CPU, the twin of [`crate::gpu::encode`]: the serial encoder
//! (the reference every GPU payload is compared with byte for byte), the multithreaded one
//! (row bands encoded in parallel and joined at the seams), the encoder of a readback
//! region of interest, and the region of interest itself.

use rayon::prelude::*;

use crate::ap::{ApWriter, Encoded, BACKGROUND_DEPTH};
use crate::frame::Frame;
use crate::types::Roi;

/// Serial Active Pixel encoding of `frame` pixels `begin..end`.
pub fn encode_range(frame: &Frame, begin: usize, end: usize) -> Encoded {
    encode_planes(&frame.color, &frame.depth, begin, end)
}

/// Serial Active Pixel encoding of pixels `begin..end` of a colour plane of `color.len() /
/// depth.len()` words a pixel (1: RGBA8; 4: RGBA32F, the channels' bits) and its depth plane.
/// An active pixel's words are its colour words, then its depth bits.
pub fn encode_planes(color: &[u32], depth: &[f32], begin: usize, end: usize) -> Encoded {
    let per = color.len() / depth.len().max(1);
    let mut w = ApWriter::of(64, per + 1);
    let mut words = Vec::new();
    let mut i = begin;
    while i < end {
        let start = i;
        if depth[i] == BACKGROUND_DEPTH {
            while i < end && depth[i] == BACKGROUND_DEPTH {
                i += 1;
            }
            w.push_inactive((i - start) as u32);
        } else {
            words.clear();
            while i < end && depth[i] != BACKGROUND_DEPTH {
                words.extend_from_slice(&color[per * i..per * (i + 1)]);
                words.push(depth[i].to_bits());
                i += 1;
            }
            w.push_active(&words);
        }
    }
    Encoded { pixels: end - begin, words: w.finish() }
}

/// Multithreaded [`encode_planes`] of whole planes of `width`-pixel rows: bands of rows
/// encoded in parallel, then joined.
pub fn encode_planes_parallel(color: &[u32], depth: &[f32], width: u32) -> Encoded {
    let n = depth.len();
    let band = (width as usize * 16).max(1 << 16);
    let bands: Vec<Encoded> = (0..n.div_ceil(band))
        .into_par_iter()
        .map(|b| encode_planes(color, depth, b * band, ((b + 1) * band).min(n)))
        .collect();
    crate::spans::concat_of(bands, color.len() / n.max(1) + 1)
}

/// Serial encoding of a frame whose pixels outside the box `roi` are all inactive, reading
/// only the box (the CPU encoder after a region-of-interest readback).
pub fn encode_roi(frame: &Frame, roi: &Roi) -> Encoded {
    let w = frame.width as usize;
    let mut writer = ApWriter::with_capacity(64);
    let (x0, x1) = (roi.x0 as usize, roi.x1 as usize + 1);
    writer.push_inactive((roi.y0 as usize * w + x0) as u32);
    for y in roi.y0 as usize..=roi.y1 as usize {
        if y > roi.y0 as usize {
            writer.push_inactive((w - (x1 - x0)) as u32);
        }
        writer.push_runs(&encode_range(frame, y * w + x0, y * w + x1).words);
    }
    writer.push_inactive((frame.pixels() - (roi.y1 as usize * w + x1)) as u32);
    Encoded { pixels: frame.pixels(), words: writer.finish() }
}

/// Serial encoding of a whole frame (the reference encoder).
pub fn encode_serial(frame: &Frame) -> Encoded {
    encode_range(frame, 0, frame.pixels())
}

/// Multithreaded encoding: bands of rows encoded in parallel, then joined.
pub fn encode_parallel(frame: &Frame) -> Encoded {
    encode_planes_parallel(&frame.color, &frame.depth, frame.width)
}

/// The region of interest: the bounding box of the pixels whose depth is not the
/// background depth (`ap_count` finds it on the GPU).
pub fn roi(depth: &[f32], width: u32) -> Option<Roi> {
    let mut roi: Option<Roi> = None;
    for (i, &d) in depth.iter().enumerate() {
        if d != BACKGROUND_DEPTH {
            let (x, y) = ((i % width as usize) as u32, (i / width as usize) as u32);
            roi = Some(match roi {
                None => Roi { x0: x, y0: y, x1: x, y1: y },
                Some(r) => Roi { x0: r.x0.min(x), y0: r.y0.min(y), x1: r.x1.max(x), y1: r.y1.max(y) },
            });
        }
    }
    roi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns;

    #[test]
    fn decode_inverts_encode_and_parallel_matches_serial() {
        for (name, frame) in patterns::at_every_size(7) {
            let (w, h) = (frame.width, frame.height);
            let e = encode_serial(&frame);
            crate::ap::validate(&e.words, frame.pixels()).unwrap();
            assert_eq!(Frame::decode(&e, w, h), frame, "{name} {w}x{h}");
            assert_eq!(encode_parallel(&frame), e, "{name} {w}x{h}");
            if let Some(roi) = roi(&frame.depth, w) {
                assert_eq!(encode_roi(&frame, &roi), e, "ROI encoding of {name} {w}x{h}");
            }
        }
    }

    #[test]
    fn known_layouts() {
        let mut f = Frame::empty(3, 2);
        assert_eq!(encode_serial(&f).words, vec![6, 0]);
        f.depth.iter_mut().for_each(|d| *d = 0.5);
        let e = encode_serial(&f);
        assert_eq!(&e.words[..2], &[0, 6]);
        assert_eq!(e.words.len(), 2 + 12);
    }
}
