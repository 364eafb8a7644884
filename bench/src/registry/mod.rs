//! Every kernel `sweep` can run, across the engine and the five apps: [`ALL`] lists each
//! by name (`engine.scan`, `smoe.render`, ...) with what it computes, and its [`Kernel`]
//! impl, in the module of its app, states its tunable parameters (the specialization
//! constants, or the launch shape they follow) with their allowed values, builds a
//! deterministic input at a given problem size, states its floor (bytes it must move or
//! FLOPs it must do), and checks its output against the CPU reference at every point.

use engine::{Context, Result};

/// Defines `to_engine`, an app's error as the engine error a point reports: the engine's own
/// error (the app error's `Engine` variant) as it is, any other as `EngineError::$other` of
/// its message: `Unsupported` where the app words device limits in its own errors (the point
/// is skipped), `InvalidInput` where its errors mean the point failed.
macro_rules! to_engine_for {
    ($($app:ident)::+, $other:ident) => {
        fn to_engine(e: $($app)::+) -> engine::EngineError {
            match e {
                $($app)::+::Engine(e) => e,
                other => engine::EngineError::$other(other.to_string()),
            }
        }
    };
}

pub mod composite;
pub mod engine_kernels;
pub mod lightfield;
pub mod mad;
pub mod mosaic;
pub mod smoe;

/// One tunable parameter of a kernel.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Param {
    pub key: &'static str,
    /// Every value the kernel accepts (a device may rule out some, e.g. large workgroups).
    pub values: Vec<u32>,
    /// The value the kernel's own code uses when nothing is tuned.
    pub default: u32,
    pub about: &'static str,
}

impl Param {
    pub fn new(key: &'static str, values: &[u32], default: u32, about: &'static str) -> Param {
        Param { key, values: values.to_vec(), default, about }
    }
}

/// One point of a parameter grid: a value per parameter, in the kernel's order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config(pub Vec<(&'static str, u32)>);

impl Config {
    /// The value of `key` (every kernel reads only keys it declared, so this is present).
    pub fn get(&self, key: &str) -> u32 {
        self.0.iter().find(|(k, _)| *k == key).map(|&(_, v)| v).unwrap_or_else(|| panic!("no parameter {key}"))
    }

    /// `block=16 tile=8` (empty for a kernel without parameters).
    pub fn label(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }
}

/// A JSON object `{"key": value, ...}`.
impl serde::Serialize for Config {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// What a kernel must at least do per run, for its fraction of the device's ceiling.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Floor {
    /// Bytes read plus written: floor time = bytes / copy bandwidth.
    Bytes(u64),
    /// Floating-point operations: floor time = FLOPs / FMA rate.
    Flops(u64),
}

/// How a run's output compared with the CPU reference.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Check {
    pub passed: bool,
    /// Largest difference found (0 for exact comparisons).
    pub max_error: f64,
    pub tolerance: f64,
}

impl Check {
    /// An exact comparison.
    pub fn exact<T: PartialEq>(got: &[T], want: &[T]) -> Check {
        let passed = got.len() == want.len() && got == want;
        Check { passed, max_error: if passed { 0.0 } else { f64::INFINITY }, tolerance: 0.0 }
    }

    /// Largest absolute difference within `tolerance` (lengths must match; NaN fails).
    pub fn close(got: impl IntoIterator<Item = f64>, want: impl IntoIterator<Item = f64>, tolerance: f64) -> Check {
        let (got, want): (Vec<f64>, Vec<f64>) = (got.into_iter().collect(), want.into_iter().collect());
        let max = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, |m: f64, d| {
            if d.is_nan() {
                f64::INFINITY
            } else {
                m.max(d)
            }
        });
        Check { passed: got.len() == want.len() && max <= tolerance, max_error: max, tolerance }
    }
}

/// The compute shader a point's time is dominated by, as it was specialized: `sweep`
/// reflects its shape and builds it once more to read the driver's statistics.
#[derive(Clone, Debug)]
pub struct Shader {
    pub spirv: &'static [u8],
    pub spec: Vec<u32>,
}

/// One run of a kernel at one point: GPU ms of each timed repetition, floor, check, shader.
pub struct Measured {
    pub times_ms: Vec<f64>,
    pub floor: Floor,
    pub check: Check,
    pub shader: Option<Shader>,
}

/// How many repetitions to time, after how long a warm-up.
#[derive(Clone, Copy, Debug)]
pub struct Reps {
    pub repeats: u32,
    pub warm_up: std::time::Duration,
}

/// The problem sizes of a kernel: what one counts, which a sweep runs, which the tests run
/// and how large one may be.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// What a problem size counts (`elements`, `pixels`, `tiles`, ...).
    pub unit: &'static str,
    /// Sizes a sweep runs when none are given: the sizes users run.
    pub default: &'static [u64],
    /// Two small sizes for the lavapipe tests.
    pub tiny: [u64; 2],
    /// Largest size accepted.
    pub max: u64,
}

/// What a registered kernel does at a point of its grid: its parameters, sizes and run.
/// Its name and description are its row of [`ALL`].
pub trait Kernel: Sync {
    /// Its tunable parameters, in grid order.
    fn params(&self) -> Vec<Param>;
    /// The problem sizes it runs at.
    fn sizes(&self) -> Sizes;
    /// Bytes a run at `size` allocates at most, host and device together.
    fn footprint(&self, size: u64) -> u64;
    /// Whether runs name a shader (for registers, shared memory and occupancy).
    fn has_shader(&self) -> bool {
        true
    }
    /// Builds the input at `size`, runs the kernel with `config`, times it and checks it.
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured>;
}

/// A registered kernel: its name, what it computes, and the code that sweeps it.
pub struct Entry {
    /// `app.kernel`: the name `--kernel` takes, its output files' stem and its key in the
    /// tuning file.
    pub name: &'static str,
    /// What it computes, one line of `--list`.
    pub about: &'static str,
    pub kernel: &'static dyn Kernel,
}

/// Every registered kernel, in `--list` order: the engine's, then each app's.
pub static ALL: [Entry; 18] = [
    Entry {
        name: "engine.copy",
        about: "grid-stride copy of u32 elements as uvec4 (the copy-bandwidth ceiling)",
        kernel: &engine_kernels::Copy,
    },
    Entry {
        name: "engine.read_u32",
        about: "16 u32 loads in flight per invocation, XOR written (a kernel's load step)",
        kernel: &engine_kernels::Read(1),
    },
    Entry {
        name: "engine.read_uvec4",
        about: "16 uvec4 loads in flight per invocation, XOR written (a kernel's load step)",
        kernel: &engine_kernels::Read(4),
    },
    Entry {
        name: crate::tuned::SCAN,
        about: "exclusive prefix sum of u32, one pass with decoupled look-back",
        kernel: &engine_kernels::Scan,
    },
    Entry {
        name: "engine.sort",
        about: "radix sort of u32 key/value pairs; shape of the scatter kernel",
        kernel: &engine_kernels::Sort,
    },
    Entry {
        name: "engine.row_sums",
        about: "row sums of a row-major f32 matrix with 1024 columns",
        kernel: &engine_kernels::RowSums,
    },
    Entry {
        name: "engine.fft",
        about: "forward 2D FFT of a size x size complex f32 image (one pass per axis up to 4096; \
                sizes 2^a 3^b 5^c mixed-radix)",
        kernel: &engine_kernels::Fft,
    },
    Entry {
        name: smoe::RENDER,
        about: "SMoE per-tile blend of a size x size image (exact culling, fast mode): the paper's Fig. 9 kernel",
        kernel: &smoe::Render,
    },
    Entry {
        name: "smoe.bin",
        about: "SMoE binning of kernels to tiles (count, allocate, write the lists) for a size x size image",
        kernel: &smoe::Bin,
    },
    Entry {
        name: "mad.detection",
        about: "MAD detection strategy (CSF-filtered error, block contrast masking) of a size x size pair",
        kernel: &mad::Strategy::Detection,
    },
    Entry {
        name: "mad.appearance",
        about: "MAD appearance strategy (log-Gabor subband statistics) of a size x size pair",
        kernel: &mad::Strategy::Appearance,
    },
    Entry {
        name: "mosaic.sinkhorn_rows",
        about: "SoftAssign's fused row pass over a size x size distance matrix (f32)",
        kernel: &mosaic::Sinkhorn::Rows,
    },
    Entry {
        name: "mosaic.sinkhorn_cols",
        about: "SoftAssign's column pass (partial sums, outlier row) for size tiles",
        kernel: &mosaic::Sinkhorn::Cols,
    },
    Entry {
        name: mosaic::SINKHORN_ATOMIC,
        about: "one SoftAssign cooling iteration, one dispatch per Sinkhorn iteration (float-atomic column sums)",
        kernel: &mosaic::AtomicSinkhorn,
    },
    Entry {
        name: "mosaic.distance",
        about: "Euclidean distances between size patch and size tile features (4x4 cells of RGB)",
        kernel: &mosaic::Distance,
    },
    Entry {
        name: lightfield::ENCODE,
        about: "sparse coding of 5x5x8x8x3 patches against 8 dictionaries (one workgroup per patch)",
        kernel: &lightfield::Codec::Encode,
    },
    Entry {
        name: lightfield::DECODE,
        about: "synthesis of 5x5x8x8x3 patches from their sparse codes (one workgroup per patch)",
        kernel: &lightfield::Codec::Decode,
    },
    Entry {
        name: composite::ENCODE,
        about: "active-pixel encoding of a size x size frame: region of interest and per-chunk counts (ap_count), \
                then the payload (ap_scatter), one shape for both",
        kernel: &composite::Encode,
    },
];

/// Names accepted before the registry, kept so existing scripts keep working.
const ALIASES: [(&str, &str); 6] = [
    ("copy", "engine.copy"),
    ("read_u32", "engine.read_u32"),
    ("read_uvec4", "engine.read_uvec4"),
    ("scan", "engine.scan"),
    ("sort", "engine.sort"),
    ("row_sums", "engine.row_sums"),
];

/// Every name `--kernel` accepts (registered names and the old short ones).
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|e| e.name).chain(ALIASES.iter().map(|(a, _)| *a)).collect()
}

/// The kernel called `name` (or its old short name).
pub fn by_name(name: &str) -> Option<&'static Entry> {
    let name = ALIASES.iter().find(|(a, _)| *a == name).map_or(name, |(_, full)| full);
    ALL.iter().find(|e| e.name == name)
}

/// GPU ms of each of `reps.repeats` runs of `body` (see [`crate::time_repetitions`]).
pub fn time(ctx: &Context, reps: Reps, body: impl FnMut(&mut engine::Recorder) -> Result<()>) -> Result<Vec<f64>> {
    crate::time_repetitions(ctx, reps.repeats, reps.warm_up, body)
}

/// GPU ms of each of `reps.repeats` calls of `once`, after the warm-up, for kernels whose
/// app call records, submits and reads back its own timestamps (so it times itself).
pub fn time_calls(ctx: &Context, reps: Reps, once: impl FnMut() -> Result<f64>) -> Result<Vec<f64>> {
    engine::ceilings::warm_up(ctx, reps.warm_up)?;
    std::iter::repeat_with(once).take(reps.repeats as usize).collect()
}

/// Refuses a workgroup over the device's limit, so the point is skipped with the reason.
pub fn fits_workgroup(ctx: &Context, workgroup: u32) -> Result<()> {
    if workgroup > ctx.info().max_workgroup_invocations {
        return Err(engine::EngineError::Unsupported(format!("workgroup {workgroup} over the device's limit")));
    }
    Ok(())
}

/// GPU ms of the pass marked `pass` in each of `reps.repeats` runs of `body`, for kernels
/// whose app records several passes and marks them (smoe's "render").
pub fn time_pass(
    ctx: &Context,
    reps: Reps,
    pass: &str,
    mut body: impl FnMut(&mut engine::Recorder) -> Result<()>,
) -> Result<Vec<f64>> {
    let mut warm = ctx.recorder()?;
    body(&mut warm)?;
    warm.submit()?.wait()?;
    engine::ceilings::warm_up(ctx, reps.warm_up)?;
    let mut rec = ctx.recorder()?;
    // Apps mark a handful of passes per run; 16 per repetition is ample, and one more ends
    // it: no repetition overlaps the next.
    rec.enable_profiling(17 * reps.repeats + 1)?;
    for _ in 0..reps.repeats {
        body(&mut rec)?;
        rec.mark_isolated("repetition");
    }
    let passes = rec.submit()?.wait_profiled()?;
    Ok(passes.into_iter().filter(|p| p.name == pass).map(|p| p.ms).collect())
}

/// A deterministic u32 pattern (odd multiples of the golden ratio's fraction).
pub fn pattern(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) | 1).collect()
}

/// Deterministic floats in [0, 1) from `seed`.
pub fn unit_floats(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| {
            let x = (i ^ seed.wrapping_mul(0x9e37_79b9)).wrapping_mul(2_654_435_761).rotate_left(13) ^ 0x5bd1_e995;
            (x >> 8) as f32 / (1u32 << 24) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{ALIASES, ALL};

    #[test]
    fn names_are_unique_and_every_alias_names_a_registered_kernel() {
        let names: std::collections::BTreeSet<&str> = ALL.iter().map(|e| e.name).collect();
        assert_eq!(names.len(), ALL.len(), "a name registered twice");
        for (alias, full) in ALIASES {
            assert!(names.contains(full), "{alias} names {full}, which is not registered");
        }
    }
}
