//! The entropy coder of one section's codes ([`kit::entropy`]'s adaptive binary models under
//! its range coder), written once for the encoder, the decoder and the cost counter.
//!
//! Per patch, in patch order, with models that start afresh in every section (sections
//! decode independently, in parallel):
//! - the dictionary: a flag "same as the previous patch's" (context: whether the previous
//!   patch's flag was set), else its index as a binary tree of ceil(log2 K) decisions, one
//!   model per tree node;
//! - the coefficient count: Exp-Golomb, the prefix conditioned on the class (log2) of the
//!   previous patch's count;
//! - the locations as a significance map in blocks of [`BLOCK`]: per block, from the first
//!   on until the count is reached, a flag "a location of this block is kept" (one model
//!   per block), and in a flagged block one decision per location until the count is
//!   reached (the block's last location inferred when none before it was kept); whenever
//!   as many locations are left as coefficients they are all kept without a decision. One
//!   model per location shared by every dictionary, starting from a prior of a rare
//!   location ([`LOCATION_PRIOR`]). The blocks skip most of a sparse patch's locations:
//!   on rendered light fields 2-10 times fewer decisions than one per location, and from
//!   0.3% more to 10% fewer location bytes.
//! - the levels: a zero flag, a sign (one model per location), and the magnitude less one
//!   as Exp-Golomb, the prefix conditioned on the class of the last magnitude coded at this
//!   location in the section, or where there is none yet on that of the previous magnitude
//!   (the same atoms carry similar magnitudes patch after patch: 3-12% fewer level bits on
//!   rendered light fields than the previous magnitude alone).
//!
//! docs/formats.md has the same in its `.lfc` section.

use kit::entropy::{exp_golomb, Bit, Coder, EntropyError, Prefix, Suffix};

/// Every location model starts at this probability of being kept (in 1/2^16: 0.8%), as if
/// it had seen [`LOCATION_PRIOR_SEEN`] decisions: most locations are rarely kept, and a
/// model that starts at 1/2 pays several bits at each of the P locations before it learns
/// that (on rendered light fields at 0.3 bpp, 21% of the section bytes). Models of a
/// dictionary's own per location, or conditioned on the previous location, cost more in
/// learning than they gained there.
const LOCATION_PRIOR: u32 = 512;
const LOCATION_PRIOR_SEEN: u32 = 16;
/// Locations per block of the significance map (blocks of 8 and 16 took more location
/// bytes; 32 the fewest, with about as few decisions).
const BLOCK: usize = 32;
/// Every block model starts at this probability of holding a kept location (1/16).
const BLOCK_PRIOR: u32 = 4096;
/// Classes of the previous count and of the previous magnitude with prefixes of their own.
const COUNT_BUCKETS: usize = 12;
const MAGNITUDE_BUCKETS: usize = 8;
/// Classes of a location's last magnitude with prefixes of their own.
const LOCATION_BUCKETS: usize = 16;

/// One patch's codes: dictionary, ascending locations and their levels.
#[derive(Clone, Copy, Debug)]
pub struct PatchRef<'a> {
    pub membership: u32,
    pub locations: &'a [u32],
    pub levels: &'a [i32],
}

/// What one patch decodes to (reused patch after patch).
#[derive(Clone, Debug, Default)]
pub struct PatchBuf {
    pub membership: u32,
    pub locations: Vec<u32>,
    pub levels: Vec<i32>,
}

/// The limits every decoded value is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub dictionaries: usize,
    pub patch_len: usize,
    pub sparsity: usize,
}

/// Every model of one section.
pub struct SectionModels {
    limits: Limits,
    tree_depth: u32,
    same: [Bit; 2],
    tree: Vec<Bit>,
    count_prefix: [Prefix; COUNT_BUCKETS],
    count_suffix: Suffix,
    locations: Vec<Bit>,
    blocks: Vec<Bit>,
    zero: Bit,
    signs: Vec<Bit>,
    /// Per location: 0 before any magnitude, else 1 + the class of the last one.
    last_class: Vec<u8>,
    magnitude_prefix: [Prefix; MAGNITUDE_BUCKETS + LOCATION_BUCKETS],
    magnitude_suffix: Suffix,
    previous: Option<(u32, bool)>,
    previous_count: usize,
    previous_magnitude: u64,
}

/// floor(log2(v + 1)), capped at `cap - 1`: a bucket of `v`'s magnitude.
fn bucket(v: u64, cap: usize) -> usize {
    ((63 - (v + 1).leading_zeros()) as usize).min(cap - 1)
}

impl SectionModels {
    pub fn new(limits: Limits) -> SectionModels {
        let tree_depth = (limits.dictionaries.max(1) as u64).next_power_of_two().trailing_zeros();
        SectionModels {
            limits,
            tree_depth,
            same: [Bit::default(); 2],
            tree: vec![Bit::default(); 1 << tree_depth],
            count_prefix: [[Bit::default(); kit::entropy::CLASSES]; COUNT_BUCKETS],
            count_suffix: Default::default(),
            locations: vec![Bit::prior(LOCATION_PRIOR, LOCATION_PRIOR_SEEN); limits.patch_len],
            blocks: vec![Bit::prior(BLOCK_PRIOR, LOCATION_PRIOR_SEEN); limits.patch_len.div_ceil(BLOCK)],
            zero: Bit::default(),
            signs: vec![Bit::default(); limits.patch_len],
            last_class: vec![0; limits.patch_len],
            magnitude_prefix: [[Bit::default(); kit::entropy::CLASSES]; MAGNITUDE_BUCKETS + LOCATION_BUCKETS],
            magnitude_suffix: Default::default(),
            previous: None,
            previous_count: 0,
            previous_magnitude: 0,
        }
    }

    /// Codes one patch: `truth` when encoding (the decoder ignores it; pass
    /// [`PatchRef::NONE`]), into `out` (what was coded or decoded). `max_level` bounds the
    /// level magnitudes of this patch; a decoded value beyond a limit is refused.
    pub fn patch(
        &mut self,
        coder: &mut impl Coder,
        truth: PatchRef<'_>,
        max_level: u64,
        out: &mut PatchBuf,
    ) -> Result<(), EntropyError> {
        let corrupt = EntropyError::Corrupt;
        let k = self.membership(coder, truth.membership)?;
        out.membership = k;
        let count = exp_golomb(
            coder,
            &mut self.count_prefix[bucket(self.previous_count as u64, COUNT_BUCKETS)],
            &mut self.count_suffix,
            truth.locations.len() as u128,
            20,
        )?;
        if count > self.limits.sparsity as u128 {
            return Err(corrupt("a patch's coefficient count (above the sparsity)"));
        }
        let count = count as usize;
        self.previous_count = count;
        out.locations.clear();
        out.levels.clear();
        let plen = self.limits.patch_len;
        let mut loc = 0usize;
        while out.locations.len() < count {
            let left = count - out.locations.len();
            if loc + left > plen {
                return Err(corrupt("a patch's locations (past the patch)"));
            }
            let end = (loc + BLOCK).min(plen);
            let next = truth.locations.get(out.locations.len()).map(|&l| l as usize);
            let any = loc + left == plen || coder.bit(&mut self.blocks[loc / BLOCK], next.is_some_and(|l| l < end))?;
            let mut seen = false;
            while any && loc < end && out.locations.len() < count {
                let left = count - out.locations.len();
                let kept = loc + left == plen || (loc + 1 == end && !seen) || {
                    let is = truth.locations.get(out.locations.len()) == Some(&(loc as u32));
                    coder.bit(&mut self.locations[loc], is)?
                };
                if kept {
                    out.locations.push(loc as u32);
                    seen = true;
                }
                loc += 1;
            }
            loc = end;
        }
        let max_class = 64 - max_level.leading_zeros();
        for (i, &loc) in out.locations.iter().enumerate() {
            let loc = loc as usize;
            let level = truth.levels.get(i).copied().unwrap_or(0);
            if coder.bit(&mut self.zero, level == 0)? {
                out.levels.push(0);
                continue;
            }
            let negative = coder.bit(&mut self.signs[loc], level < 0)?;
            let b = match self.last_class[loc] {
                0 => bucket(self.previous_magnitude, MAGNITUDE_BUCKETS),
                c => MAGNITUDE_BUCKETS + c as usize - 1,
            };
            let m = exp_golomb(
                coder,
                &mut self.magnitude_prefix[b],
                &mut self.magnitude_suffix,
                level.unsigned_abs().saturating_sub(1) as u128,
                max_class,
            )? + 1;
            if m > max_level as u128 {
                return Err(corrupt("a coefficient level (beyond what values in [0, 1] hold)"));
            }
            self.previous_magnitude = m as u64;
            self.last_class[loc] = 1 + bucket(m as u64, LOCATION_BUCKETS) as u8;
            let m = m as i32;
            out.levels.push(if negative { -m } else { m });
        }
        Ok(())
    }

    fn membership(&mut self, coder: &mut impl Coder, k: u32) -> Result<u32, EntropyError> {
        if let Some((previous, was_same)) = self.previous {
            if coder.bit(&mut self.same[was_same as usize], k == previous)? {
                self.previous = Some((previous, true));
                return Ok(previous);
            }
        }
        let mut node = 1usize;
        for i in (0..self.tree_depth).rev() {
            let bit = coder.bit(&mut self.tree[node], (k >> i) & 1 == 1)?;
            node = node << 1 | bit as usize;
        }
        let decoded = (node - (1 << self.tree_depth)) as u32;
        if decoded as usize >= self.limits.dictionaries {
            return Err(EntropyError::Corrupt("a patch's dictionary (beyond K)"));
        }
        self.previous = Some((decoded, false));
        Ok(decoded)
    }
}

impl PatchRef<'_> {
    /// What the decoder passes as the truth it does not have.
    pub const NONE: PatchRef<'static> = PatchRef { membership: 0, locations: &[], levels: &[] };
}

#[cfg(test)]
mod tests {
    use super::*;
    use kit::entropy::{Cost, Decoder, Encoder};

    fn random_patches(rng: &mut kit::fuzz::Rng, n: usize, limits: Limits) -> Vec<PatchBuf> {
        (0..n)
            .map(|_| {
                let mut locations: Vec<u32> = (0..limits.patch_len as u32)
                    .filter(|&l| rng.below(limits.patch_len) < limits.sparsity / 2 + (l as usize % 3))
                    .collect();
                locations.truncate(limits.sparsity);
                if rng.below(7) == 0 {
                    // A patch whose last locations are all kept (the inferred tail).
                    locations =
                        (limits.patch_len - limits.sparsity.min(3)..limits.patch_len).map(|l| l as u32).collect();
                }
                let levels = locations.iter().map(|_| rng.below(61) as i32 - 30).collect();
                PatchBuf { membership: rng.below(limits.dictionaries) as u32, locations, levels }
            })
            .collect()
    }

    #[test]
    fn patches_round_trip_and_cost_what_they_code() {
        let mut rng = kit::fuzz::Rng::new(3);
        // K a power of two and not, one dictionary, many.
        for limits in [
            Limits { dictionaries: 3, patch_len: 75, sparsity: 20 },
            Limits { dictionaries: 1, patch_len: 12, sparsity: 12 },
            Limits { dictionaries: 4096, patch_len: 300, sparsity: 7 },
        ] {
            let patches = random_patches(&mut rng, 300, limits);
            let (mut enc, mut cost) = (Encoder::new(), Cost::default());
            let (mut a, mut b) = (SectionModels::new(limits), SectionModels::new(limits));
            let mut out = PatchBuf::default();
            for p in &patches {
                let truth = PatchRef { membership: p.membership, locations: &p.locations, levels: &p.levels };
                a.patch(&mut enc, truth, 30, &mut out).unwrap();
                assert_eq!((out.membership, &out.locations, &out.levels), (p.membership, &p.locations, &p.levels));
                b.patch(&mut cost, truth, 30, &mut out).unwrap();
            }
            let bytes = enc.finish().unwrap();
            let spent = bytes.len() as f64 * 8.0;
            assert!((spent - cost.0).abs() < 0.01 * cost.0 + 64.0, "coded {spent} bits, counted {}", cost.0);
            let mut dec = Decoder::new(&bytes).unwrap();
            let mut models = SectionModels::new(limits);
            for p in &patches {
                models.patch(&mut dec, PatchRef::NONE, 30, &mut out).unwrap();
                assert_eq!((out.membership, &out.locations, &out.levels), (p.membership, &p.locations, &p.levels));
            }
        }
    }

    #[test]
    fn garbage_decodes_within_the_limits_or_is_refused() {
        let mut rng = kit::fuzz::Rng::new(11);
        let limits = Limits { dictionaries: 5, patch_len: 40, sparsity: 9 };
        for _ in 0..300 {
            let bytes: Vec<u8> = (0..rng.below(60)).map(|_| rng.next_u64() as u8).collect();
            let Ok(mut dec) = Decoder::new(&bytes) else { continue };
            let mut models = SectionModels::new(limits);
            let mut out = PatchBuf::default();
            for _ in 0..50 {
                if models.patch(&mut dec, PatchRef::NONE, 17, &mut out).is_err() {
                    break;
                }
                assert!((out.membership as usize) < limits.dictionaries);
                assert!(out.locations.len() <= limits.sparsity && out.locations.windows(2).all(|w| w[0] < w[1]));
                assert!(out.locations.iter().all(|&l| (l as usize) < limits.patch_len));
                assert!(out.levels.iter().all(|l| l.unsigned_abs() <= 17));
            }
        }
    }
}
