//! The tuning file `sweep --tune` writes and the apps read at start: for each device (by
//! name and driver version), each kernel's fastest checked parameters at the sizes users
//! run. A kernel or device not in the file keeps its built-in defaults.
//!
//! Location: `$TESSERA_TUNING` if set, else `$XDG_CONFIG_HOME/tessera/tuning.json`, else
//! `~/.config/tessera/tuning.json`.
//!
//! The apps trust no byte of it: the read is bounded, every entry is checked (lengths,
//! finite times, the parameters the apps read against the values [`READ`] lists), and a
//! file that fails any check is a warning on stderr; the built-in defaults then apply.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{KitError, Result};

/// Bytes the reader accepts; a tuning file is a few KiB.
const MAX_BYTES: u64 = 1 << 20;

/// Largest parameter value in any entry (a workgroup of 65536 invocations is past every device).
const MAX_VALUE: u32 = 1 << 16;

const VERSION: u32 = 1;

/// The file's content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningFile {
    pub version: u32,
    pub devices: Vec<DeviceTuning>,
}

/// One device's tuning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceTuning {
    pub device: String,
    pub driver_version: u32,
    pub kernels: BTreeMap<String, KernelTuning>,
}

/// One kernel's chosen parameters and the evidence for them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelTuning {
    pub params: BTreeMap<String, u32>,
    pub sizes: Vec<u64>,
    /// Median GPU ms per size with the chosen parameters.
    pub tuned_ms: Vec<f64>,
    /// Median GPU ms per size with the built-in defaults (empty when they did not run).
    pub default_ms: Vec<f64>,
}

/// A tuned parameter an app reads, with every value it accepts (the sweep's grid for it).
pub struct Knob {
    pub kernel: &'static str,
    pub key: &'static str,
    pub values: &'static [u32],
}

/// The parameters the apps read from the file. The sweep's registry takes its grids for
/// these kernels from here, so the file never holds a value an app refuses.
pub const READ: [Knob; 5] = [
    Knob { kernel: "smoe.render", key: "block", values: &[4, 8, 16, 32, 64] },
    Knob { kernel: "lightfield.encode", key: "workgroup", values: &[64, 128, 256, 512, 1024] },
    Knob { kernel: "lightfield.decode", key: "workgroup", values: &[64, 128, 256, 512, 1024] },
    // The binaries that scan (prims-bench, through `tessera_bench::tuned`) hand these to
    // `engine::prims::scan::ScanConfig`.
    Knob { kernel: "engine.scan", key: "workgroup", values: engine::prims::scan::WORKGROUP_SIZES },
    Knob { kernel: "engine.scan", key: "items", values: engine::prims::scan::ITEMS_PER_INVOCATION },
];

/// The values `kernel`'s `key` accepts, for the parameters the apps read.
pub fn accepted(kernel: &str, key: &str) -> Option<&'static [u32]> {
    READ.iter().find(|k| k.kernel == kernel && k.key == key).map(|k| k.values)
}

/// Where the tuning file lives (see the module's documentation); `None` without
/// `$TESSERA_TUNING`, `$XDG_CONFIG_HOME` or `$HOME`.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_TUNING").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME") {
        Some(x) if !x.is_empty() => PathBuf::from(x),
        _ => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?).join(".config"),
    };
    Some(config.join("tessera").join("tuning.json"))
}

/// Reads and checks a tuning file; a missing file is an empty one. Any failed check is an
/// error (the writer, `sweep --tune`, refuses to overwrite a file it cannot read).
pub fn read(path: &Path) -> Result<TuningFile> {
    if !path.exists() {
        return Ok(TuningFile { version: VERSION, devices: Vec::new() });
    }
    let text = crate::input::read_text(path, MAX_BYTES)?;
    let file: TuningFile = serde_json::from_str(&text).map_err(|e| KitError::file(path, e))?;
    file.check().map_err(|e| KitError::file(path, e))?;
    Ok(file)
}

impl TuningFile {
    fn check(&self) -> std::result::Result<(), String> {
        if self.version != VERSION {
            return Err(format!("tuning file version {}, this build reads {VERSION}", self.version));
        }
        for (i, d) in self.devices.iter().enumerate() {
            let same = |e: &DeviceTuning| e.device == d.device && e.driver_version == d.driver_version;
            if self.devices[..i].iter().any(same) {
                return Err(format!("device {:?} driver {} is listed twice", d.device, d.driver_version));
            }
            for (name, k) in &d.kernels {
                let at = format!("{} on {:?}", name, d.device);
                if k.tuned_ms.len() != k.sizes.len()
                    || !(k.default_ms.is_empty() || k.default_ms.len() == k.sizes.len())
                {
                    return Err(format!(
                        "{at}: {} sizes but {} tuned and {} default times",
                        k.sizes.len(),
                        k.tuned_ms.len(),
                        k.default_ms.len()
                    ));
                }
                if let Some(t) = k.tuned_ms.iter().chain(&k.default_ms).find(|t| !(t.is_finite() && **t >= 0.0)) {
                    return Err(format!("{at}: time {t} ms is not a finite non-negative number"));
                }
                for (key, &value) in &k.params {
                    let ok = match accepted(name, key) {
                        Some(values) => values.contains(&value),
                        None => (1..=MAX_VALUE).contains(&value),
                    };
                    if !ok {
                        return Err(format!("{at}: {key}={value} is not a value this kernel accepts"));
                    }
                }
            }
        }
        Ok(())
    }

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

/// The tuning in effect for this process: the file's path and its content, read once.
pub struct InEffect {
    pub path: Option<PathBuf>,
    /// Empty when there is no file or it failed a check.
    pub file: TuningFile,
}

/// The user's tuning file, read once per process. A file that cannot be read or fails a
/// check is a warning on stderr (once) and counts as empty: the built-in defaults apply.
pub fn in_effect() -> &'static InEffect {
    static LOADED: OnceLock<InEffect> = OnceLock::new();
    LOADED.get_or_init(|| {
        let path = path();
        let file = match path.as_deref().map(read) {
            Some(Ok(file)) => file,
            Some(Err(e)) => {
                eprintln!("{}: warning: {e}; the built-in defaults apply", crate::report::binary());
                TuningFile::default()
            }
            None => TuningFile::default(),
        };
        InEffect { path, file }
    })
}

/// The tuned parameters of every kernel on `info`'s device (empty: built-in defaults).
pub fn kernels(info: &engine::DeviceInfo) -> BTreeMap<String, BTreeMap<String, u32>> {
    let file = &in_effect().file;
    let tuned = file.device(&info.name, info.driver_version).map(|d| &d.kernels);
    tuned.into_iter().flatten().map(|(name, k)| (name.clone(), k.params.clone())).collect()
}

/// The tuned value of `kernel`'s `key` on `info`'s device, or `None` (no file, no entry,
/// or a file that failed a check): the caller's built-in default then applies.
pub fn param(info: &engine::DeviceInfo, kernel: &str, key: &str) -> Option<u32> {
    let device = in_effect().file.device(&info.name, info.driver_version)?;
    device.kernels.get(kernel)?.params.get(key).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, value: u32) -> KernelTuning {
        KernelTuning {
            params: [(key.to_string(), value)].into(),
            sizes: vec![1 << 20],
            tuned_ms: vec![1.0],
            default_ms: vec![1.5],
        }
    }

    #[test]
    fn entries_are_keyed_by_device_and_driver_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t/tuning.json");
        let mut file = read(&p).unwrap();
        assert_eq!(file.devices.len(), 0);
        file.set("GPU A", 7, "engine.scan", entry("workgroup", 512));
        file.set("GPU A", 8, "engine.scan", entry("workgroup", 256));
        file.set("GPU A", 7, "engine.scan", entry("workgroup", 1024));
        file.set("GPU A", 7, "smoe.render", entry("block", 8));
        assert_eq!(file.devices.len(), 2);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        crate::output::write_json(&p, &file).unwrap();
        let back = read(&p).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.device("GPU A", 7).unwrap().kernels["engine.scan"].params["workgroup"], 1024);
        assert!(back.device("GPU A", 9).is_none());
    }

    #[test]
    fn every_failed_check_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tuning.json");
        let valid = |kernel: &str, key: &str, value: u32| {
            let mut f = TuningFile::default();
            f.set("GPU", 1, kernel, entry(key, value));
            f
        };
        let mut two_sizes = valid("engine.scan", "workgroup", 256);
        two_sizes.devices[0].kernels.get_mut("engine.scan").unwrap().sizes.push(4);
        let mut nan = valid("engine.scan", "workgroup", 256);
        nan.devices[0].kernels.get_mut("engine.scan").unwrap().tuned_ms[0] = -1.0;
        let mut twice = valid("engine.scan", "workgroup", 256);
        twice.devices.push(twice.devices[0].clone());
        for bad in [
            valid("smoe.render", "block", 12),
            valid("lightfield.encode", "workgroup", 100),
            valid("engine.scan", "workgroup", 0),
            two_sizes,
            nan,
            twice,
        ] {
            crate::output::write_json(&p, &bad).unwrap();
            assert!(read(&p).is_err(), "{bad:?}");
        }
        for text in [
            "{\"version\": 99, \"devices\": []}",
            "{\"version\": 1}",
            "[]",
            "{\"version\": 1, \"devices\": [], \"x\": 1}",
        ] {
            std::fs::write(&p, text).unwrap();
            assert!(read(&p).is_err(), "{text}");
        }
        assert!(read(dir.path()).is_err(), "a folder");
        crate::output::write_json(&p, &valid("smoe.render", "block", 64)).unwrap();
        assert!(read(&p).is_ok());
    }
}
