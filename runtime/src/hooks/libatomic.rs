//! libatomic's generic calls: `__atomic_load`, `__atomic_store`,
//! `__atomic_exchange` and `__atomic_compare_exchange`, which gcc and clang
//! call for an atomic object whose size has no hook of its own (an
//! `_Atomic` struct of 3, 5, 6, 7 or more than 16 bytes). The sanitizer
//! leaves them uninstrumented, and libatomic performs some of them without
//! a lock (a 6-byte object: a compare-and-swap of the 8-byte word around
//! it), so nothing recorded their order and replay diverged. The runtime
//! defines them (the program binds to it before libatomic): each is an
//! atomic event on the object's bytes, performed under a lock of this
//! table by address, which is sound because every generic atomic access of
//! the program comes here (an object accessed with them is always accessed
//! with them: its size decides).

use rr_lite_trace::EventKind;

use super::atomic::locked_at;
use crate::events;
use crate::own_stack::switching_entry;
use crate::site::with_site;

/// Copies `size` bytes from `from` to `to` one byte at a time (no call of
/// the runtime's own `memcpy` inside a hook).
///
/// # Safety
/// Both ranges are live for `size` bytes; they may be the same.
unsafe fn copy_bytes(to: *mut u8, from: *const u8, size: usize) {
    for i in 0..size {
        // SAFETY: within both ranges (the caller's promise).
        unsafe { to.add(i).write_volatile(from.add(i).read_volatile()) };
    }
}

extern "C" fn load(size: usize, obj: *const u8, ret: *mut u8, _mo: i32, site: u64) {
    events::log_keeping_stripe(EventKind::AtomicLoad, obj as u64, size as u64, site, || {
        // SAFETY: the compiler passes the object and a buffer of `size`
        // bytes for the value.
        locked_at(obj as u64, || unsafe { copy_bytes(ret, obj, size) })
    });
}
with_site!(__atomic_load => load, "r8");

extern "C" fn store(size: usize, obj: *mut u8, val: *const u8, _mo: i32, site: u64) {
    events::log_keeping_stripe(
        EventKind::AtomicStore,
        obj as u64,
        size as u64,
        site,
        || {
            // SAFETY: as for load.
            locked_at(obj as u64, || unsafe { copy_bytes(obj, val, size) })
        },
    );
}
with_site!(__atomic_store => store, "r8");

extern "C" fn exchange(
    size: usize,
    obj: *mut u8,
    val: *const u8,
    ret: *mut u8,
    _mo: i32,
    site: u64,
) {
    events::log_keeping_stripe(EventKind::Rmw, obj as u64, size as u64, site, || {
        locked_at(obj as u64, || {
            for i in 0..size {
                // SAFETY: as for load; each byte of `val` is read before the
                // same byte of `ret` is written, so the two may be one buffer.
                unsafe {
                    let old = obj.add(i).read_volatile();
                    obj.add(i).write_volatile(val.add(i).read_volatile());
                    ret.add(i).write_volatile(old);
                }
            }
        })
    });
}
with_site!(__atomic_exchange => exchange, "r9");

switching_entry!(__atomic_compare_exchange => compare_exchange);

/// No register is left for the site (six arguments): logs site 0, as the
/// 128-bit compare-and-swap does.
extern "C" fn compare_exchange(
    size: usize,
    obj: *mut u8,
    expected: *mut u8,
    desired: *const u8,
    _mo: i32,
    _fmo: i32,
) -> bool {
    events::log_keeping_stripe(EventKind::Rmw, obj as u64, size as u64, 0, || {
        locked_at(obj as u64, || {
            // SAFETY: as for load; `expected` is the caller's buffer, which
            // the ABI updates on failure.
            unsafe {
                let same = (0..size)
                    .all(|i| obj.add(i).read_volatile() == expected.add(i).read_volatile());
                if same {
                    copy_bytes(obj, desired, size);
                } else {
                    copy_bytes(expected, obj, size);
                }
                same
            }
        })
    })
}
