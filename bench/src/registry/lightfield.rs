//! The light-field codec's kernels (`lightfield::gpu::{encode, decode}` on a `GpuCodec`):
//! sparse encoding of patches against an ensemble of 5-mode dictionaries and their
//! decoding, at a workgroup size per patch, checked against the CPU twins. Input: `size`
//! patches of the paper's 5x5x8x8x3 shape with deterministic samples and a random
//! 8-dictionary ensemble (fixed seed).

use engine::{Context, Result};
use lightfield::codes::{Codes, Limit, Params};
use lightfield::cpu::decode::decode_patches_cpu;
use lightfield::cpu::encode::encode_patches_cpu;
use lightfield::dictionary::Ensemble;
use lightfield::gpu::GpuCodec;
use lightfield::patch::PatchShape;

use super::{
    fits_workgroup, time_calls, unit_floats, Check, Config, Floor, Kernel, Measured, Param, Reps, Shader, Sizes,
};

/// Encoding or decoding.
pub enum Codec {
    Encode,
    Decode,
}

/// The encoder's registry name, the key of its tuned workgroup in the tuning file.
pub const ENCODE: &str = "lightfield.encode";
/// The decoder's registry name, the key of its tuned workgroup in the tuning file.
pub const DECODE: &str = "lightfield.decode";

const SHAPE: PatchShape = PatchShape::PAPER;
const DICTIONARIES: usize = 8;
const PARAMS: Params = Params { sparsity: 400, epsilon: 0.02 };

to_engine_for!(lightfield::LfError, Unsupported);

/// Patches whose codes differ between two encodings (float ties of the reductions' order
/// may flip a choice).
fn mismatches(a: &Codes, b: &Codes) -> usize {
    (0..a.membership.len())
        .filter(|&p| {
            a.membership[p] != b.membership[p]
                || a.locations[a.offsets[p]..a.offsets[p + 1]] != b.locations[b.offsets[p]..b.offsets[p + 1]]
        })
        .count()
}

impl Kernel for Codec {
    fn params(&self) -> Vec<Param> {
        let name = match self {
            Codec::Encode => ENCODE,
            Codec::Decode => DECODE,
        };
        // The app reads a tuned workgroup only from these (`kit::tuning::READ`).
        let values = kit::tuning::accepted(name, "workgroup").expect("kit::tuning::READ lists both");
        vec![Param::new("workgroup", values, 256, "invocations per patch (GpuCodec::with_workgroup)")]
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "patches", default: &[4096, 16384], tiny: [3, 8], max: 1 << 20 }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Samples in and out, host and device, and the codes (at most T per patch).
        size * SHAPE.len() as u64 * 4 * 6 + size * PARAMS.sparsity as u64 * 16 + (16 << 20)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let wg = config.get("workgroup");
        fits_workgroup(ctx, wg)?;
        let (n, plen) = (size as usize, SHAPE.len());
        let mode_sum: usize = SHAPE.modes().iter().sum();
        let ens = Ensemble::random(SHAPE, DICTIONARIES, 5);
        let codec = GpuCodec::with_workgroup(ctx, &ens, wg).map_err(to_engine)?;
        let patches: Vec<f32> = unit_floats(n * plen, 9);
        let limits: Vec<Limit> = (0..n).map(|_| Limit::new(PARAMS, plen, plen, 1.0, mode_sum)).collect();
        let (codes, _) = codec.encode_patches(&patches, &limits, PARAMS).map_err(to_engine)?;
        let steps: Vec<f32> = limits.iter().map(|l| l.step).collect();
        let decode = |codes: &Codes| -> Result<(Vec<f32>, f64)> {
            let mut out = vec![0.0f32; n * plen];
            let t = codec
                .decode_stream(codes, &steps, |range, s| out[range.start * plen..range.end * plen].copy_from_slice(s))
                .map_err(to_engine)?;
            Ok((out, t.kernel_ms))
        };
        let check = match self {
            Codec::Encode => {
                let cpu = encode_patches_cpu(&patches, &limits, &ens, PARAMS);
                let bad = mismatches(&codes, &cpu);
                // One patch in a thousand (at least one) may flip on a float tie.
                let allowed = (n / 1000).max(1);
                Check { passed: bad <= allowed, max_error: bad as f64, tolerance: allowed as f64 }
            }
            Codec::Decode => {
                let want = decode_patches_cpu(&codes, &ens, &steps, 0..n);
                let (got, _) = decode(&codes)?;
                Check::close(got.iter().map(|&v| f64::from(v)), want.iter().map(|&v| f64::from(v)), 1e-5)
            }
        };
        let times_ms = time_calls(ctx, reps, || match self {
            Codec::Encode => {
                codec.encode_patches(&patches, &limits, PARAMS).map(|(_, t)| t.kernel_ms).map_err(to_engine)
            }
            Codec::Decode => decode(&codes).map(|(_, ms)| ms),
        })?;
        // The n-mode products: 2 * plen * (sum of modes) FLOPs per patch, per dictionary
        // when encoding (the analysis runs against every dictionary).
        let per_patch = 2 * plen as u64 * mode_sum as u64;
        let floor = match self {
            Codec::Encode => Floor::Flops(size * DICTIONARIES as u64 * per_patch),
            Codec::Decode => Floor::Flops(size * per_patch),
        };
        let spec = codec.spec().to_vec();
        let spirv = match self {
            Codec::Encode => lightfield::shaders::ENCODE,
            Codec::Decode => lightfield::shaders::DECODE,
        };
        Ok(Measured { times_ms, floor, check, shader: Some(Shader { spirv, spec }) })
    }
}
