//! Engine kernel shapes from the tuning file (`kit::tuning`), for the binaries that run
//! engine primitives. The engine reads no file itself: it takes a shape from its caller.
//! Shared by every binary that scans; a candidate for kit (`kit::tuning`) once the apps
//! call the scan directly.

use engine::prims::scan::ScanConfig;
use engine::DeviceInfo;

/// Registry name of the scan, the key of its entry in the tuning file.
pub const SCAN: &str = "engine.scan";

/// The scan's shape `sweep --tune` chose for `info`'s device; the built-in default for a
/// parameter without a tuned value, or with one the kernel does not accept.
pub fn scan_config(info: &DeviceInfo) -> ScanConfig {
    ScanConfig::from_lookup(|key| kit::tuning::param(info, SCAN, key))
}
