//! The compact model format `.smc` (docs/formats.md): the optimised parameters of every
//! kernel ([`Params`]) quantised per group ([`quant`]), the kernels ordered by the Morton
//! code of their quantised centres ([`order`]), centres coded as differences of those codes
//! and every other value as the residual from a prediction (the previous kernel's value or
//! a constant of the file), all with adaptive binary models under `constriction`'s range
//! coder ([`binary`]).
//!
//! The reader trusts no byte: the CRC and every header field are checked, and the memory
//! budget, before anything is allocated; every decoded integer is checked against its range;
//! the decoded model is validated as every model is.

mod binary;
mod order;
mod quant;

pub use quant::{quantised, Group, Quantiser, Steps, StepsRecord, GROUPS};

use binary::{Coder, Contexts, Cost, Decoder, Encoder};
use order::{bits_for, deinterleave, interleave};

use crate::model::{packed_len, ColorSpace, Model, ModelError, MAX_EXTENT, MAX_KERNELS};
use crate::params::{Layout, Params};

/// Errors encoding or decoding `.smc`.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error(".smc: {0} is corrupt")]
    Corrupt(&'static str),
    #[error(".smc: {0}")]
    Invalid(String),
    #[error(".smc: the range coder failed")]
    Coder,
    #[error(transparent)]
    Budget(#[from] kit::KitError),
}

impl From<CodecError> for ModelError {
    fn from(e: CodecError) -> ModelError {
        match e {
            CodecError::Budget(e) => ModelError::Input(e),
            other => ModelError::Invalid(other.to_string()),
        }
    }
}

impl From<CodecError> for crate::error::SmoeError {
    fn from(e: CodecError) -> crate::error::SmoeError {
        crate::error::SmoeError::Model(e.into())
    }
}

/// The quality (see [`Steps::quality_scale`]) of `.smc` files written without one.
pub const DEFAULT_QUALITY: u32 = 75;
/// The first bytes of a `.smc` file.
pub const MAGIC: &[u8; 4] = b"SMoC";
pub const VERSION: u8 = 1;
/// The largest magnitude class of a residual (its integers are below 2^30, so residuals
/// below 2^31) and of a Morton difference (at most 4 x 30 bits).
const MAX_RESIDUAL_CLASS: u32 = 32;
const MAX_DELTA_CLASS: u32 = 121;
/// The colour covariance S_YY|X a decoded kernel is given: (1/100)^2 per channel, the
/// fitter's colour regularisation. Rendering does not use it.
const DECODED_RESIDUAL: [f64; 6] = [1e-4, 0.0, 1e-4, 0.0, 0.0, 1e-4];
/// Kernels with ln pi this far below the largest are dropped by [`prune`]: their weight is
/// below 1e-9 of the largest prior's wherever both are.
pub const PRUNE_BELOW: f64 = -20.0;

/// How value `i` (past the centre) of each kernel is predicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Predict {
    /// By the previous kernel's value in Morton order (the first kernel's by the constant).
    Previous,
    /// By the constant alone.
    Constant,
    /// By the same kernel's value `i - d` (past the centre) plus the constant: the colour
    /// channels of mu_Y and of each column of G, and the log-diagonal's axes, go together.
    Within(usize),
}

/// The most values back a [`Predict::Within`] may look.
const MAX_WITHIN: usize = 12;

impl Predict {
    /// Its header code: 0 previous, 1 constant, 1 + d within.
    fn code(self) -> u8 {
        match self {
            Predict::Previous => 0,
            Predict::Constant => 1,
            Predict::Within(d) => 1 + d as u8,
        }
    }

    /// The predictor of header code `code` for value `i`; None when the code names a value
    /// outside the kernel's values past the centre (`p`).
    fn from_code(code: u8, i: usize, p: usize) -> Option<Predict> {
        match code {
            0 => Some(Predict::Previous),
            1 => Some(Predict::Constant),
            c if (c as usize - 1) <= MAX_WITHIN && i >= p + (c as usize - 1) => Some(Predict::Within(c as usize - 1)),
            _ => None,
        }
    }

    /// The prediction of value `i` of kernel `this` (its values before `i` known), after
    /// the kernel `previous`.
    fn of(self, i: usize, constant: i64, this: &[i64], previous: Option<&[i64]>) -> i64 {
        match (self, previous) {
            (Predict::Previous, Some(prev)) => prev[i],
            (Predict::Within(d), _) => this[i - d] + constant,
            _ => constant,
        }
    }

    /// The candidates for value `i` of a kernel with `p` coordinates.
    fn candidates(i: usize, p: usize) -> impl Iterator<Item = Predict> {
        let within = (1..=MAX_WITHIN.min(i - p)).map(Predict::Within);
        [Predict::Previous, Predict::Constant].into_iter().chain(within)
    }
}

/// The header's fields the coding of the kernels uses.
struct Header {
    extent: Vec<usize>,
    steps: Steps,
    predict: Vec<Predict>,
    constant: Vec<i64>,
}

/// The per-axis Morton widths and offsets of the centres.
fn centre_bits(quant: &Quantiser) -> Vec<u32> {
    (0..quant.p).map(|i| bits_for((quant.hi[i] - quant.lo[i]) as u64)).collect()
}

fn morton(quant: &Quantiser, bits: &[u32], kernel: &[i64]) -> u128 {
    let coords: Vec<u64> = (0..quant.p).map(|i| (kernel[i] - quant.lo[i]) as u64).collect();
    interleave(&coords, bits)
}

/// Codes (or decodes into `q`) every kernel: the Morton difference, then each value's
/// residual. Encoding, `q` holds the kernels in Morton order; decoding, it is filled.
fn code_kernels(
    coder: &mut impl Coder,
    quant: &Quantiser,
    layout: &Header,
    kernels: usize,
    q: &mut Vec<i64>,
    decoding: bool,
) -> Result<(), CodecError> {
    let (p, stride) = (quant.p, quant.stride);
    let bits = centre_bits(quant);
    let total_bits: u32 = bits.iter().sum();
    let mut centres = Contexts::default();
    let mut values = vec![Contexts::default(); stride - p];
    let mut code = 0u128;
    let mut coords = vec![0u64; p];
    for k in 0..kernels {
        if decoding {
            q.extend(std::iter::repeat_n(0, stride));
        }
        let (before, this) = q.split_at_mut(k * stride);
        let this = &mut this[..stride];
        let previous = (k > 0).then(|| &before[(k - 1) * stride..]);
        let next = if decoding { 0 } else { morton(quant, &bits, this) };
        let delta = centres.unsigned(coder, next.wrapping_sub(code), MAX_DELTA_CLASS)?;
        code = code.checked_add(delta).ok_or(CodecError::Corrupt("a centre"))?;
        if total_bits < 128 && code >> total_bits != 0 {
            return Err(CodecError::Corrupt("a centre"));
        }
        if decoding {
            deinterleave(code, &bits, &mut coords);
            for i in 0..p {
                if coords[i] > (quant.hi[i] - quant.lo[i]) as u64 {
                    return Err(CodecError::Corrupt("a centre"));
                }
                this[i] = quant.lo[i] + coords[i] as i64;
            }
        }
        for (j, ctx) in values.iter_mut().enumerate() {
            let i = p + j;
            let prediction = layout.predict[j].of(i, layout.constant[j], this, previous);
            let residual = ctx.signed(coder, this[i].wrapping_sub(prediction), MAX_RESIDUAL_CLASS)?;
            let value = prediction + residual;
            if !(quant.lo[i]..=quant.hi[i]).contains(&value) {
                return Err(CodecError::Corrupt("a kernel's value"));
            }
            this[i] = value;
        }
    }
    Ok(())
}

/// The predictor of value `i` whose residuals cost the fewest bits over `sample` (kernel
/// indices in Morton order into `q`), and its constant: the median of the values (for
/// [`Predict::Previous`] and [`Predict::Constant`]) or of the differences from the value it
/// predicts from.
fn choose_predictor(q: &[i64], stride: usize, p: usize, i: usize, sample: &[usize]) -> (Predict, i64) {
    let kernel = |k: usize| &q[k * stride..(k + 1) * stride];
    let mut best: Option<(f64, Predict, i64)> = None;
    for predict in Predict::candidates(i, p) {
        let constant = match predict {
            Predict::Within(d) => median(&sample.iter().map(|&k| kernel(k)[i] - kernel(k)[i - d]).collect::<Vec<_>>()),
            _ => median(&sample.iter().map(|&k| kernel(k)[i]).collect::<Vec<_>>()),
        };
        let (mut cost, mut ctx) = (Cost::default(), Contexts::default());
        for &k in sample {
            let prediction = predict.of(i, constant, kernel(k), (k > 0).then(|| kernel(k - 1)));
            // The cost counter never fails.
            let _ = ctx.signed(&mut cost, kernel(k)[i] - prediction, MAX_RESIDUAL_CLASS);
        }
        if best.is_none_or(|b| cost.0 < b.0) {
            best = Some((cost.0, predict, constant));
        }
    }
    best.map_or((Predict::Constant, 0), |(_, predict, constant)| (predict, constant))
}

/// The most kernels the predictors are chosen on (evenly spaced in Morton order).
const PREDICTOR_SAMPLE: usize = 2048;

fn median(values: &[i64]) -> i64 {
    let mut v = values.to_vec();
    let mid = v.len() / 2;
    *v.select_nth_unstable(mid).1
}

/// Zigzag LEB128.
fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// A cursor over the header that refuses to read past its end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.0.len() < n {
            return Err(CodecError::Corrupt("the header (the file is too short)"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<i64, CodecError> {
        let mut z = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            z |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok((z >> 1) as i64 ^ -((z & 1) as i64));
            }
        }
        Err(CodecError::Corrupt("a constant of the header"))
    }
}

/// Encodes `params` with `steps` (values outside the ranges refinement keeps are clamped
/// into them).
pub fn encode(params: &Params, steps: &Steps) -> Result<Vec<u8>, CodecError> {
    steps.check()?;
    let extent = &params.template.extent;
    let kernels = params.len();
    if kernels == 0 || kernels as u64 > MAX_KERNELS {
        return Err(CodecError::Invalid(format!("a model holds 1 to {MAX_KERNELS} kernels, this one {kernels}")));
    }
    let quant = Quantiser::new(extent, steps);
    let (p, stride) = (quant.p, quant.stride);
    let raw = quant.quantise(params);
    let bits = centre_bits(&quant);
    let mut keyed: Vec<(u128, usize)> =
        raw.chunks_exact(stride).enumerate().map(|(k, v)| (morton(&quant, &bits, v), k)).collect();
    keyed.sort_unstable();
    let mut q: Vec<i64> = keyed.iter().flat_map(|&(_, k)| raw[k * stride..(k + 1) * stride].iter().copied()).collect();
    let every = kernels.div_ceil(PREDICTOR_SAMPLE);
    let sample: Vec<usize> = (0..kernels).step_by(every).collect();
    let (predict, constant): (Vec<Predict>, Vec<i64>) =
        (p..stride).map(|i| choose_predictor(&q, stride, p, i, &sample)).unzip();
    let layout = Header { extent: extent.clone(), steps: *steps, predict, constant };
    let mut out = MAGIC.to_vec();
    out.extend([VERSION, p as u8]);
    layout.extent.iter().for_each(|&e| out.extend((e as u16).to_le_bytes()));
    out.extend((kernels as u32).to_le_bytes());
    layout.steps.0.iter().for_each(|s| out.extend(s.to_le_bytes()));
    let mut codes = vec![0u8; (stride - p).div_ceil(2)];
    for (j, &pr) in layout.predict.iter().enumerate() {
        codes[j / 2] |= pr.code() << (4 * (j % 2));
    }
    out.extend(&codes);
    layout.constant.iter().for_each(|&c| put_varint(&mut out, c));
    let mut enc = Encoder::new();
    code_kernels(&mut enc, &quant, &layout, kernels, &mut q, false)?;
    out.extend(enc.finish()?);
    let crc = crc32fast::hash(&out);
    out.extend(crc.to_le_bytes());
    Ok(out)
}

/// Encodes a model (validated; the format holds RGB models only).
pub fn encode_model(model: &Model, steps: &Steps) -> Result<Vec<u8>, ModelError> {
    if model.color_space != ColorSpace::Rgb {
        let space = model.color_space.name();
        return Err(CodecError::Invalid(format!("the format holds RGB models; this one is {space}")).into());
    }
    Ok(encode(&Params::from_model(model)?, steps)?)
}

/// Host bytes per decoded kernel of `p` coordinates: the integers, the values, the colour
/// covariances and the model with its f32-rounded copy.
fn decoded_bytes_per_kernel(p: usize) -> u64 {
    let (stride, d) = (Layout { p }.stride() as u64, p as u64 + 3);
    8 * (2 * stride + 6 + 2 * (1 + d + packed_len(d as usize) as u64))
}

/// Decodes `.smc` bytes into the parameters they hold (the colour covariances, which the
/// file does not hold, set to [`DECODED_RESIDUAL`]).
pub fn decode_params(bytes: &[u8]) -> Result<Params, CodecError> {
    if !bytes.starts_with(MAGIC) {
        return Err(CodecError::Invalid("not a .smc file (bad magic)".into()));
    }
    if bytes.len() < MAGIC.len() + 4 {
        return Err(CodecError::Corrupt("the header (the file is too short)"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(CodecError::Corrupt("the file (CRC mismatch)"));
    }
    let mut r = Reader(&body[MAGIC.len()..]);
    let version = r.u8()?;
    if version != VERSION {
        return Err(CodecError::Invalid(format!("unsupported version {version}")));
    }
    let p = r.u8()? as usize;
    if p != 2 && p != 4 {
        return Err(CodecError::Invalid(format!("unsupported coord_dims {p} (2 or 4)")));
    }
    let mut extent = Vec::new();
    for _ in 0..p {
        let e = u16::from_le_bytes([r.u8()?, r.u8()?]);
        if !(1..=MAX_EXTENT).contains(&(e as u64)) {
            return Err(CodecError::Invalid(format!("an extent of {e}; each side is 1..={MAX_EXTENT}")));
        }
        extent.push(e as usize);
    }
    let kernels = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes")) as u64;
    if !(1..=MAX_KERNELS).contains(&kernels) {
        return Err(CodecError::Invalid(format!("{kernels} kernels; a model holds 1 to {MAX_KERNELS}")));
    }
    let mut steps = [0f32; GROUPS];
    for s in &mut steps {
        *s = f32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes"));
    }
    let steps = Steps(steps);
    steps.check()?;
    let quant = Quantiser::new(&extent, &steps);
    let stride = quant.stride;
    let codes = r.take((stride - p).div_ceil(2))?;
    let nibble = |j: usize| codes[j / 2] >> (4 * (j % 2)) & 15;
    let predict = (0..stride - p)
        .map(|j| Predict::from_code(nibble(j), p + j, p))
        .collect::<Option<Vec<Predict>>>()
        .ok_or(CodecError::Corrupt("the predictors"))?;
    if (stride - p) % 2 == 1 && nibble(stride - p) != 0 {
        return Err(CodecError::Corrupt("the predictors"));
    }
    let mut constant = Vec::with_capacity(stride - p);
    for (j, pr) in predict.iter().enumerate() {
        let c = r.varint()?;
        // A constant added to another value is a difference of the two values' ranges.
        let (i, lo, hi) = (p + j, &quant.lo, &quant.hi);
        let ok = match *pr {
            Predict::Within(d) => (lo[i] - hi[i - d]..=hi[i] - lo[i - d]).contains(&c),
            _ => (lo[i]..=hi[i]).contains(&c),
        };
        if !ok {
            return Err(CodecError::Corrupt("a constant of the header"));
        }
        constant.push(c);
    }
    kit::budget::elements(&[kernels, decoded_bytes_per_kernel(p)], 1, "the decoded .smc model")?;
    let kernels = kernels as usize;
    let layout = Header { extent, steps, predict, constant };
    let mut dec = Decoder::new(r.0)?;
    let mut q = Vec::with_capacity(kernels * stride);
    code_kernels(&mut dec, &quant, &layout, kernels, &mut q, true)?;
    let template = Model {
        coord_dims: p,
        color_dims: 3,
        color_space: ColorSpace::Rgb,
        extent: layout.extent.clone(),
        pi: Vec::new(),
        mu: Vec::new(),
        cov: Vec::new(),
    };
    Ok(Params {
        layout: Layout { p },
        extent: layout.extent.iter().map(|&e| e as f64).collect(),
        template,
        v: quant.values(&q),
        resid: DECODED_RESIDUAL.repeat(kernels),
    })
}

/// Decodes `.smc` bytes into a model that passes [`Model::validate`].
pub fn decode(bytes: &[u8]) -> Result<Model, ModelError> {
    decode_params(bytes)?.to_model()
}

/// `params` without the kernels whose ln pi is [`PRUNE_BELOW`] or more below the largest
/// (at least one kernel is kept).
pub fn prune(params: &Params) -> Params {
    let stride = params.layout.stride();
    let theta = params.offsets().2;
    let max = params.max_theta();
    let keep: Vec<usize> = (0..params.len()).filter(|&k| params.v[k * stride + theta] - max > PRUNE_BELOW).collect();
    Params {
        v: keep.iter().flat_map(|&k| params.v[k * stride..(k + 1) * stride].iter().copied()).collect(),
        resid: keep.iter().flat_map(|&k| params.resid[k * 6..(k + 1) * 6].iter().copied()).collect(),
        ..params.clone()
    }
}

/// The encoding of `params` at the finest step scale (within [`Steps::SCALES`], bisected in
/// log scale to within 1%) whose file is at most `budget` bytes, and that scale; None when
/// even the coarsest is larger.
pub fn encode_within(params: &Params, budget: usize) -> Result<Option<(Vec<u8>, f64)>, CodecError> {
    let (mut lo, mut hi) = (Steps::SCALES.0.log2(), Steps::SCALES.1.log2());
    let at = |log_scale: f64| encode(params, &Steps::scaled(log_scale.exp2()));
    let coarsest = at(hi)?;
    if coarsest.len() > budget {
        return Ok(None);
    }
    let finest = at(lo)?;
    if finest.len() <= budget {
        return Ok(Some((finest, lo.exp2())));
    }
    let mut best = (coarsest, hi.exp2());
    while hi - lo > 0.015 {
        let mid = 0.5 * (lo + hi);
        let bytes = at(mid)?;
        if bytes.len() <= budget {
            best = (bytes, mid.exp2());
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(best))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parameters of `k` random kernels over `extent`: sizes of 1 to 20 pixels, shears
    /// within +-1, every other value spread over its range and a tenth beyond it (clamped).
    pub(crate) fn random_params(extent: &[usize], k: usize, seed: u64) -> Params {
        let p = extent.len();
        let stride = Layout { p }.stride();
        let mut rng = kit::fuzz::Rng::new(seed);
        let quant = Quantiser::new(extent, &Steps::scaled(1.0));
        let mut v = Vec::with_capacity(k * stride);
        for _ in 0..k {
            for i in 0..stride {
                let (lo, hi) = match Group::of(p, i) {
                    Group::LogDiag => (-3.0, 0.0),
                    Group::Shear => (-1.0, 1.0),
                    _ => (quant.value(i, quant.lo[i]), quant.value(i, quant.hi[i])),
                };
                let t = rng.uniform() * 1.2 - 0.1;
                v.push(lo + t * (hi - lo));
            }
        }
        let template = Model {
            coord_dims: p,
            color_dims: 3,
            color_space: ColorSpace::Rgb,
            extent: extent.to_vec(),
            pi: Vec::new(),
            mu: Vec::new(),
            cov: Vec::new(),
        };
        Params {
            layout: Layout { p },
            extent: extent.iter().map(|&e| e as f64).collect(),
            template,
            v,
            resid: DECODED_RESIDUAL.repeat(k),
        }
    }

    /// Every decoded value is the quantised value (the same multiset of kernels, in Morton
    /// order), within half a step of the encoded one where that was in range, and the
    /// decoded model is valid; for images and light fields at several scales.
    #[test]
    fn decoded_values_are_the_quantised_ones_within_half_a_step() {
        for (extent, seed) in [(vec![37usize, 29], 1u64), (vec![9, 7, 3, 2], 2)] {
            let params = random_params(&extent, 60, seed);
            let stride = params.layout.stride();
            let theta = params.offsets().2;
            for scale in [0.01, 0.3, 1.0, 7.0, 300.0] {
                let steps = Steps::scaled(scale);
                let quant = Quantiser::new(&extent, &steps);
                let bytes = encode(&params, &steps).unwrap();
                let decoded = decode_params(&bytes).unwrap();
                decoded.to_model().unwrap().validate().unwrap();
                let sorted = |v: &[f64]| {
                    let mut rows: Vec<Vec<i64>> = v
                        .chunks_exact(stride)
                        .map(|k| k.iter().enumerate().map(|(i, &x)| (x / quant.value(i, 1)).round() as i64).collect())
                        .collect();
                    rows.sort();
                    rows
                };
                let want = quantised(&params, &steps);
                assert_eq!(sorted(&decoded.v), sorted(&want.v), "scale {scale}");
                let max_theta = params.max_theta();
                for (n, (&got, &was)) in want.v.iter().zip(&params.v).enumerate() {
                    let i = n % stride;
                    let was = if i == theta { was - max_theta } else { was };
                    let (lo, hi) = (quant.value(i, quant.lo[i]), quant.value(i, quant.hi[i]));
                    let half = quant.value(i, 1) / 2.0;
                    if (lo..=hi).contains(&was) {
                        assert!(
                            (got - was).abs() <= half * (1.0 + 1e-9),
                            "value {i}: {got} from {was}, step {}",
                            2.0 * half
                        );
                    } else {
                        assert!(got == lo || got == hi, "value {i}: {got} from {was} out of [{lo}, {hi}]");
                    }
                }
            }
        }
    }

    #[test]
    fn budgets_are_never_exceeded_and_finer_steps_take_more_bytes() {
        let params = random_params(&[64, 48], 200, 3);
        let coarse = encode(&params, &Steps::scaled(Steps::SCALES.1)).unwrap().len();
        let fine = encode(&params, &Steps::scaled(Steps::SCALES.0)).unwrap().len();
        assert!(coarse < fine, "{coarse} {fine}");
        assert!(encode_within(&params, coarse - 1).unwrap().is_none());
        let mut last = 0;
        for budget in [coarse, coarse + 1, (coarse + fine) / 3, (coarse + fine) / 2, fine - 1, fine, fine * 2] {
            let (bytes, scale) = encode_within(&params, budget).unwrap().unwrap();
            assert!(bytes.len() <= budget, "{} > {budget}", bytes.len());
            assert!(bytes.len() >= last, "a larger budget gave a smaller file");
            assert_eq!(bytes, encode(&params, &Steps::scaled(scale)).unwrap());
            last = bytes.len();
        }
    }

    #[test]
    fn pruning_drops_negligible_priors_only() {
        let mut params = random_params(&[20, 20], 10, 4);
        let (stride, theta) = (params.layout.stride(), params.offsets().2);
        for k in 0..10 {
            params.v[k * stride + theta] = -(k as f64) * 3.0;
        }
        let pruned = prune(&params);
        // ln pi 0, -3, ..., -18 stay; -21 and below go.
        assert_eq!(pruned.len(), 7);
        assert_eq!(pruned.resid.len(), 7 * 6);
        assert_eq!(&pruned.v[..stride], &params.v[..stride]);
    }

    #[test]
    fn headers_are_checked() {
        let params = random_params(&[16, 12], 5, 5);
        let bytes = encode(&params, &Steps::scaled(1.0)).unwrap();
        let with_crc = |mut b: Vec<u8>| {
            let n = b.len() - 4;
            let crc = crc32fast::hash(&b[..n]);
            b[n..].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let refused = |b: Vec<u8>| decode_params(&with_crc(b)).unwrap_err().to_string();
        let mut b = bytes.clone();
        b[4] = 2;
        assert!(refused(b).contains("unsupported version 2"));
        let mut b = bytes.clone();
        b[5] = 3;
        assert!(refused(b).contains("coord_dims 3"));
        let mut b = bytes.clone();
        b[6..8].copy_from_slice(&20000u16.to_le_bytes());
        assert!(refused(b).contains("extent of 20000"));
        let mut b = bytes.clone();
        b[10..14].copy_from_slice(&0u32.to_le_bytes());
        assert!(refused(b).contains("0 kernels"));
        let mut b = bytes.clone();
        b[14..18].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(refused(b).contains("Centre step NaN"));
        let mut b = bytes.clone();
        b[20] ^= 1;
        assert!(decode_params(&b).unwrap_err().to_string().contains("CRC"));
        assert!(decode_params(&bytes[..7]).is_err());
        assert!(decode_params(b"SMoC").is_err());
    }
}
