//! The allocator family. Every call is an event on the heap pseudo-address,
//! performed while its stripe is held, so the recorded order of allocator
//! calls is the order the allocator saw them; replay repeats that order,
//! and with ASLR off and one malloc arena, the same addresses come back.
//! The real allocator is reached through `__libc_*`, which needs no dlsym
//! and therefore works before the runtime is initialised.

use core::ffi::{c_int, c_void};

use libc::size_t;
use rr_lite_trace::{EventKind, pseudo};

use crate::events::around;
use crate::hooks::with_site;
use crate::real;

fn alloc_event(size: size_t, site: u64, op: impl FnOnce() -> *mut c_void) -> *mut c_void {
    around(
        EventKind::Alloc,
        pseudo::HEAP,
        size as u64,
        site,
        op,
        |&p| p as u64,
    )
}

extern "C" fn malloc_impl(size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding to glibc's malloc.
    alloc_event(size, site, || unsafe { real::__libc_malloc(size) })
}
with_site!(malloc => malloc_impl, "rsi");

extern "C" fn calloc_impl(n: size_t, size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    alloc_event(n.saturating_mul(size), site, || unsafe {
        real::__libc_calloc(n, size)
    })
}
with_site!(calloc => calloc_impl, "rdx");

extern "C" fn realloc_impl(p: *mut c_void, size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    alloc_event(size, site, || unsafe { real::__libc_realloc(p, size) })
}
with_site!(realloc => realloc_impl, "rdx");

extern "C" fn reallocarray_impl(p: *mut c_void, n: size_t, size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    alloc_event(n.saturating_mul(size), site, || unsafe {
        real::reallocarray(p, n, size)
    })
}
with_site!(reallocarray => reallocarray_impl, "rcx");

extern "C" fn free_impl(p: *mut c_void, site: u64) {
    // SAFETY: forwarding.
    let op = || unsafe { real::__libc_free(p) };
    if p.is_null() {
        return op();
    }
    around(EventKind::Free, pseudo::HEAP, 0, site, op, |_| p as u64)
}
with_site!(free => free_impl, "rsi");
with_site!(cfree => free_impl, "rsi");

extern "C" fn memalign_impl(align: size_t, size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    alloc_event(size, site, || unsafe { real::__libc_memalign(align, size) })
}
with_site!(memalign => memalign_impl, "rdx");

extern "C" fn aligned_alloc_impl(align: size_t, size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    alloc_event(size, site, || unsafe { real::aligned_alloc(align, size) })
}
with_site!(aligned_alloc => aligned_alloc_impl, "rdx");

extern "C" fn valloc_impl(size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    alloc_event(size, site, || unsafe { real::valloc(size) })
}
with_site!(valloc => valloc_impl, "rsi");

extern "C" fn pvalloc_impl(size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    alloc_event(size, site, || unsafe { real::pvalloc(size) })
}
with_site!(pvalloc => pvalloc_impl, "rsi");

extern "C" fn posix_memalign_impl(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
    site: u64,
) -> c_int {
    around(
        EventKind::Alloc,
        pseudo::HEAP,
        size as u64,
        site,
        // SAFETY: forwarding.
        || unsafe { real::posix_memalign(out, align, size) },
        // SAFETY: on success posix_memalign stored the block in `*out`.
        |&r| if r == 0 { unsafe { *out as u64 } } else { 0 },
    )
}
with_site!(posix_memalign => posix_memalign_impl, "rcx");
