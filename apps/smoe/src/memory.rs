//! What `smoe fit` will allocate, estimated from the input's shape and K before anything
//! is: device memory per phase (k-means start, EM, refinement; each phase frees its buffers
//! before the next, so the peak is the largest), and the host's largest buffers. Every
//! phase is O(samples + K + tile-list entries): the E-step keeps one log-sum-exp per
//! sample, never a samples x K matrix.

use crate::model::packed_len;

/// Bytes of an f32 or u32.
const WORD: u64 = 4;

/// Tile-list entries assumed per kernel: fitted photos at about 44 pixels per kernel list
/// each kernel in about 12 tiles of 16x16 (lavapipe, 96x80 at K = 150); the estimate allows
/// 32, plus the renderer's 64 per tile.
const ENTRIES_PER_KERNEL: u64 = 32;
const ENTRIES_PER_TILE: u64 = 64;

/// The estimate for one fit.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct FitMemory {
    /// Peak device bytes (the largest phase).
    pub device_bytes: u64,
    /// The largest single device buffer (the joint samples).
    pub largest_buffer_bytes: u64,
    /// Peak host bytes of the fit's own buffers (pixels, samples, refinement state).
    pub host_bytes: u64,
}

/// The estimate for fitting `k` kernels to a grid of `extent` (W, H[, U, V]) on the GPU,
/// with the culled EM for images (tiles of `tile` pixels) and the dense one for light
/// fields. Saturating arithmetic: an absurd shape estimates u64::MAX, which every check
/// refuses.
pub fn fit_memory(extent: &[usize], k: usize, tile: u32) -> FitMemory {
    let e: Vec<u64> = extent.iter().map(|&v| v as u64).collect();
    let p = e.len() as u64;
    let d = p + 3;
    let pixels = e[0].saturating_mul(e[1]);
    let n = e.iter().fold(1u64, |a, &v| a.saturating_mul(v));
    let k = k as u64;
    let tri = packed_len(d as usize) as u64;
    let (raw, em_prep) = (1 + d + tri, d + tri + 1);
    let prep = if p == 2 { 16 } else { 32 };
    let tiles = e[0].div_ceil(tile as u64).saturating_mul(e[1].div_ceil(tile as u64));
    let lists = k.saturating_mul(ENTRIES_PER_KERNEL).saturating_add(tiles.saturating_mul(ENTRIES_PER_TILE));
    // The renderer: records, culling records, per-tile keys/counts/offsets/cursors, lists,
    // and its output of `out` words per pixel.
    let renderer = |out: u64| {
        k.saturating_mul(raw + prep + 12)
            .saturating_add(tiles.saturating_mul(4))
            .saturating_add(lists)
            .saturating_add(pixels.saturating_mul(out))
    };
    let samples = n.saturating_mul(d);
    let kmeans =
        samples.saturating_add(n.saturating_mul(2)).saturating_add(n / 256 + 1).saturating_add(k.saturating_mul(d + 2));
    let em = if p == 2 {
        renderer(3)
            .saturating_add(samples)
            .saturating_add(k.saturating_mul(em_prep))
            .saturating_add(n)
            .saturating_add(tiles)
    } else {
        samples.saturating_add(k.saturating_mul(raw + em_prep)).saturating_add(n).saturating_add(n / 256 + 1)
    };
    // Refinement: the renderer, the target, and per kernel the gradient record and its
    // partial records, the parameters, Adam's two moments and the best parameters (4 x `opt`
    // values) and the colour covariance; per pixel group a partial loss. Left out: three words per step
    // (losses, prior maxima), 1.2 MB at the largest --refine-steps.
    let opt = p + packed_len(p as usize) as u64 + 4 + 3 * p;
    let refine = renderer(4)
        .saturating_add(n.saturating_mul(3))
        .saturating_add(k.saturating_mul(prep * (1 + crate::gpu::refine::splits(k as usize) as u64) + 4 * opt + 6))
        .saturating_add(pixels / 256 + 1);
    let device_words = kmeans.max(em).max(refine);
    // Host: the pixels, the joint samples (built twice at most at once), one view's
    // rendered state per refinement step, and the refinement's f64 vectors (parameters,
    // Adam's moments, scales, gradients, the best model: about 8 per value).
    let host_words = n
        .saturating_mul(3)
        .saturating_add(samples.saturating_mul(2))
        .saturating_add(pixels.saturating_mul(4))
        .saturating_add(k.saturating_mul(raw).saturating_mul(8 * 2));
    FitMemory {
        device_bytes: device_words.saturating_mul(WORD),
        largest_buffer_bytes: samples.saturating_mul(WORD),
        host_bytes: host_words.saturating_mul(WORD),
    }
}

/// The largest device-local memory heap of `info` (None when it reports none).
pub fn device_local_bytes(info: &engine::DeviceInfo) -> Option<u64> {
    info.memory_heaps.iter().filter(|h| h.device_local).map(|h| h.bytes).max()
}

/// Refuses a fit of `kernels` kernels to `samples` samples whose estimated device memory (or
/// largest buffer) `ctx`'s device cannot hold, before anything is allocated on it.
pub fn check_device(
    ctx: &engine::Context,
    memory: &FitMemory,
    samples: usize,
    kernels: usize,
) -> crate::error::Result<()> {
    let info = ctx.info();
    let what = format!("{samples} samples and {kernels} kernels");
    if let Some(heap) = device_local_bytes(info) {
        // A tenth of the heap is left to the driver and other processes.
        if memory.device_bytes > heap - heap / 10 {
            return Err(crate::error::SmoeError::DeviceMemory {
                what,
                needed: memory.device_bytes,
                available: heap,
                device: info.name.clone(),
            });
        }
    }
    ctx.check_binding(memory.largest_buffer_bytes, &format!("fitting {what}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes stay far below an H200's 139 GiB; the estimate grows linearly in
    /// samples and kernels, not with their product.
    #[test]
    fn photo_sizes_fit_and_scale_linearly() {
        let small = fit_memory(&[768, 512], 9000, 16);
        let large = fit_memory(&[2048, 1365], 70_000, 16);
        eprintln!("768x512 K=9000: {small:?}\n2048x1365 K=70000: {large:?}");
        assert!(large.device_bytes < 1 << 30, "{large:?}");
        let ratio = large.device_bytes as f64 / small.device_bytes as f64;
        assert!(ratio < 10.0, "{ratio}");
        assert_eq!(fit_memory(&[usize::MAX, 2], 5, 16).device_bytes, u64::MAX);
    }
}
