//! The distributed frame: every rank renders its share of the scene; the ranks composite
//! the partial images with the chosen [`Strategy`] by exchanging spans ([`crate::exchange`]),
//! Active Pixel encoded on the GPU from partial images that stay there, or read back raw and
//! encoded on the CPU, or exchanged raw (see [`Readback`]); rank 0 gathers the final spans.
//! Per frame, rank 0 reports render, ROI, encode, device-to-host, exchange and composite
//! times (the maximum over ranks) and the bytes all ranks sent.

use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::{Buffer, Context, DeviceSelector, Location};

use crate::comm::Comm;
use crate::error::{CompositeError, Result};
use crate::exchange::{composite_frame, composite_frame_gpu, GpuFrame};
use crate::frame::{raw_words, Frame};
use crate::gpu::blend::GpuBlender;
use crate::piece::Piece;
use crate::raster::Rasteriser;
use crate::scene::{Scene, SceneSpec};
use crate::schedule::Strategy;
use kit::stats::ms_since;

use crate::timing::{time_ms, timed_pass};
use crate::types::Op;

/// How a rank's partial image leaves the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Readback {
    /// ROI and Active Pixel encoding on the GPU; only the payload is copied (the paper).
    GpuAp,
    /// The raw frame is copied and encoded on the CPU (IceT's path; `--backend cpu`).
    CpuAp,
    /// The raw frame is copied and exchanged unencoded (`--no-compress`).
    Raw,
}

/// What `composite render` was asked for.
#[derive(Clone, Debug)]
pub struct RenderRequest {
    pub scene: SceneSpec,
    pub width: u32,
    pub height: u32,
    pub frames: u32,
    pub strategy: Strategy,
    pub readback: Readback,
    /// `--device`: rank r uses entry r mod n of the devices it names (every GPU by default),
    /// counting ranks on this node ([`Comm::local_rank`]).
    pub device: DeviceSelector,
    /// `--partials DIR`: every rank writes its last rendered partial image there (raw, for
    /// other compositors such as IceT to run on the same images). Checked before any work.
    pub partials: Option<PathBuf>,
}

/// Writes a rank's rendered partial image as `DIR/rank{r}.rgba` (RGBA8 per pixel, row 0 at
/// the top) and `DIR/rank{r}.depth` (little-endian f32, 1.0 = background).
fn save_partial(ctx: &Context, raster: &Rasteriser, dir: &Path, rank: usize) -> Result<()> {
    let color = ctx.download(&raster.color)?;
    let depth = ctx.download(&raster.depth)?;
    kit::output::write_bytes(&dir.join(format!("rank{rank}.rgba")), bytemuck::cast_slice(&color))?;
    kit::output::write_bytes(&dir.join(format!("rank{rank}.depth")), bytemuck::cast_slice(&depth))?;
    Ok(())
}

/// Rank `rank`'s partial image from `dir`: raw `rank{r}.rgba` + `rank{r}.depth` of `size`
/// (as [`save_partial`] writes them), or `rank{r}.png` + `rank{r}.npy` ([`Frame::load`]).
pub fn read_partial(dir: &Path, rank: usize, size: Option<(u32, u32)>) -> Result<Frame> {
    let path = |ext: &str| dir.join(format!("rank{rank}.{ext}"));
    let (rgba, depth) = (path("rgba"), path("depth"));
    let Some((width, height)) = size else {
        if rgba.exists() {
            return Err(CompositeError::RawNeedsSize { path: rgba });
        }
        return Frame::load(&path("png"), &path("npy"));
    };
    let need = 4 * crate::ap::pixel_count(width, height)?;
    let read = |path: PathBuf| -> Result<Vec<u8>> {
        let bytes = kit::input::read_bounded(&path, need as u64)?;
        if bytes.len() != need {
            return Err(CompositeError::RawLength { path, len: bytes.len(), width, height, need });
        }
        Ok(bytes)
    };
    let color = read(rgba)?.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
    let depth: Vec<f32> = read(depth)?.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    if let Some(pixel) = depth.iter().position(|v| v.is_nan()) {
        return Err(CompositeError::NanDepth { path: path("depth"), pixel });
    }
    Ok(Frame { width, height, color, depth })
}

/// Opens this rank's device (docs/cli.md: rank r uses entry r mod n of the devices the
/// selector names, every GPU by default), with r the rank on this node, so that the ranks
/// of each node spread over that node's GPUs.
pub fn open_device(comm: &dyn Comm, selector: &DeviceSelector) -> Result<Context> {
    let ctx = Context::open_for_rank(selector, comm.local_rank())?;
    kit::report::set_device(&ctx.info().name);
    Ok(ctx)
}

/// Makes every rank agree that each of them got `result` without error before the ranks
/// go on with work that needs all of them: where one failed, every rank returns the same
/// [`CompositeError::Rank`] (the lowest failed rank and its message), instead of waiting for
/// it. A single rank's error is returned as it is.
pub fn agree<T>(comm: &dyn Comm, result: Result<T>) -> Result<T> {
    if comm.size() == 1 {
        return result;
    }
    match comm.first_error(result.as_ref().err().map(message)) {
        Some((rank, message)) => Err(CompositeError::Rank { rank, message }),
        None => result,
    }
}

/// An error and its causes in one line, each cause once (a cause whose text the message
/// before it already holds adds nothing).
pub fn message(error: &CompositeError) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = cause {
        let text = e.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|prev| prev.contains(&text)) {
            parts.push(text);
        }
        cause = e.source();
    }
    parts.join(": ")
}

/// One frame's figures on rank 0: the maximum time over ranks of each step, and the bytes
/// all ranks sent and copied to the host.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FrameStats {
    pub frame: u32,
    pub ranks: usize,
    pub strategy: Strategy,
    pub readback: Readback,
    pub width: u32,
    pub height: u32,
    pub render_ms: f64,
    pub roi_ms: f64,
    pub encode_ms: f64,
    pub d2h_ms: f64,
    pub wait_ms: f64,
    pub exchange_ms: f64,
    pub composite_ms: f64,
    pub frame_ms: f64,
    pub bytes_sent: u64,
    pub bytes_d2h: u64,
}

impl FrameStats {
    /// From every rank's values, in the order of `render`'s `values`: the times, then the
    /// two byte counts.
    fn from_ranks(frame: u32, req: &RenderRequest, all: &[Vec<f64>]) -> FrameStats {
        let max = |i: usize| all.iter().map(|v| v[i]).fold(0.0, f64::max);
        let sum = |i: usize| all.iter().map(|v| v[i]).sum::<f64>() as u64;
        FrameStats {
            frame,
            ranks: all.len(),
            strategy: req.strategy,
            readback: req.readback,
            width: req.width,
            height: req.height,
            render_ms: max(0),
            roi_ms: max(1),
            encode_ms: max(2),
            d2h_ms: max(3),
            wait_ms: max(4),
            exchange_ms: max(5),
            composite_ms: max(6),
            frame_ms: max(7),
            bytes_sent: sum(8),
            bytes_d2h: sum(9),
        }
    }
}

impl std::fmt::Display for FrameStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "frame {}: {} ranks, render {:.2} ms, roi {:.2} ms, encode {:.2} ms, d2h {:.2} ms, wait {:.2} ms, \
             exchange {:.2} ms, composite {:.2} ms, {} bytes sent",
            self.frame,
            self.ranks,
            self.render_ms,
            self.roi_ms,
            self.encode_ms,
            self.d2h_ms,
            self.wait_ms,
            self.exchange_ms,
            self.composite_ms,
            self.bytes_sent
        )
    }
}

/// A rank's device, scene share and buffers, made before any exchange.
struct Setup {
    ctx: Context,
    scene: Scene,
    raster: Rasteriser,
    geometry: crate::raster::GpuGeometry,
    blender: Option<GpuBlender>,
    host: Option<(Buffer<u32>, Buffer<f32>)>,
    total: usize,
}

impl Setup {
    fn new(comm: &dyn Comm, req: &RenderRequest) -> Result<Setup> {
        let ctx = open_device(comm, &req.device)?;
        let scene = Scene::load(&req.scene)?;
        let share = scene.geometry.share(comm.rank(), comm.size());
        let raster = Rasteriser::new(&ctx, req.width, req.height)?;
        let geometry = raster.upload(&share)?;
        // GPU Active Pixel readback keeps the partial images raw on the GPU and composites
        // there (composite_frame_gpu); the CPU-encode and raw paths read whole frames back
        // and composite on the CPU, as IceT does.
        let blender = match req.readback {
            Readback::GpuAp => Some(GpuBlender::new(&ctx)?),
            Readback::CpuAp | Readback::Raw => None,
        };
        let total = crate::ap::pixel_count(req.width, req.height)?;
        let host = match req.readback {
            Readback::GpuAp => None,
            Readback::CpuAp | Readback::Raw => Some((
                ctx.buffer(total, Location::Download, "raw colour")?,
                ctx.buffer(total, Location::Download, "raw depth")?,
            )),
        };
        Ok(Setup { ctx, scene, raster, geometry, blender, host, total })
    }
}

/// Renders and composites `frames` frames; `emit` gets each frame's figures on rank 0.
/// Returns the last frame's image on rank 0. Setting up (the device, the scene, the GPU
/// buffers) and each frame's rendering (with the partial image it writes) are agreed on by
/// every rank ([`agree`]) before the exchange, so a rank that fails there stops every rank
/// cleanly with [`CompositeError::Rank`]; an error in the exchange is the caller's to end
/// the job.
pub fn render(comm: &dyn Comm, req: &RenderRequest, mut emit: impl FnMut(FrameStats)) -> Result<Option<Frame>> {
    let rank = comm.rank();
    let setup = Setup::new(comm, req);
    let Setup { ctx, scene, raster, geometry, mut blender, host, total } = agree(comm, setup)?;
    let mut last = None;
    for f in 0..req.frames {
        let start = Instant::now();
        let (view, proj) = scene.camera(f, req.width, req.height);
        let rendered =
            timed_pass(&ctx, |rec| raster.record(rec, &geometry, view, proj)).and_then(|ms| match &req.partials {
                Some(dir) if f + 1 == req.frames => save_partial(&ctx, &raster, dir, rank).map(|()| ms),
                _ => Ok(ms),
            });
        let render_ms = agree(comm, rendered)?;
        // [encode, d2h, bytes to the host] of the CPU paths' whole-frame readback.
        let mut readback = [0.0f64; 3];
        let (result, stats) = match (&host, blender.as_mut()) {
            (Some((color, depth)), _) => {
                let ms = timed_pass(&ctx, |rec| {
                    rec.copy(&raster.color, color);
                    rec.copy(&raster.depth, depth);
                })?;
                let (color, depth) = (color.mapped()?, depth.mapped()?);
                let (piece, encode_ms) = if req.readback == Readback::CpuAp {
                    let frame =
                        Frame { width: req.width, height: req.height, color: color.to_vec(), depth: depth.to_vec() };
                    let (e, encode_ms) = time_ms(|| crate::cpu::encode::encode_parallel(&frame));
                    (Piece::Encoded(e), encode_ms)
                } else {
                    (Piece::Raw { pixels: total, words: raw_words(color, depth) }, 0.0)
                };
                readback = [encode_ms, ms, (8 * total) as f64];
                // Ranks finish rendering at different times; waiting here keeps that skew out
                // of the exchange time.
                comm.barrier();
                composite_frame(comm, piece, req.strategy, Op::ZBuffer, 0)?
            }
            (None, Some(blender)) => {
                comm.barrier();
                let frame = GpuFrame { color: &raster.color, depth: &raster.depth, pixels: total };
                composite_frame_gpu(comm, frame, req.strategy, blender, 0)?
            }
            (None, None) => unreachable!("every readback has its host buffers or its blender"),
        };
        let values = [
            render_ms,
            stats.roi_ms,
            readback[0] + stats.encode_ms,
            readback[1] + stats.d2h_ms,
            stats.wait_ms,
            stats.exchange_ms + stats.gather_ms,
            stats.composite_ms,
            ms_since(start),
            stats.bytes_sent as f64,
            readback[2] + stats.bytes_d2h as f64,
        ];
        if let Some(all) = comm.gather(&values) {
            emit(FrameStats::from_ranks(f, req, &all));
        }
        last = result;
    }
    Ok(last.map(|p| p.to_frame(req.width, req.height)))
}
