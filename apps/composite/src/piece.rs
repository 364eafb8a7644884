//! The spans of partial images that travel between ranks ([`Piece`]: Active Pixel encoded,
//! raw, or raw RGBA32F) and the final image that the root gathers from them ([`Gathered`]).

use crate::ap::Encoded;
use crate::cpu::blend::{composite, composite_raw, composite_wide, WIDE_WORDS};
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
    /// Raw with RGBA32F colour: [`WIDE_WORDS`] words per pixel (the four colour channels'
    /// bits, then the depth bits); no words at all for a span with no active pixel, so a
    /// rank with nothing drawn sends nothing.
    Wide { pixels: usize, words: Vec<u32> },
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
            Piece::Encoded(e) => e.pixels,
            Piece::Raw { pixels, .. } | Piece::Wide { pixels, .. } => *pixels,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Piece::Encoded(_) => Kind::Encoded,
            Piece::Raw { .. } => Kind::Raw,
            Piece::Wide { .. } => Kind::Wide,
        }
    }

    pub fn words(&self) -> &[u32] {
        match self {
            Piece::Encoded(e) => &e.words,
            Piece::Raw { words, .. } | Piece::Wide { words, .. } => words,
        }
    }

    /// The words, as they are sent.
    pub fn into_words(self) -> Vec<u32> {
        match self {
            Piece::Encoded(e) => e.words,
            Piece::Raw { words, .. } | Piece::Wide { words, .. } => words,
        }
    }

    /// Rebuilds a received piece of `pixels` pixels of form `kind`, checking it before
    /// trusting it.
    pub fn received(kind: Kind, pixels: usize, words: Vec<u32>) -> Result<Piece> {
        let size = |per: usize| words.len() == per * pixels || (kind == Kind::Wide && words.is_empty());
        match kind {
            Kind::Encoded => Ok(Piece::Encoded(Encoded::checked(pixels, words)?)),
            Kind::Raw if size(2) => Ok(Piece::Raw { pixels, words }),
            Kind::Wide if size(WIDE_WORDS) => Ok(Piece::Wide { pixels, words }),
            _ => Err(CompositeError::Corrupt(format!("raw piece of {} words for {pixels} pixels", words.len()))),
        }
    }

    pub fn empty(kind: Kind) -> Piece {
        match kind {
            Kind::Encoded => Piece::Encoded(Encoded { pixels: 0, words: Vec::new() }),
            Kind::Raw => Piece::Raw { pixels: 0, words: Vec::new() },
            Kind::Wide => Piece::Wide { pixels: 0, words: Vec::new() },
        }
    }

    /// Cuts the piece at pixel `bounds` (as [`spans::split`]).
    pub fn split(&self, bounds: &[usize]) -> Vec<Piece> {
        match self {
            Piece::Encoded(e) => spans::split(e, bounds).into_iter().map(Piece::Encoded).collect(),
            Piece::Raw { pixels, words } => {
                raw_parts(*pixels, bounds, words, 2).map(|(pixels, words)| Piece::Raw { pixels, words }).collect()
            }
            Piece::Wide { pixels, words } => raw_parts(*pixels, bounds, words, WIDE_WORDS)
                .map(|(pixels, words)| Piece::Wide { pixels, words })
                .collect(),
        }
    }

    /// Composites pieces of one span in order, on the CPU (all encoded or all raw, as the
    /// exchange sends them).
    pub fn composite(pieces: &[&Piece], op: Op) -> Result<Piece> {
        if let Some(Piece::Encoded(_)) = pieces.first() {
            let encoded: Vec<&Encoded> = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Encoded(e) => Some(e),
                    Piece::Raw { .. } | Piece::Wide { .. } => None,
                })
                .collect();
            return Ok(Piece::Encoded(composite(&encoded, op)?));
        }
        let pixels = pieces[0].pixels();
        let words: Vec<&[u32]> = pieces.iter().map(|p| p.words()).collect();
        match pieces[0] {
            Piece::Wide { .. } => Ok(Piece::Wide { pixels, words: composite_wide(&words, pixels, op) }),
            _ => Ok(Piece::Raw { pixels, words: composite_raw(&words, pixels, op) }),
        }
    }
}

/// The parts of a raw span of `pixels` pixels of `per` words each, cut at `bounds`, as
/// (pixels, words); a span without words (a [`Piece::Wide`] with nothing drawn) gives parts
/// without words.
fn raw_parts<'a>(
    pixels: usize,
    bounds: &'a [usize],
    words: &'a [u32],
    per: usize,
) -> impl Iterator<Item = (usize, Vec<u32>)> + 'a {
    let ends = bounds.iter().copied().chain(std::iter::once(pixels));
    let mut start = 0;
    ends.map(move |end| {
        let part = if words.is_empty() { Vec::new() } else { words[per * start..per * end].to_vec() };
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
                Piece::Wide { words, .. } => {
                    for (i, px) in words.chunks_exact(WIDE_WORDS).enumerate() {
                        (frame.color[start + i], frame.depth[start + i]) = wide_as_rgba8(px);
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
