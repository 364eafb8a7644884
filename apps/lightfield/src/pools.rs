//! Thread pools of their own for the work that runs beside an encode's gather. The gather
//! (rayon's global pool) is what keeps the GPU fed; a section's compression (about 15 ms of
//! zstd) or a band's read queued on the same pool would hold the threads it waits for.
//! Each pool has half the cores; where its threads cannot be made, the work runs on the
//! global pool as it would without it.

use std::sync::OnceLock;

/// The pool of half the cores named `name` kept in `pool`, made on first use.
fn half_the_cores(
    pool: &'static OnceLock<Option<rayon::ThreadPool>>,
    name: &'static str,
) -> Option<&'static rayon::ThreadPool> {
    pool.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
        rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(move |i| format!("{name}-{i}")).build().ok()
    })
    .as_ref()
}

/// The pool that compresses `.lfc` sections while chunks are encoded.
pub fn compression() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    half_the_cores(&POOL, "lfc-compress")
}

/// The pool that reads a `.npy` light field's bands while it is encoded.
pub fn reading() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    half_the_cores(&POOL, "npy-read")
}

/// Runs `work` on `pool`, or on the global pool where there is none.
pub fn install<R: Send>(pool: Option<&'static rayon::ThreadPool>, work: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}
