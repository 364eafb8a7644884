//! Declared passes: a stage says what each dispatch reads and writes, and the recorder places
//! the barriers ([`crate::hazards`]) and keeps the resources alive.
//!
//! ```ignore
//! rec.pass(&detect).read(&sq).read(&blocks).write(&map).push(&p).dispatch_linear(groups)?;
//! ```
//!
//! The resources are given in the kernel's binding order, each declared as the shader uses it
//! (reflected from `readonly` / `writeonly`: see [`crate::kernel`]); a binding missing, one
//! too many, or one declared read that the shader may write is refused naming the kernel and
//! the binding. The recorder remembers, per buffer range, the last write and the reads since
//! it in this command buffer ([`crate::hazards::Tracker`]) and records before each pass, copy, fill or host
//! read the one global memory barrier its hazards need: read after write, write after write
//! (a memory dependency), write after read (execution only); nothing between independent
//! passes. Every resource a pass binds, and its pipeline, is kept (`Arc`) by the recorder and
//! then by the [`crate::Submission`] until the GPU has finished with it.

use bytemuck::NoUninit;

use crate::commands::{linear_grid, Recorder};
use crate::error::{EngineError, Result};
use crate::hazards::Use;
use crate::kernel::{Access, Kernel};
use crate::memory::{BufferBinding, Keep, Resource};

/// One dispatch being declared: its kernel, the resources in binding order, the push
/// constants. Nothing is recorded until [`Pass::dispatch`], which checks it all first.
#[must_use = "a pass records nothing until dispatch"]
pub struct Pass<'r, P> {
    rec: &'r mut Recorder,
    kernel: &'r Kernel<P>,
    /// The binding, the part of it the pass touches, the declared access, the owner.
    bound: Vec<(BufferBinding, BufferBinding, Access, Keep)>,
    push: Option<Vec<u8>>,
}

impl Recorder {
    /// Declares a dispatch of `kernel`: give its resources in binding order
    /// ([`Pass::read`], [`Pass::write`], [`Pass::read_write`]), its push constants, then
    /// [`Pass::dispatch`].
    pub fn pass<'r, P: NoUninit>(&'r mut self, kernel: &'r Kernel<P>) -> Pass<'r, P> {
        Pass { rec: self, kernel, bound: Vec::new(), push: None }
    }
}

impl<'r, P: NoUninit> Pass<'r, P> {
    /// The next binding, which the kernel only reads.
    pub fn read(self, r: &(impl Resource + ?Sized)) -> Self {
        self.bind(r, Access::Read)
    }

    /// The next binding, which the kernel writes (and may read: a binding without
    /// `readonly` / `writeonly` in the shader).
    pub fn write(self, r: &(impl Resource + ?Sized)) -> Self {
        self.bind(r, Access::Write)
    }

    /// The next binding, which the kernel reads and writes (accumulations, atomics).
    pub fn read_write(self, r: &(impl Resource + ?Sized)) -> Self {
        self.bind(r, Access::ReadWrite)
    }

    fn bind(mut self, r: &(impl Resource + ?Sized), access: Access) -> Self {
        self.bound.push((r.binding(), r.touched(), access, r.owner()));
        self
    }

    /// The push constants.
    pub fn push(mut self, push: &P) -> Self {
        self.push = Some(bytemuck::bytes_of(push).to_vec());
        self
    }

    /// Dispatches `groups` over x and y ([`linear_grid`]) for kernels that compute a linear
    /// group id.
    pub fn dispatch_linear(self, groups: u32) -> Result<()> {
        self.dispatch(linear_grid(groups))
    }

    /// Checks the pass against the kernel's interface and the device, records the barrier
    /// its hazards need, and the dispatch (none for an empty grid).
    pub fn dispatch(self, groups: [u32; 3]) -> Result<()> {
        let Pass { rec, kernel, bound, push } = self;
        let desc = kernel.desc;
        let interface = |b: Option<&crate::kernel::BindingDesc>, problem: String| EngineError::Interface {
            kernel: desc.name,
            binding: b.map(|b| (b.binding, b.name)),
            problem,
        };
        if let Some(b) = desc.bindings.get(bound.len()) {
            return Err(interface(Some(b), "is not bound".into()));
        }
        if bound.len() > desc.bindings.len() {
            return Err(interface(
                None,
                format!("{} resources bound; the kernel has {} bindings", bound.len(), desc.bindings.len()),
            ));
        }
        let info = rec.context().info();
        let mut uses = Vec::with_capacity(bound.len());
        for ((binding, touched, declared, _), b) in bound.iter().zip(desc.bindings) {
            let agrees = match b.access {
                Access::Read => *declared == Access::Read,
                Access::Write => *declared == Access::Write,
                Access::ReadWrite => *declared != Access::Read,
            };
            if !agrees {
                let problem = match b.access {
                    Access::ReadWrite => format!(
                        "is declared {} but the shader may write it (declare it written, or make it readonly in the shader)",
                        declared.word()
                    ),
                    access => format!("is declared {} but the shader has it {}", declared.word(), access.word()),
                };
                return Err(interface(Some(b), problem));
            }
            if binding.range > info.max_storage_buffer_range {
                return Err(EngineError::BindingRange {
                    what: format!("{} binding {} ({})", desc.name, b.binding, b.name),
                    bytes: binding.range,
                    range: info.max_storage_buffer_range,
                    device: info.name.clone(),
                });
            }
            if binding.offset % info.min_storage_buffer_offset_alignment.max(1) != 0 {
                return Err(interface(
                    Some(b),
                    format!(
                        "starts at byte {}, not a multiple of the device's storage-buffer offset alignment {}",
                        binding.offset, info.min_storage_buffer_offset_alignment
                    ),
                ));
            }
            uses.push(Use::compute(*touched, b.access));
        }
        let push = match push {
            Some(bytes) => bytes,
            None if desc.push_bytes == 0 => Vec::new(),
            None => {
                return Err(interface(None, format!("takes {} bytes of push constants; none given", desc.push_bytes)))
            }
        };
        if let Some(axis) = (0..3).find(|&i| groups[i] > info.max_workgroup_count[i]) {
            return Err(EngineError::Unsupported(format!(
                "{}: {} workgroups on axis {axis}; {} allows {}",
                desc.name, groups[axis], info.name, info.max_workgroup_count[axis]
            )));
        }
        if groups.contains(&0) {
            return Ok(());
        }
        let numbered: Vec<(u32, BufferBinding)> =
            bound.iter().zip(desc.bindings).map(|(b, d)| (d.binding, b.0)).collect();
        rec.declare(&uses);
        for (_, _, _, keep) in bound {
            rec.keep(keep);
        }
        rec.keep(kernel.pipeline.0.clone());
        rec.dispatch_bound(&kernel.pipeline, &numbered, &push, groups);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prims::reduce::SumPush;
    use crate::shaders::kernels;
    use crate::{testing, Buffer, Context, Location};

    fn sums(data: &[u32], per_group: usize) -> Vec<u32> {
        data.chunks(per_group).map(|c| c.iter().fold(0u32, |a, &b| a.wrapping_add(b))).collect()
    }

    /// The `reduce_sum_u32` kernel the tests' passes run, in workgroups of 64.
    fn sum_kernel(ctx: &Context) -> Kernel<SumPush> {
        ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64]).unwrap()
    }

    /// Records one pass of `kernel`: the (wrapping) sums of each `per_group` of the first `n`
    /// values of `input` into `output`, a workgroup each.
    fn record_sums(
        rec: &mut Recorder,
        kernel: &Kernel<SumPush>,
        input: &Buffer<u32>,
        output: &Buffer<u32>,
        (n, per_group): (u32, u32),
    ) {
        rec.pass(kernel)
            .read(input)
            .write(output)
            .push(&SumPush { n, per_group })
            .dispatch_linear(n.div_ceil(per_group))
            .unwrap();
    }

    #[test]
    fn a_buffer_dropped_right_after_recording_lives_until_the_submission_completes() {
        let ctx = testing::context();
        let kernel = sum_kernel(ctx);
        let data: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2654435761) >> 8).collect();
        let input = ctx.upload(&data, "input").unwrap();
        let partials = ctx.buffer::<u32>(4, Location::Device, "partials").unwrap();
        let watch = input.watch();
        let mut rec = ctx.recorder().unwrap();
        record_sums(&mut rec, &kernel, &input, &partials, (1000, 250));
        // The input and the kernel go before the GPU has run: the recorder, then the
        // submission, keep them.
        drop(input);
        drop(kernel);
        assert!(watch.upgrade().is_some(), "the recorder holds the input");
        let submission = rec.submit().unwrap();
        assert!(watch.upgrade().is_some(), "the submission holds the input");
        submission.wait().unwrap();
        assert!(watch.upgrade().is_none(), "the input is freed once the submission completed");
        assert_eq!(ctx.download(&partials).unwrap(), sums(&data, 250));
        testing::assert_no_validation_messages();
    }

    #[test]
    fn a_missing_binding_a_wrong_access_or_missing_push_is_refused_naming_kernel_and_binding() {
        let ctx = testing::context();
        let kernel = sum_kernel(ctx);
        let input = ctx.upload(&[1u32; 100], "input").unwrap();
        let partials = ctx.buffer::<u32>(2, Location::Device, "partials").unwrap();
        let push = SumPush { n: 100, per_group: 64 };
        let mut rec = ctx.recorder().unwrap();
        let refused = |result: Result<()>| {
            let err = result.unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Interface, "{err}");
            err.to_string()
        };
        let err = refused(rec.pass(&kernel).read(&input).push(&push).dispatch_linear(2));
        assert_eq!(err, "reduce_sum_u32: binding 1 (Partials) is not bound");
        let err = refused(rec.pass(&kernel).write(&input).write(&partials).push(&push).dispatch_linear(2));
        assert_eq!(err, "reduce_sum_u32: binding 0 (Input) is declared written but the shader has it read");
        let err = refused(rec.pass(&kernel).read(&input).write(&partials).dispatch_linear(2));
        assert!(err.starts_with("reduce_sum_u32: takes 8 bytes of push constants"), "{err}");
        let err =
            refused(rec.pass(&kernel).read(&input).write(&partials).write(&partials).push(&push).dispatch_linear(2));
        assert!(err.contains("3 resources bound; the kernel has 2 bindings"), "{err}");
        // Refused passes record nothing; a right one runs.
        rec.pass(&kernel).read(&input).write(&partials).push(&push).dispatch_linear(2).unwrap();
        rec.submit().unwrap().wait().unwrap();
        assert_eq!(ctx.download(&partials).unwrap(), vec![64, 36]);
        testing::assert_no_validation_messages();
    }

    #[test]
    fn a_replay_runs_its_commands_again_on_what_the_last_run_left() {
        // Each run: the sum of the buffer replaces its first element (a pass, then a copy
        // back), so every run reads what the one before wrote.
        let ctx = testing::context();
        let kernel = sum_kernel(ctx);
        let mut want: Vec<u32> = (0..100u32).map(|i| i * 7 + 3).collect();
        let data = ctx.upload(&want, "data").unwrap();
        let total = ctx.buffer::<u32>(1, Location::Device, "total").unwrap();
        let mut rec = ctx.replay_recorder().unwrap();
        record_sums(&mut rec, &kernel, &data, &total, (100, 128));
        rec.copy_region(&total, 0, &data, 0, 1);
        let watch = total.watch();
        let replay = rec.finish().unwrap();
        drop(total);
        assert!(watch.upgrade().is_some(), "the replay holds what its commands use");
        for _ in 0..3 {
            replay.run().unwrap();
            want[0] = want.iter().fold(0u32, |a, &b| a.wrapping_add(b));
        }
        assert_eq!(ctx.download(&data).unwrap(), want);
        drop(replay);
        assert!(watch.upgrade().is_none(), "dropping the replay frees what it held");
        // A replay recorder is not submitted once, and a plain recorder is not replayed.
        assert!(ctx.replay_recorder().unwrap().submit().is_err());
        assert!(ctx.recorder().unwrap().finish().is_err());
        testing::assert_no_validation_messages();
    }

    #[test]
    fn dependent_passes_read_what_the_pass_before_wrote() {
        // A chain through one buffer in one command buffer: upload copy -> sum -> sum of
        // the partials -> copy -> host; each step reads what the one before wrote.
        let ctx = testing::context();
        let kernel = sum_kernel(ctx);
        let data: Vec<u32> = (0..5000u32).map(|i| i ^ 0x5a5a).collect();
        let staging = ctx.upload_buffer(&data, "staging").unwrap();
        let input = ctx.buffer::<u32>(data.len(), Location::Device, "input").unwrap();
        let partials = ctx.buffer::<u32>(20, Location::Device, "partials").unwrap();
        let total = ctx.buffer::<u32>(1, Location::Device, "total").unwrap();
        let readback = ctx.buffer::<u32>(1, Location::Download, "readback").unwrap();
        let mut rec = ctx.recorder().unwrap();
        rec.copy(&staging, &input);
        record_sums(&mut rec, &kernel, &input, &partials, (5000, 256));
        record_sums(&mut rec, &kernel, &partials, &total, (20, 64));
        rec.copy(&total, &readback);
        rec.host_read(&readback);
        rec.submit().unwrap().wait().unwrap();
        assert_eq!(readback.mapped().unwrap()[0], data.iter().fold(0u32, |a, &b| a.wrapping_add(b)));
        testing::assert_no_validation_messages();
    }

    /// A submission made with `after_queue` starts once everything submitted to its queue
    /// before it has completed: the readback of a pass submitted earlier (and not waited
    /// for) holds its result, and that earlier submission is complete once this one is.
    #[test]
    fn a_submission_after_its_queue_follows_every_earlier_one() {
        let ctx = testing::context();
        let kernel = sum_kernel(ctx);
        let data: Vec<u32> = (0..3000u32).map(|i| i.wrapping_mul(2654435761) >> 9).collect();
        let input = ctx.upload(&data, "input").unwrap();
        let partials = ctx.buffer::<u32>(12, Location::Device, "partials").unwrap();
        let readback = ctx.buffer::<u32>(12, Location::Download, "readback").unwrap();
        let mut rec = ctx.recorder().unwrap();
        record_sums(&mut rec, &kernel, &input, &partials, (3000, 250));
        let earlier = rec.submit().unwrap();
        let mut rec = ctx.recorder().unwrap();
        rec.after_queue();
        rec.copy(&partials, &readback);
        rec.host_read(&readback);
        rec.submit().unwrap().wait().unwrap();
        assert!(earlier.is_complete());
        assert_eq!(readback.mapped().unwrap(), sums(&data, 250));
        earlier.wait().unwrap();
        testing::assert_no_validation_messages();
    }

    /// Isolated marks time each repetition of independent passes on its own: one time per
    /// mark, by name, and the passes' results as without them.
    #[test]
    fn isolated_marks_close_one_timed_section_each() {
        let ctx = testing::context();
        let kernel = sum_kernel(ctx);
        let data: Vec<u32> = (0..640u32).map(|i| i.wrapping_mul(2654435761) >> 10).collect();
        let input = ctx.upload(&data, "input").unwrap();
        let outputs = [0, 1].map(|_| ctx.buffer::<u32>(10, Location::Device, "partials").unwrap());
        let mut rec = ctx.recorder().unwrap();
        rec.enable_profiling(2).unwrap();
        for (out, name) in outputs.iter().zip(["first", "second"]) {
            record_sums(&mut rec, &kernel, &input, out, (640, 64));
            rec.mark_isolated(name);
        }
        let passes = rec.submit().unwrap().wait_profiled().unwrap();
        if ctx.info().timestamps_valid {
            let names: Vec<&str> = passes.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names, ["first", "second"]);
            assert!(passes.iter().all(|p| p.ms >= 0.0));
        }
        for out in &outputs {
            assert_eq!(ctx.download(out).unwrap(), sums(&data, 64));
        }
        testing::assert_no_validation_messages();
    }
}
