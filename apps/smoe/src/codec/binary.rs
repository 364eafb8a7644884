//! Adaptive binary models, the binarisation of integers into binary decisions, and the
//! coders that run them: `constriction`'s range coder (encoding and decoding) and a cost
//! counter (the bits the range coder would spend, without coding), all behind [`Coder`] so
//! that each binarisation is written once for all three.

use std::borrow::Borrow;
use std::num::NonZeroU32;

use constriction::stream::model::{DecoderModel, EncoderModel, EntropyModel};
use constriction::stream::queue::{DefaultRangeDecoder, DefaultRangeEncoder};
use constriction::stream::{Decode, Encode};

use super::CodecError;

/// Fixed-point bits of every probability.
const PRECISION: usize = 16;
const ONE: u32 = 1 << PRECISION;
/// Neither outcome's probability falls below this (in 1/ONE): a decision costs at most
/// 10 bits and at least 0.0014.
const FLOOR: u32 = 64;
/// The adaptation: the k-th observation moves the probability 1/(k+1) of the way to its
/// outcome (a running frequency), up to the k-th = WINDOW, after which every observation
/// moves it 1/WINDOW (an exponential forgetting of about WINDOW decisions).
const WINDOW: u32 = 64;

/// One adaptive binary model: the probability of a 1, and how many decisions it has seen
/// (up to [`WINDOW`]).
#[derive(Clone, Copy, Debug)]
pub struct Bit {
    one: u32,
    seen: u32,
}

impl Default for Bit {
    fn default() -> Bit {
        Bit { one: ONE / 2, seen: 0 }
    }
}

impl Bit {
    fn update(&mut self, bit: bool) {
        let target = if bit { ONE as i64 } else { 0 };
        let rate = (self.seen + 2).min(WINDOW) as i64;
        let one = self.one as i64 + (target - self.one as i64) / rate;
        self.one = one.clamp(FLOOR as i64, (ONE - FLOOR) as i64) as u32;
        self.seen = (self.seen + 1).min(WINDOW);
    }

    /// The bits coding `bit` costs under this model.
    fn cost(&self, bit: bool) -> f64 {
        let p = if bit { self.one } else { ONE - self.one };
        PRECISION as f64 - (p as f64).log2()
    }
}

/// A [`Bit`]'s probabilities at the moment of coding, as the range coder's model: 0 is the
/// interval [0, ONE - one), 1 the rest.
struct Frozen(u32);

impl EntropyModel<PRECISION> for Frozen {
    type Symbol = bool;
    type Probability = u32;
}

/// A probability in [FLOOR, ONE - FLOOR]: never zero.
fn nonzero(p: u32) -> NonZeroU32 {
    NonZeroU32::new(p).unwrap_or(NonZeroU32::MIN)
}

impl EncoderModel<PRECISION> for Frozen {
    fn left_cumulative_and_probability(&self, bit: impl Borrow<bool>) -> Option<(u32, NonZeroU32)> {
        let zero = ONE - self.0;
        Some(if *bit.borrow() { (zero, nonzero(self.0)) } else { (0, nonzero(zero)) })
    }
}

impl DecoderModel<PRECISION> for Frozen {
    fn quantile_function(&self, quantile: u32) -> (bool, u32, NonZeroU32) {
        let zero = ONE - self.0;
        if quantile < zero {
            (false, 0, nonzero(zero))
        } else {
            (true, zero, nonzero(self.0))
        }
    }
}

/// Codes binary decisions with adaptive models: encoders code `bit` and return it, the
/// decoder ignores it and returns the decoded one; both then update the model.
pub trait Coder {
    fn bit(&mut self, model: &mut Bit, bit: bool) -> Result<bool, CodecError>;
}

/// The range encoder.
pub struct Encoder(DefaultRangeEncoder);

impl Encoder {
    pub fn new() -> Encoder {
        Encoder(DefaultRangeEncoder::new())
    }

    /// The coded bytes: the coder's words big-endian, trailing zero bytes dropped (the
    /// decoder reads missing bytes as zeros, so it sees the same words).
    pub fn finish(self) -> Result<Vec<u8>, CodecError> {
        let words = self.0.into_compressed().map_err(|_| CodecError::Coder)?;
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        Ok(bytes)
    }
}

impl Coder for Encoder {
    fn bit(&mut self, model: &mut Bit, bit: bool) -> Result<bool, CodecError> {
        self.0.encode_symbol(bit, Frozen(model.one)).map_err(|_| CodecError::Coder)?;
        model.update(bit);
        Ok(bit)
    }
}

/// The range decoder of [`Encoder::finish`]'s bytes.
pub struct Decoder(DefaultRangeDecoder);

impl Decoder {
    pub fn new(bytes: &[u8]) -> Result<Decoder, CodecError> {
        let words: Vec<u32> = bytes
            .chunks(4)
            .map(|c| {
                let mut w = [0u8; 4];
                w[..c.len()].copy_from_slice(c);
                u32::from_be_bytes(w)
            })
            .collect();
        DefaultRangeDecoder::from_compressed(words).map(Decoder).map_err(|_| CodecError::Coder)
    }
}

impl Coder for Decoder {
    fn bit(&mut self, model: &mut Bit, _: bool) -> Result<bool, CodecError> {
        let bit = self.0.decode_symbol(Frozen(model.one)).map_err(|_| CodecError::Corrupt("the coded data"))?;
        model.update(bit);
        Ok(bit)
    }
}

/// Counts the bits the range encoder would spend.
#[derive(Default)]
pub struct Cost(pub f64);

impl Coder for Cost {
    fn bit(&mut self, model: &mut Bit, bit: bool) -> Result<bool, CodecError> {
        self.0 += model.cost(bit);
        model.update(bit);
        Ok(bit)
    }
}

/// Magnitude classes (Exp-Golomb prefix lengths) with models of their own; longer prefixes
/// share the last.
const CLASSES: usize = 24;
/// Suffix bits, from the top, with models of their own per class; lower bits share one.
const TOP_BITS: usize = 2;

/// The models of one stream of integers. The zero flag and the prefix are conditioned on
/// the magnitude of the stream's previous value (0, 1..=2, more), the suffix bits on
/// their class and position.
#[derive(Clone)]
pub struct Contexts {
    zero: [Bit; 3],
    sign: Bit,
    prefix: [[Bit; CLASSES]; 3],
    suffix: [[Bit; TOP_BITS + 1]; CLASSES],
    previous: u128,
}

impl Default for Contexts {
    fn default() -> Contexts {
        Contexts {
            zero: [Bit::default(); 3],
            sign: Bit::default(),
            prefix: [[Bit::default(); CLASSES]; 3],
            suffix: [[Bit::default(); TOP_BITS + 1]; CLASSES],
            previous: 0,
        }
    }
}

impl Contexts {
    fn bucket(&self) -> usize {
        match self.previous {
            0 => 0,
            1..=2 => 1,
            _ => 2,
        }
    }

    /// Codes `value` (ignored when decoding) as an order-0 Exp-Golomb code: the class
    /// c = floor(log2(value + 1)) in unary, then the c bits of value + 1 below its leading
    /// one. A class above `max_class` is refused.
    pub fn unsigned(&mut self, coder: &mut impl Coder, value: u128, max_class: u32) -> Result<u128, CodecError> {
        let bucket = self.bucket();
        let plus = value.saturating_add(1);
        let class_of = 127 - plus.leading_zeros();
        let mut class = 0u32;
        while coder.bit(&mut self.prefix[bucket][(class as usize).min(CLASSES - 1)], class < class_of)? {
            class += 1;
            if class > max_class {
                return Err(CodecError::Corrupt("a value's length"));
            }
        }
        let models = &mut self.suffix[(class as usize).min(CLASSES - 1)];
        let mut rest = 0u128;
        for i in (0..class).rev() {
            let from_top = (class - 1 - i) as usize;
            let bit = coder.bit(&mut models[from_top.min(TOP_BITS)], (plus >> i) & 1 == 1)?;
            rest |= (bit as u128) << i;
        }
        let value = ((1u128 << class) | rest) - 1;
        self.previous = value;
        Ok(value)
    }

    /// Codes `value` (ignored when decoding): a zero flag, then a sign and the magnitude
    /// less one ([`Contexts::unsigned`]). A magnitude of 2^`max_class` or more is refused.
    pub fn signed(&mut self, coder: &mut impl Coder, value: i64, max_class: u32) -> Result<i64, CodecError> {
        let bucket = self.bucket();
        if coder.bit(&mut self.zero[bucket], value == 0)? {
            self.previous = 0;
            return Ok(0);
        }
        let negative = coder.bit(&mut self.sign, value < 0)?;
        let magnitude = self.unsigned(coder, value.unsigned_abs().saturating_sub(1) as u128, max_class)? + 1;
        self.previous = magnitude;
        // max_class < 63 keeps the magnitude within i64.
        let magnitude = i64::try_from(magnitude).map_err(|_| CodecError::Corrupt("a value's length"))?;
        Ok(if negative { -magnitude } else { magnitude })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_and_cost_what_they_code() {
        let mut rng = kit::fuzz::Rng::new(5);
        let values: Vec<i64> = (0..3000)
            .map(|i| {
                let scale = [0u64, 1, 3, 40, 5000, 1 << 30][i % 6];
                let m = rng.below(scale as usize + 1) as i64;
                if rng.below(2) == 0 {
                    -m
                } else {
                    m
                }
            })
            .collect();
        let deltas: Vec<u128> = (0..500).map(|i| (rng.next_u64() as u128) << (i % 50)).collect();
        let (mut enc, mut cost) = (Encoder::new(), Cost::default());
        for coder in [&mut enc as &mut dyn CoderDyn, &mut cost] {
            let (mut a, mut b) = (Contexts::default(), Contexts::default());
            for &v in &values {
                assert_eq!(coder.signed(&mut a, v), v);
            }
            for &d in &deltas {
                assert_eq!(coder.unsigned(&mut b, d), d);
            }
        }
        let bytes = enc.finish().unwrap();
        let spent = bytes.len() as f64 * 8.0;
        assert!((spent - cost.0).abs() < 0.01 * cost.0 + 64.0, "coded {spent} bits, counted {}", cost.0);
        let mut dec = Decoder::new(&bytes).unwrap();
        let (mut a, mut b) = (Contexts::default(), Contexts::default());
        for &v in &values {
            assert_eq!(a.signed(&mut dec, 0, 40).unwrap(), v);
        }
        for &d in &deltas {
            assert_eq!(b.unsigned(&mut dec, 0, 120).unwrap(), d);
        }
    }

    /// Both coders behind one object type, for the test's loop.
    trait CoderDyn {
        fn signed(&mut self, c: &mut Contexts, v: i64) -> i64;
        fn unsigned(&mut self, c: &mut Contexts, v: u128) -> u128;
    }

    impl<C: Coder> CoderDyn for C {
        fn signed(&mut self, c: &mut Contexts, v: i64) -> i64 {
            c.signed(self, v, 40).unwrap()
        }
        fn unsigned(&mut self, c: &mut Contexts, v: u128) -> u128 {
            c.unsigned(self, v, 120).unwrap()
        }
    }

    #[test]
    fn garbage_decodes_or_is_refused() {
        let mut rng = kit::fuzz::Rng::new(9);
        for _ in 0..200 {
            let bytes: Vec<u8> = (0..rng.below(40)).map(|_| rng.next_u64() as u8).collect();
            let Ok(mut dec) = Decoder::new(&bytes) else { continue };
            let mut c = Contexts::default();
            for _ in 0..100 {
                if c.signed(&mut dec, 0, 40).is_err() {
                    break;
                }
            }
        }
    }
}
