//! `backend=` and `device=`, `tessera.devices()`, and the process-wide settings (memory
//! budget, validation message count).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use engine::DeviceSelector;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{run, Error, Result};

/// Where a call runs (`backend="gpu"|"cpu"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Gpu,
    Cpu,
}

impl Backend {
    pub fn parse(text: &str) -> Result<Backend> {
        match text {
            "gpu" => Ok(Backend::Gpu),
            "cpu" => Ok(Backend::Cpu),
            other => Err(Error::invalid(format!("backend must be \"gpu\" or \"cpu\"; got {other:?}"))),
        }
    }
}

/// The selector `device=` names: `None` or "auto" for the default device, an index, a
/// name substring, a comma list or "all" (as `--device`).
pub fn selector(device: Option<&str>) -> Result<DeviceSelector> {
    match device {
        None => Ok(DeviceSelector::Auto),
        Some(text) => Ok(text.parse()?),
    }
}

/// Opens every device `device=` names.
pub fn open_gpus(device: Option<&str>) -> Result<Vec<engine::Context>> {
    Ok(engine::Context::open_each(&selector(device)?)?)
}

/// Opens the one device `device=` names; a selector naming several is refused.
pub fn open_one(device: Option<&str>) -> Result<engine::Context> {
    let selector = selector(device)?;
    let mut contexts = engine::Context::open_each(&selector)?;
    if contexts.len() != 1 {
        return Err(Error::invalid(format!(
            "device={selector} names {} devices; this call runs on one: give one index or name (tessera.devices() lists them)",
            contexts.len()
        )));
    }
    Ok(contexts.remove(0))
}

/// Every Vulkan 1.3 device of this machine: `index`, `name`, `type`, `api_version`,
/// `memory_bytes` (its largest device-local heap) and `subgroup_size`, as `gpu-info` lists
/// them.
#[pyfunction]
pub fn devices<'py>(py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let infos = run(py, || Ok(engine::context::describe_all()?))?;
    infos
        .into_iter()
        .map(|info| {
            let d = PyDict::new(py);
            d.set_item("index", info.index)?;
            d.set_item("name", &info.name)?;
            d.set_item("type", &info.device_type)?;
            d.set_item("api_version", &info.api_version)?;
            let memory = info.memory_heaps.iter().filter(|h| h.device_local).map(|h| h.bytes).max().unwrap_or(0);
            d.set_item("memory_bytes", memory)?;
            d.set_item("subgroup_size", info.subgroup_size)?;
            Ok(d)
        })
        .collect()
}

/// Sets the memory budget every input is checked against (bytes; the default is half of
/// physical memory), as `--max-memory` does.
#[pyfunction]
pub fn set_memory_budget(bytes: u64) -> PyResult<()> {
    if bytes == 0 {
        return Err(Error::invalid("the memory budget must be at least one byte").into());
    }
    kit::budget::set(bytes);
    Ok(())
}

/// The memory budget in bytes.
#[pyfunction]
pub fn memory_budget() -> u64 {
    kit::budget::get()
}

/// How many Vulkan validation messages this process has seen (tests assert none).
#[pyfunction]
pub fn validation_messages() -> usize {
    engine::context::validation_message_count()
}

/// The one device `device=` names, opened once per process and shared by later calls.
pub fn shared_context(device: Option<&str>) -> Result<engine::Context> {
    static OPEN: OnceLock<Mutex<HashMap<String, engine::Context>>> = OnceLock::new();
    let key = device.unwrap_or("auto").to_string();
    let open = OPEN.get_or_init(Default::default);
    if let Some(ctx) = open.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(ctx.clone());
    }
    let ctx = open_one(device)?;
    open.lock().unwrap_or_else(|e| e.into_inner()).insert(key, ctx.clone());
    Ok(ctx)
}
