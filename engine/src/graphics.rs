//! Graphics support: 2D images (colour and depth render targets) through gpu-allocator,
//! graphics pipelines from vertex + fragment SPIR-V drawn with dynamic rendering (Vulkan
//! 1.3, no render passes or framebuffers), and image <-> buffer copies.
//!
//! Like compute kernels, graphics pipelines take storage buffers at `set = 0, binding =
//! 0..n` (pushed per draw; vertex shaders pull their vertices from them with
//! `gl_VertexIndex` / `gl_InstanceIndex`, so there is no vertex-input state) and push
//! constants visible to both stages. Each [`Image2D`] remembers the layout its last recorded
//! use left it in, so callers never name layouts: [`Recorder::begin_rendering`] and the copy
//! functions record the sync2 layout transitions they need. That tracking assumes the
//! recorders that use an image are submitted in the order they were recorded (true for the
//! single universal queue images live on).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use ash::vk;
use bytemuck::{NoUninit, Pod};
use gpu_allocator::MemoryLocation;

use crate::commands::Recorder;
use crate::context::{Context, Shared};
use crate::error::{EngineError, Result, VkContext};
use crate::hazards::Use;
use crate::memory::{Bind, Buffer, BufferBinding, MemoryBlock, Resource};
use crate::pipeline::spirv_words;
use crate::pipeline::PipelineObject;

/// Colour format of render targets whose pixels are RGBA8 bytes (R first in memory).
pub const COLOR_RGBA8: vk::Format = vk::Format::R8G8B8A8_UNORM;
/// Depth format whose texels copy out as f32.
pub const DEPTH_F32: vk::Format = vk::Format::D32_SFLOAT;

fn is_depth(format: vk::Format) -> bool {
    matches!(
        format,
        vk::Format::D32_SFLOAT | vk::Format::D16_UNORM | vk::Format::D24_UNORM_S8_UINT | vk::Format::D32_SFLOAT_S8_UINT
    )
}

/// A device-local 2D image with one mip level and its view.
pub struct Image2D {
    shared: Arc<Shared>,
    raw: vk::Image,
    view: vk::ImageView,
    format: vk::Format,
    width: u32,
    height: u32,
    /// The layout the last recorded use leaves the image in (a `vk::ImageLayout` value).
    layout: AtomicI32,
    /// Held for its drop, declared last: freed after [`Drop::drop`] destroyed the image.
    _memory: MemoryBlock,
}

impl Image2D {
    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    pub fn format(&self) -> vk::Format {
        self.format
    }

    pub fn raw(&self) -> vk::Image {
        self.raw
    }

    pub fn view(&self) -> vk::ImageView {
        self.view
    }

    fn aspect(&self) -> vk::ImageAspectFlags {
        if is_depth(self.format) {
            vk::ImageAspectFlags::DEPTH
        } else {
            vk::ImageAspectFlags::COLOR
        }
    }

    fn extent(&self) -> vk::Extent2D {
        vk::Extent2D { width: self.width, height: self.height }
    }
}

impl Drop for Image2D {
    fn drop(&mut self) {
        unsafe { self.shared.device.destroy_image_view(self.view, None) };
        unsafe { self.shared.device.destroy_image(self.raw, None) };
    }
}

impl Context {
    /// A device-local 2D image usable as a render target (colour or depth, by `format`) and
    /// as a copy source and destination. `what` names it in out-of-memory errors.
    pub fn image_2d(&self, width: u32, height: u32, format: vk::Format, what: &str) -> Result<Image2D> {
        if width == 0 || height == 0 {
            return Err(EngineError::InvalidInput(format!("{what}: image size {width}x{height} is empty")));
        }
        let depth = is_depth(format);
        let usage = vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::TRANSFER_DST
            | if depth {
                vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
            } else {
                vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::SAMPLED
            };
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D { width, height, depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        let device = &self.shared.device;
        let bytes = width as u64 * height as u64 * 4;
        let raw = unsafe { device.create_image(&info, None) }.vk_creating("vkCreateImage", bytes, what)?;
        let requirements = unsafe { device.get_image_memory_requirements(raw) };
        let memory =
            match MemoryBlock::allocate(&self.shared, requirements, MemoryLocation::GpuOnly, false, what, bytes) {
                Ok(m) => m,
                Err(e) => {
                    unsafe { device.destroy_image(raw, None) };
                    return Err(e);
                }
            };
        let bound = unsafe { device.bind_image_memory(raw, memory.memory(), memory.offset()) };
        let aspect = if depth { vk::ImageAspectFlags::DEPTH } else { vk::ImageAspectFlags::COLOR };
        let view = bound.and_then(|_| unsafe {
            device.create_image_view(
                &vk::ImageViewCreateInfo::default()
                    .image(raw)
                    .view_type(vk::ImageViewType::TYPE_2D)
                    .format(format)
                    .subresource_range(subresource_range(aspect)),
                None,
            )
        });
        let view = match view {
            Ok(v) => v,
            Err(result) => {
                // `memory` frees itself when it goes out of scope here.
                unsafe { device.destroy_image(raw, None) };
                return Err(EngineError::Vulkan { call: "vkBindImageMemory/vkCreateImageView", result });
            }
        };
        Ok(Image2D {
            shared: self.shared.clone(),
            raw,
            view,
            format,
            width,
            height,
            layout: AtomicI32::new(vk::ImageLayout::UNDEFINED.as_raw()),
            _memory: memory,
        })
    }
}

fn subresource_range(aspect: vk::ImageAspectFlags) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange::default().aspect_mask(aspect).level_count(1).layer_count(1)
}

/// The stages and accesses that use an image in a layout (what a transition out of the
/// layout must wait for, and what a transition into it must make the image visible to).
fn layout_usage(layout: vk::ImageLayout) -> (vk::PipelineStageFlags2, vk::AccessFlags2) {
    match layout {
        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL => (
            vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT,
            vk::AccessFlags2::COLOR_ATTACHMENT_READ | vk::AccessFlags2::COLOR_ATTACHMENT_WRITE,
        ),
        vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL => (
            vk::PipelineStageFlags2::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags2::LATE_FRAGMENT_TESTS,
            vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_READ | vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_WRITE,
        ),
        vk::ImageLayout::TRANSFER_SRC_OPTIMAL => (vk::PipelineStageFlags2::COPY, vk::AccessFlags2::TRANSFER_READ),
        vk::ImageLayout::TRANSFER_DST_OPTIMAL => (vk::PipelineStageFlags2::COPY, vk::AccessFlags2::TRANSFER_WRITE),
        vk::ImageLayout::UNDEFINED => (vk::PipelineStageFlags2::NONE, vk::AccessFlags2::NONE),
        _ => (vk::PipelineStageFlags2::ALL_COMMANDS, vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE),
    }
}

/// What a graphics pipeline is made of.
#[derive(Clone, Debug)]
pub struct GraphicsPipelineDesc<'a> {
    /// Shown in errors and profiles.
    pub name: &'a str,
    /// Vertex and fragment SPIR-V (a crate's `shaders::NAME_VERT` / `NAME_FRAG`).
    pub vertex: &'a [u8],
    pub fragment: &'a [u8],
    /// Storage buffers at set 0, bindings 0..n, visible to both stages.
    pub bindings: u32,
    pub topology: vk::PrimitiveTopology,
    /// Format of the one colour attachment.
    pub color_format: vk::Format,
    /// Depth attachment format and the depth test (writes on); `None` for no depth.
    pub depth: Option<(vk::Format, vk::CompareOp)>,
    pub cull: vk::CullModeFlags,
}

/// A graphics pipeline for dynamic rendering, with its push-descriptor layout.
pub struct GraphicsPipeline(PipelineObject);

impl GraphicsPipeline {
    pub fn name(&self) -> &str {
        self.0.handles().name
    }
}

const GRAPHICS_STAGES: vk::ShaderStageFlags =
    vk::ShaderStageFlags::from_raw(vk::ShaderStageFlags::VERTEX.as_raw() | vk::ShaderStageFlags::FRAGMENT.as_raw());

impl Context {
    /// Whether dynamic rendering (needed by [`Context::graphics_pipeline_for`]) is enabled.
    /// ([`Context::open_with`] enables it wherever the device supports it.)
    pub fn dynamic_rendering(&self) -> bool {
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut query = vk::PhysicalDeviceFeatures2::default().push_next(&mut f13);
        unsafe { self.shared.instance.raw.get_physical_device_features2(self.shared.physical, &mut query) };
        f13.dynamic_rendering == vk::TRUE
    }

    /// Creates a graphics pipeline whose push-constant block, visible to both stages, is the
    /// type `P` (`()` for none). Driver compile: create once, keep out of timings.
    pub fn graphics_pipeline_for<P: bytemuck::NoUninit>(
        &self,
        desc: &GraphicsPipelineDesc<'_>,
    ) -> Result<GraphicsPipeline> {
        if !self.dynamic_rendering() {
            return Err(EngineError::Unsupported(format!("{}: the device lacks dynamic rendering", desc.name)));
        }
        let push_bytes = std::mem::size_of::<P>() as u32;
        self.check_push_bytes(desc.name, push_bytes)?;
        let device = &self.shared.device;
        let module = |bytes: &[u8]| -> Result<vk::ShaderModule> {
            let words = spirv_words(bytes)?;
            unsafe { device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None) }
                .vk("vkCreateShaderModule")
        };
        let vertex = module(desc.vertex)?;
        let fragment = match module(desc.fragment) {
            Ok(f) => f,
            Err(e) => {
                unsafe { device.destroy_shader_module(vertex, None) };
                return Err(e);
            }
        };
        let result = self.build_graphics(desc, push_bytes, vertex, fragment);
        unsafe {
            device.destroy_shader_module(vertex, None);
            device.destroy_shader_module(fragment, None);
        }
        result
    }

    fn build_graphics(
        &self,
        desc: &GraphicsPipelineDesc<'_>,
        push_bytes: u32,
        vertex: vk::ShaderModule,
        fragment: vk::ShaderModule,
    ) -> Result<GraphicsPipeline> {
        let device = &self.shared.device;
        let (set_layout, layout) =
            crate::pipeline::push_descriptor_layout(device, desc.bindings, push_bytes, GRAPHICS_STAGES)?;

        let stages = [
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(vertex)
                .name(c"main"),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(fragment)
                .name(c"main"),
        ];
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let assembly = vk::PipelineInputAssemblyStateCreateInfo::default().topology(desc.topology);
        let viewport = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
        let raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(desc.cull)
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0);
        let multisample =
            vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let depth_state = match desc.depth {
            Some((_, compare)) => vk::PipelineDepthStencilStateCreateInfo::default()
                .depth_test_enable(true)
                .depth_write_enable(true)
                .depth_compare_op(compare),
            None => vk::PipelineDepthStencilStateCreateInfo::default(),
        };
        let blend_attachments = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(
            vk::ColorComponentFlags::R
                | vk::ColorComponentFlags::G
                | vk::ColorComponentFlags::B
                | vk::ColorComponentFlags::A,
        )];
        let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend_attachments);
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let color_formats = [desc.color_format];
        let mut rendering = vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&color_formats);
        if let Some((format, _)) = desc.depth {
            rendering = rendering.depth_attachment_format(format);
        }
        let info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .depth_stencil_state(&depth_state)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(layout)
            .push_next(&mut rendering);
        let result = unsafe { device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
        let what = (desc.bindings, push_bytes, desc.name);
        let call = "vkCreateGraphicsPipelines";
        Ok(GraphicsPipeline(PipelineObject::take(&self.shared, result, (set_layout, layout), what, call)?))
    }
}

impl Recorder {
    /// Records a layout transition of `image` (from the layout its last recorded use left)
    /// with a sync2 barrier that waits for that use.
    pub fn transition(&mut self, image: &Image2D, new_layout: vk::ImageLayout) {
        let old = vk::ImageLayout::from_raw(image.layout.swap(new_layout.as_raw(), Ordering::SeqCst));
        let (src_stage, src_access) = layout_usage(old);
        let (dst_stage, dst_access) = layout_usage(new_layout);
        let barrier = vk::ImageMemoryBarrier2::default()
            .src_stage_mask(src_stage)
            .src_access_mask(src_access)
            .dst_stage_mask(dst_stage)
            .dst_access_mask(dst_access)
            .old_layout(old)
            .new_layout(new_layout)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(image.raw)
            .subresource_range(subresource_range(image.aspect()));
        let barriers = [barrier];
        let dep = vk::DependencyInfo::default().image_memory_barriers(&barriers);
        unsafe { self.context().shared.device.cmd_pipeline_barrier2(self.raw(), &dep) };
    }

    /// Begins dynamic rendering into `color` (and `depth`), cleared to `clear_color` and
    /// `clear_depth`, with the viewport and scissor covering the whole image (row 0 at the
    /// top, NDC y = -1).
    pub fn begin_rendering(
        &mut self,
        color: &Image2D,
        depth: Option<&Image2D>,
        clear_color: [f32; 4],
        clear_depth: f32,
    ) {
        self.transition(color, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL);
        if let Some(d) = depth {
            self.transition(d, vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL);
        }
        let color_attachment = [vk::RenderingAttachmentInfo::default()
            .image_view(color.view)
            .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: clear_color } })];
        let depth_attachment = depth.map(|d| {
            vk::RenderingAttachmentInfo::default()
                .image_view(d.view)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: clear_depth, stencil: 0 },
                })
        });
        let area = vk::Rect2D { offset: vk::Offset2D::default(), extent: color.extent() };
        let mut info =
            vk::RenderingInfo::default().render_area(area).layer_count(1).color_attachments(&color_attachment);
        if let Some(d) = &depth_attachment {
            info = info.depth_attachment(d);
        }
        let device = &self.context().shared.device;
        let viewport = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: color.width as f32,
            height: color.height as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        unsafe {
            device.cmd_begin_rendering(self.raw(), &info);
            device.cmd_set_viewport(self.raw(), 0, &[viewport]);
            device.cmd_set_scissor(self.raw(), 0, &[area]);
        }
    }

    /// Draws `vertices` vertices `instances` times with the given storage buffers and push
    /// constants (inside [`Recorder::begin_rendering`] / [`Recorder::end_rendering`]).
    pub fn draw<P: NoUninit>(
        &mut self,
        pipe: &GraphicsPipeline,
        bindings: &[&dyn Bind],
        push: &P,
        vertices: u32,
        instances: u32,
    ) {
        self.bind(
            vk::PipelineBindPoint::GRAPHICS,
            GRAPHICS_STAGES,
            pipe.0.handles(),
            bindings,
            bytemuck::bytes_of(push),
        );
        let shared = self.context().shared.clone();
        let cmd = self.raw();
        unsafe {
            if vertices > 0 && instances > 0 {
                shared.device.cmd_draw(cmd, vertices, instances, 0, 0);
            }
        }
    }

    /// Ends dynamic rendering.
    pub fn end_rendering(&mut self) {
        unsafe { self.context().shared.device.cmd_end_rendering(self.raw()) };
    }

    /// Copies the whole image into `buffer` (texels tightly packed, row 0 first; 4 bytes a
    /// texel for RGBA8 and D32), a declared transfer write: passes, copies and host reads of
    /// the buffer after it wait for it.
    pub fn copy_image_to_buffer<T: Pod>(&mut self, image: &Image2D, buffer: &Buffer<T>) {
        self.copy_image_rect_to_buffer(image, [0, 0, image.width, image.height], buffer);
    }

    /// Copies the rectangle `[x, y, width, height]` of the image into `buffer`, tightly
    /// packed (a region of interest read back without the rest of the image); a declared
    /// transfer write of the bytes it fills.
    pub fn copy_image_rect_to_buffer<T: Pod>(&mut self, image: &Image2D, rect: [u32; 4], buffer: &Buffer<T>) {
        let [x, y, w, h] = rect;
        assert!(x + w <= image.width && y + h <= image.height, "rectangle outside the image");
        assert!(buffer.bytes() >= w as u64 * h as u64 * 4, "buffer too small for the rectangle");
        self.transition(image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
        let bytes = (w as u64 * h as u64 * 4).max(4);
        self.declare(&[Use::transfer_write(BufferBinding { raw: buffer.raw(), offset: 0, range: bytes })]);
        self.keep(Resource::owner(buffer));
        let region = image_region(image)
            .image_offset(vk::Offset3D { x: x as i32, y: y as i32, z: 0 })
            .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });
        let device = &self.context().shared.device;
        unsafe {
            device.cmd_copy_image_to_buffer(
                self.raw(),
                image.raw,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                buffer.raw(),
                &[region],
            )
        };
    }

    /// Copies tightly packed texels from `buffer` into the whole image, a declared transfer
    /// read of the buffer (after the writes to it before).
    pub fn copy_buffer_to_image<T: Pod>(&mut self, buffer: &Buffer<T>, image: &Image2D) {
        let bytes = image.width as u64 * image.height as u64 * 4;
        assert!(buffer.bytes() >= bytes, "buffer too small for the image");
        self.transition(image, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
        self.declare(&[Use::transfer_read(BufferBinding { raw: buffer.raw(), offset: 0, range: bytes.max(4) })]);
        self.keep(Resource::owner(buffer));
        let region = image_region(image);
        let device = &self.context().shared.device;
        unsafe {
            device.cmd_copy_buffer_to_image(
                self.raw(),
                buffer.raw(),
                image.raw,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                &[region],
            )
        };
    }
}

fn image_region(image: &Image2D) -> vk::BufferImageCopy {
    vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers::default().aspect_mask(image.aspect()).layer_count(1))
        .image_extent(vk::Extent3D { width: image.width, height: image.height, depth: 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Location;
    use crate::testing;

    #[test]
    fn buffer_image_round_trip_keeps_texels() {
        let ctx = testing::context();
        let (w, h) = (13u32, 7u32);
        let data: Vec<u32> = (0..w * h).map(|i| i.wrapping_mul(2654435761)).collect();
        let src = ctx.upload(&data, "texels").unwrap();
        let dst = ctx.buffer::<u32>(data.len(), Location::Device, "texels back").unwrap();
        let image = ctx.image_2d(w, h, COLOR_RGBA8, "test image").unwrap();
        ctx.run(|rec| {
            rec.copy_buffer_to_image(&src, &image);
            rec.copy_image_to_buffer(&image, &dst);
            Ok(())
        })
        .unwrap();
        assert_eq!(ctx.download(&dst).unwrap(), data);
        testing::assert_no_validation_messages();
    }

    /// An image copied into a buffer and summed by a pass in the same command buffer: the
    /// copy is a declared transfer write, so the pass waits for it (the sums are right).
    #[test]
    fn a_pass_after_an_image_copy_reads_the_copied_texels() {
        let ctx = testing::context();
        let (w, h) = (29u32, 11u32);
        let data: Vec<u32> = (0..w * h).map(|i| i.wrapping_mul(2654435761) >> 12).collect();
        let src = ctx.upload(&data, "texels").unwrap();
        let texels = ctx.buffer::<u32>(data.len(), Location::Device, "texels back").unwrap();
        let sums = ctx.buffer::<u32>(data.len().div_ceil(64), Location::Device, "sums").unwrap();
        let image = ctx.image_2d(w, h, COLOR_RGBA8, "test image").unwrap();
        let kernel =
            ctx.kernel::<crate::prims::reduce::SumPush>(&crate::shaders::kernels::REDUCE_SUM_U32, &[64]).unwrap();
        ctx.run(|rec| {
            rec.copy_buffer_to_image(&src, &image);
            rec.copy_image_to_buffer(&image, &texels);
            let push = crate::prims::reduce::SumPush { n: w * h, per_group: 64 };
            rec.pass(&kernel).read(&texels).write(&sums).push(&push).dispatch_linear(sums.len() as u32)
        })
        .unwrap();
        let want: Vec<u32> = data.chunks(64).map(|c| c.iter().fold(0u32, |a, &b| a.wrapping_add(b))).collect();
        assert_eq!(ctx.download(&sums).unwrap(), want);
        testing::assert_no_validation_messages();
    }
}
