//! Theoretical occupancy, as NVIDIA's CUDA Occupancy Calculator computes it: how many
//! workgroups fit on one multiprocessor at once, limited by its registers, its shared
//! memory, its threads and its workgroup slots, and the fraction of its warp slots they fill.
//!
//! Vulkan reports none of the per-multiprocessor limits, so they come from a preset picked
//! by the device's vendor id ([`Limits::for_device`]); the device's own per-workgroup
//! limits (shared memory, subgroup size) replace the preset's where Vulkan has them.

use serde::Serialize;

/// What one multiprocessor (NVIDIA SM, AMD CU, lavapipe: one CPU thread) holds at once.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Limits {
    /// The preset's name, shown with every result.
    pub preset: &'static str,
    /// Threads per warp (NVIDIA) or wave (AMD).
    pub warp: u32,
    /// 32-bit registers per multiprocessor; `None` where registers do not limit residency.
    pub registers: Option<u32>,
    /// Registers are allocated per warp in units of this many.
    pub register_unit: u32,
    /// Warps are allocated registers in groups of this many (the scheduler partitions).
    pub warp_groups: u32,
    /// Most registers one thread may have.
    pub max_registers_per_thread: u32,
    pub max_threads: u32,
    pub max_workgroups: u32,
    /// Shared memory per multiprocessor, bytes.
    pub shared: u32,
    /// Most shared memory one workgroup may have (Vulkan's maxComputeSharedMemorySize).
    pub shared_per_workgroup: u32,
    /// Shared memory is allocated in units of this many bytes.
    pub shared_unit: u32,
    /// Shared memory the system reserves per workgroup (1 KiB on NVIDIA sm_80 and later).
    pub shared_reserved: u32,
}

impl Limits {
    /// An NVIDIA Hopper SM (H100, H200): 65536 registers allocated 256 per warp over four
    /// partitions, 2048 threads, 32 blocks, 228 KiB of shared memory of which Vulkan gives a
    /// workgroup 48 KiB, 1 KiB reserved per block.
    pub const NVIDIA: Limits = Limits {
        preset: "NVIDIA-like (Hopper SM)",
        warp: 32,
        registers: Some(65536),
        register_unit: 256,
        warp_groups: 4,
        max_registers_per_thread: 255,
        max_threads: 2048,
        max_workgroups: 32,
        shared: 228 * 1024,
        shared_per_workgroup: 48 * 1024,
        shared_unit: 128,
        shared_reserved: 1024,
    };

    /// An AMD GCN/CDNA compute unit: four SIMDs of 256 VGPRs per lane on 64-wide waves
    /// (65536 registers, allocated 4 per lane = 256 per wave), 10 waves per SIMD, 64 KiB of
    /// LDS allocated in 512-byte units.
    pub const AMD: Limits = Limits {
        preset: "AMD-like (GCN/CDNA CU)",
        warp: 64,
        registers: Some(65536),
        register_unit: 256,
        warp_groups: 4,
        max_registers_per_thread: 256,
        max_threads: 2560,
        max_workgroups: 40,
        shared: 64 * 1024,
        shared_per_workgroup: 64 * 1024,
        shared_unit: 512,
        shared_reserved: 0,
    };

    /// lavapipe (llvmpipe): each CPU thread runs one workgroup at a time, its invocations
    /// as SIMD lanes; registers are the CPU's and spill to the stack, so they never limit.
    pub const LAVAPIPE: Limits = Limits {
        preset: "lavapipe-like (one workgroup per CPU thread)",
        warp: 8,
        registers: None,
        register_unit: 1,
        warp_groups: 1,
        max_registers_per_thread: u32::MAX,
        max_threads: 1024,
        max_workgroups: 1,
        shared: 32 * 1024,
        shared_per_workgroup: 32 * 1024,
        shared_unit: 1,
        shared_reserved: 0,
    };

    /// The preset for a device, by PCI vendor id (NVIDIA 0x10de, AMD 0x1002, Mesa's
    /// software devices 0x10005; others get the NVIDIA model), with the device's own
    /// subgroup size and per-workgroup shared memory.
    pub fn for_device(info: &engine::DeviceInfo) -> Limits {
        let mut limits = match info.vendor_id {
            0x1002 => Limits::AMD,
            0x10005 => Limits::LAVAPIPE,
            _ => Limits::NVIDIA,
        };
        if info.subgroup_size > 0 {
            limits.warp = info.subgroup_size;
        }
        if info.max_shared_memory_bytes > 0 {
            limits.shared_per_workgroup = info.max_shared_memory_bytes.min(limits.shared);
        }
        if info.vendor_id == 0x10005 {
            limits.shared = limits.shared_per_workgroup;
            limits.max_threads = info.max_workgroup_invocations;
        }
        limits
    }

    fn max_warps(&self) -> u32 {
        self.max_threads / self.warp
    }
}

/// What a kernel needs per workgroup.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Usage {
    pub threads: u32,
    /// Registers per thread; `None` when the driver does not say (registers are then not a
    /// limit in the model).
    pub registers: Option<u32>,
    /// Shared memory per workgroup, bytes.
    pub shared: u32,
}

/// What limited the number of resident workgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Registers,
    SharedMemory,
    Threads,
    Workgroups,
}

impl Limiter {
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared_memory",
            Limiter::Threads => "threads",
            Limiter::Workgroups => "workgroups",
        }
    }
}

/// The calculator's answer for one kernel shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Occupancy {
    /// Resident workgroups per multiprocessor.
    pub workgroups: u32,
    /// Resident warps over the multiprocessor's warp slots, 0 to 1.
    pub occupancy: f64,
    /// Every limit that allows exactly `workgroups` (ties are all named).
    pub limited_by: Vec<Limiter>,
}

impl Occupancy {
    /// The limiting factors joined by `+` (`registers+threads`).
    pub fn limiter_names(&self) -> String {
        self.limited_by.iter().map(|l| l.name()).collect::<Vec<_>>().join("+")
    }
}

fn round_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit.max(1)) * unit.max(1)
}

/// Resident workgroups and occupancy of `usage` on `limits`; an error says why a workgroup
/// of this shape cannot run at all.
pub fn occupancy(limits: &Limits, usage: Usage) -> Result<Occupancy, String> {
    if usage.threads == 0 || usage.threads > limits.max_threads {
        return Err(format!("{} threads per workgroup: the model allows 1 to {}", usage.threads, limits.max_threads));
    }
    if usage.shared > limits.shared_per_workgroup {
        return Err(format!(
            "{} bytes of shared memory per workgroup: at most {}",
            usage.shared, limits.shared_per_workgroup
        ));
    }
    let warps = usage.threads.div_ceil(limits.warp);
    let by_threads = limits.max_warps() / warps;
    let by_workgroups = limits.max_workgroups;
    let by_shared = {
        let need = round_up(u64::from(usage.shared) + u64::from(limits.shared_reserved), limits.shared_unit.into());
        u64::from(limits.shared).checked_div(need).map_or(u32::MAX, |n| n.min(u32::MAX as u64) as u32)
    };
    let by_registers = match (limits.registers, usage.registers) {
        (Some(file), Some(regs)) if regs > 0 => {
            if regs > limits.max_registers_per_thread {
                return Err(format!("{regs} registers per thread: at most {}", limits.max_registers_per_thread));
            }
            let per_warp = round_up(u64::from(regs) * u64::from(limits.warp), limits.register_unit.into());
            let warps_fit = u64::from(file) / per_warp;
            let warps_fit = warps_fit / u64::from(limits.warp_groups) * u64::from(limits.warp_groups);
            (warps_fit / u64::from(warps)) as u32
        }
        _ => u32::MAX,
    };
    let limits_by = [
        (Limiter::Registers, by_registers),
        (Limiter::SharedMemory, by_shared),
        (Limiter::Threads, by_threads),
        (Limiter::Workgroups, by_workgroups),
    ];
    let workgroups = limits_by.iter().map(|&(_, n)| n).min().unwrap_or(0);
    let limited_by = limits_by.iter().filter(|&&(_, n)| n == workgroups).map(|&(l, _)| l).collect();
    Ok(Occupancy { workgroups, occupancy: f64::from(workgroups * warps) / f64::from(limits.max_warps()), limited_by })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(limits: &Limits, threads: u32, registers: Option<u32>, shared: u32) -> (u32, f64, String) {
        let o = occupancy(limits, Usage { threads, registers, shared }).unwrap();
        let names = o.limiter_names();
        (o.workgroups, o.occupancy, names)
    }

    #[test]
    fn nvidia_cases_match_the_cuda_calculator() {
        let l = &Limits::NVIDIA;
        // 256 threads, 32 registers, no shared memory: 8 blocks fill 64 warps; registers
        // (65536 / 1024 per warp = 64 warps) and threads both allow exactly 8.
        assert_eq!(occ(l, 256, Some(32), 0), (8, 1.0, "registers+threads".into()));
        // 64 registers: 2048 per warp, 32 warps, 4 blocks of 8 warps: 50%.
        assert_eq!(occ(l, 256, Some(64), 0), (4, 0.5, "registers".into()));
        // 40 registers: 1280 per warp, 51 warps rounded down to 48 (four partitions), 6 blocks.
        assert_eq!(occ(l, 256, Some(40), 0), (6, 0.75, "registers".into()));
        // 37 registers round up to 1280 per warp as well (allocation unit 256).
        assert_eq!(occ(l, 256, Some(37), 0).0, 6);
        // 32 threads per block: the 32-block limit, 32 of 64 warps.
        assert_eq!(occ(l, 32, Some(16), 0), (32, 0.5, "workgroups".into()));
        // 48 KiB of shared memory (+1 KiB reserved) per block: 233472 / 50176 = 4 blocks.
        assert_eq!(occ(l, 128, Some(32), 48 * 1024), (4, 0.25, "shared_memory".into()));
        // The paper's 16x8 workgroups at 50%, limited by registers (64 per thread).
        assert_eq!(occ(l, 128, Some(64), 1024), (8, 0.5, "registers".into()));
        // Unknown registers: only threads, shared memory and blocks limit.
        assert_eq!(occ(l, 1024, None, 0), (2, 1.0, "threads".into()));
        assert!(occupancy(l, Usage { threads: 256, registers: Some(300), shared: 0 }).is_err());
        assert!(occupancy(l, Usage { threads: 256, registers: None, shared: 49 * 1024 }).is_err());
        assert!(occupancy(l, Usage { threads: 4096, registers: None, shared: 0 }).is_err());
    }

    #[test]
    fn amd_cases_count_waves_per_simd() {
        let l = &Limits::AMD;
        // 64 VGPRs: 4 waves per SIMD, 16 per CU; 256-thread workgroups are 4 waves: 4 of them.
        assert_eq!(occ(l, 256, Some(64), 0), (4, 0.4, "registers".into()));
        // 24 VGPRs: 10 waves per SIMD by registers (42 rounded to 40), the wave limit too.
        assert_eq!(occ(l, 64, Some(24), 0), (40, 1.0, "registers+threads+workgroups".into()));
        // 32 KiB of LDS per workgroup: two per CU.
        assert_eq!(occ(l, 256, Some(32), 32 * 1024), (2, 0.2, "shared_memory".into()));
    }

    #[test]
    fn lavapipe_runs_one_workgroup_per_thread() {
        let l = &Limits::LAVAPIPE;
        assert_eq!(occ(l, 256, None, 4096), (1, 0.25, "workgroups".into()));
        assert_eq!(occ(l, 1024, Some(500), 0), (1, 1.0, "threads+workgroups".into()));
    }
}
