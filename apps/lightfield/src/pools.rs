//! A thread pool of its own for the work that runs beside an encode's gather. The gather
//! (rayon's global pool) is what keeps the GPU fed; a section's compression (about 15 ms of
//! zstd) queued on the same pool would hold the threads it waits for.

use std::sync::OnceLock;

/// The pool that compresses `.lfc` sections while chunks are encoded: half the cores, made
/// on first use; `None` where its threads cannot be made (the global pool compresses then).
pub fn compression() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
        rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("lfc-compress-{i}")).build().ok()
    })
    .as_ref()
}
