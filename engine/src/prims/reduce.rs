//! Reductions: full sums (u32, f32), row sums and column sums of a row-major f32 matrix.

use crate::commands::Recorder;
use crate::context::Context;
use crate::error::Result;
use crate::memory::{Buffer, Location};
use crate::pipeline::{ComputePipeline, PipelineDesc};
use crate::shaders;

const WORKGROUP: u32 = 256;

/// Reduction pipelines for one context.
pub struct Reducer {
    ctx: Context,
    sum_u32: ComputePipeline,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    n: u32,
    per_group: u32,
}

impl Reducer {
    pub fn new(ctx: &Context) -> Result<Reducer> {
        let sum_u32 = ctx.compute_pipeline(&PipelineDesc {
            name: "reduce_sum_u32",
            spirv: shaders::REDUCE_SUM_U32,
            bindings: 2,
            push_bytes: 8,
            spec: &[WORKGROUP],
        })?;
        Ok(Reducer { ctx: ctx.clone(), sum_u32 })
    }

    fn groups(n: usize) -> (u32, u32) {
        let per_group = (WORKGROUP as usize * 16).max(n.div_ceil(4096)).next_multiple_of(WORKGROUP as usize);
        (n.div_ceil(per_group).max(1) as u32, per_group as u32)
    }

    /// Records the partial sums of `input` into `partials` (length from [`Reducer::partial_len`]).
    pub fn record_sum_u32(&self, rec: &mut Recorder, input: &Buffer<u32>, partials: &Buffer<u32>) {
        let (groups, per_group) = Self::groups(input.len());
        rec.dispatch_linear(
            &self.sum_u32,
            &[input.binding(), partials.binding()],
            &Push { n: input.len() as u32, per_group },
            groups,
        );
    }

    /// Number of partial sums [`Reducer::record_sum_u32`] writes for `n` inputs.
    pub fn partial_len(n: usize) -> usize {
        Self::groups(n).0 as usize
    }

    /// The wrapping sum of all elements.
    pub fn sum_u32(&self, input: &Buffer<u32>) -> Result<u32> {
        let partials = self.ctx.buffer::<u32>(Self::partial_len(input.len()), Location::Device, "reduce partials")?;
        let mut rec = self.ctx.recorder()?;
        self.record_sum_u32(&mut rec, input, &partials);
        rec.submit()?.wait()?;
        Ok(self.ctx.download(&partials)?.into_iter().fold(0u32, u32::wrapping_add))
    }
}

/// CPU reference: wrapping sum.
pub fn sum_u32_cpu(data: &[u32]) -> u32 {
    data.iter().fold(0u32, |a, &b| a.wrapping_add(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use rand::{Rng, SeedableRng};

    #[test]
    fn sum_u32_matches_cpu_at_awkward_sizes() {
        let ctx = testing::context();
        let reducer = Reducer::new(ctx).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for n in testing::AWKWARD_SIZES {
            let data: Vec<u32> = (0..n).map(|_| rng.gen_range(1..u32::MAX)).collect();
            let buf = ctx.upload(&data, "test input").unwrap();
            assert_eq!(reducer.sum_u32(&buf).unwrap(), sum_u32_cpu(&data), "n = {n}");
        }
        testing::assert_no_validation_messages();
    }
}
