//! `.npy` light fields read in bands, so an encode starts on the first rows while the rest
//! are still being read. A band is a run of patch rows of one view block: for every view of
//! the block the same run of pixel rows, one contiguous range of the file per view and one
//! contiguous range of patch indices (patches are ordered view block, pixel row, column).
//! A reader thread fills the light field's own memory band by band, checks every sample,
//! and hands each band's rows over as soon as they are in; [`Bands`] gives the encoder's
//! gather those rows and blocks until the band a patch needs has arrived. Float32
//! little-endian files are mapped ([`Samples::map`]), so "reading" a band is checking it
//! where the page cache holds it (no copy, no fresh pages); where the map is refused they
//! are read straight into the samples. Other types go through a scratch buffer of one
//! band's piece. Memory: the light field itself (checked against the budget before it is
//! allocated or mapped) plus one piece of scratch per reading thread.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use rayon::prelude::*;

use crate::error::{LfError, Result};
use crate::lightfield::{check_samples, LightField, COLOURS};
use crate::patch::{PatchGrid, PatchShape, PatchSource};
use crate::samples::Samples;

/// Bytes of samples per band: small enough that the first band is in within milliseconds,
/// large enough that a band's reads (one per view) are long sequential ones.
const BAND_BYTES: usize = 32 << 20;

/// Refuses, with what it is, a file that is no `.npy` but another input of the codec: a
/// single image (a light field is a `.npy` or a folder of views) or a `.lfc` / `.lfd`.
fn not_another_kind(path: &Path) -> Result<()> {
    use std::io::Read;
    let (file, _) = kit::input::open_regular(path)?;
    let mut head = Vec::with_capacity(16);
    file.take(16).read_to_end(&mut head).map_err(|e| LfError::file(path, e))?;
    let what = if head.starts_with(crate::bytes::LFC_MAGIC) {
        "is a compressed light field (.lfc); `lightfield decode` makes a .npy of it".to_string()
    } else if head.starts_with(crate::bytes::LFD_MAGIC) {
        "is a dictionary ensemble (.lfd), not a light field".to_string()
    } else if let Ok(format) = image::guess_format(&head) {
        let name = format.extensions_str().first().map_or_else(|| format!("{format:?}"), |e| e.to_uppercase());
        format!("is a single {name} image; a light field is a .npy array (U, V, H, W, 3) or a folder of its views")
    } else {
        return Ok(());
    };
    Err(LfError::file(path, what))
}

impl LightField {
    /// Reads a `.npy` light field: shape (U, V, H, W, 3), uint8 (divided by 255), uint16
    /// (divided by 65535) or float in [0, 1]. The reader checks the declared shape against
    /// the bytes present and the memory budget before it allocates ([`NpyLightField`]).
    pub fn read_npy(path: &Path) -> Result<LightField> {
        NpyLightField::open(path)?.read()
    }
}

/// A `.npy` light field whose header was read and checked, its data not yet read.
pub struct NpyLightField {
    path: PathBuf,
    file: File,
    header: kit::npy::NpyHeader,
    /// (U, V, H, W).
    pub size: [usize; 4],
    /// Bytes of samples per band (tests make it tiny).
    band_bytes: usize,
    /// Map native float32 files (tests turn it off to cover the read that stands in where
    /// the system refuses the map).
    map: bool,
}

impl NpyLightField {
    /// Opens `path`: a regular file whose header declares (U, V, H, W, 3) of uint8, uint16,
    /// float32 or float64 and whose length matches it, within the memory budget as f32.
    pub fn open(path: &Path) -> Result<NpyLightField> {
        not_another_kind(path)?;
        let header = kit::npy::header(path)?;
        let &[u, v, h, w, c] = header.shape.as_slice() else {
            return Err(LfError::file(path, format!("shape {:?} is not (U, V, H, W, 3)", header.shape)));
        };
        if c != COLOURS {
            return Err(LfError::file(path, format!("shape {:?}: the last axis must be 3 (RGB)", header.shape)));
        }
        if [u, v, h, w].contains(&0) {
            return Err(LfError::file(path, format!("shape {:?} is empty", header.shape)));
        }
        let dims = [u as u64, v as u64, h as u64, w as u64, c as u64];
        kit::budget::elements(&dims, 4, &format!("the light field in {}", path.display()))?;
        let (file, _) = kit::input::open_regular(path)?;
        Ok(NpyLightField {
            path: path.to_path_buf(),
            file,
            header,
            size: [u, v, h, w],
            band_bytes: BAND_BYTES,
            map: true,
        })
    }

    /// Reads the whole light field: bands of rows across every view, each band's views
    /// read in parallel.
    pub fn read(self) -> Result<LightField> {
        let [u, v, _, _] = self.size;
        let shape = PatchShape { my: 1, mx: 1, mu: u, mv: v };
        let (lf, (), _) = self.read_with(shape, |bands| bands.ready(usize::MAX))?;
        Ok(lf)
    }

    /// Reads the light field in bands of patches of `shape` on a reader thread while `work`
    /// runs with the [`Bands`] (which blocks for rows not yet read). Returns the whole light
    /// field, `work`'s result and the reader's wall ms.
    pub fn read_with<R>(
        self,
        shape: PatchShape,
        work: impl FnOnce(&Bands<'_>) -> Result<R>,
    ) -> Result<(LightField, R, f64)> {
        let [u, v, h, w] = self.size;
        let grid = PatchGrid::new(shape, u, v, h, w);
        let plan = Plan::new(grid, self.band_bytes);
        let count = u * v * h * w * COLOURS;
        // Little-endian float32 is mapped (the reader then only checks it); anything else
        // is converted into calloc'd memory, whose pages appear as the reader writes them.
        let mut data = (self.map && self.native_f32())
            .then(|| Samples::map(&self.file, self.header.offset, count))
            .flatten()
            .unwrap_or_else(|| vec![0f32; count].into());
        let mapped = data.is_mapped();
        let (result, read_ms) = {
            let pieces = plan.split(&mut data);
            let (tx, rx) = std::sync::mpsc::channel();
            let loaded = (0..pieces.len()).map(|_| OnceLock::new()).collect();
            let bands = Bands { grid, plan, loaded, rx: Mutex::new(rx) };
            std::thread::scope(|scope| {
                let reader = scope.spawn(|| self.read_bands(&bands.plan, pieces, mapped, tx));
                let result = work(&bands);
                // Hang up, so that a reader still going (the work failed) stops at its next band.
                if let Ok(mut rx) = bands.rx.lock() {
                    *rx = std::sync::mpsc::channel().1;
                }
                let read_ms = reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (result, read_ms)
            })
        };
        let lf = LightField::new(u, v, h, w, data)?;
        Ok((lf, result?, read_ms?))
    }

    /// Reads every band in order into its pieces (or, `mapped`, only checks the pieces
    /// mapped from the file) and sends it; returns the wall ms. Stops at the first error
    /// (sent too) or once nobody listens.
    fn read_bands<'a>(
        &self,
        plan: &Plan,
        pieces: Vec<Vec<&'a mut [f32]>>,
        mapped: bool,
        tx: Sender<Result<Loaded<'a>>>,
    ) -> Result<f64> {
        let t0 = Instant::now();
        for (band, mut views) in pieces.into_iter().enumerate() {
            let rows = plan.rows(band);
            let loaded = views
                .par_iter_mut()
                .zip(plan.views(band))
                .try_for_each(|(piece, view)| self.read_piece(view, rows.start, piece, mapped))
                .map(|_| Loaded { band, views: views.into_iter().map(|p| &*p).collect() });
            let failed = loaded.is_err();
            if tx.send(loaded).is_err() || failed {
                break;
            }
        }
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    }

    /// Whether the file's samples are this machine's f32s as stored.
    fn native_f32(&self) -> bool {
        self.header.dtype == kit::npy::NpyDtype::F32 && !self.header.big_endian && cfg!(target_endian = "little")
    }

    /// Checks rows `first..` of view `view` (row-major index) in `out`, after reading them
    /// into it scaled into [0, 1] unless `mapped` (then `out` is the file's own samples).
    fn read_piece(&self, view: usize, first: usize, out: &mut [f32], mapped: bool) -> Result<()> {
        let [_, _, h, w] = self.size;
        let first_sample = (view * h + first) * w * COLOURS;
        if !mapped {
            self.read_samples(first_sample, out)?;
        }
        check_samples(out, first_sample, &self.path.display().to_string())
    }

    /// Reads `out.len()` samples from sample `first_sample` of the file into `out`, scaled
    /// into [0, 1].
    fn read_samples(&self, first_sample: usize, out: &mut [f32]) -> Result<()> {
        let dtype = self.header.dtype;
        let elem = dtype.size() as usize;
        let at = self.header.offset + (first_sample * elem) as u64;
        let io = |e: std::io::Error| LfError::file(&self.path, e);
        if self.native_f32() {
            read_at(&self.file, bytemuck::cast_slice_mut(out), at).map_err(io)
        } else {
            let mut bytes = vec![0u8; out.len() * elem];
            read_at(&self.file, &mut bytes, at).map_err(io)?;
            convert(&bytes, dtype, self.header.big_endian, out);
            Ok(())
        }
    }
}

/// Samples of `bytes` (elements of `dtype`) into `out`: integers scaled into [0, 1].
/// Out-of-range doubles become infinities or zeros; the range check refuses both kinds of
/// input as a [0, 1] check of the doubles would (up to f32 rounding).
fn convert(bytes: &[u8], dtype: kit::npy::NpyDtype, big_endian: bool, out: &mut [f32]) {
    use kit::npy::NpyDtype;
    let scale = match dtype {
        NpyDtype::U8 => 255.0,
        NpyDtype::U16 => 65535.0,
        NpyDtype::F32 | NpyDtype::F64 => 1.0,
    };
    for (x, e) in out.iter_mut().zip(bytes.chunks_exact(dtype.size() as usize)) {
        *x = (dtype.decode(e, big_endian) / scale) as f32;
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

/// How a light field is cut into bands: per view block, runs of `rows_per_band` patch rows.
struct Plan {
    grid: PatchGrid,
    rows_per_band: usize,
    /// Bands per view block.
    per_block: usize,
}

impl Plan {
    fn new(grid: PatchGrid, band_bytes: usize) -> Plan {
        let s = grid.shape;
        let [u, v, _, w] = grid.size;
        let row_bytes = s.mu.min(u) * s.mv.min(v) * s.my * w * COLOURS * 4;
        let rows_per_band = (band_bytes / row_bytes.max(1)).clamp(1, grid.count[2]);
        Plan { grid, rows_per_band, per_block: grid.count[2].div_ceil(rows_per_band) }
    }

    fn bands(&self) -> usize {
        self.grid.count[0] * self.grid.count[1] * self.per_block
    }

    /// Pixel rows of band `b`.
    fn rows(&self, b: usize) -> Range<usize> {
        let (my, h) = (self.grid.shape.my, self.grid.size[2]);
        let r = b % self.per_block * self.rows_per_band;
        r * my..((r + self.rows_per_band) * my).min(h)
    }

    /// The views (row-major indices) of band `b`'s view block, in order.
    fn views(&self, b: usize) -> Vec<usize> {
        let s = self.grid.shape;
        let [u, v, _, _] = self.grid.size;
        let block = b / self.per_block;
        let (bu, bv) = (block / self.grid.count[1], block % self.grid.count[1]);
        let us = bu * s.mu..((bu + 1) * s.mu).min(u);
        us.flat_map(|i| (bv * s.mv..((bv + 1) * s.mv).min(v)).map(move |j| i * v + j)).collect()
    }

    /// The band holding patch `p`'s rows.
    fn band_of(&self, p: usize) -> usize {
        let [_, _, cy, cx] = self.grid.count;
        let block = p / (cy * cx);
        block * self.per_block + (p / cx) % cy / self.rows_per_band
    }

    /// `data` cut into every band's pieces (one per view of its block, in [`Plan::views`]
    /// order).
    fn split<'a>(&self, data: &'a mut [f32]) -> Vec<Vec<&'a mut [f32]>> {
        let [_, nv, h, w] = self.grid.size;
        let s = self.grid.shape;
        let mut pieces: Vec<Vec<&mut [f32]>> = (0..self.bands()).map(|_| Vec::new()).collect();
        for (view, mut rest) in data.chunks_mut(h * w * COLOURS).enumerate() {
            let block = (view / nv / s.mu) * self.grid.count[1] + view % nv / s.mv;
            let first = block * self.per_block;
            for (b, band) in pieces[first..first + self.per_block].iter_mut().enumerate() {
                let (piece, tail) = rest.split_at_mut(self.rows(first + b).len() * w * COLOURS);
                band.push(piece);
                rest = tail;
            }
        }
        pieces
    }
}

/// One band's rows, read and checked.
struct Loaded<'a> {
    band: usize,
    /// One piece per view of the band's block.
    views: Vec<&'a [f32]>,
}

/// The bands read so far: the encoder gathers patches from them.
pub struct Bands<'a> {
    grid: PatchGrid,
    plan: Plan,
    loaded: Vec<OnceLock<Vec<&'a [f32]>>>,
    rx: Mutex<Receiver<Result<Loaded<'a>>>>,
}

impl Bands<'_> {
    /// Patches of the light field being read, for the shape it was opened with.
    pub fn grid(&self) -> PatchGrid {
        self.grid
    }
}

impl PatchSource for Bands<'_> {
    fn size(&self) -> [usize; 4] {
        self.grid.size
    }

    fn row(&self, u: usize, v: usize, y: usize) -> &[f32] {
        let s = self.grid.shape;
        let [_, nv, _, w] = self.grid.size;
        let (bu, bv) = (u / s.mu, v / s.mv);
        let block = bu * self.grid.count[1] + bv;
        let b = block * self.plan.per_block + y / s.my / self.plan.rows_per_band;
        let views = self.loaded[b].get().expect("rows gathered before their band was ready");
        let block_v = ((bv + 1) * s.mv).min(nv) - bv * s.mv;
        let piece = views[(u - bu * s.mu) * block_v + (v - bv * s.mv)];
        let y0 = self.plan.rows(b).start;
        &piece[(y - y0) * w * COLOURS..(y - y0 + 1) * w * COLOURS]
    }

    /// Blocks until every band holding patches `..end` is in (bands arrive in patch order).
    fn ready(&self, end: usize) -> Result<()> {
        let end = end.min(self.grid.len());
        if end == 0 {
            return Ok(());
        }
        let last = self.plan.band_of(end - 1);
        if self.loaded[last].get().is_some() {
            return Ok(());
        }
        let rx = self.rx.lock().map_err(|_| LfError::ReaderStopped)?;
        while self.loaded[last].get().is_none() {
            let loaded = rx.recv().map_err(|_| LfError::ReaderStopped)??;
            let _ = self.loaded[loaded.band].set(loaded.views);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{encode_npy_to_bytes, encode_to_bytes, CodecPath};
    use crate::codes::Params;
    use crate::dictionary::Ensemble;

    const SHAPE: PatchShape = PatchShape { my: 5, mx: 5, mu: 4, mv: 4 };

    #[test]
    fn an_image_or_codec_file_given_as_a_light_field_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("photo.npy");
        kit::image::save_rgb8(&png.with_extension("png"), 2, 1, &[0; 6]).unwrap();
        std::fs::rename(png.with_extension("png"), &png).unwrap();
        let err = NpyLightField::open(&png).err().unwrap().to_string();
        assert!(err.ends_with("photo.npy: is a single PNG image; a light field is a .npy array (U, V, H, W, 3) or a folder of its views"), "{err}");
        for (magic, says) in [(crate::bytes::LFC_MAGIC, "lightfield decode"), (crate::bytes::LFD_MAGIC, "(.lfd)")] {
            let path = dir.path().join("x.npy");
            std::fs::write(&path, [&magic[..], &[0; 12]].concat()).unwrap();
            let err = NpyLightField::open(&path).err().unwrap().to_string();
            assert!(err.contains(says), "{err}");
        }
        // A short file that is none of them still gets the .npy reader's own message.
        std::fs::write(dir.path().join("short.npy"), b"ab").unwrap();
        let err = NpyLightField::open(&dir.path().join("short.npy")).err().unwrap().to_string();
        assert!(err.contains(".npy"), "{err}");
    }

    /// A `.npy` of `shape` holding `data` as stored (descr such as '<u2'), version 1.
    fn npy_bytes(descr: &str, shape: [usize; 5], data: &[u8]) -> Vec<u8> {
        let mut out = kit::npy::header_bytes(descr, &shape);
        out.extend_from_slice(data);
        out
    }

    fn tiny_bands(path: &Path) -> NpyLightField {
        NpyLightField { band_bytes: 1, ..NpyLightField::open(path).unwrap() }
    }

    /// A float32 file is mapped, or read where the map is refused; both hold the same
    /// samples and refuse the same bad one.
    #[test]
    fn a_mapped_and_a_read_float32_file_hold_the_same_samples() {
        let (_dir, path) = kit::testing::temp_path("lf.npy");
        let mut lf = crate::synth::generate((3, 2), (17, 9), 5);
        lf.write_npy(&path).unwrap();
        let mapped = tiny_bands(&path).read().unwrap();
        let read = NpyLightField { map: false, ..tiny_bands(&path) }.read().unwrap();
        assert!(mapped.data.is_mapped() && !read.data.is_mapped());
        assert_eq!(mapped, lf);
        assert_eq!(read, lf);
        lf.data[100] = 2.0;
        lf.write_npy(&path).unwrap();
        for map in [true, false] {
            let err = NpyLightField { map, ..tiny_bands(&path) }.read().unwrap_err().to_string();
            assert!(err.contains("sample 100"), "{err}");
        }
    }

    /// Read in bands of one patch row (two view blocks of 4 x 4 views, padding on every
    /// axis) while it is encoded, the light field and the file equal the in-memory encode's,
    /// on the CPU and in GPU chunks that straddle bands.
    #[test]
    fn an_encode_beside_the_banded_read_equals_the_encode_of_the_whole_array() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf.npy");
        let lf = crate::synth::generate((5, 3), (23, 16), 4);
        lf.write_npy(&path).unwrap();
        let ens = Ensemble::random(SHAPE, 2, 3);
        let params = Params { sparsity: 900, epsilon: 0.01 };
        let ctx = engine::testing::context();
        let gpu = crate::gpu::GpuCodec::new(ctx, &ens).unwrap().with_max_chunk(7);
        for path_kind in [CodecPath::Cpu, CodecPath::Gpu(&gpu)] {
            let (_, want, _, _) = encode_to_bytes(&lf, &ens, params, path_kind, |_| {}).unwrap();
            let (read, (_, got, _, _), _) =
                encode_npy_to_bytes(tiny_bands(&path), &ens, params, path_kind, |_| {}).unwrap();
            assert_eq!(read, lf);
            assert_eq!(got, want);
        }
        assert_eq!(LightField::read_npy(&path).unwrap(), lf);
        engine::testing::assert_no_validation_messages();
    }

    #[test]
    fn integer_double_and_big_endian_arrays_read_scaled_into_0_1() {
        let dir = tempfile::tempdir().unwrap();
        let shape = [2, 3, 4, 5, 3];
        let n: usize = shape.iter().product();
        let want = |max: f64| -> Vec<f32> { (0..n).map(|i| (i as f64 / max) as f32).collect() };
        let cases: [(&str, Vec<u8>, Vec<f32>); 4] = [
            ("|u1", (0..n).map(|i| i as u8).collect(), (0..n).map(|i| (i % 256) as f32 / 255.0).collect()),
            (
                ">u2",
                (0..n).flat_map(|i| ((i * 150) as u16).to_be_bytes()).collect(),
                (0..n).map(|i| (i * 150) as f32 / 65535.0).collect(),
            ),
            ("<f8", (0..n).flat_map(|i| (i as f64 / n as f64).to_le_bytes()).collect(), want(n as f64)),
            (
                ">f4",
                (0..n).flat_map(|i| (i as f32 / n as f32).to_be_bytes()).collect(),
                (0..n).map(|i| i as f32 / n as f32).collect(),
            ),
        ];
        for (descr, data, expected) in cases {
            let path = dir.path().join("a.npy");
            std::fs::write(&path, npy_bytes(descr, shape, &data)).unwrap();
            assert_eq!(tiny_bands(&path).read().unwrap().data, expected, "{descr}");
        }
    }

    #[test]
    fn a_bad_sample_in_a_late_band_is_refused_with_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.npy");
        let mut lf = crate::synth::generate((5, 3), (23, 16), 4);
        let last = lf.data.len() - 4;
        for (bad, what) in [(f32::NAN, "NaN"), (1.5, "[0, 1]")] {
            lf.data[last] = bad;
            lf.write_npy(&path).unwrap();
            let err = tiny_bands(&path).read().unwrap_err().to_string();
            assert!(err.contains(&format!("sample {last}")) && err.contains(what), "{err}");
            let ens = Ensemble::random(SHAPE, 1, 3);
            let params = Params { sparsity: 100, epsilon: 0.01 };
            assert!(encode_npy_to_bytes(tiny_bands(&path), &ens, params, CodecPath::Cpu, |_| {}).is_err());
        }
        // Shapes that are not a light field, and a file shorter than its header says.
        std::fs::write(&path, npy_bytes("<f4", [1, 1, 2, 2, 4], &[0; 64])).unwrap();
        assert!(NpyLightField::open(&path).is_err());
        std::fs::write(&path, npy_bytes("<f4", [1, 1, 2, 2, 3], &[0; 40])).unwrap();
        assert!(NpyLightField::open(&path).is_err());
    }
}
