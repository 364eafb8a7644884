//! The context-modelled coder of one section's codes (`.lfc` version 5): a binary range
//! coder with adaptive probabilities (the carry-propagating coder of LZMA, 12-bit
//! probabilities), and the models that code a section's patches with it.
//!
//! Per patch, in patch order, with models that start afresh in every section (sections
//! decode independently, in parallel):
//! - the dictionary: a flag "same as the previous patch's" (context: the previous flag),
//!   else its index as a binary tree of ceil(log2 K) decisions, one model per tree node;
//! - the coefficient count: adaptive Exp-Golomb, the prefix conditioned on the class
//!   (log2) of the previous patch's count;
//! - the coefficients in the dictionary's scan order ([`Scan`]: colour planes one after
//!   the other, within a plane atoms of few sign changes first, so low frequencies first
//!   for the DCT), each as the run of scan positions skipped since the last one (adaptive
//!   Exp-Golomb, conditioned on the scan context of the next position, its colour plane
//!   and the log2 of its place in the plane, and on the previous run's class) and its
//!   level: the magnitude less one (adaptive Exp-Golomb, conditioned on the scan context of
//!   its position and on the previous magnitude's class) and the sign.
//!
//! A run codes a whole stretch of unkept coefficients in a few decisions, so the work is
//! per kept coefficient, not per location: at 0.3 bits per pixel a 8x8x9x9 patch keeps
//! some tens of its 15,552 coefficients. docs/formats.md has the same in its `.lfc` section.

use crate::dictionary::{mode_offsets, Ensemble};
use crate::patch::MODES;

/// Bits of every probability.
const PROB_BITS: u32 = 12;
const PROB_ONE: u32 = 1 << PROB_BITS;
/// The adaptation: the n-th decision a model sees moves its probability 1/2^min(n, 5) of
/// the way to the outcome (about a running frequency at first, then an exponential
/// forgetting of about 32 decisions).
const MAX_SHIFT: u8 = 5;
/// The range is renormalised (a byte shifted out) whenever it falls below this.
const TOP: u32 = 1 << 24;

/// One adaptive binary model: the probability of a 0 in 1/4096, never 0 or 1.
#[derive(Clone, Copy, Debug)]
pub struct Bit {
    zero: u16,
    shift: u8,
}

impl Default for Bit {
    fn default() -> Bit {
        Bit { zero: (PROB_ONE / 2) as u16, shift: 1 }
    }
}

impl Bit {
    fn update(&mut self, bit: bool) {
        let z = self.zero as u32;
        self.zero = if bit { z - (z >> self.shift) } else { z + ((PROB_ONE - z) >> self.shift) } as u16;
        self.shift = (self.shift + 1).min(MAX_SHIFT);
    }
}

/// Codes binary decisions with adaptive models: the encoder codes `bit` and returns it, the
/// decoder ignores it and returns the decoded one; both then update the model.
pub trait Coder {
    fn bit(&mut self, model: &mut Bit, bit: bool) -> bool;
}

/// The range encoder.
pub struct Encoder {
    low: u64,
    range: u32,
    cache: u8,
    pending: u64,
    out: Vec<u8>,
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder { low: 0, range: u32::MAX, cache: 0, pending: 1, out: Vec::new() }
    }
}

impl Encoder {
    /// Moves the top byte of `low` out, propagating a carry into the bytes held back.
    fn shift_low(&mut self) {
        if (self.low as u32) < 0xFF00_0000 || self.low >> 32 != 0 {
            let carry = (self.low >> 32) as u8;
            let mut byte = self.cache;
            while self.pending > 0 {
                self.out.push(byte.wrapping_add(carry));
                byte = 0xFF;
                self.pending -= 1;
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    /// The coded bytes (the decoder reads exactly these).
    pub fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.out
    }
}

impl Coder for Encoder {
    fn bit(&mut self, model: &mut Bit, bit: bool) -> bool {
        let bound = (self.range >> PROB_BITS) * model.zero as u32;
        if bit {
            self.low += bound as u64;
            self.range -= bound;
        } else {
            self.range = bound;
        }
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
        model.update(bit);
        bit
    }
}

/// The range decoder of [`Encoder::finish`]'s bytes. Past the end it reads zeros and
/// counts them, so a cut or damaged stream decodes to something that [`Decoder::finish`]
/// refuses; it never fails in the middle.
pub struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    code: u32,
    range: u32,
}

impl<'a> Decoder<'a> {
    /// A decoder of `bytes`, or `None` if they cannot be a coded stream (fewer than five
    /// bytes, or a first byte that is not the encoder's leading zero).
    pub fn new(bytes: &'a [u8]) -> Option<Decoder<'a>> {
        if bytes.len() < 5 || bytes[0] != 0 {
            return None;
        }
        let code = u32::from_be_bytes(bytes[1..5].try_into().unwrap());
        Some(Decoder { bytes, pos: 5, code, range: u32::MAX })
    }

    fn next_byte(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// Whether the stream ended exactly where the coded decisions did.
    pub fn finish(&self) -> bool {
        self.pos == self.bytes.len()
    }
}

impl Coder for Decoder<'_> {
    fn bit(&mut self, model: &mut Bit, _: bool) -> bool {
        let bound = (self.range >> PROB_BITS) * model.zero as u32;
        let bit = self.code >= bound;
        if bit {
            self.code -= bound;
            self.range -= bound;
        } else {
            self.range = bound;
        }
        while self.range < TOP {
            self.range <<= 8;
            self.code = (self.code << 8) | self.next_byte() as u32;
        }
        model.update(bit);
        bit
    }
}

/// Exp-Golomb classes with prefix models of their own (longer prefixes share the last).
const PREFIX_MODELS: usize = 24;
/// Suffix bits from the top with models of their own per class; the lower ones share one.
const TOP_BITS: usize = 2;

/// The models of one adaptive Exp-Golomb code: a prefix set per context, suffix models per
/// class.
#[derive(Clone)]
struct Golomb {
    prefix: Vec<[Bit; PREFIX_MODELS]>,
    suffix: [[Bit; TOP_BITS + 1]; PREFIX_MODELS],
}

impl Golomb {
    fn new(contexts: usize) -> Golomb {
        Golomb {
            prefix: vec![[Bit::default(); PREFIX_MODELS]; contexts],
            suffix: [[Bit::default(); TOP_BITS + 1]; PREFIX_MODELS],
        }
    }

    /// Codes `value` (ignored when decoding) in context `ctx`: the class
    /// c = floor(log2(value + 1)) in unary (no terminating 0 at `max_class`), then the c
    /// bits of value + 1 below its leading one. Decoded values are below 2^(max_class + 1).
    fn code(&mut self, coder: &mut impl Coder, ctx: usize, value: u64, max_class: u32) -> u64 {
        let class = 63 - (value + 1).leading_zeros();
        let prefix = &mut self.prefix[ctx];
        let mut c = 0;
        while c < max_class && coder.bit(&mut prefix[(c as usize).min(PREFIX_MODELS - 1)], c < class) {
            c += 1;
        }
        let suffix = &mut self.suffix[(c as usize).min(PREFIX_MODELS - 1)];
        let mut v = 1u64;
        for i in (0..c).rev() {
            let model = &mut suffix[((c - 1 - i) as usize).min(TOP_BITS)];
            v = v << 1 | coder.bit(model, (value + 1) >> i & 1 == 1) as u64;
        }
        v - 1
    }
}

/// floor(log2(v + 1)), capped at `cap - 1`.
fn class(v: u64, cap: usize) -> usize {
    ((63 - (v + 1).leading_zeros()) as usize).min(cap - 1)
}

/// Classes of a scan position within its colour plane (log2), and planes, with run and
/// level models of their own: a scan context is plane x [`SCAN_CLASSES`] + class.
const SCAN_CLASSES: usize = 16;
const PLANES: usize = 3;
const SCAN_CONTEXTS: usize = SCAN_CLASSES * PLANES;
/// Classes of the previous count, run and magnitude that condition the next one.
const COUNT_CLASSES: usize = 12;
const RUN_CLASSES: usize = 3;
const MAGNITUDE_CLASSES: usize = 3;

/// The scan order of one dictionary: its coefficient locations sorted by the sign changes
/// of their colour atom (a colour plane: at most 2 for 3 colours), then by the sum over the
/// other modes of their atom's sign changes (the frequency of a DCT-II atom), then by
/// location. The colour planes apart code 3-15% fewer location bits than one frequency
/// order over all of them on the rendered scenes (chroma holds far fewer coefficients).
/// Encoder and decoder derive it alike from the stored ensemble.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    /// Scan position -> location.
    pub order: Vec<u32>,
    /// Location -> scan position.
    pub position: Vec<u32>,
    /// Scan position -> its scan context.
    pub context: Vec<u8>,
}

impl Scan {
    pub fn new(ens: &Ensemble, k: usize) -> Scan {
        let modes = ens.shape.modes();
        let (offsets, _) = mode_offsets(ens.shape);
        let dict = ens.dictionary(k);
        // changes[n][i]: sign changes along atom i (column i) of mode n's matrix.
        let changes: Vec<Vec<u32>> = (0..MODES)
            .map(|n| {
                let m = modes[n];
                let u = &dict[offsets[n]..offsets[n] + m * m];
                (0..m)
                    .map(|i| {
                        let column: Vec<f32> = (0..m).map(|t| u[t * m + i]).filter(|&x| x != 0.0).collect();
                        column.windows(2).filter(|w| (w[0] < 0.0) != (w[1] < 0.0)).count() as u32
                    })
                    .collect()
            })
            .collect();
        let len = ens.shape.len();
        let strides = ens.shape.strides();
        let atom = |j: usize, n: usize| changes[n][j / strides[n] % modes[n]];
        let plane = |j: usize| (atom(j, MODES - 1) as usize).min(PLANES - 1);
        // Each entry's key once (a comparison sort would rebuild it a dozen times an entry);
        // the key ends in the entry itself, so an unstable sort gives the one order.
        let keys: Vec<(usize, u32)> =
            (0..len).map(|j| (plane(j), (0..MODES - 1).map(|n| atom(j, n)).sum::<u32>())).collect();
        let mut order: Vec<u32> = (0..len as u32).collect();
        order.sort_unstable_by_key(|&j| (keys[j as usize], j));
        let mut position = vec![0u32; len];
        let mut context = Vec::with_capacity(len);
        let mut start = 0;
        for (s, &j) in order.iter().enumerate() {
            position[j as usize] = s as u32;
            let c = plane(j as usize);
            if s > 0 && c != plane(order[s - 1] as usize) {
                start = s;
            }
            context.push((c * SCAN_CLASSES + class((s - start) as u64, SCAN_CLASSES)) as u8);
        }
        Scan { order, position, context }
    }

    /// The scan context of position `s`; without a scan (location order), its class alone.
    pub fn context_of(scan: Option<&Scan>, s: u64) -> usize {
        scan.map_or_else(|| class(s, SCAN_CLASSES), |scan| scan.context[s as usize] as usize)
    }
}

/// Every dictionary's scan order.
pub fn scans(ens: &Ensemble) -> Vec<Scan> {
    use rayon::prelude::*;
    (0..ens.k).into_par_iter().map(|k| Scan::new(ens, k)).collect()
}

/// The limits every decoded value is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub dictionaries: usize,
    pub patch_len: usize,
    pub sparsity: usize,
}

/// Why a section's coded patches were refused.
pub type Refusal = &'static str;

/// Every model of one section.
pub struct SectionModels {
    limits: Limits,
    tree_depth: u32,
    same: [Bit; 2],
    tree: Vec<Bit>,
    count: Golomb,
    run: Golomb,
    magnitude: Golomb,
    sign: Bit,
    previous: Option<(u32, bool)>,
    previous_count: u64,
    position_class: u32,
}

impl SectionModels {
    pub fn new(limits: Limits) -> SectionModels {
        let tree_depth = (limits.dictionaries.max(1) as u64).next_power_of_two().trailing_zeros();
        SectionModels {
            limits,
            tree_depth,
            same: [Bit::default(); 2],
            tree: vec![Bit::default(); 1 << tree_depth],
            count: Golomb::new(COUNT_CLASSES),
            run: Golomb::new(SCAN_CONTEXTS * RUN_CLASSES),
            magnitude: Golomb::new(SCAN_CONTEXTS * MAGNITUDE_CLASSES),
            sign: Bit::default(),
            previous: None,
            previous_count: 0,
            position_class: 64 - (limits.patch_len as u64).leading_zeros(),
        }
    }

    /// Codes one patch's coefficients as (scan position, level) pairs ascending in scan
    /// position, in the scan of its dictionary (`None`: location order): `truth` when
    /// encoding (the decoder passes an empty slice), the pairs coded or decoded into `out`.
    /// `max_level` bounds this patch's level magnitudes (and must be at least 1); a decoded
    /// value beyond a limit is refused. The patch's dictionary ([`Self::membership`]) comes
    /// first.
    pub fn coefficients(
        &mut self,
        coder: &mut impl Coder,
        scan: Option<&Scan>,
        truth: &[(u32, i32)],
        max_level: u64,
        out: &mut Vec<(u32, i32)>,
    ) -> Result<(), Refusal> {
        let ctx = class(self.previous_count, COUNT_CLASSES);
        let max_count = self.limits.sparsity.min(self.limits.patch_len) as u64;
        let count = self.count.code(coder, ctx, truth.len() as u64, 64 - max_count.leading_zeros());
        if count > max_count {
            return Err("a patch's coefficient count (above the sparsity)");
        }
        self.previous_count = count;
        out.clear();
        let plen = self.limits.patch_len as u64;
        let max_class = 64 - max_level.leading_zeros();
        let (mut next, mut run_class, mut magnitude_class) = (0u64, 0, 0);
        for i in 0..count as usize {
            let (at, level) = truth.get(i).copied().unwrap_or((0, 0));
            let ctx = Scan::context_of(scan, next) * RUN_CLASSES + run_class;
            let run = self.run.code(coder, ctx, at as u64 - next.min(at as u64), self.position_class);
            let position = next + run;
            // The coefficients still to come need a position each after this one.
            if position + (count - i as u64) > plen {
                return Err("a patch's coefficient locations (past the patch)");
            }
            run_class = class(run, RUN_CLASSES);
            let ctx = Scan::context_of(scan, position) * MAGNITUDE_CLASSES + magnitude_class;
            let m = self.magnitude.code(coder, ctx, level.unsigned_abs().saturating_sub(1) as u64, max_class) + 1;
            if m > max_level {
                return Err("a coefficient level (beyond what values in [0, 1] hold)");
            }
            magnitude_class = class(m - 1, MAGNITUDE_CLASSES);
            let negative = coder.bit(&mut self.sign, level < 0);
            out.push((position as u32, if negative { -(m as i32) } else { m as i32 }));
            next = position + 1;
        }
        Ok(())
    }

    /// Codes a patch's dictionary `k` (ignored when decoding).
    pub fn membership(&mut self, coder: &mut impl Coder, k: u32) -> Result<u32, Refusal> {
        if let Some((previous, was_same)) = self.previous {
            if coder.bit(&mut self.same[was_same as usize], k == previous) {
                self.previous = Some((previous, true));
                return Ok(previous);
            }
        }
        let mut node = 1usize;
        for i in (0..self.tree_depth).rev() {
            let bit = coder.bit(&mut self.tree[node], (k >> i) & 1 == 1);
            node = node << 1 | bit as usize;
        }
        let decoded = (node - (1 << self.tree_depth)) as u32;
        if decoded as usize >= self.limits.dictionaries {
            return Err("a patch's dictionary (beyond K)");
        }
        self.previous = Some((decoded, false));
        Ok(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchShape;

    fn random_patches(rng: &mut kit::fuzz::Rng, n: usize, limits: Limits) -> Vec<(u32, Vec<(u32, i32)>)> {
        (0..n)
            .map(|_| {
                let mut positions: Vec<u32> = (0..limits.patch_len as u32)
                    .filter(|&l| rng.below(limits.patch_len) < limits.sparsity / 2 + (l as usize % 3))
                    .collect();
                positions.truncate(limits.sparsity);
                if rng.below(7) == 0 {
                    // A patch whose last positions are all kept.
                    let from = limits.patch_len - limits.sparsity.min(3);
                    positions = (from..limits.patch_len).map(|l| l as u32).collect();
                }
                let pairs = positions
                    .into_iter()
                    .map(|s| (s, if rng.below(2) == 0 { 1 } else { -1 } * (1 + rng.below(30) as i32)))
                    .collect();
                (rng.below(limits.dictionaries) as u32, pairs)
            })
            .collect()
    }

    #[test]
    fn patches_round_trip_through_the_range_coder() {
        let mut rng = kit::fuzz::Rng::new(3);
        for limits in [
            Limits { dictionaries: 3, patch_len: 75, sparsity: 20 },
            Limits { dictionaries: 1, patch_len: 12, sparsity: 12 },
            Limits { dictionaries: 4096, patch_len: 300, sparsity: 7 },
        ] {
            let patches = random_patches(&mut rng, 300, limits);
            let mut enc = Encoder::default();
            let mut models = SectionModels::new(limits);
            let mut out = Vec::new();
            let shape = PatchShape { my: 1, mx: 1, mu: 1, mv: limits.patch_len / 3 };
            let scan = Scan::new(&Ensemble::dct(shape), 0);
            // The scan where P is a multiple of the 3 colours, location order otherwise.
            let scan = (shape.len() == limits.patch_len).then_some(&scan);
            for (k, pairs) in &patches {
                assert_eq!(models.membership(&mut enc, *k), Ok(*k));
                models.coefficients(&mut enc, scan, pairs, 30, &mut out).unwrap();
                assert_eq!(&out, pairs);
            }
            let bytes = enc.finish();
            let mut dec = Decoder::new(&bytes).unwrap();
            let mut models = SectionModels::new(limits);
            for (k, pairs) in &patches {
                assert_eq!(models.membership(&mut dec, 0), Ok(*k));
                models.coefficients(&mut dec, scan, &[], 30, &mut out).unwrap();
                assert_eq!(&out, pairs);
            }
            assert!(dec.finish(), "the decoder stops at the stream's end");
        }
    }

    #[test]
    fn garbage_decodes_within_the_limits_or_is_refused() {
        let mut rng = kit::fuzz::Rng::new(11);
        let limits = Limits { dictionaries: 5, patch_len: 40, sparsity: 9 };
        for _ in 0..300 {
            let mut bytes: Vec<u8> = (0..rng.below(60)).map(|_| rng.next_u64() as u8).collect();
            if let Some(b) = bytes.first_mut() {
                *b = 0;
            }
            let Some(mut dec) = Decoder::new(&bytes) else { continue };
            let mut models = SectionModels::new(limits);
            let mut out = Vec::new();
            for _ in 0..50 {
                let Ok(k) = models.membership(&mut dec, 0) else { break };
                assert!((k as usize) < limits.dictionaries);
                if models.coefficients(&mut dec, None, &[], 17, &mut out).is_err() {
                    break;
                }
                assert!(out.len() <= limits.sparsity && out.windows(2).all(|w| w[0].0 < w[1].0));
                assert!(out.iter().all(|&(s, l)| (s as usize) < limits.patch_len && l != 0 && l.abs() <= 17));
            }
        }
    }

    #[test]
    fn the_dct_scan_puts_low_frequencies_first_and_is_a_permutation() {
        let shape = PatchShape { my: 3, mx: 4, mu: 2, mv: 5 };
        let scan = Scan::new(&Ensemble::dct(shape), 0);
        assert_eq!(scan.order[0], 0, "the constant atom first");
        let mut sorted = scan.order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..shape.len() as u32).collect::<Vec<_>>());
        assert!(scan.order.iter().enumerate().all(|(s, &j)| scan.position[j as usize] == s as u32));
        // The highest frequency of every mode (the last location) comes last; the colour
        // planes follow each other (location j has colour atom j % 3), each from class 0.
        let plane = shape.len() / 3;
        assert_eq!(*scan.order.last().unwrap() as usize, shape.len() - 1);
        assert!(scan.order.iter().enumerate().all(|(s, &j)| s / plane == j as usize % 3));
        assert_eq!(scan.context[plane], SCAN_CLASSES as u8);
        assert!(scan.context.iter().all(|&c| (c as usize) < SCAN_CONTEXTS));
    }
}
