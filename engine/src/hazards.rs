//! The hazards between a command buffer's commands: per buffer range, the last write and the
//! reads since it ([`Tracker`]), and the one global memory barrier a new access needs
//! ([`Barrier`]): read after write, write after write (a memory dependency), write after read
//! (execution only), none between independent accesses. The recorder ([`crate::commands`])
//! consults it before every pass ([`crate::pass`]), copy, fill and host read.

use std::collections::HashMap;

use ash::vk;

use crate::kernel::Access;
use crate::memory::BufferBinding;

pub(crate) type Stages = vk::PipelineStageFlags2;
pub(crate) type Accesses = vk::AccessFlags2;

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

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

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

    #[test]
    fn untracked_work_is_followed_by_a_full_barrier() {
        let mut t = Tracker { untracked: true, ..Tracker::default() };
        assert_eq!(t.access(&[Use::compute(whole(A), Access::Read)]), Some(Barrier::FULL));
        assert_eq!(t.access(&[Use::compute(whole(A), Access::Read)]), None);
    }
}
