//! The distributed frame: every rank renders its share of the scene; the ranks composite
//! the partial images with the chosen [`Strategy`] by exchanging spans, Active Pixel encoded
//! on the GPU from partial images that stay there ([`composite_frame_gpu`]), or read back
//! raw and encoded on the CPU, or exchanged raw ([`composite_frame`]; see [`Readback`]);
//! rank 0 gathers the final spans.
//! Per frame, rank 0 reports render, ROI, encode, device-to-host, exchange and composite
//! times (the maximum over ranks) and the bytes all ranks sent.

use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::{Buffer, Context, DeviceSelector, Location};

use crate::ap::{validate, Encoded, BACKGROUND_DEPTH};
use crate::comm::Comm;
use crate::error::{CompositorError, Result};
use crate::frame::Frame;
use crate::gpu_blend::GpuBlender;
use crate::ops::{self, Op};
use crate::raster::Rasteriser;
use crate::scene::{Scene, SceneSpec};
use crate::schedule::{cut, rounds, Strategy};
use crate::timing::{ms_since, time_ms, timed_pass};

/// A span of a partial image as it travels between ranks.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    /// Active Pixel encoded.
    Encoded(Encoded),
    /// Raw: (colour, depth bits) per pixel.
    Raw { pixels: usize, words: Vec<u32> },
}

impl Piece {
    pub fn pixels(&self) -> usize {
        match self {
            Piece::Encoded(e) => e.pixels,
            Piece::Raw { pixels, .. } => *pixels,
        }
    }

    pub fn words(&self) -> &[u32] {
        match self {
            Piece::Encoded(e) => &e.words,
            Piece::Raw { words, .. } => words,
        }
    }

    /// Rebuilds a received piece of `pixels` pixels, checking it before trusting it.
    fn received(compressed: bool, pixels: usize, words: Vec<u32>) -> Result<Piece> {
        if compressed {
            validate(&words, pixels)?;
            Ok(Piece::Encoded(Encoded { pixels, words }))
        } else if words.len() == 2 * pixels {
            Ok(Piece::Raw { pixels, words })
        } else {
            Err(CompositorError::Corrupt(format!("raw piece of {} words for {pixels} pixels", words.len())))
        }
    }

    fn empty(compressed: bool) -> Piece {
        if compressed {
            Piece::Encoded(Encoded { pixels: 0, words: Vec::new() })
        } else {
            Piece::Raw { pixels: 0, words: Vec::new() }
        }
    }

    fn split(&self, bounds: &[usize]) -> Vec<Piece> {
        match self {
            Piece::Encoded(e) => ops::split(e, bounds).into_iter().map(Piece::Encoded).collect(),
            Piece::Raw { pixels, words } => {
                let mut ends = bounds.to_vec();
                ends.push(*pixels);
                let mut start = 0;
                ends.iter()
                    .map(|&end| {
                        let p = Piece::Raw { pixels: end - start, words: words[2 * start..2 * end].to_vec() };
                        start = end;
                        p
                    })
                    .collect()
            }
        }
    }

    /// Composites pieces of one span in order, on the CPU.
    fn composite(pieces: &[&Piece], op: Op) -> Result<Piece> {
        if let Some(Piece::Encoded(_)) = pieces.first() {
            let encoded: Vec<&Encoded> = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Encoded(e) => Some(e),
                    Piece::Raw { .. } => None,
                })
                .collect();
            return Ok(Piece::Encoded(ops::composite(&encoded, op)?));
        }
        let pixels = pieces[0].pixels();
        let mut out = vec![0u32; 2 * pixels];
        let background = BACKGROUND_DEPTH.to_bits();
        let mut active = Vec::with_capacity(pieces.len());
        for i in 0..pixels {
            active.clear();
            active.extend(
                pieces.iter().map(|p| [p.words()[2 * i], p.words()[2 * i + 1]]).filter(|px| px[1] != background),
            );
            let px = if active.is_empty() { [0, background] } else { ops::combine(op, &active) };
            out[2 * i..2 * i + 2].copy_from_slice(&px);
        }
        Ok(Piece::Raw { pixels, words: out })
    }
}

/// The final image on rank 0: every rank's final span, in pixel order, covering the image.
#[derive(Debug)]
pub struct Gathered {
    spans: Vec<(usize, Piece)>,
}

impl Gathered {
    /// The whole image as a frame (decoding each span in place: no joined copy is made).
    pub fn to_frame(&self, width: u32, height: u32) -> Frame {
        let mut frame = Frame::empty(width, height);
        for (start, piece) in &self.spans {
            match piece {
                Piece::Encoded(e) => crate::codec::decode_into(e, &mut frame, *start),
                Piece::Raw { words, pixels } => {
                    for (i, px) in words.chunks_exact(2).enumerate().take(*pixels) {
                        frame.color[start + i] = px[0];
                        frame.depth[start + i] = f32::from_bits(px[1]);
                    }
                }
            }
        }
        frame
    }
}

/// Time and traffic of one rank's compositing.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExchangeStats {
    /// Waiting for every rank before each round and before the gather: the ranks' skew, kept
    /// out of `exchange_ms`, which is then the messages' own time.
    pub wait_ms: f64,
    pub exchange_ms: f64,
    pub composite_ms: f64,
    pub bytes_sent: usize,
    /// GPU ROI passes, encodings and copies to the host made while compositing
    /// ([`composite_frame_gpu`]).
    pub roi_ms: f64,
    pub encode_ms: f64,
    pub d2h_ms: f64,
    pub bytes_d2h: usize,
}

/// Waits for every rank (one barrier, which every rank reaches as often: once per round and
/// once before the gather), timed into `stats.wait_ms`.
fn wait_for_all(comm: &dyn Comm, stats: &mut ExchangeStats) {
    let t = Instant::now();
    comm.barrier();
    stats.wait_ms += ms_since(t);
}

/// Composites every rank's full-size `piece` with `strategy` and gathers the result on rank
/// 0 (`Some` there, `None` elsewhere), compositing on the CPU.
pub fn composite_frame(
    comm: &dyn Comm,
    piece: Piece,
    strategy: Strategy,
    op: Op,
) -> Result<(Option<Gathered>, ExchangeStats)> {
    let compressed = matches!(piece, Piece::Encoded(_));
    let total = piece.pixels();
    let me = comm.rank();
    let mut stats = ExchangeStats::default();
    let (mut lo, mut hi) = (0usize, total);
    let mut piece = piece;
    for round in rounds(strategy, comm.size()) {
        wait_for_all(comm, &mut stats);
        let Some(group) = round.iter().find(|g| g.members.contains(&me)) else { continue };
        let j = group.members.iter().position(|&m| m == me).unwrap();
        if group.fold {
            if j == 1 {
                let t = Instant::now();
                comm.exchange(&[(group.members[0], piece.words())], &[])?;
                stats.exchange_ms += ms_since(t);
                stats.bytes_sent += 4 * piece.words().len();
                piece = Piece::empty(compressed);
                lo = hi;
            } else {
                let t = Instant::now();
                let words = comm.exchange(&[], &[group.members[1]])?.remove(0);
                stats.exchange_ms += ms_since(t);
                let (result, ms) = time_ms(|| -> Result<Piece> {
                    let theirs = Piece::received(compressed, piece.pixels(), words)?;
                    Piece::composite(&[&piece, &theirs], op)
                });
                piece = result?;
                stats.composite_ms += ms;
            }
            continue;
        }
        let k = group.members.len();
        let bounds = cut(lo, hi, k);
        let (parts, split_ms) = time_ms(|| piece.split(&bounds.iter().map(|b| b - lo).collect::<Vec<_>>()));
        stats.composite_ms += split_ms;
        let sends: Vec<(usize, &[u32])> =
            (0..k).filter(|&m| m != j).map(|m| (group.members[m], parts[m].words())).collect();
        let from: Vec<usize> = (0..k).filter(|&m| m != j).map(|m| group.members[m]).collect();
        stats.bytes_sent += sends.iter().map(|s| 4 * s.1.len()).sum::<usize>();
        let t = Instant::now();
        let mut received = comm.exchange(&sends, &from)?.into_iter();
        stats.exchange_ms += ms_since(t);
        let (result, ms) = time_ms(|| -> Result<Piece> {
            let own = &parts[j];
            let others: Vec<Piece> = (0..k - 1)
                .map(|_| Piece::received(compressed, own.pixels(), received.next().unwrap_or_default()))
                .collect::<Result<_>>()?;
            let mut ordered: Vec<&Piece> = others.iter().collect();
            ordered.insert(j, own);
            Piece::composite(&ordered, op)
        });
        piece = result?;
        stats.composite_ms += ms;
        let ends: Vec<usize> = std::iter::once(lo).chain(bounds.iter().copied()).chain(std::iter::once(hi)).collect();
        (lo, hi) = (ends[j], ends[j + 1]);
    }
    let result = gather(comm, (lo, hi), piece, total, &mut stats)?;
    Ok((result, stats))
}

/// Sends this rank's final span `lo..hi` to rank 0; on rank 0, collects every rank's and
/// checks that they cover the image of `total` pixels (`Some` there, `None` elsewhere).
fn gather(
    comm: &dyn Comm,
    (lo, hi): (usize, usize),
    piece: Piece,
    total: usize,
    stats: &mut ExchangeStats,
) -> Result<Option<Gathered>> {
    let compressed = matches!(piece, Piece::Encoded(_));
    let me = comm.rank();
    wait_for_all(comm, stats);
    // Every rank's pixel range, then its final span, as two messages (in order between two
    // ranks): the span is sent from where it is, not copied into a message with its range.
    let t = Instant::now();
    if me != 0 {
        let range = [lo as u32, hi as u32];
        stats.bytes_sent += 4 * (range.len() + piece.words().len());
        comm.exchange(&[(0, &range), (0, piece.words())], &[])?;
        stats.exchange_ms += ms_since(t);
        return Ok(None);
    }
    let others: Vec<usize> = (1..comm.size()).flat_map(|r| [r, r]).collect();
    let mut messages = comm.exchange(&[], &others)?.into_iter();
    stats.exchange_ms += ms_since(t);
    let (result, ms) = time_ms(|| -> Result<Gathered> {
        let mut spans = vec![(lo, piece)];
        while let (Some(range), Some(m)) = (messages.next(), messages.next()) {
            let [a, b] = range[..] else {
                return Err(CompositorError::Corrupt("gathered span without its pixel range".into()));
            };
            let (a, b) = (a as usize, b as usize);
            if a > b || b > total {
                return Err(CompositorError::Corrupt("gathered span's pixel range is out of the image".into()));
            }
            spans.push((a, Piece::received(compressed, b - a, m)?));
        }
        spans.sort_by_key(|s| s.0);
        let mut next = 0;
        for (a, p) in &spans {
            if *a != next && p.pixels() > 0 {
                return Err(CompositorError::Corrupt(format!("gathered spans leave a gap at pixel {next}")));
            }
            next = a + p.pixels();
        }
        if next != total {
            return Err(CompositorError::Corrupt(format!("gathered {next} of {total} pixels")));
        }
        Ok(Gathered { spans })
    });
    stats.composite_ms += ms;
    Ok(Some(result?))
}

/// A rank's rendered partial image, raw on the GPU.
pub struct GpuFrame<'a> {
    pub color: &'a Buffer<u32>,
    pub depth: &'a Buffer<f32>,
    pub pixels: usize,
}

/// [`composite_frame`] with the z-buffer for partial images that stay raw on the GPU (the
/// paper's method carried through the exchange): per round, the spans the other members
/// keep are Active Pixel encoded on the GPU and only their payloads are copied to the host
/// and sent; the payloads received for the span this rank keeps are uploaded and z-buffered
/// into its raw frame in place (`ap_zmerge`). No pixel is encoded, split or composited on
/// the CPU; the final span is encoded on the GPU for the gather. Overwrites the frame.
pub fn composite_frame_gpu(
    comm: &dyn Comm,
    frame: GpuFrame,
    strategy: Strategy,
    blender: &mut GpuBlender,
) -> Result<(Option<Gathered>, ExchangeStats)> {
    let me = comm.rank();
    let mut stats = ExchangeStats::default();
    let (mut lo, mut hi) = (0usize, frame.pixels);
    // Encodes and downloads the span start..end (an empty span is an empty payload).
    let encode = |blender: &mut GpuBlender, (start, end): (usize, usize), stats: &mut ExchangeStats| {
        if start == end {
            return Ok(Vec::new());
        }
        let encoder = blender.encoder();
        let (words, times) = encoder.encode_span(frame.color, frame.depth, start, end - start)?;
        let (words, d2h_ms) = encoder.download(words)?;
        stats.roi_ms += times.roi_ms;
        stats.encode_ms += times.encode_ms;
        stats.d2h_ms += d2h_ms;
        stats.bytes_d2h += 4 * words.len();
        Ok::<_, CompositorError>(words)
    };
    for round in rounds(strategy, comm.size()) {
        wait_for_all(comm, &mut stats);
        let Some(group) = round.iter().find(|g| g.members.contains(&me)) else { continue };
        let j = group.members.iter().position(|&m| m == me).unwrap();
        if group.fold {
            if j == 1 {
                let words = encode(blender, (lo, hi), &mut stats)?;
                let t = Instant::now();
                comm.exchange(&[(group.members[0], &words)], &[])?;
                stats.exchange_ms += ms_since(t);
                stats.bytes_sent += 4 * words.len();
                lo = hi;
            } else {
                let t = Instant::now();
                let words = comm.exchange(&[], &[group.members[1]])?.remove(0);
                stats.exchange_ms += ms_since(t);
                let (merged, ms) = time_ms(|| -> Result<()> {
                    validate(&words, hi - lo)?;
                    let theirs = Encoded { pixels: hi - lo, words };
                    blender.merge_into(frame.color, frame.depth, (lo, hi - lo), &[&theirs], 0)
                });
                merged?;
                stats.composite_ms += ms;
            }
            continue;
        }
        let k = group.members.len();
        let ends: Vec<usize> = std::iter::once(lo).chain(cut(lo, hi, k)).chain(std::iter::once(hi)).collect();
        let parts: Vec<Vec<u32>> = (0..k)
            .map(|m| if m == j { Ok(Vec::new()) } else { encode(blender, (ends[m], ends[m + 1]), &mut stats) })
            .collect::<Result<_>>()?;
        let sends: Vec<(usize, &[u32])> =
            (0..k).filter(|&m| m != j).map(|m| (group.members[m], parts[m].as_slice())).collect();
        let from: Vec<usize> = (0..k).filter(|&m| m != j).map(|m| group.members[m]).collect();
        stats.bytes_sent += sends.iter().map(|s| 4 * s.1.len()).sum::<usize>();
        let t = Instant::now();
        let received = comm.exchange(&sends, &from)?;
        stats.exchange_ms += ms_since(t);
        let span = (ends[j], ends[j + 1] - ends[j]);
        let (merged, ms) = time_ms(|| -> Result<()> {
            let theirs: Vec<Encoded> = received
                .into_iter()
                .map(|words| validate(&words, span.1).map(|_| Encoded { pixels: span.1, words }))
                .collect::<Result<_>>()?;
            blender.merge_into(frame.color, frame.depth, span, &theirs.iter().collect::<Vec<_>>(), j)
        });
        merged?;
        stats.composite_ms += ms;
        (lo, hi) = (ends[j], ends[j + 1]);
    }
    let words = encode(blender, (lo, hi), &mut stats)?;
    let piece = Piece::Encoded(Encoded { pixels: hi - lo, words });
    let result = gather(comm, (lo, hi), piece, frame.pixels, &mut stats)?;
    Ok((result, stats))
}

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

/// Opens this rank's device (docs/cli.md: rank r uses entry r mod n of the devices the
/// selector names, every GPU by default), with r the rank on this node, so that the ranks
/// of each node spread over that node's GPUs.
pub fn open_device(comm: &dyn Comm, selector: &DeviceSelector) -> Result<Context> {
    let ctx = Context::open_for_rank(selector, comm.local_rank())?;
    kit::report::set_device(&ctx.info().name);
    Ok(ctx)
}

/// Makes every rank agree that each of them got `result` without error before the ranks
/// start work that needs all of them: an error on one rank is returned there, and every
/// other rank returns an error naming the rank that failed, instead of waiting for it.
pub fn agree<T>(comm: &dyn Comm, result: Result<T>) -> Result<T> {
    let failed = comm.first_failed(result.is_err());
    match (result, failed) {
        (Err(e), _) => Err(e),
        (Ok(_), Some(rank)) => {
            Err(CompositorError::Mpi(format!("stopped because rank {rank} failed (its error says why)")))
        }
        (Ok(v), None) => Ok(v),
    }
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
/// buffers) is agreed on by every rank ([`agree`]) before the first exchange, so a rank that
/// fails there stops every rank cleanly; an error after that is the caller's to end the job.
pub fn render(comm: &dyn Comm, req: &RenderRequest, mut emit: impl FnMut(FrameStats)) -> Result<Option<Frame>> {
    let rank = comm.rank();
    let setup = Setup::new(comm, req);
    let Setup { ctx, scene, raster, geometry, mut blender, host, total } = agree(comm, setup)?;
    let mut last = None;
    for f in 0..req.frames {
        let start = Instant::now();
        let (view, proj) = scene.camera(f, req.width, req.height);
        let render_ms = timed_pass(&ctx, |rec| raster.record(rec, &geometry, view, proj))?;
        if f + 1 == req.frames {
            if let Some(dir) = &req.partials {
                save_partial(&ctx, &raster, dir, rank)?;
            }
        }
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
                    let (e, encode_ms) = time_ms(|| crate::codec::encode_parallel(&frame));
                    (Piece::Encoded(e), encode_ms)
                } else {
                    let words = color.iter().zip(depth).flat_map(|(&c, &d)| [c, d.to_bits()]).collect();
                    (Piece::Raw { pixels: total, words }, 0.0)
                };
                readback = [encode_ms, ms, (8 * total) as f64];
                // Ranks finish rendering at different times; waiting here keeps that skew out
                // of the exchange time.
                comm.barrier();
                composite_frame(comm, piece, req.strategy, Op::ZBuffer)?
            }
            (None, Some(blender)) => {
                comm.barrier();
                let frame = GpuFrame { color: &raster.color, depth: &raster.depth, pixels: total };
                composite_frame_gpu(comm, frame, req.strategy, blender)?
            }
            (None, None) => unreachable!("every readback has its host buffers or its blender"),
        };
        let values = [
            render_ms,
            stats.roi_ms,
            readback[0] + stats.encode_ms,
            readback[1] + stats.d2h_ms,
            stats.wait_ms,
            stats.exchange_ms,
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
