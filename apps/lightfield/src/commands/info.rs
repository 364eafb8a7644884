//! `lightfield info`: a `.lfc` file's header and statistics (the same checks as decode).

use std::path::PathBuf;

use lightfield::bitstream::{Compressed, Header};
use lightfield::sections::Breakdown;
use lightfield::Result;

use super::ReportArgs;
use crate::records::InfoReport;

#[derive(clap::Args)]
pub struct InfoArgs {
    /// Compressed light field (.lfc)
    #[arg(value_name = "FILE.lfc")]
    input: PathBuf,
    #[command(flatten)]
    report: ReportArgs,
}

pub fn run(args: InfoArgs) -> Result<()> {
    let path = args.input.as_path();
    let bytes = kit::input::read_bounded(path, kit::budget::get())?;
    let file_error = |e| lightfield::LfError::file(path, e);
    let header = Header::parse(&bytes).map_err(file_error)?;
    let c = Compressed::from_bytes(&bytes).map_err(file_error)?;
    let n = c.codes.len();
    let samples: usize = c.size.iter().product::<usize>() * lightfield::lightfield::COLOURS;
    let mut usage = vec![0usize; c.ensemble.k];
    c.codes.membership.iter().for_each(|&m| usage[m as usize] += 1);
    let report = InfoReport {
        file: path.display().to_string(),
        bytes: bytes.len(),
        format_version: header.version,
        views: [c.size[0], c.size[1]],
        height: c.size[2],
        width: c.size[3],
        patch: c.ensemble.shape.to_string(),
        dictionaries: c.ensemble.k,
        sparsity: c.params.sparsity,
        epsilon: c.params.epsilon,
        step: c.step,
        patches: n,
        coefficients: header.coefficients,
        mean_coefficients: header.coefficients as f64 / n as f64,
        capped_patches: (0..n).filter(|&p| c.codes.count(p) == c.params.sparsity).count(),
        dictionaries_used: usage.iter().filter(|&&u| u > 0).count(),
        bits_per_sample: bytes.len() as f64 * 8.0 / samples as f64,
        payload_bytes: header.payload_len,
        compressed_payload_bytes: header.frame_len,
        breakdown: Breakdown::new(&header, &bytes, &c.codes, &c.grid())?,
    };
    kit::emit(&report, &[]);
    Ok(())
}
