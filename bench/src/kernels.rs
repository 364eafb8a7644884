//! The kernels `sweep` knows, by name.

use engine::{Context, Result};

use crate::SweepKernel;

/// Compute-shader copy: the bandwidth ceiling itself.
pub struct Copy;

impl SweepKernel for Copy {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn workgroups(&self) -> Vec<u32> {
        vec![64, 128, 256, 512, 1024]
    }
    fn run(&self, ctx: &Context, workgroup: u32, size: u64) -> Result<(f64, u64)> {
        let bytes = size * 4;
        Ok((engine::ceilings::copy_ms(ctx, bytes, workgroup, 5)?, 2 * bytes))
    }
}

/// Every kernel `sweep` can run.
pub fn all() -> Vec<Box<dyn SweepKernel>> {
    vec![Box::new(Copy)]
}

/// The kernel called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn SweepKernel>> {
    all().into_iter().find(|k| k.name() == name)
}
