//! Streaming chunks of work through the GPU: a ring of chunk slots with at most `depth`
//! of them in flight, so the host stages chunk i+1 (and the transfer queue uploads it)
//! while the compute queue works on chunk i, and results come back in submission order.
//!
//! A slot is whatever buffers one chunk needs (the app's type `S`); a tag is what the app
//! wants back with the chunk's results (`T`: pair names, a section index). The ring never
//! blocks on a chunk until it must: [`Stream::push`] waits for the oldest chunk only when
//! `depth` are already in flight and hands it back, so the caller reads its results and
//! reuses its slot.

use std::collections::VecDeque;

use bytemuck::Pod;

use crate::commands::Submission;
use crate::context::Context;
use crate::error::Result;
use crate::memory::Buffer;
use crate::profile::PassTime;

/// A chunk whose GPU work has completed, with its slot to read and reuse.
pub struct Done<S, T> {
    pub slot: S,
    pub tag: T,
    /// GPU time per marked pass of the chunk's submissions (empty without profiling).
    pub passes: Vec<PassTime>,
}

struct Chunk<S, T> {
    slot: S,
    tag: T,
    /// In submission order: an upload on the transfer queue, then the compute that waits
    /// for it; dropping a submission blocks, so the ring holds them until the chunk is done.
    work: Vec<Submission>,
}

impl<S, T> Chunk<S, T> {
    fn finish(self) -> Result<Done<S, T>> {
        let mut passes = Vec::new();
        for submission in self.work {
            passes.extend(submission.wait_profiled()?);
        }
        Ok(Done { slot: self.slot, tag: self.tag, passes })
    }

    fn is_complete(&self) -> bool {
        self.work.iter().all(Submission::is_complete)
    }
}

/// The ring of chunks in flight.
pub struct Stream<S, T> {
    depth: usize,
    in_flight: VecDeque<Chunk<S, T>>,
}

impl<S, T> Stream<S, T> {
    /// A ring with at most `depth` chunks in flight (at least one).
    pub fn new(depth: usize) -> Stream<S, T> {
        let depth = depth.max(1);
        Stream { depth, in_flight: VecDeque::with_capacity(depth) }
    }

    /// Chunks submitted and not yet handed back.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Puts a submitted chunk in the ring. When the ring was full, first waits for the
    /// oldest chunk and returns it.
    pub fn push(&mut self, slot: S, tag: T, work: impl IntoIterator<Item = Submission>) -> Result<Option<Done<S, T>>> {
        let oldest = if self.in_flight.len() >= self.depth { self.wait()? } else { None };
        self.in_flight.push_back(Chunk { slot, tag, work: work.into_iter().collect() });
        Ok(oldest)
    }

    /// The oldest chunk if the GPU has finished it; never blocks.
    pub fn poll(&mut self) -> Result<Option<Done<S, T>>> {
        match self.in_flight.front() {
            Some(chunk) if chunk.is_complete() => self.wait(),
            _ => Ok(None),
        }
    }

    /// Waits for the oldest chunk; `None` when nothing is in flight.
    pub fn wait(&mut self) -> Result<Option<Done<S, T>>> {
        self.in_flight.pop_front().map(Chunk::finish).transpose()
    }
}

/// Submits the copy of `src[..len]` (host-visible staging) into `dst[..len]` on the
/// transfer queue (the compute queue on devices without one). Compute work that reads
/// `dst` waits for the returned submission with [`crate::Recorder::wait_for`]; keep it (in
/// the chunk's [`Stream::push`]) until that work is done.
pub fn upload<T: Pod>(ctx: &Context, src: &Buffer<T>, dst: &Buffer<T>, len: usize) -> Result<Submission> {
    upload_to(ctx, src, dst, 0, len)
}

/// [`upload`] into `dst[dst_start..dst_start + len]`: chunks that fill parts of one device
/// buffer (a decoder's sections).
pub fn upload_to<T: Pod>(
    ctx: &Context,
    src: &Buffer<T>,
    dst: &Buffer<T>,
    dst_start: usize,
    len: usize,
) -> Result<Submission> {
    let mut rec = ctx.transfer_recorder()?;
    rec.copy_region(src, 0, dst, dst_start, len);
    rec.submit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Location;
    use crate::prims::reduce::SumPush;
    use crate::testing::{assert_no_validation_messages, context};

    /// A test chunk's buffers: staging input, device input, per-workgroup sums.
    type Slot = (Buffer<u32>, Buffer<u32>, Buffer<u32>);

    /// Streams chunks of awkward lengths through upload (transfer queue) then a reduction
    /// (compute queue), two in flight, and checks every chunk's sum arrives in order.
    #[test]
    fn chunks_come_back_in_order_with_their_results() {
        let ctx = context();
        let sum = ctx.kernel::<SumPush>(&crate::shaders::kernels::REDUCE_SUM_U32, &[64]).unwrap();
        let lengths = [1usize, 63, 64, 1000, 4097, 31];
        let capacity = *lengths.iter().max().unwrap();
        let mut stream: Stream<Slot, (usize, u64)> = Stream::new(2);
        let mut seen = Vec::new();
        let mut spare: Vec<Slot> = Vec::new();
        let mut take = |done: Option<Done<Slot, (usize, u64)>>, spare: &mut Vec<Slot>| -> Result<()> {
            if let Some(done) = done {
                let (_, _, sums) = &done.slot;
                let got: u64 = sums.mapped()?.iter().map(|&s| s as u64).sum();
                assert_eq!(got, done.tag.1, "chunk {} summed wrong", done.tag.0);
                seen.push(done.tag.0);
                spare.push(done.slot);
            }
            Ok(())
        };
        for (i, &len) in lengths.iter().enumerate() {
            let (mut staging, device, sums) = match spare.pop() {
                Some(slot) => slot,
                None => (
                    ctx.buffer::<u32>(capacity, Location::Upload, "stream test staging").unwrap(),
                    ctx.buffer::<u32>(capacity, Location::Device, "stream test input").unwrap(),
                    ctx.buffer::<u32>(capacity.div_ceil(64), Location::Download, "stream test sums").unwrap(),
                ),
            };
            let values: Vec<u32> = (0..len as u32).map(|k| k.wrapping_mul(2654435761) % 1000 + 1).collect();
            staging.mapped_mut().unwrap()[..len].copy_from_slice(&values);
            let copy = upload(ctx, &staging, &device, len).unwrap();
            let mut rec = ctx.recorder().unwrap();
            rec.wait_for(&copy);
            rec.fill(&sums, 0);
            let groups = len.div_ceil(64) as u32;
            let push = SumPush { n: len as u32, per_group: 64 };
            rec.pass(&sum).read(&device).write(&sums).push(&push).dispatch_linear(groups).unwrap();
            let compute = rec.submit().unwrap();
            let want = values.iter().map(|&v| v as u64).sum();
            let done = stream.push((staging, device, sums), (i, want), [copy, compute]).unwrap();
            take(done, &mut spare).unwrap();
            assert!(stream.in_flight() <= 2);
        }
        while stream.in_flight() > 0 {
            let done = stream.wait().unwrap();
            take(done, &mut spare).unwrap();
        }
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
        assert_no_validation_messages();
    }

    /// Chunks uploaded into their parts of one device buffer arrive where they belong.
    #[test]
    fn uploads_to_offsets_fill_one_buffer() {
        let ctx = context();
        let parts = [(0usize, 5usize), (5, 64), (69, 3)];
        let device = ctx.buffer::<u32>(72, Location::Device, "upload_to target").unwrap();
        let mut copies = Vec::new();
        let mut stagings = Vec::new();
        for (i, &(start, len)) in parts.iter().enumerate() {
            let mut staging = ctx.buffer::<u32>(len, Location::Upload, "upload_to staging").unwrap();
            staging.mapped_mut().unwrap().iter_mut().enumerate().for_each(|(k, x)| *x = (i * 1000 + k) as u32);
            copies.push(upload_to(ctx, &staging, &device, start, len).unwrap());
            stagings.push(staging);
        }
        copies.into_iter().for_each(|c| c.wait().unwrap());
        let got = ctx.download(&device).unwrap();
        let want: Vec<u32> =
            parts.iter().enumerate().flat_map(|(i, &(_, len))| (0..len).map(move |k| (i * 1000 + k) as u32)).collect();
        assert_eq!(got, want);
        assert_no_validation_messages();
    }
}
