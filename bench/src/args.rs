//! `sweep`'s numeric arguments, validated when the command line is parsed (a zero workgroup
//! divided by zero, a zero size never finished) and against the device once it is open.

use engine::DeviceInfo;

/// Largest problem size a sweep accepts, in elements: the kernels index with u32 and their
/// buffers of 4-byte elements stay within 8 GiB.
pub const MAX_ELEMENTS: u64 = 1 << 31;

/// Largest workgroup size the parser accepts; the device's own limit is checked once it is
/// open ([`check_workgroup`]).
pub const MAX_WORKGROUP: u32 = 1 << 16;

/// A problem size in elements (clap value parser): a whole number with an optional K, M or
/// G suffix (powers of two), from 1 to [`MAX_ELEMENTS`].
pub fn parse_elements(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = digits.parse().map_err(|_| format!("{text:?} is not a size such as 1000, 64K or 16M"))?;
    match n.checked_mul(1 << shift) {
        Some(0) => Err("a size must be at least 1 element".into()),
        Some(size) if size <= MAX_ELEMENTS => Ok(size),
        _ => Err(format!("{text:?} is over the largest size, {MAX_ELEMENTS} elements (2G)")),
    }
}

/// A workgroup size (clap value parser): a power of two from 1 to [`MAX_WORKGROUP`].
pub fn parse_workgroup(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n.is_power_of_two() && n <= MAX_WORKGROUP => Ok(n),
        Ok(n) => Err(format!("{n} is not a power of two from 1 to {MAX_WORKGROUP}")),
        Err(_) => Err(format!("{text:?} is not a whole number")),
    }
}

/// The largest one-dimensional workgroup `info`'s device runs: the lesser of
/// maxComputeWorkGroupInvocations and maxComputeWorkGroupSize[0].
pub fn workgroup_limit(info: &DeviceInfo) -> u32 {
    info.max_workgroup_invocations.min(info.max_workgroup_size[0])
}

/// Refuses a workgroup size the device cannot run, naming its limits.
pub fn check_workgroup(info: &DeviceInfo, workgroup: u32) -> anyhow::Result<()> {
    if workgroup > workgroup_limit(info) {
        anyhow::bail!(
            "--workgroups {workgroup}: {} runs at most {} invocations per workgroup \
             (maxComputeWorkGroupInvocations {}, maxComputeWorkGroupSize[0] {})",
            info.name,
            workgroup_limit(info),
            info.max_workgroup_invocations,
            info.max_workgroup_size[0]
        );
    }
    Ok(())
}

/// Refuses a size whose buffers (4-byte elements) the device cannot bind as one storage
/// buffer (maxStorageBufferRange: 128 MiB on lavapipe).
pub fn check_size(info: &DeviceInfo, size: u64) -> anyhow::Result<()> {
    let bytes = 4 * size;
    if bytes > info.max_storage_buffer_range {
        anyhow::bail!(
            "--sizes {size}: {} bytes per buffer, but {}'s largest storage buffer is {} bytes ({} elements)",
            bytes,
            info.name,
            info.max_storage_buffer_range,
            info.max_storage_buffer_range / 4
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_workgroups_that_would_hang_or_divide_by_zero_are_refused() {
        assert_eq!(parse_elements("1000").unwrap(), 1000);
        assert_eq!(parse_elements("64K").unwrap(), 64 << 10);
        assert_eq!(parse_elements(" 2g").unwrap(), MAX_ELEMENTS);
        assert!(parse_elements("0").is_err());
        assert!(parse_elements("0K").is_err());
        assert!(parse_elements("3G").is_err());
        assert!(parse_elements("99999999999999999999G").is_err());
        assert!(parse_elements("18446744073709551615G").is_err());
        assert!(parse_elements("-1").is_err());
        assert!(parse_elements("K").is_err());
        assert_eq!(parse_workgroup("256").unwrap(), 256);
        assert!(parse_workgroup("0").is_err());
        assert!(parse_workgroup("96").is_err());
        assert!(parse_workgroup("131072").is_err());
    }
}
