//! The spans of partial images that travel between ranks ([`Piece`]: Active Pixel encoded
//! or raw) and the final image that rank 0 gathers from them ([`Gathered`]).

use crate::ap::Encoded;
use crate::cpu::blend::{composite, composite_raw};
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
}

impl Piece {
    pub fn pixels(&self) -> usize {
        match self {
            Piece::Encoded(e) => e.pixels,
            Piece::Raw { pixels, .. } => *pixels,
        }
    }

    pub fn words(&self) -> &[u32] {
        match self {
            Piece::Encoded(e) => &e.words,
            Piece::Raw { words, .. } => words,
        }
    }

    /// The words, as they are sent.
    pub fn into_words(self) -> Vec<u32> {
        match self {
            Piece::Encoded(e) => e.words,
            Piece::Raw { words, .. } => words,
        }
    }

    /// Rebuilds a received piece of `pixels` pixels, checking it before trusting it.
    pub fn received(compressed: bool, pixels: usize, words: Vec<u32>) -> Result<Piece> {
        if compressed {
            Ok(Piece::Encoded(Encoded::checked(pixels, words)?))
        } else if words.len() == 2 * pixels {
            Ok(Piece::Raw { pixels, words })
        } else {
            Err(CompositeError::Corrupt(format!("raw piece of {} words for {pixels} pixels", words.len())))
        }
    }

    pub fn empty(compressed: bool) -> Piece {
        if compressed {
            Piece::Encoded(Encoded { pixels: 0, words: Vec::new() })
        } else {
            Piece::Raw { pixels: 0, words: Vec::new() }
        }
    }

    /// Cuts the piece at pixel `bounds` (as [`spans::split`]).
    pub fn split(&self, bounds: &[usize]) -> Vec<Piece> {
        match self {
            Piece::Encoded(e) => spans::split(e, bounds).into_iter().map(Piece::Encoded).collect(),
            Piece::Raw { pixels, words } => {
                let mut ends = bounds.to_vec();
                ends.push(*pixels);
                let mut start = 0;
                ends.iter()
                    .map(|&end| {
                        let p = Piece::Raw { pixels: end - start, words: words[2 * start..2 * end].to_vec() };
                        start = end;
                        p
                    })
                    .collect()
            }
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
                    Piece::Raw { .. } => None,
                })
                .collect();
            return Ok(Piece::Encoded(composite(&encoded, op)?));
        }
        let pixels = pieces[0].pixels();
        let words: Vec<&[u32]> = pieces.iter().map(|p| p.words()).collect();
        Ok(Piece::Raw { pixels, words: composite_raw(&words, pixels, op) })
    }
}

/// The final image on rank 0: every rank's final span, in pixel order, covering the image.
#[derive(Debug)]
pub struct Gathered {
    pub(crate) spans: Vec<(usize, Piece)>,
}

impl Gathered {
    /// The whole image as a frame (decoding each span in place: no joined copy is made).
    pub fn to_frame(&self, width: u32, height: u32) -> Frame {
        let mut frame = Frame::empty(width, height);
        for (start, piece) in &self.spans {
            match piece {
                Piece::Encoded(e) => frame.paint(e, *start),
                Piece::Raw { words, .. } => frame.paint_raw(words, *start),
            }
        }
        frame
    }
}
