//! The allocator family. Every call is an event on the heap pseudo-address,
//! performed while its stripe is held, so the recorded order of allocator
//! calls is the order the allocator saw them. While recording or replaying
//! the blocks come from the runtime's deterministic heap (see `heap`): given
//! that order, replay gets the recorded addresses back. Inert, and before
//! start-up, glibc serves them through `__libc_*` (no dlsym needed).

use core::ffi::{c_int, c_void};

use libc::size_t;
use rr_lite_trace::{EventKind, pseudo};

use crate::events::{self, log_after_call};
use crate::heap;
use crate::real;
use crate::site::with_site;

/// An allocation the heap serves while active (`events::log_alloc`: its
/// event holds the block's header), `next` the pointer it will return;
/// `freed`: realloc's block.
fn heap_alloc_event(
    size: size_t,
    site: u64,
    freed: Option<*mut c_void>,
    next: impl Fn() -> Option<usize>,
    op: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let next = || next().map(|p| p as u64);
    let freed = freed.map(|p| p as u64);
    events::log_alloc(size as u64, site, freed, next, || op() as u64) as *mut c_void
}

/// Calls the deterministic heap when it is active, else glibc.
fn either<R>(ours: impl FnOnce() -> R, glibc: impl FnOnce() -> R) -> R {
    if heap::active() { ours() } else { glibc() }
}

pub(crate) extern "C" fn malloc_impl(size: size_t, site: u64) -> *mut c_void {
    heap_alloc_event(
        size,
        site,
        None,
        || heap::next_block(size),
        || {
            // SAFETY: forwarding to glibc's malloc.
            either(
                || heap::malloc(size).cast(),
                || unsafe { real::__libc_malloc(size) },
            )
        },
    )
}
with_site!(malloc => malloc_impl, "rsi");

extern "C" fn calloc_impl(n: size_t, size: size_t, site: u64) -> *mut c_void {
    let next = || n.checked_mul(size).and_then(heap::next_block);
    heap_alloc_event(n.saturating_mul(size), site, None, next, || {
        // SAFETY: forwarding.
        either(
            || heap::calloc(n, size).cast(),
            || unsafe { real::__libc_calloc(n, size) },
        )
    })
}
with_site!(calloc => calloc_impl, "rdx");

/// realloc of a block glibc allocated before start-up, while the heap is
/// active, moves it into the heap (see `heap::realloc`).
extern "C" fn realloc_impl(p: *mut c_void, size: size_t, site: u64) -> *mut c_void {
    let next = || heap::next_realloc(p as usize, size);
    heap_alloc_event(size, site, Some(p), next, || {
        // SAFETY: forwarding.
        either(
            || heap::realloc(p.cast(), size).cast(),
            || unsafe { real::__libc_realloc(p, size) },
        )
    })
}
with_site!(realloc => realloc_impl, "rdx");

extern "C" fn reallocarray_impl(p: *mut c_void, n: size_t, size: size_t, site: u64) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        crate::sys::set_errno(libc::ENOMEM);
        return core::ptr::null_mut();
    };
    realloc_impl(p, total, site)
}
with_site!(reallocarray => reallocarray_impl, "rcx");

extern "C" fn free_impl(p: *mut c_void, site: u64) {
    if p.is_null() {
        return;
    }
    let op = || {
        if !heap::free(p.cast()) {
            // SAFETY: a block glibc allocated.
            unsafe { real::__libc_free(p) }
        }
    };
    if heap::owns(p as usize) {
        if events::in_ended_thread() {
            // glibc's clean-up of an ended thread (its `dlerror` message,
            // say) runs after its exit event, when the other threads are
            // wherever timing has them: a block put back on a free list
            // then would go to whichever allocation came next, another at
            // replay. It stays allocated instead, in record and replay alike.
            return;
        }
        events::log_free(p as u64, site, op);
    } else {
        log_after_call(EventKind::Free, pseudo::HEAP, 0, site, op, |_| p as u64);
    }
}
with_site!(free => free_impl, "rsi");
with_site!(cfree => free_impl, "rsi");

crate::own_stack::switching_entry!(malloc_usable_size => usable_size);

extern "C" fn usable_size(p: *mut c_void) -> size_t {
    if p.is_null() {
        return 0;
    }
    // SAFETY: forwarding glibc's own blocks to glibc.
    heap::usable_size(p.cast()).unwrap_or_else(|| unsafe { real::malloc_usable_size(p) })
}

fn aligned_event(
    align: size_t,
    size: size_t,
    site: u64,
    glibc: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let next = || heap::next_aligned(align, size);
    heap_alloc_event(size, site, None, next, || {
        either(|| heap::aligned(align, size).cast(), glibc)
    })
}

extern "C" fn memalign_impl(align: size_t, size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    aligned_event(align, size, site, || unsafe {
        real::__libc_memalign(align, size)
    })
}
with_site!(memalign => memalign_impl, "rdx");

extern "C" fn aligned_alloc_impl(align: size_t, size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    aligned_event(align, size, site, || unsafe {
        real::aligned_alloc(align, size)
    })
}
with_site!(aligned_alloc => aligned_alloc_impl, "rdx");

const PAGE: size_t = 4096;

extern "C" fn valloc_impl(size: size_t, site: u64) -> *mut c_void {
    // SAFETY: forwarding.
    aligned_event(PAGE, size, site, || unsafe { real::valloc(size) })
}
with_site!(valloc => valloc_impl, "rsi");

extern "C" fn pvalloc_impl(size: size_t, site: u64) -> *mut c_void {
    let rounded = size.max(1).next_multiple_of(PAGE);
    // SAFETY: forwarding.
    aligned_event(PAGE, rounded, site, || unsafe { real::pvalloc(size) })
}
with_site!(pvalloc => pvalloc_impl, "rsi");

extern "C" fn posix_memalign_impl(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
    site: u64,
) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(core::mem::size_of::<usize>()) {
        return libc::EINVAL;
    }
    // SAFETY: forwarding.
    let p = aligned_event(align, size, site, || unsafe {
        real::__libc_memalign(align, size)
    });
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller's output pointer.
    unsafe { *out = p };
    0
}
with_site!(posix_memalign => posix_memalign_impl, "rcx");
