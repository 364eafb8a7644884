//! The C ABI of the compositing library (`include/tessera_composite.h`): a thin shell over
//! [`composite::compositor::Compositor`]. Every entry point checks its arguments, catches
//! any panic (a panic never crosses into C), returns 0 or a negative code, and keeps the
//! message for `tc_last_error`. Nothing here aborts, exits or finalises MPI.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use composite::compositor::{
    Backend, Color, ColorFormat, ColorMut, Compositor, DepthFormat, Settings, Times, Viewport,
};
use composite::schedule::Strategy;
use composite::types::Op;
use engine::DeviceSelector;
use mpi::ffi::MPI_Comm;

/// An argument is invalid (a null pointer, a size, a format, a rank, an order).
const TC_ERR_ARGUMENT: c_int = -1;
/// The compositing failed (MPI, the device, or another rank's bad argument).
const TC_ERR_FAILED: c_int = -2;
/// A bug: the library panicked (caught at the boundary).
const TC_ERR_INTERNAL: c_int = -3;

/// A compositor and the text of its last error. A context made with bad settings holds no
/// compositor: `tc_create` returns NULL only for an unusable communicator, so such a context
/// is returned, its error set, and every call on it fails with that error.
pub struct TcContext {
    inner: Option<Compositor>,
    error: CString,
    last: Times,
}

thread_local! {
    /// The last error of `tc_create` (which has no context to keep it in).
    static CREATE_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn c_string(text: String) -> CString {
    CString::new(text.replace('\0', " ")).unwrap_or_default()
}

/// Runs `f` on the context, turning errors and panics into codes and messages.
fn with_context(
    ctx: *mut TcContext,
    f: impl FnOnce(&mut Compositor, &mut Times) -> Result<(), (c_int, String)>,
) -> c_int {
    if ctx.is_null() {
        return TC_ERR_ARGUMENT;
    }
    // SAFETY: a non-null context comes from tc_create and is not yet destroyed (the
    // header's contract).
    let ctx = unsafe { &mut *ctx };
    let Some(inner) = ctx.inner.as_mut() else {
        // The error of its settings stays in place.
        return TC_ERR_ARGUMENT;
    };
    let result = catch_unwind(AssertUnwindSafe(|| f(inner, &mut ctx.last)));
    let (code, message) = match result {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e,
        Err(panic) => (TC_ERR_INTERNAL, format!("internal error: {}", panic_text(&panic))),
    };
    ctx.error = c_string(message);
    code
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

fn argument(message: impl Into<String>) -> (c_int, String) {
    (TC_ERR_ARGUMENT, message.into())
}

fn failed(error: composite::CompositeError) -> (c_int, String) {
    let code = if error.is_argument() { TC_ERR_ARGUMENT } else { TC_ERR_FAILED };
    (code, composite::distributed::message(&error))
}

/// `TESSERA_COMPOSITE_BACKEND=cpu|gpu` (default: the GPU when a Vulkan device opens).
fn backend_from_env() -> Result<Backend, String> {
    match std::env::var("TESSERA_COMPOSITE_BACKEND").as_deref() {
        Err(_) | Ok("") | Ok("auto") => Ok(Backend::Auto),
        Ok("gpu") => Ok(Backend::Gpu),
        Ok("cpu") => Ok(Backend::Cpu),
        Ok(other) => Err(format!("TESSERA_COMPOSITE_BACKEND is {other:?}; expected auto, gpu or cpu")),
    }
}

/// The settings `tc_create`'s codes name, or what is wrong with them.
fn settings(size: (c_int, c_int), color: c_int, depth: c_int, mode: c_int) -> Result<Settings, String> {
    let side = |v: c_int, what: &str| {
        u32::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| format!("{what} {v} must be positive"))
    };
    let size = (side(size.0, "width")?, side(size.1, "height")?);
    let color = match color {
        1 => ColorFormat::Rgba8,
        2 => ColorFormat::Rgba32F,
        c => return Err(format!("colour format {c} is neither TC_RGBA8 (1) nor TC_RGBA32F (2)")),
    };
    let depth = match depth {
        0 => DepthFormat::None,
        1 => DepthFormat::F32,
        d => return Err(format!("depth format {d} is neither TC_DEPTH_NONE (0) nor TC_DEPTH_F32 (1)")),
    };
    let op = match mode {
        1 => Op::ZBuffer,
        2 => Op::Over,
        m => return Err(format!("mode {m} is neither TC_ZBUFFER (1) nor TC_BLEND_OVER (2)")),
    };
    Ok(Settings { size, color, depth, op, backend: backend_from_env()? })
}

/// # Safety
/// `comm` is a live communicator or MPI_COMM_NULL; every rank of it calls this.
#[no_mangle]
pub unsafe extern "C" fn tc_create(
    comm: MPI_Comm,
    width: c_int,
    height: c_int,
    color_format: c_int,
    depth_format: c_int,
    mode: c_int,
) -> *mut TcContext {
    // The context, or the reason the communicator is unusable.
    let result = catch_unwind(|| -> Result<TcContext, String> {
        // SAFETY: the handle is the caller's.
        let comm = unsafe { composite::comm::borrow_raw(comm) }.map_err(|e| composite::distributed::message(&e))?;
        // Every rank of the communicator takes part from here on (the duplicate and the
        // agreement on the settings are collective), so a bad argument on one rank is an
        // error on every rank.
        let settings = settings((width, height), color_format, depth_format, mode);
        let mpi = composite::comm::Mpi::on(&*comm).map_err(|e| composite::distributed::message(&e))?;
        let made = Compositor::agreed(
            Box::new(mpi),
            settings.map_err(composite::CompositeError::Invalid),
            &DeviceSelector::Auto,
        );
        let (inner, error) = match made {
            Ok(c) => (Some(c), CString::default()),
            Err(e) => (None, c_string(composite::distributed::message(&e))),
        };
        Ok(TcContext { inner, error, last: Times::default() })
    });
    let message = match result {
        Ok(Ok(ctx)) => return Box::into_raw(Box::new(ctx)),
        Ok(Err(m)) => m,
        Err(panic) => format!("internal error: {}", panic_text(&panic)),
    };
    CREATE_ERROR.with(|e| *e.borrow_mut() = c_string(message));
    std::ptr::null_mut()
}

/// # Safety
/// `ctx` is null or from tc_create.
#[no_mangle]
pub unsafe extern "C" fn tc_set_strategy(ctx: *mut TcContext, strategy: c_int) -> c_int {
    with_context(ctx, |c, _| {
        let s = match strategy {
            0 => None,
            1 => Some(Strategy::BinarySwap),
            2 => Some(Strategy::RadixK),
            3 => Some(Strategy::DirectSend),
            s => {
                return Err(argument(format!(
                    "strategy {s} is not TC_AUTO (0), TC_BINARY_SWAP (1), TC_RADIX_K (2) or TC_DIRECT_SEND (3)"
                )))
            }
        };
        c.set_strategy(s);
        Ok(())
    })
}

/// # Safety
/// `ranks_front_to_back` points to `n` ints (or is null, which is an error).
#[no_mangle]
pub unsafe extern "C" fn tc_set_order(ctx: *mut TcContext, ranks_front_to_back: *const c_int, n: c_int) -> c_int {
    with_context(ctx, |c, _| {
        if ranks_front_to_back.is_null() {
            return Err(argument("the order is a null pointer"));
        }
        let size = c.size();
        if usize::try_from(n).ok() != Some(size) {
            return Err(argument(format!("the order names {n} ranks; the communicator has {size}")));
        }
        // SAFETY: the caller passes n ints.
        let ranks = unsafe { std::slice::from_raw_parts(ranks_front_to_back, size) };
        let ranks: Vec<usize> = ranks.iter().map(|&r| usize::try_from(r).unwrap_or(usize::MAX)).collect();
        c.set_order(&ranks).map_err(failed)
    })
}

/// # Safety
/// `ctx` is null or from tc_create.
#[no_mangle]
pub unsafe extern "C" fn tc_set_root(ctx: *mut TcContext, root: c_int) -> c_int {
    with_context(ctx, |c, _| {
        let r = usize::try_from(root).map_err(|_| argument(format!("root {root} is negative")))?;
        c.set_root(r).map_err(failed)
    })
}

/// # Safety
/// `rgba` points to 4 floats (or is null, which is an error).
#[no_mangle]
pub unsafe extern "C" fn tc_set_background(ctx: *mut TcContext, rgba: *const f32) -> c_int {
    with_context(ctx, |c, _| {
        if rgba.is_null() {
            return Err(argument("the background is a null pointer"));
        }
        // SAFETY: the caller passes 4 floats.
        let v = unsafe { std::slice::from_raw_parts(rgba, 4) };
        c.set_background([v[0], v[1], v[2], v[3]]).map_err(failed)
    })
}

/// # Safety
/// The buffers hold the full image in the context's formats where they are not null;
/// every rank of the communicator calls this.
#[no_mangle]
pub unsafe extern "C" fn tc_composite(
    ctx: *mut TcContext,
    color: *const c_void,
    depth: *const f32,
    viewport: *const c_int,
    out_color: *mut c_void,
    out_depth: *mut f32,
) -> c_int {
    with_context(ctx, |c, last| {
        let code = composite(c, color, depth, viewport, out_color, out_depth);
        *last = c.last();
        code
    })
}

/// [`tc_composite`]'s work: the pointers made slices once checked; a bad pointer on any
/// rank fails every rank's call ([`Compositor::refuse`]).
fn composite(
    c: &mut Compositor,
    color: *const c_void,
    depth: *const f32,
    viewport: *const c_int,
    out_color: *mut c_void,
    out_depth: *mut f32,
) -> Result<(), (c_int, String)> {
    let (w, h) = c.image_size();
    let n = w as usize * h as usize;
    let (format, depth_format) = (c.color_format(), c.depth_format());
    let root = c.rank() == c.root();
    let refusal = if color.is_null() {
        Some("the colour buffer is a null pointer".to_string())
    } else if depth.is_null() && depth_format == DepthFormat::F32 {
        Some("the depth buffer is a null pointer; the depth format is TC_DEPTH_F32".into())
    } else if root && out_color.is_null() {
        Some(format!("the root (rank {}) passed a null output colour buffer", c.rank()))
    } else {
        None
    };
    // SAFETY: a non-null viewport points to 4 ints.
    let viewport = match (!viewport.is_null()).then(|| unsafe { std::slice::from_raw_parts(viewport, 4) }) {
        None => Ok(None),
        Some(v) => match v.iter().map(|&x| u32::try_from(x)).collect::<Result<Vec<u32>, _>>() {
            Ok(v) => Ok(Some(Viewport { x: v[0], y: v[1], w: v[2], h: v[3] })),
            Err(_) => Err(format!("viewport {v:?} has a negative value")),
        },
    };
    let refusal = refusal.or_else(|| viewport.as_ref().err().cloned());
    if let Some(message) = refusal {
        return Err(failed(c.refuse(message)));
    }
    let viewport = viewport.unwrap_or(None);
    // SAFETY: the header's contract: the buffers hold the full image in these formats.
    let (input, out) = unsafe {
        match format {
            ColorFormat::Rgba8 => (
                Color::Rgba8(std::slice::from_raw_parts(color as *const u8, 4 * n)),
                (root).then(|| ColorMut::Rgba8(std::slice::from_raw_parts_mut(out_color as *mut u8, 4 * n))),
            ),
            ColorFormat::Rgba32F => (
                Color::Rgba32F(std::slice::from_raw_parts(color as *const f32, 4 * n)),
                (root).then(|| ColorMut::Rgba32F(std::slice::from_raw_parts_mut(out_color as *mut f32, 4 * n))),
            ),
        }
    };
    // SAFETY: as above.
    let depth =
        (!depth.is_null() && depth_format == DepthFormat::F32).then(|| unsafe { std::slice::from_raw_parts(depth, n) });
    let out_depth = (root && !out_depth.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(out_depth, n) });
    c.composite_into(input, depth, viewport, out, out_depth).map_err(failed)
}

/// # Safety
/// `phase` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tc_last_time_ms(ctx: *const TcContext, phase: *const c_char) -> f64 {
    if ctx.is_null() || phase.is_null() {
        return -1.0;
    }
    // SAFETY: a context from tc_create; a NUL-terminated phase name.
    let (ctx, phase) = unsafe { (&*ctx, CStr::from_ptr(phase)) };
    phase.to_str().ok().and_then(|p| ctx.last.phase(p)).unwrap_or(-1.0)
}

/// # Safety
/// `ctx` is null or from tc_create.
#[no_mangle]
pub unsafe extern "C" fn tc_last_bytes_sent(ctx: *const TcContext) -> i64 {
    if ctx.is_null() {
        return -1;
    }
    // SAFETY: a context from tc_create.
    unsafe { (*ctx).last.bytes_sent as i64 }
}

/// # Safety
/// `ctx` is null or from tc_create; the text lives until the next call on `ctx` (or, for
/// null, the next tc_create on this thread).
#[no_mangle]
pub unsafe extern "C" fn tc_last_error(ctx: *const TcContext) -> *const c_char {
    if ctx.is_null() {
        return CREATE_ERROR.with(|e| e.borrow().as_ptr());
    }
    // SAFETY: a context from tc_create.
    unsafe { (*ctx).error.as_ptr() }
}

/// # Safety
/// `ctx` is null or from tc_create, and not used after.
#[no_mangle]
pub unsafe extern "C" fn tc_destroy(ctx: *mut TcContext) {
    if !ctx.is_null() {
        // SAFETY: from tc_create, destroyed once.
        let ctx = unsafe { Box::from_raw(ctx) };
        let _ = catch_unwind(AssertUnwindSafe(|| drop(ctx)));
    }
}
