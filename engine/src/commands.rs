//! Command recording, sync2 barriers and timeline-semaphore submission.
//!
//! A [`Recorder`] owns one command buffer (and its own transient pool, so recorders on
//! different threads never share a pool). Work is recorded as declared passes
//! ([`Recorder::pass`], in [`crate::pass`]), copies, fills and host reads: the recorder places
//! the barriers they need and keeps what they use alive until the submission completes.
//! A raw dispatch with a hand-placed full barrier exists only inside the engine, for its own
//! tests of the pipeline machinery. [`Recorder::submit`] puts it on its queue and
//! signals the queue's timeline semaphore with the next value; the returned [`Submission`]
//! waits for exactly that value. Work on the transfer queue and the compute queue is ordered
//! with [`Recorder::wait_for`], a timeline wait, never with `vkQueueWaitIdle`.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ash::vk;
use bytemuck::{NoUninit, Pod};

use crate::context::{Context, Queue, Shared};
use crate::error::{EngineError, Result, VkContext};
use crate::hazards::{Barrier, Tracker, Use};
use crate::memory::{Bind, Buffer, BufferBinding, Keep};
use crate::pipeline::{ComputePipeline, PipelineHandles};
use crate::profile::{PassTime, Timestamps};

/// Largest workgroup count per grid axis every Vulkan device supports.
pub const MAX_GROUPS_PER_AXIS: u32 = 65535;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum QueueKind {
    Compute,
    Transfer,
}

/// A command buffer being recorded.
pub struct Recorder {
    ctx: Context,
    kind: QueueKind,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    timestamps: Option<Timestamps>,
    waits: Vec<(vk::Semaphore, u64)>,
    /// Whether the submission waits for everything submitted to its queue before it.
    after_queue: bool,
    /// Begun for repeated submission ([`Context::replay_recorder`]).
    reusable: bool,
    tracker: Tracker,
    /// What the recorded commands use, kept alive until the submission completes.
    keep: Vec<Keep>,
    kept: HashSet<usize>,
    /// Barriers recorded so far (tests check where the recorder places them).
    #[cfg(test)]
    barriers: usize,
}

fn queue(shared: &Shared, kind: QueueKind) -> &Queue {
    match kind {
        QueueKind::Transfer => shared.transfer.as_ref().unwrap_or(&shared.compute),
        QueueKind::Compute => &shared.compute,
    }
}

impl Context {
    /// A recorder for the compute (universal) queue.
    pub fn recorder(&self) -> Result<Recorder> {
        Recorder::new(self.clone(), QueueKind::Compute, false)
    }

    /// A recorder for the compute queue whose commands [`Recorder::finish`] keeps as a
    /// [`Replay`], to be run many times.
    pub fn replay_recorder(&self) -> Result<Recorder> {
        Recorder::new(self.clone(), QueueKind::Compute, true)
    }

    /// A recorder for the dedicated transfer queue, or the compute queue on devices without
    /// one. Only copies may be recorded on it.
    pub fn transfer_recorder(&self) -> Result<Recorder> {
        Recorder::new(self.clone(), QueueKind::Transfer, false)
    }

    /// Records with `f`, submits, waits.
    pub fn run(&self, f: impl FnOnce(&mut Recorder) -> Result<()>) -> Result<()> {
        let mut rec = self.recorder()?;
        f(&mut rec)?;
        rec.submit()?.wait()
    }
}

impl Recorder {
    fn new(ctx: Context, kind: QueueKind, reusable: bool) -> Result<Recorder> {
        let device = &ctx.shared.device;
        let family = queue(&ctx.shared, kind).family;
        let pool = unsafe {
            device.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(family)
                    .flags(vk::CommandPoolCreateFlags::TRANSIENT),
                None,
            )
        }
        .vk("vkCreateCommandPool")?;
        let cmd = unsafe {
            device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
        }
        .vk("vkAllocateCommandBuffers")?[0];
        let flags =
            if reusable { vk::CommandBufferUsageFlags::empty() } else { vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT };
        unsafe { device.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default().flags(flags)) }
            .vk("vkBeginCommandBuffer")?;
        Ok(Recorder {
            ctx,
            kind,
            pool,
            cmd,
            timestamps: None,
            waits: Vec::new(),
            after_queue: false,
            reusable,
            tracker: Tracker::default(),
            keep: Vec::new(),
            kept: HashSet::new(),
            #[cfg(test)]
            barriers: 0,
        })
    }

    /// The raw command buffer, for engine modules that record graphics work.
    pub fn raw(&self) -> vk::CommandBuffer {
        self.cmd
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Turns on GPU timestamps for up to `capacity` marks. The first timestamp is written
    /// now; each [`Recorder::mark`] closes a pass.
    pub fn enable_profiling(&mut self, capacity: u32) -> Result<()> {
        if !self.ctx.info().timestamps_valid {
            return Ok(());
        }
        let ts = Timestamps::new(self.ctx.shared.clone(), capacity + 1)?;
        unsafe { self.ctx.shared.device.cmd_reset_query_pool(self.cmd, ts.pool, 0, ts.capacity) };
        self.timestamps = Some(ts);
        self.mark("begin");
        Ok(())
    }

    /// Ends a named pass: writes a timestamp once all earlier commands completed. A no-op
    /// without profiling, or once the capacity is used up.
    pub fn mark(&mut self, name: &str) {
        if let Some(ts) = &mut self.timestamps {
            let index = ts.names.len() as u32;
            if index < ts.capacity {
                unsafe {
                    self.ctx.shared.device.cmd_write_timestamp2(
                        self.cmd,
                        vk::PipelineStageFlags2::ALL_COMMANDS,
                        ts.pool,
                        index,
                    )
                };
                ts.names.push(name.to_string());
            }
        }
    }

    /// Ends a named pass like [`Recorder::mark`] and keeps every later command from starting
    /// before the earlier ones have finished (a full barrier), so that consecutive isolated
    /// marks time sections that do not overlap: benchmark repetitions, whose passes may be
    /// independent of the repetition before. Without profiling, only the barrier.
    pub fn mark_isolated(&mut self, name: &str) {
        self.barrier();
        self.mark(name);
    }

    /// A full memory barrier: every earlier write (shader or transfer) is visible to every
    /// later read or write (sync2).
    /// Declared passes need none: the recorder places theirs.
    pub(crate) fn barrier(&mut self) {
        self.tracker.clear();
        self.memory_barrier(Barrier::FULL);
    }

    /// One global memory barrier (sync2).
    fn memory_barrier(&mut self, Barrier { src, dst }: Barrier) {
        let barrier = vk::MemoryBarrier2::default()
            .src_stage_mask(src.0)
            .src_access_mask(src.1)
            .dst_stage_mask(dst.0)
            .dst_access_mask(dst.1);
        let barriers = [barrier];
        let dep = vk::DependencyInfo::default().memory_barriers(&barriers);
        unsafe { self.ctx.shared.device.cmd_pipeline_barrier2(self.cmd, &dep) };
        #[cfg(test)]
        {
            self.barriers += 1;
        }
    }

    /// Barriers recorded so far.
    #[cfg(test)]
    pub(crate) fn barriers_placed(&self) -> usize {
        self.barriers
    }

    /// Records a dispatch of `groups` workgroups with the given buffers at bindings 0..n and
    /// `push` as push constants; the caller places the barriers around it. Declared passes
    /// ([`Recorder::pass`]) check the bindings and place the barriers themselves.
    pub(crate) fn dispatch<P: NoUninit>(
        &mut self,
        pipe: &ComputePipeline,
        bindings: &[&dyn Bind],
        push: &P,
        groups: [u32; 3],
    ) {
        let PipelineHandles { bindings: count, name, .. } = pipe.0.handles();
        assert_eq!(bindings.len() as u32, count, "{name}: wrong number of bindings");
        self.tracker.untracked = true;
        for b in bindings {
            if let Some(keep) = b.keep() {
                self.keep(keep);
            }
        }
        self.keep(pipe.0.clone());
        let numbered: Vec<(u32, BufferBinding)> =
            bindings.iter().enumerate().map(|(i, b)| (i as u32, b.binding())).collect();
        self.dispatch_bound(pipe, &numbered, bytemuck::bytes_of(push), groups);
    }

    /// Binds `pipe` with `bindings` (number, range) and `push`, and dispatches `groups`.
    pub(crate) fn dispatch_bound(
        &mut self,
        pipe: &ComputePipeline,
        bindings: &[(u32, BufferBinding)],
        push: &[u8],
        groups: [u32; 3],
    ) {
        assert!(self.kind == QueueKind::Compute, "dispatch on the transfer queue");
        self.bind_numbered(
            vk::PipelineBindPoint::COMPUTE,
            vk::ShaderStageFlags::COMPUTE,
            pipe.0.handles(),
            bindings,
            push,
        );
        let device = &self.ctx.shared.device;
        unsafe {
            if groups.iter().all(|&g| g > 0) {
                device.cmd_dispatch(self.cmd, groups[0], groups[1], groups[2]);
            }
        }
    }

    /// Records the barrier that declared accesses `uses` need after what came before.
    pub(crate) fn declare(&mut self, uses: &[Use]) {
        if let Some(b) = self.tracker.access(uses) {
            self.memory_barrier(b);
        }
    }

    /// Keeps `keep` alive until the submission completes (once per object).
    pub(crate) fn keep(&mut self, keep: Keep) {
        if self.kept.insert(Arc::as_ptr(&keep) as *const () as usize) {
            self.keep.push(keep);
        }
    }

    /// Declares that the host reads `buffer` once this submission completes (a readback):
    /// the barrier that makes the GPU's writes to it visible to the host.
    pub fn host_read<T: Pod>(&mut self, buffer: &Buffer<T>) {
        self.declare(&[Use::host_read(buffer.binding())]);
        if let Some(keep) = Bind::keep(buffer) {
            self.keep(keep);
        }
    }

    /// Binds a pipeline (raw handle, layout, binding count, push-constant size, name), pushes
    /// its storage-buffer descriptors at bindings 0..n and its push constants. Shared by
    /// dispatches and draws.
    pub(crate) fn bind(
        &mut self,
        bind_point: vk::PipelineBindPoint,
        stages: vk::ShaderStageFlags,
        pipe: PipelineHandles<'_>,
        bindings: &[&dyn Bind],
        push: &[u8],
    ) {
        let PipelineHandles { bindings: count, name, .. } = pipe;
        assert_eq!(bindings.len() as u32, count, "{name}: wrong number of bindings");
        let numbered: Vec<(u32, BufferBinding)> =
            bindings.iter().enumerate().map(|(i, b)| (i as u32, b.binding())).collect();
        self.bind_numbered(bind_point, stages, pipe, &numbered, push);
    }

    /// [`Recorder::bind`] with each binding's number given.
    fn bind_numbered(
        &mut self,
        bind_point: vk::PipelineBindPoint,
        stages: vk::ShaderStageFlags,
        pipe: PipelineHandles<'_>,
        bindings: &[(u32, BufferBinding)],
        push: &[u8],
    ) {
        let PipelineHandles { raw, layout, push_bytes, name, .. } = pipe;
        assert!(
            push.len() as u32 <= push_bytes,
            "{name}: {} bytes of push constants for a pipeline that takes {push_bytes}",
            push.len()
        );
        let shared = &self.ctx.shared;
        let infos: Vec<vk::DescriptorBufferInfo> = bindings
            .iter()
            .map(|(_, b)| vk::DescriptorBufferInfo::default().buffer(b.raw).offset(b.offset).range(b.range))
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .zip(bindings)
            .map(|(info, (number, _))| {
                vk::WriteDescriptorSet::default()
                    .dst_binding(*number)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(std::slice::from_ref(info))
            })
            .collect();
        unsafe {
            shared.device.cmd_bind_pipeline(self.cmd, bind_point, raw);
            if !writes.is_empty() {
                shared.push_descriptor.cmd_push_descriptor_set(self.cmd, bind_point, layout, 0, &writes);
            }
            if push_bytes > 0 && !push.is_empty() {
                shared.device.cmd_push_constants(self.cmd, layout, stages, 0, push);
            }
        }
    }

    /// Copies all of `src` into `dst` (which must be at least as long), after the barrier
    /// the copy needs (a declared transfer).
    pub fn copy<T: Pod>(&mut self, src: &Buffer<T>, dst: &Buffer<T>) {
        self.copy_region(src, 0, dst, 0, src.len());
    }

    /// Copies `len` elements from `src[src_start..]` to `dst[dst_start..]`.
    pub fn copy_region<T: Pod>(
        &mut self,
        src: &Buffer<T>,
        src_start: usize,
        dst: &Buffer<T>,
        dst_start: usize,
        len: usize,
    ) {
        assert!(src_start + len <= src.len() && dst_start + len <= dst.len(), "copy out of bounds");
        if len == 0 {
            return;
        }
        let size = std::mem::size_of::<T>() as u64;
        let range = |start: usize| (start as u64 * size, len as u64 * size);
        let (s, d) = (range(src_start), range(dst_start));
        self.declare(&[
            Use::transfer_read(BufferBinding { raw: src.raw, offset: s.0, range: s.1 }),
            Use::transfer_write(BufferBinding { raw: dst.raw, offset: d.0, range: d.1 }),
        ]);
        self.keep(Bind::keep(src).unwrap());
        self.keep(Bind::keep(dst).unwrap());
        let region = vk::BufferCopy::default()
            .src_offset(src_start as u64 * size)
            .dst_offset(dst_start as u64 * size)
            .size(len as u64 * size);
        unsafe { self.ctx.shared.device.cmd_copy_buffer(self.cmd, src.raw, dst.raw, &[region]) };
    }

    /// Fills a whole buffer with a repeated 32-bit pattern, after the barrier the fill
    /// needs (a declared transfer).
    pub fn fill<T: Pod>(&mut self, dst: &Buffer<T>, word: u32) {
        self.declare(&[Use::transfer_write(dst.binding())]);
        self.keep(Bind::keep(dst).unwrap());
        unsafe { self.ctx.shared.device.cmd_fill_buffer(self.cmd, dst.raw, 0, vk::WHOLE_SIZE, word) };
    }

    /// Makes this submission wait (on the GPU) until `other` has completed, e.g. compute
    /// work after an upload on the transfer queue.
    pub fn wait_for(&mut self, other: &Submission) {
        self.waits.push((other.timeline, other.value));
    }

    /// Makes this submission wait (on the GPU) until everything submitted to its queue before
    /// it has completed, with its writes visible: for work that follows submissions the
    /// caller no longer holds (a readback after a stream of kernels). Queue order alone
    /// orders nothing, and the recorder tracks accesses within its own command buffer only.
    pub fn after_queue(&mut self) {
        self.after_queue = true;
    }

    /// Ends recording and submits; the queue's timeline semaphore is signalled on completion.
    pub fn submit(mut self) -> Result<Submission> {
        if self.reusable {
            return Err(EngineError::InvalidInput("a replay recorder is ended with finish, not submit".into()));
        }
        let device = &self.ctx.shared.device;
        unsafe { device.end_command_buffer(self.cmd) }.vk("vkEndCommandBuffer")?;
        let (timeline, value) = submit_on(&self.ctx.shared, self.kind, self.cmd, &self.waits, self.after_queue)?;
        let pool = std::mem::replace(&mut self.pool, vk::CommandPool::null());
        Ok(Submission {
            shared: self.ctx.shared.clone(),
            timeline,
            value,
            pool,
            timestamps: self.timestamps.take(),
            keep: std::mem::take(&mut self.keep),
            done: false,
        })
    }

    /// Ends a recorder of [`Context::replay_recorder`]: its commands become a [`Replay`].
    /// Timestamps and waits on other submissions belong to one submission and are refused.
    pub fn finish(mut self) -> Result<Replay> {
        if !self.reusable || self.timestamps.is_some() || !self.waits.is_empty() {
            return Err(EngineError::InvalidInput(
                "a replay is finished from a replay recorder without profiling or waits".into(),
            ));
        }
        unsafe { self.ctx.shared.device.end_command_buffer(self.cmd) }.vk("vkEndCommandBuffer")?;
        Ok(Replay {
            shared: self.ctx.shared.clone(),
            kind: self.kind,
            pool: std::mem::replace(&mut self.pool, vk::CommandPool::null()),
            cmd: self.cmd,
            _keep: std::mem::take(&mut self.keep),
        })
    }
}

/// Submits `cmd` on its queue, waiting (on the GPU) for `waits` and, with `after_queue`,
/// for everything submitted to the queue before; returns the timeline value it signals.
fn submit_on(
    shared: &Shared,
    kind: QueueKind,
    cmd: vk::CommandBuffer,
    waits: &[(vk::Semaphore, u64)],
    after_queue: bool,
) -> Result<(vk::Semaphore, u64)> {
    let q = queue(shared, kind);
    let raw_queue = q.raw.lock().unwrap();
    let value = q.next_value.fetch_add(1, Ordering::SeqCst);
    let cmd_infos = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
    let signal = [vk::SemaphoreSubmitInfo::default()
        .semaphore(q.timeline)
        .value(value)
        .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
    // Timeline values complete in order: the one before this submission's covers all earlier.
    let earlier = after_queue.then_some((q.timeline, value - 1));
    let waits: Vec<vk::SemaphoreSubmitInfo> = waits
        .iter()
        .chain(earlier.iter())
        .map(|&(s, v)| {
            vk::SemaphoreSubmitInfo::default().semaphore(s).value(v).stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
        })
        .collect();
    let submit = vk::SubmitInfo2::default()
        .command_buffer_infos(&cmd_infos)
        .signal_semaphore_infos(&signal)
        .wait_semaphore_infos(&waits);
    unsafe { shared.device.queue_submit2(*raw_queue, &[submit], vk::Fence::null()) }.vk("vkQueueSubmit2")?;
    Ok((q.timeline, value))
}

/// Blocks until `timeline` reaches `value`.
fn wait_on(shared: &Shared, timeline: vk::Semaphore, value: u64) -> Result<()> {
    let semaphores = [timeline];
    let values = [value];
    let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
    unsafe { shared.device.wait_semaphores(&info, u64::MAX) }.map_err(|result| match result {
        vk::Result::ERROR_DEVICE_LOST => EngineError::Vulkan { call: "vkWaitSemaphores (device lost)", result },
        result => EngineError::Vulkan { call: "vkWaitSemaphores", result },
    })
}

/// Commands recorded once ([`Recorder::finish`]) and run again and again, for loops whose
/// state lives on the device, each run going on where the last one stopped: recording the
/// same passes anew for every batch would cost the host more than the GPU takes to run
/// them. Each run waits, on the GPU, for everything submitted to its queue before it, so it
/// sees the previous run's writes; [`Replay::run`] returns once the run has completed. The
/// buffers and pipelines the commands use are kept until the replay is dropped.
pub struct Replay {
    shared: Arc<Shared>,
    kind: QueueKind,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    _keep: Vec<Keep>,
}

impl Replay {
    /// Runs the recorded commands once more and waits for them.
    pub fn run(&self) -> Result<()> {
        let (timeline, value) = submit_on(&self.shared, self.kind, self.cmd, &[], true)?;
        wait_on(&self.shared, timeline, value)
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        // No run is in flight: run() returns only once its submission has completed.
        unsafe { self.shared.device.destroy_command_pool(self.pool, None) };
    }
}

/// Splits `groups` over the x and y axes of a dispatch grid.
pub fn linear_grid(groups: u32) -> [u32; 3] {
    if groups <= MAX_GROUPS_PER_AXIS {
        [groups, 1, 1]
    } else {
        [MAX_GROUPS_PER_AXIS, groups.div_ceil(MAX_GROUPS_PER_AXIS), 1]
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // A recorder dropped without submit: nothing is in flight, free at once.
        if self.pool != vk::CommandPool::null() {
            unsafe { self.ctx.shared.device.destroy_command_pool(self.pool, None) };
        }
    }
}

/// Work in flight on a queue. Waiting (or dropping) blocks until the GPU has finished it.
/// It owns the buffers and pipelines its commands use until then.
pub struct Submission {
    shared: Arc<Shared>,
    timeline: vk::Semaphore,
    value: u64,
    pool: vk::CommandPool,
    timestamps: Option<Timestamps>,
    keep: Vec<Keep>,
    done: bool,
}

impl Submission {
    fn block(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let r = wait_on(&self.shared, self.timeline, self.value);
        self.done = true;
        unsafe { self.shared.device.destroy_command_pool(self.pool, None) };
        self.keep.clear();
        r
    }

    /// Whether the GPU has finished this work (does not block).
    pub fn is_complete(&self) -> bool {
        self.done
            || unsafe { self.shared.device.get_semaphore_counter_value(self.timeline) }
                .map(|v| v >= self.value)
                .unwrap_or(true)
    }

    /// Blocks until the GPU has finished this work.
    pub fn wait(mut self) -> Result<()> {
        self.block()
    }

    /// Blocks, then returns the GPU time of each pass marked with [`Recorder::mark`] (empty
    /// without profiling).
    pub fn wait_profiled(mut self) -> Result<Vec<PassTime>> {
        self.block()?;
        match &self.timestamps {
            Some(ts) => ts.read(),
            None => Ok(Vec::new()),
        }
    }
}

impl Drop for Submission {
    fn drop(&mut self) {
        let _ = self.block();
    }
}
