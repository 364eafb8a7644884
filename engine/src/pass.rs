//! Declared passes: a stage says what each dispatch reads and writes, and the recorder places
//! the barriers and keeps the resources alive.
//!
//! ```ignore
//! rec.pass(&detect).read(&sq).read(&blocks).write(&map).push(&p).dispatch_linear(groups)?;
//! ```
//!
//! The resources are given in the kernel's binding order, each declared as the shader uses it
//! (reflected from `readonly` / `writeonly`: see [`crate::kernel`]); a binding missing, one
//! too many, or one declared read that the shader may write is refused naming the kernel and
//! the binding. The recorder remembers, per buffer range, the last write and the reads since
//! it in this command buffer ([`Tracker`]) and records before each pass, copy, fill or host
//! read the one global memory barrier its hazards need: read after write, write after write
//! (a memory dependency), write after read (execution only); nothing between independent
//! passes. Every resource a pass binds, and its pipeline, is kept (`Arc`) by the recorder and
//! then by the [`crate::Submission`] until the GPU has finished with it.

use std::collections::HashMap;

use ash::vk;
use bytemuck::NoUninit;

use crate::commands::{linear_grid, Recorder};
use crate::error::{EngineError, Result};
use crate::kernel::{Access, Kernel};
use crate::memory::{BufferBinding, Keep, Resource};

type Stages = vk::PipelineStageFlags2;
type Accesses = vk::AccessFlags2;

/// One access of a command to a byte range of a buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Use {
    pub buffer: vk::Buffer,
    pub start: u64,
    pub end: u64,
    pub stage: Stages,
    /// The read accesses (empty for a write-only use).
    pub read: Accesses,
    /// The write accesses (empty for a read-only use).
    pub write: Accesses,
}

impl Use {
    pub fn compute(binding: BufferBinding, access: Access) -> Use {
        let read = if access.reads() { Accesses::SHADER_STORAGE_READ } else { Accesses::empty() };
        let write = if access.writes() { Accesses::SHADER_STORAGE_WRITE } else { Accesses::empty() };
        Use::of(binding, Stages::COMPUTE_SHADER, read, write)
    }

    pub fn transfer_read(binding: BufferBinding) -> Use {
        Use::of(binding, Stages::ALL_TRANSFER, Accesses::TRANSFER_READ, Accesses::empty())
    }

    pub fn transfer_write(binding: BufferBinding) -> Use {
        Use::of(binding, Stages::ALL_TRANSFER, Accesses::empty(), Accesses::TRANSFER_WRITE)
    }

    pub fn host_read(binding: BufferBinding) -> Use {
        Use::of(binding, Stages::HOST, Accesses::HOST_READ, Accesses::empty())
    }

    fn of(b: BufferBinding, stage: Stages, read: Accesses, write: Accesses) -> Use {
        Use { buffer: b.raw, start: b.offset, end: b.offset.saturating_add(b.range), stage, read, write }
    }
}

/// What the command buffer has done to one byte range since it began.
#[derive(Clone, Copy, Debug, Default)]
struct State {
    /// The stages and accesses of the writes no barrier has yet made visible everywhere.
    write: Option<(Stages, Accesses)>,
    /// The stages that already see those writes.
    visible: Stages,
    /// The stages that read the range since the last write.
    readers: Stages,
    /// The stages already ordered after all those reads.
    ordered: Stages,
}

impl State {
    fn merge(self, other: State) -> State {
        let write = match (self.write, other.write) {
            (Some(a), Some(b)) => Some((a.0 | b.0, a.1 | b.1)),
            (a, b) => a.or(b),
        };
        State {
            write,
            visible: self.visible & other.visible,
            readers: self.readers | other.readers,
            ordered: self.ordered & other.ordered,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    state: State,
}

/// One global memory barrier: source and destination stages and accesses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Barrier {
    pub src: (Stages, Accesses),
    pub dst: (Stages, Accesses),
}

impl Barrier {
    pub const FULL: Barrier = Barrier {
        src: (Stages::ALL_COMMANDS, Accesses::MEMORY_WRITE),
        dst: (
            Stages::ALL_COMMANDS,
            Accesses::from_raw(Accesses::MEMORY_READ.as_raw() | Accesses::MEMORY_WRITE.as_raw()),
        ),
    };

    fn is_empty(&self) -> bool {
        self.src.0.is_empty() && self.dst.0.is_empty()
    }
}

/// The last writer and the readers since it of every buffer range a command buffer touched.
#[derive(Default)]
pub(crate) struct Tracker {
    ranges: HashMap<vk::Buffer, Vec<Range>>,
    /// Dispatches recorded through the hand-placed API since its last barrier: what they
    /// touched is unknown, so the next declared access is preceded by a full barrier.
    pub untracked: bool,
}

impl Tracker {
    /// The barrier `uses` (the accesses of one command) need after what came before, empty
    /// when none; records them.
    pub fn access(&mut self, uses: &[Use]) -> Option<Barrier> {
        if self.untracked {
            self.untracked = false;
            self.ranges.clear();
            self.record(uses);
            return Some(Barrier::FULL);
        }
        let mut b = Barrier::default();
        for u in uses {
            for r in self.ranges.get(&u.buffer).into_iter().flatten().filter(|r| r.start < u.end && u.start < r.end) {
                let s = r.state;
                // Read or write after a write no barrier has ordered before this stage and
                // made visible to it: a memory dependency.
                if let Some((stages, accesses)) = s.write.filter(|_| !s.visible.contains(u.stage)) {
                    b.src.0 |= stages;
                    b.src.1 |= accesses;
                    b.dst.0 |= u.stage;
                    b.dst.1 |= u.read | u.write;
                }
                // Write after reads not yet ordered before this stage: execution only.
                if !u.write.is_empty() && !s.readers.is_empty() && !s.ordered.contains(u.stage) {
                    b.src.0 |= s.readers;
                    b.dst.0 |= u.stage;
                }
            }
        }
        if !b.is_empty() {
            self.apply(b);
        }
        self.record(uses);
        (!b.is_empty()).then_some(b)
    }

    /// What barrier `b` did to every range: writes it covered are visible to its destination
    /// stages, reads it covered are ordered before them.
    pub fn apply(&mut self, b: Barrier) {
        for r in self.ranges.values_mut().flatten() {
            let s = &mut r.state;
            if let Some((stages, accesses)) = s.write {
                if b.src.0.contains(stages) && b.src.1.contains(accesses) {
                    s.visible |= b.dst.0;
                }
            }
            if b.src.0.contains(s.readers) {
                s.ordered |= b.dst.0;
            }
        }
    }

    /// A barrier that orders everything before it with everything after.
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.untracked = false;
    }

    fn record(&mut self, uses: &[Use]) {
        for u in uses {
            let ranges = self.ranges.entry(u.buffer).or_default();
            let overlapping = |r: &Range| r.start < u.end && u.start < r.end;
            if !ranges.iter().any(|r| r.start == u.start && r.end == u.end) {
                let inherited = ranges
                    .iter()
                    .filter(|r| overlapping(r))
                    .fold(None, |acc: Option<State>, r| Some(acc.map_or(r.state, |a| a.merge(r.state))));
                ranges.push(Range { start: u.start, end: u.end, state: inherited.unwrap_or_default() });
            }
            for r in ranges.iter_mut().filter(|r| overlapping(r)) {
                let s = &mut r.state;
                if !u.read.is_empty() {
                    s.readers |= u.stage;
                    s.ordered = Stages::empty();
                }
                if !u.write.is_empty() {
                    let covered = u.start <= r.start && r.end <= u.end;
                    let write = (u.stage, u.write);
                    s.write = match s.write {
                        Some((stages, accesses)) if !covered => Some((stages | write.0, accesses | write.1)),
                        _ => Some(write),
                    };
                    s.visible = Stages::empty();
                    if covered {
                        s.readers = Stages::empty();
                        s.ordered = Stages::empty();
                    }
                }
            }
        }
    }
}

/// One dispatch being declared: its kernel, the resources in binding order, the push
/// constants. Nothing is recorded until [`Pass::dispatch`], which checks it all first.
#[must_use = "a pass records nothing until dispatch"]
pub struct Pass<'r, P> {
    rec: &'r mut Recorder,
    kernel: &'r Kernel<P>,
    bound: Vec<(BufferBinding, Access, Keep)>,
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
        self.bound.push((r.binding(), access, r.owner()));
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
        for ((binding, declared, _), b) in bound.iter().zip(desc.bindings) {
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
            uses.push(Use::compute(*binding, b.access));
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
        for (_, _, keep) in bound {
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
    use crate::{testing, Location};

    use ash::vk::Handle;

    fn sums(data: &[u32], per_group: usize) -> Vec<u32> {
        data.chunks(per_group).map(|c| c.iter().fold(0u32, |a, &b| a.wrapping_add(b))).collect()
    }

    #[test]
    fn a_buffer_dropped_right_after_recording_lives_until_the_submission_completes() {
        let ctx = testing::context();
        let kernel = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64]).unwrap();
        let data: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2654435761) >> 8).collect();
        let input = ctx.upload(&data, "input").unwrap();
        let partials = ctx.buffer::<u32>(4, Location::Device, "partials").unwrap();
        let watch = input.watch();
        let mut rec = ctx.recorder().unwrap();
        let push = SumPush { n: 1000, per_group: 250 };
        rec.pass(&kernel).read(&input).write(&partials).push(&push).dispatch_linear(4).unwrap();
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
        let kernel = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64]).unwrap();
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
    fn dependent_passes_read_what_the_pass_before_wrote() {
        // A chain through one buffer in one command buffer: upload copy -> sum -> sum of
        // the partials -> copy -> host; each step reads what the one before wrote.
        let ctx = testing::context();
        let kernel = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64]).unwrap();
        let data: Vec<u32> = (0..5000u32).map(|i| i ^ 0x5a5a).collect();
        let staging = ctx.upload_buffer(&data, "staging").unwrap();
        let input = ctx.buffer::<u32>(data.len(), Location::Device, "input").unwrap();
        let partials = ctx.buffer::<u32>(20, Location::Device, "partials").unwrap();
        let total = ctx.buffer::<u32>(1, Location::Device, "total").unwrap();
        let readback = ctx.buffer::<u32>(1, Location::Download, "readback").unwrap();
        let mut rec = ctx.recorder().unwrap();
        rec.copy(&staging, &input);
        rec.pass(&kernel)
            .read(&input)
            .write(&partials)
            .push(&SumPush { n: 5000, per_group: 256 })
            .dispatch_linear(20)
            .unwrap();
        rec.pass(&kernel)
            .read(&partials)
            .write(&total)
            .push(&SumPush { n: 20, per_group: 64 })
            .dispatch_linear(1)
            .unwrap();
        rec.copy(&total, &readback);
        rec.host_read(&readback);
        rec.submit().unwrap().wait().unwrap();
        assert_eq!(readback.mapped().unwrap()[0], data.iter().fold(0u32, |a, &b| a.wrapping_add(b)));
        testing::assert_no_validation_messages();
    }

    const A: u64 = 1;
    const B: u64 = 2;

    fn whole(buffer: u64) -> BufferBinding {
        BufferBinding { raw: vk::Buffer::from_raw(buffer), offset: 0, range: 1024 }
    }

    fn half(buffer: u64, second: bool) -> BufferBinding {
        BufferBinding { raw: vk::Buffer::from_raw(buffer), offset: if second { 512 } else { 0 }, range: 512 }
    }

    #[test]
    fn independent_passes_get_no_barrier_and_dependent_ones_the_narrowest() {
        let mut t = Tracker::default();
        // Two passes writing different buffers: nothing between them.
        assert_eq!(t.access(&[Use::compute(whole(A), Access::Write)]), None);
        assert_eq!(t.access(&[Use::compute(whole(B), Access::Write)]), None);
        // Reading A after its write: compute write -> compute read, nothing wider.
        let raw = t.access(&[Use::compute(whole(A), Access::Read)]).unwrap();
        assert_eq!(raw.src, (Stages::COMPUTE_SHADER, Accesses::SHADER_STORAGE_WRITE));
        assert_eq!(raw.dst, (Stages::COMPUTE_SHADER, Accesses::SHADER_STORAGE_READ));
        // That barrier made B's write visible to compute too: reading B needs none.
        assert_eq!(t.access(&[Use::compute(whole(B), Access::Read)]), None);
        // Writing A after reading it: an execution dependency only.
        let war = t.access(&[Use::compute(whole(A), Access::Write)]).unwrap();
        assert_eq!(war.src, (Stages::COMPUTE_SHADER, Accesses::empty()));
        assert_eq!(war.dst, (Stages::COMPUTE_SHADER, Accesses::empty()));
        // Writing A again: write after write is a memory dependency.
        let waw = t.access(&[Use::compute(whole(A), Access::Write)]).unwrap();
        assert_eq!(waw.src.1, Accesses::SHADER_STORAGE_WRITE);
        assert_eq!(waw.dst.1, Accesses::SHADER_STORAGE_WRITE);
        // A copy out of A, then the host reading the copy.
        let copy = t.access(&[Use::transfer_read(whole(A)), Use::transfer_write(whole(B))]).unwrap();
        assert_eq!(copy.src.0, Stages::COMPUTE_SHADER);
        assert_eq!(copy.dst, (Stages::ALL_TRANSFER, Accesses::TRANSFER_READ | Accesses::TRANSFER_WRITE));
        let host = t.access(&[Use::host_read(whole(B))]).unwrap();
        assert_eq!(host.src, (Stages::ALL_TRANSFER, Accesses::TRANSFER_WRITE));
        assert_eq!(host.dst, (Stages::HOST, Accesses::HOST_READ));
    }

    #[test]
    fn disjoint_ranges_of_one_buffer_are_independent_and_overlaps_are_not() {
        let mut t = Tracker::default();
        assert_eq!(t.access(&[Use::compute(half(A, false), Access::Write)]), None);
        assert_eq!(t.access(&[Use::compute(half(A, true), Access::Write)]), None);
        // The whole buffer overlaps both written halves.
        assert!(t.access(&[Use::compute(whole(A), Access::Read)]).is_some());
        assert_eq!(t.access(&[Use::compute(half(A, true), Access::Read)]), None);
    }

    /// A submission made with `after_queue` starts once everything submitted to its queue
    /// before it has completed: the readback of a pass submitted earlier (and not waited
    /// for) holds its result, and that earlier submission is complete once this one is.
    #[test]
    fn a_submission_after_its_queue_follows_every_earlier_one() {
        let ctx = testing::context();
        let kernel = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64]).unwrap();
        let data: Vec<u32> = (0..3000u32).map(|i| i.wrapping_mul(2654435761) >> 9).collect();
        let input = ctx.upload(&data, "input").unwrap();
        let partials = ctx.buffer::<u32>(12, Location::Device, "partials").unwrap();
        let readback = ctx.buffer::<u32>(12, Location::Download, "readback").unwrap();
        let mut rec = ctx.recorder().unwrap();
        rec.pass(&kernel)
            .read(&input)
            .write(&partials)
            .push(&SumPush { n: 3000, per_group: 250 })
            .dispatch_linear(12)
            .unwrap();
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
        let kernel = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64]).unwrap();
        let data: Vec<u32> = (0..640u32).map(|i| i.wrapping_mul(2654435761) >> 10).collect();
        let input = ctx.upload(&data, "input").unwrap();
        let outputs = [0, 1].map(|_| ctx.buffer::<u32>(10, Location::Device, "partials").unwrap());
        let mut rec = ctx.recorder().unwrap();
        rec.enable_profiling(2).unwrap();
        for (out, name) in outputs.iter().zip(["first", "second"]) {
            rec.pass(&kernel)
                .read(&input)
                .write(out)
                .push(&SumPush { n: 640, per_group: 64 })
                .dispatch_linear(10)
                .unwrap();
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

    #[test]
    fn untracked_work_is_followed_by_a_full_barrier() {
        let mut t = Tracker { untracked: true, ..Tracker::default() };
        assert_eq!(t.access(&[Use::compute(whole(A), Access::Read)]), Some(Barrier::FULL));
        assert_eq!(t.access(&[Use::compute(whole(A), Access::Read)]), None);
    }
}
