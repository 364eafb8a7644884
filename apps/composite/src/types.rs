//! The types the GPU stages ([`crate::gpu`]) and their CPU twins ([`crate::cpu`]) both
//! speak: the region-of-interest box the encoders find, and the compositing operator.

/// Bounding box of the active pixels, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Roi {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl Roi {
    pub fn pixels(&self) -> usize {
        (self.x1 - self.x0 + 1) as usize * (self.y1 - self.y0 + 1) as usize
    }
}

/// A compositing operator (inputs in order, first = front / lowest rank).
///
/// - [`Op::ZBuffer`]: the smallest depth wins; on equal depths the earlier input wins.
/// - [`Op::Over`]: colours are premultiplied RGBA8; `acc = acc + next * (255 - acc.a) / 255`
///   per channel, front to back, each product rounded to nearest (`(x + 127) / 255`) and
///   clamped to 255. The depth kept is the front-most active depth. Integer arithmetic keeps
///   CPU and GPU results identical.
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
    /// The operator as its flag spells it (`--op zbuffer|over`).
    pub fn name(self) -> &'static str {
        match self {
            Op::ZBuffer => "zbuffer",
            Op::Over => "over",
        }
    }

    /// The operator's code in `ap_blend.comp`.
    pub fn code(self) -> u32 {
        match self {
            Op::ZBuffer => 0,
            Op::Over => 1,
        }
    }
}
