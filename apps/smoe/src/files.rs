//! Model files in every format: JSON, the binary `.smoe`/`.bin` and the entropy-coded `.smc`
//! ([`crate::codec`]), told apart by their magics when read and by the extension when
//! written. Here, above both the model and the codec, so that neither depends on the other.

use std::io::Write;
use std::path::Path;

use crate::model::{Model, ModelError, Result, BINARY_MAGIC, MAX_BINARY_BYTES, MODEL_EXTENSIONS};

impl Model {
    /// Loads a model file, JSON, binary or `.smc` (told apart by the magics): a regular
    /// file, read within its size limit and the memory budget.
    pub fn load(path: &Path) -> Result<Model> {
        let file_err = |message: String| ModelError::File { path: path.display().to_string(), message };
        let bytes = kit::input::read_bounded(path, 8 * MAX_BINARY_BYTES)?;
        let parsed = if bytes.starts_with(crate::codec::MAGIC) {
            crate::codec::decode(&bytes)
        } else if bytes.starts_with(BINARY_MAGIC) {
            if bytes.len() as u64 > MAX_BINARY_BYTES {
                return Err(file_err(format!("longer than a binary model can be ({MAX_BINARY_BYTES} bytes)")));
            }
            Model::read_binary(&bytes)
        } else {
            let text = std::str::from_utf8(&bytes).map_err(|_| {
                file_err("not a SMoE model (neither .smc, the binary format .smoe/.bin, nor UTF-8 JSON)".into())
            })?;
            // Parsing holds the kernels as lists: at most about 8 bytes per byte of text.
            kit::budget::check(bytes.len() as u64 * 8, format!("parsing {}", path.display()))?;
            Model::from_json(text.strip_prefix('\u{feff}').unwrap_or(text))
        };
        // The path says what the message is about: no "model: " after it.
        parsed.map_err(|e| match e {
            ModelError::Input(e) => ModelError::Input(e),
            ModelError::Invalid(message) => file_err(message),
            ModelError::Kernel { index, message } => file_err(format!("kernel {index}: {message}")),
            other => file_err(other.to_string()),
        })
    }

    /// Validates, then saves atomically in the format of the extension: `.json`, the
    /// binary format for `.smoe` and `.bin`, or `.smc` at [`crate::codec::DEFAULT_QUALITY`]
    /// ([`MODEL_EXTENSIONS`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut staged = kit::output::Staged::new();
        self.stage(&mut staged, path)?;
        Ok(staged.commit()?)
    }

    /// Like [`Model::save`], into `staged`: the file lands only when `staged` is committed,
    /// together with the command's other outputs (all or none).
    pub fn stage(&self, staged: &mut kit::output::Staged, path: &Path) -> Result<()> {
        let format = kit::output::format_of(path, MODEL_EXTENSIONS)?;
        self.validate()?;
        if format == "smc" {
            let steps = crate::codec::Steps::scaled(crate::codec::Steps::quality_scale(crate::codec::DEFAULT_QUALITY));
            let bytes = crate::codec::encode_model(self, &steps)?;
            staged.write(path, |w| w.write_all(&bytes))?;
            return Ok(());
        }
        if format != "json" {
            // The binary file holds f32: the reader must accept what rounding makes of it.
            self.rounded_to_f32().validate()?;
        }
        if format == "json" {
            let text = self.to_json()?;
            staged.write(path, |w| w.write_all(text.as_bytes()))?;
        } else {
            staged.write(path, |w| self.write_binary(w))?;
        }
        Ok(())
    }
}
