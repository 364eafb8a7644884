//! The spans of partial images that travel between ranks ([`Piece`]: Active Pixel encoded
//! with RGBA8 or RGBA32F colour, or raw) and the final image that the root gathers from them ([`Gathered`]).

use crate::ap::{runs_of, Encoded, WIDE_WORDS};
use crate::cpu::blend::{composite, composite_of, composite_raw};
use crate::error::{CompositeError, Result};
use crate::frame::Frame;
use crate::spans;
use crate::types::Op;

/// A span of a partial image as it travels between ranks.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    /// Active Pixel encoded.
    Encoded(Encoded),
    /// Raw: (colour, depth bits) per pixel.
    Raw { pixels: usize, words: Vec<u32> },
    /// Active Pixel encoded with RGBA32F colour: [`WIDE_WORDS`] words per active pixel (the
    /// four colour channels' bits, then the depth bits).
    Wide(Encoded),
}

/// What form a [`Piece`] has, so that what is received is rebuilt in the same form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Encoded,
    Raw,
    Wide,
}

impl Piece {
    pub fn pixels(&self) -> usize {
        match self {
            Piece::Encoded(e) | Piece::Wide(e) => e.pixels,
            Piece::Raw { pixels, .. } => *pixels,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Piece::Encoded(_) => Kind::Encoded,
            Piece::Raw { .. } => Kind::Raw,
            Piece::Wide(_) => Kind::Wide,
        }
    }

    pub fn words(&self) -> &[u32] {
        match self {
            Piece::Encoded(e) | Piece::Wide(e) => &e.words,
            Piece::Raw { words, .. } => words,
        }
    }

    /// The words, as they are sent.
    pub fn into_words(self) -> Vec<u32> {
        match self {
            Piece::Encoded(e) | Piece::Wide(e) => e.words,
            Piece::Raw { words, .. } => words,
        }
    }

    /// Rebuilds a received piece of `pixels` pixels of form `kind`, checking it before
    /// trusting it.
    pub fn received(kind: Kind, pixels: usize, words: Vec<u32>) -> Result<Piece> {
        match kind {
            Kind::Encoded => Ok(Piece::Encoded(Encoded::checked(pixels, words)?)),
            Kind::Wide => {
                crate::ap::validate_of(&words, pixels, WIDE_WORDS)?;
                Ok(Piece::Wide(Encoded { pixels, words }))
            }
            Kind::Raw if words.len() == 2 * pixels => Ok(Piece::Raw { pixels, words }),
            Kind::Raw => {
                Err(CompositeError::Corrupt(format!("raw piece of {} words for {pixels} pixels", words.len())))
            }
        }
    }

    pub fn empty(kind: Kind) -> Piece {
        match kind {
            Kind::Encoded => Piece::Encoded(Encoded { pixels: 0, words: Vec::new() }),
            Kind::Raw => Piece::Raw { pixels: 0, words: Vec::new() },
            Kind::Wide => Piece::Wide(Encoded { pixels: 0, words: Vec::new() }),
        }
    }

    /// Cuts the piece at pixel `bounds` (as [`spans::split`]).
    pub fn split(&self, bounds: &[usize]) -> Vec<Piece> {
        match self {
            Piece::Encoded(e) => spans::split(e, bounds).into_iter().map(Piece::Encoded).collect(),
            Piece::Wide(e) => spans::split_of(e, bounds, WIDE_WORDS).into_iter().map(Piece::Wide).collect(),
            Piece::Raw { pixels, words } => {
                raw_parts(*pixels, bounds, words).map(|(pixels, words)| Piece::Raw { pixels, words }).collect()
            }
        }
    }

    /// Composites pieces of one span in order, on the CPU (all of one kind, as the exchange
    /// sends them).
    pub fn composite(pieces: &[&Piece], op: Op) -> Result<Piece> {
        let encoded = |wide: bool| -> Vec<&Encoded> {
            pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Encoded(e) if !wide => Some(e),
                    Piece::Wide(e) if wide => Some(e),
                    _ => None,
                })
                .collect()
        };
        match pieces.first() {
            Some(Piece::Encoded(_)) => Ok(Piece::Encoded(composite(&encoded(false), op)?)),
            Some(Piece::Wide(_)) => Ok(Piece::Wide(composite_of(&encoded(true), op, WIDE_WORDS)?)),
            _ => {
                let pixels = pieces[0].pixels();
                let words: Vec<&[u32]> = pieces.iter().map(|p| p.words()).collect();
                Ok(Piece::Raw { pixels, words: composite_raw(&words, pixels, op) })
            }
        }
    }
}

/// The parts of a raw span of `pixels` pixels of two words each, cut at `bounds`, as
/// (pixels, words).
fn raw_parts<'a>(pixels: usize, bounds: &'a [usize], words: &'a [u32]) -> impl Iterator<Item = (usize, Vec<u32>)> + 'a {
    let ends = bounds.iter().copied().chain(std::iter::once(pixels));
    let mut start = 0;
    ends.map(move |end| {
        let part = words[2 * start..2 * end].to_vec();
        let p = (end - start, part);
        start = end;
        p
    })
}

/// The final image on the root: every rank's final span, in pixel order, covering the image.
#[derive(Debug)]
pub struct Gathered {
    pub(crate) spans: Vec<(usize, Piece)>,
}

impl Gathered {
    /// The whole image as a frame (decoding each span in place: no joined copy is made).
    /// RGBA32F colour is rounded to RGBA8.
    pub fn to_frame(&self, width: u32, height: u32) -> Frame {
        let mut frame = Frame::empty(width, height);
        for (start, piece) in &self.spans {
            match piece {
                Piece::Encoded(e) => frame.paint(e, *start),
                Piece::Raw { words, .. } => frame.paint_raw(words, *start),
                Piece::Wide(e) => {
                    let mut p = *start;
                    for run in runs_of(&e.words, WIDE_WORDS) {
                        p += run.inactive as usize;
                        for px in run.pixels.chunks_exact(WIDE_WORDS) {
                            (frame.color[p], frame.depth[p]) = wide_as_rgba8(px);
                            p += 1;
                        }
                    }
                }
            }
        }
        frame
    }

    /// Every rank's final span and the pixel it starts at, in pixel order.
    pub fn spans(&self) -> &[(usize, Piece)] {
        &self.spans
    }
}

/// A wide pixel ([`WIDE_WORDS`] words: RGBA32F then depth) as packed RGBA8 (each channel
/// clamped to [0, 1]) and its depth.
pub fn wide_as_rgba8(px: &[u32]) -> (u32, f32) {
    let c = |k: usize| (f32::from_bits(px[k]).clamp(0.0, 1.0) * 255.0).round() as u8;
    (crate::ap::pack_rgba([c(0), c(1), c(2), c(3)]), f32::from_bits(px[4]))
}
