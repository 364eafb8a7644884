//! Presentation: a window surface, its swapchain, and the per-frame acquire / copy /
//! present loop for apps that render with compute kernels into a buffer.
//!
//! The engine stays windowing-library-agnostic: it takes raw display and window handles
//! (`raw-window-handle` 0.6). Usage:
//!
//! 1. `unsafe { present::open_window(&selector, &window, width, height) }` opens the
//!    device with presentation enabled and a [`Presenter`] for the window (it does what
//!    `Instance::new(&present::instance_extensions(display)?)`, `Context::open_with(instance,
//!    ContextOptions { swapchain: true, .. })` and `Presenter::new` do, in that order);
//! 3. each frame: record and submit the compute work that fills a `Buffer<u32>` of
//!    `width * height` packed pixels in [`Presenter::format`]'s byte order (row 0 at the
//!    top), then [`Presenter::present`] it. The copy is submitted after the compute work on
//!    the same queue and begins with a barrier, so it sees the finished pixels; only a binary
//!    semaphore from acquire and one to present are used, and frame slots are recycled with a
//!    timeline semaphore (no `vkQueueWaitIdle`, no host copy of the pixels).
//! 4. On [`PresentOutcome::Resized`] (or a window resize), call [`Presenter::resize`] and
//!    render at the new [`Presenter::extent`].

use std::ffi::c_char;

use ash::vk;
use raw_window_handle::{HasDisplayHandle, HasWindowHandle, RawDisplayHandle, RawWindowHandle};

use crate::context::{Context, ContextOptions, Instance};
use crate::error::{EngineError, Result, VkContext};
use crate::memory::Buffer;
use crate::select::DeviceSelector;

/// Frames that may be in flight at once.
const SLOTS: usize = 2;

/// The instance extensions a surface for `display` needs.
pub fn instance_extensions(display: RawDisplayHandle) -> Result<Vec<*const c_char>> {
    Ok(ash_window::enumerate_required_extensions(display)
        .map_err(|e| EngineError::Unsupported(format!("no Vulkan surface support for this display: {e}")))?
        .to_vec())
}

/// Opens the one device `selector` names with presentation enabled, and a presenter for
/// `window` (any windowing library's window: winit's in the viewers), the setup every
/// viewer shares.
///
/// # Safety
/// `window` must outlive the returned presenter.
pub unsafe fn open_window<W: HasDisplayHandle + HasWindowHandle>(
    selector: &DeviceSelector,
    window: &W,
    width: u32,
    height: u32,
) -> Result<(Context, Presenter)> {
    let handle_error = |e: raw_window_handle::HandleError| EngineError::Unsupported(format!("window handle: {e}"));
    let display = window.display_handle().map_err(handle_error)?.as_raw();
    let raw_window = window.window_handle().map_err(handle_error)?.as_raw();
    let instance = Instance::new(&instance_extensions(display)?)?;
    let index = instance.select_one(selector)?;
    let ctx = Context::open_with(instance, ContextOptions { index: Some(index), swapchain: true })?;
    let presenter = Presenter::new(&ctx, display, raw_window, width.max(1), height.max(1))?;
    Ok((ctx, presenter))
}

/// What [`Presenter::present`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresentOutcome {
    /// The frame was queued for display.
    Presented,
    /// The swapchain no longer matches the window; it was rebuilt (the frame was dropped).
    Resized,
}

/// A surface with its swapchain and per-frame synchronisation.
pub struct Presenter {
    ctx: Context,
    surface_loader: ash::khr::surface::Instance,
    swapchain_loader: ash::khr::swapchain::Device,
    surface: vk::SurfaceKHR,
    swapchain: vk::SwapchainKHR,
    images: Vec<vk::Image>,
    format: vk::Format,
    extent: vk::Extent2D,
    pool: vk::CommandPool,
    commands: [vk::CommandBuffer; SLOTS],
    acquired: [vk::Semaphore; SLOTS],
    /// One per swapchain image: signalled by the copy, waited on by present.
    ready: Vec<vk::Semaphore>,
    /// Signalled with the frame number when a slot's copy completes.
    timeline: vk::Semaphore,
    frame: u64,
}

impl Presenter {
    /// Creates a surface for the window and a swapchain of `width x height` (or the size
    /// the surface dictates).
    ///
    /// # Safety
    /// The handles must be valid, and the window must outlive the presenter.
    pub unsafe fn new(
        ctx: &Context,
        display: RawDisplayHandle,
        window: RawWindowHandle,
        width: u32,
        height: u32,
    ) -> Result<Presenter> {
        if !ctx.swapchain_enabled() {
            return Err(EngineError::Unsupported("the context was opened without swapchain support".into()));
        }
        let instance = ctx.instance();
        let surface = ash_window::create_surface(&instance.entry, &instance.raw, display, window, None)
            .vk("vkCreateSurfaceKHR")?;
        let surface_loader = ash::khr::surface::Instance::new(&instance.entry, &instance.raw);
        let supported = surface_loader
            .get_physical_device_surface_support(ctx.physical_device(), ctx.compute_family(), surface)
            .vk("vkGetPhysicalDeviceSurfaceSupportKHR")?;
        if !supported {
            surface_loader.destroy_surface(surface, None);
            return Err(EngineError::Unsupported("the device's universal queue cannot present to this window".into()));
        }
        let swapchain_loader = ash::khr::swapchain::Device::new(&instance.raw, ctx.device());
        let device = ctx.device();
        let pool = device
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(ctx.compute_family())
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
            .vk("vkCreateCommandPool")?;
        let buffers = device
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(SLOTS as u32),
            )
            .vk("vkAllocateCommandBuffers")?;
        let binary = || device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None).vk("vkCreateSemaphore");
        let acquired = [binary()?, binary()?];
        let mut ty =
            vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
        let timeline = device
            .create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut ty), None)
            .vk("vkCreateSemaphore")?;
        let mut p = Presenter {
            ctx: ctx.clone(),
            surface_loader,
            swapchain_loader,
            surface,
            swapchain: vk::SwapchainKHR::null(),
            images: Vec::new(),
            format: vk::Format::UNDEFINED,
            extent: vk::Extent2D { width, height },
            pool,
            commands: [buffers[0], buffers[1]],
            acquired,
            ready: Vec::new(),
            timeline,
            frame: 0,
        };
        p.resize(width, height)?;
        Ok(p)
    }

    /// The swapchain's pixel format: `B8G8R8A8_UNORM` or `R8G8B8A8_UNORM`.
    pub fn format(&self) -> vk::Format {
        self.format
    }

    /// Whether pixels are stored B, G, R, A (else R, G, B, A).
    pub fn is_bgra(&self) -> bool {
        self.format == vk::Format::B8G8R8A8_UNORM
    }

    /// The swapchain size: the size of the pixel buffer [`Presenter::present`] expects.
    pub fn extent(&self) -> (u32, u32) {
        (self.extent.width, self.extent.height)
    }

    /// Waits for every frame in flight (timeline), e.g. before resizing or teardown.
    fn wait_frames(&self) -> Result<()> {
        let semaphores = [self.timeline];
        let values = [self.frame];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
        unsafe { self.ctx.device().wait_semaphores(&info, u64::MAX) }.vk("vkWaitSemaphores")
    }

    /// Rebuilds the swapchain for a window of `width x height`.
    pub fn resize(&mut self, width: u32, height: u32) -> Result<()> {
        self.wait_frames()?;
        let pd = self.ctx.physical_device();
        let caps = unsafe { self.surface_loader.get_physical_device_surface_capabilities(pd, self.surface) }
            .vk("vkGetPhysicalDeviceSurfaceCapabilitiesKHR")?;
        let formats = unsafe { self.surface_loader.get_physical_device_surface_formats(pd, self.surface) }
            .vk("vkGetPhysicalDeviceSurfaceFormatsKHR")?;
        let format = formats
            .iter()
            .find(|f| f.format == vk::Format::B8G8R8A8_UNORM)
            .or_else(|| formats.iter().find(|f| f.format == vk::Format::R8G8B8A8_UNORM))
            .copied()
            .ok_or_else(|| EngineError::Unsupported("the surface offers no 8-bit UNORM RGBA/BGRA format".into()))?;
        if !caps.supported_usage_flags.contains(vk::ImageUsageFlags::TRANSFER_DST) {
            return Err(EngineError::Unsupported("swapchain images cannot be copy destinations".into()));
        }
        let extent = if caps.current_extent.width != u32::MAX {
            caps.current_extent
        } else {
            vk::Extent2D {
                width: width.clamp(caps.min_image_extent.width, caps.max_image_extent.width),
                height: height.clamp(caps.min_image_extent.height, caps.max_image_extent.height),
            }
        };
        let extent = vk::Extent2D { width: extent.width.max(1), height: extent.height.max(1) };
        let mut count = caps.min_image_count + 1;
        if caps.max_image_count > 0 {
            count = count.min(caps.max_image_count);
        }
        let old = self.swapchain;
        let info = vk::SwapchainCreateInfoKHR::default()
            .surface(self.surface)
            .min_image_count(count)
            .image_format(format.format)
            .image_color_space(format.color_space)
            .image_extent(extent)
            .image_array_layers(1)
            .image_usage(vk::ImageUsageFlags::TRANSFER_DST)
            .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
            .pre_transform(caps.current_transform)
            .composite_alpha(vk::CompositeAlphaFlagsKHR::OPAQUE)
            .present_mode(vk::PresentModeKHR::FIFO)
            .clipped(true)
            .old_swapchain(old);
        let swapchain = unsafe { self.swapchain_loader.create_swapchain(&info, None) }.vk("vkCreateSwapchainKHR")?;
        let device = self.ctx.device();
        unsafe {
            if old != vk::SwapchainKHR::null() {
                self.swapchain_loader.destroy_swapchain(old, None);
            }
            for s in self.ready.drain(..) {
                device.destroy_semaphore(s, None);
            }
        }
        self.swapchain = swapchain;
        self.images = unsafe { self.swapchain_loader.get_swapchain_images(swapchain) }.vk("vkGetSwapchainImagesKHR")?;
        for _ in 0..self.images.len() {
            self.ready.push(
                unsafe { device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) }
                    .vk("vkCreateSemaphore")?,
            );
        }
        self.format = format.format;
        self.extent = extent;
        Ok(())
    }

    /// Copies `pixels` (packed, `extent` sized, in the swapchain's byte order) into the
    /// next swapchain image and presents it. Submit the work that writes `pixels` before
    /// calling this.
    pub fn present(&mut self, pixels: &Buffer<u32>) -> Result<PresentOutcome> {
        let (w, h) = self.extent();
        if pixels.len() < (w * h) as usize {
            return Err(EngineError::InvalidInput(format!(
                "present: {} pixels given for a {w}x{h} swapchain",
                pixels.len()
            )));
        }
        let device = self.ctx.device();
        let slot = (self.frame % SLOTS as u64) as usize;
        // The slot's previous use (frame - SLOTS + 1) must have completed.
        if self.frame >= SLOTS as u64 {
            let semaphores = [self.timeline];
            let values = [self.frame + 1 - SLOTS as u64];
            let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
            unsafe { device.wait_semaphores(&info, u64::MAX) }.vk("vkWaitSemaphores")?;
        }
        let acquire = unsafe {
            self.swapchain_loader.acquire_next_image(self.swapchain, u64::MAX, self.acquired[slot], vk::Fence::null())
        };
        let index = match acquire {
            Ok((i, _)) => i as usize,
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {
                self.resize(w, h)?;
                return Ok(PresentOutcome::Resized);
            }
            Err(result) => return Err(EngineError::Vulkan { call: "vkAcquireNextImageKHR", result }),
        };
        let image = self.images[index];
        let cmd = self.commands[slot];
        unsafe {
            device.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()).vk("vkResetCommandBuffer")?;
            device
                .begin_command_buffer(
                    cmd,
                    &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
                .vk("vkBeginCommandBuffer")?;
            // Earlier submissions on this queue (the compute work writing `pixels`) are in
            // this barrier's first scope.
            let memory = [vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
                .src_access_mask(vk::AccessFlags2::MEMORY_WRITE)
                .dst_stage_mask(vk::PipelineStageFlags2::COPY)
                .dst_access_mask(vk::AccessFlags2::TRANSFER_READ)];
            let to_dst = [transition(
                image,
                (vk::PipelineStageFlags2::COPY, vk::AccessFlags2::NONE, vk::ImageLayout::UNDEFINED),
                (
                    vk::PipelineStageFlags2::COPY,
                    vk::AccessFlags2::TRANSFER_WRITE,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                ),
            )];
            device.cmd_pipeline_barrier2(
                cmd,
                &vk::DependencyInfo::default().memory_barriers(&memory).image_memory_barriers(&to_dst),
            );
            let region = vk::BufferImageCopy::default()
                .buffer_row_length(w)
                .buffer_image_height(h)
                .image_subresource(
                    vk::ImageSubresourceLayers::default().aspect_mask(vk::ImageAspectFlags::COLOR).layer_count(1),
                )
                .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });
            device.cmd_copy_buffer_to_image(cmd, pixels.raw(), image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, &[region]);
            let to_present = [transition(
                image,
                (
                    vk::PipelineStageFlags2::COPY,
                    vk::AccessFlags2::TRANSFER_WRITE,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                ),
                (vk::PipelineStageFlags2::NONE, vk::AccessFlags2::NONE, vk::ImageLayout::PRESENT_SRC_KHR),
            )];
            device.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().image_memory_barriers(&to_present));
            device.end_command_buffer(cmd).vk("vkEndCommandBuffer")?;
        }
        self.frame += 1;
        let waits = [vk::SemaphoreSubmitInfo::default()
            .semaphore(self.acquired[slot])
            .stage_mask(vk::PipelineStageFlags2::COPY)];
        let signals = [
            vk::SemaphoreSubmitInfo::default()
                .semaphore(self.ready[index])
                .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS),
            vk::SemaphoreSubmitInfo::default()
                .semaphore(self.timeline)
                .value(self.frame)
                .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS),
        ];
        let cmds = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
        let submit = vk::SubmitInfo2::default()
            .wait_semaphore_infos(&waits)
            .command_buffer_infos(&cmds)
            .signal_semaphore_infos(&signals);
        let queue = self.ctx.shared.compute.raw.lock().unwrap();
        unsafe { device.queue_submit2(*queue, &[submit], vk::Fence::null()) }.vk("vkQueueSubmit2")?;
        let swapchains = [self.swapchain];
        let indices = [index as u32];
        let wait = [self.ready[index]];
        let info = vk::PresentInfoKHR::default().wait_semaphores(&wait).swapchains(&swapchains).image_indices(&indices);
        let result = unsafe { self.swapchain_loader.queue_present(*queue, &info) };
        drop(queue);
        match result {
            Ok(false) => Ok(PresentOutcome::Presented),
            Ok(true) | Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {
                self.resize(w, h)?;
                Ok(PresentOutcome::Resized)
            }
            Err(result) => Err(EngineError::Vulkan { call: "vkQueuePresentKHR", result }),
        }
    }
}

/// Stage, access and layout on one side of an image barrier.
type ImageScope = (vk::PipelineStageFlags2, vk::AccessFlags2, vk::ImageLayout);

/// A barrier moving the whole colour `image` (one level, one layer) from `src` to `dst`.
fn transition(image: vk::Image, src: ImageScope, dst: ImageScope) -> vk::ImageMemoryBarrier2<'static> {
    vk::ImageMemoryBarrier2::default()
        .src_stage_mask(src.0)
        .src_access_mask(src.1)
        .old_layout(src.2)
        .dst_stage_mask(dst.0)
        .dst_access_mask(dst.1)
        .new_layout(dst.2)
        .image(image)
        .subresource_range(
            vk::ImageSubresourceRange::default().aspect_mask(vk::ImageAspectFlags::COLOR).level_count(1).layer_count(1),
        )
}

impl Drop for Presenter {
    fn drop(&mut self) {
        let _ = self.wait_frames();
        // Presentation may still hold the last images; the device must be idle before the
        // swapchain goes (teardown only).
        let _ = self.ctx.wait_idle();
        let device = self.ctx.device();
        unsafe {
            for s in self.ready.drain(..).chain(self.acquired).chain([self.timeline]) {
                device.destroy_semaphore(s, None);
            }
            device.destroy_command_pool(self.pool, None);
            self.swapchain_loader.destroy_swapchain(self.swapchain, None);
            self.surface_loader.destroy_surface(self.surface, None);
        }
    }
}
