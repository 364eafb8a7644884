//! One point of a sweep, measured: the kernel's median GPU time, its fraction of the floor,
//! its check, and the shape the occupancy model needs (threads, registers and spills from
//! the driver where VK_KHR_pipeline_executable_properties reports them, shared memory from
//! the driver or else from the SPIR-V).

use std::collections::HashMap;

use engine::Context;
use kit::stats::median;
use serde::Serialize;

use crate::occupancy::{self, Limits, Usage};
use crate::registry::{Config, Entry, Floor, Reps, Shader};
use engine::reflect::{self, Reflection};

/// The device's ceilings a floor is measured against, measured once per sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Ceilings {
    pub copy_gb_per_s: f64,
    /// Measured only when a kernel's floor is in FLOPs.
    pub fma_tflop_per_s: Option<f64>,
}

/// A device opened for sweeping, with its ceilings and its occupancy limits.
pub struct Device {
    pub ctx: Context,
    pub limits: Limits,
    pub ceilings: Ceilings,
    /// Shapes already compiled for statistics, by (SPIR-V address, spec).
    shapes: HashMap<(usize, Vec<u32>), Shape>,
}

impl Device {
    /// Measures the copy bandwidth ([`engine::ceilings::copy_gb_per_s`]).
    pub fn new(ctx: Context) -> engine::Result<Device> {
        let limits = Limits::for_device(ctx.info());
        let ceilings = Ceilings { copy_gb_per_s: engine::ceilings::copy_gb_per_s(&ctx)?, fma_tflop_per_s: None };
        Ok(Device { ctx, limits, ceilings, shapes: HashMap::new() })
    }

    fn fma_tflop_per_s(&mut self) -> engine::Result<f64> {
        if let Some(t) = self.ceilings.fma_tflop_per_s {
            return Ok(t);
        }
        let (bytes, iterations) = if engine::ceilings::is_cpu(&self.ctx) { (1 << 20, 1) } else { (64 << 20, 4096) };
        let t = engine::ceilings::measure(&self.ctx, bytes, iterations)?.fma_tflop_per_s;
        self.ceilings.fma_tflop_per_s = Some(t);
        Ok(t)
    }

    /// The floor's time in ms.
    fn floor_ms(&mut self, floor: Floor) -> engine::Result<f64> {
        Ok(match floor {
            Floor::Bytes(b) => b as f64 / (self.ceilings.copy_gb_per_s * 1e9) * 1e3,
            Floor::Flops(f) => f as f64 / (self.fma_tflop_per_s()? * 1e12) * 1e3,
        })
    }

    /// The shape of `shader`: reflected, then compiled once more for the driver's statistics.
    fn shape(&mut self, shader: &Shader) -> engine::Result<Shape> {
        let key = (shader.spirv.as_ptr() as usize, shader.spec.clone());
        if let Some(s) = self.shapes.get(&key) {
            return Ok(s.clone());
        }
        let refl = reflect::reflect(shader.spirv, &shader.spec).map_err(engine::EngineError::InvalidInput)?;
        let stats = self.ctx.compute_pipeline_statistics(
            "sweep statistics",
            shader.spirv,
            (refl.binding_count(), refl.push_bytes),
            &shader.spec,
        )?;
        let shape = Shape::from_statistics(&refl, &stats);
        self.shapes.insert(key, shape.clone());
        Ok(shape)
    }
}

/// What occupancy depends on, with where each number came from.
#[derive(Clone, Debug, Serialize)]
pub struct Shape {
    pub threads: u32,
    pub registers: Option<u32>,
    pub spills: Option<u64>,
    pub shared_bytes: u32,
    /// `driver` or `spirv`.
    pub shared_source: &'static str,
    /// Every statistic the driver reported, `name=value`.
    pub statistics: Vec<String>,
}

/// The values of the statistics whose lower-case name passes `test`.
fn stat(stats: &[(String, String)], test: impl Fn(&str) -> bool) -> Vec<u64> {
    stats.iter().filter(|(n, _)| test(&n.to_lowercase())).filter_map(|(_, v)| v.parse::<u64>().ok()).collect()
}

impl Shape {
    /// Registers are the statistic named like "Register Count" (NVIDIA) or "VGPRs" (AMD);
    /// spills sum those named "spill", "local memory" or "stack size" (bytes or registers,
    /// as the driver counts them); shared memory is named "shared memory" or "LDS" where a
    /// driver reports it.
    fn from_statistics(refl: &Reflection, stats: &[(String, String)]) -> Shape {
        let registers =
            stat(stats, |n| n == "vgprs" || (n.contains("register") && !n.contains("spill"))).first().copied();
        // NVIDIA reports "Local Memory Size" as 2^36 when unset; values that large are not sizes.
        let spill_values: Vec<u64> =
            stat(stats, |n| n.contains("spill") || n.contains("local memory") || n == "stack size")
                .into_iter()
                .filter(|&v| v < 1 << 32)
                .collect();
        let shared = stat(stats, |n| n.contains("shared memory") || n.starts_with("lds")).first().copied();
        Shape {
            threads: refl.threads(),
            registers: registers.map(|r| r as u32),
            spills: (!spill_values.is_empty()).then(|| spill_values.iter().sum()),
            shared_bytes: shared.map_or(refl.shared_bytes, |s| s as u32),
            shared_source: if shared.is_some() { "driver" } else { "spirv" },
            statistics: stats.iter().map(|(n, v)| format!("{n}={v}")).collect(),
        }
    }

    pub fn usage(&self) -> Usage {
        Usage { threads: self.threads, registers: self.registers, shared: self.shared_bytes }
    }
}

/// One measured point.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub kernel: &'static str,
    pub params: Config,
    pub size: u64,
    pub unit: &'static str,
    pub median_ms: f64,
    pub min_ms: f64,
    pub repeats: usize,
    /// `bytes` or `flops`.
    pub floor: &'static str,
    pub floor_amount: u64,
    pub floor_ms: f64,
    /// Floor time over median time: 1 is the device's ceiling.
    pub floor_fraction: f64,
    pub check_passed: bool,
    pub max_error: f64,
    pub tolerance: f64,
    pub shape: Option<Shape>,
    pub workgroups_per_sm: Option<u32>,
    pub occupancy: Option<f64>,
    /// The limiting factors (`registers+threads`), or why the model cannot place it.
    pub limited_by: String,
    pub limits: &'static str,
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let regs = self.shape.as_ref().and_then(|s| s.registers).map_or("unknown".into(), |r| r.to_string());
        let occ = self.occupancy.map_or("unknown".into(), |o| format!("{:.0}%", 100.0 * o));
        write!(
            f,
            "{} {} {} {}: {:.4} ms, {:.0}% of floor, {}, regs {regs}, occupancy {occ} ({})",
            self.kernel,
            self.params.label(),
            self.size,
            self.unit,
            self.median_ms,
            100.0 * self.floor_fraction,
            if self.check_passed { "checked" } else { "CHECK FAILED" },
            self.limited_by
        )
    }
}

/// Runs `entry`'s kernel at one point and measures everything a sweep reports.
pub fn point(device: &mut Device, entry: &Entry, config: &Config, size: u64, reps: Reps) -> engine::Result<Point> {
    let m = entry.kernel.run(&device.ctx, config, size, reps)?;
    let median_ms = median(&m.times_ms);
    let (floor, floor_amount) = match m.floor {
        Floor::Bytes(b) => ("bytes", b),
        Floor::Flops(f) => ("flops", f),
    };
    let floor_ms = device.floor_ms(m.floor)?;
    let shape = match &m.shader {
        Some(s) => Some(device.shape(s)?),
        None => None,
    };
    let occ = shape.as_ref().map(|s| occupancy::occupancy(&device.limits, s.usage()));
    let (workgroups_per_sm, occupancy, limited_by) = match occ {
        Some(Ok(o)) => (Some(o.workgroups), Some(o.occupancy), o.limiter_names()),
        Some(Err(why)) => (None, None, format!("cannot run: {why}")),
        None => (None, None, "unknown".into()),
    };
    Ok(Point {
        kernel: entry.name,
        params: config.clone(),
        size,
        unit: entry.kernel.sizes().unit,
        median_ms,
        min_ms: m.times_ms.iter().copied().fold(f64::INFINITY, f64::min),
        repeats: m.times_ms.len(),
        floor,
        floor_amount,
        floor_ms,
        floor_fraction: if median_ms > 0.0 { floor_ms / median_ms } else { 0.0 },
        check_passed: m.check.passed,
        max_error: m.check.max_error,
        tolerance: m.check.tolerance,
        shape,
        workgroups_per_sm,
        occupancy,
        limited_by,
        limits: device.limits.preset,
    })
}

/// Every point of the grid `values` (one list per parameter, in the kernel's order).
pub fn grid(keys: &[&'static str], values: &[Vec<u32>]) -> Vec<Config> {
    let mut out = vec![Config(Vec::new())];
    for (key, vals) in keys.iter().zip(values) {
        out = out
            .into_iter()
            .flat_map(|c| {
                vals.iter().map(move |&v| {
                    let mut next = c.0.clone();
                    next.push((*key, v));
                    Config(next)
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_statistics_give_registers_shared_memory_and_spills() {
        let refl = Reflection {
            workgroup: [256, 1, 1],
            workgroup_spec: [Some(0), None, None],
            shared_bytes: 1000,
            bindings: Vec::new(),
            push_bytes: 64,
            spec_constants: Vec::new(),
        };
        let stats: Vec<(String, String)> = [
            ("Register Count", "43"),
            ("Binary Size", "6144"),
            ("Stack Size", "0"),
            ("Local Memory Size", "68719476736"),
            ("Shared Memory Size", "8192"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        let s = Shape::from_statistics(&refl, &stats);
        assert_eq!(
            (s.threads, s.registers, s.spills, s.shared_bytes, s.shared_source),
            (256, Some(43), Some(0), 8192, "driver")
        );
        let none = Shape::from_statistics(&refl, &[]);
        assert_eq!((none.registers, none.spills, none.shared_bytes, none.shared_source), (None, None, 1000, "spirv"));
    }

    #[test]
    fn grid_is_the_cartesian_product_in_order() {
        let g = grid(&["a", "b"], &[vec![1, 2], vec![7, 8, 9]]);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0].label(), "a=1 b=7");
        assert_eq!(g[5].label(), "a=2 b=9");
        assert_eq!(grid(&[], &[]), vec![Config(Vec::new())]);
    }
}
