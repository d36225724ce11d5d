//! memcpy, memmove and memset (and their `__tsan_` and fortified forms):
//! logged as one range read and/or one range write, performed while the
//! stripes of both ranges are held.
//!
//! The runtime's own Rust code also calls these symbols (the compiler emits
//! memcpy for copies); those calls come in with the thread marked busy and
//! go straight through. Before the real functions are found (very early
//! start-up, or inside dlsym itself) a byte loop does the work.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use libc::size_t;
use rr_lite_trace::EventKind;

use crate::events;
use crate::hooks::with_site;

type CopyFn = unsafe extern "C" fn(*mut c_void, *const c_void, size_t) -> *mut c_void;
type SetFn = unsafe extern "C" fn(*mut c_void, c_int, size_t) -> *mut c_void;

static REAL_MEMCPY: AtomicUsize = AtomicUsize::new(0);
static REAL_MEMMOVE: AtomicUsize = AtomicUsize::new(0);
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

pub fn resolve_all() {
    real(&REAL_MEMCPY, "memcpy\0");
    real(&REAL_MEMMOVE, "memmove\0");
    real(&REAL_MEMSET, "memset\0");
}

/// # Safety
/// memmove's contract.
unsafe fn move_bytes(
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
unsafe fn set_bytes(dst: *mut c_void, c: c_int, n: size_t) -> *mut c_void {
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

extern "C" fn memcpy_impl(
    dst: *mut c_void,
    src: *const c_void,
    n: size_t,
    site: u64,
) -> *mut c_void {
    // SAFETY: memcpy's contract is the caller's.
    let op = || unsafe { move_bytes(dst, src, n, &REAL_MEMCPY, "memcpy\0") };
    if n == 0 || crate::own_code::contains(site) {
        return op();
    }
    events::copy(src as u64, dst as u64, n as u64, site, op)
}
with_site!(memcpy => memcpy_impl, "rcx");
with_site!(__tsan_memcpy => memcpy_impl, "rcx");

extern "C" fn memmove_impl(
    dst: *mut c_void,
    src: *const c_void,
    n: size_t,
    site: u64,
) -> *mut c_void {
    // SAFETY: memmove's contract is the caller's.
    let op = || unsafe { move_bytes(dst, src, n, &REAL_MEMMOVE, "memmove\0") };
    if n == 0 || crate::own_code::contains(site) {
        return op();
    }
    events::copy(src as u64, dst as u64, n as u64, site, op)
}
with_site!(memmove => memmove_impl, "rcx");
with_site!(__tsan_memmove => memmove_impl, "rcx");

extern "C" fn memset_impl(dst: *mut c_void, c: c_int, n: size_t, site: u64) -> *mut c_void {
    // SAFETY: memset's contract is the caller's.
    let op = || unsafe { set_bytes(dst, c, n) };
    if n == 0 || crate::own_code::contains(site) {
        return op();
    }
    events::around(EventKind::WriteRange, dst as u64, n as u64, site, op, |_| 0)
}
with_site!(memset => memset_impl, "rcx");
with_site!(__tsan_memset => memset_impl, "rcx");

unsafe extern "C" {
    fn __chk_fail() -> !;
}

/// The `_FORTIFY_SOURCE` forms: check the destination size, then as above.
macro_rules! fortified {
    ($name:ident => $imp:ident, $plain:ident, $src:ty) => {
        extern "C" fn $imp(dst: *mut c_void, src: $src, n: size_t, dst_len: size_t, site: u64) -> *mut c_void {
            if n > dst_len {
                // SAFETY: glibc's report-and-abort for fortify failures.
                unsafe { __chk_fail() };
            }
            $plain(dst, src, n, site)
        }
        with_site!($name => $imp, "r8");
    };
}

fortified!(__memcpy_chk => memcpy_chk_impl, memcpy_impl, *const c_void);
fortified!(__memmove_chk => memmove_chk_impl, memmove_impl, *const c_void);
fortified!(__memset_chk => memset_chk_impl, memset_impl, c_int);
