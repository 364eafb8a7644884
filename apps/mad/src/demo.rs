//! `mad demo --out DIR`: the metric's part of the main demo. Takes a real photo (the sample
//! photo `camera`, a 4:3 crop at 320x240, gray) and eight distortions of it (two strengths
//! each of JPEG, blur, noise and contrast), scores them, and writes into DIR: the images
//! (`images/`), each pair's maps (`maps/<distortion>/`), and `mad_summary.json`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::gpu::GpuMad;
use crate::synth::{distort, to_u8, Distortion};
use crate::{maps, GrayImage, MadError, Maps, Scores};

/// The demo's distortions, mild then strong for each kind.
pub const DISTORTIONS: [Distortion; 8] = [
    Distortion::Jpeg(50),
    Distortion::Jpeg(10),
    Distortion::Blur(1.0),
    Distortion::Blur(3.0),
    Distortion::Noise(5.0),
    Distortion::Noise(20.0),
    Distortion::Contrast(0.7),
    Distortion::Contrast(0.4),
];

/// The reference photo (`assets/photos/`).
const PHOTO: kit::photos::Photo = kit::photos::CAMERA;

/// Size of the reference (deliberately not a power of two).
pub const WIDTH: usize = 320;
pub const HEIGHT: usize = 240;

/// One scored distortion, its files relative to the demo folder.
#[derive(Clone, Debug, Serialize)]
pub struct DemoPair {
    pub distortion: Distortion,
    pub image: String,
    pub maps: String,
    #[serde(flatten)]
    pub scores: Scores,
}

/// What the demo produced (printed, and written as `mad_summary.json` with the backend).
#[derive(Clone, Debug, Serialize)]
pub struct DemoReport {
    /// The sample photo the reference is cut from.
    pub photo: &'static str,
    pub reference: String,
    pub width: usize,
    pub height: usize,
    pub pairs: Vec<DemoPair>,
    #[serde(skip)]
    pub out: PathBuf,
}

/// `mad_summary.json`: the report and the backend that made it.
#[derive(Serialize)]
struct SummaryFile<'a> {
    backend: &'static str,
    #[serde(flatten)]
    report: &'a DemoReport,
}

impl fmt::Display for DemoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let by_mad = |a: &&DemoPair, b: &&DemoPair| a.scores.mad.total_cmp(&b.scores.mad);
        let (Some(lo), Some(hi)) = (self.pairs.iter().min_by(by_mad), self.pairs.iter().max_by(by_mad)) else {
            return write!(f, "mad: no distortions scored");
        };
        write!(
            f,
            "mad: scored {} distortions of the photo {} ({}x{}): MAD from {:.1} ({}) to {:.1} ({}); images, maps and mad_summary.json in {}",
            self.pairs.len(),
            self.photo,
            self.width,
            self.height,
            lo.scores.mad,
            lo.distortion.label(),
            hi.scores.mad,
            hi.distortion.label(),
            self.out.display()
        )
    }
}

/// The reference: the photo at the demo's size, rounded to 8 bits like any PNG input.
fn reference() -> Result<GrayImage, MadError> {
    let gray = PHOTO.resized(WIDTH, HEIGHT, 1)?;
    let pixels: Vec<u8> = gray.data.iter().map(|&v| kit::image::to_u8(v)).collect();
    Ok(GrayImage::from_u8(WIDTH, HEIGHT, &pixels))
}

/// Runs the demo into `out` (checked by the caller) with the GPU (`gpu`) or the CPU
/// reference (`None`).
pub fn run(out: &Path, gpu: Option<&GpuMad>) -> Result<DemoReport, MadError> {
    let images = out.join("images");
    let map_dir = |d: &Distortion| out.join("maps").join(d.label());
    kit::output::check_folder(&images, &[])?;
    for d in &DISTORTIONS {
        maps::check(&map_dir(d), &[])?;
    }
    let reference = reference()?;
    kit::image::save_gray8(&images.join("reference.png"), WIDTH, HEIGHT, &to_u8(&reference))?;
    let distorted: Vec<(Distortion, GrayImage)> =
        DISTORTIONS.iter().enumerate().map(|(i, &d)| (d, distort(&reference, d, i as u64))).collect();
    for (d, img) in &distorted {
        kit::image::save_gray8(&images.join(format!("{}.png", d.label())), WIDTH, HEIGHT, &to_u8(img))?;
    }
    let mut results: Vec<(Distortion, Scores, Option<Maps>)> = Vec::new();
    match gpu {
        Some(gpu) => {
            let stream = distorted.iter().map(|(d, img)| (*d, &reference, img));
            gpu.score_stream(stream, None, true, |s| results.push((s.tag, s.scores, s.maps)))?;
        }
        None => {
            for (d, img) in &distorted {
                let (scores, maps) = crate::cpu::score(&reference, img)?;
                results.push((*d, scores, Some(maps)));
            }
        }
    }
    let mut pairs = Vec::new();
    for (d, scores, m) in results {
        // score_stream returns maps for every pair when asked for them.
        if let Some(m) = &m {
            maps::write_maps(&map_dir(&d), m)?;
        }
        pairs.push(DemoPair {
            distortion: d,
            image: format!("images/{}.png", d.label()),
            maps: format!("maps/{}/", d.label()),
            scores,
        });
    }
    let report = DemoReport {
        photo: PHOTO.name,
        reference: "images/reference.png".into(),
        width: WIDTH,
        height: HEIGHT,
        pairs,
        out: out.to_path_buf(),
    };
    let backend = if gpu.is_some() { "gpu" } else { "cpu" };
    kit::output::write_json(&out.join("mad_summary.json"), &SummaryFile { backend, report: &report })?;
    Ok(report)
}
