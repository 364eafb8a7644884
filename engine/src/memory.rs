//! Memory through gpu-allocator: typed buffers ([`Buffer<T>`]), host-visible staging, and
//! upload/download helpers.
//!
//! A buffer is device-local ([`Location::Device`]), host-writable ([`Location::Upload`]) or
//! host-readable ([`Location::Download`]). Buffers are shared between the compute and the
//! dedicated transfer queue family (concurrent sharing), so uploads on the transfer queue
//! need no ownership transfer. A buffer's Vulkan object and memory are shared (`Arc`) between
//! the [`Buffer`] and every submission whose passes bound it, so they are freed when the last
//! of them goes: dropping a buffer while GPU work that uses it is in flight is safe.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use ash::vk;
use bytemuck::Pod;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::MemoryLocation;

use crate::context::{Context, Shared};
use crate::error::{EngineError, Result, VkContext};

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Device-local; the fast place for kernels.
    Device,
    /// Host-visible, written by the CPU, read by the GPU (staging for uploads, uniforms).
    Upload,
    /// Host-visible and cached, written by the GPU, read by the CPU (readback).
    Download,
}

impl Location {
    fn memory(self) -> MemoryLocation {
        match self {
            Location::Device => MemoryLocation::GpuOnly,
            Location::Upload => MemoryLocation::CpuToGpu,
            Location::Download => MemoryLocation::GpuToCpu,
        }
    }
}

/// One block of memory from gpu-allocator, freed when dropped: the one owner behind every
/// buffer and image, so no error path between allocating and binding can leak it.
pub(crate) struct MemoryBlock {
    shared: Arc<Shared>,
    allocation: Option<Allocation>,
}

impl MemoryBlock {
    /// Allocates memory meeting `requirements`; `bytes` and `what` name the request in
    /// out-of-memory errors.
    pub(crate) fn allocate(
        shared: &Arc<Shared>,
        requirements: vk::MemoryRequirements,
        location: MemoryLocation,
        linear: bool,
        what: &str,
        bytes: u64,
    ) -> Result<MemoryBlock> {
        let mut allocator = shared.allocator.lock().unwrap_or_else(|p| p.into_inner());
        let allocator = allocator.as_mut().ok_or_else(|| EngineError::Allocator("the device is closed".into()))?;
        let allocation = allocator
            .allocate(&AllocationCreateDesc {
                name: what,
                requirements,
                location,
                linear,
                allocation_scheme: AllocationScheme::GpuAllocatorManaged,
            })
            .map_err(|e| match e {
                gpu_allocator::AllocationError::OutOfMemory => EngineError::OutOfMemory { bytes, what: what.into() },
                other => EngineError::Allocator(format!("{what} ({bytes} bytes): {other}")),
            })?;
        Ok(MemoryBlock { shared: shared.clone(), allocation: Some(allocation) })
    }

    pub(crate) fn memory(&self) -> vk::DeviceMemory {
        self.allocation.as_ref().map(|a| unsafe { a.memory() }).unwrap_or_default()
    }

    pub(crate) fn offset(&self) -> u64 {
        self.allocation.as_ref().map(|a| a.offset()).unwrap_or(0)
    }

    fn mapped(&self) -> Option<&[u8]> {
        self.allocation.as_ref().and_then(|a| a.mapped_slice())
    }

    /// The mapped bytes' address and length (host-visible memory only).
    fn mapped_ptr(&self) -> Option<(std::ptr::NonNull<u8>, usize)> {
        let a = self.allocation.as_ref()?;
        Some((a.mapped_ptr()?.cast(), a.size() as usize))
    }
}

impl Drop for MemoryBlock {
    fn drop(&mut self) {
        if let Some(a) = self.allocation.take() {
            if let Some(alloc) = self.shared.allocator.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                let _ = alloc.free(a);
            }
        }
    }
}

/// The Vulkan buffer and its memory, shared by a [`Buffer`] and the submissions that bound
/// it; destroyed when the last of them drops it.
pub(crate) struct BufferObject {
    shared: Arc<Shared>,
    raw: vk::Buffer,
    /// Declared last: dropped after [`Drop::drop`] destroyed the buffer bound to it.
    memory: MemoryBlock,
}

impl Drop for BufferObject {
    fn drop(&mut self) {
        unsafe { self.shared.device.destroy_buffer(self.raw, None) };
    }
}

/// A typed Vulkan buffer of `len` elements of `T`.
pub struct Buffer<T: Pod> {
    pub(crate) raw: vk::Buffer,
    len: usize,
    location: Location,
    _t: PhantomData<T>,
    object: Arc<BufferObject>,
}

/// A range of a buffer, as bound to a shader (`layout(binding = i) buffer`).
#[derive(Clone, Copy, Debug)]
pub struct BufferBinding {
    pub raw: vk::Buffer,
    pub offset: u64,
    pub range: u64,
}

/// What keeps a bound buffer's Vulkan object alive: a submission holds one per buffer its
/// commands use until the GPU has finished with them.
pub type Keep = Arc<dyn Any + Send + Sync>;

/// What a dispatch or draw binds to a shader's storage-buffer binding: a whole [`Buffer`],
/// or a range of one ([`Buffer::slice`]).
pub trait Bind {
    fn binding(&self) -> BufferBinding;

    /// The owner a submission keeps alive while its commands use the binding (`None` for a
    /// bare [`BufferBinding`], whose buffer the caller keeps alive).
    fn keep(&self) -> Option<Keep> {
        None
    }
}

impl<T: Pod> Bind for Buffer<T> {
    fn binding(&self) -> BufferBinding {
        Buffer::binding(self)
    }

    fn keep(&self) -> Option<Keep> {
        Some(self.object.clone())
    }
}

/// Elements `start..start + len` of a buffer as a declared pass binds them
/// ([`Buffer::range`]): the range, and the buffer's owner for the submission to keep.
pub struct Region<'a> {
    binding: BufferBinding,
    /// The bytes the pass declares it touches: the binding, or a part of it
    /// ([`Buffer::touching`]).
    touched: BufferBinding,
    object: &'a Arc<BufferObject>,
}

impl Bind for Region<'_> {
    fn binding(&self) -> BufferBinding {
        self.binding
    }

    fn keep(&self) -> Option<Keep> {
        Some(self.object.clone())
    }
}

/// What a declared pass binds, reads or writes ([`crate::Pass::read`]): a whole [`Buffer`] or
/// a [`Region`] of one; a submission keeps it alive until the GPU has finished with it.
pub trait Resource: Bind {
    /// The owner to keep alive.
    fn owner(&self) -> Keep;

    /// The bytes the recorder tracks the pass's access to: the whole binding unless the
    /// resource says it touches less.
    fn touched(&self) -> BufferBinding {
        self.binding()
    }
}

impl<T: Pod> Resource for Buffer<T> {
    fn owner(&self) -> Keep {
        self.object.clone()
    }
}

impl Resource for Region<'_> {
    fn owner(&self) -> Keep {
        self.object.clone()
    }

    fn touched(&self) -> BufferBinding {
        self.touched
    }
}

impl Bind for BufferBinding {
    fn binding(&self) -> BufferBinding {
        *self
    }
}

impl<T: Pod> Buffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }

    pub fn location(&self) -> Location {
        self.location
    }

    pub fn raw(&self) -> vk::Buffer {
        self.raw
    }

    /// The whole buffer as a shader binding.
    pub fn binding(&self) -> BufferBinding {
        BufferBinding { raw: self.raw, offset: 0, range: self.bytes().max(4) }
    }

    /// Elements `start..start+len` as a shader binding. The byte offset must meet the
    /// device's minStorageBufferOffsetAlignment.
    pub fn slice(&self, start: usize, len: usize) -> BufferBinding {
        assert!(start + len <= self.len, "slice {start}+{len} past buffer of {}", self.len);
        let size = std::mem::size_of::<T>() as u64;
        BufferBinding { raw: self.raw, offset: start as u64 * size, range: (len as u64 * size).max(4) }
    }

    /// Elements `start..start+len` as a declared pass binds them ([`crate::Pass::read`]).
    /// The byte offset must meet the device's minStorageBufferOffsetAlignment.
    pub fn range(&self, start: usize, len: usize) -> Region<'_> {
        let binding = self.slice(start, len);
        Region { binding, touched: binding, object: &self.object }
    }

    /// The whole buffer as a declared pass binds it, of which the pass touches only
    /// elements `start..start+len`: for kernels that address a part of a buffer through
    /// push-constant offsets (at any element, where a bound range must be aligned), so that
    /// passes on disjoint parts need no barrier between them. The part must cover every
    /// element the kernel may read or write: the recorder orders nothing outside it.
    pub fn touching(&self, start: usize, len: usize) -> Region<'_> {
        Region { binding: self.binding(), touched: self.slice(start, len), object: &self.object }
    }

    /// The mapped contents of a host-visible buffer.
    pub fn mapped(&self) -> Result<&[T]> {
        let bytes = self.object.memory.mapped().ok_or_else(not_host_visible)?;
        Ok(bytemuck::cast_slice(&bytes[..self.bytes() as usize]))
    }

    /// The mapped contents of a host-visible buffer, writable.
    pub fn mapped_mut(&mut self) -> Result<&mut [T]> {
        let n = self.bytes() as usize;
        let (ptr, size) = self.object.memory.mapped_ptr().ok_or_else(not_host_visible)?;
        assert!(n <= size, "mapping shorter than the buffer");
        // The mapping is this buffer's alone on the host: the object is shared only with
        // submissions, which hold it for the GPU and never touch the mapping, and `&mut self`
        // makes this the one host view of it.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), n) };
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// Whether a submission still holds the buffer's Vulkan object (tests of lifetimes).
    #[cfg(test)]
    pub(crate) fn watch(&self) -> std::sync::Weak<BufferObject> {
        Arc::downgrade(&self.object)
    }
}

fn not_host_visible() -> EngineError {
    EngineError::InvalidInput("buffer is not host-visible".into())
}

impl Context {
    /// A buffer of `len` elements of `T` (at least 16 bytes are allocated so empty buffers
    /// can still be bound). `what` names it in out-of-memory errors.
    pub fn buffer<T: Pod>(&self, len: usize, location: Location, what: &str) -> Result<Buffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .map(|b| (b as u64).max(16))
            .ok_or_else(|| EngineError::OutOfMemory { bytes: u64::MAX, what: what.into() })?;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::INDIRECT_BUFFER
            | vk::BufferUsageFlags::VERTEX_BUFFER
            | vk::BufferUsageFlags::INDEX_BUFFER;
        let mut families = vec![self.shared.compute.family];
        if let Some(t) = &self.shared.transfer {
            families.push(t.family);
        }
        let mut info = vk::BufferCreateInfo::default().size(bytes).usage(usage);
        info = if families.len() > 1 {
            info.sharing_mode(vk::SharingMode::CONCURRENT).queue_family_indices(&families)
        } else {
            info.sharing_mode(vk::SharingMode::EXCLUSIVE)
        };
        let device = &self.shared.device;
        let raw = unsafe { device.create_buffer(&info, None) }.vk_creating("vkCreateBuffer", bytes, what)?;
        let requirements = unsafe { device.get_buffer_memory_requirements(raw) };
        let bound = MemoryBlock::allocate(&self.shared, requirements, location.memory(), true, what, bytes).and_then(
            |memory| {
                unsafe { device.bind_buffer_memory(raw, memory.memory(), memory.offset()) }
                    .vk("vkBindBufferMemory")
                    .map(|_| memory)
            },
        );
        let memory = match bound {
            Ok(m) => m,
            Err(e) => {
                // The block (if any) frees itself; the buffer is ours to destroy.
                unsafe { device.destroy_buffer(raw, None) };
                return Err(e);
            }
        };
        let object = Arc::new(BufferObject { shared: self.shared.clone(), raw, memory });
        Ok(Buffer { raw, len, location, _t: PhantomData, object })
    }

    /// Makes `slot` hold a buffer of at least `len` elements at `location`, keeping the one
    /// it has when that is large enough (for buffers reused frame after frame); returns it.
    pub fn reuse_buffer<'a, T: Pod>(
        &self,
        slot: &'a mut Option<Buffer<T>>,
        len: usize,
        location: Location,
        what: &str,
    ) -> Result<&'a mut Buffer<T>> {
        if slot.as_ref().is_none_or(|b| b.len() < len || b.location != location) {
            // Free the old buffer before allocating its successor.
            *slot = None;
            *slot = Some(self.buffer(len, location, what)?);
        }
        Ok(slot.as_mut().unwrap())
    }

    /// A host-visible buffer holding a copy of `data`.
    pub fn upload_buffer<T: Pod>(&self, data: &[T], what: &str) -> Result<Buffer<T>> {
        let mut b = self.buffer::<T>(data.len(), Location::Upload, what)?;
        b.mapped_mut()?.copy_from_slice(data);
        Ok(b)
    }

    /// A device-local buffer holding `data`: staged, copied on the transfer queue (when the
    /// device has one), and waited for.
    pub fn upload<T: Pod>(&self, data: &[T], what: &str) -> Result<Buffer<T>> {
        let dst = self.buffer::<T>(data.len(), Location::Device, what)?;
        self.write(&dst, 0, data)?;
        Ok(dst)
    }

    /// Copies `data` into `dst` starting at element `start`, through a staging buffer, and
    /// waits.
    pub fn write<T: Pod>(&self, dst: &Buffer<T>, start: usize, data: &[T]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        assert!(start + data.len() <= dst.len(), "write past the end of the buffer");
        let staging = self.upload_buffer(data, "staging upload")?;
        let mut rec = self.transfer_recorder()?;
        rec.copy_region(&staging, 0, dst, start, data.len());
        rec.submit()?.wait()
    }

    /// Reads the whole buffer back to the host (staging copy on the transfer queue, waited for).
    pub fn download<T: Pod>(&self, src: &Buffer<T>) -> Result<Vec<T>> {
        self.download_range(src, 0, src.len())
    }

    /// Reads elements `start..start+len` back to the host.
    pub fn download_range<T: Pod>(&self, src: &Buffer<T>, start: usize, len: usize) -> Result<Vec<T>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let staging = self.buffer::<T>(len, Location::Download, "staging download")?;
        let mut rec = self.transfer_recorder()?;
        rec.copy_region(src, start, &staging, 0, len);
        rec.host_read(&staging);
        rec.submit()?.wait()?;
        Ok(staging.mapped()?.to_vec())
    }
}
