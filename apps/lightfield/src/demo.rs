//! `lightfield demo`: the light-field part of the main-job demo. Renders two scenes of
//! photo layers (the sample photos, cut into a backdrop and a few discs and cards at several
//! depths, so the views have real parallax and occlusion), trains a small ensemble on one,
//! encodes and decodes the other on the GPU, and writes the centre view (original and
//! decoded), the four corner views of the decoded light field side by side, the `.lfd` and
//! `.lfc` files and a JSON summary into the output folder, all or none.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use kit::image::ImageF32;
use kit::output::Staged;
use kit::photos::{self, Photo};

use crate::codec::{decode_lightfield, encode_lightfield, CodecPath, EncodeQuality};
use crate::codes::Params;
use crate::error::{LfError, Result};
use crate::gpu::GpuCodec;
use crate::lightfield::{LightField, COLOURS};
use crate::patch::PatchShape;
use crate::synth::paint;
use crate::train::{train, TrainDevice, TrainOptions};
use crate::views::{stage_view, Depth};

/// What the demo did (also written as `summary.json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DemoReport {
    /// The photos of the encoded scene, backdrop first, and the disparity (pixels per view
    /// step) of each.
    pub photos: Vec<&'static str>,
    pub disparities: Vec<f32>,
    #[serde(flatten)]
    pub quality: EncodeQuality,
    pub patch: String,
    pub dictionaries: usize,
    pub sparsity: usize,
    #[serde(serialize_with = "kit::report::f32_shortest")]
    pub epsilon: f32,
    pub encode_ms: f64,
    /// The files written, in the output folder.
    #[serde(skip)]
    pub files: Vec<PathBuf>,
}

impl std::fmt::Display for DemoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lightfield: {}x{} views of {}x{} of {} photo layers, K={} -> {:.3} bits/sample, PSNR {:.2} dB, encode {:.1} ms",
            self.quality.views[0],
            self.quality.views[1],
            self.quality.width,
            self.quality.height,
            self.photos.len(),
            self.dictionaries,
            self.quality.bits_per_sample,
            self.quality.psnr_db,
            self.encode_ms
        )
    }
}

/// The files the demo writes into its folder.
pub const FILES: [&str; 6] = [
    "dictionaries.lfd",
    "lightfield.lfc",
    "summary.json",
    "center_original.png",
    "center_decoded.png",
    "corners_decoded.png",
];

/// One layer of a scene: a photo shown in a box of the view (as a card, or a disc inscribed
/// in it), at a disparity of `disparity` pixels per view step.
struct LayerSpec {
    photo: Photo,
    /// Centre and half-size of the box, in fractions of the view's width and height.
    centre: [f32; 2],
    half: [f32; 2],
    disc: bool,
    disparity: f32,
}

/// The encoded scene: a launch behind a cup, the cat and the astronaut, nearest last.
const SCENE: [LayerSpec; 4] = [
    LayerSpec { photo: photos::ROCKET, centre: [0.5, 0.5], half: [0.6, 0.6], disc: false, disparity: -0.5 },
    LayerSpec { photo: photos::COFFEE, centre: [0.28, 0.62], half: [0.24, 0.3], disc: true, disparity: 0.6 },
    LayerSpec { photo: photos::CHELSEA, centre: [0.68, 0.5], half: [0.26, 0.3], disc: false, disparity: 1.4 },
    LayerSpec { photo: photos::ASTRONAUT, centre: [0.42, 0.28], half: [0.13, 0.19], disc: true, disparity: 2.2 },
];

/// The training scene: other photos in other places.
const TRAINING: [LayerSpec; 3] = [
    LayerSpec { photo: photos::HUBBLE, centre: [0.5, 0.5], half: [0.6, 0.6], disc: false, disparity: -0.3 },
    LayerSpec { photo: photos::RETINA, centre: [0.35, 0.45], half: [0.3, 0.32], disc: true, disparity: 0.9 },
    LayerSpec { photo: photos::CAMERA, centre: [0.7, 0.6], half: [0.22, 0.3], disc: false, disparity: 1.8 },
];

/// A layer resampled for one view size: its box in pixels and its photo fitted to the box.
struct Layer {
    origin: [f32; 2],
    size: [f32; 2],
    disc: bool,
    disparity: f32,
    image: ImageF32,
}

impl Layer {
    fn new(spec: &LayerSpec, w: usize, h: usize) -> Result<Layer> {
        let size = [2.0 * spec.half[0] * w as f32, 2.0 * spec.half[1] * h as f32];
        let origin = [spec.centre[0] * w as f32 - size[0] / 2.0, spec.centre[1] * h as f32 - size[1] / 2.0];
        // Twice the box's pixels, so that shifted samples stay sharp.
        let (iw, ih) = ((2.0 * size[0]).ceil() as usize, (2.0 * size[1]).ceil() as usize);
        let mut image = spec.photo.resized(iw.max(2), ih.max(2), 3)?;
        if image.channels == 1 {
            image.data = image.data.iter().flat_map(|&v| [v; 3]).collect();
            image.channels = 3;
        }
        Ok(Layer { origin, size, disc: spec.disc, disparity: spec.disparity, image })
    }

    /// The layer's colour at view pixel (x, y), bilinear, if the layer covers it.
    fn sample(&self, x: f32, y: f32) -> Option<[f32; 3]> {
        let (fx, fy) = ((x - self.origin[0]) / self.size[0], (y - self.origin[1]) / self.size[1]);
        if !(0.0..1.0).contains(&fx) || !(0.0..1.0).contains(&fy) {
            return None;
        }
        if self.disc && (fx - 0.5).powi(2) + (fy - 0.5).powi(2) > 0.25 {
            return None;
        }
        let img = &self.image;
        let px = (fx * img.width as f32 - 0.5).clamp(0.0, (img.width - 1) as f32);
        let py = (fy * img.height as f32 - 0.5).clamp(0.0, (img.height - 1) as f32);
        let (x0, y0) = (px as usize, py as usize);
        let (x1, y1) = ((x0 + 1).min(img.width - 1), (y0 + 1).min(img.height - 1));
        let (tx, ty) = (px - x0 as f32, py - y0 as f32);
        Some(std::array::from_fn(|c| {
            let top = img.at(x0, y0, c) * (1.0 - tx) + img.at(x1, y0, c) * tx;
            let bottom = img.at(x0, y1, c) * (1.0 - tx) + img.at(x1, y1, c) * tx;
            top * (1.0 - ty) + bottom * ty
        }))
    }
}

/// Renders `layers` (farthest first) for a `views` grid of `size` (width x height) views: a
/// layer at disparity d moves by d pixels per view step, and nearer layers hide farther ones.
fn render_scene(layers: &[LayerSpec], views: (usize, usize), size: (usize, usize)) -> Result<LightField> {
    let (w, h) = size;
    let mut resampled = layers.iter().map(|l| Layer::new(l, w, h)).collect::<Result<Vec<_>>>()?;
    resampled.reverse();
    paint(views, size, |du, dv, x, y| {
        let (xs, ys) = (x as f32 + 0.5, y as f32 + 0.5);
        resampled.iter().find_map(|l| l.sample(xs + l.disparity * dv, ys + l.disparity * du)).unwrap_or([0.0; 3])
    })
}

/// The four corner views of `lf` in a 2x2 grid with a 2-pixel white gutter, as a one-view
/// light field (for [`stage_view`]).
fn corner_views(lf: &LightField) -> Result<LightField> {
    const GAP: usize = 2;
    let (w, h) = (2 * lf.w + GAP, 2 * lf.h + GAP);
    let mut data = vec![1f32; w * h * COLOURS];
    for (i, (a, b)) in [(0, 0), (0, lf.v - 1), (lf.u - 1, 0), (lf.u - 1, lf.v - 1)].into_iter().enumerate() {
        let (ox, oy) = ((i % 2) * (lf.w + GAP), (i / 2) * (lf.h + GAP));
        for (y, row) in lf.view(a, b).chunks_exact(lf.w * COLOURS).enumerate() {
            let start = ((oy + y) * w + ox) * COLOURS;
            data[start..start + row.len()].copy_from_slice(row);
        }
    }
    LightField::new(1, 1, h, w, data)
}

/// Runs the demo on `ctx` into `out` (an existing, writable folder).
pub fn run(out: &Path, ctx: &engine::Context) -> Result<DemoReport> {
    let shape = PatchShape::PAPER;
    let views = (8, 8);
    let training = [render_scene(&TRAINING, views, (48, 48))?];
    let params = Params { sparsity: 600, epsilon: 0.01 };
    let opts = TrainOptions { k: 8, shape, iterations: 2, params, seed: 1, max_patches: 10_000, precluster: false };
    let (ens, _) = train(&training, &opts, TrainDevice::Cpu, |_| {})?;

    let lf = render_scene(&SCENE, views, (96, 64))?;
    let gpu = GpuCodec::new(ctx, &ens)?;
    let t0 = Instant::now();
    let (compressed, _) = encode_lightfield(&lf, &ens, params, CodecPath::Gpu(&gpu))?;
    let encode_ms = t0.elapsed().as_secs_f64() * 1e3;
    let lfc = compressed.to_bytes()?;
    let (decoded, _) = decode_lightfield(&compressed, CodecPath::Gpu(&gpu))?;
    let mut report = DemoReport {
        photos: SCENE.iter().map(|l| l.photo.name).collect(),
        disparities: SCENE.iter().map(|l| l.disparity).collect(),
        quality: EncodeQuality::new(&lf, &compressed, lfc.len(), &decoded),
        patch: shape.to_string(),
        dictionaries: ens.k,
        sparsity: params.sparsity,
        epsilon: params.epsilon,
        encode_ms,
        files: Vec::new(),
    };
    let summary = serde_json::to_string_pretty(&report).map_err(LfError::Json)?;
    let mut staged = Staged::new();
    let mut stage_bytes = |name: &str, bytes: &[u8], staged: &mut Staged| -> Result<()> {
        let path = out.join(name);
        staged.write(&path, |w| w.write_all(bytes))?;
        report.files.push(path);
        Ok(())
    };
    stage_bytes("dictionaries.lfd", &ens.to_lfd_bytes()?, &mut staged)?;
    stage_bytes("lightfield.lfc", &lfc, &mut staged)?;
    stage_bytes("summary.json", format!("{summary}\n").as_bytes(), &mut staged)?;
    let (cu, cv) = (lf.u / 2, lf.v / 2);
    let corners = corner_views(&decoded)?;
    for (name, field, (a, b)) in [
        ("center_original.png", &lf, (cu, cv)),
        ("center_decoded.png", &decoded, (cu, cv)),
        ("corners_decoded.png", &corners, (0, 0)),
    ] {
        let path = out.join(name);
        stage_view(&mut staged, &path, field, a, b, Depth::Bits8)?;
        report.files.push(path);
    }
    debug_assert!(report.files.iter().all(|f| FILES.iter().any(|n| f.ends_with(n))), "FILES lists {:?}", report.files);
    staged.commit()?;
    Ok(report)
}
