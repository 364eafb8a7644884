//! Host heap settings for programs that allocate and free buffers of many MB every frame.

/// Keeps freed blocks of up to 32 MiB in the process's heap for reuse, instead of glibc's
/// default of returning every block over 128 KiB (or a threshold it raises only once it
/// has seen such frees) to the system: each new frame's buffers (received pieces, staging
/// copies) then touched fresh pages and paid a page fault for each 4 KiB of them. On the
/// 4x H200 host this made the 4-rank 4K frame 46.0 ms instead of 39.0 ms (measured with the
/// same settings as GLIBC_TUNABLES). 32 MiB is the largest threshold glibc accepts. A
/// no-op where the C library is not glibc.
pub fn keep_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        // Both calls only change allocator tunables; they return 0 on a rejected value,
        // which leaves glibc's defaults, so there is nothing to handle.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}
