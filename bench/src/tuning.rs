//! The tuning file `sweep --tune` writes and the apps read at start: for each device (by
//! name and driver version), each kernel's fastest checked parameters at the sizes users
//! run. A kernel or device not in the file keeps its built-in defaults.
//!
//! Location: `$TESSERA_TUNING` if set, else `$XDG_CONFIG_HOME/tessera/tuning.json`, else
//! `~/.config/tessera/tuning.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Bytes the reader accepts; a tuning file is a few KiB.
const MAX_BYTES: u64 = 4 << 20;

/// The file's content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TuningFile {
    pub version: u32,
    pub devices: Vec<DeviceTuning>,
}

/// One device's tuning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceTuning {
    pub device: String,
    pub driver_version: u32,
    pub kernels: BTreeMap<String, KernelTuning>,
}

/// One kernel's chosen parameters and the evidence for them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelTuning {
    pub params: BTreeMap<String, u32>,
    pub sizes: Vec<u64>,
    /// Median GPU ms per size with the chosen parameters.
    pub tuned_ms: Vec<f64>,
    /// Median GPU ms per size with the built-in defaults.
    pub default_ms: Vec<f64>,
}

const VERSION: u32 = 1;

/// Where the tuning file lives (see the module's documentation).
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_TUNING") {
        return Some(PathBuf::from(p));
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME") {
        Some(x) if !x.is_empty() => PathBuf::from(x),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".config"),
    };
    Some(config.join("tessera").join("tuning.json"))
}

/// Reads a tuning file; a missing file is an empty one.
pub fn read(path: &Path) -> anyhow::Result<TuningFile> {
    if !path.exists() {
        return Ok(TuningFile { version: VERSION, devices: Vec::new() });
    }
    let text = kit::input::read_text(path, MAX_BYTES)?;
    let file: TuningFile = serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if file.version != VERSION {
        anyhow::bail!("{}: tuning file version {}, this build reads {VERSION}", path.display(), file.version);
    }
    Ok(file)
}

impl TuningFile {
    /// The tuning of the device named `device` with `driver_version`, if any.
    pub fn device(&self, device: &str, driver_version: u32) -> Option<&DeviceTuning> {
        self.devices.iter().find(|d| d.device == device && d.driver_version == driver_version)
    }

    /// Sets (replaces) `kernel`'s tuning on a device.
    pub fn set(&mut self, device: &str, driver_version: u32, kernel: &str, tuning: KernelTuning) {
        self.version = VERSION;
        let index = match self.devices.iter().position(|d| d.device == device && d.driver_version == driver_version) {
            Some(i) => i,
            None => {
                self.devices.push(DeviceTuning { device: device.into(), driver_version, kernels: BTreeMap::new() });
                self.devices.len() - 1
            }
        };
        self.devices[index].kernels.insert(kernel.into(), tuning);
    }
}

/// The tuned parameters of `kernel` on `info`'s device from the user's tuning file, or
/// `None` (no file, no entry, or a file that cannot be read: defaults then apply).
pub fn lookup(info: &engine::DeviceInfo, kernel: &str) -> Option<BTreeMap<String, u32>> {
    let file = read(&path()?).ok()?;
    Some(file.device(&info.name, info.driver_version)?.kernels.get(kernel)?.params.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_keyed_by_device_and_driver_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t/tuning.json");
        assert_eq!(read(&p).unwrap().devices.len(), 0);
        let mut file = read(&p).unwrap();
        let t = |wg| KernelTuning {
            params: [("workgroup".to_string(), wg)].into(),
            sizes: vec![1 << 20],
            tuned_ms: vec![1.0],
            default_ms: vec![1.5],
        };
        file.set("GPU A", 7, "engine.scan", t(512));
        file.set("GPU A", 8, "engine.scan", t(256));
        file.set("GPU A", 7, "engine.scan", t(1024));
        assert_eq!(file.devices.len(), 2);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        kit::output::write_json(&p, &file).unwrap();
        let back = read(&p).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.device("GPU A", 7).unwrap().kernels["engine.scan"].params["workgroup"], 1024);
        assert!(back.device("GPU A", 9).is_none());
        std::fs::write(&p, b"{\"version\": 99, \"devices\": []}").unwrap();
        assert!(read(&p).is_err());
    }
}
