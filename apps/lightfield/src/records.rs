//! What each subcommand reports: a typed record printed once by `kit::emit`, as its
//! `Display` text or inside the JSON envelope. Times are milliseconds, named `*_ms`.

use std::fmt;

use serde::Serialize;

#[derive(Serialize)]
pub struct TrainReport {
    pub dictionaries: usize,
    pub patch: String,
    pub iterations: usize,
    pub training_patches: usize,
    pub mean_coefficients: f64,
    pub success_fraction: f64,
    pub psnr_db: f64,
    pub train_ms: f64,
    /// Where the time went: initial dictionaries, assignment and update steps.
    pub times: lightfield::train::TrainTimes,
}

impl fmt::Display for TrainReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "trained {} dictionaries for {} patches on {} patches in {:.0} ms (initial {:.0}, assignment {:.0}, update {:.0}): {:.1} coefficients per patch, PSNR {:.2} dB",
            self.dictionaries,
            self.patch,
            self.training_patches,
            self.train_ms,
            self.times.init_ms,
            self.times.assign_ms,
            self.times.update_ms,
            self.mean_coefficients,
            self.psnr_db
        )
    }
}

/// `train --dct`: the fixed DCT ensemble written.
#[derive(Serialize)]
pub struct DctReport {
    pub dictionaries: usize,
    pub patch: String,
}

impl fmt::Display for DctReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wrote {} dictionary of DCT-II bases for {} patches", self.dictionaries, self.patch)
    }
}

#[derive(Serialize)]
pub struct EncodeReport {
    #[serde(flatten)]
    pub quality: lightfield::codec::EncodeQuality,
    /// The file's bits over views x width x height (the dictionaries included).
    pub bits_per_pixel: f64,
    /// `--bpp` as given (null with `--epsilon`).
    pub bpp_target: Option<f64>,
    /// Encodes made: 1 with `--epsilon`, those of the search with `--bpp`.
    pub rate_trials: usize,
    /// The RMSE bound every patch that met its budget holds (with `--bpp`, the one found).
    #[serde(serialize_with = "kit::report::f32_shortest")]
    pub epsilon: f32,
    /// The cap T on coefficients per patch.
    pub sparsity: usize,
    /// Patches stored with T coefficients, the cap (`info` counts the same from the file).
    pub capped_patches: usize,
    /// Capped patches that did not reach epsilon by the encoder's test (error within budget).
    pub over_epsilon_patches: usize,
    /// The largest RMSE bound among the patches over epsilon, `epsilon * sqrt(error /
    /// budget)`: above epsilon, and at least the patch's decoded RMSE (null when none).
    pub worst_rmse_bound: Option<f64>,
    /// From the input to the `.lfc` bytes: a `.npy` is read in bands while the first ones
    /// encode, a folder of views is read first (the sum of the parts below overlaps:
    /// sections are compressed while the chunks are encoded).
    pub encode_ms: f64,
    /// GPU time of the encode kernel (null on the CPU backend).
    pub kernel_ms: Option<f64>,
    /// Host time gathering patches and their error budgets.
    pub gather_ms: f64,
    /// From the start until the last chunk's codes were back (gather, uploads, kernels).
    pub chunks_ms: f64,
    /// CPU time compressing sections, summed over threads (overlapped with `chunks_ms`).
    pub compress_ms: f64,
    /// After the last chunk: the last sections' compression, the table and the header.
    pub bitstream_ms: f64,
}

impl fmt::Display for EncodeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} patches, {:.1} coefficients per patch, {} bytes, {:.4} bits/pixel, PSNR {:.2} dB, encode {:.1} ms",
            self.quality.patches,
            self.quality.mean_coefficients,
            self.quality.bytes,
            self.bits_per_pixel,
            self.quality.psnr_db,
            self.encode_ms
        )?;
        match self.worst_rmse_bound {
            Some(worst) => write!(
                f,
                "\nwarning: {} of {} patches did not reach RMSE {} within the cap of {} coefficients; worst RMSE bound {worst:.5}",
                self.over_epsilon_patches, self.quality.patches, self.epsilon, self.sparsity
            ),
            None => write!(f, "\nevery patch within RMSE {}", self.epsilon),
        }
    }
}

#[derive(Serialize)]
pub struct DecodeReport {
    pub shape: [usize; 5],
    /// Views written as PNG (0 without --views).
    pub views_written: usize,
    pub depth_bits: Option<u32>,
    /// From the parsed codes to the decoded light field in host memory.
    pub decode_ms: f64,
    /// Reading the `.lfc` file.
    pub read_ms: f64,
    /// Checking the header, zstd decompression and parsing the codes.
    pub parse_ms: f64,
    /// Within `decode_ms`: staging the inputs and waiting on the GPU's uploads, kernels and
    /// downloads (null on the CPU backend).
    pub upload_kernels_ms: Option<f64>,
    /// Within `decode_ms`: scattering decoded patches into the light field (GPU backend).
    pub scatter_ms: Option<f64>,
    /// GPU time of the decode kernel (null on the CPU backend).
    pub kernel_ms: Option<f64>,
}

impl fmt::Display for DecodeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "decoded {:?} in {:.1} ms", self.shape, self.decode_ms)?;
        if let Some(bits) = self.depth_bits {
            write!(f, ", {} views as {bits}-bit PNG", self.views_written)?;
        }
        Ok(())
    }
}

#[derive(Serialize)]
pub struct InfoReport {
    pub file: String,
    pub bytes: usize,
    /// The `.lfc` format's version (not `version`: the envelope's `version` is the binary's).
    pub format_version: u32,
    pub views: [usize; 2],
    pub height: usize,
    pub width: usize,
    pub patch: String,
    pub dictionaries: usize,
    pub sparsity: usize,
    #[serde(serialize_with = "kit::report::f32_shortest")]
    pub epsilon: f32,
    #[serde(serialize_with = "kit::report::f32_shortest")]
    pub step: f32,
    pub patches: usize,
    pub coefficients: u64,
    pub mean_coefficients: f64,
    /// Patches stored with T coefficients, the cap (as `encode` reports them).
    pub capped_patches: usize,
    pub dictionaries_used: usize,
    pub bits_per_sample: f64,
    pub payload_bytes: u64,
    pub compressed_payload_bytes: u64,
    /// Where the file's bytes go (dictionaries, header, table, each stream of the sections).
    pub breakdown: lightfield::sections::Breakdown,
}

impl fmt::Display for InfoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.breakdown;
        let (raw, alone) = (&b.raw, &b.compressed_alone);
        let stream = |r: u64, a: u64| format!("{r} raw, {a} compressed alone");
        let rows: [(&str, String); 27] = [
            ("file", self.file.clone()),
            ("bytes", self.bytes.to_string()),
            ("format_version", self.format_version.to_string()),
            ("views", format!("{}x{}", self.views[0], self.views[1])),
            ("height", self.height.to_string()),
            ("width", self.width.to_string()),
            ("patch", self.patch.clone()),
            ("dictionaries", self.dictionaries.to_string()),
            ("sparsity", self.sparsity.to_string()),
            ("epsilon", self.epsilon.to_string()),
            ("step", self.step.to_string()),
            ("patches", self.patches.to_string()),
            ("coefficients", self.coefficients.to_string()),
            ("mean_coefficients", format!("{:.2}", self.mean_coefficients)),
            ("capped_patches", self.capped_patches.to_string()),
            ("dictionaries_used", self.dictionaries_used.to_string()),
            ("bits_per_sample", format!("{:.4}", self.bits_per_sample)),
            ("payload_bytes", self.payload_bytes.to_string()),
            ("compressed_payload_bytes", self.compressed_payload_bytes.to_string()),
            ("header + table bytes", format!("{} + {}", b.header, b.table)),
            ("dictionary bytes", b.dictionaries.to_string()),
            ("section bytes", b.sections.to_string()),
            ("  memberships", stream(raw.membership, alone.membership)),
            ("  counts", stream(raw.counts, alone.counts)),
            ("  locations", stream(raw.locations, alone.locations)),
            ("  levels", stream(raw.levels, alone.levels)),
            (
                "padded patches",
                format!(
                    "{} holding {} coefficients; coded / real samples {:.2}",
                    b.padded_patches, b.padded_patch_coefficients, b.coded_over_real_samples
                ),
            ),
        ];
        let lines: Vec<String> = rows.iter().map(|(k, v)| format!("{k:>24}: {v}")).collect();
        write!(f, "{}", lines.join("\n"))
    }
}

#[derive(Serialize)]
pub struct GenerateReport {
    pub shape: [usize; 5],
    pub seed: u64,
    pub generate_ms: f64,
}

impl fmt::Display for GenerateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "generated a {:?} float32 light field (seed {}) in {:.1} ms", self.shape, self.seed, self.generate_ms)
    }
}

/// Where and how a light field was looked at (`render`, `view`): the fields of a
/// [`lightfield::render::View`], with the position named `view`.
#[derive(Serialize)]
pub struct Viewpoint {
    /// View row and column.
    #[serde(serialize_with = "kit::report::f32s_shortest")]
    pub view: [f32; 2],
    #[serde(serialize_with = "kit::report::f32_shortest")]
    pub focus: f32,
    #[serde(serialize_with = "kit::report::f32_shortest")]
    pub aperture: f32,
    pub width: u32,
    pub height: u32,
}

impl From<&lightfield::render::View> for Viewpoint {
    fn from(v: &lightfield::render::View) -> Self {
        Viewpoint { view: v.position, focus: v.focus, aperture: v.aperture, width: v.width, height: v.height }
    }
}

#[derive(Serialize)]
pub struct RenderReport {
    #[serde(flatten)]
    pub viewpoint: Viewpoint,
    pub decode_ms: f64,
    pub render_ms: f64,
}

impl fmt::Display for RenderReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rendered view {},{} (focus {} px, aperture {}) at {}x{} in {:.1} ms after a {:.1} ms decode",
            self.viewpoint.view[0],
            self.viewpoint.view[1],
            self.viewpoint.focus,
            self.viewpoint.aperture,
            self.viewpoint.width,
            self.viewpoint.height,
            self.render_ms,
            self.decode_ms
        )
    }
}

#[derive(Serialize)]
pub struct ViewReport {
    pub frames: u64,
    /// The last viewpoint shown.
    #[serde(flatten)]
    pub viewpoint: Viewpoint,
    /// Decoding every view on the GPU into device memory, before the first frame.
    pub decode_ms: f64,
}

impl fmt::Display for ViewReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "showed {} frames of {}x{}, last at view {:.2},{:.2} (focus {} px, aperture {}); decode {:.1} ms",
            self.frames,
            self.viewpoint.width,
            self.viewpoint.height,
            self.viewpoint.view[0],
            self.viewpoint.view[1],
            self.viewpoint.focus,
            self.viewpoint.aperture,
            self.decode_ms
        )
    }
}

#[derive(Serialize)]
pub struct DecodeViewReport {
    pub view: [usize; 2],
    pub width: usize,
    pub height: usize,
    /// From reading the section table to the view's samples (the file read excluded).
    pub decode_ms: f64,
    /// Sections decompressed for this view, of all in the file.
    pub sections: lightfield::random_access::SectionsRead,
}

impl fmt::Display for DecodeViewReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "decoded view {},{} ({}x{}) alone in {:.1} ms from {} of {} sections",
            self.view[0],
            self.view[1],
            self.width,
            self.height,
            self.decode_ms,
            self.sections.read,
            self.sections.total
        )
    }
}
