//! The compositing library: any renderer's colour and depth buffers, composited across the
//! ranks of an MPI communicator, the image on a root rank (as IceT's `icetCompositeImage`).
//!
//! A [`Compositor`] is made on a communicator with the image size, a colour format (RGBA8 or
//! RGBA32F), a depth format (f32 or none) and a mode: the z-buffer, or premultiplied "over"
//! in a front-to-back rank order. Each [`Compositor::composite`] takes this rank's full-size
//! buffers and the viewport of the pixels that hold anything, exchanges them with the
//! strategy chosen ([`crate::exchange`], the same rounds `composite render` runs), and
//! returns the image on the root and nothing elsewhere, recording this rank's per-phase
//! times and bytes sent ([`Times`]).
//!
//! Where the image is: images are Active Pixel encoded (RGBA32F with four colour words a
//! pixel, [`Piece::Wide`]). With a Vulkan device ([`Backend::Gpu`]) the RGBA8 z-buffer runs
//! the paper's path (the frame uploaded once, spans encoded and merged on the GPU); blending,
//! and RGBA32F in both modes, encode on the GPU and merge on the CPU; without one everything
//! runs on the CPU. Both give the same bytes ([`Route`] says which ran). A rank whose
//! viewport is empty encodes on the CPU (one run header) and sends no pixels.
//!
//! Inputs are checked on every rank and the ranks agree on the outcome before any message
//! ([`crate::distributed::agree`]), so a bad argument on one rank is an error on all of them,
//! never a wait.

use std::time::Instant;

use engine::{Buffer, Context, DeviceSelector, Location};
use mpi::topology::Communicator;
use rayon::prelude::*;

use crate::ap::{pack_rgba, runs_of, BACKGROUND_DEPTH, WIDE_WORDS};
use crate::comm::{Comm, Mpi};
use crate::cpu::encode::{encode_parallel, encode_planes_parallel};
use crate::distributed::agree;
use crate::error::{CompositeError, Result};
use crate::exchange::{composite_frame, composite_frame_gpu, ExchangeStats, GpuFrame};
use crate::frame::Frame;
use crate::gpu::blend::GpuBlender;
use crate::piece::{Gathered, Piece};
use crate::schedule::Strategy;
use crate::types::Op;
use kit::stats::ms_since;

/// The colour of a pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorFormat {
    /// Four bytes, R first (premultiplied for blending).
    Rgba8,
    /// Four f32, R first (premultiplied for blending).
    Rgba32F,
}

/// The depth of a pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepthFormat {
    /// No depth: a pixel whose colour is all zero is background (blending only).
    None,
    /// f32; 1.0 or +inf is background.
    F32,
}

/// Where the compositing runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The GPU when a Vulkan device opens, else the CPU.
    Auto,
    Gpu,
    Cpu,
}

/// Where a call's image was Active Pixel encoded and merged ([`Compositor::last_route`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    /// Nothing composited yet.
    #[default]
    None,
    /// Uploaded once; spans encoded and z-buffered on the GPU (RGBA8 z-buffer).
    GpuResident,
    /// Encoded on the GPU, merged on the CPU (RGBA8 blending; RGBA32F).
    GpuEncoded,
    /// Encoded and merged on the CPU (no device, or an empty viewport).
    Cpu,
}

/// The pixels of the buffers that hold anything: `x`, `y` from the top-left, `w` x `h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewport {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

/// A rank's colour buffer (always the full image).
#[derive(Clone, Copy, Debug)]
pub enum Color<'a> {
    Rgba8(&'a [u8]),
    Rgba32F(&'a [f32]),
}

/// Where the root's image goes (the full image).
#[derive(Debug)]
pub enum ColorMut<'a> {
    Rgba8(&'a mut [u8]),
    Rgba32F(&'a mut [f32]),
}

/// The composited image on the root.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// RGBA8 bytes (empty for RGBA32F).
    pub rgba8: Vec<u8>,
    /// RGBA32F channels (empty for RGBA8).
    pub rgba32f: Vec<f32>,
    /// Depth per pixel, 1.0 where no rank drew.
    pub depth: Vec<f32>,
}

/// What one [`Compositor::composite`] call cost on this rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Times {
    pub total_ms: f64,
    /// Checking and masking the buffers, the upload and Active Pixel encoding.
    pub encode_ms: f64,
    /// The rounds' messages, and waiting for the other ranks before each.
    pub exchange_ms: f64,
    /// Splitting and merging spans.
    pub composite_ms: f64,
    /// Sending the final spans to the root, and the root writing the image.
    pub gather_ms: f64,
    pub bytes_sent: u64,
}

impl Times {
    /// The time of a phase by name (`total`, `encode`, `exchange`, `composite`, `gather`).
    pub fn phase(&self, name: &str) -> Option<f64> {
        match name {
            "total" => Some(self.total_ms),
            "encode" => Some(self.encode_ms),
            "exchange" => Some(self.exchange_ms),
            "composite" => Some(self.composite_ms),
            "gather" => Some(self.gather_ms),
            _ => None,
        }
    }
}

/// The strategy [`Compositor`] picks when none is set: direct-send for two ranks or images
/// of under 4096 pixels a rank (one round of small messages), binary-swap for a power of
/// two, radix-k otherwise.
pub fn auto_strategy(ranks: usize, pixels: usize) -> Strategy {
    if ranks <= 2 || pixels / ranks.max(1) < 4096 {
        Strategy::DirectSend
    } else if ranks.is_power_of_two() {
        Strategy::BinarySwap
    } else {
        Strategy::RadixK
    }
}

/// What a compositor is made with, as each rank reads it from its caller (and the ranks
/// then agree on: [`Compositor::agreed`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub size: (u32, u32),
    pub color: ColorFormat,
    pub depth: DepthFormat,
    pub op: Op,
    pub backend: Backend,
}

/// A rank's share of compositing on one communicator.
pub struct Compositor {
    comm: Box<dyn Comm>,
    width: u32,
    height: u32,
    color: ColorFormat,
    depth: DepthFormat,
    op: Op,
    strategy: Option<Strategy>,
    /// Front-to-back: `order[v]` is the rank at position v.
    order: Vec<usize>,
    root: usize,
    background: [f32; 4],
    gpu: Option<Gpu>,
    /// The masked RGBA8 frame of the last call, reused by the next.
    scratch: Option<Frame>,
    /// The masked RGBA32F colour (the channels' bits) and depth of the last call.
    scratch_wide: Option<(Vec<u32>, Vec<f32>)>,
    last: Times,
    route: Route,
}

/// The device, its compositing pipelines and the frame's buffers, kept from call to call.
struct Gpu {
    ctx: Context,
    blender: GpuBlender,
    staging: Option<(Buffer<u32>, Buffer<f32>)>,
    frame: Option<(Buffer<u32>, Buffer<f32>)>,
}

impl Compositor {
    /// A compositor on a duplicate of `comm` (collective: every rank of `comm` calls it).
    pub fn new(
        comm: &impl Communicator,
        (width, height): (u32, u32),
        color: ColorFormat,
        depth: DepthFormat,
        op: Op,
        backend: Backend,
    ) -> Result<Compositor> {
        Compositor::on(Box::new(Mpi::on(comm)?), (width, height), color, depth, op, backend)
    }

    /// A compositor on any [`Comm`], on the default device where it uses one.
    pub fn on(
        comm: Box<dyn Comm>,
        size: (u32, u32),
        color: ColorFormat,
        depth: DepthFormat,
        op: Op,
        backend: Backend,
    ) -> Result<Compositor> {
        Compositor::on_device(comm, size, color, depth, op, backend, &DeviceSelector::Auto)
    }

    /// [`Compositor::on`] with rank r on entry r mod n of the devices `device` names
    /// (counting the ranks of its node).
    pub fn on_device(
        comm: Box<dyn Comm>,
        (width, height): (u32, u32),
        color: ColorFormat,
        depth: DepthFormat,
        op: Op,
        backend: Backend,
        device: &DeviceSelector,
    ) -> Result<Compositor> {
        let checked = (|| {
            crate::ap::pixel_count(width, height)?;
            if op == Op::ZBuffer && depth == DepthFormat::None {
                return Err(CompositeError::Invalid("the z-buffer needs a depth format".into()));
            }
            if backend == Backend::Cpu {
                return Ok(None);
            }
            match Gpu::open(comm.as_ref(), device, color) {
                Ok(gpu) => Ok(Some(gpu)),
                Err(_) if backend == Backend::Auto => Ok(None),
                Err(e) => Err(e),
            }
        })();
        let gpu = agree(comm.as_ref(), checked)?;
        let order = (0..comm.size()).collect();
        Ok(Compositor {
            comm,
            width,
            height,
            color,
            depth,
            op,
            strategy: None,
            order,
            root: 0,
            background: [0.0; 4],
            gpu,
            scratch: None,
            scratch_wide: None,
            last: Times::default(),
            route: Route::None,
        })
    }

    /// A compositor from the settings each rank read from its caller (collective): a rank
    /// whose settings are bad (`Err`) fails every rank's call with its message, so the
    /// library's callers (C, Python) never leave a rank waiting.
    pub fn agreed(comm: Box<dyn Comm>, settings: Result<Settings>, device: &DeviceSelector) -> Result<Compositor> {
        let s = agree(comm.as_ref(), settings)?;
        Compositor::on_device(comm, s.size, s.color, s.depth, s.op, s.backend, device)
    }

    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// Width and height.
    pub fn image_size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    pub fn color_format(&self) -> ColorFormat {
        self.color
    }

    pub fn depth_format(&self) -> DepthFormat {
        self.depth
    }

    pub fn root(&self) -> usize {
        self.root
    }

    /// The device compositing runs on, `None` on the CPU.
    pub fn device(&self) -> Option<String> {
        self.gpu.as_ref().map(|g| g.ctx.info().name.clone())
    }

    /// `None`: [`auto_strategy`].
    pub fn set_strategy(&mut self, strategy: Option<Strategy>) {
        self.strategy = strategy;
    }

    /// The strategy the next call runs.
    pub fn strategy(&self) -> Strategy {
        self.strategy.unwrap_or_else(|| auto_strategy(self.size(), self.width as usize * self.height as usize))
    }

    /// The ranks front to back (blending; for the z-buffer, the order that breaks depth ties):
    /// every rank once.
    pub fn set_order(&mut self, front_to_back: &[usize]) -> Result<()> {
        let n = self.size();
        let mut seen = vec![false; n];
        for &r in front_to_back {
            if r >= n || std::mem::replace(&mut seen[r], true) {
                return Err(CompositeError::Invalid(format!(
                    "the order {front_to_back:?} is no permutation of the communicator's {n} ranks"
                )));
            }
        }
        if front_to_back.len() != n {
            return Err(CompositeError::Invalid(format!(
                "the order names {} ranks; the communicator has {n}",
                front_to_back.len()
            )));
        }
        self.order = front_to_back.to_vec();
        Ok(())
    }

    pub fn set_root(&mut self, root: usize) -> Result<()> {
        if root >= self.size() {
            return Err(CompositeError::Invalid(format!(
                "root {root} is not a rank of the communicator's {}",
                self.size()
            )));
        }
        self.root = root;
        Ok(())
    }

    /// The colour of pixels no rank drew (RGBA, each 0 to 1).
    pub fn set_background(&mut self, rgba: [f32; 4]) -> Result<()> {
        if rgba.iter().any(|c| !c.is_finite()) {
            return Err(CompositeError::Invalid(format!("background {rgba:?} is not finite")));
        }
        self.background = rgba;
        Ok(())
    }

    /// The last call's times and bytes on this rank.
    pub fn last(&self) -> Times {
        self.last
    }

    /// Where the last call encoded and merged this rank's image.
    pub fn last_route(&self) -> Route {
        self.route
    }

    /// Takes part in a call that this rank cannot make (a bad argument found before the
    /// buffers are read): every rank's call fails with this rank's `message`.
    pub fn refuse(&mut self, message: String) -> CompositeError {
        let refused: Result<()> = Err(CompositeError::Invalid(message));
        agree(self.comm.as_ref(), refused).unwrap_err()
    }

    /// Composites every rank's buffers; the image on the root, `None` elsewhere.
    pub fn composite(
        &mut self,
        color: Color,
        depth: Option<&[f32]>,
        viewport: Option<Viewport>,
    ) -> Result<Option<Image>> {
        let n = self.width as usize * self.height as usize;
        let root = self.rank() == self.root;
        let channels = if root { 4 * n } else { 0 };
        let mut image = Image { rgba8: Vec::new(), rgba32f: Vec::new(), depth: vec![0.0; if root { n } else { 0 }] };
        let Image { rgba8, rgba32f, depth: out_depth } = &mut image;
        let out = match self.color {
            ColorFormat::Rgba8 => {
                rgba8.resize(channels, 0);
                ColorMut::Rgba8(rgba8)
            }
            ColorFormat::Rgba32F => {
                rgba32f.resize(channels, 0.0);
                ColorMut::Rgba32F(rgba32f)
            }
        };
        self.composite_into(color, depth, viewport, root.then_some(out), root.then_some(out_depth))?;
        Ok(root.then_some(image))
    }

    /// [`Compositor::composite`] into the caller's buffers: `out` (and `out_depth` if given)
    /// must be given on the root; elsewhere they are ignored.
    pub fn composite_into(
        &mut self,
        color: Color,
        depth: Option<&[f32]>,
        viewport: Option<Viewport>,
        out: Option<ColorMut>,
        out_depth: Option<&mut [f32]>,
    ) -> Result<()> {
        let start = Instant::now();
        let root = self.rank() == self.root;
        let checked = self.check(color, depth, viewport, out.as_ref(), out_depth.as_deref()).and_then(|()| {
            let viewport = viewport.unwrap_or(Viewport { x: 0, y: 0, w: self.width, h: self.height });
            self.prepare(color, depth, viewport)
        });
        let held = agree(self.comm.as_ref(), checked)?;
        let encode_ms = ms_since(start);
        let ordered = Ordered::new(self.comm.as_ref(), &self.order);
        let (strategy, vroot) = (self.strategy(), ordered.position(self.root));
        let (gathered, stats) = match held {
            Held::Host(piece) => composite_frame(&ordered, piece, strategy, self.op, vroot)?,
            Held::Device(pixels) => {
                let gpu = self.gpu.as_mut().expect("a device frame has its device");
                let (color, depth) = gpu.frame.as_ref().expect("uploaded");
                let frame = GpuFrame { color, depth, pixels };
                composite_frame_gpu(&ordered, frame, strategy, &mut gpu.blender, vroot)?
            }
        };
        let t = Instant::now();
        if let (true, Some(gathered), Some(out)) = (root, gathered, out) {
            self.write(&gathered, out, out_depth);
        }
        self.last = times(encode_ms, &stats, ms_since(t), ms_since(start));
        Ok(())
    }

    /// Checks the buffers' sizes and values against the settings.
    fn check(
        &self,
        color: Color,
        depth: Option<&[f32]>,
        viewport: Option<Viewport>,
        out: Option<&ColorMut>,
        out_depth: Option<&[f32]>,
    ) -> Result<()> {
        let n = self.width as usize * self.height as usize;
        let bad = |m: String| Err(CompositeError::Invalid(m));
        match (self.color, color) {
            (ColorFormat::Rgba8, Color::Rgba8(c)) if c.len() == 4 * n => {}
            (ColorFormat::Rgba32F, Color::Rgba32F(c)) if c.len() == 4 * n => {}
            _ => return bad(format!("the colour buffer must hold {n} pixels of {:?}", self.color)),
        }
        match (self.depth, depth) {
            (DepthFormat::F32, Some(d)) if d.len() == n => {}
            (DepthFormat::F32, _) => return bad(format!("the depth buffer must hold {n} f32")),
            (DepthFormat::None, Some(_)) => return bad("a depth buffer was given; the depth format is none".into()),
            (DepthFormat::None, None) => {}
        }
        if let Some(v) = viewport {
            if v.x as u64 + v.w as u64 > self.width as u64 || v.y as u64 + v.h as u64 > self.height as u64 {
                return bad(format!(
                    "viewport {},{} {}x{} is outside the {}x{} image",
                    v.x, v.y, v.w, v.h, self.width, self.height
                ));
            }
        }
        if self.rank() == self.root {
            match (self.color, out) {
                (ColorFormat::Rgba8, Some(ColorMut::Rgba8(c))) if c.len() == 4 * n => {}
                (ColorFormat::Rgba32F, Some(ColorMut::Rgba32F(c))) if c.len() == 4 * n => {}
                _ => return bad(format!("the root needs an output colour buffer of {n} pixels of {:?}", self.color)),
            }
            if out_depth.is_some_and(|d| d.len() != n) {
                return bad(format!("the output depth buffer must hold {n} f32"));
            }
        }
        Ok(())
    }

    /// This rank's image as it enters the exchange: masked to the viewport, background
    /// where the depth says so, checked, and encoded (or uploaded) where it is composited.
    fn prepare(&mut self, color: Color, depth: Option<&[f32]>, v: Viewport) -> Result<Held> {
        let (w, n) = (self.width as usize, self.width as usize * self.height as usize);
        let inside = |i: usize| {
            let (x, y) = ((i % w) as u32, (i / w) as u32);
            x >= v.x && x < v.x + v.w && y >= v.y && y < v.y + v.h
        };
        // The depth of pixel i, background (1.0) outside the viewport and for +inf; colour
        // decides where there is no depth.
        let depth_at = |i: usize, drawn: bool| -> Result<f32> {
            if !inside(i) {
                return Ok(BACKGROUND_DEPTH);
            }
            match depth {
                Some(d) if d[i] == f32::INFINITY => Ok(BACKGROUND_DEPTH),
                Some(d) if d[i].is_finite() => Ok(d[i]),
                Some(d) => Err(CompositeError::Invalid(format!("depth {} at pixel {i} is not finite", d[i]))),
                None => Ok(if drawn { 0.0 } else { BACKGROUND_DEPTH }),
            }
        };
        let empty = v.w == 0 || v.h == 0;
        match color {
            Color::Rgba8(bytes) => {
                let mut frame = self
                    .scratch
                    .take()
                    .filter(|f| f.pixels() == n)
                    .unwrap_or_else(|| Frame::empty(self.width, self.height));
                let (x0, x1) = (v.x as usize, (v.x + v.w) as usize);
                let rows = v.y as usize..(v.y + v.h) as usize;
                let filled = frame.color.par_chunks_mut(w).zip(frame.depth.par_chunks_mut(w)).enumerate().try_for_each(
                    |(y, (colors, depths))| {
                        colors.fill(0);
                        depths.fill(BACKGROUND_DEPTH);
                        if empty || !rows.contains(&y) {
                            return Ok(());
                        }
                        for x in x0..x1 {
                            let i = y * w + x;
                            let c = pack_rgba(bytes[4 * i..4 * i + 4].try_into().unwrap());
                            let d = depth_at(i, c != 0)?;
                            if d != BACKGROUND_DEPTH {
                                (colors[x], depths[x]) = (c, d);
                            }
                        }
                        Ok::<(), CompositeError>(())
                    },
                );
                let held = filled.and_then(|()| self.encode(&frame, empty));
                self.scratch = Some(frame);
                held
            }
            Color::Rgba32F(channels) => {
                let (mut colors, mut depths) = self
                    .scratch_wide
                    .take()
                    .filter(|(_, d)| d.len() == n)
                    .unwrap_or_else(|| (vec![0; 4 * n], vec![BACKGROUND_DEPTH; n]));
                let (x0, x1) = (v.x as usize, (v.x + v.w) as usize);
                let rows = v.y as usize..(v.y + v.h) as usize;
                // Only active pixels' colour is read by the encoders: the rest is left as is.
                let filled = colors.par_chunks_mut(4 * w).zip(depths.par_chunks_mut(w)).enumerate().try_for_each(
                    |(y, (colors, depths))| {
                        depths.fill(BACKGROUND_DEPTH);
                        if empty || !rows.contains(&y) {
                            return Ok(());
                        }
                        for x in x0..x1 {
                            let i = y * w + x;
                            let c = &channels[4 * i..4 * i + 4];
                            if let Some(bad) = c.iter().find(|c| !c.is_finite()) {
                                return Err(CompositeError::Invalid(format!(
                                    "colour {bad} at pixel {i} is not finite"
                                )));
                            }
                            let d = depth_at(i, c.iter().any(|&c| c != 0.0))?;
                            if d != BACKGROUND_DEPTH {
                                depths[x] = d;
                                for k in 0..4 {
                                    colors[4 * x + k] = c[k].to_bits();
                                }
                            }
                        }
                        Ok::<(), CompositeError>(())
                    },
                );
                let held = filled.and_then(|()| self.encode_wide(&colors, &depths, empty));
                self.scratch_wide = Some((colors, depths));
                held
            }
        }
    }

    /// An RGBA8 frame as it enters the exchange: uploaded for the GPU z-buffer, encoded on
    /// the GPU for blending, encoded on the CPU without a device (or with nothing drawn).
    fn encode(&mut self, frame: &Frame, empty: bool) -> Result<Held> {
        let Some(gpu) = self.gpu.as_mut().filter(|_| !empty) else {
            self.route = Route::Cpu;
            return Ok(Held::Host(Piece::Encoded(encode_parallel(frame))));
        };
        gpu.upload(&frame.color, &frame.depth)?;
        let (fc, fd) = gpu.frame.as_ref().expect("uploaded");
        if self.op == Op::ZBuffer {
            self.route = Route::GpuResident;
            return Ok(Held::Device(frame.pixels()));
        }
        let (encoded, _, _) = gpu.blender.encoder().encode(fc, fd, self.width, self.height)?;
        self.route = Route::GpuEncoded;
        Ok(Held::Host(Piece::Encoded(encoded)))
    }

    /// An RGBA32F image (four words a pixel, and depth) as it enters the exchange: encoded
    /// on the GPU in both modes, on the CPU without a device (or with nothing drawn).
    fn encode_wide(&mut self, colors: &[u32], depths: &[f32], empty: bool) -> Result<Held> {
        let Some(gpu) = self.gpu.as_mut().filter(|_| !empty) else {
            self.route = Route::Cpu;
            return Ok(Held::Host(Piece::Wide(encode_planes_parallel(colors, depths, self.width))));
        };
        gpu.upload(colors, depths)?;
        let (fc, fd) = gpu.frame.as_ref().expect("uploaded");
        let (encoded, _, _) = gpu.blender.encoder().encode_of(fc, fd, self.width, self.height, WIDE_WORDS)?;
        self.route = Route::GpuEncoded;
        Ok(Held::Host(Piece::Wide(encoded)))
    }

    /// Writes the gathered image into the root's buffers, the background where no rank drew.
    fn write(&self, gathered: &Gathered, out: ColorMut, out_depth: Option<&mut [f32]>) {
        let bg = self.background;
        match out {
            ColorMut::Rgba8(bytes) => {
                let bg8 = pack_rgba(bg.map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8)).to_le_bytes();
                bytes
                    .par_chunks_mut(4 * COPY_CHUNK)
                    .for_each(|b| b.chunks_exact_mut(4).for_each(|px| px.copy_from_slice(&bg8)));
                let mut depth = out_depth;
                if let Some(d) = depth.as_deref_mut() {
                    d.par_chunks_mut(COPY_CHUNK).for_each(|d| d.fill(BACKGROUND_DEPTH));
                }
                // Each span's pixels are its own: the spans are painted side by side.
                let mut regions = Vec::new();
                let (mut rest, mut rest_depth, mut at) = (&mut bytes[..], depth, 0usize);
                for (start, piece) in gathered.spans() {
                    let (_, tail) = std::mem::take(&mut rest).split_at_mut(4 * (start - at));
                    let (mine, tail) = tail.split_at_mut(4 * piece.pixels());
                    let mine_depth = rest_depth.take().map(|d| {
                        let (_, tail) = d.split_at_mut(start - at);
                        let (mine, tail) = tail.split_at_mut(piece.pixels());
                        rest_depth = Some(tail);
                        mine
                    });
                    regions.push((piece, mine, mine_depth));
                    (rest, at) = (tail, start + piece.pixels());
                }
                regions.into_par_iter().for_each(|(piece, bytes, depth)| paint_rgba8(piece, bytes, depth, bg8));
            }
            ColorMut::Rgba32F(channels) => {
                let mut depth = out_depth;
                for (start, piece) in gathered.spans() {
                    let (start, end) = (*start, start + piece.pixels());
                    paint_rgba32f(
                        piece,
                        &mut channels[4 * start..4 * end],
                        depth.as_deref_mut().map(|d| &mut d[start..end]),
                        bg,
                    );
                }
            }
        }
    }
}

/// Paints one gathered RGBA32F span into its part of the root's image (and depth): active
/// pixels get their colour and depth, the others the background and 1.0.
fn paint_rgba32f(piece: &Piece, channels: &mut [f32], mut depth: Option<&mut [f32]>, bg: [f32; 4]) {
    channels.par_chunks_mut(4 * COPY_CHUNK).for_each(|c| c.chunks_exact_mut(4).for_each(|px| px.copy_from_slice(&bg)));
    if let Some(d) = depth.as_deref_mut() {
        d.par_chunks_mut(COPY_CHUNK).for_each(|d| d.fill(BACKGROUND_DEPTH));
    }
    let Piece::Wide(e) = piece else { return };
    let mut p = 0;
    for run in runs_of(&e.words, WIDE_WORDS) {
        p += run.inactive as usize;
        for px in run.pixels.chunks_exact(WIDE_WORDS) {
            for k in 0..4 {
                channels[4 * p + k] = f32::from_bits(px[k]);
            }
            if let Some(d) = depth.as_deref_mut() {
                d[p] = f32::from_bits(px[4]);
            }
            p += 1;
        }
    }
}

/// Values per task of the parallel fills and copies of whole frames.
const COPY_CHUNK: usize = 1 << 16;

/// `dst` = `src`, in parallel (a 4K frame is 33 MB a buffer).
fn parallel_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    dst.par_chunks_mut(COPY_CHUNK).zip(src.par_chunks(COPY_CHUNK)).for_each(|(d, s)| d.copy_from_slice(s));
}

/// Paints one gathered span into its part of the root's RGBA8 image (and depth), which
/// holds the background: active pixels get their colour and depth; a raw pixel of the
/// background depth keeps the background colour.
fn paint_rgba8(piece: &Piece, bytes: &mut [u8], mut depth: Option<&mut [f32]>, bg8: [u8; 4]) {
    let mut put = |i: usize, color: u32, d: f32| {
        let c = if d == BACKGROUND_DEPTH { bg8 } else { color.to_le_bytes() };
        bytes[4 * i..4 * i + 4].copy_from_slice(&c);
        if let Some(depth) = depth.as_deref_mut() {
            depth[i] = d;
        }
    };
    match piece {
        Piece::Encoded(e) => {
            let mut p = 0;
            for run in crate::ap::runs(&e.words) {
                p += run.inactive as usize;
                for (k, px) in run.pixels.chunks_exact(2).enumerate() {
                    put(p + k, px[0], f32::from_bits(px[1]));
                }
                p += run.active as usize;
            }
        }
        Piece::Raw { words, .. } => {
            for (i, px) in words.chunks_exact(2).enumerate() {
                put(i, px[0], f32::from_bits(px[1]));
            }
        }
        Piece::Wide(e) => {
            let mut p = 0;
            for run in runs_of(&e.words, WIDE_WORDS) {
                p += run.inactive as usize;
                for px in run.pixels.chunks_exact(WIDE_WORDS) {
                    let (color, depth) = crate::piece::wide_as_rgba8(px);
                    put(p, color, depth);
                    p += 1;
                }
            }
        }
    }
}

/// A rank's image as it enters the exchange.
enum Held {
    /// On the host, as a piece.
    Host(Piece),
    /// Raw in the device frame buffers, of this many pixels.
    Device(usize),
}

/// The colour (`colors` words) and depth (`n` f32) buffers in `slot`, made larger where
/// they are smaller.
fn reuse_pair<'a>(
    ctx: &Context,
    slot: &'a mut Option<(Buffer<u32>, Buffer<f32>)>,
    (colors, n): (usize, usize),
    location: Location,
    what: &str,
) -> Result<&'a mut (Buffer<u32>, Buffer<f32>)> {
    if slot.as_ref().is_none_or(|(c, d)| c.len() < colors || d.len() < n) {
        *slot = None;
        *slot = Some((ctx.buffer(colors, location, what)?, ctx.buffer(n, location, what)?));
    }
    Ok(slot.as_mut().unwrap())
}

impl Gpu {
    /// This rank's device (every GPU by default, rank r on entry r mod n of its node's),
    /// with the encoder of `color` checked on it.
    fn open(comm: &dyn Comm, device: &DeviceSelector, color: ColorFormat) -> Result<Gpu> {
        let ctx = Context::open_for_rank(device, comm.local_rank())?;
        let mut blender = GpuBlender::new(&ctx)?;
        if color == ColorFormat::Rgba32F {
            blender.encoder().prepare_wide()?;
        }
        Ok(Gpu { ctx, blender, staging: None, frame: None })
    }

    /// Copies the colour words and depths into the device frame, through the staging buffers.
    fn upload(&mut self, colors: &[u32], depths: &[f32]) -> Result<()> {
        let (c, n) = (colors.len(), depths.len());
        let ctx = self.ctx.clone();
        {
            let (sc, sd) = reuse_pair(&ctx, &mut self.staging, (c, n), Location::Upload, "compositor input")?;
            parallel_copy(&mut sc.mapped_mut()?[..c], colors);
            parallel_copy(&mut sd.mapped_mut()?[..n], depths);
        }
        reuse_pair(&ctx, &mut self.frame, (c, n), Location::Device, "compositor frame")?;
        let ((sc, sd), (fc, fd)) = (self.staging.as_ref().unwrap(), self.frame.as_ref().unwrap());
        let mut rec = ctx.recorder()?;
        rec.copy_region(sc, 0, fc, 0, c);
        rec.copy_region(sd, 0, fd, 0, n);
        rec.submit()?.wait()?;
        Ok(())
    }
}

/// This call's figures from the exchange's.
fn times(encode_ms: f64, s: &ExchangeStats, write_ms: f64, total_ms: f64) -> Times {
    Times {
        total_ms,
        encode_ms: encode_ms + s.roi_ms + s.encode_ms + s.d2h_ms,
        exchange_ms: s.exchange_ms + s.wait_ms,
        composite_ms: s.composite_ms,
        gather_ms: s.gather_ms + write_ms,
        bytes_sent: s.bytes_sent as u64,
    }
}

/// The communicator seen in compositing order: rank v of this view is rank `order[v]`, so
/// the exchange, which composites in rank order, composites front to back.
struct Ordered<'a> {
    comm: &'a dyn Comm,
    order: &'a [usize],
    me: usize,
}

impl<'a> Ordered<'a> {
    fn new(comm: &'a dyn Comm, order: &'a [usize]) -> Ordered<'a> {
        let me = order.iter().position(|&r| r == comm.rank()).expect("the order holds every rank");
        Ordered { comm, order, me }
    }

    /// The position of rank `rank` in the order.
    fn position(&self, rank: usize) -> usize {
        self.order.iter().position(|&r| r == rank).expect("the order holds every rank")
    }
}

impl Comm for Ordered<'_> {
    fn rank(&self) -> usize {
        self.me
    }
    fn size(&self) -> usize {
        self.comm.size()
    }
    fn local_rank(&self) -> usize {
        self.comm.local_rank()
    }
    fn first_error(&self, error: Option<String>) -> Option<(usize, String)> {
        self.comm.first_error(error)
    }
    fn exchange(&self, sends: &[(usize, &[u32])], from: &[usize]) -> Result<Vec<Vec<u32>>> {
        let sends: Vec<(usize, &[u32])> = sends.iter().map(|&(to, w)| (self.order[to], w)).collect();
        let from: Vec<usize> = from.iter().map(|&f| self.order[f]).collect();
        self.comm.exchange(&sends, &from)
    }
    fn gather(&self, values: &[f64]) -> Option<Vec<Vec<f64>>> {
        self.comm.gather(values)
    }
    fn barrier(&self) {
        self.comm.barrier()
    }
    fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::comm::testing::threads;

    const SIZE: (u32, u32) = (61, 37);
    const STRATEGIES: [Strategy; 3] = [Strategy::BinarySwap, Strategy::RadixK, Strategy::DirectSend];
    const BACKGROUND: [f32; 4] = [0.25, 0.5, 0.75, 1.0];

    /// One rank's buffers.
    struct Input {
        rgba8: Vec<u8>,
        rgba32f: Vec<f32>,
        depth: Option<Vec<f32>>,
        viewport: Option<Viewport>,
    }

    /// Random premultiplied colour (a quarter of the pixels all zero) and depths (a quarter
    /// background, as 1.0 or +inf) for every rank, with viewports: the whole image, empty,
    /// one touching the right and bottom edges (NaN depths and colours outside it, which
    /// must be ignored), one inside.
    fn inputs(ranks: usize, depth: DepthFormat, seed: u64) -> Vec<Input> {
        let (w, h) = SIZE;
        let n = (w * h) as usize;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..ranks)
            .map(|r| {
                let viewport = match r {
                    0 => None,
                    1 => Some(Viewport { x: 5, y: 3, w: 0, h: 9 }),
                    2 => Some(Viewport { x: w / 3, y: h / 4, w: w - w / 3, h: h - h / 4 }),
                    _ => Some(Viewport { x: 2, y: 5, w: w - 9, h: h - 11 }),
                };
                let v = viewport.unwrap_or(Viewport { x: 0, y: 0, w, h });
                let (mut rgba8, mut rgba32f, mut depths) = (vec![0u8; 4 * n], vec![0f32; 4 * n], vec![1f32; n]);
                for i in 0..n {
                    let (x, y) = ((i % w as usize) as u32, (i / w as usize) as u32);
                    let inside = x >= v.x && x < v.x + v.w && y >= v.y && y < v.y + v.h;
                    if !inside && r == 2 {
                        rgba32f[4 * i..4 * i + 4].fill(f32::NAN);
                        depths[i] = f32::NAN;
                        continue;
                    }
                    let alpha: f32 = if rng.gen_bool(0.25) { 0.0 } else { rng.gen_range(0.05..1.0) };
                    for k in 0..4 {
                        let c = if k == 3 { alpha } else { alpha * rng.gen_range(0.0f32..1.0) };
                        rgba32f[4 * i + k] = c;
                        rgba8[4 * i + k] = (c * 255.0).round() as u8;
                    }
                    depths[i] = match rng.gen_range(0..8) {
                        0 => 1.0,
                        1 => f32::INFINITY,
                        _ => rng.gen_range(0.0f32..0.999),
                    };
                }
                let depth = (depth == DepthFormat::F32).then_some(depths);
                Input { rgba8, rgba32f, depth, viewport }
            })
            .collect()
    }

    /// Every rank composites `inputs` with every strategy (order back to front, root the
    /// last rank): the root's image per strategy, and every rank's route.
    fn run(
        inputs: &[Input],
        color: ColorFormat,
        depth: DepthFormat,
        op: Op,
        backend: Backend,
    ) -> (Vec<Image>, Vec<Route>) {
        let ranks = inputs.len();
        let results: Vec<(Vec<Option<Image>>, Route)> = std::thread::scope(|scope| {
            let handles: Vec<_> = threads(ranks)
                .into_iter()
                .zip(inputs)
                .map(|(comm, input)| {
                    scope.spawn(move || {
                        let mut c = Compositor::on(Box::new(comm), SIZE, color, depth, op, backend).unwrap();
                        c.set_order(&(0..ranks).rev().collect::<Vec<_>>()).unwrap();
                        c.set_root(ranks - 1).unwrap();
                        c.set_background(BACKGROUND).unwrap();
                        let images = STRATEGIES
                            .iter()
                            .map(|&s| {
                                c.set_strategy(Some(s));
                                let colors = match color {
                                    ColorFormat::Rgba8 => Color::Rgba8(&input.rgba8),
                                    ColorFormat::Rgba32F => Color::Rgba32F(&input.rgba32f),
                                };
                                c.composite(colors, input.depth.as_deref(), input.viewport).unwrap()
                            })
                            .collect();
                        (images, c.last_route())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let routes = results.iter().map(|r| r.1).collect();
        let images = results.into_iter().last().unwrap().0.into_iter().map(Option::unwrap).collect();
        (images, routes)
    }

    /// The independent composite of the RGBA32F inputs, back to front order given as front
    /// to back `order`: the z-buffer (ties to the earlier) or "over" in f64.
    fn reference(inputs: &[Input], order: &[usize], op: Op) -> Vec<f64> {
        let (w, h) = SIZE;
        let n = (w * h) as usize;
        let mut out = vec![0f64; 4 * n];
        for (i, px) in out.chunks_exact_mut(4).enumerate() {
            let (x, y) = ((i % w as usize) as u32, (i / w as usize) as u32);
            let drawn: Vec<(f32, &[f32])> = order
                .iter()
                .map(|&r| &inputs[r])
                .filter(|inp| inp.viewport.is_none_or(|v| x >= v.x && x < v.x + v.w && y >= v.y && y < v.y + v.h))
                .map(|inp| {
                    let c = &inp.rgba32f[4 * i..4 * i + 4];
                    (inp.depth.as_ref().map_or(if c.iter().any(|&c| c != 0.0) { 0.0 } else { 1.0 }, |d| d[i]), c)
                })
                .filter(|(d, _)| *d < 1.0)
                .collect();
            match op {
                Op::ZBuffer => {
                    let near = drawn.iter().fold(None, |best: Option<&(f32, &[f32])>, p| match best {
                        Some(b) if b.0 <= p.0 => Some(b),
                        _ => Some(p),
                    });
                    for k in 0..4 {
                        px[k] = near.map_or(BACKGROUND[k], |p| p.1[k]) as f64;
                    }
                }
                Op::Over => {
                    if drawn.is_empty() {
                        px.iter_mut().zip(BACKGROUND).for_each(|(p, b)| *p = b as f64);
                    }
                    for (_, c) in &drawn {
                        let t = 1.0 - px[3];
                        px.iter_mut().zip(c.iter()).for_each(|(p, &c)| *p += c as f64 * t);
                    }
                }
            }
        }
        out
    }

    /// The GPU path (lavapipe here) against the CPU path, at 1, 3 and 4 ranks (one with an
    /// empty viewport, one with its viewport at the image's edge), every strategy, RGBA8 and
    /// RGBA32F, the z-buffer and "over" with and without depth: identical images, RGBA32F
    /// also against an independent composite (exact for the z-buffer), and the route each
    /// rank's image took.
    #[test]
    fn gpu_and_cpu_paths_give_identical_images() {
        for ranks in [1, 3, 4] {
            for (op, depth) in
                [(Op::ZBuffer, DepthFormat::F32), (Op::Over, DepthFormat::F32), (Op::Over, DepthFormat::None)]
            {
                let inputs = inputs(ranks, depth, 7 + ranks as u64);
                let order: Vec<usize> = (0..ranks).rev().collect();
                let want = reference(&inputs, &order, op);
                for color in [ColorFormat::Rgba8, ColorFormat::Rgba32F] {
                    let what = format!("{ranks} ranks, {op:?}, depth {depth:?}, {color:?}");
                    let (gpu, gpu_routes) = run(&inputs, color, depth, op, Backend::Gpu);
                    let (cpu, cpu_routes) = run(&inputs, color, depth, op, Backend::Cpu);
                    for (r, route) in gpu_routes.iter().enumerate() {
                        let expect = match (r, color, op) {
                            (1, _, _) => Route::Cpu,
                            (_, ColorFormat::Rgba8, Op::ZBuffer) => Route::GpuResident,
                            _ => Route::GpuEncoded,
                        };
                        assert_eq!(*route, expect, "rank {r}: {what}");
                    }
                    assert!(cpu_routes.iter().all(|&r| r == Route::Cpu), "{what}");
                    for (s, (g, c)) in STRATEGIES.iter().zip(gpu.iter().zip(&cpu)) {
                        assert!(g == c, "{s:?}: {what}");
                        if color == ColorFormat::Rgba32F {
                            let worst =
                                g.rgba32f.iter().zip(&want).map(|(&g, &w)| (g as f64 - w).abs()).fold(0.0, f64::max);
                            let bound = if op == Op::ZBuffer { 0.0 } else { 1e-5 };
                            assert!(worst <= bound, "{s:?}: {what}: off by {worst} from the independent composite");
                        }
                    }
                }
            }
        }
        engine::testing::assert_no_validation_messages();
    }
}
