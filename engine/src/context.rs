//! The Vulkan instance, device choice (`--device N|NAME`), queues, enabled features and the
//! device's limits.
//!
//! [`Instance`] loads Vulkan once per process and can list every device; [`Context`] is one
//! opened device with its queues and allocator. Several contexts can be open at once on one
//! instance (multi-GPU work). `Context` is cheap to clone: every buffer, pipeline and command
//! recorder keeps a clone so nothing outlives the device it was made on.

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use serde::Serialize;

use crate::error::{EngineError, Result, VkContext};
use crate::select::{DeviceRef, DeviceSelector};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

static VALIDATION_MESSAGES: AtomicUsize = AtomicUsize::new(0);

/// How many validation warnings and errors this process has seen so far. Tests assert it
/// stays zero.
pub fn validation_message_count() -> usize {
    VALIDATION_MESSAGES.load(Ordering::SeqCst)
}

/// Whether validation layers are wanted: `TESSERA_VALIDATION=1` forces them on, `=0` off;
/// otherwise they are on in debug builds (tests) when the layer is installed.
fn validation_wanted() -> bool {
    match std::env::var("TESSERA_VALIDATION").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cfg!(debug_assertions),
    }
}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    let message = if data.is_null() || (*data).p_message.is_null() {
        "(no message)".into()
    } else {
        CStr::from_ptr((*data).p_message).to_string_lossy()
    };
    // The messenger is created for warnings and errors only (the loader reports its own
    // layer discovery as "info"), so every message that arrives here counts.
    VALIDATION_MESSAGES.fetch_add(1, Ordering::SeqCst);
    eprintln!("tessera: vulkan validation {severity:?}: {message}");
    vk::FALSE
}

/// The loaded Vulkan library and instance, with the validation messenger when enabled.
pub struct Instance {
    pub entry: ash::Entry,
    pub raw: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    pub validation: bool,
}

impl Instance {
    /// Loads Vulkan and creates an instance with the given extra instance extensions (the
    /// viewer passes its surface extensions; compute work passes none).
    pub fn new(extra_extensions: &[*const std::ffi::c_char]) -> Result<Arc<Instance>> {
        let entry = unsafe { ash::Entry::load() }.map_err(|e| EngineError::Loading(e.to_string()))?;
        let layers_available =
            unsafe { entry.enumerate_instance_layer_properties() }.vk("vkEnumerateInstanceLayerProperties")?;
        let has_layer = layers_available.iter().any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER));
        let validation = validation_wanted() && has_layer;
        if validation_wanted() && !has_layer && std::env::var("TESSERA_VALIDATION").as_deref() == Ok("1") {
            return Err(EngineError::Unsupported(
                "TESSERA_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not installed (apt-get install vulkan-validationlayers)".into(),
            ));
        }
        let app_name = c"tessera";
        let app = vk::ApplicationInfo::default()
            .application_name(app_name)
            .engine_name(app_name)
            .api_version(vk::API_VERSION_1_3);
        let mut extensions: Vec<*const std::ffi::c_char> = extra_extensions.to_vec();
        let layers = [VALIDATION_LAYER.as_ptr()];
        if validation {
            extensions.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        let mut info = vk::InstanceCreateInfo::default().application_info(&app).enabled_extension_names(&extensions);
        if validation {
            info = info.enabled_layer_names(&layers);
        }
        let raw = unsafe { entry.create_instance(&info, None) }.vk("vkCreateInstance")?;
        let debug = if validation {
            let loader = ash::ext::debug_utils::Instance::new(&entry, &raw);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(debug_callback));
            let messenger =
                unsafe { loader.create_debug_utils_messenger(&info, None) }.vk("vkCreateDebugUtilsMessengerEXT")?;
            Some((loader, messenger))
        } else {
            None
        };
        Ok(Arc::new(Instance { entry, raw, debug, validation }))
    }

    /// Every Vulkan 1.3 device, in the driver's order.
    pub fn devices(&self) -> Result<Vec<vk::PhysicalDevice>> {
        let all = unsafe { self.raw.enumerate_physical_devices() }.vk("vkEnumeratePhysicalDevices")?;
        Ok(all
            .into_iter()
            .filter(|&pd| unsafe { self.raw.get_physical_device_properties(pd) }.api_version >= vk::API_VERSION_1_3)
            .collect())
    }

    pub fn device_name(&self, pd: vk::PhysicalDevice) -> String {
        let props = unsafe { self.raw.get_physical_device_properties(pd) };
        props.device_name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        unsafe {
            if let Some((loader, messenger)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.raw.destroy_instance(None);
        }
    }
}

/// One memory heap of the device.
#[derive(Clone, Debug, Serialize)]
pub struct HeapInfo {
    pub bytes: u64,
    pub device_local: bool,
}

/// What the kernels need to know about a device: limits, subgroups, features. Kernels read
/// these at run time (subgroup size 8 on lavapipe, 32 on NVIDIA; shared memory 32 or 48 KiB).
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    pub index: usize,
    pub name: String,
    pub device_type: String,
    pub vendor_id: u32,
    pub api_version: String,
    pub driver_version: u32,
    pub subgroup_size: u32,
    pub subgroup_operations: Vec<&'static str>,
    pub subgroup_stages_compute: bool,
    /// Subgroup sizes a compute pipeline may require with full subgroups
    /// ([`Context::kernel_for_subgroup`]): (min, max), or `None` where the device
    /// cannot (no subgroup size control or no full compute subgroups).
    pub required_subgroup_sizes: Option<(u32, u32)>,
    /// Most subgroups a workgroup may have when it requires a subgroup size.
    pub max_workgroup_subgroups: u32,
    pub max_shared_memory_bytes: u32,
    pub max_workgroup_invocations: u32,
    pub max_workgroup_size: [u32; 3],
    pub max_workgroup_count: [u32; 3],
    pub max_storage_buffer_range: u64,
    pub max_push_constants_bytes: u32,
    pub min_storage_buffer_offset_alignment: u64,
    pub timestamp_period_ns: f32,
    pub timestamps_valid: bool,
    pub shader_float64: bool,
    pub shader_int64: bool,
    /// 64-bit integer atomics on storage buffers (Vulkan 1.2's shaderBufferInt64Atomics),
    /// enabled on the device where it has them.
    pub shader_buffer_int64_atomics: bool,
    /// `atomicAdd` on f32 in storage buffers (VK_EXT_shader_atomic_float's
    /// shaderBufferFloat32AtomicAdd), enabled on the device where it has it.
    pub shader_buffer_float32_atomic_add: bool,
    pub memory_heaps: Vec<HeapInfo>,
    pub queue_families: Vec<String>,
    pub dedicated_transfer_queue: bool,
}

impl DeviceInfo {
    /// The storage-buffer offset alignment in 4-byte elements (at least 1): a slice of a
    /// buffer of f32 or u32 must start at a multiple of it.
    pub fn offset_alignment_words(&self) -> usize {
        (self.min_storage_buffer_offset_alignment as usize / 4).max(1)
    }

    /// Whether the device supports every named subgroup operation class ("arithmetic",
    /// "ballot", "shuffle", ...).
    pub fn has_subgroup_ops(&self, ops: &[&str]) -> bool {
        ops.iter().all(|o| self.subgroup_operations.contains(o))
    }
}

/// Whether the device has VK_EXT_shader_atomic_float with shaderBufferFloat32AtomicAdd (the
/// feature structure is only queried where the extension is present).
fn has_buffer_float32_atomic_add(instance: &ash::Instance, pd: vk::PhysicalDevice) -> bool {
    let extensions = unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    if !extensions.iter().any(|e| e.extension_name_as_c_str() == Ok(ash::ext::shader_atomic_float::NAME)) {
        return false;
    }
    let mut atomic = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
    let mut features2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut atomic);
    unsafe { instance.get_physical_device_features2(pd, &mut features2) };
    atomic.shader_buffer_float32_atomic_add == vk::TRUE
}

fn describe(instance: &ash::Instance, pd: vk::PhysicalDevice, index: usize, family: u32) -> DeviceInfo {
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut size_control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup).push_next(&mut size_control);
    unsafe { instance.get_physical_device_properties2(pd, &mut props2) };
    // Vulkan 1.3's features (the engine needs 1.3's synchronization2 anyway).
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut features2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f12).push_next(&mut f13);
    unsafe { instance.get_physical_device_features2(pd, &mut features2) };
    let props = props2.properties;
    let sized = f13.subgroup_size_control == vk::TRUE
        && f13.compute_full_subgroups == vk::TRUE
        && size_control.required_subgroup_size_stages.contains(vk::ShaderStageFlags::COMPUTE);
    let limits = props.limits;
    let features = unsafe { instance.get_physical_device_features(pd) };
    let mem = unsafe { instance.get_physical_device_memory_properties(pd) };
    let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    let ops = subgroup.supported_operations;
    let named = [
        (vk::SubgroupFeatureFlags::BASIC, "basic"),
        (vk::SubgroupFeatureFlags::VOTE, "vote"),
        (vk::SubgroupFeatureFlags::ARITHMETIC, "arithmetic"),
        (vk::SubgroupFeatureFlags::BALLOT, "ballot"),
        (vk::SubgroupFeatureFlags::SHUFFLE, "shuffle"),
        (vk::SubgroupFeatureFlags::SHUFFLE_RELATIVE, "shuffle_relative"),
        (vk::SubgroupFeatureFlags::CLUSTERED, "clustered"),
        (vk::SubgroupFeatureFlags::QUAD, "quad"),
    ];
    let v = props.api_version;
    DeviceInfo {
        index,
        name: props.device_name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default(),
        device_type: format!("{:?}", props.device_type),
        vendor_id: props.vendor_id,
        api_version: format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v)),
        driver_version: props.driver_version,
        subgroup_size: subgroup.subgroup_size,
        subgroup_operations: named.iter().filter(|(f, _)| ops.contains(*f)).map(|(_, n)| *n).collect(),
        subgroup_stages_compute: subgroup.supported_stages.contains(vk::ShaderStageFlags::COMPUTE),
        required_subgroup_sizes: sized.then_some((size_control.min_subgroup_size, size_control.max_subgroup_size)),
        max_workgroup_subgroups: size_control.max_compute_workgroup_subgroups,
        max_shared_memory_bytes: limits.max_compute_shared_memory_size,
        max_workgroup_invocations: limits.max_compute_work_group_invocations,
        max_workgroup_size: limits.max_compute_work_group_size,
        max_workgroup_count: limits.max_compute_work_group_count,
        max_storage_buffer_range: limits.max_storage_buffer_range as u64,
        max_push_constants_bytes: limits.max_push_constants_size,
        min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
        timestamp_period_ns: limits.timestamp_period,
        timestamps_valid: families.get(family as usize).map(|f| f.timestamp_valid_bits > 0).unwrap_or(false),
        shader_float64: features.shader_float64 == vk::TRUE,
        shader_int64: features.shader_int64 == vk::TRUE,
        shader_buffer_int64_atomics: features.shader_int64 == vk::TRUE && f12.shader_buffer_int64_atomics == vk::TRUE,
        shader_buffer_float32_atomic_add: has_buffer_float32_atomic_add(instance, pd),
        memory_heaps: mem
            .memory_heaps_as_slice()
            .iter()
            .map(|h| HeapInfo { bytes: h.size, device_local: h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL) })
            .collect(),
        queue_families: families.iter().map(|f| format!("{:?} x{}", f.queue_flags, f.queue_count)).collect(),
        dedicated_transfer_queue: dedicated_transfer_family(&families).is_some(),
    }
}

fn dedicated_transfer_family(families: &[vk::QueueFamilyProperties]) -> Option<u32> {
    families
        .iter()
        .position(|f| {
            f.queue_flags.contains(vk::QueueFlags::TRANSFER)
                && !f.queue_flags.intersects(vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE)
        })
        .map(|i| i as u32)
}

/// A queue with its own timeline semaphore. Submissions take the lock, so recorders on
/// several threads can submit safely.
pub(crate) struct Queue {
    pub family: u32,
    pub raw: Mutex<vk::Queue>,
    pub timeline: vk::Semaphore,
    pub next_value: AtomicU64,
}

pub(crate) struct Shared {
    pub instance: Arc<Instance>,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub push_descriptor: ash::khr::push_descriptor::Device,
    /// VK_KHR_pipeline_executable_properties where the device has it: compute pipelines are
    /// then created with their compiler statistics (registers, spills) kept for
    /// [`crate::ComputePipeline::statistics`].
    pub executable_properties: Option<ash::khr::pipeline_executable_properties::Device>,
    pub allocator: Mutex<Option<Allocator>>,
    pub compute: Queue,
    pub transfer: Option<Queue>,
    pub info: DeviceInfo,
    pub swapchain_enabled: bool,
}

/// One opened device: queues, allocator, limits. Clone freely.
#[derive(Clone)]
pub struct Context {
    pub(crate) shared: Arc<Shared>,
}

/// Options for [`Context::open_with`].
#[derive(Default)]
pub struct ContextOptions {
    /// The one device to open, as an index into [`Instance::devices`] (see
    /// [`Instance::select`]); `None` opens the default device.
    pub index: Option<usize>,
    /// Also enable VK_KHR_swapchain and require a queue that can present (the viewer).
    pub swapchain: bool,
}

impl Context {
    /// Opens the one device `selector` names (see [`Instance::select`]) for compute work, on
    /// a new instance.
    pub fn open(selector: &DeviceSelector) -> Result<Context> {
        let instance = Instance::new(&[])?;
        let index = instance.select_one(selector)?;
        Context::open_with(instance, ContextOptions { index: Some(index), swapchain: false })
    }

    /// Opens the default device (the first discrete GPU, else integrated, else CPU).
    pub fn open_default() -> Result<Context> {
        Context::open(&DeviceSelector::Auto)
    }

    /// Opens every device `selector` names on one instance (multi-GPU work); `all` opens
    /// every GPU.
    pub fn open_each(selector: &DeviceSelector) -> Result<Vec<Context>> {
        let instance = Instance::new(&[])?;
        instance
            .select(selector)?
            .into_iter()
            .map(|i| Context::open_with(instance.clone(), ContextOptions { index: Some(i), swapchain: false }))
            .collect()
    }

    /// Opens the device of MPI rank `rank` (see [`Instance::select_for_rank`]).
    pub fn open_for_rank(selector: &DeviceSelector, rank: usize) -> Result<Context> {
        let instance = Instance::new(&[])?;
        let index = instance.select_for_rank(selector, rank)?;
        Context::open_with(instance, ContextOptions { index: Some(index), swapchain: false })
    }

    /// Opens a device on an existing instance.
    pub fn open_with(instance: Arc<Instance>, options: ContextOptions) -> Result<Context> {
        let index = match options.index {
            Some(i) => i,
            None => instance.select_one(&DeviceSelector::Auto)?,
        };
        let physical = *instance
            .devices()?
            .get(index)
            .ok_or_else(|| EngineError::DeviceNotFound(index.to_string(), String::new()))?;
        let raw = &instance.raw;
        let families = unsafe { raw.get_physical_device_queue_family_properties(physical) };
        // The universal family (graphics + compute) first: compute work and presentation share it.
        let compute_family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE | vk::QueueFlags::GRAPHICS))
            .or_else(|| families.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE)))
            .ok_or_else(|| EngineError::Unsupported("device has no compute queue".into()))?
            as u32;
        let transfer_family = dedicated_transfer_family(&families);

        let available = unsafe { raw.enumerate_device_extension_properties(physical) }
            .vk("vkEnumerateDeviceExtensionProperties")?;
        let has_ext = |name: &CStr| available.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
        let mut extensions = vec![ash::khr::push_descriptor::NAME.as_ptr()];
        if !has_ext(ash::khr::push_descriptor::NAME) {
            return Err(EngineError::Unsupported("VK_KHR_push_descriptor is required".into()));
        }
        if options.swapchain {
            extensions.push(ash::khr::swapchain::NAME.as_ptr());
        }

        // Enable what the kernels use where the device has it. An extension's feature
        // structure is only chained where the device has the extension.
        let has_statistics = has_ext(ash::khr::pipeline_executable_properties::NAME);
        let supported = unsafe { raw.get_physical_device_features(physical) };
        let mut s11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut s12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut s13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut executable_info = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut query =
            vk::PhysicalDeviceFeatures2::default().push_next(&mut s11).push_next(&mut s12).push_next(&mut s13);
        if has_statistics {
            query = query.push_next(&mut executable_info);
        }
        unsafe { raw.get_physical_device_features2(physical, &mut query) };
        let statistics = has_statistics && executable_info.pipeline_executable_info == vk::TRUE;
        if statistics {
            extensions.push(ash::khr::pipeline_executable_properties::NAME.as_ptr());
        }
        let mut executable_features =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
        let float_atomic_add = has_buffer_float32_atomic_add(raw, physical);
        if float_atomic_add {
            extensions.push(ash::ext::shader_atomic_float::NAME.as_ptr());
        }
        let mut atomic_float_features =
            vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default().shader_buffer_float32_atomic_add(true);
        if s12.timeline_semaphore == vk::FALSE || s13.synchronization2 == vk::FALSE {
            return Err(EngineError::Unsupported("timeline semaphores and synchronization2 are required".into()));
        }
        let features = vk::PhysicalDeviceFeatures::default()
            .shader_float64(supported.shader_float64 == vk::TRUE)
            .shader_int64(supported.shader_int64 == vk::TRUE)
            .shader_int16(supported.shader_int16 == vk::TRUE);
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default()
            .storage_buffer16_bit_access(s11.storage_buffer16_bit_access == vk::TRUE);
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
            .timeline_semaphore(true)
            .scalar_block_layout(s12.scalar_block_layout == vk::TRUE)
            .storage_buffer8_bit_access(s12.storage_buffer8_bit_access == vk::TRUE)
            .shader_int8(s12.shader_int8 == vk::TRUE)
            .shader_buffer_int64_atomics(
                supported.shader_int64 == vk::TRUE && s12.shader_buffer_int64_atomics == vk::TRUE,
            )
            .shader_float16(s12.shader_float16 == vk::TRUE)
            .host_query_reset(s12.host_query_reset == vk::TRUE);
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default()
            .synchronization2(true)
            .dynamic_rendering(s13.dynamic_rendering == vk::TRUE)
            .maintenance4(s13.maintenance4 == vk::TRUE)
            .subgroup_size_control(s13.subgroup_size_control == vk::TRUE)
            .compute_full_subgroups(s13.compute_full_subgroups == vk::TRUE);

        let priorities = [1.0f32];
        let mut queue_infos =
            vec![vk::DeviceQueueCreateInfo::default().queue_family_index(compute_family).queue_priorities(&priorities)];
        if let Some(t) = transfer_family {
            queue_infos.push(vk::DeviceQueueCreateInfo::default().queue_family_index(t).queue_priorities(&priorities));
        }
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_infos)
            .enabled_extension_names(&extensions)
            .enabled_features(&features)
            .push_next(&mut f11)
            .push_next(&mut f12)
            .push_next(&mut f13);
        let info = if statistics { info.push_next(&mut executable_features) } else { info };
        let info = if float_atomic_add { info.push_next(&mut atomic_float_features) } else { info };
        let device = unsafe { raw.create_device(physical, &info, None) }.vk("vkCreateDevice")?;
        let push_descriptor = ash::khr::push_descriptor::Device::new(raw, &device);
        let executable_properties =
            statistics.then(|| ash::khr::pipeline_executable_properties::Device::new(raw, &device));

        // From here on the device is ours to destroy if a later step fails.
        let make_queue = |family: u32| -> Result<Queue> {
            let mut ty =
                vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
            let timeline =
                unsafe { device.create_semaphore(&vk::SemaphoreCreateInfo::default().push_next(&mut ty), None) }
                    .vk("vkCreateSemaphore")?;
            Ok(Queue {
                family,
                raw: Mutex::new(unsafe { device.get_device_queue(family, 0) }),
                timeline,
                next_value: AtomicU64::new(1),
            })
        };
        let mut queues: Vec<Queue> = Vec::new();
        let made = (|| {
            queues.push(make_queue(compute_family)?);
            if let Some(t) = transfer_family {
                queues.push(make_queue(t)?);
            }
            Allocator::new(&AllocatorCreateDesc {
                instance: raw.clone(),
                device: device.clone(),
                physical_device: physical,
                debug_settings: Default::default(),
                buffer_device_address: false,
                allocation_sizes: Default::default(),
            })
            .map_err(|e| EngineError::Allocator(e.to_string()))
        })();
        let allocator = match made {
            Ok(a) => a,
            Err(e) => {
                unsafe {
                    for q in &queues {
                        device.destroy_semaphore(q.timeline, None);
                    }
                    device.destroy_device(None);
                }
                return Err(e);
            }
        };
        let mut queues = queues.into_iter();
        let compute = queues.next().expect("the compute queue");
        let transfer = queues.next();

        let info = describe(raw, physical, index, compute_family);
        Ok(Context {
            shared: Arc::new(Shared {
                instance,
                physical,
                device,
                push_descriptor,
                executable_properties,
                allocator: Mutex::new(Some(allocator)),
                compute,
                transfer,
                info,
                swapchain_enabled: options.swapchain,
            }),
        })
    }

    /// The device's limits, subgroup properties and features.
    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// Refuses `bytes` that one storage-buffer binding would have to hold where the device
    /// binds less (`maxStorageBufferRange`: 128 MiB on lavapipe, 4 GiB on NVIDIA): a kernel
    /// bound to such a buffer reads and writes past the bound range. `what` names the data.
    pub fn check_binding(&self, bytes: u64, what: &str) -> Result<()> {
        let range = self.info().max_storage_buffer_range;
        if bytes > range {
            return Err(EngineError::BindingRange {
                what: what.to_string(),
                bytes,
                range,
                device: self.info().name.clone(),
            });
        }
        Ok(())
    }

    /// The raw `ash::Device`, for code in the engine that builds its own Vulkan objects.
    pub fn device(&self) -> &ash::Device {
        &self.shared.device
    }

    pub fn instance(&self) -> &Arc<Instance> {
        &self.shared.instance
    }

    pub fn physical_device(&self) -> vk::PhysicalDevice {
        self.shared.physical
    }

    /// The queue family compute (and graphics/present) work is submitted to.
    pub fn compute_family(&self) -> u32 {
        self.shared.compute.family
    }

    /// Whether this context was opened with VK_KHR_swapchain.
    pub fn swapchain_enabled(&self) -> bool {
        self.shared.swapchain_enabled
    }

    /// Waits until the device is idle. Only for teardown and tests, never in timed paths.
    pub fn wait_idle(&self) -> Result<()> {
        unsafe { self.shared.device.device_wait_idle() }.vk("vkDeviceWaitIdle")
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        unsafe {
            let _ = self.device.device_wait_idle();
            // The allocator must release its memory blocks before the device goes.
            self.allocator.lock().unwrap().take();
            self.device.destroy_semaphore(self.compute.timeline, None);
            if let Some(t) = &self.transfer {
                self.device.destroy_semaphore(t.timeline, None);
            }
            self.device.destroy_device(None);
        }
    }
}

/// Every device on this machine, described (for `gpu-info`).
pub fn describe_all() -> Result<Vec<DeviceInfo>> {
    let instance = Instance::new(&[])?;
    let devices = instance.devices()?;
    Ok(devices
        .iter()
        .enumerate()
        .map(|(i, &pd)| {
            let families = unsafe { instance.raw.get_physical_device_queue_family_properties(pd) };
            let family = families.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE)).unwrap_or(0);
            describe(&instance.raw, pd, i, family as u32)
        })
        .collect())
}

/// How the default device is ranked: discrete before integrated before virtual before CPU.
fn type_rank(kind: vk::PhysicalDeviceType) -> u8 {
    match kind {
        vk::PhysicalDeviceType::DISCRETE_GPU => 0,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
        vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
        vk::PhysicalDeviceType::CPU => 3,
        _ => 4,
    }
}

impl Instance {
    /// The indices (into [`Instance::devices`]) that `selector` names. An index or name that
    /// matches no device is an error listing the devices there are.
    pub fn select(&self, selector: &DeviceSelector) -> Result<Vec<usize>> {
        let devices = self.devices()?;
        if devices.is_empty() {
            return Err(EngineError::NoDevice);
        }
        let names: Vec<String> = devices.iter().map(|&d| self.device_name(d)).collect();
        let kinds: Vec<vk::PhysicalDeviceType> =
            devices.iter().map(|&d| unsafe { self.raw.get_physical_device_properties(d) }.device_type).collect();
        let not_found = |what: &dyn std::fmt::Display| {
            let listed = names.iter().enumerate().map(|(i, n)| format!("{i}: {n}")).collect::<Vec<_>>().join(", ");
            EngineError::DeviceNotFound(what.to_string(), listed)
        };
        match selector {
            DeviceSelector::Auto => Ok(vec![(0..devices.len()).min_by_key(|&i| (type_rank(kinds[i]), i)).unwrap_or(0)]),
            DeviceSelector::All => {
                let gpus: Vec<usize> =
                    (0..devices.len()).filter(|&i| kinds[i] != vk::PhysicalDeviceType::CPU).collect();
                Ok(if gpus.is_empty() { (0..devices.len()).collect() } else { gpus })
            }
            DeviceSelector::Devices(list) => list
                .iter()
                .map(|one| match one {
                    DeviceRef::Index(i) if *i < devices.len() => Ok(*i),
                    DeviceRef::Index(_) => Err(not_found(one)),
                    DeviceRef::Name(n) => {
                        let lower = n.to_lowercase();
                        names.iter().position(|name| name.to_lowercase().contains(&lower)).ok_or_else(|| not_found(one))
                    }
                })
                .collect(),
        }
    }

    /// The one device `selector` names; a selector of several devices is an error, since
    /// the caller runs on one.
    pub fn select_one(&self, selector: &DeviceSelector) -> Result<usize> {
        let picked = self.select(selector)?;
        match picked.as_slice() {
            [one] => Ok(*one),
            _ => Err(EngineError::SeveralDevices { selector: selector.to_string(), count: picked.len() }),
        }
    }

    /// The device of MPI rank (or worker) `rank`: the devices the selector names (every GPU
    /// for the default), taken in turn, so rank i uses entry i mod their count.
    pub fn select_for_rank(&self, selector: &DeviceSelector, rank: usize) -> Result<usize> {
        let pool = match selector {
            DeviceSelector::Auto => self.select(&DeviceSelector::All)?,
            other => self.select(other)?,
        };
        Ok(pool[rank % pool.len()])
    }
}

#[cfg(test)]
mod tests {
    /// The context reports float atomic addition as the device list does, and lavapipe,
    /// which has it, gets it enabled (its kernels' tests would fail validation otherwise).
    #[test]
    fn float_atomic_add_is_reported_where_the_device_has_it() {
        let ctx = crate::testing::context();
        let info = ctx.info();
        let listed = &super::describe_all().unwrap()[info.index];
        assert_eq!(listed.shader_buffer_float32_atomic_add, info.shader_buffer_float32_atomic_add);
        if info.name.contains("llvmpipe") {
            assert!(info.shader_buffer_float32_atomic_add);
        }
    }

    /// A binding of the device's whole range passes; one byte more is refused, naming the
    /// data, the size and the device.
    #[test]
    fn bindings_past_the_range_are_refused() {
        let ctx = crate::testing::context();
        let range = ctx.info().max_storage_buffer_range;
        ctx.check_binding(range, "a full buffer").unwrap();
        let err = ctx.check_binding(range + 1, "one byte more").unwrap_err().to_string();
        assert!(err.contains("one byte more needs") && err.contains("binds at most"), "{err}");
        assert!(err.contains(&ctx.info().name), "{err}");
    }
}
