//! memcpy, memmove and memset (and their `__tsan_` and fortified forms):
//! logged as one range read and/or one range write, performed while the
//! stripes of both ranges are held.
//!
//! The runtime's own Rust code also calls these symbols (the compiler emits
//! memcpy for copies); those calls come in with the thread marked busy and
//! go straight through to `crate::raw_memory`.

use core::ffi::{c_int, c_void};

use libc::size_t;
use rr_lite_trace::EventKind;

use crate::events;
use crate::raw_memory::{REAL_MEMCPY, REAL_MEMMOVE, move_bytes, set_bytes};
use crate::site::with_site;

pub(crate) extern "C" fn memcpy_impl(
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
    events::log_after_copy(src as u64, dst as u64, n as u64, site, op)
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
    events::log_after_copy(src as u64, dst as u64, n as u64, site, op)
}
with_site!(memmove => memmove_impl, "rcx");
with_site!(__tsan_memmove => memmove_impl, "rcx");

extern "C" fn memset_impl(dst: *mut c_void, c: c_int, n: size_t, site: u64) -> *mut c_void {
    // SAFETY: memset's contract is the caller's.
    let op = || unsafe { set_bytes(dst, c, n) };
    if n == 0 || crate::own_code::contains(site) {
        return op();
    }
    events::log_after_call(EventKind::WriteRange, dst as u64, n as u64, site, op, |_| 0)
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
