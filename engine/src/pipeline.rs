//! Compute pipelines from embedded SPIR-V, with specialization constants and push constants.
//!
//! Every compute kernel in Tessera binds storage buffers only, at `set = 0, binding = 0..n`,
//! pushed per dispatch with VK_KHR_push_descriptor (no descriptor pools to manage), and takes
//! its small arguments as push constants. Specialization constant `i` gets `spec[i]`; by
//! convention constant 0 is the workgroup size (`layout(local_size_x_id = 0) in;`), so a
//! sweep can tune it without recompiling.

use std::io::Cursor;
use std::sync::Arc;

use ash::vk;

use crate::context::{Context, Shared};
use crate::error::{EngineError, Result, VkContext};

/// What a compute pipeline is made of. Callers outside the engine name the push-constant
/// block by its Rust type ([`Context::compute_pipeline_for`]), never by a size.
struct PipelineDesc<'a> {
    /// Shown in errors and profiles.
    name: &'a str,
    /// SPIR-V bytes (from a crate's generated `shaders` module).
    spirv: &'a [u8],
    /// Number of storage-buffer bindings (set 0, bindings 0..n).
    bindings: u32,
    /// Size of the push-constant block in bytes (0 for none).
    push_bytes: u32,
    /// Specialization constants by id: `spec[i]` for `constant_id = i` (floats as bits).
    spec: &'a [u32],
}

impl<'a> PipelineDesc<'a> {
    /// The description of a kernel whose push-constant block is the type `P`.
    fn typed<P: bytemuck::NoUninit>(name: &'a str, spirv: &'a [u8], bindings: u32, spec: &'a [u32]) -> Self {
        PipelineDesc { name, spirv, bindings, push_bytes: std::mem::size_of::<P>() as u32, spec }
    }
}

/// A created pipeline with its push-descriptor layout, what compute and graphics pipelines
/// share: the handles binding needs, and the release of all three on drop.
pub(crate) struct PipelineObject {
    shared: Arc<Shared>,
    raw: vk::Pipeline,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    bindings: u32,
    push_bytes: u32,
    name: String,
}

impl PipelineObject {
    /// Takes the pipeline a vkCreate*Pipelines `call` returned, or releases the layouts it
    /// was made with when creation failed.
    pub(crate) fn take(
        shared: &Arc<Shared>,
        result: std::result::Result<Vec<vk::Pipeline>, (Vec<vk::Pipeline>, vk::Result)>,
        (set_layout, layout): (vk::DescriptorSetLayout, vk::PipelineLayout),
        (bindings, push_bytes, name): (u32, u32, &str),
        call: &'static str,
    ) -> Result<PipelineObject> {
        match result {
            Ok(pipelines) => Ok(PipelineObject {
                shared: shared.clone(),
                raw: pipelines[0],
                layout,
                set_layout,
                bindings,
                push_bytes,
                name: name.to_string(),
            }),
            Err((_, result)) => {
                unsafe {
                    shared.device.destroy_pipeline_layout(layout, None);
                    shared.device.destroy_descriptor_set_layout(set_layout, None);
                }
                Err(EngineError::Vulkan { call, result })
            }
        }
    }

    /// What binding the pipeline needs.
    pub(crate) fn handles(&self) -> PipelineHandles<'_> {
        PipelineHandles {
            raw: self.raw,
            layout: self.layout,
            bindings: self.bindings,
            push_bytes: self.push_bytes,
            name: &self.name,
        }
    }
}

impl Drop for PipelineObject {
    fn drop(&mut self) {
        unsafe {
            self.shared.device.destroy_pipeline(self.raw, None);
            self.shared.device.destroy_pipeline_layout(self.layout, None);
            self.shared.device.destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

/// A driver's compiler statistics of a pipeline, as (name, value) pairs.
pub type PipelineStatistics = Vec<(String, String)>;

/// A compute pipeline with its push-descriptor layout.
pub struct ComputePipeline(pub(crate) Arc<PipelineObject>);

impl ComputePipeline {
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The driver's compiler statistics of the pipeline (NVIDIA: "Register Count", "Binary
    /// Size", ...), as (name, value) pairs; empty where the device lacks
    /// VK_KHR_pipeline_executable_properties. Occupancy tuning reads registers here.
    pub fn statistics(&self) -> Result<PipelineStatistics> {
        let Some(ext) = &self.0.shared.executable_properties else { return Ok(Vec::new()) };
        let pipeline_info = vk::PipelineInfoKHR::default().pipeline(self.0.raw);
        let executables = unsafe { ext.get_pipeline_executable_properties(&pipeline_info) }
            .vk("vkGetPipelineExecutablePropertiesKHR")?;
        let mut out = Vec::new();
        for index in 0..executables.len() as u32 {
            let info = vk::PipelineExecutableInfoKHR::default().pipeline(self.0.raw).executable_index(index);
            let stats =
                unsafe { ext.get_pipeline_executable_statistics(&info) }.vk("vkGetPipelineExecutableStatisticsKHR")?;
            for s in stats {
                let name = s.name_as_c_str().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                // The union's member is the one `format` names.
                let value = unsafe {
                    match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (s.value.b32 != 0).to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        _ => s.value.f64.to_string(),
                    }
                };
                out.push((name, value));
            }
        }
        Ok(out)
    }
}

/// What binding a pipeline needs: its handles, binding count, push-constant size and name.
pub(crate) struct PipelineHandles<'a> {
    pub raw: vk::Pipeline,
    pub layout: vk::PipelineLayout,
    pub bindings: u32,
    pub push_bytes: u32,
    pub name: &'a str,
}

/// The layouts every Tessera pipeline uses: `bindings` storage buffers at set 0, pushed per
/// draw or dispatch (VK_KHR_push_descriptor), and `push_bytes` of push constants, visible to
/// `stages`. Shared by compute and graphics pipelines.
pub(crate) fn push_descriptor_layout(
    device: &ash::Device,
    bindings: u32,
    push_bytes: u32,
    stages: vk::ShaderStageFlags,
) -> Result<(vk::DescriptorSetLayout, vk::PipelineLayout)> {
    let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..bindings)
        .map(|i| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(i)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(stages)
        })
        .collect();
    let set_layout = unsafe {
        device.create_descriptor_set_layout(
            &vk::DescriptorSetLayoutCreateInfo::default()
                .flags(vk::DescriptorSetLayoutCreateFlags::PUSH_DESCRIPTOR_KHR)
                .bindings(&bindings),
            None,
        )
    }
    .vk("vkCreateDescriptorSetLayout")?;
    let ranges = [vk::PushConstantRange::default().stage_flags(stages).offset(0).size(push_bytes)];
    let set_layouts = [set_layout];
    let mut layout_info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
    if push_bytes > 0 {
        layout_info = layout_info.push_constant_ranges(&ranges);
    }
    match unsafe { device.create_pipeline_layout(&layout_info, None) } {
        Ok(layout) => Ok((set_layout, layout)),
        Err(result) => {
            unsafe { device.destroy_descriptor_set_layout(set_layout, None) };
            Err(EngineError::Vulkan { call: "vkCreatePipelineLayout", result })
        }
    }
}

/// Reads SPIR-V bytes as words (checks the magic number and alignment of the length).
pub(crate) fn spirv_words(bytes: &[u8]) -> Result<Vec<u32>> {
    ash::util::read_spv(&mut Cursor::new(bytes)).map_err(|e| EngineError::InvalidInput(format!("bad SPIR-V: {e}")))
}

impl Context {
    /// Creates a compute pipeline whose push-constant block is the type `P` (`()` for none):
    /// its size is taken from the type, so the Rust struct and the pipeline layout cannot
    /// drift apart. Creation compiles the shader in the driver (tens of ms on a GPU), so
    /// create pipelines once and reuse them; keep creation out of timings.
    pub(crate) fn compute_pipeline_for<P: bytemuck::NoUninit>(
        &self,
        name: &str,
        spirv: &[u8],
        bindings: u32,
        spec: &[u32],
    ) -> Result<ComputePipeline> {
        self.create_compute_pipeline(&PipelineDesc::typed::<P>(name, spirv, bindings, spec), None)
    }

    /// The driver's compiler statistics ([`ComputePipeline::statistics`]) of a kernel that
    /// is compiled, never dispatched: for tools that read `bindings` and `push_bytes` from
    /// the SPIR-V itself rather than from a Rust type (occupancy estimates of any kernel).
    pub fn compute_pipeline_statistics(
        &self,
        name: &str,
        spirv: &[u8],
        (bindings, push_bytes): (u32, u32),
        spec: &[u32],
    ) -> Result<PipelineStatistics> {
        self.create_compute_pipeline(&PipelineDesc { name, spirv, bindings, push_bytes, spec }, None)?.statistics()
    }

    /// A compute pipeline of `bindings` storage buffers and `push_bytes` of push constants,
    /// for [`Context::kernel`], which reads both from the kernel's reflected descriptor.
    pub(crate) fn compute_pipeline_from(
        &self,
        name: &str,
        spirv: &[u8],
        (bindings, push_bytes): (u32, u32),
        spec: &[u32],
        subgroup_size: Option<u32>,
    ) -> Result<ComputePipeline> {
        let desc = PipelineDesc { name, spirv, bindings, push_bytes, spec };
        match subgroup_size {
            None => self.create_compute_pipeline(&desc, None),
            Some(size) => {
                self.check_subgroup_size(name, size).and_then(|_| self.create_compute_pipeline(&desc, Some(size)))
            }
        }
    }

    /// Refuses a subgroup size the device cannot require.
    fn check_subgroup_size(&self, name: &str, subgroup_size: u32) -> Result<()> {
        match self.info().required_subgroup_sizes {
            Some((min, max)) if (min..=max).contains(&subgroup_size) && subgroup_size.is_power_of_two() => Ok(()),
            sizes => Err(EngineError::Unsupported(format!(
                "{name}: subgroups of {subgroup_size} cannot be required here (sizes that can: {sizes:?})"
            ))),
        }
    }

    /// Refuses a push-constant block larger than the device allows.
    pub(crate) fn check_push_bytes(&self, name: &str, push_bytes: u32) -> Result<()> {
        let max = self.info().max_push_constants_bytes;
        if push_bytes > max {
            return Err(EngineError::Unsupported(format!(
                "{name}: {push_bytes} bytes of push constants, device allows {max}"
            )));
        }
        Ok(())
    }

    fn create_compute_pipeline(&self, desc: &PipelineDesc<'_>, subgroup_size: Option<u32>) -> Result<ComputePipeline> {
        let device = &self.shared.device;
        self.check_push_bytes(desc.name, desc.push_bytes)?;
        let words = spirv_words(desc.spirv)?;
        let module = unsafe { device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None) }
            .vk("vkCreateShaderModule")?;

        let (set_layout, layout) =
            match push_descriptor_layout(device, desc.bindings, desc.push_bytes, vk::ShaderStageFlags::COMPUTE) {
                Ok(l) => l,
                Err(e) => {
                    unsafe { device.destroy_shader_module(module, None) };
                    return Err(e);
                }
            };

        let entries: Vec<vk::SpecializationMapEntry> = (0..desc.spec.len())
            .map(|i| vk::SpecializationMapEntry::default().constant_id(i as u32).offset(4 * i as u32).size(4))
            .collect();
        let data: &[u8] = bytemuck::cast_slice(desc.spec);
        let spec_info = vk::SpecializationInfo::default().map_entries(&entries).data(data);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        if !desc.spec.is_empty() {
            stage = stage.specialization_info(&spec_info);
        }
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(subgroup_size.unwrap_or(0));
        if subgroup_size.is_some() {
            stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS).push_next(&mut required);
        }
        let flags = if self.shared.executable_properties.is_some() {
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
        } else {
            vk::PipelineCreateFlags::empty()
        };
        let info = vk::ComputePipelineCreateInfo::default().flags(flags).stage(stage).layout(layout);
        let result = unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
        unsafe { device.destroy_shader_module(module, None) };
        let what = (desc.bindings, desc.push_bytes, desc.name);
        let pipeline =
            PipelineObject::take(&self.shared, result, (set_layout, layout), what, "vkCreateComputePipelines")?;
        Ok(ComputePipeline(Arc::new(pipeline)))
    }
}

#[cfg(test)]
mod tests {
    use crate::prims::reduce::SumPush;
    use crate::testing;

    #[test]
    fn statistics_are_read_where_the_device_reports_them() {
        let ctx = testing::context();
        let stats = testing::sum_pipeline(ctx).statistics().unwrap();
        // Devices without VK_KHR_pipeline_executable_properties report nothing; those with
        // it report named values.
        assert_eq!(ctx.shared.executable_properties.is_some(), !stats.is_empty());
        assert!(stats.iter().all(|(name, value)| !name.is_empty() && !value.is_empty()));
        testing::assert_no_validation_messages();
    }

    #[test]
    fn a_required_subgroup_size_builds_where_the_device_allows_it() {
        let ctx = testing::context();
        let build = |subgroup_size| {
            ctx.kernel_for_subgroup::<SumPush>(&crate::shaders::kernels::REDUCE_SUM_U32, &[64], subgroup_size)
        };
        // Not a power of two: never.
        assert!(build(24).is_err());
        let Some((min, max)) = ctx.info().required_subgroup_sizes else {
            assert!(build(ctx.info().subgroup_size).is_err());
            return;
        };
        assert!(build(2 * max).is_err());
        // The smallest size the device can require, on a 64-wide kernel whose subgroups
        // then all have that size: the sums are right.
        let sum = build(min).unwrap();
        let data: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2654435761) >> 12).collect();
        let input = ctx.upload(&data, "input").unwrap();
        let partials = ctx.buffer::<u32>(4, crate::Location::Device, "partials").unwrap();
        let push = SumPush { n: 1000, per_group: 250 };
        ctx.run(|rec| rec.pass(&sum).read(&input).write(&partials).push(&push).dispatch_linear(4)).unwrap();
        let got = ctx.download(&partials).unwrap();
        let want: Vec<u32> = data.chunks(250).map(|c| c.iter().sum()).collect();
        assert_eq!(got, want);
        testing::assert_no_validation_messages();
    }
}
