//! The flags every command shares and value parsers for the rest, so clap validates every
//! argument before any work starts (docs/cli.md).

use engine::DeviceSelector;

/// Where the work runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The Vulkan compute path.
    #[default]
    Gpu,
    /// The multithreaded Rust reference (rayon).
    Cpu,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Gpu => "gpu",
            Backend::Cpu => "cpu",
        }
    }
}

/// The help text of `--device`.
pub const DEVICE_HELP: &str =
    "GPU to use: an index, a substring of its name, a comma list or `all` (default: the first discrete GPU, else integrated, else the CPU's lavapipe)";

/// Flags shared by every subcommand that computes: flatten into a clap struct with
/// `#[command(flatten)] common: kit::CommonArgs`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CommonArgs {
    /// gpu (Vulkan compute) or cpu (the multithreaded Rust reference)
    #[arg(long, value_enum, default_value_t = Backend::Gpu)]
    pub backend: Backend,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Flags of commands that always run on the GPU (viewers, benchmarks): `--device`, `--json`,
/// `--max-memory`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunArgs {
    #[arg(long, value_name = "N|NAME|LIST|all", help = DEVICE_HELP, default_value_t = DeviceSelector::Auto)]
    pub device: DeviceSelector,
    /// Print one JSON object per line (docs/cli.md) instead of text; no progress bars
    #[arg(long)]
    pub json: bool,
    /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
    #[arg(long, value_name = "SIZE", value_parser = crate::budget::parse_size)]
    pub max_memory: Option<u64>,
}

/// Flags of commands that run no GPU work (file inspection, generators): `--json` and
/// `--max-memory`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReportArgs {
    /// Print one JSON object per line (docs/cli.md) instead of text; no progress bars
    #[arg(long)]
    pub json: bool,
    /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
    #[arg(long, value_name = "SIZE", value_parser = crate::budget::parse_size)]
    pub max_memory: Option<u64>,
}

impl CommonArgs {
    /// Opens the `--device` GPU when the backend is `gpu`, and names it in the envelope.
    pub fn context(&self) -> engine::Result<Option<engine::Context>> {
        match self.backend {
            Backend::Cpu => Ok(None),
            Backend::Gpu => self.run.context().map(Some),
        }
    }

    pub fn json(&self) -> bool {
        self.run.json
    }

    pub fn device(&self) -> &DeviceSelector {
        &self.run.device
    }

    /// [`CommonArgs::context`] for a command that runs on one device: a `--device` naming
    /// several is a usage error ([`open_one`]).
    pub fn open_one(&self) -> anyhow::Result<Option<engine::Context>> {
        match self.backend {
            Backend::Cpu => Ok(None),
            Backend::Gpu => open_one(&self.run.device).map(Some),
        }
    }
}

impl RunArgs {
    /// Opens the one `--device` GPU and names it in the envelope.
    pub fn context(&self) -> engine::Result<engine::Context> {
        open(&self.device)
    }
}

/// Opens the one device `selector` names and names it in the JSON envelope.
pub fn open(selector: &DeviceSelector) -> engine::Result<engine::Context> {
    let ctx = engine::Context::open(selector)?;
    crate::report::set_device(&ctx.info().name);
    Ok(ctx)
}

/// Opens the one device `selector` names, as [`open`] does, for a command that runs on one
/// device: a selector naming several (`--device 0,1`, or `all` where there are several GPUs)
/// is a usage error ([`crate::Usage`], exit 2) leading with the flag, not a failure.
pub fn open_one(selector: &DeviceSelector) -> anyhow::Result<engine::Context> {
    if let DeviceSelector::Devices(list) = selector {
        if list.len() > 1 {
            return Err(several(selector, list.len()).into());
        }
    }
    match open(selector) {
        // The engine's refusal of several devices, as the selector resolved them (`all`).
        Err(e) if e.usage_flag().is_some() => Err(crate::Usage(e.to_string()).into()),
        opened => Ok(opened?),
    }
}

fn several(selector: &DeviceSelector, count: usize) -> crate::Usage {
    crate::Usage(format!(
        "--device {selector} names {count} devices; this command runs on one: give one index or name \
         (gpu-info lists them)"
    ))
}

/// Opens every device `selector` names (multi-GPU work) and names them in the envelope.
pub fn open_each(selector: &DeviceSelector) -> engine::Result<Vec<engine::Context>> {
    let contexts = engine::Context::open_each(selector)?;
    let names: Vec<&str> = contexts.iter().map(|c| c.info().name.as_str()).collect();
    crate::report::set_device(&names.join(", "));
    Ok(contexts)
}

/// Arguments of every binary's `bench` subcommand.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BenchArgs {
    /// Tiny sizes only: a smoke test that runs in seconds on lavapipe
    #[arg(long)]
    pub quick: bool,
    #[arg(long, value_name = "N|NAME", help = DEVICE_HELP, default_value_t = DeviceSelector::Auto)]
    pub device: DeviceSelector,
    /// Print each measurement in the JSON envelope (docs/cli.md) instead of text
    #[arg(long)]
    pub json: bool,
}

/// Parses `AxB` with separator `sep` (sizes `1920x1080`, views `3,4`): for clap's
/// `value_parser` through a closure, or directly.
pub fn parse_pair<T: std::str::FromStr>(text: &str, sep: char) -> Result<(T, T), String> {
    let mut parts = text.split(sep);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), None) => match (a.trim().parse(), b.trim().parse()) {
            (Ok(a), Ok(b)) => Ok((a, b)),
            _ => Err(format!("{text:?} must look like A{sep}B with two numbers")),
        },
        _ => Err(format!("{text:?} must look like A{sep}B")),
    }
}

/// A size `WxH` with both sides in 1..=16384 (clap value parser).
pub fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = parse_pair::<u32>(text, 'x')?;
    if !(1..=16384).contains(&w) || !(1..=16384).contains(&h) {
        return Err(format!("{w}x{h}: each side must be between 1 and 16384"));
    }
    Ok((w, h))
}

/// A finite f64 (clap value parser): NaN and infinities are refused.
pub fn parse_finite(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("{text:?} is not a finite number")),
    }
}

/// A fraction in [0, 1] (clap value parser).
pub fn parse_unit(text: &str) -> Result<f64, String> {
    let v = parse_finite(text)?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{v} is not between 0 and 1"));
    }
    Ok(v)
}

/// A positive count (clap value parser for `usize` arguments that must be at least 1).
pub fn parse_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_parsers_refuse_what_would_panic_later() {
        assert_eq!(parse_size("1920x1080").unwrap(), (1920, 1080));
        assert!(parse_size("0x5").is_err());
        assert!(parse_size("5x5x5").is_err());
        assert!(parse_finite("nan").is_err());
        assert!(parse_unit("1.5").is_err());
        assert!(parse_count("0").is_err());
        assert_eq!(parse_pair::<f64>("1.5, 2", ',').unwrap(), (1.5, 2.0));
    }

    /// A list of several devices for a one-device command is a usage error leading with the
    /// flag, found before any device is opened.
    #[test]
    fn a_device_list_is_a_usage_error_for_one_device() {
        for (text, count) in [("0,0", 2), ("0,llvm,1", 3)] {
            let selector: DeviceSelector = text.parse().unwrap();
            let Err(err) = open_one(&selector) else { panic!("{text} opened a device") };
            assert!(err.is::<crate::Usage>(), "{err}");
            let want = format!("--device {text} names {count} devices; this command runs on one");
            assert!(err.to_string().starts_with(&want), "{err}");
        }
    }
}
