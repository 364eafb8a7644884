//! Message passing between ranks: MPI when the process was started by `mpirun`, otherwise a
//! single rank that needs no MPI at all (so the binary runs anywhere without `mpirun`).

use std::mem::ManuallyDrop;

use mpi::collective::{CommunicatorCollectives, Root};
use mpi::ffi::MPI_Comm;
use mpi::point_to_point::{Destination, Source};
use mpi::raw::FromRaw;
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::error::{CompositeError, Result};

/// Point-to-point exchange and a gather of statistics, all the compositing needs.
pub trait Comm {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// The rank among the ranks of this node (that share its memory), which picks the GPU.
    fn local_rank(&self) -> usize;
    /// Tells every rank whether this one failed, with its `error` message; returns the lowest
    /// rank that did and its message, the same on every rank.
    fn first_error(&self, error: Option<String>) -> Option<(usize, String)>;
    /// Sends each `(destination, words)` and receives one message from each rank of `from`,
    /// returned in the order of `from`.
    fn exchange(&self, sends: &[(usize, &[u32])], from: &[usize]) -> Result<Vec<Vec<u32>>>;
    /// Gathers `values` (the same length on every rank) to rank 0: one vector per rank there,
    /// `None` elsewhere.
    fn gather(&self, values: &[f64]) -> Option<Vec<Vec<f64>>>;
    /// Waits until every rank got here.
    fn barrier(&self);
    /// Ends every rank's process with `code` (after an error on one rank, so the others do
    /// not wait for it forever).
    fn abort(&self, code: i32) -> !;
}

/// The one rank of a process started without `mpirun`.
pub struct Single;

impl Comm for Single {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn local_rank(&self) -> usize {
        0
    }

    fn first_error(&self, error: Option<String>) -> Option<(usize, String)> {
        error.map(|message| (0, message))
    }

    fn exchange(&self, sends: &[(usize, &[u32])], from: &[usize]) -> Result<Vec<Vec<u32>>> {
        if sends.is_empty() && from.is_empty() {
            Ok(Vec::new())
        } else {
            Err(CompositeError::Mpi("a single rank has no one to exchange with".into()))
        }
    }

    fn gather(&self, values: &[f64]) -> Option<Vec<Vec<f64>>> {
        Some(vec![values.to_vec()])
    }

    fn barrier(&self) {}

    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}

/// An MPI communicator: the world of a process `mpirun` started ([`Mpi::init`]), or a
/// duplicate of a caller's communicator ([`Mpi::on`]), so that the compositor's messages
/// never match the caller's.
pub struct Mpi {
    /// Freed on drop unless MPI was finalised first (a caller's duplicate; the world is
    /// never freed).
    world: std::mem::ManuallyDrop<mpi::topology::SimpleCommunicator>,
    /// This process's rank among the ranks that share its node's memory.
    local_rank: usize,
    /// Finalizes MPI when dropped: only where this crate initialised it.
    _universe: Option<mpi::environment::Universe>,
}

impl Mpi {
    /// Whether this process was started by an MPI launcher.
    pub fn launched() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
    }

    /// Initialises MPI (finalised when the result is dropped) and takes its world.
    pub fn init() -> Result<Mpi> {
        let universe = mpi::initialize().ok_or_else(|| CompositeError::Mpi("MPI was already initialised".into()))?;
        let mut mpi = Mpi::on(&universe.world())?;
        mpi._universe = Some(universe);
        Ok(mpi)
    }

    /// A duplicate of `comm` (collective over its ranks); MPI stays the caller's to finalise.
    pub fn on(comm: &impl Communicator) -> Result<Mpi> {
        if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
            return Err(CompositeError::Mpi("MPI is not initialised, or already finalised".into()));
        }
        let world = comm.duplicate();
        let local_rank = world.split_shared(world.rank()).rank() as usize;
        Ok(Mpi { world: std::mem::ManuallyDrop::new(world), local_rank, _universe: None })
    }
}

/// A caller's communicator handle, borrowed (never freed here: the compositor works on a
/// duplicate, [`Mpi::on`]). Refuses MPI_COMM_NULL, an inter-communicator, and a process
/// where MPI is not initialised or already finalised.
///
/// # Safety
/// `comm` is a live communicator handle of this process's MPI, or MPI_COMM_NULL.
pub unsafe fn borrow_raw(comm: MPI_Comm) -> Result<ManuallyDrop<SimpleCommunicator>> {
    let unusable = |m: &str| Err(CompositeError::Mpi(m.into()));
    if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
        return unusable("MPI is not initialised (call MPI_Init first), or already finalised");
    }
    if comm == mpi::ffi::RSMPI_COMM_NULL {
        return unusable("the communicator is MPI_COMM_NULL");
    }
    if comm == mpi::ffi::RSMPI_COMM_WORLD {
        return Ok(ManuallyDrop::new(SimpleCommunicator::world()));
    }
    if comm == mpi::ffi::RSMPI_COMM_SELF {
        return Ok(ManuallyDrop::new(SimpleCommunicator::self_comm()));
    }
    let mut inter: std::ffi::c_int = 0;
    // SAFETY: a live handle (the caller's contract).
    if unsafe { mpi::ffi::MPI_Comm_test_inter(comm, &mut inter) } != 0 || inter != 0 {
        return unusable("the communicator is an inter-communicator; an intra-communicator is needed");
    }
    // SAFETY: as above; ManuallyDrop keeps it from being freed.
    Ok(ManuallyDrop::new(unsafe { SimpleCommunicator::from_raw(comm) }))
}

impl Mpi {
    /// A duplicate of the communicator whose Fortran handle is `handle` (what mpi4py's
    /// `Comm.py2f()` returns), checked as [`borrow_raw`] checks a C handle.
    ///
    /// # Safety
    /// `handle` names a live communicator of this process's MPI (MPI_Comm_f2c trusts it
    /// where the MPI library does not check it).
    pub unsafe fn on_fortran(handle: i32) -> Result<Mpi> {
        if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
            return Err(CompositeError::Mpi("MPI is not initialised, or already finalised".into()));
        }
        // SAFETY: MPI is initialised; the handle is the caller's.
        let comm = unsafe { borrow_raw(mpi::ffi::RSMPI_Comm_f2c(handle)) }?;
        Mpi::on(&*comm)
    }
}

impl Drop for Mpi {
    fn drop(&mut self) {
        if !mpi::environment::is_finalized() {
            // SAFETY: dropped once, here, and not used after.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.world) }
        }
    }
}

impl Comm for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn local_rank(&self) -> usize {
        self.local_rank
    }

    fn first_error(&self, error: Option<String>) -> Option<(usize, String)> {
        // The lowest failed rank, or the size where none failed.
        let mine = if error.is_some() { self.world.rank() } else { self.world.size() };
        let mut lowest = mine;
        self.world.all_reduce_into(&mine, &mut lowest, mpi::collective::SystemOperation::min());
        if lowest == self.world.size() {
            return None;
        }
        // That rank sends its message: the length, then the bytes.
        let root = self.world.process_at_rank(lowest);
        let mut bytes = if lowest == self.world.rank() { error.unwrap_or_default().into_bytes() } else { Vec::new() };
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
        Some((lowest as usize, String::from_utf8_lossy(&bytes).into_owned()))
    }

    fn exchange(&self, sends: &[(usize, &[u32])], from: &[usize]) -> Result<Vec<Vec<u32>>> {
        Ok(mpi::request::scope(|scope| {
            let requests: Vec<_> = sends
                .iter()
                .map(|&(to, words)| self.world.process_at_rank(to as i32).immediate_send(scope, words))
                .collect();
            let received: Vec<Vec<u32>> =
                from.iter().map(|&src| self.world.process_at_rank(src as i32).receive_vec::<u32>().0).collect();
            for r in requests {
                r.wait();
            }
            received
        }))
    }

    fn gather(&self, values: &[f64]) -> Option<Vec<Vec<f64>>> {
        let root = self.world.process_at_rank(0);
        if self.rank() == 0 {
            let mut all = vec![0.0f64; values.len() * self.size()];
            root.gather_into_root(values, &mut all[..]);
            Some(all.chunks(values.len().max(1)).map(|c| c.to_vec()).collect())
        } else {
            root.gather_into(values);
            None
        }
    }

    fn barrier(&self) {
        self.world.barrier();
    }

    fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// Ranks as threads of one process, for tests of what runs on every rank.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::{Arc, Barrier};

    use super::Comm;
    use crate::error::Result;

    /// One rank of [`threads`]: a channel to and from every rank.
    pub struct Threads {
        rank: usize,
        size: usize,
        to: Vec<Sender<Vec<u32>>>,
        from: Vec<Receiver<Vec<u32>>>,
        barrier: Arc<Barrier>,
    }

    /// `size` ranks, to be moved each into its thread.
    pub fn threads(size: usize) -> Vec<Threads> {
        let barrier = Arc::new(Barrier::new(size));
        let mut to: Vec<Vec<Sender<Vec<u32>>>> = (0..size).map(|_| Vec::new()).collect();
        let mut from: Vec<Vec<Receiver<Vec<u32>>>> = (0..size).map(|_| Vec::new()).collect();
        for sender in to.iter_mut() {
            for receiver in from.iter_mut() {
                let (tx, rx) = channel();
                sender.push(tx);
                receiver.push(rx);
            }
        }
        let comms = to.into_iter().zip(from).enumerate();
        comms.map(|(rank, (to, from))| Threads { rank, size, to, from, barrier: barrier.clone() }).collect()
    }

    impl Comm for Threads {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn local_rank(&self) -> usize {
            self.rank
        }
        fn first_error(&self, error: Option<String>) -> Option<(usize, String)> {
            // Every rank tells every rank (itself included) its message, as UTF-8 bytes a
            // word each after a failed flag.
            let mine: Vec<u32> = match &error {
                Some(m) => std::iter::once(1).chain(m.bytes().map(u32::from)).collect(),
                None => vec![0],
            };
            let all: Vec<usize> = (0..self.size).collect();
            let sends: Vec<(usize, &[u32])> = all.iter().map(|&r| (r, &mine[..])).collect();
            let told = self.exchange(&sends, &all).expect("threads exchange");
            told.iter()
                .enumerate()
                .find(|(_, m)| m[0] == 1)
                .map(|(r, m)| (r, String::from_utf8(m[1..].iter().map(|&b| b as u8).collect()).expect("UTF-8")))
        }
        fn exchange(&self, sends: &[(usize, &[u32])], from: &[usize]) -> Result<Vec<Vec<u32>>> {
            for &(to, words) in sends {
                self.to[to].send(words.to_vec()).unwrap();
            }
            Ok(from.iter().map(|&src| self.from[src].recv().unwrap()).collect())
        }
        fn gather(&self, _: &[f64]) -> Option<Vec<Vec<f64>>> {
            unimplemented!("the compositor gathers by exchange")
        }
        fn barrier(&self) {
            self.barrier.wait();
        }
        fn abort(&self, _: i32) -> ! {
            unimplemented!("the compositor aborts nothing")
        }
    }
}
