//! memcpy, memmove and memset with no event: libc's, once found with
//! dlsym, or a byte loop before that (very early start-up, or inside dlsym
//! itself). The interposed forms (`crate::interpose::mem`) log around these.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use libc::size_t;

type CopyFn = unsafe extern "C" fn(*mut c_void, *const c_void, size_t) -> *mut c_void;
type SetFn = unsafe extern "C" fn(*mut c_void, c_int, size_t) -> *mut c_void;

pub(crate) static REAL_MEMCPY: AtomicUsize = AtomicUsize::new(0);
pub(crate) static REAL_MEMMOVE: AtomicUsize = AtomicUsize::new(0);
static REAL_MEMSET: AtomicUsize = AtomicUsize::new(0);
static RESOLVING: AtomicBool = AtomicBool::new(false);

/// The real function in `slot`, or None while it cannot be looked up yet.
fn real(slot: &AtomicUsize, name: &'static str) -> Option<usize> {
    let addr = slot.load(Ordering::Relaxed);
    if addr != 0 {
        return Some(addr);
    }
    if RESOLVING.swap(true, Ordering::Acquire) {
        return None;
    }
    let addr = crate::real::resolve(slot, name);
    RESOLVING.store(false, Ordering::Release);
    Some(addr)
}

pub(crate) fn resolve_all() {
    real(&REAL_MEMCPY, "memcpy\0");
    real(&REAL_MEMMOVE, "memmove\0");
    real(&REAL_MEMSET, "memset\0");
}

/// # Safety
/// memmove's contract.
pub(crate) unsafe fn move_bytes(
    dst: *mut c_void,
    src: *const c_void,
    n: size_t,
    slot: &AtomicUsize,
    name: &'static str,
) -> *mut c_void {
    if let Some(addr) = real(slot, name) {
        // SAFETY: the real memcpy/memmove, found by dlsym.
        let f: CopyFn = unsafe { core::mem::transmute(addr) };
        // SAFETY: the caller's contract.
        return unsafe { f(dst, src, n) };
    }
    let (d, s) = (dst.cast::<u8>(), src.cast::<u8>());
    // Volatile accesses keep the compiler from turning the loop back into a
    // memcpy call (which would recurse).
    if (d as usize) < (s as usize) {
        for i in 0..n {
            // SAFETY: within the caller's buffers.
            unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
        }
    } else {
        for i in (0..n).rev() {
            // SAFETY: within the caller's buffers.
            unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
        }
    }
    dst
}

/// # Safety
/// memset's contract.
pub(crate) unsafe fn set_bytes(dst: *mut c_void, c: c_int, n: size_t) -> *mut c_void {
    if let Some(addr) = real(&REAL_MEMSET, "memset\0") {
        // SAFETY: the real memset, found by dlsym.
        let f: SetFn = unsafe { core::mem::transmute(addr) };
        // SAFETY: the caller's contract.
        return unsafe { f(dst, c, n) };
    }
    for i in 0..n {
        // SAFETY: within the caller's buffer.
        unsafe { dst.cast::<u8>().add(i).write_volatile(c as u8) };
    }
    dst
}
