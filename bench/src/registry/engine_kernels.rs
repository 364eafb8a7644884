//! The engine's kernels: the copy and read probes (the device's bandwidth itself), scan,
//! radix sort, row sums and the 2D FFT.

use engine::prims::{fft, reduce, scan, sort};
use engine::{Context, Location, Result};

use super::{pattern, time, unit_floats, Check, Config, Floor, Kernel, Measured, Param, Reps, Shader, Sizes};

const PROBE_WORKGROUPS: [u32; 5] = [64, 128, 256, 512, 1024];

fn workgroup(accepted: &[u32], default: u32) -> Vec<Param> {
    vec![Param::new("workgroup", accepted, default, "invocations per workgroup (specialization constant 0)")]
}

/// The largest problem the 4-byte-element kernels index (u32) and bind.
const MAX_ELEMENTS: u64 = 1 << 31;

/// Refuses a size whose buffers of `bytes` one storage binding cannot hold (128 MiB on
/// lavapipe), so the point is skipped with the reason.
fn fits(ctx: &Context, bytes: u64) -> Result<()> {
    ctx.check_binding(bytes, "each buffer")
}

/// Compute-shader copy of uvec4 words: the bandwidth ceiling itself.
pub struct Copy;

impl Kernel for Copy {
    fn params(&self) -> Vec<Param> {
        workgroup(&PROBE_WORKGROUPS, 256)
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "elements", default: &[1 << 20, 16 << 20, 64 << 20], tiny: [1000, 4096], max: MAX_ELEMENTS }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host source and copy back, device source and destination.
        16 * size + 64
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let wg = config.get("workgroup");
        fits(ctx, 4 * size)?;
        let words = (size as usize).div_ceil(4);
        let host = pattern(4 * words);
        let src = ctx.upload(&host, "copy source")?;
        let dst = ctx.buffer::<u32>(4 * words, Location::Device, "copy destination")?;
        let spec = vec![wg];
        let pipe = ctx.kernel::<u32>(&engine::shaders::kernels::CEILING_COPY, &spec)?;
        let groups = (words as u32).div_ceil(wg * 8).clamp(1, 65535);
        let times_ms = time(ctx, reps, |rec| {
            rec.pass(&pipe).read(&src).write(&dst).push(&(words as u32)).dispatch([groups, 1, 1])
        })?;
        let check = Check::exact(&ctx.download(&dst)?, &host);
        let floor = Floor::Bytes(2 * 16 * words as u64);
        Ok(Measured { times_ms, floor, check, shader: Some(Shader { spirv: engine::shaders::CEILING_COPY, spec }) })
    }
}

/// The read probe: 16 loads of one u32 (`Read(1)`) or one uvec4 (`Read(4)`) in flight per
/// invocation, then their XOR; size = u32 words read.
pub struct Read(pub usize);

impl Kernel for Read {
    // The copy's grid and sizes, so the two probes compare point for point.
    fn params(&self) -> Vec<Param> {
        Copy.params()
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "words", ..Copy.sizes() }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host and device source; one output word per invocation, at most one per 16 loads
        // plus a partial workgroup, host and device.
        8 * size.max(4) + 8 * (size / 16 + 1024)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let wg = config.get("workgroup");
        fits(ctx, 4 * size)?;
        let probe = engine::ceilings::ReadProbe::new(ctx, wg, self.0)?;
        let words = (size as usize).max(4);
        let host = pattern(words);
        let src = ctx.upload(&host, "read probe source")?;
        let dst = ctx.buffer::<u32>(probe.outputs(words), Location::Device, "read probe output")?;
        let times_ms = time(ctx, reps, |rec| probe.record(rec, &src, &dst))?;
        let want = read_probe_cpu(&host, self.0, wg as usize, probe.outputs(words));
        let check = Check::exact(&ctx.download(&dst)?, &want);
        let loads = (words / self.0) as u64;
        let spec = vec![wg, self.0 as u32];
        Ok(Measured {
            times_ms,
            floor: Floor::Bytes(4 * self.0 as u64 * loads),
            check,
            shader: Some(Shader { spirv: engine::shaders::CEILING_READ, spec }),
        })
    }
}

/// What `ceiling_read.comp` writes: per invocation, the XOR of its 16 loads (each load the
/// XOR of its `width` words) a workgroup apart.
fn read_probe_cpu(src: &[u32], width: usize, wg: usize, outputs: usize) -> Vec<u32> {
    const LOADS: usize = 16;
    let n = src.len() / width;
    (0..outputs)
        .map(|invocation| {
            let (group, local) = (invocation / wg, invocation % wg);
            let first = group * wg * LOADS + local;
            (0..LOADS)
                .map(|k| first + k * wg)
                .filter(|&i| i < n)
                .fold(0u32, |acc, i| src[i * width..(i + 1) * width].iter().fold(acc, |a, &w| a ^ w))
        })
        .collect()
}

/// Exclusive scan of u32 (single pass, decoupled look-back), in the shape a [`scan::ScanConfig`]
/// names: the entry's parameters are the kernel's specialization constants, and its tuned
/// values are what `prims-bench` and the apps pass to [`scan::Scanner::with_config`].
pub struct Scan;

/// Workgroup sizes the sweep tries. The engine also accepts 64, but on the H200 it ran at
/// half the speed of 256 at 2^28 elements (1.45 against 0.78 ms), four times the tiles on
/// the look-back's serial chain; it stays out of the grid to halve the tuning time.
const SCAN_WORKGROUPS: [u32; 4] = [128, 256, 512, 1024];

impl Kernel for Scan {
    fn params(&self) -> Vec<Param> {
        let mut params = workgroup(&SCAN_WORKGROUPS, scan::DEFAULT_WORKGROUP);
        params.push(Param::new(
            "items",
            scan::ITEMS_PER_INVOCATION,
            scan::DEFAULT_ITEMS,
            "elements per invocation, as uvec4 rows (specialization constant 1): the tile is workgroup x items",
        ));
        params
    }
    fn sizes(&self) -> Sizes {
        // 2^28 is prims-bench's size, where the 80%-of-copy goal is judged; the summed time
        // that --tune minimises is dominated by it.
        Sizes {
            unit: "elements",
            default: &[1 << 20, 16 << 20, 64 << 20, 256 << 20],
            tiny: [1000, 5000],
            max: MAX_ELEMENTS,
        }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host input and result, device input and output, and a scratch shorter than the input.
        20 * size + 1024
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let shape = scan::ScanConfig { workgroup: config.get("workgroup"), items: config.get("items") };
        fits(ctx, 4 * size)?;
        let n = size as usize;
        let scanner = scan::Scanner::with_config(ctx, shape)?;
        let host = pattern(n);
        let input = ctx.upload(&host, "scan input")?;
        let output = ctx.buffer::<u32>(n, Location::Device, "scan output")?;
        let scratch = scanner.scratch(n)?;
        let times_ms = time(ctx, reps, |rec| scanner.record_exclusive(rec, &input, &output, &scratch))?;
        let check = Check::exact(&ctx.download(&output)?, &scan::exclusive_cpu(&host));
        Ok(Measured {
            times_ms,
            floor: Floor::Bytes(8 * size),
            check,
            shader: Some(Shader { spirv: engine::shaders::SCAN_U32, spec: vec![shape.workgroup, shape.items] }),
        })
    }
}

/// LSD radix sort of u32 key / u32 value pairs (four 8-bit passes).
pub struct Sort;

impl Kernel for Sort {
    fn params(&self) -> Vec<Param> {
        workgroup(sort::WORKGROUP_SIZES, sort::DEFAULT_WORKGROUP)
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "pairs", default: &[1 << 20, 16 << 20], tiny: [1000, 5000], max: MAX_ELEMENTS / 2 }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host keys, values and results; device keys, values, their ping-pong copies, and
        // the per-block histograms and offsets.
        48 * size + (1 << 20)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let wg = config.get("workgroup");
        fits(ctx, 4 * size)?;
        let n = size as usize;
        let sorter = sort::Sorter::with_workgroup(ctx, wg)?;
        let keys_host = pattern(n);
        let values_host: Vec<u32> = (0..n as u32).collect();
        let keys = ctx.upload(&keys_host, "sort keys")?;
        let values = ctx.upload(&values_host, "sort values")?;
        let scratch = sorter.scratch::<u32>(n)?;
        // Checked on the first run; the timed runs sort the sorted pairs again, the same work
        // for a radix sort.
        let mut rec = ctx.recorder()?;
        sorter.record_sort_pairs(&mut rec, &keys, &values, &scratch)?;
        rec.submit()?.wait()?;
        let (want_keys, want_values) = sort::sort_pairs_cpu(&keys_host, &values_host);
        let mut check = Check::exact(&ctx.download(&keys)?, &want_keys);
        check.passed &= ctx.download(&values)? == want_values;
        let times_ms = time(ctx, reps, |rec| sorter.record_sort_pairs(rec, &keys, &values, &scratch))?;
        let subgroups = wg.div_ceil(ctx.info().subgroup_size.clamp(1, 32));
        Ok(Measured {
            times_ms,
            // Four passes, each reading and writing keys and values once.
            floor: Floor::Bytes(4 * 16 * size),
            check,
            shader: Some(Shader { spirv: engine::shaders::SORT_SCATTER, spec: vec![wg, subgroups] }),
        })
    }
}

/// Row sums of a row-major f32 matrix with 1024 columns (size = elements).
pub struct RowSums;

const ROW: usize = 1024;

impl Kernel for RowSums {
    fn params(&self) -> Vec<Param> {
        workgroup(reduce::WORKGROUP_SIZES, reduce::DEFAULT_WORKGROUP)
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "elements", default: &[1 << 20, 16 << 20, 64 << 20], tiny: [1024, 8192], max: MAX_ELEMENTS }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host and device matrix (at least one row of 1024) and the row sums.
        9 * size.max(ROW as u64) + 64
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let wg = config.get("workgroup");
        fits(ctx, 4 * size)?;
        let m = (size as usize / ROW).max(1);
        let reducer = reduce::Reducer::with_workgroup(ctx, wg)?;
        let host = unit_floats(m * ROW, 7);
        let matrix = ctx.upload(&host, "matrix")?;
        let out = ctx.buffer::<f32>(m, Location::Device, "row sums")?;
        let times_ms = time(ctx, reps, |rec| reducer.record_row_sums(rec, &matrix, m, ROW, &out))?;
        let want = reduce::row_sums_cpu(&host, m, ROW);
        // 1024 terms in [0, 1) summed in f32: within 1e-3 of the f64 sum.
        let check = Check::close(ctx.download(&out)?.iter().map(|&x| x as f64), want, 1e-3);
        Ok(Measured {
            times_ms,
            floor: Floor::Bytes(4 * (m * ROW) as u64),
            check,
            shader: Some(Shader { spirv: engine::shaders::REDUCE_ROWS_F32, spec: vec![wg] }),
        })
    }
}

/// Forward 2D FFT of one complex f32 image of `size x size`. Its parameters are the knobs
/// of [`fft::FftConfig`], which the engine turns into each pass's specialization constants
/// (workgroup size, values per invocation, lines per workgroup) per line length; a plan has
/// one or more passes of different shapes, so the entry names no single shader to reflect.
pub struct Fft;

impl Kernel for Fft {
    fn params(&self) -> Vec<Param> {
        let d = fft::FftConfig::default();
        vec![
            Param::new(
                "values",
                fft::FFT_VALUES,
                d.values,
                "values per invocation, the radix (specialization constant 1); mixed-radix sizes hold up to twice as many",
            ),
            Param::new(
                "columns",
                fft::FFT_COLUMNS,
                d.columns,
                "columns one workgroup transforms together at most (specialization constant 3 of the column pass)",
            ),
            Param::new(
                "row_invocations",
                fft::FFT_ROW_INVOCATIONS,
                d.row_invocations,
                "invocations a row workgroup aims for when rows are short (sets the row pass's workgroup size)",
            ),
        ]
    }
    fn sizes(&self) -> Sizes {
        // 1080 = 2^3 3^3 5 takes the mixed-radix kernel, the others the power-of-two one.
        Sizes { unit: "edge", default: &[512, 1024, 1080, 2048], tiny: [16, 30], max: 8192 }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host input (f32 and f64 copies) and result, device data and scratch.
        (8 + 16 + 8 + 16) * size * size + (1 << 20)
    }
    fn has_shader(&self) -> bool {
        false
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let n = size as usize;
        let shape = fft::FftConfig {
            values: config.get("values"),
            columns: config.get("columns"),
            row_invocations: config.get("row_invocations"),
        };
        let plan = fft::Fft2d::with_config(ctx, n, n, 1, shape)?;
        let re = unit_floats(n * n, 3);
        let im = unit_floats(n * n, 5);
        let host: Vec<[f32; 2]> = re.iter().zip(&im).map(|(&a, &b)| [a - 0.5, b - 0.5]).collect();
        let data = ctx.upload(&host, "fft data")?;
        let mut rec = ctx.recorder()?;
        plan.record(&mut rec, &data, fft::Direction::Forward)?;
        rec.submit()?.wait()?;
        let got = ctx.download(&data)?;
        let mut want: Vec<fft::Complex64> =
            host.iter().map(|c| fft::Complex64::new(c[0].into(), c[1].into())).collect();
        fft::fft2d_cpu(&mut want, n, n, fft::Direction::Forward)?;
        // Inputs in [-0.5, 0.5): outputs grow to about n, f32 rounding by log2(n) steps.
        let tolerance = 1e-4 * n as f64 * (n as f64).log2().max(1.0);
        let check = Check::close(
            got.iter().flat_map(|c| [c[0] as f64, c[1] as f64]),
            want.iter().flat_map(|c| [c.re, c.im]),
            tolerance,
        );
        let times_ms = time(ctx, reps, |rec| plan.record(rec, &data, fft::Direction::Forward))?;
        Ok(Measured {
            times_ms,
            // Each pass reads and writes the image once.
            floor: Floor::Bytes(2 * 8 * (n * n * plan.passes()) as u64),
            check,
            shader: None,
        })
    }
}
