//! Decoding `.lfc` bytes straight into device memory (`lightfield view`, `lightfield
//! bench`): the sections are decompressed and parsed in parallel on the rayon pool, each
//! into its own host-visible staging buffer laid out as the kernel reads it; as each is
//! ready the host submits its upload (transfer queue) and its decode (`decode_views.comp`,
//! which waits for that upload and writes the patches straight into the U x V x H x W x 3
//! light field, cropped and clamped) on the engine's ring, so earlier sections decode on
//! the GPU while later ones are parsed. Nothing is read back but one word saying whether
//! any sample was not finite. Part of the decode stage: `decode_views.comp` is
//! `decode.comp` writing into the light field instead of patches; its test holds it bit for
//! bit to `decode.comp`'s file decode, which the stage's twin test holds to the CPU's.
//! Patches too large for shared memory ([`crate::gpu::PatchMemory::Global`]) run
//! `decode_views_global.comp`, whose tensors lie in one more device buffer, a region per
//! patch of the light field.

use std::time::Instant;

use engine::stream::{upload_to, Done, Stream};
use engine::{Buffer, Location};

use super::Layout;
use crate::bitstream;
use crate::codes::patch_step;
use crate::error::{LfError, Result};
use kit::stats::ms_since;

use crate::gpu::{GpuCodec, PatchMemory};
use crate::sections::{parse_section, split_lens, Bounds, Header, SectionOut};

/// A decoded light field in device memory, in the layout the renderer reads.
pub struct DeviceLightField {
    pub views: Buffer<f32>,
    /// (U, V, H, W).
    pub size: [usize; 4],
}

/// Where the time of [`decode_to_device`] went, in ms.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct DeviceDecodeTimes {
    /// Host: header, section table and ensemble, then the device buffers allocated.
    pub setup_ms: f64,
    /// Host wall time from the end of setup until the last section was decompressed and
    /// parsed (in parallel; uploads and kernels of earlier sections overlap it).
    pub parse_ms: f64,
    /// Host wall time after the last section was parsed until the GPU was done.
    pub tail_ms: f64,
    /// GPU time of the decode kernels (timestamps, summed over the sections).
    pub kernel_ms: f64,
    /// The whole call.
    pub wall_ms: f64,
    /// Coefficient sections in the file.
    pub sections: usize,
    /// Bytes uploaded (the sections' staging words).
    pub upload_bytes: u64,
}

/// Push constants of `decode_views.comp`.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(in crate::gpu) struct ViewsPush {
    pub n_patches: u32,
    pub first: u32,
    pub size: [u32; 4],
    pub count_v: u32,
    pub count_y: u32,
    pub count_x: u32,
}

/// What [`decode_to_device`] keeps for its next call: allocating and first
/// touching tens of megabytes of mapped staging memory each call was most of its setup.
#[derive(Default)]
pub(in crate::gpu) struct DecodeScratch {
    /// Host-visible staging buffers, one per section in flight.
    pub stagings: Vec<Buffer<u32>>,
    /// Every section's decode inputs on the device.
    pub inputs: Option<Buffer<u32>>,
    /// The patch tensors of `decode_views_global.comp`, one region per patch of the light
    /// field (with the tensor in shared memory: none).
    pub tensors: Option<Buffer<f32>>,
    /// Whether any decoded sample was not finite, and its readback.
    pub flag: Option<Buffer<u32>>,
    pub flag_read: Option<Buffer<u32>>,
}

/// Decodes `.lfc` bytes into device memory with `codec` (built for the file's ensemble).
pub fn decode_to_device(codec: &GpuCodec, bytes: &[u8]) -> Result<(DeviceLightField, DeviceDecodeTimes)> {
    let t0 = Instant::now();
    let (header, bounds, ensemble) = bitstream::open(bytes)?;
    if &ensemble != codec.ensemble() {
        return Err(LfError::OtherEnsemble);
    }
    let ctx = codec.context();
    let [u, v, h, w] = header.size;
    let samples = u * v * h * w * crate::lightfield::COLOURS;
    ctx.check_binding(samples as u64 * 4, "the decoded views")?;
    let align = ctx.info().offset_alignment_words();
    let count = header.sections();
    let layouts: Vec<Layout> = (0..count)
        .map(|s| Layout::new(header.section(s).len(), header.entries[s + 1].coefficients as usize, align))
        .collect();
    let bases: Vec<usize> = layouts
        .iter()
        .scan(0, |at, l| {
            let base = *at;
            *at += l.words;
            Some(base)
        })
        .collect();
    let total_words = layouts.iter().map(|l| l.words).sum::<usize>();
    // The staging, inputs and flag buffers of the codec's last decode are reused when they
    // are large enough (held for this call; a second decode on the codec waits).
    let mut guard = codec.scratch.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let scratch = &mut *guard;
    let mut spare = std::mem::take(&mut scratch.stagings);
    spare.sort_by_key(|b| b.len());
    let mut stagings = layouts
        .iter()
        .map(|l| match spare.iter().position(|b| b.len() >= l.words) {
            Some(i) => Ok(spare.remove(i)),
            None => ctx.buffer::<u32>(l.words, Location::Upload, "section staging"),
        })
        .collect::<Result<Vec<_>, _>>()?;
    drop(spare);
    let inputs = &*ctx.reuse_buffer(&mut scratch.inputs, total_words, Location::Device, "decode inputs")?;
    let views = ctx.buffer::<f32>(samples, Location::Device, "decoded views")?;
    let tensors = match codec.patch_memory() {
        PatchMemory::Shared => None,
        PatchMemory::Global => {
            let len = bounds.grid.len() * bounds.grid.shape.len();
            ctx.check_binding(len as u64 * 4, "the decode's patch tensors")?;
            Some(&*ctx.reuse_buffer(&mut scratch.tensors, len, Location::Device, "patch tensors")?)
        }
    };
    let flag = &*ctx.reuse_buffer(&mut scratch.flag, 1, Location::Device, "decode flag")?;
    let flag_read = &*ctx.reuse_buffer(&mut scratch.flag_read, 1, Location::Download, "decode flag readback")?;
    let mut rec = ctx.recorder()?;
    rec.fill(flag, 0);
    let fill = rec.submit()?;
    let mut times = DeviceDecodeTimes {
        setup_ms: ms_since(t0),
        sections: count,
        upload_bytes: total_words as u64 * 4,
        ..Default::default()
    };

    let t1 = Instant::now();
    let grid = bounds.grid;
    let push_base = ViewsPush {
        n_patches: 0,
        first: 0,
        size: header.size.map(|s| s as u32),
        count_v: grid.count[1] as u32,
        count_y: grid.count[2] as u32,
        count_x: grid.count[3] as u32,
    };
    let mut failed: Option<LfError> = None;
    // Every section has its own staging buffer, so all may be in flight at once; the ring
    // keeps each until its upload is done and hands the kernels' times back in order.
    let mut stream: Stream<Buffer<u32>, usize> = Stream::new(count.max(1));
    let mut kernel_ms = 0.0;
    let mut returned = Vec::with_capacity(count);
    let mut account = |done: Option<Done<Buffer<u32>, usize>>| {
        if let Some(done) = done {
            kernel_ms += done.passes.iter().map(|p| p.ms).sum::<f64>();
            returned.push(done.slot);
        }
    };
    rayon::in_place_scope(|pool| -> Result<()> {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Buffer<u32>>)>();
        for (s, mut staging) in stagings.drain(..).enumerate() {
            let (tx, header, bounds, layout) = (tx.clone(), &header, &bounds, layouts[s]);
            pool.spawn(move |_| {
                let result = stage(header, bytes, s, bounds, layout, &mut staging).map(|_| staging);
                let _ = tx.send((s, result));
            });
        }
        drop(tx);
        for (s, result) in rx {
            let staging = match result {
                Ok(staging) => staging,
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            if failed.is_some() {
                continue;
            }
            let (l, base, patches) = (layouts[s], bases[s], header.section(s));
            let copy = upload_to(ctx, &staging, inputs, base, l.words)?;
            let mut rec = ctx.recorder()?;
            rec.enable_profiling(1)?;
            rec.wait_for(&copy);
            // The kernel may raise the flag: the fill must be done and visible first. Queue
            // order alone does not order the two; a semaphore wait does, without serialising
            // the sections' kernels as a barrier at the head of each would.
            rec.wait_for(&fill);
            let push = ViewsPush { n_patches: patches.len() as u32, first: patches.start as u32, ..push_base };
            let pass = l.read_parts(rec.pass(&codec.decode_views).read(&codec.dicts), inputs, base);
            let pass = pass.write(&views).read_write(flag);
            // Each section's patches have regions of their own: no hazard between sections.
            let pass = match tensors {
                Some(tensors) => pass.write(tensors),
                None => pass,
            };
            pass.push(&push).dispatch_linear(patches.len() as u32)?;
            rec.mark("decode");
            account(stream.push(staging, s, [copy, rec.submit()?])?);
        }
        Ok(())
    })?;
    times.parse_ms = ms_since(t1);
    let t2 = Instant::now();
    // The flag after every section's kernel, which the stream holds.
    let mut rec = ctx.recorder()?;
    rec.after_queue();
    rec.copy(flag, flag_read);
    rec.host_read(flag_read);
    let read_flag = rec.submit()?;
    while stream.in_flight() > 0 {
        account(stream.wait()?);
    }
    fill.wait()?;
    read_flag.wait()?;
    times.kernel_ms = kernel_ms;
    scratch.stagings = returned;
    if let Some(e) = failed {
        return Err(e);
    }
    if flag_read.mapped()?[0] != 0 {
        return Err(LfError::DecodedNotFinite);
    }
    times.tail_ms = ms_since(t2);
    times.wall_ms = ms_since(t0);
    Ok((DeviceLightField { views, size: header.size }, times))
}

/// Parses section `s` into its staging buffer, with each patch's quantisation step.
fn stage(header: &Header, bytes: &[u8], s: usize, b: &Bounds, l: Layout, staging: &mut Buffer<u32>) -> Result<()> {
    let words = staging.mapped_mut()?;
    let mut parts = split_lens(words, l.parts.windows(2).map(|p| p[1].0 - p[0].0).chain([l.words - l.parts[4].0]));
    let steps = std::mem::take(&mut parts[4]);
    let [membership, offsets, locations, levels] = [0, 1, 2, 3].map(|i| std::mem::take(&mut parts[i]));
    let out = SectionOut {
        membership: &mut membership[..l.parts[0].1],
        offsets: &mut offsets[..l.parts[1].1],
        locations: &mut locations[..l.parts[2].1],
        levels: bytemuck::cast_slice_mut(&mut levels[..l.parts[3].1]),
    };
    parse_section(header, bytes, s, b, out)?;
    let plen = b.grid.shape.len();
    for (step, p) in steps[..l.parts[4].1].iter_mut().zip(header.section(s)) {
        *step = patch_step(b.step, b.grid.valid_samples(p), plen).to_bits();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitstream::Compressed;
    use crate::codec::{decode_lightfield, CodecPath};

    /// The views decoded into device memory equal the file decode's on the GPU path, bit
    /// for bit, for one section and for three with the last one short, with the patch
    /// tensors in shared memory and in a buffer.
    #[test]
    fn decoded_on_the_device_equals_the_file_decode() {
        let ctx = engine::testing::context();
        let encoded = {
            let lf = crate::synth::generate((5, 3), (23, 16), 7);
            let ens =
                crate::dictionary::Ensemble::random(crate::patch::PatchShape { my: 5, mx: 5, mu: 4, mv: 4 }, 2, 3);
            let params = crate::codes::Params { sparsity: 900, epsilon: 0.01 };
            crate::codec::encode_lightfield(&lf, &ens, params, CodecPath::Cpu).unwrap().0
        };
        let files = [encoded, crate::bitstream::tests::random_compressed(80, 120, 9)];
        for (c, memory) in files.iter().flat_map(|c| [(c, PatchMemory::Shared), (c, PatchMemory::Global)]) {
            let bytes = c.to_bytes().unwrap();
            let codec = GpuCodec::with_options(ctx, &c.ensemble, None, Some(memory)).unwrap();
            let (on_device, times) = decode_to_device(&codec, &bytes).unwrap();
            assert_eq!(times.sections, c.codes.len().div_ceil(crate::sections::SECTION_PATCHES));
            let (want, _) =
                decode_lightfield(&Compressed::from_bytes(&bytes).unwrap(), CodecPath::Gpu(&codec)).unwrap();
            assert_eq!(on_device.size, c.size);
            assert_eq!(ctx.download(&on_device.views).unwrap(), &want.data[..]);
            // Again on the buffers the first call left behind.
            let (again, _) = decode_to_device(&codec, &bytes).unwrap();
            assert_eq!(ctx.download(&again.views).unwrap(), &want.data[..]);
        }
        engine::testing::assert_no_validation_messages();
    }
}
