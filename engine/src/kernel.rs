//! Kernels created from the descriptors shader-build reflects out of their SPIR-V.
//!
//! Every compute shader of a crate's `shaders/<dir>/` gets a `shaders::kernels::NAME`, a
//! [`KernelDesc`] written at build time: its bindings (number, name, whether the shader reads
//! or writes it), its push-constant bytes, its workgroup size and its specialization
//! constants. [`Context::kernel`] creates the pipeline from it, refusing a push type whose
//! size is not the shader's; a declared pass ([`crate::Pass`]) then binds each of the
//! kernel's bindings once, as the shader uses it, or is refused naming the kernel and the
//! binding. Nothing outside the engine states a binding count or a push size.

use std::marker::PhantomData;

use bytemuck::NoUninit;

use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::pipeline::ComputePipeline;
use crate::reflect;

/// How a kernel uses a binding, from its `readonly` / `writeonly` qualifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    pub fn reads(self) -> bool {
        self != Access::Write
    }

    pub fn writes(self) -> bool {
        self != Access::Read
    }

    pub(crate) fn word(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "written",
            Access::ReadWrite => "read and written",
        }
    }
}

/// One binding of a kernel (set 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindingDesc {
    pub binding: u32,
    /// The block's name in the shader (`Input` in `readonly buffer Input { .. };`).
    pub name: &'static str,
    pub access: Access,
    /// A uniform block (kernels take storage buffers; the engine refuses uniform blocks).
    pub uniform: bool,
}

/// One axis of a workgroup: a literal size, or the specialization constant that sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    Fixed(u32),
    Spec { id: u32, default: u32 },
}

/// A specialization constant of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecDesc {
    pub id: u32,
    pub name: &'static str,
    /// The default value's bits.
    pub default: u32,
}

/// What shader-build reflected out of one compute kernel's SPIR-V.
#[derive(Clone, Copy, Debug)]
pub struct KernelDesc {
    /// The file stem (`scan_u32`): the kernel's name in errors and profiles.
    pub name: &'static str,
    pub spirv: &'static [u8],
    /// By binding number.
    pub bindings: &'static [BindingDesc],
    pub push_bytes: u32,
    pub workgroup: [Dim; 3],
    /// By id.
    pub spec_constants: &'static [SpecDesc],
}

impl KernelDesc {
    /// The workgroup size under specialization constants `spec`.
    pub fn workgroup_for(&self, spec: &[u32]) -> [u32; 3] {
        self.workgroup.map(|d| match d {
            Dim::Fixed(n) => n,
            Dim::Spec { id, default } => spec.get(id as usize).copied().unwrap_or(default),
        })
    }

    fn interface_error(&self, binding: Option<&BindingDesc>, problem: String) -> EngineError {
        EngineError::Interface { kernel: self.name, binding: binding.map(|b| (b.binding, b.name)), problem }
    }

    /// Refuses a push type of `bytes` that is not the shader's push-constant block.
    fn check_push(&self, bytes: usize, type_name: &str) -> Result<()> {
        if bytes as u32 != self.push_bytes {
            return Err(self.interface_error(
                None,
                format!(
                    "the push type {type_name} is {bytes} bytes; the shader's push-constant block is {}",
                    self.push_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Refuses uniform blocks.
    fn check_bindings(&self) -> Result<()> {
        if let Some(b) = self.bindings.iter().find(|b| b.uniform) {
            return Err(self.interface_error(Some(b), "is a uniform block; kernels bind storage buffers".into()));
        }
        Ok(())
    }
}

/// A compute pipeline created from a [`KernelDesc`], whose push constants are a `P`.
pub struct Kernel<P = ()> {
    pub(crate) pipeline: ComputePipeline,
    pub(crate) desc: &'static KernelDesc,
    workgroup: [u32; 3],
    _push: PhantomData<fn(&P)>,
}

impl<P> Kernel<P> {
    pub fn name(&self) -> &'static str {
        self.desc.name
    }

    pub fn desc(&self) -> &'static KernelDesc {
        self.desc
    }

    /// The workgroup size it was specialized to.
    pub fn workgroup(&self) -> [u32; 3] {
        self.workgroup
    }

    /// The pipeline, for the driver's statistics ([`ComputePipeline::statistics`]).
    pub fn pipeline(&self) -> &ComputePipeline {
        &self.pipeline
    }
}

impl Context {
    /// Creates the kernel `desc` describes, with specialization constant `i` set to `spec[i]`
    /// (floats as bits), taking push constants of type `P` (`()` for none). Refused, naming
    /// the kernel, when `P`'s size is not the shader's push block or when the specialized
    /// workgroup or its shared memory exceeds the device. A value for an id the SPIR-V lacks
    /// (a constant of a shared header the compiler removed as unused here) is ignored.
    /// Creation compiles the shader in the driver: create kernels once, reuse them.
    pub fn kernel<P: NoUninit>(&self, desc: &'static KernelDesc, spec: &[u32]) -> Result<Kernel<P>> {
        self.kernel_with(desc, spec, None)
    }

    /// [`Context::kernel`] whose kernel runs in full subgroups of exactly `subgroup_size`
    /// invocations (Vulkan 1.3's subgroup size control), for kernels whose data layout
    /// follows the subgroup size the host planned for: without it, a driver may pick another
    /// size per pipeline (Intel's SIMD8/16/32; AMD's wave32/64). Its workgroup size must be
    /// a multiple of `subgroup_size`.
    pub fn kernel_for_subgroup<P: NoUninit>(
        &self,
        desc: &'static KernelDesc,
        spec: &[u32],
        subgroup_size: u32,
    ) -> Result<Kernel<P>> {
        self.kernel_with(desc, spec, Some(subgroup_size))
    }

    fn kernel_with<P: NoUninit>(
        &self,
        desc: &'static KernelDesc,
        spec: &[u32],
        subgroup_size: Option<u32>,
    ) -> Result<Kernel<P>> {
        desc.check_push(std::mem::size_of::<P>(), std::any::type_name::<P>())?;
        desc.check_bindings()?;
        let info = self.info();
        let shape = reflect::reflect(desc.spirv, spec).map_err(|e| desc.interface_error(None, e))?;
        let workgroup = shape.workgroup;
        let threads: u64 = workgroup.iter().map(|&n| u64::from(n)).product();
        if threads > u64::from(info.max_workgroup_invocations)
            || workgroup.iter().zip(info.max_workgroup_size).any(|(&n, max)| n > max)
        {
            return Err(EngineError::Unsupported(format!(
                "{}: workgroup {workgroup:?} exceeds {}'s limits ({} invocations, {:?})",
                desc.name, info.name, info.max_workgroup_invocations, info.max_workgroup_size
            )));
        }
        if shape.shared_bytes > info.max_shared_memory_bytes {
            return Err(EngineError::Unsupported(format!(
                "{}: {} bytes of shared memory per workgroup; {} has {}",
                desc.name, shape.shared_bytes, info.name, info.max_shared_memory_bytes
            )));
        }
        // Bindings 0..=highest: a number the shader skips is declared and never written.
        let count = desc.bindings.last().map_or(0, |b| b.binding + 1);
        let pipeline =
            self.compute_pipeline_from(desc.name, desc.spirv, (count, desc.push_bytes), spec, subgroup_size)?;
        Ok(Kernel { pipeline, desc, workgroup, _push: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prims::reduce::SumPush;
    use crate::shaders::kernels;
    use crate::testing;

    #[test]
    fn descriptors_hold_what_the_shaders_declare() {
        let scan = &kernels::SCAN_U32;
        assert_eq!(scan.name, "scan_u32");
        assert_eq!(scan.push_bytes, 12);
        let access: Vec<(u32, Access)> = scan.bindings.iter().map(|b| (b.binding, b.access)).collect();
        assert_eq!(access, [(0, Access::Read), (1, Access::Write), (2, Access::ReadWrite)]);
        assert_eq!(scan.bindings[0].name, "Input4/Input1");
        assert!(matches!(scan.workgroup[0], Dim::Spec { id: 0, .. }));
        assert_eq!(scan.workgroup[1], Dim::Fixed(1));
        assert!(scan.spec_constants.iter().any(|s| s.id == 1 && s.name == "ITEMS" && s.default == 16));
        assert_eq!(scan.workgroup_for(&[128]), [128, 1, 1]);
    }

    #[test]
    fn reflection_follows_the_specialization_constants() {
        let scan = reflect::reflect(kernels::SCAN_U32.spirv, &[128]).unwrap();
        assert_eq!((scan.workgroup, scan.binding_count(), scan.push_bytes), ([128, 1, 1], 3, 12));
        // s_scan_sg[gl_WorkGroupSize.x] and two single words.
        assert_eq!(scan.shared_bytes, 4 * 128 + 8);
        let copy = reflect::reflect(kernels::CEILING_COPY.spirv, &[512]).unwrap();
        assert_eq!((copy.threads(), copy.binding_count(), copy.push_bytes, copy.shared_bytes), (512, 2, 4, 0));
        assert!(reflect::reflect(b"not spirv at all....", &[]).is_err());
    }

    #[test]
    fn a_push_type_of_the_wrong_size_is_refused_naming_the_kernel() {
        let ctx = testing::context();
        // reduce_sum_u32 takes { uint n; uint per_group; }: 8 bytes, not 12 or 0.
        let err = ctx.kernel::<[u32; 3]>(&kernels::REDUCE_SUM_U32, &[64]).err().unwrap();
        let text = err.to_string();
        assert!(matches!(err, EngineError::Interface { kernel: "reduce_sum_u32", .. }), "{text}");
        assert!(text.starts_with("reduce_sum_u32: ") && text.contains("12 bytes") && text.contains("is 8"), "{text}");
        assert!(ctx.kernel::<()>(&kernels::REDUCE_SUM_U32, &[64]).is_err());
        ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64]).unwrap();
        testing::assert_no_validation_messages();
    }

    /// Kernels that include one header of constants take its whole list, though the
    /// compiler removes the constants a kernel does not use: values for ids its SPIR-V lacks
    /// are ignored, and the workgroup still follows constant 0.
    #[test]
    fn values_for_constants_the_compiler_removed_are_ignored() {
        let ctx = testing::context();
        assert!(!kernels::REDUCE_SUM_U32.spec_constants.iter().any(|s| s.id == 1));
        let kernel = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[32, 7, 3]).unwrap();
        assert_eq!(kernel.workgroup(), [32, 1, 1]);
        testing::assert_no_validation_messages();
    }

    #[test]
    fn a_workgroup_past_the_device_is_refused_before_the_driver_sees_it() {
        let ctx = testing::context();
        let too_many = ctx.info().max_workgroup_invocations * 2;
        let err = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[too_many]).err().unwrap().to_string();
        assert!(err.contains("reduce_sum_u32: workgroup"), "{err}");
    }
}
