//! Measured physical ceilings of a device: copy bandwidth and FP32 FMA throughput. Every
//! benchmark reports its floor as bytes / copy bandwidth or FLOPs / FMA rate measured here.

use serde::Serialize;

use crate::context::Context;
use crate::error::Result;
use crate::kernel::Kernel;
use crate::memory::Location;
use crate::profile::PassTime;
use crate::shaders::kernels;

/// The two ceilings.
#[derive(Clone, Debug, Serialize)]
pub struct Ceilings {
    /// Device-to-device copy by a compute shader, bytes read plus written per second, GB/s.
    pub copy_gb_per_s: f64,
    /// Bytes copied per measured pass.
    pub copy_bytes: u64,
    /// FP32 fused multiply-add throughput, TFLOP/s (2 FLOPs per FMA).
    pub fma_tflop_per_s: f64,
}

/// The FMA probe's push constants (`ceiling_fma.comp`).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FmaPush {
    iterations: u32,
    seed: f32,
}

fn best_ms(passes: &[PassTime], name: &str) -> f64 {
    passes.iter().filter(|p| p.name == name).map(|p| p.ms).fold(f64::INFINITY, f64::min)
}

/// GPU busy time before each timed set, in ms: every benchmark warms up this long. It must
/// cover a clock ramp from idle: a point at a large size spends seconds on the CPU (input,
/// reference, check) while the GPU idles and drops its clocks. With 50 ms, every scan point
/// after the first 2^28 one ran at about a third of the speed on the H200 (2.33 against
/// 0.78 ms at 2^28), and a SoftAssign iteration timed after its CPU reference read 7.84 ms
/// for 2.50.
pub const WARM_UP_MS: u64 = 400;
/// [`WARM_UP_MS`] as a duration, for [`warm_up`].
pub const WARM_UP: std::time::Duration = std::time::Duration::from_millis(WARM_UP_MS);

/// Keeps the GPU busy for about `duration` of wall time with the FMA probe, so that the
/// work timed right after it runs at full clocks. GPUs drop their clocks within seconds of
/// idling (an H100 fell from 1980 to 345-900 MHz between short bursts of benchmark work), and
/// a benchmark that times a short burst after host-side work measures that low-clock state.
pub fn warm_up(ctx: &Context, duration: std::time::Duration) -> Result<()> {
    const WG: u32 = 256;
    let fma = fma_pipeline(ctx, WG)?;
    // Each submission is ~0.1 ms on an H100 (tens of ms on lavapipe): small enough not to
    // overshoot `duration` much, large enough to keep the GPU busy between submissions.
    let groups = 512u32;
    let out = ctx.buffer::<f32>((groups * WG) as usize, Location::Device, "warm-up output")?;
    let start = std::time::Instant::now();
    while start.elapsed() < duration {
        let mut rec = ctx.recorder()?;
        rec.pass(&fma).write(&out).push(&FmaPush { iterations: 512, seed: 1.0 }).dispatch([groups, 1, 1])?;
        rec.submit()?.wait()?;
    }
    Ok(())
}

/// GPU milliseconds of the best of `repeats` compute-shader copies of `bytes` bytes with
/// workgroup size `workgroup` (for `sweep`).
pub fn copy_ms(ctx: &Context, bytes: u64, workgroup: u32, repeats: u32) -> Result<f64> {
    let words = (bytes / 16).max(1) as usize;
    let src = ctx.buffer::<[u32; 4]>(words, Location::Device, "copy probe source")?;
    let dst = ctx.buffer::<[u32; 4]>(words, Location::Device, "copy probe destination")?;
    let copy = copy_pipeline(ctx, workgroup)?;
    let groups = (words as u32).div_ceil(workgroup * 8).clamp(1, 65535);
    best_of_passes(ctx.recorder()?, repeats, |rec| {
        rec.pass(&copy).read(&src).write(&dst).push(&(words as u32)).dispatch([groups, 1, 1])
    })
}

/// GPU milliseconds of the best of `repeats` passes that `pass` records after what `rec`
/// already holds. An isolated mark closes each pass, so each timestamp times one pass alone.
fn best_of_passes(
    mut rec: crate::Recorder,
    repeats: u32,
    mut pass: impl FnMut(&mut crate::Recorder) -> Result<()>,
) -> Result<f64> {
    rec.enable_profiling(repeats + 1)?;
    for _ in 0..repeats {
        pass(&mut rec)?;
        rec.mark_isolated("pass");
    }
    Ok(best_ms(&rec.submit()?.wait_profiled()?, "pass"))
}

/// Loads each invocation of the read probe keeps in flight (`ceiling_read.comp`).
const READ_LOADS: usize = 16;

/// The read probe (`ceiling_read.comp`): each invocation keeps 16 loads of `width` words (1
/// or 4) in flight, as a kernel's load step does, then writes their XOR.
pub struct ReadProbe {
    pipeline: Kernel<u32>,
    workgroup: u32,
    width: usize,
}

impl ReadProbe {
    pub fn new(ctx: &Context, workgroup: u32, width: usize) -> Result<ReadProbe> {
        if width != 1 && width != 4 {
            return Err(crate::error::EngineError::Unsupported(format!("read probe width {width}: 1 or 4")));
        }
        let spec = [workgroup, width as u32];
        let pipeline = ctx.kernel(&kernels::CEILING_READ, &spec)?;
        Ok(ReadProbe { pipeline, workgroup, width })
    }

    /// Workgroups that read `words` words (a trailing partial load of `width` words is not
    /// read).
    pub fn workgroups(&self, words: usize) -> u32 {
        ((words / self.width) as u32).div_ceil(self.workgroup * READ_LOADS as u32).max(1)
    }

    /// Output words (one XOR per invocation) for `words` words.
    pub fn outputs(&self, words: usize) -> usize {
        (self.workgroups(words) * self.workgroup) as usize
    }

    /// Records one read of `src` into `dst` (at least [`Self::outputs`] long).
    pub fn record(&self, rec: &mut crate::Recorder, src: &crate::Buffer<u32>, dst: &crate::Buffer<u32>) -> Result<()> {
        let loads = (src.len() / self.width) as u32;
        rec.pass(&self.pipeline).read(src).write(dst).push(&loads).dispatch_linear(self.workgroups(src.len()))
    }
}

/// GPU milliseconds of the best of `repeats` reads of `bytes` bytes by the read probe with
/// loads of `width` words (for `sweep`).
pub fn read_ms(ctx: &Context, bytes: u64, workgroup: u32, width: usize, repeats: u32) -> Result<f64> {
    let probe = ReadProbe::new(ctx, workgroup, width)?;
    let words = (bytes / 4).max(4) as usize;
    let src = ctx.buffer::<u32>(words, Location::Device, "read probe source")?;
    let dst = ctx.buffer::<u32>(probe.outputs(words), Location::Device, "read probe output")?;
    let mut rec = ctx.recorder()?;
    rec.fill(&src, 0x3f80_0000);
    best_of_passes(rec, repeats, |rec| probe.record(rec, &src, &dst))
}

fn fma_pipeline(ctx: &Context, workgroup: u32) -> Result<Kernel<FmaPush>> {
    ctx.kernel(&kernels::CEILING_FMA, &[workgroup])
}

fn copy_pipeline(ctx: &Context, workgroup: u32) -> Result<Kernel<u32>> {
    ctx.kernel(&kernels::CEILING_COPY, &[workgroup])
}

/// Measures both ceilings. `copy_bytes` is the size of the source buffer (the kernel moves
/// twice that); use at least 256 MiB on a GPU so caches do not flatter the figure.
pub fn measure(ctx: &Context, copy_bytes: u64, fma_iterations: u32) -> Result<Ceilings> {
    const WG: u32 = 256;
    let words = (copy_bytes / 16) as usize;
    let src = ctx.buffer::<[u32; 4]>(words, Location::Device, "copy probe source")?;
    let dst = ctx.buffer::<[u32; 4]>(words, Location::Device, "copy probe destination")?;
    let copy = copy_pipeline(ctx, WG)?;
    let fma = fma_pipeline(ctx, WG)?;
    // Enough workgroups to fill any current GPU several times over.
    let fma_groups = 4096u32;
    let fma_out = ctx.buffer::<f32>((fma_groups * WG) as usize, Location::Device, "fma probe output")?;
    let copy_groups = (words as u32).div_ceil(WG * 8).clamp(1, 65535);

    let mut rec = ctx.recorder()?;
    rec.fill(&src, 0x3f80_0000);
    rec.enable_profiling(32)?;
    // An isolated mark closes each timed pass, so each timestamp times one pass alone.
    for _ in 0..5 {
        rec.pass(&copy).read(&src).write(&dst).push(&(words as u32)).dispatch([copy_groups, 1, 1])?;
        rec.mark_isolated("copy");
    }
    for _ in 0..5 {
        let push = FmaPush { iterations: fma_iterations, seed: 1.0 };
        rec.pass(&fma).write(&fma_out).push(&push).dispatch([fma_groups, 1, 1])?;
        rec.mark_isolated("fma");
    }
    let passes = rec.submit()?.wait_profiled()?;
    let copy_ms = best_ms(&passes, "copy");
    let fma_ms = best_ms(&passes, "fma");
    // Each iteration does 8 vec4 FMAs = 32 scalar FMAs = 64 FLOPs.
    let flops = fma_groups as f64 * WG as f64 * fma_iterations as f64 * 64.0;
    Ok(Ceilings {
        copy_gb_per_s: 2.0 * (words as f64 * 16.0) / (copy_ms * 1e-3) / 1e9,
        copy_bytes: words as u64 * 16,
        fma_tflop_per_s: flops / (fma_ms * 1e-3) / 1e12,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_up_returns_after_its_duration() {
        let ctx = crate::testing::context();
        let t = std::time::Instant::now();
        warm_up(ctx, std::time::Duration::from_millis(20)).unwrap();
        assert!(t.elapsed() >= std::time::Duration::from_millis(20));
        crate::testing::assert_no_validation_messages();
    }

    #[test]
    fn read_probe_xors_what_each_invocation_loads() {
        let ctx = crate::testing::context();
        // An awkward size: not a multiple of 4 words or of a workgroup's loads.
        let words = 100_003usize;
        let data: Vec<u32> = (0..words as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995).collect();
        let src = ctx.upload(&data, "read probe test source").unwrap();
        for (workgroup, width) in [(64u32, 1usize), (64, 4), (96, 4)] {
            let probe = ReadProbe::new(ctx, workgroup, width).unwrap();
            let dst = ctx.buffer::<u32>(probe.outputs(words), Location::Device, "read probe test output").unwrap();
            let mut rec = ctx.recorder().unwrap();
            probe.record(&mut rec, &src, &dst).unwrap();
            rec.submit().unwrap().wait().unwrap();
            let got = ctx.download(&dst).unwrap();
            // Invocation t of workgroup g reads loads g * wg * 16 + t + k * wg, k < 16.
            let (wg, loads) = (workgroup as usize, words / width);
            let want: Vec<u32> = (0..got.len())
                .map(|inv| {
                    let (g, t) = (inv / wg, inv % wg);
                    (0..READ_LOADS)
                        .map(|k| g * wg * READ_LOADS + t + k * wg)
                        .filter(|&i| i < loads)
                        .flat_map(|i| data[i * width..(i + 1) * width].iter().copied())
                        .fold(0, |a, b| a ^ b)
                })
                .collect();
            assert_eq!(got, want, "workgroup {workgroup}, width {width}");
        }
        assert!(ReadProbe::new(ctx, 64, 2).is_err());
        crate::testing::assert_no_validation_messages();
    }

    #[test]
    fn ceilings_are_positive_and_finite() {
        let ctx = crate::testing::context();
        let c = measure(ctx, 1 << 20, 16).unwrap();
        assert!(c.copy_gb_per_s > 0.0 && c.copy_gb_per_s.is_finite());
        assert!(c.fma_tflop_per_s > 0.0 && c.fma_tflop_per_s.is_finite());
        crate::testing::assert_no_validation_messages();
    }
}
